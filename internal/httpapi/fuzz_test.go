package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/auth"
	"github.com/mayfly-db/mayfly/internal/engine"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// newTestHandler returns a handler over a new store (teststore: in-memory
// Pebble, or PostgreSQL) holding database "db" with container "c"
// (partition key /pk) and one item.
func newTestHandler(t testing.TB) *Handler {
	h, _ := newTestHandlerStore(t)
	return h
}

// newTestHandlerStore is newTestHandler, and the handler's store.
func newTestHandlerStore(t testing.TB) (*Handler, storage.Store) {
	st := teststore.Open(t)
	eng, err := engine.New(engine.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewVerifier(auth.Config{Keys: []string{auth.EmulatorKey}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Engine: eng, Auth: v})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ method, path, body, pk string }{
		{"POST", "/dbs", `{"id":"db"}`, ""},
		{"POST", "/dbs/db/colls", `{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":-1}`, ""},
		{"POST", "/dbs/db/colls/c/docs", `{"id":"x","pk":"a","n":1,"arr":[1,2]}`, `["a"]`},
	} {
		if rec := serve(h, r.method, r.path, r.body, map[string]string{"x-ms-documentdb-partitionkey": r.pk}); rec.Code >= 300 {
			t.Fatalf("setup %s %s: %d %s", r.method, r.path, rec.Code, rec.Body)
		}
	}
	return h, st
}

// serve sends one correctly signed request.
func serve(h *Handler, method, path, body string, headers map[string]string) *httptest.ResponseRecorder {
	return serveBody(h, method, path, strings.NewReader(body), headers)
}

// serveBody is serve with the body read from body.
func serveBody(h *Handler, method, path string, body io.Reader, headers map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "https://localhost"+path, body)
	date := auth.FormatDate(time.Now())
	req.Header.Set("x-ms-date", date)
	if p, err := parseResourcePath(req.URL.EscapedPath()); err == nil {
		key, _ := auth.DecodeKey(auth.EmulatorKey)
		req.Header.Set("Authorization", auth.MasterHeader(method, p.typ, p.link, date, key))
	}
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// fuzzHeaders are the request headers the API reads besides the partition
// key and the signature. FuzzRequests sets one of them from its extra
// argument, written "name: value".
var fuzzHeaders = map[string]bool{
	"a-im": true, "if-match": true, "x-ms-indexing-directive": true, "if-modified-since": true, "if-none-match": true,
	"prefer": true, "x-ms-continuation": true, "x-ms-cosmos-batch-atomic": true,
	"x-ms-cosmos-batch-continue-on-error": true, "x-ms-cosmos-changefeed-wire-format-version": true,
	"x-ms-cosmos-is-batch-request": true, "x-ms-cosmos-is-query-plan-request": true,
	"x-ms-cosmos-offer-autopilot-settings": true, "x-ms-cosmos-populateindexmetrics": true,
	"x-ms-cosmos-supported-query-features": true, "x-ms-documentdb-expiry-seconds": true,
	"x-ms-documentdb-force-query-scan": true, "x-ms-documentdb-is-upsert": true,
	"x-ms-documentdb-isquery": true, "x-ms-documentdb-partitionkeyrangeid": true,
	"x-ms-documentdb-populatequerymetrics": true, "x-ms-documentdb-post-trigger-include": true,
	"x-ms-documentdb-pre-trigger-include": true, "x-ms-documentdb-query-enable-scan": true,
	"x-ms-documentdb-query-enablecrosspartition": true, "x-ms-documentdb-script-enable-logging": true,
	"x-ms-end-epk": true, "x-ms-max-item-count": true, "x-ms-offer-throughput": true,
	"x-ms-session-token": true, "x-ms-start-epk": true,
}

