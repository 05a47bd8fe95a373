package engine

import (
	"slices"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"github.com/mayfly-db/mayfly/internal/query/parser"
)

// A container's computedProperties name top-level properties whose values
// a query computes from the item it reads (docs/design/query.md,
// "Computed properties"). They are not stored: a query that reads one
// through its FROM alias reads the expression instead, so that
//
//	SELECT c.id FROM c WHERE c.cp_lower = "ab"
//
// with cp_lower defined as SELECT VALUE LOWER(c.name) FROM c runs as
//
//	SELECT c.id FROM c WHERE LOWER(c.name) = "ab"
//
// and the planner sees an expression no index keeps (the range index holds
// stored properties only). SELECT * and the alias alone still return the
// item as stored, as the service's do.

// maxComputedProperties is the most a container may define, as on the
// service.
const maxComputedProperties = 20

// computedProperty is one definition: the property's name, and its
// query's expression with the alias the query reads the item through.
type computedProperty struct {
	name  string
	alias string
	expr  ast.Expr
}

// computedReserved are names a computed property may not take: the
// system properties of an item.
var computedReserved = []string{"id", "_rid", "_ts", "_etag", "_self", "_attachments", "_lsn"}

// computedNotAllowed are the functions whose value an item alone does not
// determine (the clock, chance, other items), which a definition may not
// call.
var computedNotAllowed = []string{
	"GetCurrentDateTime", "GetCurrentDateTimeStatic", "GetCurrentTimestamp", "GetCurrentTimestampStatic",
	"GetCurrentTicks", "GetCurrentTicksStatic", "RAND", "FullTextScore", "RRF", "DocumentId",
}

// parseComputedProperties reads a container's computedProperties: nil for
// none (absent or null), or a 400 that names the definition at fault.
func parseComputedProperties(v document.Value) ([]computedProperty, *Error) {
	if !v.IsDefined() || v.IsNull() {
		return nil, nil
	}
	if v.Kind() != document.Array {
		return nil, errorf(BadRequest, "The computedProperties of a container must be an array.")
	}
	defs := v.Array()
	if len(defs) > maxComputedProperties {
		return nil, errorf(BadRequest, "A container may have at most %d computed properties; %d were given.", maxComputedProperties, len(defs))
	}
	out := make([]computedProperty, 0, len(defs))
	for i, d := range defs {
		name, text := d.Get("name"), d.Get("query")
		if d.Kind() != document.Object || name.Kind() != document.String || text.Kind() != document.String {
			return nil, errorf(BadRequest, "Computed property %d must be an object with a string name and a string query.", i)
		}
		n := name.Str()
		switch {
		case n == "":
			return nil, errorf(BadRequest, "Computed property %d has an empty name.", i)
		case strings.Contains(n, "/"):
			return nil, errorf(BadRequest, "The computed property name %q must name a top-level property: it may not hold '/'.", n)
		}
		if slices.Contains(computedReserved, n) {
			return nil, errorf(BadRequest, "The computed property name %q is a system property's.", n)
		}
		if slices.ContainsFunc(out, func(p computedProperty) bool { return p.name == n }) {
			return nil, errorf(BadRequest, "The computed property name %q is defined twice.", n)
		}
		p, msg := compileComputed(text.Str())
		if msg != "" {
			return nil, errorf(BadRequest, "The query of computed property %q is not valid: %s", n, msg)
		}
		p.name = n
		out = append(out, p)
	}
	// As on the service, a definition may not rely on another (or on
	// itself): it reads the item as stored.
	for _, p := range out {
		w := &computedRewriter{alias: p.alias, defs: out}
		var read *computedProperty
		ast.Walk(p.expr, func(x ast.Expr) bool {
			if d, ok := w.def(x); ok {
				read = d
			}
			return read == nil
		})
		if read != nil {
			return nil, errorf(BadRequest, "The query of computed property %q reads computed property %q: a computed property may not rely on another.", p.name, read.name)
		}
	}
	return out, nil
}

