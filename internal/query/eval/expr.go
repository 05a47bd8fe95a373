package eval

import (
	"math"
	"slices"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
)

var (
	undef = document.Undef
	vTrue = document.BoolValue(true)
	vFals = document.BoolValue(false)
)

func boolVal(b bool) document.Value {
	if b {
		return vTrue
	}
	return vFals
}

// eval computes e in scope s.
func (c *ctx) eval(e ast.Expr, s scope) (document.Value, error) {
	if err := c.step(); err != nil {
		return undef, err
	}
	switch x := e.(type) {
	case *ast.Literal:
		return x.Value, nil
	case *ast.Param:
		return c.prog.params[x.Name], nil
	case *ast.Ident:
		v, _ := s.lookup(x.Name)
		return v, nil
	case *ast.Member:
		v, err := c.eval(x.X, s)
		if err != nil {
			return undef, err
		}
		if v.Kind() != document.Object {
			return undef, nil
		}
		return v.Get(x.Name), nil
	case *ast.Index:
		v, err := c.eval(x.X, s)
		if err != nil {
			return undef, err
		}
		i, err := c.eval(x.Index, s)
		if err != nil {
			return undef, err
		}
		return index(v, i), nil
	case *ast.Unary:
		v, err := c.eval(x.X, s)
		if err != nil {
			return undef, err
		}
		return unary(x.Op, v), nil
	case *ast.Binary:
		return c.binary(x, s)
	case *ast.Ternary:
		cond, err := c.eval(x.Cond, s)
		if err != nil {
			return undef, err
		}
		if cond.Kind() == document.Bool && cond.Bool() {
			return c.eval(x.Then, s)
		}
		return c.eval(x.Else, s)
	case *ast.Between:
		vals, err := c.evalAll(s, x.X, x.Lo, x.Hi)
		if err != nil {
			return undef, err
		}
		lo, hi := compare(ast.OpGe, vals[0], vals[1]), compare(ast.OpLe, vals[0], vals[2])
		r := and(lo, hi)
		if x.Not {
			r = not(r)
		}
		return r, nil
	case *ast.In:
		v, err := c.eval(x.X, s)
		if err != nil {
			return undef, err
		}
		// IN is membership: true when some element equals the operand,
		// false otherwise, undefined only for an undefined operand.
		if !v.IsDefined() {
			return undef, nil
		}
		r := vFals
		for _, le := range x.List {
			lv, err := c.eval(le, s)
			if err != nil {
				return undef, err
			}
			if document.Equal(v, lv) {
				r = vTrue
				break
			}
		}
		if x.Not {
			r = not(r)
		}
		return r, nil
	case *ast.Like:
		vals, err := c.evalAll(s, x.X, x.Pattern, x.Escape)
		if err != nil {
			return undef, err
		}
		r := like(vals[0], vals[1], vals[2], x.Escape != nil)
		if x.Not {
			r = not(r)
		}
		return r, nil
	case *ast.Call:
		return c.call(x, s)
	case *ast.ArrayLit:
		out := make([]document.Value, 0, len(x.Elems))
		for _, el := range x.Elems {
			v, err := c.eval(el, s)
			if err != nil {
				return undef, err
			}
			if v.IsDefined() {
				out = append(out, v)
			}
		}
		return document.Arr(out), nil
	case *ast.ObjectLit:
		out := make([]document.Field, 0, len(x.Fields))
		for _, f := range x.Fields {
			v, err := c.eval(f.Value, s)
			if err != nil {
				return undef, err
			}
			if v.IsDefined() {
				out = setField(out, f.Name, v)
			}
		}
		return document.Obj(out), nil
	case *ast.Exists:
		rows, err := c.subquery(x.Query, s, 1)
		if err != nil {
			return undef, err
		}
		return boolVal(len(rows) > 0), nil
	case *ast.ArrayQuery:
		rows, err := c.subquery(x.Query, s, 0)
		if err != nil {
			return undef, err
		}
		return document.Arr(rows), nil
	case *ast.Subquery:
		rows, err := c.subquery(x.Query, s, 1)
		if err != nil || len(rows) == 0 {
			return undef, err
		}
		return rows[0], nil
	}
	return undef, nil
}

