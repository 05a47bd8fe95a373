package plan

import (
	"slices"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
)

// ValueFilter is a part of the WHERE clause whose truth for a document
// depends on one path's value alone: the top-level AND terms that read no
// other property, call no function that reads more than its arguments
// (nor RAND), and hold no subquery. Its terms need not be of the shapes
// Predicates knows (CONTAINS(c.name, "x"), LOWER(c.city) = "oslo",
// c.price * 1.2 < 100): the engine evaluates them on each value the
// path's index entries hold, and reads the records of the items whose
// value passes (ValueScan), which costs an entry for every item holding
// the path and a record for each that passes, where a scan reads every
// record.
type ValueFilter struct {
	Path  []string
	Where ast.Expr // the terms, ANDed
	Label string   // for Explain
	// Whole is set when the terms are the whole WHERE clause; Rest is
	// the clause's other terms, ANDed (nil when Whole).
	Whole bool
	Rest  ast.Expr
}

// valueDenied are the built-in functions whose result is not a function
// of their arguments' values alone, or that rank (a rank's statistics are
// those of every document the query reads).
var valueDenied = []string{"RAND", "DOCUMENTID", "VECTORDISTANCE", "FULLTEXTSCORE", "RRF",
	// The aggregates, which a WHERE clause cannot hold anyway.
	"COUNT", "COUNTIF", "SUM", "AVG", "MIN", "MAX", "MAKELIST", "MAKESET"}

// ValueTerms returns the value filter of q's WHERE clause on the first
// path one of its top-level AND terms reads alone, with every other such
// term on that path; ok is false when there is none. A term an index
// span answers (Predicates) is left to the span. Whether documents
// without the path may pass (NOT IS_DEFINED(c.x), c.x ?? 1 = 1) is the
// engine's to check: the index names only items that hold the path.
func ValueTerms(q *ast.Query, params map[string]document.Value) (f ValueFilter, ok bool) {
	if q.From == nil || q.From.Iterate {
		return ValueFilter{}, false
	}
	if id, isIdent := q.From.Expr.(*ast.Ident); !isIdent || id == nil {
		return ValueFilter{}, false
	}
	var labels []string
	all := conjuncts(q.Where)
	var rest []ast.Expr
	for _, t := range all {
		path, one := onePath(q, t)
		if !one || f.Path != nil && !slices.Equal(path, f.Path) {
			rest = append(rest, t)
			continue
		}
		if alone := *q; true {
			alone.Where = t
			if len(Predicates(&alone, params)) > 0 {
				rest = append(rest, t)
				continue
			}
		}
		if f.Where == nil {
			f.Path, f.Where = path, t
		} else {
			f.Where = &ast.Binary{Op: ast.OpAnd, L: f.Where, R: t}
		}
		labels = append(labels, ast.ExprString(t))
	}
	f.Label, f.Whole = strings.Join(labels, " AND "), len(labels) == len(all)
	for _, t := range rest {
		if f.Rest == nil {
			f.Rest = t
		} else {
			f.Rest = &ast.Binary{Op: ast.OpAnd, L: f.Rest, R: t}
		}
	}
	return f, f.Where != nil
}

// onePath returns the document path every property read of e reads, when
// e reads exactly one and nothing else of the document or of any other
// binding.
func onePath(q *ast.Query, e ast.Expr) (path []string, ok bool) {
	ok = true
	var walk func(e ast.Expr)
	walk = func(e ast.Expr) {
		if !ok || e == nil {
			return
		}
		switch x := e.(type) {
		case *ast.Literal, *ast.Param:
		case *ast.Member, *ast.Index:
			p, isPath := DocPath(q, e)
			if !isPath || path != nil && !slices.Equal(p, path) {
				ok = false
				return
			}
			path = p
		case *ast.Unary:
			walk(x.X)
		case *ast.Binary:
			walk(x.L)
			walk(x.R)
		case *ast.Ternary:
			walk(x.Cond)
			walk(x.Then)
			walk(x.Else)
		case *ast.Between:
			walk(x.X)
			walk(x.Lo)
			walk(x.Hi)
		case *ast.In:
			walk(x.X)
			for _, el := range x.List {
				walk(el)
			}
		case *ast.Like:
			walk(x.X)
			walk(x.Pattern)
			walk(x.Escape)
		case *ast.Call:
			if x.UDF || slices.Contains(valueDenied, strings.ToUpper(x.Name)) {
				ok = false
				return
			}
			for _, a := range x.Args {
				walk(a)
			}
		case *ast.ArrayLit:
			for _, el := range x.Elems {
				walk(el)
			}
		case *ast.ObjectLit:
			for _, fl := range x.Fields {
				walk(fl.Value)
			}
		default:
			// The document itself, another binding, a subquery.
			ok = false
		}
	}
	walk(e)
	return path, ok && path != nil
}
