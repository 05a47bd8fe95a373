package engine

import (
	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/plan"
)

// checkIndexNeeds refuses, as the service does, a query that needs a range
// index the container's policy does not keep: ORDER BY on a path that is
// not indexed, and a range filter on one unless the client allowed a scan.
func checkIndexNeeds(c *containerRecord, q *ast.Query, params map[string]document.Value, allowScan bool) *Error {
	for _, o := range q.OrderBy {
		if path, ok := plan.DocPath(q, o.Expr); ok && !c.index.indexes(path) && !systemPath(path) {
			return errorf(BadRequest, "Order-by item requires a range index to be defined on the corresponding index path.")
		}
	}
	if allowScan {
		return nil
	}
	for _, p := range plan.Predicates(q, params) {
		switch p.Op {
		case plan.Lt, plan.Le, plan.Gt, plan.Ge:
			if !c.index.indexes(p.Path) && !systemPath(p.Path) {
				return errorf(BadRequest, "An invalid query has been specified with filters against path(s) excluded from indexing. Consider adding allow scan header in the request.")
			}
		}
	}
	return nil
}
