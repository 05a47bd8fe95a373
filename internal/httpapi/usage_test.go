package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// A container read counts the container's scripts of each kind in its
// x-ms-resource-usage header.
func TestResourceUsageCountsScripts(t *testing.T) {
	h := newTestHandler(t)
	if rec := serve(h, "POST", "/dbs/db/colls", `{"id":"s","partitionKey":{"paths":["/pk"]}}`, nil); rec.Code != http.StatusCreated {
		t.Fatalf("create the container: %d %s", rec.Code, rec.Body)
	}
	for _, s := range []struct{ path, body string }{
		{"sprocs", `{"id":"s1","body":"function () {}"}`},
		{"sprocs", `{"id":"s2","body":"function () {}"}`},
		{"triggers", `{"id":"t1","body":"function () {}","triggerType":"Pre","triggerOperation":"All"}`},
		{"udfs", `{"id":"u1","body":"function (x) { return x; }"}`},
	} {
		if rec := serve(h, "POST", "/dbs/db/colls/s/"+s.path, s.body, nil); rec.Code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", s.body, rec.Code, rec.Body)
		}
	}
	rec := serve(h, "GET", "/dbs/db/colls/s", "", nil)
	// The header is spelled as the service spells it (setHeader).
	if got := strings.Join(rec.Header()["x-ms-resource-usage"], ","); !strings.HasPrefix(got, "functions=1;storedProcedures=2;triggers=1;") {
		t.Errorf("x-ms-resource-usage %q, want functions=1;storedProcedures=2;triggers=1;…", got)
	}
}
