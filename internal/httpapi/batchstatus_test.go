package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"
)

// A batch whose reads are answered 304 commits, yet is a 207, as the
// service answers any batch with an operation whose status is not a
// success. A read's ifMatch that matches is a 304 as its ifNoneMatch is (the
// service's answer, which the .NET SDK's emulator tests expect); one that
// does not match is ignored.
func TestBatchReadNotModified(t *testing.T) {
	h := newTestHandler(t)
	etag := etagOf(t, h, "/dbs/db/colls/c/docs/x", map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}) // made by newTestHandler
	batch := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`, "x-ms-cosmos-is-batch-request": "true",
		"x-ms-cosmos-batch-atomic": "true", "Content-Type": "application/json"}
	quoted, err := json.Marshal(etag)
	if err != nil {
		t.Fatal(err)
	}
	ops := `[{"operationType":"Read","id":"x","ifMatch":` + string(quoted) + `},
		{"operationType":"Read","id":"x","ifMatch":"\"stale\""},
		{"operationType":"Read","id":"x","ifNoneMatch":` + string(quoted) + `},
		{"operationType":"Create","resourceBody":{"id":"y","pk":"a"}}]`
	for _, c := range []struct {
		ops    string
		status int
		want   []int
	}{
		{`[{"operationType":"Read","id":"x"}]`, http.StatusOK, []int{200}},
		{ops, http.StatusMultiStatus, []int{304, 200, 304, 201}},
	} {
		rec := serve(h, "POST", "/dbs/db/colls/c/docs", c.ops, batch)
		if rec.Code != c.status {
			t.Fatalf("batch %s: %d, want %d: %s", c.ops, rec.Code, c.status, rec.Body)
		}
		var results []struct {
			StatusCode   int
			ResourceBody json.RawMessage
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &results); err != nil || len(results) != len(c.want) {
			t.Fatalf("batch %s: %s", c.ops, rec.Body)
		}
		for i, r := range results {
			if r.StatusCode != c.want[i] || (r.StatusCode == 304) != (len(r.ResourceBody) == 0) {
				t.Fatalf("batch %s: operation %d: %d with body %s, want %d", c.ops, i, r.StatusCode, r.ResourceBody, c.want[i])
			}
		}
	}
	if rec := serve(h, "GET", "/dbs/db/colls/c/docs/y", "", map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}); rec.Code != http.StatusOK {
		t.Fatalf("the batch with 304s did not commit its create: %d %s", rec.Code, rec.Body)
	}
}
