package plan

import (
	"testing"

	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/parser"
)

// TestWithoutPartitionKeyTerms: the terms that pin a partition key (or a
// prefix of a hierarchical one) leave the WHERE clause, and the rest stay
// in their order.
func TestWithoutPartitionKeyTerms(t *testing.T) {
	paths := [][]string{{"tenant"}, {"user"}}
	tests := []struct {
		where, rest string
		pinned      int
	}{
		{"c.tenant = 'a'", "", 1},
		{"c.tenant = 'a' AND c.user = 'u'", "", 2},
		{"c.n > 1 AND c.tenant = 'a' AND c.s = 'x'", "((c.n > 1) AND (c.s = \"x\"))", 1},
		{"'a' = c.tenant AND c.user IN ('u') AND c.n > 1", "(c.n > 1)", 2},
		{"IS_NULL(c.tenant) AND c.n > 1", "(c.n > 1)", 1},
		{"c.user = 'u' AND c.n > 1", "((c.user = \"u\") AND (c.n > 1))", 0},
		{"c.tenant = 'a' OR c.n > 1", "((c.tenant = \"a\") OR (c.n > 1))", 0},
		{"c.tenant IN ('a', 'b') AND c.n > 1", "((c.tenant IN (\"a\", \"b\")) AND (c.n > 1))", 0},
	}
	for _, tt := range tests {
		q, err := parser.Parse("SELECT * FROM c WHERE " + tt.where)
		if err != nil {
			t.Fatal(err)
		}
		values, terms, _ := PartitionKeyTerms(q, nil, paths)
		if len(values) != tt.pinned || len(terms) != tt.pinned {
			t.Errorf("%s: %d values, %d terms; want %d", tt.where, len(values), len(terms), tt.pinned)
			continue
		}
		rest := WithoutTerms(q, terms)
		got := ""
		if rest.Where != nil {
			got = ast.ExprString(rest.Where)
		}
		if got != tt.rest {
			t.Errorf("%s: left %q, want %q", tt.where, got, tt.rest)
		}
		if q.Where == nil || (tt.pinned > 0 && q.Where == rest.Where) {
			t.Errorf("%s: the query itself changed", tt.where)
		}
	}
}
