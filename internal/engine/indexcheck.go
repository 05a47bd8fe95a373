package engine

import (
	"slices"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/plan"
)

// checkIndexNeeds refuses, as the service does, a query that needs an
// index the container's policy does not keep: ORDER BY on several paths
// that no composite index follows, ORDER BY on one path that is not
// indexed, and a range filter on one unless the client allowed a scan.
func checkIndexNeeds(c *containerRecord, q *ast.Query, params map[string]document.Value, allowScan bool) *Error {
	byPaths := len(q.OrderBy) > 1 && orderKeys(q) != nil
	if byPaths && !c.index.servesOrder(orderKeys(q)) {
		return errorf(BadRequest, "The order by query does not have a corresponding composite index that it can be served from.")
	}
	for _, o := range q.OrderBy {
		if byPaths {
			break // the composite index serves it
		}
		if path, ok := plan.DocPath(q, o.Expr); ok && !c.index.indexes(path) && !alwaysIndexed(path) {
			return errorf(BadRequest, "Order-by item requires a range index to be defined on the corresponding index path.")
		}
	}
	if allowScan {
		return nil
	}
	for _, p := range plan.Predicates(q, params) {
		switch p.Op {
		case plan.Lt, plan.Le, plan.Gt, plan.Ge:
			if !c.index.indexes(p.Path) && !alwaysIndexed(p.Path) {
				return errorf(BadRequest, "An invalid query has been specified with filters against path(s) excluded from indexing. Consider adding allow scan header in the request.")
			}
		}
	}
	return nil
}

// alwaysIndexed reports whether the service indexes path whatever the
// policy: the system properties, and id ("the id and _ts are always
// indexed"). Mayfly answers queries on them by other means where its
// index lacks them (a scan), and refuses none for want of an index.
func alwaysIndexed(path []string) bool {
	return systemPath(path) || len(path) == 1 && path[0] == "id"
}

// servesOrder reports whether a composite index of the policy follows the
// ORDER BY keys: its leading paths are theirs, in their directions or all
// reversed. (Sorting is done in memory when no walk applies, so this only
// decides whether the query is accepted, as the service decides.)
func (pol indexPolicy) servesOrder(keys []plan.OrderKey) bool {
	for _, comp := range pol.composites {
		if len(comp.paths) < len(keys) {
			continue
		}
		same, opposite := true, true
		for i, k := range keys {
			if !slices.Equal(k.Path, comp.paths[i]) {
				same, opposite = false, false
				break
			}
			same = same && k.Desc == comp.desc[i]
			opposite = opposite && k.Desc != comp.desc[i]
		}
		if same || opposite {
			return true
		}
	}
	return false
}
