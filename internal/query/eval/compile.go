package eval

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/vector"
)

type compiler struct {
	prog *Program
	cur  *ast.Query // the query being compiled, for VectorDistance's paths
}

func errAt(e ast.Expr, code, format string, args ...any) *ast.Error {
	pos := ast.Pos(-1)
	if e != nil {
		pos = e.Position()
	}
	return &ast.Error{Code: code, Message: fmt.Sprintf(format, args...), Pos: pos, End: pos}
}

// query checks q and records what evaluation needs. outer lists the aliases
// bound by enclosing queries.
func (c *compiler) query(q *ast.Query, outer []string, top bool) (*compiled, error) {
	cq := &compiled{q: q, top: -1, offset: -1, limit: -1, aggIndex: map[*ast.Call]int{}}
	c.prog.queries[q] = cq
	defer func(outer *ast.Query) { c.cur = outer }(c.cur)
	c.cur = q
	names := append([]string(nil), outer...)
	if q.From != nil {
		if top {
			if _, sub := q.From.Expr.(*ast.Subquery); sub && !q.From.Iterate {
				return nil, ast.NewError("SC2001", "A subquery in the FROM clause is not served by Mayfly: read the item's arrays through a JOIN, or aggregate the inner query's rows in the client.")
			}
			if id, ok := ast.PathRoot(q.From.Expr); ok {
				cq.container = id.Name
			}
			if err := c.expr(q.From.Expr, []string{cq.container}, nil); err != nil {
				return nil, err
			}
		} else if err := c.expr(q.From.Expr, names, nil); err != nil {
			return nil, err
		}
		names = append(names, q.From.Alias)
		for i, j := range q.Joins {
			if err := c.expr(j.Expr, names, nil); err != nil {
				return nil, err
			}
			// An inner query may reuse an outer alias, but one FROM
			// clause names each input set once.
			if j.Alias == q.From.Alias || slices.ContainsFunc(q.Joins[:i], func(o *ast.FromSource) bool { return o.Alias == j.Alias }) {
				return nil, ast.NewError("SC2021", fmt.Sprintf("The input set name or alias '%s' is specified more than once in the FROM clause.", j.Alias))
			}
			names = append(names, j.Alias)
		}
	}
	if q.Where != nil {
		if err := c.expr(q.Where, names, nil); err != nil {
			return nil, err
		}
	}
	for _, g := range q.GroupBy {
		if err := checkGroupKey(g); err != nil {
			return nil, err
		}
		if err := c.expr(g, names, nil); err != nil {
			return nil, err
		}
	}
	sel := &q.Select
	switch {
	case sel.Star:
		if q.From == nil {
			return nil, ast.NewError("SC2002", "'SELECT *' is not valid if FROM clause is omitted.")
		}
		if len(q.Joins) > 0 {
			return nil, ast.NewError("SC2003", "'SELECT *' is only valid with a single input set.")
		}
	case sel.Value != nil:
		if err := c.expr(sel.Value, names, cq); err != nil {
			return nil, err
		}
		cq.builds = !isPath(sel.Value)
	default:
		cq.builds = len(sel.Items) != 1 || !isPath(sel.Items[0].Expr)
		n := 0
		seen := map[string]bool{}
		for _, it := range sel.Items {
			if err := c.expr(it.Expr, names, cq); err != nil {
				return nil, err
			}
			name := it.Alias
			if name == "" {
				switch e := it.Expr.(type) {
				case *ast.Member:
					name = e.Name
				case *ast.Ident:
					name = e.Name
				default:
					n++
					name = "$" + strconv.Itoa(n)
				}
			}
			if seen[name] {
				return nil, errAt(it.Expr, "SC2009", "Duplicate alias '%s' in the select list.", name)
			}
			seen[name] = true
			cq.names = append(cq.names, name)
		}
	}
	for _, o := range q.OrderBy {
		if o.Rank {
			if err := c.rank(q, cq, o.Expr, names, top); err != nil {
				return nil, err
			}
			continue
		}
		if err := c.expr(o.Expr, names, nil); err != nil {
			return nil, err
		}
		if _, ok := vector.IsCall(o.Expr); ok && o.Explicit {
			return nil, errAt(o.Expr, "SC2245", "Specifying a sorting order (ASC or DESC) with VectorDistance function is not supported.")
		}
		if _, ok := vector.IsCall(o.Expr); !ok && !c.prog.opts.orderByExpressions && !orderPath(q, o.Expr) {
			return nil, errAt(o.Expr, "SC2206", "Unsupported ORDER BY clause. ORDER BY item expression could not be mapped to a document path.")
		}
	}
	cq.grouped = len(q.GroupBy) > 0 || len(cq.aggs) > 0
	if cq.grouped {
		if sel.Star {
			return nil, ast.NewError("SC2004", "'SELECT *' is not valid with GROUP BY or aggregates.")
		}
		if len(q.OrderBy) > 0 {
			return nil, ast.NewError("SC2103", "ORDER BY is not supported together with GROUP BY or aggregates.")
		}
		exprs := []ast.Expr{sel.Value}
		if sel.Value == nil {
			exprs = exprs[:0]
			for _, it := range sel.Items {
				exprs = append(exprs, it.Expr)
			}
		}
		groupText := map[string]bool{}
		for _, g := range q.GroupBy {
			groupText[ast.ExprString(g)] = true
		}
		for _, e := range exprs {
			// The check prints every subexpression, quadratic in the size of
			// e; huge generated expressions skip it and are evaluated
			// against the first row of each group.
			if nodeCount(e) > 2000 {
				continue
			}
			if err := checkGrouped(e, groupText, cq); err != nil {
				return nil, err
			}
		}
	}
	var err error
	if cq.top, err = c.count(sel.Top, "TOP"); err != nil {
		return nil, err
	}
	if cq.offset, err = c.count(q.Offset, "OFFSET"); err != nil {
		return nil, err
	}
	if cq.limit, err = c.count(q.Limit, "LIMIT"); err != nil {
		return nil, err
	}
	return cq, nil
}

