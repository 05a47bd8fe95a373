package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
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

// TestUnionTerms: an OR of terms on several paths gives one term an
// operand; an OR on one path is an IN, and an operand of no term leaves
// the OR out.
func TestUnionTerms(t *testing.T) {
	tests := []struct {
		where string
		want  []string // the terms' labels
	}{
		{"c.a = 1 OR c.b = 'x'", []string{`/a = 1`, `/b = "x"`}},
		{"c.a = 1 OR c.b > 2 OR STARTSWITH(c.s, 'p')", []string{`/a = 1`, `/b > 2`, `/s STARTSWITH "p"`}},
		{"c.n > 0 AND (c.a = 1 OR c.b = 2)", []string{`/a = 1`, `/b = 2`}},
		{"(c.a > 1 AND c.k = 3) OR c.b = 2", []string{`/k = 3`, `/b = 2`}},
		{"c.a = 1 OR c.a = 2", nil},
		{"c.a = 1 OR c.b != 2", []string{`/a = 1`, `/b != 2`}},
		{"c.a = 1 OR c.b != null", nil},
		{"c.a = 1 OR NOT IS_DEFINED(c.b)", nil},
		{"NOT (c.a = 1 OR c.b = 2)", nil},
		{"c.a = 1 AND c.b = 2", nil},
		// The SDKs' ReadMany: the ids stand for their operands, not the
		// partition keys.
		{"(c.pk = 'a' AND c.id IN ('x', 'y')) OR (c.pk = 'b' AND c.id = 'z')", []string{`/id IN (2 values)`, `/id = "z"`}},
		{"(c.pk = 'a' AND c.id > 'x') OR (c.pk = 'b' AND c.id = 'z')", []string{`/pk = "a"`, `/id = "z"`}},
	}
	for _, tt := range tests {
		q, err := parser.Parse("SELECT * FROM c WHERE " + tt.where)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, term := range UnionTerms(q, nil) {
			got = append(got, term.Label)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.where, got, tt.want)
		}
	}
}

// TestLikePrefix: a LIKE gives the STARTSWITH of its pattern's literal
// characters before the first wildcard, exact only for that prefix and %
// without ESCAPE.
func TestLikePrefix(t *testing.T) {
	tests := []struct {
		where, prefix string // "": no predicate
		exact         bool
	}{
		{"c.s LIKE 'ab%'", "ab", true},
		{"c.s LIKE 'ab%%'", "ab", true},
		{"c.s LIKE 'ab'", "ab", false},
		{"c.s LIKE 'ab%c'", "ab", false},
		{"c.s LIKE 'a_b%'", "a", false},
		{"c.s LIKE 'a[bc]%'", "a", false},
		{"c.s LIKE 'a[%'", "a[", true},
		{"c.s LIKE 'a!%b%' ESCAPE '!'", "a%b", false},
		{"c.s LIKE 'a!!%' ESCAPE '!'", "a!", false},
		{"c.s LIKE 'ab%' ESCAPE '!'", "ab", false},
		{"c.s LIKE 'ab!' ESCAPE '!'", "ab!", false},
		{"c.s LIKE '%ab'", "", false},
		{"c.s NOT LIKE 'ab%'", "", false},
		{"c.s LIKE 'ab%' ESCAPE '!!'", "", false},
		{"c.s LIKE c.t", "", false},
		{"c.s LIKE 5", "", false},
	}
	for _, tt := range tests {
		q, err := parser.Parse("SELECT * FROM c WHERE " + tt.where)
		if err != nil {
			t.Fatal(err)
		}
		preds := Predicates(q, nil)
		switch {
		case tt.prefix == "" && len(preds) != 0:
			t.Errorf("%s: %v, want none", tt.where, preds)
		case tt.prefix != "" && (len(preds) != 1 || preds[0].Op != Prefix || preds[0].Value.Str() != tt.prefix || !slices.Equal(preds[0].Path, []string{"s"})):
			t.Errorf("%s: %v, want STARTSWITH(c.s, %q)", tt.where, preds, tt.prefix)
		}
		if got := Exact(q, nil); got != tt.exact {
			t.Errorf("%s: Exact = %v, want %v", tt.where, got, tt.exact)
		}
	}
}

