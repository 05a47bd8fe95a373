// Package gatewayplan describes a parsed query the way the Cosmos DB
// gateway does for cross-partition clients (docs/protocol.md §6.3-6.5): the query
// plan the SDKs ask for before they fan a query out over partition key
// ranges and merge the results themselves. Package plan, by contrast,
// chooses how the engine reads one range.
//
// Nothing here evaluates documents; package eval does that. The functions
// only read the tree, which they never modify.
package gatewayplan

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/query/vector"
)

// Filter is the placeholder the SDKs replace (with "true" or a
// continuation filter) in an ORDER BY query's rewritten text.
const Filter = "{documentdb-formattableorderbyquery-filter}"

// Info is the queryInfo object of a query plan response.
type Info struct {
	DistinctType                string             `json:"distinctType"`
	Top                         *int               `json:"top"`
	Offset                      *int               `json:"offset"`
	Limit                       *int               `json:"limit"`
	OrderBy                     []string           `json:"orderBy"`
	OrderByExpressions          []string           `json:"orderByExpressions"`
	GroupByExpressions          []string           `json:"groupByExpressions"`
	GroupByAliases              []string           `json:"groupByAliases"`
	Aggregates                  []string           `json:"aggregates"`
	GroupByAliasToAggregateType map[string]*string `json:"groupByAliasToAggregateType"`
	RewrittenQuery              string             `json:"rewrittenQuery"`
	HasSelectValue              bool               `json:"hasSelectValue"`
	HasNonStreamingOrderBy      bool               `json:"hasNonStreamingOrderBy"`
}

// Range is one entry of queryRanges.
type Range struct {
	Min            string `json:"min"`
	Max            string `json:"max"`
	IsMinInclusive bool   `json:"isMinInclusive"`
	IsMaxInclusive bool   `json:"isMaxInclusive"`
}

// FullRange covers every effective partition key.
var FullRange = Range{Min: "", Max: "FF", IsMinInclusive: true}

// Response is the body of a query plan response.
type Response struct {
	Version     int     `json:"partitionedQueryExecutionInfoVersion"`
	QueryInfo   Info    `json:"queryInfo"`
	QueryRanges []Range `json:"queryRanges"`
}

