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
		if path, ok := orderPath(q, o.Expr); ok && !c.index.indexes(path) {
			return errorf(BadRequest, "Order-by item requires a range index to be defined on the corresponding index path.")
		}
	}
	if allowScan {
		return nil
	}
	for _, p := range plan.Predicates(q, params) {
		switch p.Op {
		case plan.Lt, plan.Le, plan.Gt, plan.Ge:
			if !c.index.indexes(p.Path) {
				return errorf(BadRequest, "An invalid query has been specified with filters against path(s) excluded from indexing. Consider adding allow scan header in the request.")
			}
		}
	}
	return nil
}

// orderPath is the document path an ORDER BY key names (c.a.b, c["a"]),
// or false for any other expression.
func orderPath(q *ast.Query, e ast.Expr) ([]string, bool) {
	if q.From == nil || q.From.Iterate {
		return nil, false
	}
	var rev []string
	for {
		switch x := e.(type) {
		case *ast.Member:
			rev = append(rev, x.Name)
			e = x.X
		case *ast.Ident:
			if x.Name != q.From.Alias || len(rev) == 0 {
				return nil, false
			}
			path := make([]string, len(rev))
			for i := range rev {
				path[i] = rev[len(rev)-1-i]
			}
			return path, true
		default:
			return nil, false
		}
	}
}
