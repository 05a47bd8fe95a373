package engine

import (
	"bytes"
	"slices"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// ResumeFilter is the .NET SDK's resumeFilter, a field of a query's body:
// where a cross-partition ORDER BY resumed from the application's
// continuation token goes on in each range, which the SDK asks without a
// continuation of the range's own ("the backend picks the resume point").
type ResumeFilter struct {
	// Values are the ORDER BY values of the last row returned, one per
	// ORDER BY item. The SDK sends an array's or an object's as a hash,
	// known here by its kind only (Hashed).
	Values []document.Value
	Hashed []bool
	// Exclude leaves out the rows at Values too: the row returned last
	// was the last of them.
	Exclude bool
	// Rid, when not empty, is the _rid of the document of the row returned
	// last. Of the rows at Values, those of documents before it in the
	// order ties keep (_rid order, backwards when a key is descending)
	// were returned already and are left out; its own rows stay unless
	// Exclude, for the SDK skips those it returned.
	Rid string
}

// kindTests are the functions that tell an expression's kind, in the
// ORDER BY order of kinds (document.Kind); undefined is NOT IS_DEFINED.
var kindTests = [...]string{document.Undefined: "IS_DEFINED", document.Null: "IS_NULL", document.Bool: "IS_BOOL",
	document.Number: "IS_NUMBER", document.String: "IS_STRING", document.Array: "IS_ARRAY", document.Object: "IS_OBJECT"}

// withResumeFilter returns q with f's condition ANDed to its WHERE
// clause: the rows after f's values in q's ORDER BY order (ties left in
// when f does not exclude them), by kind first, as ORDER BY orders them.
// A hashed value's kind is all that is known of it, so every row of that
// kind is kept. When the rows tied at equal values keep _rid order
// (ridTies), a rid narrows the rows at the values to those from its
// document on (ResumeFilter.Rid), by DocumentId, which is the sequence of
// the _rid order; collRid is the container's. An ORDER BY RANK, values
// that do not match the ORDER BY, or a rid not of a document of the
// container are a 400.
func withResumeFilter(q *ast.Query, f *ResumeFilter, collRid []byte, ridTies bool) (*ast.Query, *Error) {
	if len(q.OrderBy) == 0 || len(f.Values) != len(q.OrderBy) {
		return nil, errorf(BadRequest, "The resumeFilter has %d value(s) for a query with %d ORDER BY item(s).", len(f.Values), len(q.OrderBy))
	}
	for _, o := range q.OrderBy {
		if o.Rank {
			return nil, errorf(BadRequest, "A resumeFilter cannot resume an ORDER BY RANK.")
		}
	}
	kindIs := func(k ast.Expr, kind document.Kind) ast.Expr {
		test := &ast.Call{Name: kindTests[kind], Args: []ast.Expr{k}}
		if kind == document.Undefined {
			return &ast.Unary{Op: ast.OpNot, X: test}
		}
		return test
	}
	or := func(a, b ast.Expr) ast.Expr {
		if a == nil {
			return b
		}
		return &ast.Binary{Op: ast.OpOr, L: a, R: b}
	}
	and := func(a, b ast.Expr) ast.Expr { return &ast.Binary{Op: ast.OpAnd, L: a, R: b} }
	falseLit := &ast.Literal{Value: document.BoolValue(false)}
	// after is the condition of the rows past value i; equal, of those at
	// it (nil when that cannot be told).
	after := func(i int) ast.Expr {
		o, v, hashed := q.OrderBy[i], f.Values[i], f.Hashed[i]
		var cond ast.Expr
		for kind := document.Undefined; kind <= document.Object; kind++ {
			past := kind > v.Kind()
			if o.Desc {
				past = kind < v.Kind()
			}
			if past || hashed && kind == v.Kind() {
				cond = or(cond, kindIs(o.Expr, kind))
			}
		}
		if kind := v.Kind(); !hashed && (kind == document.Bool || kind == document.Number || kind == document.String) {
			op := ast.OpGt
			if o.Desc {
				op = ast.OpLt
			}
			cond = or(cond, and(kindIs(o.Expr, v.Kind()), &ast.Binary{Op: op, L: o.Expr, R: &ast.Literal{Value: v}}))
		}
		if cond == nil {
			return falseLit
		}
		return cond
	}
	equal := func(i int) ast.Expr {
		o, v := q.OrderBy[i], f.Values[i]
		switch {
		case f.Hashed[i]:
			return falseLit // its kind is all after it
		case v.Kind() == document.Undefined || v.Kind() == document.Null:
			return kindIs(o.Expr, v.Kind())
		}
		return and(kindIs(o.Expr, v.Kind()), &ast.Binary{Op: ast.OpEq, L: o.Expr, R: &ast.Literal{Value: v}})
	}
	last := len(q.OrderBy) - 1
	cond := after(last)
	tie, derr := tieFrom(q, f, collRid, ridTies)
	if derr != nil {
		return nil, derr
	}
	switch {
	case tie != nil:
		cond = or(cond, and(equal(last), tie))
	case !f.Exclude:
		cond = or(cond, equal(last))
	}
	for i := last - 1; i >= 0; i-- {
		cond = or(after(i), and(equal(i), cond))
	}
	out := *q
	if out.Where == nil {
		out.Where = cond
	} else {
		out.Where = and(out.Where, cond)
	}
	return &out, nil
}

// tieFrom is the condition on the document of a row tied at f's values
// that keeps it: from f's rid on in the order ties keep, after it when f
// excludes; nil when f has no rid, when ties do not keep _rid order, or
// when the rows' documents are not the FROM alias's, whose DocumentId the
// condition reads.
func tieFrom(q *ast.Query, f *ResumeFilter, collRid []byte, ridTies bool) (ast.Expr, *Error) {
	if f.Rid == "" {
		return nil, nil
	}
	rid, ok := parseRid(f.Rid)
	if !ok || len(rid) != itemRidLen || !bytes.Equal(rid[:collRidLen], collRid) {
		return nil, errorf(BadRequest, "The resumeFilter's rid %q is not the rid of a document of this container.", f.Rid)
	}
	alias, ok := itemAlias(q)
	if !ok || !ridTies {
		return nil, nil
	}
	desc := slices.ContainsFunc(q.OrderBy, func(o ast.OrderItem) bool { return o.Desc })
	var op ast.BinaryOp
	switch {
	case !desc && !f.Exclude:
		op = ast.OpGe
	case !desc:
		op = ast.OpGt
	case !f.Exclude:
		op = ast.OpLe
	default:
		op = ast.OpLt
	}
	seq := document.Int(int64(itemSeq(collRid, rid)))
	id := &ast.Call{Name: "DocumentId", Args: []ast.Expr{&ast.Ident{Name: alias}}}
	return &ast.Binary{Op: op, L: id, R: &ast.Literal{Value: seq}}, nil
}

// ridTies reports whether the rows of p that tie at equal ORDER BY values
// keep _rid order, as over a range, the whole container or one logical
// partition, whose locations follow the sequence, and under a prefix the
// WHERE clause pins, which is read over its range (ridOrderedPrefix);
// within a prefix a header names, or a feed range narrower than its
// range, they keep location order, partition by partition
// (itemScope.scanPos), where a rid has no place of its own to tell.
func (e *Engine) ridTies(r storage.Reader, c *containerRecord, q *ast.Query, p QueryParams) bool {
	key, hasKey := p.PartitionKey, p.HasKey
	if !hasKey && len(c.pk.paths) > 0 {
		if pinned, _, ok := pinnedKey(c, q, p.Params); ok {
			key, hasKey = pinned, true
		}
	}
	s, derr := e.scopeFor(c, key, hasKey, p.RangeID)
	if derr != nil {
		return false // the query is refused later, for the same reason
	}
	s.narrowToEPKs(p.MinEPK, p.MaxEPK)
	if s.kind == plan.ScopePrefix {
		// A prefix the WHERE clause pins is read as its range
		// (ridOrderedPrefix).
		_, ok, err := e.ridOrderedPrefix(r, c, q, p, s, &readStats{})
		return ok && err == nil
	}
	return true
}
