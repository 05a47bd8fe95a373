package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// A request may ask for the account's consistency level (Session here) or a
// weaker one; a stronger one, or a value that names no level, is a 400, as
// the service answers.
func TestConsistencyLevelHeader(t *testing.T) {
	h := newTestHandler(t)
	pk := `["a"]`
	for _, c := range []struct {
		level  string
		status int
		says   string
	}{
		{"", http.StatusOK, ""},
		{"Session", http.StatusOK, ""},
		{"session", http.StatusOK, ""},
		{"Eventual", http.StatusOK, ""},
		{"ConsistentPrefix", http.StatusOK, ""},
		{"Strong", http.StatusBadRequest, "ConsistencyLevel Strong specified in the request is invalid when service is configured with consistency level Session"},
		{"BoundedStaleness", http.StatusBadRequest, "ConsistencyLevel BoundedStaleness specified"},
		{"Bogus", http.StatusBadRequest, "Invalid value 'Bogus' for header x-ms-consistency-level"},
	} {
		rec := serve(h, "GET", "/dbs/db/colls/c/docs/x", "", map[string]string{"x-ms-documentdb-partitionkey": pk, "x-ms-consistency-level": c.level})
		if c.status == http.StatusOK {
			if rec.Code != http.StatusOK {
				t.Fatalf("read at %q: %d %s", c.level, rec.Code, rec.Body)
			}
			continue
		}
		wantCosmosError(t, rec, rec.Body.Bytes(), c.status, "read at "+c.level)
		if !strings.Contains(rec.Body.String(), c.says) {
			t.Fatalf("read at %q: %s, want a message with %q", c.level, rec.Body, c.says)
		}
	}
}