// validHeaderValue reports whether a client could send v as a header value.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// FuzzRequests sends arbitrary signed requests: whatever they hold, the
// answer is never a 500, and every error has a Cosmos-style JSON body.
// extra is "query" for a query, "name: value" for one of fuzzHeaders, and
// otherwise a continuation token.
func FuzzRequests(f *testing.F) {
	seeds := []struct{ method, path, body, pk, extra string }{
		{"POST", "/dbs/db/colls/c/docs", `{"id":"y","pk":"a","ttl":5}`, `["a"]`, ""},
		{"PUT", "/dbs/db/colls/c/docs/x", `{"id":"x","pk":"a"}`, `["a"]`, ""},
		{"PATCH", "/dbs/db/colls/c/docs/x", `[{"op":"incr","path":"/n","value":1}]`, `["a"]`, ""},
		{"POST", "/dbs/db/colls/c/docs", `{"query":"SELECT * FROM c WHERE c.n > @n","parameters":[{"name":"@n","value":0}]}`, "", "query"},
		{"GET", "/dbs/db/colls/c/docs", ``, `["a"]`, ""},
		{"PUT", "/dbs/db/colls/c", `{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":10}`, "", ""},
		{"POST", "/dbs/db/colls", `{"id":"d","uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/u"]}]}}`, "", ""},
		{"DELETE", "/dbs/db/colls/c/docs/x", ``, `[{}]`, ""},
		{"GET", "/offers", ``, "", ""},
		{"GET", "/dbs/db/colls/c/docs", ``, "", "A-IM: Incremental feed"},
		{"GET", "/dbs/db/colls/c/docs", ``, "", "x-ms-documentdb-partitionkeyrangeid: 0"},
		{"GET", "/dbs/db/colls/c/docs", ``, "", "x-ms-start-epk: 05C1"},
		{"GET", "/dbs/db/colls/c/docs", ``, "", "x-ms-max-item-count: 1"},
		{"GET", "/dbs/db/colls/c/docs/x", ``, `["a"]`, "If-None-Match: \"00000000-0000-0000-0000-000000000000\""},
		{"PUT", "/dbs/db/colls/c/docs/x", `{"id":"x","pk":"a"}`, `["a"]`, "If-Match: *"},
		{"GET", "/dbs/db/colls/c/docs/x", ``, `["a"]`, "x-ms-session-token: 0:-1#12"},
		{"POST", "/dbs/db/colls", `{"id":"e","partitionKey":{"paths":["/pk"]}}`, "", "x-ms-offer-throughput: 400"},
		{"POST", "/dbs/db/colls", `{"id":"f","partitionKey":{"paths":["/pk"]}}`, "", `x-ms-cosmos-offer-autopilot-settings: {"maxThroughput":4000}`},
		{"POST", "/dbs/db/colls/c/docs", `{"id":"y","pk":"a"}`, `["a"]`, "x-ms-documentdb-is-upsert: true"},
		{"POST", "/dbs/db/colls/c/docs", `[{"operationType":"Create","resourceBody":{"id":"b","pk":"a"}}]`, `["a"]`, "x-ms-cosmos-is-batch-request: true"},
		{"GET", "/dbs/db/colls/c/docs", ``, "", "If-Modified-Since: Mon, 02 Jan 2006 15:04:05 GMT"},
		{"POST", "/dbs/db/colls/c/docs", `{"id":"y","pk":"a"}`, `["a"]`, "x-ms-documentdb-pre-trigger-include: t1"},
		{"POST", "/dbs/db/colls/c/docs", `{"id":"y","pk":"a"}`, `["a"]`, "Prefer: return=minimal"},
		{"POST", "/dbs/db/colls", `{"id":"v","partitionKey":{"paths":["/pk"]},"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/e","dataType":"float32","dimensions":2,"distanceFunction":"euclidean"}]},"indexingPolicy":{"vectorIndexes":[{"path":"/e","type":"quantizedFlat","quantizationByteSize":2}]}}`, "", ""},
		{"POST", "/dbs/db/colls/c/docs", `{"query":"SELECT TOP 3 c.id, VectorDistance(c.arr, @v) AS s FROM c ORDER BY VectorDistance(c.arr, @v)","parameters":[{"name":"@v","value":[1,2]}]}`, "", "query"},
		{"POST", "/dbs/db/colls/c/docs", `{"query":"SELECT TOP 3 c.id FROM c ORDER BY VectorDistance(c.arr, [1,2], false, {distanceFunction: 'dotproduct'})"}`, "", "x-ms-cosmos-is-query-plan-request: true"},
		{"POST", "/dbs/db/colls/c/docs", `{"query":"SELECT VALUE {n: COUNT(1), m: MAX(c.n) + 1} FROM c"}`, "", "query"},
		{"GET", "/dbs/db/colls/c/docs/x", ``, `["a"]`, "x-ms-version: 2017-11-15"},
		{"POST", "/dbs/db/users/u/permissions", `{"id":"p","permissionMode":"Read","resource":"dbs/AAAAAQ==/colls/AAAAAYAAAAI=/"}`, "", ""},
		{"GET", "/dbs/AAAAAQ==/users/AAAAAQAAAAM=/permissions/AAAAAQAAAAMAAAAAAAAAAA==/", ``, "", ""},
		{"POST", "/dbs/AAAAAQ==/colls/AAAAAYAAAAI=/sprocs/AAAAAYAAAAIBAAAAAAAAgA==/", `[1]`, `["a"]`, ""},
		// Last: it empties partition "a".
		{"POST", "/dbs/db/colls/c/operations/partitionkeydelete", ``, `["a"]`, ""},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.body, s.pk, s.extra)
	}
	h, st := newTestHandlerStore(f)
	f.Fuzz(func(t *testing.T, method, path, body, pk, extra string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n\t?#") || len(body) > 1<<16 {
			return
		}
		if _, err := url.ParseRequestURI(path); err != nil {
			return // not something a client can send
		}
		switch method {
		case "GET", "POST", "PUT", "PATCH", "DELETE":
		default:
			return
		}
		if !validHeaderValue(pk) || !validHeaderValue(extra) {
			return // net/http refuses such a request before any handler
		}
		hdr := map[string]string{"x-ms-documentdb-partitionkey": pk}
		name, value, named := strings.Cut(extra, ":")
		named = named && fuzzHeaders[strings.ToLower(strings.TrimSpace(name))]
		switch {
		case extra == "query":
			hdr["Content-Type"] = "application/query+json"
			hdr["x-ms-documentdb-isquery"] = "true"
			hdr["x-ms-documentdb-query-enablecrosspartition"] = "true"
		case named:
			hdr[strings.TrimSpace(name)] = strings.TrimSpace(value)
		case extra != "":
			hdr["x-ms-continuation"] = extra
		}
		rec := serve(h, method, path, body, hdr)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q → %d %s", method, path, body, rec.Code, rec.Body)
		}
		// Over PostgreSQL: a request that keeps a connection leaves the
		// pool smaller, and once it is empty every request waits
		// forever. The engine's own writes in the background (the
		// clock's floor) give theirs back within moments.
		for wait := time.Now().Add(5 * time.Second); teststore.InUse(st) > 0; time.Sleep(time.Millisecond) {
			if time.Now().After(wait) {
				t.Fatalf("%s %s %q → %d, and %d connections still taken", method, path, body, rec.Code, teststore.InUse(st))
			}
		}
		if rec.Code >= 400 {
			var e struct{ Code, Message string }
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code == "" || e.Message == "" {
				t.Fatalf("%s %s → %d with a body that is not a Cosmos error: %s", method, path, rec.Code, rec.Body)
			}
		}
	})
}

