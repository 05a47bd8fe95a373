package parser_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/parser"
)

// crashSize is about the size at which a chain used to overflow the
// goroutine stack of whatever walked the tree (a fatal error no recover
// catches), below the 512 KB text limit.
const crashSize = 300 << 10

// repeat returns prefix + n copies of part + suffix, with n chosen to make
// the text about size bytes long.
func repeat(prefix, part, suffix string, size int) string {
	return prefix + strings.Repeat(part, (size-len(prefix)-len(suffix))/len(part)) + suffix
}

// height returns the height of e, counting subqueries as one level above
// their deepest expression, walking with an explicit stack.
func height(q *ast.Query) int {
	type item struct {
		e ast.Expr
		q *ast.Query
		d int
	}
	stack := []item{{q: q, d: 1}}
	deepest := 0
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		deepest = max(deepest, it.d)
		push := func(e ast.Expr) {
			if e != nil {
				stack = append(stack, item{e: e, d: it.d + 1})
			}
		}
		if it.q != nil {
			q := it.q
			push(q.Select.Value)
			for _, s := range q.Select.Items {
				push(s.Expr)
			}
			if q.From != nil {
				push(q.From.Expr)
			}
			for _, j := range q.Joins {
				push(j.Expr)
			}
			push(q.Where)
			for _, g := range q.GroupBy {
				push(g)
			}
			for _, o := range q.OrderBy {
				push(o.Expr)
			}
			continue
		}
		switch e := it.e.(type) {
		case *ast.Member:
			push(e.X)
		case *ast.Index:
			push(e.X)
			push(e.Index)
		case *ast.Unary:
			push(e.X)
		case *ast.Binary:
			push(e.L)
			push(e.R)
		case *ast.Ternary:
			push(e.Cond)
			push(e.Then)
			push(e.Else)
		case *ast.Between:
			push(e.X)
			push(e.Lo)
			push(e.Hi)
		case *ast.In:
			push(e.X)
			for _, x := range e.List {
				push(x)
			}
		case *ast.Like:
			push(e.X)
			push(e.Pattern)
			push(e.Escape)
		case *ast.Call:
			for _, x := range e.Args {
				push(x)
			}
		case *ast.ArrayLit:
			for _, x := range e.Elems {
				push(x)
			}
		case *ast.ObjectLit:
			for _, f := range e.Fields {
				push(f.Value)
			}
		case *ast.Exists:
			stack = append(stack, item{q: e.Query, d: it.d + 1})
		case *ast.ArrayQuery:
			stack = append(stack, item{q: e.Query, d: it.d + 1})
		case *ast.Subquery:
			stack = append(stack, item{q: e.Query, d: it.d + 1})
		}
	}
	return deepest
}

