package gatewayplan

import (
	"testing"

	"github.com/mayfly-db/mayfly/internal/query/parser"
	"github.com/mayfly-db/mayfly/internal/query/vector"
)

// The feature lists two SDKs announce: the Python SDK's, which merges MIN
// and MAX as bare values and runs no aggregate outside SELECT VALUE, and
// the JavaScript SDK's, which announces everything.
const (
	pythonFeatures = "Aggregate,CompositeAggregate,Distinct,MultipleOrderBy,OffsetAndLimit,OrderBy,Top"
	jsFeatures     = "NonValueAggregate,Aggregate,Distinct,MultipleOrderBy,OffsetAndLimit,OrderBy,Top,CompositeAggregate,GroupBy,MultipleAggregates,NonStreamingOrderBy,ListAndSetAggregate,CountIf,HybridSearch,WeightedRankFusion,HybridSearchSkipOrderByRewrite"
)

func TestAggregateFormFollowsFeatures(t *testing.T) {
	for _, tc := range []struct {
		query, features, want string
	}{
		{"SELECT VALUE MIN(c.n) FROM c", pythonFeatures, `SELECT VALUE [{"item": MIN(c.n)}] FROM c`},
		{"SELECT VALUE MIN(c.n) FROM c", jsFeatures, `SELECT VALUE [{"item": {"min": MIN(c.n), "count": COUNT(c.n)}}] FROM c`},
		{"SELECT VALUE MAX(c.n) FROM c", "", `SELECT VALUE [{"item": {"max": MAX(c.n), "count": COUNT(c.n)}}] FROM c`},
		{"SELECT VALUE MAX(c.n) FROM c", pythonFeatures, `SELECT VALUE [{"item": MAX(c.n)}] FROM c`},
		// AVG is {sum, count} for every client.
		{"SELECT VALUE AVG(c.n) FROM c", pythonFeatures, `SELECT VALUE [{"item": {"sum": SUM(c.n), "count": COUNT(c.n)}}] FROM c`},
	} {
		q, err := parser.Parse(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		f := ParseFeatures(tc.features)
		if m := Missing(q, f); m != "" {
			t.Fatalf("%s with %q: missing %s", tc.query, tc.features, m)
		}
		if got := DescribeFor(q, nil, f, vector.Policy{}).RewrittenQuery; got != tc.want {
			t.Errorf("%s with %q:\n got %s\nwant %s", tc.query, tc.features, got, tc.want)
		}
	}
}

// TestRefusalFollowsQueryFeatures: the plan a 400/1004 refusal carries
// follows the features sent with the query; a query that sends none comes
// from a DocumentDB-era client (the documentdb package, @azure/cosmos 2.x),
// whose MinAggregator and MaxAggregator compare the bare values of each
// range, and which read {"max": 9, "count": 13} as the maximum itself.
func TestRefusalFollowsQueryFeatures(t *testing.T) {
	for _, tc := range []struct {
		query, features, want string
	}{
		{"SELECT VALUE MAX(c.n) FROM c", "", `SELECT VALUE [{"item": MAX(c.n)}] FROM c`},
		{"SELECT VALUE MIN(c.n) FROM c WHERE c.n > 1", "", `SELECT VALUE [{"item": MIN(c.n)}] FROM c WHERE (c.n > 1)`},
		{"SELECT VALUE MAX(c.n) FROM c", jsFeatures, `SELECT VALUE [{"item": {"max": MAX(c.n), "count": COUNT(c.n)}}] FROM c`},
		{"SELECT VALUE MIN(c.n) FROM c", pythonFeatures, `SELECT VALUE [{"item": MIN(c.n)}] FROM c`},
		{"SELECT VALUE COUNT(1) FROM c", "", `SELECT VALUE [{"item": COUNT(1)}] FROM c`},
	} {
		q, err := parser.Parse(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := DescribeFor(q, nil, OfQuery(tc.features), vector.Policy{}).RewrittenQuery; got != tc.want {
			t.Errorf("%s with %q:\n got %s\nwant %s", tc.query, tc.features, got, tc.want)
		}
	}
}

func TestMissingFeatures(t *testing.T) {
	for _, tc := range []struct {
		query, features, want string
	}{
		{"SELECT MIN(c.n) FROM c", pythonFeatures, "NonValueAggregate"},
		{"SELECT c.k, COUNT(1) AS n FROM c GROUP BY c.k", pythonFeatures, "GroupBy"},
		{"SELECT VALUE COUNTIF(c.n > 1) FROM c", "Aggregate", "CountIf"},
		{"SELECT VALUE MAKESET(c.n) FROM c", "Aggregate", "ListAndSetAggregate"},
		// Served whole (ServedWhole): the client merges nothing.
		{"SELECT VALUE {\"a\": MIN(c.n), \"b\": MAX(c.n)} FROM c", pythonFeatures, ""},
		{"SELECT MIN(c.n) AS a, MAX(c.n) AS b FROM c", pythonFeatures, "NonValueAggregate"},
		{"SELECT * FROM c ORDER BY c.a, c.b", "OrderBy", "MultipleOrderBy"},
		{"SELECT DISTINCT VALUE c.a FROM c", "OrderBy", "Distinct"},
		{"SELECT TOP 1 * FROM c", "OrderBy", "Top"},
		{"SELECT * FROM c OFFSET 1 LIMIT 1", "Top", "OffsetAndLimit"},
		{"SELECT * FROM c ORDER BY c.a", "orderby", ""},
		{"SELECT * FROM c ORDER BY RANK FullTextScore(c.t, 'a')", "Aggregate", ""},
		{"SELECT c.k, COUNT(1) AS n FROM c GROUP BY c.k", jsFeatures, ""},
		{"SELECT MIN(c.n) FROM c", "", ""},
	} {
		q, err := parser.Parse(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := Missing(q, ParseFeatures(tc.features)); got != tc.want {
			t.Errorf("%s with %q: missing %q, want %q", tc.query, tc.features, got, tc.want)
		}
	}
}

func TestServedWhole(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT VALUE COUNT(1) FROM c":                                   false,
		"SELECT VALUE COUNT(1) FROM c GROUP BY c.k":                      false,
		"SELECT COUNT(1) AS n, MAX(c.n) AS m FROM c":                     false,
		"SELECT VALUE {k: c.k} FROM c GROUP BY c.k":                      false,
		"SELECT VALUE c.n + 1 FROM c":                                    false,
		"SELECT VALUE {n: COUNT(1), m: MAX(c.n)} FROM c":                 true,
		"SELECT VALUE MIN(c.n) + 1 FROM c":                               true,
		"SELECT VALUE [COUNT(1)] FROM c":                                 true,
		"SELECT VALUE {k: c.k, n: COUNT(1)} FROM c GROUP BY c.k":         true,
		"SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.t, 'x')": true,
		`SELECT c.k, {"n": COUNT(1)} AS p FROM c GROUP BY c.k`:           true,
		"SELECT c.k, [COUNT(1)] AS p FROM c GROUP BY c.k":                true,
		"SELECT COUNT(1) + 0 AS x FROM c":                                true,
		"SELECT c.k, COUNT(1) AS n FROM c GROUP BY c.k":                  false,
		`SELECT [{"item": c.k}] AS groupByItems, {"k": c.k, "n": {"item": COUNT(1)}} AS payload FROM c GROUP BY c.k`: false,
	} {
		parsed, err := parser.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		if got := ServedWhole(parsed); got != want {
			t.Errorf("ServedWhole(%s) = %v, want %v", q, got, want)
		}
	}
}

// Every GROUP BY the plan rewrites for the SDKs' merge has the shape
// PartialGroups recognizes, whose pages the engine may fill with the
// groups of part of a range; the query as written, and queries that only
// look alike, have not.
func TestPartialGroupsIsTheRewrite(t *testing.T) {
	for _, text := range []string{
		"SELECT c.a, COUNT(1) AS n FROM c GROUP BY c.a",
		"SELECT VALUE COUNT(1) FROM c WHERE c.b > 1 GROUP BY c.a",
		"SELECT c.a, c.b, AVG(c.n) AS m, MIN(c.n) FROM c JOIN t IN c.tags GROUP BY c.a, c.b",
		"SELECT UPPER(c.s) AS u, MAKESET(c.n) AS s FROM c GROUP BY UPPER(c.s)",
	} {
		q, err := parser.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		if PartialGroups(q) {
			t.Errorf("%s: taken for a rewrite", text)
		}
		rewritten := DescribeFor(q, nil, ParseFeatures(jsFeatures), vector.Policy{}).RewrittenQuery
		r, err := parser.Parse(rewritten)
		if err != nil {
			t.Fatalf("%s: %v", rewritten, err)
		}
		if !PartialGroups(r) {
			t.Errorf("%s: rewritten as %s, not taken for the rewrite", text, rewritten)
		}
	}
	for _, text := range []string{
		`SELECT [{"item": c.a}] AS groupByItems, {"n": COUNT(1)} AS payload FROM c`,
		`SELECT [{"item": c.a}] AS keys, {"n": COUNT(1)} AS payload FROM c GROUP BY c.a`,
		`SELECT DISTINCT [{"item": c.a}] AS groupByItems, {"n": COUNT(1)} AS payload FROM c GROUP BY c.a`,
		`SELECT TOP 1 [{"item": c.a}] AS groupByItems, {"n": COUNT(1)} AS payload FROM c GROUP BY c.a`,
		`SELECT [c.a] AS groupByItems, COUNT(1) AS payload FROM c GROUP BY c.a`,
		`SELECT [{"item": c.b}] AS groupByItems, {"n": COUNT(1)} AS payload FROM c GROUP BY c.a`,
		`SELECT [{"item": c.a}] AS groupByItems, {"n": COUNT(1)} AS payload FROM c GROUP BY c.a, c.b`,
	} {
		q, err := parser.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		if PartialGroups(q) {
			t.Errorf("%s: taken for a rewrite", text)
		}
	}
}
