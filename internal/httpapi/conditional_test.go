package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"
)

// etagOf returns the etag a read of path, with headers, answers with.
func etagOf(t *testing.T, h *Handler, path string, headers map[string]string) string {
	t.Helper()
	rec := serve(h, "GET", path, "", headers)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	var body struct {
		Etag string `json:"_etag"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Etag == "" || headerValue(rec.Header(), "etag") != body.Etag {
		t.Fatalf("GET %s: etag header %q, body %s", path, headerValue(rec.Header(), "etag"), rec.Body)
	}
	return body.Etag
}

// deleteIfMatch checks that a delete of path with a stale If-Match is a 412
// that leaves it as it was, and one with its etag deletes it.
func deleteIfMatch(t *testing.T, h *Handler, path string) {
	t.Helper()
	etag := etagOf(t, h, path, nil)
	rec := serve(h, "DELETE", path, "", map[string]string{"If-Match": `"00000000-0000-0000-0000-000000000000"`})
	wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusPreconditionFailed, "DELETE "+path+" with a stale etag")
	if got := etagOf(t, h, path, nil); got != etag {
		t.Fatalf("%s: etag %s after a refused delete, want %s", path, got, etag)
	}
	if rec := serve(h, "DELETE", path, "", map[string]string{"If-Match": etag}); rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE %s with its etag: %d %s", path, rec.Code, rec.Body)
	}
	if rec := serve(h, "GET", path, "", nil); rec.Code != http.StatusNotFound {
		t.Fatalf("GET %s after delete: %d %s", path, rec.Code, rec.Body)
	}
}

// A delete of a database or container with If-Match deletes only the
// version it names: a stale etag is a 412 and leaves everything in place.
func TestDeleteIfMatch(t *testing.T) {
	h := newTestHandler(t)
	for _, r := range []struct{ path, body string }{
		{"/dbs", `{"id":"db2"}`},
		{"/dbs/db2/colls", `{"id":"c2","partitionKey":{"paths":["/pk"]}}`},
	} {
		if rec := serve(h, "POST", r.path, r.body, nil); rec.Code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", r.path, rec.Code, rec.Body)
		}
	}
	for _, path := range []string{"/dbs/db/colls/c", "/dbs/db2"} {
		deleteIfMatch(t, h, path)
	}
	// The container of a database refused a delete is still there.
	if rec := serve(h, "GET", "/dbs/db2/colls/c2", "", nil); rec.Code != http.StatusNotFound {
		t.Fatalf("the container of a deleted database: %d %s", rec.Code, rec.Body)
	}
}

// An offer replace with If-Match changes the throughput only at the etag it
// names.
func TestOfferReplaceIfMatch(t *testing.T) {
	h := newTestHandler(t)
	rec := serve(h, "GET", "/offers", "", nil)
	var feed struct {
		Offers []map[string]any
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &feed); err != nil || len(feed.Offers) != 1 {
		t.Fatalf("GET /offers: %d %s", rec.Code, rec.Body)
	}
	offer := feed.Offers[0]
	path := "/offers/" + offer["id"].(string)
	etag := offer["_etag"].(string)
	offer["content"] = map[string]any{"offerThroughput": 1000}
	body, err := json.Marshal(offer)
	if err != nil {
		t.Fatal(err)
	}
	rec = serve(h, "PUT", path, string(body), map[string]string{"If-Match": `"00000000-0000-0000-0000-000000000000"`})
	wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusPreconditionFailed, "PUT "+path+" with a stale etag")
	if got := etagOf(t, h, path, nil); got != etag {
		t.Fatalf("%s: etag %s after a refused replace, want %s", path, got, etag)
	}
	rec = serve(h, "PUT", path, string(body), map[string]string{"If-Match": etag})
	if rec.Code != http.StatusOK {
		t.Fatalf("PUT %s with its etag: %d %s", path, rec.Code, rec.Body)
	}
	if got := etagOf(t, h, path, nil); got == etag {
		t.Fatalf("%s: the etag did not change with the replace", path)
	}
}

// Deleting a user or a permission with If-Match deletes only the version it
// names, as the other deletes do.
func TestUserAndPermissionDeleteIfMatch(t *testing.T) {
	h := newTestHandler(t)
	for _, r := range []struct{ path, body string }{
		{"/dbs/db/users", `{"id":"u"}`},
		{"/dbs/db/users/u/permissions", `{"id":"p","permissionMode":"Read","resource":"dbs/db/colls/c"}`},
	} {
		if rec := serve(h, "POST", r.path, r.body, nil); rec.Code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", r.path, rec.Code, rec.Body)
		}
	}
	for _, path := range []string{"/dbs/db/users/u/permissions/p", "/dbs/db/users/u"} {
		deleteIfMatch(t, h, path)
	}
}

// A read of any resource whose If-None-Match holds its etag is a 304
// without a body; a stale etag reads it whole. Writes ignore the header.
func TestReadIfNoneMatch(t *testing.T) {
	h := newTestHandler(t)
	for _, r := range []struct{ path, body string }{
		{"/dbs/db/users", `{"id":"u"}`},
		{"/dbs/db/colls/c/sprocs", `{"id":"s","body":"function () {}"}`},
	} {
		if rec := serve(h, "POST", r.path, r.body, nil); rec.Code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", r.path, rec.Code, rec.Body)
		}
	}
	for _, path := range []string{"/dbs/db", "/dbs/db/colls/c", "/dbs/db/users/u", "/dbs/db/colls/c/sprocs/s"} {
		etag := etagOf(t, h, path, nil)
		rec := serve(h, "GET", path, "", map[string]string{"If-None-Match": etag})
		if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
			t.Errorf("GET %s with its etag: %d %s, want 304 without a body", path, rec.Code, rec.Body)
		}
		if rec := serve(h, "GET", path, "", map[string]string{"If-None-Match": `"stale"`}); rec.Code != http.StatusOK {
			t.Errorf("GET %s with a stale etag: %d %s", path, rec.Code, rec.Body)
		}
	}
	rec := serve(h, "PUT", "/dbs/db/users/u", `{"id":"u"}`, map[string]string{"If-None-Match": "*"})
	if rec.Code != http.StatusOK {
		t.Errorf("replace with If-None-Match: %d %s", rec.Code, rec.Body)
	}
}