// orderPath reports whether an ORDER BY item is a path the service can
// sort by: properties and array elements read from an alias, as the
// index keeps them. An expression (c.n + 1, LOWER(c.s)), a constant or
// parameter, and the whole document are not.
func orderPath(q *ast.Query, e ast.Expr) bool {
	steps := 0
	for {
		switch x := e.(type) {
		case *ast.Ident:
			if q.From == nil || q.From.Iterate || q.From.Alias != x.Name || steps > 0 {
				return true
			}
			_, root := q.From.Expr.(*ast.Ident)
			return !root
		case *ast.Member:
			e = x.X
		case *ast.Index:
			switch x.Index.(type) {
			case *ast.Literal, *ast.Param:
			default:
				return false
			}
			e = x.X
		default:
			return false
		}
		steps++
	}
}

// checkGrouped refuses select-list expressions that read the row outside
// an aggregate or a GROUP BY expression.
func checkGrouped(e ast.Expr, groups map[string]bool, cq *compiled) error {
	if e == nil || groups[ast.ExprString(e)] {
		return nil
	}
	switch x := e.(type) {
	case *ast.Call:
		if _, ok := cq.aggIndex[x]; ok {
			return nil
		}
	case *ast.Ident, *ast.Member, *ast.Index:
		if _, ok := ast.PathRoot(e); ok {
			return errAt(e, "SC2102", "Property reference '%s' is invalid in the select list because it is not contained in either an aggregate function or the GROUP BY clause.", ast.ExprString(e))
		}
	case *ast.Exists, *ast.ArrayQuery, *ast.Subquery:
		return nil
	}
	var err error
	first := true
	ast.Walk(e, func(sub ast.Expr) bool {
		if first {
			first = false
			return true
		}
		if err == nil {
			err = checkGrouped(sub, groups, cq)
		}
		return false
	})
	return err
}

func (c *compiler) count(e ast.Expr, what string) (int, error) {
	if e == nil {
		return -1, nil
	}
	var v document.Value
	switch x := e.(type) {
	case *ast.Literal:
		v = x.Value
	case *ast.Param:
		pv, ok := c.prog.params[x.Name]
		if !ok {
			return 0, errAt(e, "SC2011", "The parameter '%s' is not defined.", x.Name)
		}
		v = pv
	}
	if v.Kind() != document.Number || v.Float() != float64(int64(v.Float())) || v.Float() < 0 || v.Float() > math.MaxInt32 {
		return 0, errAt(e, "SC2060", "The %s value must be a non-negative integer no greater than 2147483647.", what)
	}
	return int(v.Float()), nil
}

// expr resolves names in e. cq is the query whose aggregates e may hold,
// nil where aggregates are not allowed.
func (c *compiler) expr(e ast.Expr, names []string, cq *compiled) error {
	return c.walk(e, names, cq, false)
}