// JSON encodes a plan response for info over the given ranges (the full
// range when none are given).
func JSON(info Info, ranges ...Range) []byte {
	if len(ranges) == 0 {
		ranges = []Range{FullRange}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(Response{Version: 2, QueryInfo: info, QueryRanges: ranges})
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// aggregateNames maps the aggregate functions to their plan names.
var aggregateNames = map[string]string{
	"count": "Count", "sum": "Sum", "avg": "Average", "min": "Min", "max": "Max",
	"countif": "CountIf", "makelist": "MakeList", "makeset": "MakeSet",
}

// aggregateOf returns the plan name of e when e is an aggregate call.
func aggregateOf(e ast.Expr) (string, bool) {
	c, ok := e.(*ast.Call)
	if !ok || c.UDF {
		return "", false
	}
	n, ok := aggregateNames[strings.ToLower(c.Name)]
	return n, ok
}

// IsAggregate reports whether e is a call of an aggregate function.
func IsAggregate(e ast.Expr) bool {
	_, ok := aggregateOf(e)
	return ok
}

// hasAggregate reports whether e holds an aggregate call outside
// subqueries.
func hasAggregate(e ast.Expr) bool {
	found := false
	ast.Walk(e, func(x ast.Expr) bool {
		if _, ok := aggregateOf(x); ok {
			found = true
		}
		return !found
	})
	return found
}

func selectExprs(q *ast.Query) []ast.Expr {
	if q.Select.Value != nil {
		return []ast.Expr{q.Select.Value}
	}
	var out []ast.Expr
	for _, it := range q.Select.Items {
		out = append(out, it.Expr)
	}
	return out
}

// HasAggregates reports whether the select list of q aggregates.
func HasAggregates(q *ast.Query) bool {
	for _, e := range selectExprs(q) {
		if hasAggregate(e) {
			return true
		}
	}
	return false
}

// NeedsGatewayPlan reports whether q uses anything beyond filtering and
// projection (TOP, ORDER BY, OFFSET/LIMIT, aggregates, DISTINCT or GROUP
// BY): such a query cannot be served across partitions by the gateway
// directly (docs/protocol.md §6.3 b).
func NeedsGatewayPlan(q *ast.Query) bool {
	return q.Select.Top != nil || len(q.OrderBy) > 0 || q.Offset != nil || q.Select.Distinct ||
		len(q.GroupBy) > 0 || HasAggregates(q)
}

// count resolves a TOP/OFFSET/LIMIT operand.
func count(e ast.Expr, params map[string]document.Value) *int {
	var v document.Value
	switch x := e.(type) {
	case *ast.Literal:
		v = x.Value
	case *ast.Param:
		v = plan.Param(params, x.Name)
	default:
		return nil
	}
	if v.Kind() != document.Number {
		return nil
	}
	n := int(v.Int())
	return &n
}

// Window returns what Describe says of q's TOP, OFFSET and LIMIT (nil
// where absent, not a count, or in a query served whole), without
// describing the rest: a page asks for them alone.
func Window(q *ast.Query, params map[string]document.Value) (top, offset, limit *int) {
	if ServedWhole(q) {
		return nil, nil, nil
	}
	return window(q, params)
}

// window returns the counts of q's TOP, OFFSET and LIMIT.
func window(q *ast.Query, params map[string]document.Value) (top, offset, limit *int) {
	if q.Select.Top != nil {
		top = count(q.Select.Top, params)
	}
	if q.Offset != nil {
		offset, limit = count(q.Offset, params), count(q.Limit, params)
	}
	return top, offset, limit
}

// Describe returns the queryInfo the gateway would give for q. params
// resolve TOP, OFFSET and LIMIT written as parameters.
func Describe(q *ast.Query, params map[string]document.Value) Info {
	return DescribeFor(q, params, nil, vector.Policy{})
}

// DescribeFor is Describe for a client that announced features f, over a
// container whose embedding policy is vectors; it does not check that the
// features suffice (Missing does).
//
// ORDER BY VectorDistance is a non-streaming ORDER BY: the client merges
// the ranges' rows by their score, most similar first, whichever way the
// distance function orders (vector.Function.Descending), and needs from
// each range no more rows than it returns in all.
func DescribeFor(q *ast.Query, params map[string]document.Value, f Features, vectors vector.Policy) Info {
	info := Info{
		DistinctType:                "None",
		OrderBy:                     []string{},
		OrderByExpressions:          []string{},
		GroupByExpressions:          []string{},
		GroupByAliases:              []string{},
		Aggregates:                  []string{},
		GroupByAliasToAggregateType: map[string]*string{},
		HasSelectValue:              q.Select.Value != nil,
	}
	if ServedWhole(q) {
		// Served whole where it is sent (engine.queryIn): the client has
		// nothing to merge.
		return info
	}
	if q.Select.Distinct {
		info.DistinctType = "Unordered"
		if orderedDistinct(q) {
			info.DistinctType = "Ordered"
		}
	}
	info.Top, info.Offset, info.Limit = window(q, params)
	for _, o := range q.OrderBy {
		dir := "Ascending"
		if o.Desc {
			dir = "Descending"
		}
		if call, ok := vector.IsCall(o.Expr); ok {
			info.HasNonStreamingOrderBy = true
			if fn, err := vector.FunctionOf(q, call, vectors, params); err == nil && fn.Descending() {
				dir = "Descending"
			}
		}
		info.OrderBy = append(info.OrderBy, dir)
		info.OrderByExpressions = append(info.OrderByExpressions, ast.ExprString(o.Expr))
	}
	for _, g := range q.GroupBy {
		info.GroupByExpressions = append(info.GroupByExpressions, ast.ExprString(g))
	}
	aggregates := HasAggregates(q)
	switch {
	case len(q.GroupBy) > 0 || (aggregates && q.Select.Value == nil):
		info.RewrittenQuery = rewriteGroupBy(q, &info, f)
	case aggregates:
		// SELECT VALUE AGG(...): each range returns [{"item": partial}].
		if agg, ok := aggregateOf(q.Select.Value); ok {
			info.Aggregates = append(info.Aggregates, agg)
		}
		info.RewrittenQuery = rewrite(q, func(r *ast.Query) {
			r.Select.Value = &ast.ArrayLit{Elems: []ast.Expr{item(partial(q.Select.Value, f))}}
		})
	case len(q.OrderBy) > 0:
		var most *int
		if info.HasNonStreamingOrderBy && info.Offset != nil && info.Limit != nil {
			n := *info.Offset + *info.Limit
			most = &n
		}
		info.RewrittenQuery = rewriteOrderBy(q, most)
	case q.Offset != nil:
		// The client skips OFFSET rows of the merged ranges itself, so a
		// range must not skip them too: each is asked for the first
		// OFFSET + LIMIT rows, or for all of them under DISTINCT, whose
		// duplicates across ranges the client drops first.
		info.RewrittenQuery = rewrite(q, func(r *ast.Query) {
			if info.Offset != nil && info.Limit != nil && !q.Select.Distinct {
				r.Offset = &ast.Literal{Value: document.Int(0), Text: "0"}
				n := *info.Offset + *info.Limit
				r.Limit = &ast.Literal{Value: document.Int(int64(n)), Text: itoa(n)}
			}
		})
	}
	return info
}

// filterMark stands for the filter placeholder in a rewritten tree; it
// cannot occur in parsed text (identifiers have no dashes and no leading
// '$').
const filterMark = "$filter$"

// rewrite returns the text of a copy of q changed by edit, without
// OFFSET/LIMIT (the client applies them over the merged ranges).
func rewrite(q *ast.Query, edit func(r *ast.Query)) string {
	r := *q
	r.Select = q.Select
	r.Offset, r.Limit = nil, nil
	edit(&r)
	return strings.ReplaceAll(r.String(), filterMark, "("+Filter+")")
}

func item(e ast.Expr) ast.Expr {
	return &ast.ObjectLit{Fields: []ast.ObjectField{{Name: "item", Value: e}}}
}

// partial turns an aggregate into the partial result a range returns: AVG
// becomes {"sum", "count"}, MIN and MAX {"min"} / {"max"} with "count" for
// a client that reads that form (Features.objectMinMax); others stay.
func partial(e ast.Expr, f Features) ast.Expr {
	agg, ok := aggregateOf(e)
	if !ok {
		return e
	}
	arg := e.(*ast.Call).Args
	call := func(name string) ast.Expr { return &ast.Call{Name: name, Args: arg} }
	switch {
	case agg == "Average":
		return &ast.ObjectLit{Fields: []ast.ObjectField{{Name: "sum", Value: call("SUM")}, {Name: "count", Value: call("COUNT")}}}
	case agg == "Min" && f.objectMinMax():
		return &ast.ObjectLit{Fields: []ast.ObjectField{{Name: "min", Value: e}, {Name: "count", Value: call("COUNT")}}}
	case agg == "Max" && f.objectMinMax():
		return &ast.ObjectLit{Fields: []ast.ObjectField{{Name: "max", Value: e}, {Name: "count", Value: call("COUNT")}}}
	}
	return e
}

// rewriteOrderBy builds SELECT alias._rid, [{"item": k}...] AS orderByItems,
// payload AS payload ... WHERE (filter) ORDER BY ..., with OFFSET 0 LIMIT
// most when most is set.
func rewriteOrderBy(q *ast.Query, most *int) string {
	alias := "c"
	if q.From != nil {
		alias = q.From.Alias
	}
	var keys []ast.Expr
	for _, o := range q.OrderBy {
		keys = append(keys, item(o.Expr))
	}
	var payload ast.Expr
	switch {
	case q.Select.Star:
		payload = &ast.Ident{Name: alias}
	case q.Select.Value != nil:
		payload = q.Select.Value
	default:
		obj := &ast.ObjectLit{}
		for i, it := range q.Select.Items {
			obj.Fields = append(obj.Fields, ast.ObjectField{Name: itemName(it, i, q.Select.Items), Value: it.Expr})
		}
		payload = obj
	}
	// Under DISTINCT a range must not stop at TOP: its rows differ by _rid
	// even where their payloads are equal, and the client, which drops the
	// equal payloads, may need rows past the first TOP of a range.
	top := q.Select.Top
	if q.Select.Distinct {
		top = nil
	}
	return rewrite(q, func(r *ast.Query) {
		r.Select = ast.Select{Distinct: q.Select.Distinct, Top: top, Items: []ast.SelectItem{
			{Expr: &ast.Member{X: &ast.Ident{Name: alias}, Name: "_rid"}},
			{Expr: &ast.ArrayLit{Elems: keys}, Alias: "orderByItems"},
			{Expr: payload, Alias: "payload"},
		}}
		r.Where = filterWhere(q.Where)
		if most != nil {
			r.Offset = &ast.Literal{Value: document.Int(0), Text: "0"}
			r.Limit = &ast.Literal{Value: document.Int(int64(*most)), Text: itoa(*most)}
		}
	})
}

// filterWhere combines a WHERE clause with the filter placeholder. The
// placeholder is spliced in as an identifier; printing writes it verbatim.
func filterWhere(w ast.Expr) ast.Expr {
	ph := &ast.Ident{Name: filterMark}
	if w == nil {
		return ph
	}
	return &ast.Binary{Op: ast.OpAnd, L: w, R: ph}
}

// itemName is the property name a select item gets in results.
func itemName(it ast.SelectItem, i int, all []ast.SelectItem) string {
	if it.Alias != "" {
		return it.Alias
	}
	switch e := it.Expr.(type) {
	case *ast.Member:
		return e.Name
	case *ast.Ident:
		return e.Name
	}
	n := 0
	for _, o := range all[:i+1] {
		switch o.Expr.(type) {
		case *ast.Member, *ast.Ident:
			continue
		}
		if o.Alias == "" {
			n++
		}
	}
	return "$" + itoa(n)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// rewriteGroupBy handles GROUP BY, and aggregates in a select list without
// VALUE (a grouping with no keys): each range returns
// {"groupByItems": [{"item": key}...], "payload": {...}}.
func rewriteGroupBy(q *ast.Query, info *Info, f Features) string {
	var keys []ast.Expr
	for _, g := range q.GroupBy {
		keys = append(keys, item(g))
	}
	var payload ast.Expr
	if q.Select.Value != nil {
		payload = q.Select.Value
		if agg, ok := aggregateOf(q.Select.Value); ok {
			// As without GROUP BY: [{"item": partial}], which the
			// SDKs read as payload[0].item.
			info.Aggregates = append(info.Aggregates, agg)
			payload = &ast.ArrayLit{Elems: []ast.Expr{item(partial(q.Select.Value, f))}}
		}
	} else {
		obj := &ast.ObjectLit{}
		for i, it := range q.Select.Items {
			name := itemName(it, i, q.Select.Items)
			info.GroupByAliases = append(info.GroupByAliases, name)
			v := it.Expr
			if agg, ok := aggregateOf(it.Expr); ok {
				a := agg
				info.GroupByAliasToAggregateType[name] = &a
				v = item(partial(it.Expr, f))
			} else {
				info.GroupByAliasToAggregateType[name] = nil
			}
			obj.Fields = append(obj.Fields, ast.ObjectField{Name: name, Value: v})
		}
		payload = obj
	}
	return rewrite(q, func(r *ast.Query) {
		r.Select = ast.Select{Items: []ast.SelectItem{
			{Expr: &ast.ArrayLit{Elems: keys}, Alias: "groupByItems"},
			{Expr: payload, Alias: "payload"},
		}}
	})
}

// PartialGroups reports whether q has the shape rewriteGroupBy gives a
// GROUP BY for each range: rows {"groupByItems": [...], "payload": ...}
// of partial aggregates, which the client merges by their groupByItems
// across ranges and pages once the last page is in. The rows of any part
// of a range's documents are then an answer to merge, as the service's
// pages of such a query are.
func PartialGroups(q *ast.Query) bool {
	s := q.Select
	if len(q.GroupBy) == 0 || s.Distinct || s.Top != nil || s.Star || s.Value != nil || len(s.Items) != 2 ||
		len(q.OrderBy) > 0 || q.Offset != nil || q.Limit != nil {
		return false
	}
	keys, ok := s.Items[0].Expr.(*ast.ArrayLit)
	if !ok || s.Items[0].Alias != "groupByItems" || s.Items[1].Alias != "payload" || len(keys.Elems) != len(q.GroupBy) {
		return false
	}
	// Each key as item() writes it: {"item": the GROUP BY expression}.
	for i, e := range keys.Elems {
		o, ok := e.(*ast.ObjectLit)
		if !ok || len(o.Fields) != 1 || o.Fields[0].Name != "item" || ast.ExprString(o.Fields[0].Value) != ast.ExprString(q.GroupBy[i]) {
			return false
		}
	}
	return true
}

// orderedDistinct reports whether the client may drop DISTINCT's repeats by
// comparing each row with the one before: only when the ORDER BY items are
// the projected expressions, no more and no fewer, so that equal rows sort
// next to each other. Otherwise rows with one ORDER BY key may interleave
// (SELECT DISTINCT VALUE c.s … ORDER BY c.n), and the client must remember
// every row it has passed on ("Unordered"), as the service says then.
func orderedDistinct(q *ast.Query) bool {
	if len(q.OrderBy) == 0 || q.Select.Star {
		return false
	}
	projected := map[string]bool{}
	if q.Select.Value != nil {
		projected[ast.ExprString(q.Select.Value)] = true
	}
	for _, it := range q.Select.Items {
		projected[ast.ExprString(it.Expr)] = true
	}
	ordered := map[string]bool{}
	for _, o := range q.OrderBy {
		ordered[ast.ExprString(o.Expr)] = true
	}
	if len(ordered) != len(projected) {
		return false
	}
	for e := range ordered {
		if !projected[e] {
			return false
		}
	}
	return true
}