// setField sets name in fields, replacing an earlier value (the last one
// written wins, in the position of the first).
func setField(fields []document.Field, name string, v document.Value) []document.Field {
	for i := range fields {
		if fields[i].Name == name {
			fields[i].Value = v
			return fields
		}
	}
	return append(fields, document.Field{Name: name, Value: v})
}

func (c *ctx) evalAll(s scope, es ...ast.Expr) ([]document.Value, error) {
	out := make([]document.Value, len(es))
	for i, e := range es {
		if e == nil {
			continue
		}
		v, err := c.eval(e, s)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func index(v, i document.Value) document.Value {
	switch v.Kind() {
	case document.Array:
		if i.Kind() != document.Number {
			return undef
		}
		f := i.Float()
		if f != math.Trunc(f) || f < 0 || f >= float64(v.Len()) {
			return undef
		}
		return v.Index(int(f))
	case document.Object:
		if i.Kind() != document.String {
			return undef
		}
		return v.Get(i.Str())
	}
	return undef
}

func (c *ctx) binary(x *ast.Binary, s scope) (document.Value, error) {
	l, err := c.eval(x.L, s)
	if err != nil {
		return undef, err
	}
	// Short circuits: AND with false, OR with true, ?? with a defined value.
	switch x.Op {
	case ast.OpAnd:
		if l.Kind() == document.Bool && !l.Bool() {
			return vFals, nil
		}
	case ast.OpOr:
		if l.Kind() == document.Bool && l.Bool() {
			return vTrue, nil
		}
	case ast.OpCoalesce:
		if l.IsDefined() {
			return l, nil
		}
	}
	r, err := c.eval(x.R, s)
	if err != nil {
		return undef, err
	}
	return binaryOp(x.Op, l, r), nil
}

// binaryOp applies an infix operator to two values.
func binaryOp(op ast.BinaryOp, l, r document.Value) document.Value {
	switch op {
	case ast.OpAnd:
		return and(l, r)
	case ast.OpOr:
		return or(l, r)
	case ast.OpCoalesce:
		if l.IsDefined() {
			return l
		}
		return r
	case ast.OpEq, ast.OpNe, ast.OpLt, ast.OpLe, ast.OpGt, ast.OpGe:
		return compare(op, l, r)
	case ast.OpConcat:
		if l.Kind() == document.String && r.Kind() == document.String {
			return document.Str(l.Str() + r.Str())
		}
		return undef
	}
	if l.Kind() != document.Number || r.Kind() != document.Number {
		return undef
	}
	switch op {
	case ast.OpAdd, ast.OpSub, ast.OpMul, ast.OpDiv, ast.OpMod:
		return arith(op, l, r)
	}
	a, b := toInt32(l), toInt32(r)
	switch op {
	case ast.OpBitAnd:
		return document.Int(int64(a & b))
	case ast.OpBitOr:
		return document.Int(int64(a | b))
	case ast.OpBitXor:
		return document.Int(int64(a ^ b))
	case ast.OpShl:
		return document.Int(int64(a << (uint32(b) & 31)))
	case ast.OpShr:
		return document.Int(int64(a >> (uint32(b) & 31)))
	case ast.OpShrZero:
		return document.Int(int64(uint32(a) >> (uint32(b) & 31)))
	}
	return undef
}

// toInt32 converts a number as JavaScript's bitwise operators do.
func toInt32(v document.Value) int32 {
	if v.IsInt() {
		return int32(uint32(uint64(v.Int())))
	}
	f := v.Float()
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	f = math.Mod(math.Trunc(f), 4294967296)
	if f < 0 {
		f += 4294967296
	}
	return int32(uint32(f))
}

// arith applies + - * / % keeping integers exact until they overflow.
func arith(op ast.BinaryOp, l, r document.Value) document.Value {
	if l.IsInt() && r.IsInt() {
		a, b := l.Int(), r.Int()
		switch op {
		case ast.OpAdd:
			if s := a + b; (s > a) == (b > 0) {
				return document.Int(s)
			}
		case ast.OpSub:
			if d := a - b; (d < a) == (b > 0) {
				return document.Int(d)
			}
		case ast.OpMul:
			if a == 0 || b == 0 {
				return document.Int(0)
			}
			if p := a * b; p/b == a && !(a == -1 && b == math.MinInt64) && !(b == -1 && a == math.MinInt64) {
				return document.Int(p)
			}
		case ast.OpDiv:
			if b == 0 {
				return undef
			}
			if a%b == 0 && !(a == math.MinInt64 && b == -1) {
				return document.Int(a / b)
			}
		case ast.OpMod:
			if b == 0 {
				return undef
			}
			if b == -1 {
				return document.Int(0)
			}
			return document.Int(a % b)
		}
	}
	a, b := l.Float(), r.Float()
	var f float64
	switch op {
	case ast.OpAdd:
		f = a + b
	case ast.OpSub:
		f = a - b
	case ast.OpMul:
		f = a * b
	case ast.OpDiv:
		if b == 0 {
			return undef
		}
		f = a / b
	case ast.OpMod:
		if b == 0 {
			return undef
		}
		f = math.Mod(a, b)
	}
	return number(f)
}

// number wraps a float result; results JSON cannot hold are undefined.
func number(f float64) document.Value {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return undef
	}
	return document.Float(f)
}

func unary(op ast.UnaryOp, v document.Value) document.Value {
	switch op {
	case ast.OpNot:
		return not(v)
	}
	if v.Kind() != document.Number {
		return undef
	}
	switch op {
	case ast.OpNeg:
		if v.IsInt() && v.Int() != math.MinInt64 {
			return document.Int(-v.Int())
		}
		if math.IsInf(v.Float(), 0) {
			return document.Float(-v.Float()) // -Infinity
		}
		return number(-v.Float())
	case ast.OpPlus:
		return v
	case ast.OpBitNot:
		return document.Int(int64(^toInt32(v)))
	}
	return undef
}

func and(l, r document.Value) document.Value {
	if (l.Kind() == document.Bool && !l.Bool()) || (r.Kind() == document.Bool && !r.Bool()) {
		return vFals
	}
	if l.Kind() == document.Bool && r.Kind() == document.Bool {
		return vTrue
	}
	return undef
}

func or(l, r document.Value) document.Value {
	if (l.Kind() == document.Bool && l.Bool()) || (r.Kind() == document.Bool && r.Bool()) {
		return vTrue
	}
	if l.Kind() == document.Bool && r.Kind() == document.Bool {
		return vFals
	}
	return undef
}

func not(v document.Value) document.Value {
	if v.Kind() == document.Bool {
		return boolVal(!v.Bool())
	}
	return undef
}

// compare applies a comparison operator. Values of different types, and
// arrays or objects under anything but =, compare as undefined.
func compare(op ast.BinaryOp, l, r document.Value) document.Value {
	if !l.IsDefined() || !r.IsDefined() || l.Kind() != r.Kind() {
		return undef
	}
	if k := l.Kind(); (k == document.Array || k == document.Object) && op != ast.OpEq {
		return undef
	}
	d := document.Compare(l, r)
	if l.Kind() == document.Number && (math.IsNaN(l.Float()) || math.IsNaN(r.Float())) {
		return undef
	}
	switch op {
	case ast.OpEq:
		return boolVal(d == 0)
	case ast.OpNe:
		return boolVal(d != 0)
	case ast.OpLt:
		return boolVal(d < 0)
	case ast.OpLe:
		return boolVal(d <= 0)
	case ast.OpGt:
		return boolVal(d > 0)
	case ast.OpGe:
		return boolVal(d >= 0)
	}
	return undef
}

// like matches s against a LIKE pattern: % is any run of characters, _ one
// character, [abc], [a-f] and [^...] character sets; esc makes the next
// character literal.
func like(s, pat, esc document.Value, hasEsc bool) document.Value {
	if s.Kind() != document.String || pat.Kind() != document.String {
		return undef
	}
	escape := rune(-1)
	if hasEsc {
		if esc.Kind() != document.String {
			return undef
		}
		r := []rune(esc.Str())
		if len(r) != 1 {
			return undef
		}
		escape = r[0]
	}
	return boolVal(likeMatch([]rune(s.Str()), []rune(pat.Str()), escape))
}

func likeMatch(s, p []rune, esc rune) bool {
	// Iterative matcher with one backtrack point for the last %, linear in
	// practice and never exponential.
	si, pi := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(p) {
			ok, width, isStar := likeStep(s[si], p[pi:], esc)
			if isStar {
				starP, starS = pi+1, si
				pi++
				continue
			}
			if ok {
				si++
				pi += width
				continue
			}
		}
		if starP >= 0 {
			starS++
			si, pi = starS, starP
			continue
		}
		return false
	}
	for pi < len(p) && p[pi] == '%' {
		pi++
	}
	return pi == len(p)
}