// compileComputed checks a definition's query, which must be SELECT VALUE
// of an expression of the item read through FROM: no other clause, no
// subquery, parameter, aggregate, user-defined function or function of
// anything but the item. It returns what is wrong, "" when nothing is.
func compileComputed(text string) (computedProperty, string) {
	q, err := parser.Parse(text)
	if err != nil {
		return computedProperty{}, err.Error()
	}
	alias, ok := itemAlias(q)
	if !ok || len(q.Joins) > 0 {
		return computedProperty{}, "its FROM clause must name the item alone, as in FROM c, without JOIN."
	}
	s := q.Select
	if s.Value == nil || s.Distinct || s.Top != nil {
		return computedProperty{}, "it must be SELECT VALUE of an expression, without DISTINCT or TOP."
	}
	if q.Where != nil || len(q.GroupBy) > 0 || len(q.OrderBy) > 0 || q.Offset != nil || q.Limit != nil {
		return computedProperty{}, "it may have no WHERE, GROUP BY, ORDER BY or OFFSET LIMIT clause."
	}
	msg := ""
	ast.Walk(s.Value, func(x ast.Expr) bool {
		switch x := x.(type) {
		case *ast.Exists, *ast.ArrayQuery, *ast.Subquery:
			msg = "it may not hold a subquery."
		case *ast.Param:
			msg = "it may not use a parameter."
		case *ast.Call:
			switch {
			case x.UDF:
				msg = "it may not call a user-defined function."
			case gatewayplan.IsAggregate(x):
				msg = "it may not call an aggregate function."
			case strings.HasPrefix(strings.ToUpper(x.Name), "ST_"):
				msg = "it may not call a spatial function."
			}
			for _, f := range computedNotAllowed {
				if strings.EqualFold(x.Name, f) {
					msg = "it may not call " + f + ", whose value the item alone does not give."
				}
			}
		}
		return msg == ""
	})
	if msg != "" {
		return computedProperty{}, msg
	}
	// The compiler finds unknown functions and identifiers other than the
	// alias.
	if _, err := eval.Compile(q, nil, eval.Options{}); err != nil {
		return computedProperty{}, err.Error()
	}
	return computedProperty{alias: alias, expr: s.Value}, ""
}

// itemAlias returns the alias q reads each item through, when its FROM
// clause names the item itself (FROM c, FROM root r).
func itemAlias(q *ast.Query) (string, bool) {
	if q.From == nil || q.From.Iterate {
		return "", false
	}
	if _, ok := q.From.Expr.(*ast.Ident); !ok {
		return "", false
	}
	return q.From.Alias, true
}

// withComputed returns q with each read of a computed property through
// its FROM alias replaced by the property's expression, read from that
// alias; q itself when it reads none. A subquery reads the properties
// too, until it binds the alias to something else.
func withComputed(q *ast.Query, defs []computedProperty) *ast.Query {
	alias, ok := itemAlias(q)
	if len(defs) == 0 || !ok {
		return q
	}
	w := &computedRewriter{alias: alias, defs: defs}
	w.sub = func(e ast.Expr) (ast.Expr, bool) {
		if d, ok := w.def(e); ok {
			return renameAlias(d.expr, d.alias, w.alias), true
		}
		return nil, false
	}
	out := w.query(q, true)
	if !w.changed {
		return q
	}
	return out
}

// computedRewriter copies a query's tree with the expressions sub gives
// in place of the ones it takes.
type computedRewriter struct {
	alias   string
	defs    []computedProperty
	sub     func(ast.Expr) (ast.Expr, bool)
	changed bool
}

// def returns the definition e reads, when it reads one through the alias.
func (w *computedRewriter) def(e ast.Expr) (*computedProperty, bool) {
	var name string
	switch x := e.(type) {
	case *ast.Member:
		if id, ok := x.X.(*ast.Ident); !ok || id.Name != w.alias {
			return nil, false
		}
		name = x.Name
	case *ast.Index:
		id, ok := x.X.(*ast.Ident)
		lit, isLit := x.Index.(*ast.Literal)
		if !ok || id.Name != w.alias || !isLit || lit.Value.Kind() != document.String {
			return nil, false
		}
		name = lit.Value.Str()
	default:
		return nil, false
	}
	for i := range w.defs {
		if w.defs[i].name == name {
			return &w.defs[i], true
		}
	}
	return nil, false
}

// query rewrites a query in which the alias reads the item (top) or, in a
// subquery, still does where the subquery has not bound it again.
func (w *computedRewriter) query(q *ast.Query, top bool) *ast.Query {
	out := *q
	if q.From != nil && !top {
		from := *q.From
		from.Expr = w.expr(from.Expr)
		out.From = &from
		if from.Alias == w.alias {
			return &out
		}
	}
	out.Joins = make([]*ast.FromSource, len(q.Joins))
	for i, j := range q.Joins {
		nj := *j
		nj.Expr = w.expr(j.Expr)
		out.Joins[i] = &nj
		if j.Alias == w.alias {
			// What follows reads the join's alias; the rest of the
			// joins and clauses are left as written.
			copy(out.Joins[i+1:], q.Joins[i+1:])
			return &out
		}
	}
	out.Where = w.expr(q.Where)
	out.Select.Value = w.expr(q.Select.Value)
	out.Select.Items = make([]ast.SelectItem, len(q.Select.Items))
	for i, it := range q.Select.Items {
		// A computed property projected by itself keeps its name.
		if d, ok := w.def(it.Expr); ok && it.Alias == "" {
			it.Alias = d.name
		}
		it.Expr = w.expr(it.Expr)
		out.Select.Items[i] = it
	}
	out.GroupBy = make([]ast.Expr, len(q.GroupBy))
	for i, g := range q.GroupBy {
		out.GroupBy[i] = w.expr(g)
	}
	out.OrderBy = make([]ast.OrderItem, len(q.OrderBy))
	for i, o := range q.OrderBy {
		o.Expr = w.expr(o.Expr)
		out.OrderBy[i] = o
	}
	return &out
}

