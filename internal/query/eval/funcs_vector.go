package eval

import (
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

func (c *ctx) vectorDistance(q *ast.Query, x *ast.Call, args []document.Value) (document.Value, error) {
	f, err := vector.FunctionOf(q, x, c.prog.policy(), c.prog.params)
	if err != nil {
		return undef, err
	}
	s, ok := vector.Score(f, args[0], args[1])
	if !ok {
		return undef, nil
	}
	return document.FloatExact(s), nil
}

// vectorDescending reports whether the ORDER BY key e of q is a call of
// VectorDistance whose function orders highest first.
func (c *ctx) vectorDescending(q *ast.Query, e ast.Expr) bool {
	call, ok := vector.IsCall(e)
	if !ok {
		return false
	}
	f, err := vector.FunctionOf(q, call, c.prog.policy(), c.prog.params)
	return err == nil && f.Descending()
}