func TestErrorsAreCosmosShaped(t *testing.T) {
	h := newTestHandler(t)
	cases := []struct {
		method, path, body, pk string
		status                 int
	}{
		{"GET", "/dbs/db/colls/c/docs/x", "", `["a"]`, http.StatusOK},
		{"GET", "/dbs/db/colls/c/docs/x", "", `["b"]`, http.StatusNotFound},
		{"POST", "/dbs/db/colls/c/docs", `{"id":"z","pk":"a","ttl":0}`, `["a"]`, http.StatusBadRequest},
		{"POST", "/dbs/db/colls/c/docs", `{"query":"SELECT FROM"}`, "", http.StatusBadRequest},
		{"DELETE", "/dbs/db/colls/c/docs/x", "", `["a"]`, http.StatusNoContent},
	}
	for _, c := range cases {
		hdr := map[string]string{"x-ms-documentdb-partitionkey": c.pk}
		if strings.Contains(c.body, "query") {
			hdr["Content-Type"] = "application/query+json"
		}
		rec := serve(h, c.method, c.path, c.body, hdr)
		if rec.Code != c.status {
			t.Errorf("%s %s %s: %d, want %d: %s", c.method, c.path, c.body, rec.Code, c.status, rec.Body)
		}
		if headerValue(rec.Header(), "x-ms-request-charge") == "" || headerValue(rec.Header(), "x-ms-activity-id") == "" {
			t.Errorf("%s %s: charge or activity id missing", c.method, c.path)
		}
	}
}
