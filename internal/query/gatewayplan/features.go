package gatewayplan

import (
	"strings"

	"github.com/mayfly-db/mayfly/internal/query/ast"
)

// Features is what a client announces it can do with a query plan
// (x-ms-cosmos-supported-query-features: a comma-separated list such as
// "Aggregate,CompositeAggregate,Distinct,MultipleOrderBy,OffsetAndLimit,
// OrderBy,Top"). Nil means every feature: a plan the engine describes for
// itself, or a request that announced nothing.
type Features map[string]bool

// ParseFeatures reads the header's value; "" gives nil.
func ParseFeatures(header string) Features {
	if strings.TrimSpace(header) == "" {
		return nil
	}
	f := Features{}
	for _, name := range strings.Split(header, ",") {
		if name = strings.TrimSpace(name); name != "" {
			f[strings.ToLower(name)] = true
		}
	}
	return f
}

// OfQuery reads the features announced with a query itself (not a plan
// request), for the plan its 400/1004 refusal carries. A query that
// announces none comes from a client that learns its plans only from that
// refusal: the DocumentDB-era SDKs (the documentdb package and
// @azure/cosmos 2.x for JavaScript, and their kin), which merge MIN and
// MAX as the bare values of each range. Such a client is refused nothing
// it did not announce, as the service refuses it nothing; it is only
// given the partial results it reads.
func OfQuery(header string) Features {
	if f := ParseFeatures(header); f != nil {
		return f
	}
	return Features{"aggregate": true, "compositeaggregate": true, "distinct": true, "multipleorderby": true,
		"offsetandlimit": true, "orderby": true, "top": true, "groupby": true, "multipleaggregates": true,
		"countif": true, "listandsetaggregate": true, "nonstreamingorderby": true}
}

// Has reports whether the client can do feature.
func (f Features) Has(feature string) bool {
	return f == nil || f[strings.ToLower(feature)]
}

// objectMinMax reports whether a range's MIN or MAX goes to the client as
// {"min": m, "count": n} (or "max"), which tells a range without values
// from one whose extreme is undefined or null. Clients that merge
// aggregates outside SELECT VALUE announce NonValueAggregate and read that
// form (the JavaScript SDK's MinAggregator takes other.min); clients that
// do not, such as the Python SDK, compare the bare values they get.
func (f Features) objectMinMax() bool { return f.Has("NonValueAggregate") }

// ServedWhole reports whether q is served whole by the engine rather than
// split by range and merged by the client: ORDER BY RANK, whose scores need
// the statistics of every document, and a SELECT VALUE whose expression
// holds aggregates but is not one aggregate (SELECT VALUE {"n": COUNT(1)},
// SELECT VALUE MIN(c.n) + 1), which no client can merge (they merge one
// aggregate per row, or the named aggregates of a select list) and would
// return range by range as partial results. The plan of such a query asks
// the client for nothing; a client then sends it once, and a client that
// splits it by range anyway is refused unless the container has one range.
//
// So is a select list with an item that holds aggregates but is not one
// aggregate (SELECT c.h, {"n": COUNT(1)} AS p … GROUP BY c.h, SELECT
// COUNT(1) + 0 AS x): the client merges a named aggregate only where the
// plan types it, and would keep one range's partial of any other item.
// The SDKs' own per-range rewrite (groupByItems and payload, whose
// payload holds the partials) is answered by its range.
func ServedWhole(q *ast.Query) bool {
	if len(q.OrderBy) > 0 && q.OrderBy[0].Rank {
		return true
	}
	if v := q.Select.Value; v != nil {
		if !hasAggregate(v) {
			return false
		}
		_, one := aggregateOf(v)
		return !one && !isPartialRow(v)
	}
	if items := q.Select.Items; len(items) == 2 && items[0].Alias == "groupByItems" && items[1].Alias == "payload" {
		return false
	}
	for _, it := range q.Select.Items {
		if _, one := aggregateOf(it.Expr); !one && hasAggregate(it.Expr) {
			return true
		}
	}
	return false
}

// isPartialRow reports whether v is [{"item": ...}], the value each range
// returns for a rewritten SELECT VALUE aggregate (DescribeFor): the query
// the SDKs send to each range, which that range answers for itself.
func isPartialRow(v ast.Expr) bool {
	arr, ok := v.(*ast.ArrayLit)
	if !ok || len(arr.Elems) != 1 {
		return false
	}
	obj, ok := arr.Elems[0].(*ast.ObjectLit)
	return ok && len(obj.Fields) == 1 && obj.Fields[0].Name == "item"
}

// Missing returns the first feature q needs that the client did not
// announce, "" when there is none. Only queries that need the client's
// work need features: those served whole (ServedWhole) need none.
func Missing(q *ast.Query, f Features) string {
	if f == nil || ServedWhole(q) {
		return ""
	}
	var need []string
	aggs, kinds := 0, map[string]bool{}
	for _, e := range selectExprs(q) {
		ast.Walk(e, func(x ast.Expr) bool {
			if name, ok := aggregateOf(x); ok {
				aggs++
				kinds[name] = true
				return false
			}
			return true
		})
	}
	switch {
	case len(q.GroupBy) > 0:
		need = append(need, "GroupBy")
	case aggs > 0 && q.Select.Value == nil:
		need = append(need, "NonValueAggregate")
	case aggs > 0:
		need = append(need, "Aggregate")
	}
	if aggs > 1 {
		need = append(need, "MultipleAggregates")
	}
	if kinds["CountIf"] {
		need = append(need, "CountIf")
	}
	if kinds["MakeList"] || kinds["MakeSet"] {
		need = append(need, "ListAndSetAggregate")
	}
	if q.Select.Distinct {
		need = append(need, "Distinct")
	}
	switch {
	case len(q.OrderBy) > 1:
		need = append(need, "MultipleOrderBy")
	case len(q.OrderBy) == 1:
		need = append(need, "OrderBy")
	}
	if q.Select.Top != nil {
		need = append(need, "Top")
	}
	if q.Offset != nil {
		need = append(need, "OffsetAndLimit")
	}
	for _, n := range need {
		if !f.Has(n) {
			return n
		}
	}
	return ""
}
