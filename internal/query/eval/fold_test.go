package eval_test

import (
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/parser"
)

// TestFoldedFilters: the parts of a WHERE clause that read no document are
// compiled as their values, with the program's parameters and "now", so
// that the planner sees a path and a constant; what reads a document, RAND,
// a user-defined function, a subquery, and what has no scalar value stay
// as written. The select list is left alone.
func TestFoldedFilters(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	params := map[string]document.Value{
		"@p":    document.Str("AbC"),
		"@none": document.NullValue(),
		"@o":    document.Obj([]document.Field{{Name: "min", Value: document.Int(3)}}),
	}
	opts := eval.Options{Now: now, UDF: func(string, []document.Value) (document.Value, error) { return document.Int(1), nil }}
	for _, tc := range []struct{ query, where string }{
		{"SELECT * FROM c WHERE c.n = 5 + 1", "(c.n = 6)"},
		{"SELECT * FROM c WHERE c.n > ABS(-5) AND c.s = LOWER(@p)", `((c.n > 5) AND (c.s = "abc"))`},
		{"SELECT * FROM c WHERE c.n IN (1 + 1, 3, @o.min * 2)", "(c.n IN (2, 3, 6))"},
		{"SELECT * FROM c WHERE c.d > DateTimeAdd('hh', -1, GetCurrentDateTime())", `(c.d > "2026-01-02T02:04:05.0000000Z")`},
		{"SELECT * FROM c WHERE c._ts > GetCurrentTimestamp() / 1000 - 60", "(c._ts > 1767322985)"},
		{"SELECT * FROM c WHERE STARTSWITH(c.s, CONCAT(LOWER(@p), '-'))", `STARTSWITH(c.s, "abc-")`},
		{"SELECT * FROM c WHERE c.s LIKE CONCAT(@p, '%')", `(c.s LIKE "AbC%")`},
		{"SELECT * FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 2 * 2)", "EXISTS(SELECT VALUE t FROM t IN c.tags WHERE (t = 4))"},
		{"SELECT * FROM c WHERE c.a = [1 + 1, 'x']", `(c.a = [2, "x"])`},
		{"SELECT * FROM c WHERE c.n = 1 / 0", "(c.n = undefined)"},
		// Optional filters: the ANDs and ORs of literals simplified.
		{"SELECT * FROM c WHERE 1 = 1", ""},
		{"SELECT * FROM c WHERE (@none = null OR c.s = @none) AND c.n > 2", "(c.n > 2)"},
		{"SELECT * FROM c WHERE (@p = null OR c.s = @p) AND (IS_NULL(@none) OR c.t = @none)", "(c.s = @p)"},
		{"SELECT * FROM c WHERE (LENGTH(@p) = 0 OR STARTSWITH(c.s, @p)) AND (c.n > 2 OR true = false)", "(STARTSWITH(c.s, @p) AND (c.n > 2))"},
		{"SELECT * FROM c WHERE c.n > 2 AND 'x'", "false"},
		{"SELECT * FROM c WHERE c.n > 2 OR 'x' OR 2 > 1", ""},
		{"SELECT * FROM c WHERE NOT (true AND c.b)", "(NOT (true AND c.b))"},
		{"SELECT * FROM c WHERE c.x = (true AND c.b)", "(c.x = (true AND c.b))"},
		{"SELECT * FROM c WHERE c.n = @o.min", "(c.n = 3)"},
		// Left as written.
		{"SELECT * FROM c WHERE c.n = -5", "(c.n = (-5))"},
		{"SELECT * FROM c WHERE c.n = c.m + 1", "(c.n = (c.m + 1))"},
		{"SELECT * FROM c WHERE c.n < RAND()", "(c.n < RAND())"},
		{"SELECT * FROM c WHERE c.n = udf.f(1)", "(c.n = udf.f(1))"},
		{"SELECT * FROM c WHERE c.n = (SELECT VALUE 1 + 1)", "(c.n = (SELECT VALUE (1 + 1)))"},
		{"SELECT * FROM c WHERE c.o = {a: 1 + 1}", `(c.o = {"a": 2})`},
	} {
		q, err := parser.Parse(tc.query)
		if err != nil {
			t.Fatalf("parse %q: %v", tc.query, err)
		}
		p, err := eval.Compile(q, params, opts)
		if err != nil {
			t.Fatalf("compile %q: %v", tc.query, err)
		}
		got := ""
		if w := p.Query().Where; w != nil {
			got = ast.ExprString(w)
		}
		if got != tc.where {
			t.Errorf("%s: WHERE %s, want %s", tc.query, got, tc.where)
		}
	}
	// A query with nothing to fold is compiled as parsed, not copied.
	plain, _ := parser.Parse("SELECT * FROM c WHERE c.n = -5 AND c.s IN ('a', @p) AND EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = [1, 2])")
	if p, err := eval.Compile(plain, params, opts); err != nil || p.Query() != plain {
		t.Errorf("a query with nothing to fold: %v, copied %v", err, p != nil && p.Query() != plain)
	}
	// The select list stays as written.
	q, _ := parser.Parse("SELECT 1 + 1 AS x FROM c WHERE c.n = 2 + 2")
	p, err := eval.Compile(q, nil, eval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ast.ExprString(p.Query().Select.Items[0].Expr); got != "(1 + 1)" {
		t.Errorf("select list %s, want (1 + 1)", got)
	}
}
