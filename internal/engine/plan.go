package engine

import (
	"context"
	"slices"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"github.com/mayfly-db/mayfly/internal/query/vector"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// PlanFor parses a query over the items of container db/coll and returns
// its plan, for query-plan requests from a client that announced features
// (the value of x-ms-cosmos-supported-query-features). A query that needs
// a feature the client did not announce is refused, as the service refuses
// it. The container is read only for a query ordered by VectorDistance,
// whose order follows the container's embedding policy.
func (e *Engine) PlanFor(ctx context.Context, db, coll, text string, params map[string]document.Value, features string) ([]byte, error) {
	q, err := parseOnly(text)
	if err != nil {
		return nil, err
	}
	// The query is refused here as its run would refuse it (GROUP BY
	// with ORDER BY, an unknown alias…), as the service's plan does.
	if _, err := eval.Compile(q, params, eval.Options{UDF: planUDF}); err != nil {
		return nil, queryError(err)
	}
	f := gatewayplan.ParseFeatures(features)
	if missing := gatewayplan.Missing(q, f); missing != "" {
		return nil, errorf(BadRequest, "Query contains 1 or more unsupported features. Upgrade your SDK to a version that does support the requested features:\r\nQuery contained %s, which the calling client does not support.", missing)
	}
	var vectors vector.Policy
	if slices.ContainsFunc(q.OrderBy, func(o ast.OrderItem) bool { _, ok := vector.IsCall(o.Expr); return ok }) {
		err := e.store.View(ctx, func(r storage.Reader) error {
			c, err := e.loadContainer(r, db, coll)
			if err == nil {
				vectors = c.vectors
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return gatewayplan.JSON(gatewayplan.DescribeFor(q, params, f, vectors)), nil
}

// planUDF stands in for the container's functions while a plan compiles a
// query: the plan never calls them, and whether one exists is the run's
// to say.
func planUDF(string, []document.Value) (document.Value, error) { return document.Undef, nil }
