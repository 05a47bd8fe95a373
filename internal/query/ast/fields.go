package ast

import "github.com/mayfly-db/mayfly/internal/document"

// RootFields returns the top-level properties of its documents that q can
// read through the alias of its FROM clause, so a caller may decode only
// those (document.ParseTop). all is true when q may read more than named
// properties: the alias alone (SELECT VALUE c, a function of c), an index
// that is not a string literal (c[@p]), a FROM that is not the container
// itself, or a subquery or JOIN that binds the same alias again. SELECT *
// reads the document whole; that is left to the caller, which may answer
// it from the stored bytes.
func RootFields(q *Query) (names map[string]bool, all bool) {
	return RootFieldsExcept(q, nil)
}

// RootFieldsExcept is RootFields of q without what the calls skip picks
// read: calls whose values the caller knows without the document.
func RootFieldsExcept(q *Query, skip func(*Call) bool) (names map[string]bool, all bool) {
	if q.From == nil {
		return nil, false
	}
	if _, ok := q.From.Expr.(*Ident); !ok || q.From.Iterate {
		return nil, true
	}
	alias := q.From.Alias
	names = map[string]bool{}
	var query func(sq *Query, top bool)
	expr := func(e Expr) {
		Walk(e, func(x Expr) bool {
			if all {
				return false
			}
			switch x := x.(type) {
			case *Member:
				if base, ok := x.X.(*Ident); ok && base.Name == alias {
					names[x.Name] = true
					return false
				}
			case *Index:
				if base, ok := x.X.(*Ident); ok && base.Name == alias {
					if lit, ok := x.Index.(*Literal); ok && lit.Value.Kind() == document.String {
						names[lit.Value.Str()] = true
					} else {
						all = true
					}
					return false
				}
			case *Call:
				if skip != nil && skip(x) {
					return false
				}
			case *Ident:
				all = all || x.Name == alias
			case *Exists:
				query(x.Query, false)
			case *ArrayQuery:
				query(x.Query, false)
			case *Subquery:
				query(x.Query, false)
			}
			return true
		})
	}
	query = func(sq *Query, top bool) {
		if sq.From != nil {
			if !top {
				all = all || sq.From.Alias == alias
				expr(sq.From.Expr)
			}
			for _, j := range sq.Joins {
				all = all || j.Alias == alias
				expr(j.Expr)
			}
		}
		expr(sq.Where)
		expr(sq.Select.Value)
		for _, it := range sq.Select.Items {
			expr(it.Expr)
		}
		for _, g := range sq.GroupBy {
			expr(g)
		}
		for _, o := range sq.OrderBy {
			expr(o.Expr)
		}
	}
	query(q, true)
	return names, all
}