// likeStep matches one pattern element against r. It returns whether it
// matched, how many pattern runes the element used, and whether the
// element is %.
func likeStep(r rune, p []rune, esc rune) (bool, int, bool) {
	c := p[0]
	switch {
	case c == esc && len(p) > 1:
		return r == p[1], 2, false
	case c == '%':
		return false, 1, true
	case c == '_':
		return true, 1, false
	case c == '[':
		end := -1
		for i := 2; i < len(p); i++ {
			if p[i] == ']' {
				end = i
				break
			}
		}
		if end < 0 {
			return r == '[', 1, false
		}
		set := p[1:end]
		neg := false
		if len(set) > 0 && set[0] == '^' {
			neg, set = true, set[1:]
		}
		in := false
		for i := 0; i < len(set); i++ {
			if i+2 < len(set) && set[i+1] == '-' {
				if r >= set[i] && r <= set[i+2] {
					in = true
				}
				i += 2
				continue
			}
			if set[i] == r {
				in = true
			}
		}
		return in != neg, end + 1, false
	}
	return r == c, 1, false
}

// CanonicalKey appends an encoding of v under which values equal for
// DISTINCT and GROUP BY encode the same: undefined apart from null, numbers
// by value, object properties in name order. Unique keys compare values by
// it too.
func CanonicalKey(dst []byte, v document.Value) []byte {
	switch v.Kind() {
	case document.Undefined:
		return append(dst, 'u')
	case document.Number:
		f := v.Float()
		if v.IsInt() || (f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63) {
			dst = append(dst, 'i')
			return append(dst, document.Int(v.Int()).JSON()...)
		}
		dst = append(dst, 'f')
		return document.AppendFloat(dst, f)
	case document.Array:
		dst = append(dst, '[')
		for _, e := range v.Array() {
			dst = CanonicalKey(dst, e)
			dst = append(dst, ',')
		}
		return append(dst, ']')
	case document.Object:
		fs := v.Fields()
		if !slices.IsSortedFunc(fs, byName) {
			fs = slices.Clone(fs)
			slices.SortFunc(fs, byName)
		}
		dst = append(dst, '{')
		for _, f := range fs {
			if !f.Value.IsDefined() {
				continue
			}
			dst = document.AppendString(dst, f.Name)
			dst = append(dst, ':')
			dst = CanonicalKey(dst, f.Value)
			dst = append(dst, ',')
		}
		return append(dst, '}')
	}
	return v.AppendJSON(dst)
}

func byName(a, b document.Field) int { return strings.Compare(a.Name, b.Name) }
