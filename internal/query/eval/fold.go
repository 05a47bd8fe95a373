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
// undefined, null, a boolean, a string or a finite number (a literal
// undefined is no constant to the planner, and evaluates as the part
// did). Anything else, and a part whose evaluation fails, is left to be
// evaluated as written. The ANDs and ORs of the clause are then
// simplified where an operand is a literal (truth), so that an optional
// filter written as "(@status = null OR c.status = @status)" is
// "c.status = @status", or nothing, for the planner; a clause that is
// true is dropped. A query with nothing to fold or simplify is not copied.
func (p *Program) folded(q *ast.Query) (*ast.Query, bool) {
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
		if err != nil || v.IsDefined() && !scalar(v) {
			return nil, false
		}
		changed = true
		return &ast.Literal{Value: v, Pos: e.Position()}, true
	}
	fold = func(q *ast.Query) *ast.Query {
		if q.Where == nil {
			return q
		}
		w := q.Where
		if p.foldable(q) {
			w = ast.Rewrite(w, sub, fold)
		}
		t := truth(w)
		if isTrue, _ := literalTruth(t); isTrue {
			t = nil // WHERE true holds for every row
		}
		if t == q.Where {
			return q
		}
		changed = changed || t != w
		out := *q
		out.Where = t
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
	inWhere := func(e ast.Expr) bool {
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

// truth returns a filter that passes exactly the rows e passes, where e
// stands in the place of a WHERE clause (or an operand of its ANDs and ORs
// there): only whether a value is true counts in such a place, so an AND
// with a literal operand is its other operand when the literal is true and
// false otherwise, and an OR with one is true when the literal is true and
// its other operand otherwise. Anywhere else the value itself counts
// (true AND 5 is undefined, not 5), and nothing is simplified below a NOT,
// whose operand's falsity counts too.
func truth(e ast.Expr) ast.Expr {
	b, ok := e.(*ast.Binary)
	if !ok || b.Op != ast.OpAnd && b.Op != ast.OpOr {
		return e
	}
	l, r := truth(b.L), truth(b.R)
	lTrue, lLit := literalTruth(l)
	rTrue, rLit := literalTruth(r)
	switch {
	case b.Op == ast.OpAnd && (lLit && !lTrue || rLit && !rTrue):
		return &ast.Literal{Value: document.BoolValue(false), Pos: b.Pos}
	case b.Op == ast.OpOr && (lLit && lTrue || rLit && rTrue):
		return &ast.Literal{Value: document.BoolValue(true), Pos: b.Pos}
	case lLit:
		return r // the AND's true operand, or the OR's operand that is not
	case rLit:
		return l
	case l == b.L && r == b.R:
		return e
	}
	n := *b
	n.L, n.R = l, r
	return &n
}

// literalTruth reports whether e is a literal (lit) and, if it is, whether
// it is true.
func literalTruth(e ast.Expr) (isTrue, lit bool) {
	x, ok := e.(*ast.Literal)
	if !ok {
		return false, false
	}
	return x.Value.Kind() == document.Bool && x.Value.Bool(), true
}
