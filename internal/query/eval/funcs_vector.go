package eval

import (
	"sync"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
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

// vectorDistance evaluates the call in scope s. Its options are constant
// (checked by Compile), so only the vectors are evaluated. A score costs a
// step per eight elements of the two vectors: a multiply-add is far
// cheaper than a step of evaluation.
func (c *ctx) vectorDistance(vc *vectorCall, s scope) (document.Value, error) {
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
