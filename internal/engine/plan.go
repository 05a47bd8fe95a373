package engine

import (
	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
)

// QueryPlan is the plan the SDKs ask for before running a cross-partition
// query (protocol §6.5): what the client must do itself (merge ORDER BY,
// combine aggregates, apply TOP, DISTINCT, OFFSET/LIMIT), the rewritten
// query to send to each range, and the ranges to ask.
func QueryPlan(q *ast.Query, params map[string]document.Value) ([]byte, error) {
	return gatewayplan.JSON(gatewayplan.Describe(q, params)), nil
}

// PlanForText parses a query and returns its plan, for query-plan requests
// from a client that announced features (the value of
// x-ms-cosmos-supported-query-features). A query that needs a feature the
// client did not announce is refused, as the service refuses it.
func PlanForText(text string, params map[string]document.Value, features string) ([]byte, error) {
	q, err := parseOnly(text)
	if err != nil {
		return nil, err
	}
	f := gatewayplan.ParseFeatures(features)
	if missing := gatewayplan.Missing(q, f); missing != "" {
		return nil, errorf(BadRequest, "Query contains 1 or more unsupported features. Upgrade your SDK to a version that does support the requested features:\r\nQuery contained %s, which the calling client does not support.", missing)
	}
	return gatewayplan.JSON(gatewayplan.DescribeFor(q, params, f)), nil
}
