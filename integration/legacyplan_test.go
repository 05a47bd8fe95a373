package integration

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestRefusalPlanForLegacyClients sends cross-partition aggregate queries
// whole, as DocumentDB-era SDKs do (the Python SDK 3.x, which announces no
// query features): the 400/1004 refusal carries the plan they read, whose
// MIN and MAX come back from each range as bare values (they fail on
// {"max": m, "count": n}), and AVG as {"sum", "count"} as always.
func TestRefusalPlanForLegacyClients(t *testing.T) {
	e := start(t)
	e.database("db")
	if r := e.do(http.MethodPost, "/dbs/db/colls", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`),
		map[string]string{"x-ms-offer-throughput": "30000"}); r.status != http.StatusCreated {
		t.Fatalf("container: %d %s", r.status, r.body)
	}
	for _, tc := range []struct{ query, rewritten string }{
		{"SELECT VALUE MAX(c.n) FROM c", `SELECT VALUE [{"item": MAX(c.n)}] FROM c`},
		{"SELECT VALUE MIN(c.n) FROM c WHERE true", `SELECT VALUE [{"item": MIN(c.n)}] FROM c WHERE true`},
		{"SELECT VALUE AVG(c.n) FROM c", `SELECT VALUE [{"item": {"sum": SUM(c.n), "count": COUNT(c.n)}}] FROM c`},
	} {
		body, _ := json.Marshal(map[string]any{"query": tc.query, "parameters": []any{}})
		r := e.do(http.MethodPost, "/dbs/db/colls/c/docs", body, map[string]string{"Content-Type": "application/query+json",
			"x-ms-documentdb-isquery": "True", "x-ms-documentdb-query-enablecrosspartition": "True"})
		if r.status != http.StatusBadRequest || r.header.Get("x-ms-substatus") != "1004" {
			t.Fatalf("%s: %d (substatus %q) %s, want 400/1004", tc.query, r.status, r.header.Get("x-ms-substatus"), r.body)
		}
		var refusal struct{ AdditionalErrorInfo string }
		var plan struct {
			QueryInfo struct{ RewrittenQuery string }
		}
		if err := json.Unmarshal(r.body, &refusal); err != nil {
			t.Fatalf("%s: %v: %s", tc.query, err, r.body)
		}
		if err := json.Unmarshal([]byte(refusal.AdditionalErrorInfo), &plan); err != nil {
			t.Fatalf("%s: plan %v: %s", tc.query, err, refusal.AdditionalErrorInfo)
		}
		if plan.QueryInfo.RewrittenQuery != tc.rewritten {
			t.Errorf("%s: rewritten\n got %s\nwant %s", tc.query, plan.QueryInfo.RewrittenQuery, tc.rewritten)
		}
	}
}
