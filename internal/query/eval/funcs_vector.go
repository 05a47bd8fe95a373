package eval

import (
	"slices"
	"sync"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/query/vector"
)

// VectorDistance(v1, v2[, bruteForce[, options]]) scores two vectors by the
// distance function its options name, else the one the container's
// embedding policy gives the path either vector is read from, else cosine
// (package vector). It is undefined unless both are arrays of numbers of
// one length. ORDER BY VectorDistance takes no ASC or DESC: it orders most
// similar first, highest first except for the Euclidean distance.

func init() {
	// Evaluated by ctx.vectorDistance, which needs the call's paths.
	register(2, 4, func(*ctx, []document.Value) (document.Value, error) { return undef, nil }, "VectorDistance")
}

// policy is the container's embedding policy the program runs under.
func (p *Program) policy() vector.Policy {
	if p.opts.Vectors == nil {
		return vector.Policy{}
	}
	return *p.opts.Vectors
}

// vectorCall is a call of VectorDistance as compiled: the query whose FROM
// alias its paths start at, and the values of its vectors that are
// constant (undefined for the others), so that a query vector is built
// once rather than for every document. Its distance function is resolved
// once, at the first score, when the container's policy is bound.
type vectorCall struct {
	q      *ast.Query
	x      *ast.Call
	consts [2]document.Value

	once sync.Once
	fn   vector.Function
	err  error
}

func newVectorCall(q *ast.Query, x *ast.Call, params map[string]document.Value) *vectorCall {
	vc := &vectorCall{q: q, x: x}
	for i := range vc.consts {
		if v, ok := ast.Constant(x.Args[i], params); ok {
			vc.consts[i] = v
		}
	}
	return vc
}

// function is the call's distance function under p's policy.
func (vc *vectorCall) function(p *Program) (vector.Function, error) {
	vc.once.Do(func() { vc.fn, vc.err = vector.FunctionOf(vc.q, vc.x, p.policy(), p.params) })
	return vc.fn, vc.err
}

// Distances are the scores of one VectorDistance that the caller knows
// for some of the documents it feeds a run without reading them:
// VectorDistance of the document's property at Path (a path of the
// top-level query's FROM alias) and the constant vector Vector, by
// Function, as Score computes it. Of returns a document's score, if
// known.
type Distances struct {
	Path     []string
	Vector   document.Value
	Function vector.Function
	Of       func(DocMeta) (float64, bool)
}

// UseDistances has the program take the scores d knows, rather than
// compute them, for every call of VectorDistance in its top-level query
// whose scores d holds: one vector the property at d.Path and the other
// the constant d.Vector, by d.Function.
func (p *Program) UseDistances(d *Distances) {
	p.distances, p.known = d, map[*ast.Call]bool{}
	for call, vc := range p.vectors {
		if vc.q != p.q {
			continue
		}
		if f, err := vc.function(p); err != nil || f != d.Function {
			continue
		}
		for i := range 2 {
			path, ok := plan.DocPath(vc.q, vc.x.Args[i])
			if c := vc.consts[1-i]; ok && slices.Equal(path, d.Path) && c.IsDefined() && document.Equal(c, d.Vector) {
				p.known[call] = true
			}
		}
	}
}

// UsesDistances reports whether the program takes some call's scores
// from its Distances (UseDistances).
func (p *Program) UsesDistances() bool { return len(p.known) > 0 }

// KnowsDistance reports whether the program takes the score of some call
// of VectorDistance of the document of meta from its Distances.
func (p *Program) KnowsDistance(meta DocMeta) bool {
	if !p.UsesDistances() {
		return false
	}
	_, ok := p.distances.Of(meta)
	return ok
}

// RootFields is ast.RootFields of the program's query; with known, for a
// document whose scores it knows (KnowsDistance), less what only the
// calls of VectorDistance it takes them for read.
func (p *Program) RootFields(known bool) (names map[string]bool, all bool) {
	if !known || !p.UsesDistances() {
		return ast.RootFields(p.q)
	}
	return ast.RootFieldsExcept(p.q, func(c *ast.Call) bool { return p.known[c] })
}

// vectorDistance evaluates the call in scope s. Its options are constant
// (checked by Compile), so only the vectors are evaluated. A score costs a
// step per eight elements of the two vectors: a multiply-add is far
// cheaper than a step of evaluation.
func (c *ctx) vectorDistance(vc *vectorCall, s scope) (document.Value, error) {
	if c.prog.known[vc.x] {
		if d, ok := c.prog.distances.Of(c.meta); ok {
			if err := c.step(); err != nil {
				return undef, err
			}
			return document.FloatExact(d), nil
		}
	}
	var vecs [2]document.Value
	for i := range vecs {
		vecs[i] = vc.consts[i]
		if !vecs[i].IsDefined() {
			v, err := c.eval(vc.x.Args[i], s)
			if err != nil {
				return undef, err
			}
			vecs[i] = v
		}
	}
	if err := c.charge((vecs[0].Len() + vecs[1].Len()) / 8); err != nil {
		return undef, err
	}
	f, err := vc.function(c.prog)
	if err != nil {
		return undef, err
	}
	sc, ok := vector.Score(f, vecs[0], vecs[1])
	if !ok {
		return undef, nil
	}
	return document.FloatExact(sc), nil
}

// vectorDescending reports whether the ORDER BY key e is a call of
// VectorDistance whose function orders highest first.
func (c *ctx) vectorDescending(e ast.Expr) bool {
	call, ok := vector.IsCall(e)
	if !ok {
		return false
	}
	vc, ok := c.prog.vectors[call]
	if !ok {
		return false
	}
	f, err := vc.function(c.prog)
	return err == nil && f.Descending()
}