func (c *compiler) walk(e ast.Expr, names []string, cq *compiled, inAgg bool) error {
	switch x := e.(type) {
	case nil:
		return nil
	case *ast.Ident:
		for _, n := range names {
			if n == x.Name {
				return nil
			}
		}
		return &ast.Error{Code: "SC2001", Pos: x.Pos, End: x.Pos + ast.Pos(len(x.Name)),
			Message: fmt.Sprintf("Identifier '%s' could not be resolved.", x.Name)}
	case *ast.Param:
		if _, ok := c.prog.params[x.Name]; !ok {
			return errAt(e, "SC2011", "The parameter '%s' is not defined.", x.Name)
		}
		return nil
	case *ast.Exists:
		_, err := c.query(x.Query, names, false)
		return err
	case *ast.ArrayQuery:
		_, err := c.query(x.Query, names, false)
		return err
	case *ast.Subquery:
		_, err := c.query(x.Query, names, false)
		return err
	case *ast.Call:
		if !x.UDF {
			lname := strings.ToLower(x.Name)
			if isScoring(lname) {
				return errAt(e, "SC2240", "The scoring function %s can only be used in an ORDER BY RANK clause.", x.Name)
			}
			if _, isAgg := aggregateKinds[lname]; isAgg {
				if cq == nil || inAgg {
					return errAt(e, "SC2101", "Aggregate function '%s' is not allowed in this context.", strings.ToUpper(x.Name))
				}
				if len(x.Args) != 1 {
					return errAt(e, "SC2050", "The %s function requires 1 argument(s).", strings.ToUpper(x.Name))
				}
				cq.aggIndex[x] = len(cq.aggs)
				cq.aggs = append(cq.aggs, x)
				return c.walk(x.Args[0], names, cq, true)
			}
			b, ok := builtins[lname]
			if !ok {
				return &ast.Error{Code: "SC2005", Pos: x.Pos, End: x.Pos + ast.Pos(len(x.Name)),
					Message: fmt.Sprintf("'%s' is not a recognized built-in function name.", x.Name)}
			}
			if len(x.Args) < b.min || (b.max >= 0 && len(x.Args) > b.max) {
				return errAt(e, "SC2050", "The %s function requires %s argument(s).", strings.ToUpper(x.Name), b.arity())
			}
			c.prog.funcs[x] = b
			if lname == "vectordistance" {
				// Its options are checked now, whatever the policy.
				if _, err := vector.FunctionOf(c.cur, x, vector.Policy{}, c.prog.params); err != nil {
					return err
				}
				c.prog.vectors[x] = newVectorCall(c.cur, x, c.prog.params)
			}
		}
		for _, a := range x.Args {
			if err := c.walk(a, names, cq, inAgg); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	first := true
	ast.Walk(e, func(sub ast.Expr) bool {
		if first {
			first = false
			return true
		}
		if err == nil {
			err = c.walk(sub, names, cq, inAgg)
		}
		return false
	})
	return err
}

func nodeCount(e ast.Expr) int {
	n := 0
	ast.Walk(e, func(ast.Expr) bool { n++; return true })
	return n
}

// checkGroupKey refuses a GROUP BY expression the service refuses: "any
// scalar expression is allowed except for scalar subqueries and scalar
// aggregates; each must contain at least one property reference". (The
// aggregates are refused where they are compiled. The service's codes for
// these two refusals are not documented.)
func checkGroupKey(g ast.Expr) error {
	sub, ref := false, false
	ast.Walk(g, func(e ast.Expr) bool {
		switch e.(type) {
		case *ast.Subquery, *ast.Exists, *ast.ArrayQuery:
			sub = true
		case *ast.Ident:
			ref = true
		}
		return true
	})
	switch {
	case sub:
		return ast.NewError("SC2104", "A GROUP BY expression cannot contain a subquery.")
	case !ref:
		return ast.NewError("SC2105", "A GROUP BY expression must contain at least one property reference.")
	}
	return nil
}

// isPath reports whether e reads a part of an input (c, c.a, c["a"][0]),
// which is never larger than a document.
func isPath(e ast.Expr) bool {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			return true
		case *ast.Member:
			e = x.X
		case *ast.Index:
			if _, ok := x.Index.(*ast.Literal); !ok {
				return false
			}
			e = x.X
		default:
			return false
		}
	}
}
