package engine

import (
	"github.com/mayfly-db/mayfly/internal/query/ast"
)

// QueryPlan is the plan the SDKs ask for before running a cross-partition
// query (protocol §6.5). While every container has a single partition key
// range, the plan declares no features and the whole range: the SDK then
// sends the original query scoped to range "0", where the engine runs
// ORDER BY, aggregates and the rest itself.
func QueryPlan(q *ast.Query) ([]byte, error) {
	_ = q
	return []byte(`{"partitionedQueryExecutionInfoVersion":2,"queryInfo":{"distinctType":"None","top":null,"offset":null,"limit":null,"orderBy":[],"orderByExpressions":[],"groupByExpressions":[],"groupByAliases":[],"aggregates":[],"groupByAliasToAggregateType":{},"rewrittenQuery":"","hasSelectValue":false,"hasNonStreamingOrderBy":false},"queryRanges":[{"min":"","max":"FF","isMinInclusive":true,"isMaxInclusive":false}]}`), nil
}

// PlanForText parses a query and returns its plan, for query-plan requests.
func PlanForText(text string) ([]byte, error) {
	q, err := parseOnly(text)
	if err != nil {
		return nil, err
	}
	return QueryPlan(q)
}