// TestPartialContains: ARRAY_CONTAINS with partial matching gives an
// equality on the elements' entries for a scalar, exact, and one for each
// scalar property of an object, not exact.
func TestPartialContains(t *testing.T) {
	tests := []struct {
		where string
		preds []string // path=value
		exact bool
	}{
		{`ARRAY_CONTAINS(c.tags, "a", true)`, []string{`tags/[]="a"`}, true},
		{`ARRAY_CONTAINS(c.tags, {"name": "a"}, true)`, []string{`tags/[]/name="a"`}, false},
		{`ARRAY_CONTAINS(c.tags, {"name": "a", "n": 2, "o": {"x": 1}}, true)`, []string{`tags/[]/name="a"`, `tags/[]/n=2`}, false},
		{`ARRAY_CONTAINS(c.tags, {"o": {"x": 1}}, true)`, nil, false},
		{`ARRAY_CONTAINS(c.tags, {"name": "a"}, false)`, nil, false},
		{`ARRAY_CONTAINS(["a", "b"], c.s, true)`, nil, false},
	}
	for _, tt := range tests {
		q, err := parser.Parse("SELECT * FROM c WHERE " + tt.where)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range Predicates(q, nil) {
			if p.Op != Eq {
				t.Errorf("%s: %v", tt.where, p)
			}
			got = append(got, strings.Join(p.Path, "/")+"="+string(p.Value.JSON()))
		}
		if !slices.Equal(got, tt.preds) {
			t.Errorf("%s: %v, want %v", tt.where, got, tt.preds)
		}
		if e := Exact(q, nil); e != tt.exact {
			t.Errorf("%s: Exact = %v, want %v", tt.where, e, tt.exact)
		}
	}
}

// TestValueTerms checks which terms a value scan tests on one path's
// values: those that read that path alone, gathered from the AND chain.
func TestValueTerms(t *testing.T) {
	for _, tt := range []struct {
		where, path, label string // path "": no value filter
	}{
		{`CONTAINS(c.name, "x")`, "name", `CONTAINS(c.name, "x")`},
		{`LOWER(c.a.b) = "oslo" AND c.n > 1 AND ENDSWITH(c.a.b, "o")`, "a/b", `(LOWER(c.a.b) = "oslo") AND ENDSWITH(c.a.b, "o")`},
		{`c.n > 1 AND CONTAINS(c.s, "x") AND c.s != "y"`, "s", `CONTAINS(c.s, "x")`}, // a term a span answers is left to it
		{`c["price"] * 1.2 < @max`, "price", `((c["price"] * 1.2) < @max)`},
		{`(c.n = 1 OR ToString(c.n) = "2")`, "n", `((c.n = 1) OR (ToString(c.n) = "2"))`},
		{`c.n + c.m = 3`, "", ""}, // two paths
		{`CONTAINS(c.name, c.other) AND c.k * 1 = 1`, "k", `((c.k * 1) = 1)`}, // the first term reads two
		{`c.n > RAND()`, "", ""},
		{`udf.f(c.n)`, "", ""},
		{`IS_DEFINED(c)`, "", ""}, // the document itself
		{`c.tags[0] = "a"`, "", ""},
		{`EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = "a")`, "", ""},
		{`DocumentId(c.n) > 3`, "", ""},
	} {
		q, err := parser.Parse("SELECT * FROM c WHERE " + tt.where)
		if err != nil {
			t.Fatalf("%s: %v", tt.where, err)
		}
		f, ok := ValueTerms(q, nil)
		if got := strings.Join(f.Path, "/"); ok != (tt.path != "") || got != tt.path || ok && f.Label != tt.label {
			t.Errorf("%s: path %q label %q ok %v, want %q %q", tt.where, got, f.Label, ok, tt.path, tt.label)
		}
	}
}

