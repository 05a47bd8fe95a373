package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
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
	if got := headerValue(rec.Header(), "x-ms-resource-usage"); !strings.HasPrefix(got, "functions=1;storedProcedures=2;triggers=1;") {
		t.Errorf("x-ms-resource-usage %q, want functions=1;storedProcedures=2;triggers=1;…", got)
	}
}

// An item's attachments list in pages, as every other list does: a page
// of x-ms-max-item-count, its count, and a continuation to the next.
func TestAttachmentListPages(t *testing.T) {
	h := newTestHandler(t)
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	if rec := serve(h, "POST", "/dbs/db/colls", `{"id":"a","partitionKey":{"paths":["/pk"]}}`, nil); rec.Code != http.StatusCreated {
		t.Fatalf("create the container: %d %s", rec.Code, rec.Body)
	}
	if rec := serve(h, "POST", "/dbs/db/colls/a/docs", `{"id":"i","pk":"p"}`, pk); rec.Code != http.StatusCreated {
		t.Fatalf("create the item: %d %s", rec.Code, rec.Body)
	}
	for _, id := range []string{"x1", "x2", "x3"} {
		if rec := serve(h, "POST", "/dbs/db/colls/a/docs/i/attachments", `{"id":"`+id+`","contentType":"text/plain","media":"http://example.com/`+id+`"}`, pk); rec.Code != http.StatusCreated {
			t.Fatalf("create attachment %s: %d %s", id, rec.Code, rec.Body)
		}
	}
	var ids []string
	cont := ""
	for pages := 0; pages < 5; pages++ {
		hd := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "x-ms-max-item-count": "2", "x-ms-continuation": cont}
		rec := serve(h, "GET", "/dbs/db/colls/a/docs/i/attachments", "", hd)
		if rec.Code != http.StatusOK {
			t.Fatalf("list: %d %s", rec.Code, rec.Body)
		}
		var page struct{ Attachments []struct{ ID string } }
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			t.Fatal(err)
		}
		if n := headerValue(rec.Header(), "x-ms-item-count"); n != strconv.Itoa(len(page.Attachments)) {
			t.Errorf("x-ms-item-count %q for a page of %d", n, len(page.Attachments))
		}
		for _, a := range page.Attachments {
			ids = append(ids, a.ID)
		}
		if len(page.Attachments) > 2 {
			t.Errorf("a page of %d attachments, past x-ms-max-item-count 2", len(page.Attachments))
		}
		if cont = headerValue(rec.Header(), "x-ms-continuation"); cont == "" {
			break
		}
	}
	if strings.Join(ids, " ") != "x1 x2 x3" {
		t.Errorf("attachments listed %v, want x1 x2 x3", ids)
	}
}
