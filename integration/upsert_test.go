package integration

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestUpsertUsersAndScripts sends POSTs with x-ms-documentdb-is-upsert to
// the feeds of users, stored procedures, triggers and functions, as the
// SDKs' upsert calls do: the first creates (201), the next writes the same
// resource anew (200, same _rid, new _etag and content) instead of the 409
// of a create.
func TestUpsertUsersAndScripts(t *testing.T) {
	e := start(t)
	e.database("udb")
	if r := e.do(http.MethodPost, "/dbs/udb/colls", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`), nil); r.status != http.StatusCreated {
		t.Fatalf("container: %d %s", r.status, r.body)
	}
	upsert := map[string]string{"x-ms-documentdb-is-upsert": "true"}
	tests := []struct {
		feed, first, second, field string
	}{
		{"/dbs/udb/users", `{"id":"u"}`, `{"id":"u"}`, ""},
		{"/dbs/udb/colls/c/sprocs", `{"id":"s","body":"function(){}"}`, `{"id":"s","body":"function(){ return 1; }"}`, "body"},
		{"/dbs/udb/colls/c/triggers", `{"id":"t","body":"function(){}","triggerType":"Pre","triggerOperation":"All"}`,
			`{"id":"t","body":"function(){}","triggerType":"Post","triggerOperation":"All"}`, "triggerType"},
		{"/dbs/udb/colls/c/udfs", `{"id":"f","body":"function(x){ return x; }"}`, `{"id":"f","body":"function(x){ return 2*x; }"}`, "body"},
	}
	for _, tc := range tests {
		write := func(body string, status int) map[string]any {
			t.Helper()
			r := e.do(http.MethodPost, tc.feed, []byte(body), upsert)
			if r.status != status {
				t.Fatalf("upsert %s %s: status %d, want %d: %s", tc.feed, body, r.status, status, r.body)
			}
			var m map[string]any
			if err := json.Unmarshal(r.body, &m); err != nil {
				t.Fatalf("upsert %s: %v: %s", tc.feed, err, r.body)
			}
			return m
		}
		a := write(tc.first, http.StatusCreated)
		b := write(tc.second, http.StatusOK)
		if a["_rid"] != b["_rid"] || a["_etag"] == b["_etag"] {
			t.Errorf("%s: second upsert %v after %v: want the same _rid and a new _etag", tc.feed, b, a)
		}
		if tc.field != "" {
			var want map[string]any
			_ = json.Unmarshal([]byte(tc.second), &want)
			if b[tc.field] != want[tc.field] {
				t.Errorf("%s: %s = %v, want %v", tc.feed, tc.field, b[tc.field], want[tc.field])
			}
		}
		if r := e.do(http.MethodPost, tc.feed, []byte(tc.first), nil); r.status != http.StatusConflict {
			t.Errorf("create over an upserted %s: status %d, want 409", tc.feed, r.status)
		}
		if r := e.do(http.MethodPost, tc.feed, []byte(`{"id":""}`), upsert); r.status != http.StatusBadRequest {
			t.Errorf("upsert of an empty id in %s: status %d, want 400: %s", tc.feed, r.status, r.body)
		}
	}
}
