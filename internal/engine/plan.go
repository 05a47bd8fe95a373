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

// PlanForText parses a query and returns its plan, for query-plan requests.
func PlanForText(text string, params map[string]document.Value) ([]byte, error) {
	q, err := parseOnly(text)
	if err != nil {
		return nil, err
	}
	return QueryPlan(q, params)
}