// expr rewrites an expression; nil stays nil.
func (w *computedRewriter) expr(e ast.Expr) ast.Expr {
	return ast.Rewrite(e, func(x ast.Expr) (ast.Expr, bool) {
		n, ok := w.sub(x)
		w.changed = w.changed || ok
		return n, ok
	}, func(q *ast.Query) *ast.Query { return w.query(q, false) })
}

// renameAlias returns a definition's expression read through the query's
// alias rather than its own. A definition holds no subquery, so every
// identifier in it is its alias.
func renameAlias(e ast.Expr, from, to string) ast.Expr {
	if from == to {
		return e
	}
	w := &computedRewriter{sub: func(e ast.Expr) (ast.Expr, bool) {
		if id, ok := e.(*ast.Ident); ok && id.Name == from {
			return &ast.Ident{Name: to, Pos: id.Pos}, true
		}
		return nil, false
	}}
	return w.expr(e)
}

// checkComputedReads refuses what Mayfly does not serve of a query that
// reads computed properties: a FROM clause that reads one through a path
// (FROM c.cp x, FROM x IN c.cp), which the engine takes to read stored
// paths; and, as the service refuses it, an ORDER BY of one key on a
// computed property that no included path names (the service indexes a
// computed property only when a path names it, a wildcard does not, and
// sorts by one key only through the index). Several keys need a
// composite index, which checkIndexNeeds asks for.
func checkComputedReads(c *containerRecord, q *ast.Query) *Error {
	if len(c.computed) == 0 || q.From == nil {
		return nil
	}
	alias, ok := itemAlias(q)
	if !ok {
		if d, found := fromReads(q.From.Expr, c.computed); found {
			return errorf(BadRequest, "A FROM clause that reads the computed property %q is not served: read it through a JOIN (FROM c JOIN x IN c.%s) or in the other clauses.", d.name, d.name)
		}
		return nil
	}
	w := &computedRewriter{alias: alias, defs: c.computed}
	if len(q.OrderBy) == 1 {
		if d, ok := w.def(q.OrderBy[0].Expr); ok && !c.index.names(d.name) {
			return errorf(BadRequest, "Order-by item requires a range index to be defined on the corresponding index path: computed property %q is indexed only when an included path names it, as /%s/?.", d.name, d.name)
		}
	}
	return nil
}

// fromReads returns the definition a FROM path (c.cp.x, c["cp"][0])
// reads at its first step from the container, when it reads one.
func fromReads(e ast.Expr, defs []computedProperty) (*computedProperty, bool) {
	var first ast.Expr // the step read from the root, once reached
	for {
		switch x := e.(type) {
		case *ast.Member:
			first, e = x, x.X
		case *ast.Index:
			first, e = x, x.X
		case *ast.Ident:
			if first == nil {
				return nil, false
			}
			w := &computedRewriter{alias: x.Name, defs: defs}
			return w.def(first)
		default:
			return nil, false
		}
	}
}

// withComputedProgram derives from prog the program that reads the
// computed properties defs define (withComputed); prog itself when its
// query reads none.
func withComputedProgram(prog *eval.Program, defs []computedProperty) (*eval.Program, error) {
	q := withComputed(prog.Query(), defs)
	if q == prog.Query() {
		return prog, nil
	}
	derived, err := prog.DeriveRewritten(q)
	if err != nil {
		return nil, queryError(err)
	}
	return derived, nil
}

// names reports whether an included path of the policy starts with the
// top-level property name itself, not a wildcard, and no excluded path
// takes it back.
func (pol indexPolicy) names(name string) bool {
	if pol.none {
		return false
	}
	for _, p := range pol.included {
		if len(p.segs) > 0 && p.segs[0] == name {
			return pol.matches([]string{name})
		}
	}
	return false
}
