package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A query or read feed names its range by id, or as the service's gateway
// also takes it, by the container's rid and the id: "rid,0" reads range 0.
func TestRangeIDWithTheContainersRid(t *testing.T) {
	h := newTestHandler(t)
	for _, r := range []struct{ path, body string }{
		{"/dbs/db/colls", `{"id":"r","partitionKey":{"paths":["/pk"]}}`},
		{"/dbs/db/colls/r/docs", `{"id":"a","pk":"p"}`},
	} {
		headers := map[string]string{}
		if r.path == "/dbs/db/colls/r/docs" {
			headers["x-ms-documentdb-partitionkey"] = `["p"]`
		}
		if rec := serve(h, "POST", r.path, r.body, headers); rec.Code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", r.path, rec.Code, rec.Body)
		}
	}
	rec := serve(h, "GET", "/dbs/db/colls/r", "", nil)
	var coll struct {
		Rid string `json:"_rid"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &coll); err != nil || coll.Rid == "" {
		t.Fatalf("GET the container: %s", rec.Body)
	}
	for _, rangeID := range []string{"0", coll.Rid + ",0"} {
		headers := map[string]string{"x-ms-documentdb-partitionkeyrangeid": rangeID}
		if rec := serve(h, "GET", "/dbs/db/colls/r/docs", "", headers); rec.Code != http.StatusOK {
			t.Errorf("read feed of range %q: %d %s", rangeID, rec.Code, rec.Body)
		}
		headers["content-type"] = "application/query+json"
		headers["x-ms-documentdb-isquery"] = "true"
		if rec := serve(h, "POST", "/dbs/db/colls/r/docs", `{"query":"SELECT VALUE c.id FROM c"}`, headers); rec.Code != http.StatusOK {
			t.Errorf("query of range %q: %d %s", rangeID, rec.Code, rec.Body)
		}
	}
}

// A batch in the binary HybridRow format is refused with a message that
// says so, not taken for bad JSON.
func TestHybridRowBatchRefused(t *testing.T) {
	h := newTestHandler(t)
	if rec := serve(h, "POST", "/dbs/db/colls", `{"id":"b","partitionKey":{"paths":["/pk"]}}`, nil); rec.Code != http.StatusCreated {
		t.Fatalf("create the container: %d %s", rec.Code, rec.Body)
	}
	headers := map[string]string{"x-ms-cosmos-is-batch-request": "True", "x-ms-cosmos-batch-atomic": "True", "x-ms-documentdb-partitionkey": `["p"]`}
	rec := serve(h, "POST", "/dbs/db/colls/b/docs", "\x81\x00\x01\x02", headers)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "HybridRow") {
		t.Fatalf("a HybridRow batch: %d %s, want a 400 naming the format", rec.Code, rec.Body)
	}
}
