// Package vector holds what Mayfly knows of vector search: the distance
// functions VectorDistance computes, the way each orders results (most
// similar first), the options VectorDistance takes, and a container's
// vectorEmbeddingPolicy and vector indexes.
//
// Every vector query is answered exactly, by computing the distance to each
// item in its scope, whatever index the policy names: flat indexes are exact
// in the service too, and quantized or DiskANN ones approximate what this
// computes.
package vector

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/plan"
)

// Function is a distance function.
type Function uint8

const (
	// Cosine is the cosine similarity, from -1 to 1, higher is closer.
	Cosine Function = iota
	// DotProduct is the dot product, higher is closer.
	DotProduct
	// Euclidean is the Euclidean (L2) distance, lower is closer.
	Euclidean
)

var functionNames = [...]string{Cosine: "cosine", DotProduct: "dotproduct", Euclidean: "euclidean"}

// ParseFunction reads a distance function's name, in any case.
func ParseFunction(name string) (Function, bool) {
	for f, n := range functionNames {
		if strings.EqualFold(name, n) {
			return Function(f), true
		}
	}
	return 0, false
}

func (f Function) String() string { return functionNames[f] }

// Descending reports whether results ordered by f come highest first, so
// that the most similar come first.
func (f Function) Descending() bool { return f != Euclidean }

// Score is f of the vectors a and b. Both must be arrays of numbers of the
// same length, at least one; otherwise, and for the cosine of a vector of
// zeros, there is no score (VectorDistance is undefined there).
func Score(f Function, a, b document.Value) (float64, bool) {
	n := a.Len()
	if a.Kind() != document.Array || b.Kind() != document.Array || n == 0 || b.Len() != n {
		return 0, false
	}
	var s sums
	as, bs := a.Array(), b.Array()
	for i := range as {
		x, y := &as[i], &bs[i]
		if x.Kind() != document.Number || y.Kind() != document.Number {
			return 0, false
		}
		s.add(x.Float(), y.Float())
	}
	return s.score(f)
}

// sums accumulates what every distance function needs of two vectors,
// element by element. Score and Query.Score add the same products in the
// same order, each rounded to a float64 (an explicit conversion, which no
// compiler may fuse into a multiply-add), so an item's score from its
// stored vector is the score the evaluator computes from its document, to
// the last bit.
type sums struct{ dot, na, nb, sq float64 }

func (s *sums) add(p, q float64) {
	s.dot += float64(p * q)
	s.na += float64(p * p)
	s.nb += float64(q * q)
	s.sq += float64((p - q) * (p - q))
}

func (s *sums) score(f Function) (float64, bool) {
	var r float64
	switch f {
	case Cosine:
		r = s.dot / math.Sqrt(s.na*s.nb)
	case DotProduct:
		r = s.dot
	default:
		r = math.Sqrt(s.sq)
	}
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return 0, false
	}
	return r, true
}

// Store appends v's stored form to dst: its elements as little-endian
// float64 values, the numbers Score reads. ok is false unless v is an
// array of one to MaxDimensions numbers, which is every vector that can
// have a score against a query vector a Query takes.
func Store(dst []byte, v document.Value) ([]byte, bool) {
	n := v.Len()
	if v.Kind() != document.Array || n == 0 || n > MaxDimensions {
		return dst, false
	}
	start := len(dst)
	for _, x := range v.Array() {
		if x.Kind() != document.Number {
			return dst[:start], false
		}
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(x.Float()))
	}
	return dst, true
}

// Query is a query vector and a distance function, which scores stored
// vectors (Store).
type Query struct {
	f Function
	q []float64
	// qn is the sum of the query vector's squares, which Score adds up
	// for every document; the cosine needs it, and it is the same for all.
	qn float64
}

// NewQuery is the query of vector v under f; ok is false unless v is an
// array of one to MaxDimensions numbers.
func NewQuery(f Function, v document.Value) (*Query, bool) {
	n := v.Len()
	if v.Kind() != document.Array || n == 0 || n > MaxDimensions {
		return nil, false
	}
	qv := &Query{f: f, q: make([]float64, n)}
	for i, x := range v.Array() {
		if x.Kind() != document.Number {
			return nil, false
		}
		y := x.Float()
		qv.q[i] = y
		qv.qn += float64(y * y)
	}
	return qv, true
}

// Dimensions is the query vector's length.
func (qv *Query) Dimensions() int { return len(qv.q) }