// TestChainsTooDeep: a chain of operators or accessors builds a tree as
// deep as the chain is long, however flat the text looks. Past the limit
// the parse ends in a clear error, at every size up to the text limit.
func TestChainsTooDeep(t *testing.T) {
	cases := []struct{ name, text string }{
		{"add", repeat("SELECT * FROM c WHERE 1", "+1", " = 2", crashSize)},
		{"add, no FROM", repeat("SELECT 1", "+1", "", crashSize)},
		{"concat", repeat("SELECT VALUE 'a'", " || 'a'", "", crashSize)},
		{"bitwise", repeat("SELECT VALUE 1", "|1", "", crashSize)},
		{"compare", repeat("SELECT VALUE 1", "=1", "", crashSize)},
		{"members", repeat("SELECT * FROM c WHERE c", ".a", " = 1", crashSize)},
		{"quoted members", repeat("SELECT * FROM c WHERE c", `["a"]`, " = 1", crashSize)},
		{"indexes", repeat("SELECT * FROM c WHERE c", "[0]", " = 1", crashSize)},
		{"from members", repeat("SELECT * FROM c", ".a", "", crashSize)},
		{"join indexes", repeat("SELECT * FROM c JOIN x IN c", "[0]", "", crashSize)},
		{"in", repeat("SELECT * FROM c WHERE c.a", " IN (1)", "", crashSize)},
		{"between", repeat("SELECT * FROM c WHERE c.a", " BETWEEN 1 AND 2", "", crashSize)},
		{"like", repeat("SELECT * FROM c WHERE c.a", " LIKE 'a'", "", crashSize)},
		{"select list", repeat("SELECT 1", "+1", ", 2 FROM c", crashSize)},
		{"order by", repeat("SELECT * FROM c ORDER BY c", ".a", "", crashSize)},
		{"function argument", repeat("SELECT VALUE ABS(1", "+1", ")", crashSize)},
		{"array literal", repeat("SELECT VALUE [1", "+1", "]", crashSize)},
		{"subquery", repeat("SELECT VALUE (SELECT VALUE 1", "+1", ")", crashSize)},
		{"just past the limit", repeat("SELECT VALUE 1", "+1", "", 2*parser.MaxDepth+20)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := parser.Parse(tc.text)
			var qe *ast.Error
			if !errors.As(err, &qe) {
				t.Fatalf("parsed %d bytes to a tree %d levels deep; want the depth error (err %v)", len(tc.text), height(q), err)
			}
			if !strings.Contains(qe.Message, "nested too deeply") {
				t.Fatalf("error %q; want the depth error", qe.Message)
			}
		})
	}
}

// TestChainsWithinLimit: what the limit allows parses, and chains of the
// associative AND, OR and ?? stay shallow at any length, so generated
// filters such as c.id = 'a' OR c.id = 'b' OR … keep working.
func TestChainsWithinLimit(t *testing.T) {
	cases := []struct {
		name      string
		text      string
		maxHeight int
	}{
		{"add at the limit", repeat("SELECT VALUE 1", "+1", "", 2*parser.MaxDepth-20), parser.MaxDepth},
		{"members at the limit", repeat("SELECT * FROM c WHERE c", ".a", "", 2*parser.MaxDepth), parser.MaxDepth},
		{"or", repeat("SELECT * FROM c WHERE c.id = 'x'", " OR c.id = 'x'", "", crashSize), 30},
		{"and", repeat("SELECT * FROM c WHERE c.a = 1", " AND c.a = 1", "", crashSize), 30},
		{"coalesce", repeat("SELECT VALUE c.a", " ?? c.a", " FROM c", crashSize), 30},
		{"or of ands", repeat("SELECT * FROM c WHERE c.a = 1 AND c.b = 2", " OR c.a = 1 AND c.b = 2", "", crashSize), 30},
		{"long IN list", repeat("SELECT * FROM c WHERE c.a IN (1", ", 1", ")", crashSize), 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := parser.Parse(tc.text)
			if err != nil {
				t.Fatalf("parse of %d bytes: %v", len(tc.text), err)
			}
			if h := height(q); h > tc.maxHeight {
				t.Fatalf("tree is %d levels deep; want at most %d", h, tc.maxHeight)
			}
		})
	}
}

// TestBalancedChainPrints: a balanced chain prints to text that parses
// back to the same print.
func TestBalancedChainPrints(t *testing.T) {
	text := repeat("SELECT * FROM c WHERE c.a = 0", " OR c.a = 1", "", 4000)
	q, err := parser.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	printed := q.String()
	q2, err := parser.Parse(printed)
	if err != nil {
		t.Fatalf("printed form does not parse: %v", err)
	}
	if again := q2.String(); again != printed {
		t.Fatalf("print is not stable:\n%s\n%s", printed, again)
	}
}

// TestTextTooLong: the service's code and message for text over the limit.
func TestTextTooLong(t *testing.T) {
	_, err := parser.Parse("SELECT VALUE '" + strings.Repeat("a", parser.MaxQueryBytes) + "'")
	var qe *ast.Error
	if !errors.As(err, &qe) || qe.Code != "SC3020" ||
		qe.Message != "The SQL query text exceeded the maximum limit of 524288 characters." {
		t.Fatalf("got %#v", err)
	}
}
