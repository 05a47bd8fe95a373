package integration

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/server"
)

// TestReadOnlyKey: a read-only key signs reads, queries and feeds; a write
// signed with it is refused with 401, as the service refuses it, and changes nothing.
func TestReadOnlyKey(t *testing.T) {
	ro := base64.StdEncoding.EncodeToString([]byte("a read-only key for the tests"))
	e := start(t, func(cfg *server.Config) { cfg.ReadOnlyKeys = []string{ro} })
	e.database("rodb")
	if r := e.do(http.MethodPost, "/dbs/rodb/colls", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`), nil); r.status != http.StatusCreated {
		t.Fatalf("create container: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodPost, "/dbs/rodb/colls/c/docs", []byte(`{"id":"a","pk":"p"}`),
		map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}); r.status != http.StatusCreated {
		t.Fatalf("create item: %d %s", r.status, r.body)
	}
	as := func(method, path string) map[string]string {
		date := time.Now().UTC().Format(http.TimeFormat)
		typ, link := resourceOf(path)
		return map[string]string{"x-ms-date": date, "Authorization": signature(method, typ, link, date, ro),
			"x-ms-documentdb-partitionkey": `["p"]`}
	}
	reads := []struct{ method, path, body string }{
		{http.MethodGet, "/dbs/rodb", ""},
		{http.MethodGet, "/dbs/rodb/colls/c", ""},
		{http.MethodGet, "/dbs/rodb/colls/c/docs/a", ""},
		{http.MethodGet, "/dbs/rodb/colls/c/docs", ""},
	}
	for _, rd := range reads {
		if r := e.do(rd.method, rd.path, nil, as(rd.method, rd.path)); r.status != http.StatusOK {
			t.Errorf("%s %s with the read-only key: %d %s", rd.method, rd.path, r.status, r.body)
		}
	}
	h := as(http.MethodPost, "/dbs/rodb/colls/c/docs")
	h["Content-Type"] = "application/query+json"
	h["x-ms-documentdb-isquery"] = "true"
	if r := e.do(http.MethodPost, "/dbs/rodb/colls/c/docs", []byte(`{"query":"SELECT * FROM c"}`), h); r.status != http.StatusOK {
		t.Errorf("query with the read-only key: %d %s", r.status, r.body)
	}
	writes := []struct{ method, path, body string }{
		{http.MethodPost, "/dbs/rodb/colls/c/docs", `{"id":"b","pk":"p"}`},
		{http.MethodPut, "/dbs/rodb/colls/c/docs/a", `{"id":"a","pk":"p","x":1}`},
		{http.MethodDelete, "/dbs/rodb/colls/c/docs/a", ""},
		{http.MethodDelete, "/dbs/rodb/colls/c", ""},
		{http.MethodPost, "/dbs", `{"id":"other"}`},
		{http.MethodPost, "/dbs/rodb/users", `{"id":"u"}`},
	}
	for _, w := range writes {
		r := e.do(w.method, w.path, []byte(w.body), as(w.method, w.path))
		if r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), `"code":"Unauthorized"`) {
			t.Errorf("%s %s with the read-only key: %d %s, want 401 Unauthorized", w.method, w.path, r.status, r.body)
		}
	}
	// Query headers make a query only of a POST to a feed: a stored
	// procedure run or a delete by partition key that carries them is
	// still a write.
	if r := e.do(http.MethodPost, "/dbs/rodb/colls/c/sprocs", []byte(`{"id":"w","body":"function () { getContext().getCollection().createDocument(getContext().getCollection().getSelfLink(), {id: 'w', pk: 'p'}); }"}`), nil); r.status != http.StatusCreated {
		t.Fatalf("create procedure: %d %s", r.status, r.body)
	}
	pkDelete := func() map[string]string {
		date := time.Now().UTC().Format(http.TimeFormat)
		return map[string]string{"x-ms-date": date, "Authorization": signature(http.MethodPost, "colls", "dbs/rodb/colls/c", date, ro),
			"x-ms-documentdb-partitionkey": `["p"]`}
	}
	for _, w := range []struct {
		path, body string
		h          map[string]string
	}{
		{"/dbs/rodb/colls/c/sprocs/w", `[]`, as(http.MethodPost, "/dbs/rodb/colls/c/sprocs/w")},
		{"/dbs/rodb/colls/c/operations/partitionkeydelete", ``, pkDelete()},
	} {
		for _, q := range []map[string]string{{"x-ms-documentdb-isquery": "true"}, {"Content-Type": "application/query+json"}} {
			for k, v := range q {
				w.h[k] = v
			}
			if r := e.do(http.MethodPost, w.path, []byte(w.body), w.h); r.status != http.StatusUnauthorized {
				t.Errorf("POST %s with %v and the read-only key: %d %s, want 401", w.path, q, r.status, r.body)
			}
		}
	}
	if r := e.do(http.MethodGet, "/dbs/rodb/colls/c/docs/a", nil, map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}); r.status != http.StatusOK || strings.Contains(string(r.body), `"x"`) {
		t.Errorf("item after refused writes: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodGet, "/dbs/rodb/colls/c/docs/w", nil, map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}); r.status != http.StatusNotFound {
		t.Errorf("the procedure's item after a refused run: %d %s", r.status, r.body)
	}
}