// TestTruth: a term compared with a boolean literal is read as the term
// or its NOT, unless it is a property path, whose comparison is a
// predicate; so the planner's readings of the term apply.
func TestTruth(t *testing.T) {
	tests := []struct {
		where, want string
		absent      int // NOT IS_DEFINED terms (AbsentPaths)
	}{
		{"IS_DEFINED(c.x) = false", "(NOT IS_DEFINED(c.x))", 1},
		{"false = IS_DEFINED(c.x)", "(NOT IS_DEFINED(c.x))", 1},
		{"IS_DEFINED(c.x) != true", "(NOT IS_DEFINED(c.x))", 1},
		{"IS_DEFINED(c.x) = true", "IS_DEFINED(c.x)", 0},
		{"IS_DEFINED(c.x) != false", "IS_DEFINED(c.x)", 0},
		{"(IS_DEFINED(c.x) = false) = true", "(NOT IS_DEFINED(c.x))", 1},
		{"(c.n > 1 AND NOT IS_DEFINED(c.y)) = true", "((c.n > 1) AND (NOT IS_DEFINED(c.y)))", 1},
		{"c.b = true", "(c.b = true)", 0},
		{"c.b != false", "(c.b != false)", 0},
		{"@p = true", "(@p = true)", 0},
		{"NOT (IS_DEFINED(c.x) = true)", "(NOT (IS_DEFINED(c.x) = true))", 0},
	}
	for _, tt := range tests {
		q, err := parser.Parse("SELECT * FROM c WHERE " + tt.where)
		if err != nil {
			t.Fatal(err)
		}
		if got := ast.ExprString(Truth(q.Where)); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.where, got, tt.want)
		}
		if got := len(AbsentPaths(q)); got != tt.absent {
			t.Errorf("%s: %d absent paths, want %d", tt.where, got, tt.absent)
		}
	}
}

func TestKeyChoices(t *testing.T) {
	params := map[string]document.Value{"@keys": document.Arr([]document.Value{document.Str("a"), document.Int(2)}), "@k": document.Str("b")}
	for _, tt := range []struct {
		where string
		want  string // the values, as JSON; "" when no term lists them
	}{
		{"c.pk IN ('a', 'b')", `["a","b"]`},
		{"c.n > 1 AND (c.pk = 'a' OR 'b' = c.pk OR c.pk IN (3, @k))", `["a","b",3,"b"]`},
		{"ARRAY_CONTAINS(@keys, c.pk)", `["a",2]`},
		{"ARRAY_CONTAINS(['a', null], c.pk, false) AND c.x = 1", `["a",null]`},
		{"c.pk NOT IN ('a', 'b')", ""},
		{"c.pk = 'a' OR c.s = 'b'", ""},
		{"c.pk IN ('a', c.s)", ""},
		{"ARRAY_CONTAINS(['a', 'b'], c.pk, true)", ""},
		{"ARRAY_CONTAINS([{'a': 1}], c.pk)", ""},
		{"c.pk.x IN ('a', 'b')", ""},
		{"NOT (c.pk IN ('a', 'b'))", ""},
	} {
		q, err := parser.Parse("SELECT * FROM c WHERE " + tt.where)
		if err != nil {
			t.Fatal(err)
		}
		term, values, eqs, ok := KeyChoices(q, params, []string{"pk"})
		got := ""
		if ok {
			got = document.Arr(values).String()
			if term == nil || len(eqs) != len(values) {
				t.Errorf("%s: term %v, %d equalities for %d values", tt.where, term, len(eqs), len(values))
			}
		}
		if got != tt.want {
			t.Errorf("%s: values %s, want %s", tt.where, got, tt.want)
		}
	}
}
