package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// The query plan follows what the client announces in
// x-ms-cosmos-supported-query-features. The Python SDK's list has no
// NonValueAggregate: it gets MIN and MAX as bare values, which its
// aggregator compares, and a non-VALUE aggregate or a GROUP BY is refused
// as the service refuses it. The JavaScript SDK's list gets the
// {"min", "count"} form its aggregator reads.
func TestQueryPlanFollowsClientFeatures(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	for i := range 6 {
		body := fmt.Sprintf(`{"id":"%d","pk":"p%d","n":%d}`, i, i%3, 10+i)
		if _, err := c.CreateItem(context.Background(), azcosmos.NewPartitionKeyString(fmt.Sprintf("p%d", i%3)), []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	const python = "Aggregate,CompositeAggregate,Distinct,MultipleOrderBy,OffsetAndLimit,OrderBy,Top"
	const js = "NonValueAggregate,Aggregate,Distinct,MultipleOrderBy,OffsetAndLimit,OrderBy,Top,CompositeAggregate,GroupBy,MultipleAggregates"
	plan := func(query, features string) rawResponse {
		return e.do("POST", "/dbs/db/colls/c/docs", mustJSON(t, map[string]any{"query": query}), map[string]string{
			"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true",
			"x-ms-cosmos-is-query-plan-request": "True", "x-ms-documentdb-query-enablecrosspartition": "True",
			"x-ms-cosmos-supported-query-features": features})
	}
	rewritten := func(r rawResponse) string {
		t.Helper()
		var p struct {
			QueryInfo struct{ RewrittenQuery string }
		}
		if r.status != 200 || json.Unmarshal(r.body, &p) != nil {
			t.Fatalf("plan: %d %s", r.status, r.body)
		}
		return p.QueryInfo.RewrittenQuery
	}

	// Python: the rewritten query gives each range its bare minimum.
	q := rewritten(plan("SELECT VALUE MIN(c.n) FROM c", python))
	if strings.Contains(q, "count") {
		t.Fatalf("rewritten for Python: %s, want the bare form", q)
	}
	r := e.do("POST", "/dbs/db/colls/c/docs", mustJSON(t, map[string]any{"query": q}), map[string]string{
		"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true",
		"x-ms-documentdb-query-enablecrosspartition": "True", "x-ms-documentdb-partitionkeyrangeid": "0"})
	if r.status != 200 || !strings.Contains(string(r.body), `"Documents":[[{"item":10}]]`) {
		t.Fatalf("the rewritten query over range 0: %d %s", r.status, r.body)
	}
	for _, query := range []string{"SELECT MIN(c.n) FROM c", "SELECT c.pk, COUNT(1) AS n FROM c GROUP BY c.pk"} {
		if r := plan(query, python); r.status != 400 || !strings.Contains(string(r.body), "which the calling client does not support") {
			t.Errorf("%s for Python: %d %s, want 400", query, r.status, r.body)
		}
	}

	// JavaScript: the object form.
	if q := rewritten(plan("SELECT VALUE MIN(c.n) FROM c", js)); !strings.Contains(q, `{"min": MIN(c.n), "count": COUNT(c.n)}`) {
		t.Fatalf("rewritten for JavaScript: %s", q)
	}
	rewritten(plan("SELECT c.pk, COUNT(1) AS n FROM c GROUP BY c.pk", js))
}

// TestRefusedQueryPlanFollowsQueryFeatures: a cross-partition query the
// gateway will not serve whole is refused with 400/1004 and the plan in
// additionalErrorInfo, which is how the DocumentDB-era SDKs (documentdb
// 1.x, @azure/cosmos 2.x) learn it. They announce no features and merge
// MIN and MAX as bare values, so a refusal without features gives them
// that form; a query that announces NonValueAggregate gets the object form.
func TestRefusedQueryPlanFollowsQueryFeatures(t *testing.T) {
	e := start(t)
	db := e.database("db")
	e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	for _, tc := range []struct {
		query, features, want string
	}{
		{"SELECT VALUE MAX(c.n) FROM c", "", `SELECT VALUE [{"item": MAX(c.n)}] FROM c`},
		{"SELECT VALUE MIN(c.n) FROM c", "", `SELECT VALUE [{"item": MIN(c.n)}] FROM c`},
		{"SELECT VALUE MAX(c.n) FROM c", "NonValueAggregate,Aggregate", `SELECT VALUE [{"item": {"max": MAX(c.n), "count": COUNT(c.n)}}] FROM c`},
	} {
		h := map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true",
			"x-ms-documentdb-query-enablecrosspartition": "true"}
		if tc.features != "" {
			h["x-ms-cosmos-supported-query-features"] = tc.features
		}
		r := e.do("POST", "/dbs/db/colls/c/docs", mustJSON(t, map[string]any{"query": tc.query}), h)
		var body struct{ AdditionalErrorInfo string }
		var plan struct {
			QueryInfo struct{ RewrittenQuery string }
		}
		if r.status != 400 || r.header.Get("x-ms-substatus") != "1004" || json.Unmarshal(r.body, &body) != nil || json.Unmarshal([]byte(body.AdditionalErrorInfo), &plan) != nil {
			t.Fatalf("%s with %q: %d %s, want 400/1004 with a plan", tc.query, tc.features, r.status, r.body)
		}
		if plan.QueryInfo.RewrittenQuery != tc.want {
			t.Errorf("%s with %q: rewritten %s, want %s", tc.query, tc.features, plan.QueryInfo.RewrittenQuery, tc.want)
		}
	}
}
