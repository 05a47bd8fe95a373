package eval

import (
	"math"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
)

// folded returns q with the parts of its filters that read no document
// replaced by their values, when it has such parts: the planner reads
// "c.n = 5 + 1", "c._ts > GetCurrentTimestamp() / 1000 - 3600" and
// "STARTSWITH(c.name, LOWER(@p))" as a path and a constant, and serves
// them by the index, where it had to test every document's value. The
// values are the evaluator's own, with the program's parameters and its
// "now", so every row is judged as before.
//
// Folded are the WHERE clauses of q and of the subqueries in them; a
// part is folded when it reads no alias and holds no subquery, no
// user-defined function, no aggregate and no RAND, and its value is
// null, a boolean, a string or a finite number. Anything else, and a part
// whose evaluation fails, is left to be evaluated as written.
func (p *Program) folded(q *ast.Query) (*ast.Query, bool) {
	if !p.foldable(q) {
		return q, false // most queries: nothing is copied
	}
	changed := false
	var fold func(*ast.Query) *ast.Query
	sub := func(e ast.Expr) (ast.Expr, bool) {
		if _, ok := ast.Constant(e, p.params); ok {
			return e, true // read as a constant already
		}
		if !p.readsNothing(e) {
			return nil, false
		}
		v, err := p.newCtx(DocMeta{}).eval(e, nil)
		if err != nil || !scalar(v) {
			return nil, false
		}
		changed = true
		return &ast.Literal{Value: v, Pos: e.Position()}, true
	}
	fold = func(q *ast.Query) *ast.Query {
		if q.Where == nil {
			return q
		}
		out := *q
		out.Where = ast.Rewrite(q.Where, sub, fold)
		return &out
	}
	out := fold(q)
	return out, changed
}

// foldable reports whether a WHERE clause of q or of its subqueries holds
// a part folded would replace: one that reads no document and is not
// what the planner reads as a constant already (ast.Constant: a literal,
// a parameter, a negated number, a constructor of those).
func (p *Program) foldable(q *ast.Query) bool {
	found := false
	var inWhere func(e ast.Expr) bool
	inWhere = func(e ast.Expr) bool {
		if _, ok := ast.Constant(e, p.params); ok {
			return false // read as a constant already
		}
		switch x := e.(type) {
		case *ast.Exists:
			found = found || x.Query.Where != nil && p.foldable(x.Query)
		case *ast.ArrayQuery:
			found = found || x.Query.Where != nil && p.foldable(x.Query)
		case *ast.Subquery:
			found = found || x.Query.Where != nil && p.foldable(x.Query)
		default:
			found = found || p.readsNothing(e)
		}
		return !found
	}
	ast.Walk(q.Where, inWhere)
	return found
}

// readsNothing reports whether e's value is the same for every document:
// it reads no alias, holds no subquery, and calls only the built-in
// functions whose value follows from their arguments and the program's
// "now".
func (p *Program) readsNothing(e ast.Expr) bool {
	ok := true
	ast.Walk(e, func(x ast.Expr) bool {
		switch x := x.(type) {
		case *ast.Ident, *ast.Exists, *ast.ArrayQuery, *ast.Subquery:
			ok = false
		case *ast.Call:
			// Aggregates are not among the compiled functions (funcs), nor
			// are user-defined functions.
			if x.UDF || p.funcs[x] == nil || p.vectors[x] != nil || strings.EqualFold(x.Name, "RAND") {
				ok = false
			}
		}
		return ok
	})
	return ok
}

// scalar reports whether v can stand as a literal where the planner reads
// constants: arrays and objects are written as constructors (ast.ArrayLit,
// ast.ObjectLit), and no index entry holds NaN or an infinity.
func scalar(v document.Value) bool {
	switch v.Kind() {
	case document.Null, document.Bool, document.String:
		return true
	case document.Number:
		return v.IsInt() || !math.IsNaN(v.Float()) && !math.IsInf(v.Float(), 0)
	}
	return false
}