// Score is Score of a stored vector and the query vector, the stored one
// as Score's first argument, computing only the sums its function needs.
// Every function is symmetric in its two vectors, bit for bit: the
// products and squares do not depend on the order of their operands, p-q
// is -(q-p) exactly, and the cosine's product of the two sums of squares
// is the same product either way round.
func (qv *Query) Score(stored []byte) (float64, bool) {
	q := qv.q
	if len(stored) != 8*len(q) || len(q) == 0 {
		return 0, false
	}
	// Each element is sliced out whole, so the compiler checks one
	// bound an element rather than two.
	s := sums{nb: qv.qn}
	switch qv.f {
	case Cosine:
		for i, y := range q {
			p := math.Float64frombits(binary.LittleEndian.Uint64(stored[8*i : 8*i+8]))
			s.dot += float64(p * y)
			s.na += float64(p * p)
		}
	case DotProduct:
		for i, y := range q {
			s.dot += float64(math.Float64frombits(binary.LittleEndian.Uint64(stored[8*i:8*i+8])) * y)
		}
	default:
		for i, y := range q {
			d := math.Float64frombits(binary.LittleEndian.Uint64(stored[8*i:8*i+8])) - y
			s.sq += float64(d * d)
		}
	}
	return s.score(qv.f)
}

// IsCall reports whether e is a call of VectorDistance.
func IsCall(e ast.Expr) (*ast.Call, bool) {
	c, ok := e.(*ast.Call)
	if !ok || c.UDF || !strings.EqualFold(c.Name, "VectorDistance") {
		return nil, false
	}
	return c, true
}

// optionError is a query error in VectorDistance's arguments.
func optionError(e ast.Expr, format string, args ...any) error {
	return &ast.Error{Code: "SC2213", Message: fmt.Sprintf(format, args...), Pos: e.Position(), End: e.Position()}
}

// FunctionOf resolves which distance function the call of VectorDistance
// in query q computes: the distanceFunction of its options, else the
// container's embedding policy for the property path either vector is
// read from, else cosine. The options must be constant (ast.Constant, with
// params); options outside their documented ranges fail the query.
func FunctionOf(q *ast.Query, call *ast.Call, p Policy, params map[string]document.Value) (Function, error) {
	constant := func(e ast.Expr) (document.Value, bool) { return ast.Constant(e, params) }
	if len(call.Args) > 2 {
		if v, ok := constant(call.Args[2]); !ok || v.Kind() != document.Bool {
			return 0, optionError(call.Args[2], "The third argument of the VectorDistance function must be a boolean constant (brute force).")
		}
	}
	if len(call.Args) > 3 {
		opts, ok := constant(call.Args[3])
		if !ok || opts.Kind() != document.Object {
			return 0, optionError(call.Args[3], "The fourth argument of the VectorDistance function must be a constant object of options.")
		}
		f, set, err := readOptions(call.Args[3], opts)
		if err != nil || set {
			return f, err
		}
	}
	for _, a := range call.Args[:min(2, len(call.Args))] {
		if path, ok := plan.DocPath(q, a); ok {
			if f, ok := p.byPath[pathKey(path)]; ok {
				return f, nil
			}
		}
	}
	return Cosine, nil
}

// quoted is v as a message quotes it: a string in single quotes.
func quoted(v document.Value) string {
	if v.Kind() == document.String {
		return "'" + v.Str() + "'"
	}
	return v.String()
}

// readOptions checks VectorDistance's options and returns the distance
// function they name, if they name one.
func readOptions(at ast.Expr, opts document.Value) (Function, bool, error) {
	var f Function
	set := false
	for _, fld := range opts.Fields() {
		v := fld.Value
		switch strings.ToLower(fld.Name) {
		case "distancefunction":
			var ok bool
			if f, ok = ParseFunction(v.Str()); !ok || v.Kind() != document.String {
				return 0, false, optionError(at, "The 'distanceFunction' value %s specified in the VectorDistance function is not supported. The value must be one of 'cosine', 'dotproduct' or 'euclidean'.", quoted(v))
			}
			set = true
		case "datatype":
			if _, ok := dataTypes[strings.ToLower(v.Str())]; !ok || v.Kind() != document.String {
				return 0, false, optionError(at, "The 'dataType' value %s specified in the VectorDistance function is not supported. The value must be one of 'float32', 'float16', 'int8' or 'uint8'.", quoted(v))
			}
		case "searchlistsizemultiplier", "quantizedvectorlistmultiplier":
			if v.Kind() != document.Number || v.Float() < 1 || v.Float() > 100 || v.Float() != math.Trunc(v.Float()) {
				return 0, false, optionError(at, "The '%s' value %s specified in the VectorDistance function is outside the supported range. The value must be between 1 and 100.", fld.Name, v.String())
			}
		case "filterpriority":
			if v.Kind() != document.Number {
				return 0, false, optionError(at, "The 'filterPriority' value %s specified in the VectorDistance function must be a number.", v.String())
			}
		}
	}
	return f, set, nil
}
