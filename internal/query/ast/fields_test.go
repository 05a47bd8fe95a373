package ast_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/parser"
)

func TestRootFields(t *testing.T) {
	for _, tc := range []struct {
		query, want string // want: the names, sorted, or "all"
	}{
		{"SELECT * FROM c WHERE c.n > 10", "n"},
		{"SELECT c.id, c.a.b FROM c WHERE c['x'] = 1 ORDER BY c.o", "a id o x"},
		{"SELECT VALUE c FROM c", "all"},
		{"SELECT * FROM c WHERE IS_DEFINED(c)", "all"},
		{"SELECT * FROM c WHERE c[@p] = 1", "all"},
		{"SELECT VALUE t FROM c JOIN t IN c.tags WHERE t.k = 1", "tags"},
		{"SELECT * FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = c.want)", "tags want"},
		{"SELECT * FROM c WHERE EXISTS(SELECT VALUE c FROM c IN c.tags)", "all"},
		{"SELECT r.id FROM root r WHERE r.n = 1", "id n"},
		{"SELECT * FROM c IN c.items", "all"},
		{"SELECT c.k, COUNT(1) AS n FROM c GROUP BY c.k", "k"},
		{"SELECT VALUE udf.f(c.a) FROM c", "a"},
		{"SELECT * FROM c ORDER BY RANK FullTextScore(c.text, 'x')", "text"},
	} {
		q, err := parser.Parse(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		names, all := ast.RootFields(q)
		got := "all"
		if !all {
			var ns []string
			for n := range names {
				ns = append(ns, n)
			}
			slices.Sort(ns)
			got = strings.Join(ns, " ")
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.query, got, tc.want)
		}
	}
}
