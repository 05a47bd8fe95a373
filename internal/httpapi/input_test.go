package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/auth"
)

// wantCosmosError checks that rec is an error with status and a
// Cosmos-shaped body.
func wantCosmosError(t *testing.T, rec interface {
	Result() *http.Response
}, body []byte, status int, what string) {
	t.Helper()
	if got := rec.Result().StatusCode; got != status {
		t.Fatalf("%s: status %d, want %d: %s", what, got, status, body)
	}
	var e struct{ Code, Message string }
	if err := json.Unmarshal(body, &e); err != nil || e.Code == "" || e.Message == "" {
		t.Fatalf("%s: body is not a Cosmos error: %s", what, body)
	}
	if strings.ContainsRune(e.Message, 0) {
		t.Fatalf("%s: the message carries a raw NUL: %q", what, e.Message)
	}
}

// Bytes that are not UTF-8 are refused, never replaced with U+FFFD and
// stored.
func TestInvalidUTF8IsRefused(t *testing.T) {
	h := newTestHandler(t)
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}
	for _, body := range []string{
		"{\"id\":\"u1\",\"pk\":\"a\",\"s\":\"\xff\"}",
		"{\"id\":\"u1\",\"pk\":\"a\",\"s\":\"ok \xc3\"}",
		"{\"id\":\"u1\",\"pk\":\"a\",\"s\":\"esc\\n \xed\xa0\x80\"}", // an encoded surrogate, after an escape
		"{\"id\":\"u1\",\"pk\":\"a\",\"\xfe\":1}",
		"{\"id\":\"u1\xff\",\"pk\":\"a\"}",
	} {
		rec := serve(h, "POST", "/dbs/db/colls/c/docs", body, pk)
		wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusBadRequest, "create "+strings.ToValidUTF8(body, "?"))
	}
	if rec := serve(h, "GET", "/dbs/db/colls/c/docs/u1", "", pk); rec.Code != http.StatusNotFound {
		t.Fatalf("an item was stored: %d %s", rec.Code, rec.Body)
	}
	q := map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true",
		"x-ms-documentdb-query-enablecrosspartition": "true"}
	rec := serve(h, "POST", "/dbs/db/colls/c/docs", "{\"query\":\"SELECT * FROM c WHERE c.s = '\xff'\"}", q)
	wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusBadRequest, "query")
	rec = serve(h, "PATCH", "/dbs/db/colls/c/docs/x", "[{\"op\":\"set\",\"path\":\"/s\",\"value\":\"\xff\"}]", pk)
	wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusBadRequest, "patch")
}

// An id with a NUL is refused on every path that names a new item or
// resource. The characters the service's documentation restricts ('/',
// '\\', '?', '#') and other control characters are accepted at create, as
// the service's gateway accepts them (the official Go SDK's emulator suite
// expects 201 for each).
func TestIDWithNULIsRefused(t *testing.T) {
	h := newTestHandler(t)
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}
	upsert := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`, "x-ms-documentdb-is-upsert": "true"}
	batch := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`, "x-ms-cosmos-is-batch-request": "true",
		"x-ms-cosmos-batch-atomic": "true", "Content-Type": "application/json"}
	for _, id := range []string{`a\u0000b`, `\u0000`, `ab\u0000`} {
		body := `{"id":"` + id + `","pk":"a"}`
		rec := serve(h, "POST", "/dbs/db/colls/c/docs", body, pk)
		wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusBadRequest, "create "+id)
		rec = serve(h, "POST", "/dbs/db/colls/c/docs", body, upsert)
		wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusBadRequest, "upsert "+id)
		rec = serve(h, "PUT", "/dbs/db/colls/c/docs/x", body, pk)
		if rec.Code < 400 {
			t.Fatalf("replace with id %s: %d %s", id, rec.Code, rec.Body)
		}
		rec = serve(h, "POST", "/dbs/db/colls/c/docs", `[{"operationType":"Create","resourceBody":`+body+`}]`, batch)
		if rec.Code == http.StatusOK && !strings.Contains(rec.Body.String(), `"statusCode":400`) {
			t.Fatalf("batch create with id %s: %d %s", id, rec.Code, rec.Body)
		}
		rec = serve(h, "POST", "/dbs", `{"id":"`+id+`"}`, nil)
		wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusBadRequest, "database "+id)
		rec = serve(h, "POST", "/dbs/db/colls", `{"id":"`+id+`","partitionKey":{"paths":["/pk"]}}`, nil)
		wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusBadRequest, "container "+id)
	}
	rec := serve(h, "GET", "/dbs/db/colls/c/docs", "", map[string]string{"A-IM": "Incremental Feed"})
	if strings.Contains(rec.Body.String(), `\u0000`) {
		t.Fatalf("an item with a NUL in its id was stored: %s", rec.Body)
	}
	for _, id := range []string{"a b", "a/b", `a\\b`, "a?b", "a#b", `a\tb`, `a\rb`, `a\nb`, `a\u0001b`, "ü", "a%00b"} {
		rec := serve(h, "POST", "/dbs/db/colls/c/docs", `{"id":"`+id+`","pk":"a"}`, pk)
		if rec.Code != http.StatusCreated {
			t.Fatalf("create %q: %d %s", id, rec.Code, rec.Body)
		}
	}
}

// An increment whose result leaves the range of a double is refused and
// the item is left as it was; an integer past 64 bits widens to a double.
func TestIncrementOverflow(t *testing.T) {
	h := newTestHandler(t)
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}
	rec := serve(h, "POST", "/dbs/db/colls/c/docs", `{"id":"big","pk":"a","f":1.5e308,"i":9223372036854775807}`, pk)
	if rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for _, p := range []string{
		`[{"op":"incr","path":"/f","value":1.5e308}]`,
		`[{"op":"incr","path":"/f","value":-1e308},{"op":"incr","path":"/f","value":-1.7e308},{"op":"incr","path":"/f","value":-1.7e308}]`,
	} {
		rec = serve(h, "PATCH", "/dbs/db/colls/c/docs/big", p, pk)
		wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusBadRequest, "patch "+p)
	}
	rec = serve(h, "GET", "/dbs/db/colls/c/docs/big", "", pk)
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got["f"] != 1.5e308 {
		t.Fatalf("after refused patches: %s", rec.Body)
	}
	rec = serve(h, "PATCH", "/dbs/db/colls/c/docs/big", `[{"op":"incr","path":"/i","value":1}]`, pk)
	if rec.Code != http.StatusOK {
		t.Fatalf("int64 overflow: %d %s", rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got["i"] != 9223372036854775808.0 {
		t.Fatalf("int64 overflow stored %v: %s", got["i"], rec.Body)
	}
}

// A change feed continuation at or beyond the container's last LSN, up
// to the largest one, has nothing after it: 304 with the etag kept, never
// a replay of the feed from the start.
func TestChangeFeedContinuationBeyondTheEnd(t *testing.T) {
	h := newTestHandler(t)
	for _, etag := range []string{`"18446744073709551615"`, `18446744073709551615`, `"18446744073709551614"`, `"1000"`} {
		rec := serve(h, "GET", "/dbs/db/colls/c/docs", "", map[string]string{"A-IM": "Incremental Feed", "If-None-Match": etag})
		if rec.Code != http.StatusNotModified {
			t.Fatalf("If-None-Match %s: %d %s", etag, rec.Code, rec.Body)
		}
		if got, want := headerValue(rec.Header(), "etag"), `"`+strings.Trim(etag, `"`)+`"`; got != want {
			t.Fatalf("If-None-Match %s: etag %s, want %s", etag, got, want)
		}
	}
	for _, etag := range []string{`"18446744073709551616"`, `"-1"`, `"abc"`} {
		rec := serve(h, "GET", "/dbs/db/colls/c/docs", "", map[string]string{"A-IM": "Incremental Feed", "If-None-Match": etag})
		wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusBadRequest, "If-None-Match "+etag)
	}
	// From the start the feed does hold the item.
	rec := serve(h, "GET", "/dbs/db/colls/c/docs", "", map[string]string{"A-IM": "Incremental Feed"})
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"id":"x"`) {
		t.Fatalf("from the start: %d %s", rec.Code, rec.Body)
	}
}

// A client of an API version before 2018-06-18 (the documentdb 1.x SDK
// sends 2017-11-15) reads session tokens in the simple form
// {range}:{globalLSN}, as the service sent them to it; later versions get
// the vector form {range}:{version}#{globalLSN}.
func TestSessionTokenFollowsAPIVersion(t *testing.T) {
	h := newTestHandler(t)
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}
	for i, tc := range []struct {
		version string
		want    string // a pattern
	}{
		{"", `^\d+:-1#\d+$`},
		{"2020-07-15", `^\d+:-1#\d+$`},
		{"2018-06-18", `^\d+:-1#\d+$`},
		{"2017-11-15", `^\d+:\d+$`},
		{"2015-12-16", `^\d+:\d+$`},
	} {
		headers := map[string]string{"x-ms-version": tc.version}
		for k, v := range pk {
			headers[k] = v
		}
		id := "s" + strconv.Itoa(i)
		for _, rec := range []*httptest.ResponseRecorder{
			serve(h, "POST", "/dbs/db/colls/c/docs", `{"id":"`+id+`","pk":"a"}`, headers),
			serve(h, "GET", "/dbs/db/colls/c/docs/"+id, "", headers),
			serve(h, "GET", "/dbs/db/colls/c", "", map[string]string{"x-ms-version": tc.version}),
		} {
			if rec.Code/100 != 2 {
				t.Fatalf("version %q: %d %s", tc.version, rec.Code, rec.Body)
			}
			if tok := headerValue(rec.Result().Header, "x-ms-session-token"); !regexp.MustCompile(tc.want).MatchString(tok) {
				t.Errorf("version %q: session token %q, want %s", tc.version, tok, tc.want)
			}
		}
	}
	for in, want := range map[string]string{
		"0:-1#12":           "0:12",
		"1:-1#7#1=5,2:-1#9": "1:7,2:9",
		"0:12":              "0:12",
		"garbage":           "garbage",
	} {
		if got := simpleSessionToken(in); got != want {
			t.Errorf("simpleSessionToken(%q) = %q, want %q", in, got, want)
		}
	}
}

// An x-ms-version that is not a date is refused with the service's 400; a
// date the service would not know yet is served as the newest.
func TestAPIVersionIsChecked(t *testing.T) {
	h := newTestHandler(t)
	for v, want := range map[string]int{"garbage": 400, "2020-13-01": 400, "1.0": 400, "2020-07-15": 200, "2099-01-01": 200, "": 200} {
		rec := serve(h, "GET", "/dbs/db/colls/c", "", map[string]string{"x-ms-version": v})
		if rec.Code != want || (want == 400 && !strings.Contains(rec.Body.String(), "Invalid API version")) {
			t.Errorf("x-ms-version %q: %d %s, want %d", v, rec.Code, rec.Body, want)
		}
	}
}

// An x-ms-indexing-directive must name a directive.
func TestIndexingDirectiveIsChecked(t *testing.T) {
	h := newTestHandler(t)
	for v, want := range map[string]int{"Bogus": 400, "Include": 200, "exclude": 200, "Default": 200, "": 200} {
		rec := serve(h, "GET", "/dbs/db/colls/c", "", map[string]string{"x-ms-indexing-directive": v})
		if rec.Code != want || (want == 400 && !strings.Contains(rec.Body.String(), "x-ms-indexing-directive")) {
			t.Errorf("x-ms-indexing-directive %q: %d %s, want %d", v, rec.Code, rec.Body, want)
		}
	}
}

// stalledBody gives some bytes, then fails as a connection whose read
// deadline passed.
type stalledBody struct{ sent bool }

func (b *stalledBody) Read(p []byte) (int, error) {
	if b.sent {
		return 0, os.ErrDeadlineExceeded
	}
	b.sent = true
	return copy(p, `{"id":"x","pk":`), nil
}

// A body that stops coming is a 408, which the SDKs retry, not a 400.
func TestStalledBodyIsATimeout(t *testing.T) {
	h := newTestHandler(t)
	rec := serveBody(h, "POST", "/dbs/db/colls/c/docs", &stalledBody{}, map[string]string{"x-ms-documentdb-partitionkey": `["p"]`})
	if rec.Code != http.StatusRequestTimeout || !strings.Contains(rec.Body.String(), `"code":"RequestTimeout"`) {
		t.Errorf("a stalled body: %d %s, want 408", rec.Code, rec.Body)
	}
}

// A create, upsert or replace on a container with a partition key must
// carry the key header, as the service requires; without one it is a 400
// and nothing is written, whatever the body's key.
func TestItemWriteNeedsTheKeyHeader(t *testing.T) {
	h := newTestHandler(t)
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}
	if rec := serve(h, "POST", "/dbs/db/colls/c/docs", `{"id":"k1","pk":"a"}`, pk); rec.Code != http.StatusCreated {
		t.Fatalf("create with the header: %d %s", rec.Code, rec.Body)
	}
	upsert := map[string]string{"x-ms-documentdb-is-upsert": "true"}
	for _, tc := range []struct {
		name, method, path, body string
		headers                  map[string]string
	}{
		{"create", "POST", "/dbs/db/colls/c/docs", `{"id":"k2","pk":"a"}`, nil},
		{"create with an object key", "POST", "/dbs/db/colls/c/docs", `{"id":"k3","pk":{"x":1}}`, nil},
		{"upsert", "POST", "/dbs/db/colls/c/docs", `{"id":"k1","pk":"a","v":2}`, upsert},
		{"replace", "PUT", "/dbs/db/colls/c/docs/k1", `{"id":"k1","pk":"a","v":3}`, nil},
	} {
		rec := serve(h, tc.method, tc.path, tc.body, tc.headers)
		wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusBadRequest, tc.name)
	}
	for id, want := range map[string]int{"k1": http.StatusOK, "k2": http.StatusNotFound} {
		if rec := serve(h, "GET", "/dbs/db/colls/c/docs/"+id, "", pk); rec.Code != want || strings.Contains(rec.Body.String(), `"v"`) {
			t.Errorf("read %s: %d %s, want %d and the item as first written", id, rec.Code, rec.Body, want)
		}
	}
}

// A partition key value longer than 2,048 bytes is refused on a container
// whose keys hash by version 2, as the service's limits say; version 1
// hashes the first 100 bytes and takes it.
func TestPartitionKeyValueSize(t *testing.T) {
	h := newTestHandler(t)
	if rec := serve(h, "POST", "/dbs/db/colls", `{"id":"v2","partitionKey":{"paths":["/pk"],"version":2}}`, nil); rec.Code != http.StatusCreated {
		t.Fatalf("create the container: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		coll string
		size int
		want int
	}{{"v2", 2048, http.StatusCreated}, {"v2", 2049, http.StatusBadRequest}, {"c", 2049, http.StatusCreated}} {
		v := strings.Repeat("k", tc.size)
		rec := serve(h, "POST", "/dbs/db/colls/"+tc.coll+"/docs", `{"id":"s","pk":"`+v+`"}`, map[string]string{"x-ms-documentdb-partitionkey": `["` + v + `"]`})
		if rec.Code != tc.want {
			t.Errorf("a key of %d bytes in %s: %d, want %d", tc.size, tc.coll, rec.Code, tc.want)
		}
	}
}

// A server without TLS has no certificate to give: the explorer's link to
// it answers 404, not an empty file.
func TestCertificateWithoutTLS(t *testing.T) {
	h := newTestHandler(t)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "https://localhost/_explorer/emulator.pem", nil))
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), `"code":"NotFound"`) {
		t.Fatalf("GET /_explorer/emulator.pem without a certificate: %d %s", rec.Code, rec.Body)
	}
}

// A parameter named twice is refused, as the service refuses it, rather
// than one of its values winning.
func TestDuplicateParameterIsRefused(t *testing.T) {
	h := newTestHandler(t)
	q := map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true",
		"x-ms-documentdb-query-enablecrosspartition": "true"}
	rec := serve(h, "POST", "/dbs/db/colls/c/docs",
		`{"query":"SELECT * FROM c WHERE c.n = @n","parameters":[{"name":"@n","value":1},{"name":"@n","value":2}]}`, q)
	wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusBadRequest, "a parameter named twice")
	if !strings.Contains(rec.Body.String(), "duplicate parameter name '@n'") {
		t.Errorf("the message does not name the parameter: %s", rec.Body)
	}
	rec = serve(h, "POST", "/dbs/db/colls/c/docs",
		`{"query":"SELECT * FROM c WHERE c.n = @n AND c.m = @m","parameters":[{"name":"@n","value":1},{"name":"@m","value":2}]}`, q)
	if rec.Code != http.StatusOK {
		t.Errorf("two parameters: %d %s", rec.Code, rec.Body)
	}
}

// A query's syntax error carries the service's code and the location of
// the offending text, which editors underline.
func TestQueryErrorLocation(t *testing.T) {
	h := newTestHandler(t)
	q := map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true",
		"x-ms-documentdb-query-enablecrosspartition": "true"}
	for _, tc := range []struct{ query, want string }{
		{"SELECT * FROM c WHERE", `"location":{"start":21,"end":21},"code":"SC1002","message":"Syntax error, unexpected end-of-file."`},
		{"SELECT * FROM c WHERE c.a = #", `"location":{"start":28,"end":29},"code":"SC1001","message":"Syntax error, incorrect syntax near '#'."`},
		{"SELECT * FORM c", `"location":{"start":9,"end":13},"code":"SC1001"`},
	} {
		body, _ := json.Marshal(map[string]string{"query": tc.query})
		rec := serve(h, "POST", "/dbs/db/colls/c/docs", string(body), q)
		wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusBadRequest, tc.query)
		var e struct{ Message string }
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: %s, want it to hold %s", tc.query, e.Message, tc.want)
		}
	}
}

// A session token that is not one is refused, as the service refuses it;
// every form the SDKs send back is accepted.
func TestSessionTokenIsChecked(t *testing.T) {
	h := newTestHandler(t)
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}
	if rec := serve(h, "POST", "/dbs/db/colls/c/docs", `{"id":"s1","pk":"a"}`, pk); rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		token string
		ok    bool
	}{
		{"0:-1#12", true},
		{"0:12", true},
		{"12", true},
		{"0:1#12#1=20#2=-1", true},
		{"0:-1#3,1:-1#7, 2:-1#9", true},
		{"invalidtoken", false},
		{"0:-1#abc", false},
		{":::", false},
		{"0:", false},
		{":12", false},
		{"0:1#12#region", false},
		{"0:-1#3,", false},
	} {
		hdr := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`, "x-ms-session-token": tc.token}
		rec := serve(h, "GET", "/dbs/db/colls/c/docs/s1", "", hdr)
		switch {
		case tc.ok && rec.Code != http.StatusOK:
			t.Errorf("token %q: %d %s", tc.token, rec.Code, rec.Body)
		case !tc.ok:
			wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusBadRequest, "token "+tc.token)
			if !strings.Contains(rec.Body.String(), "session token provided") {
				t.Errorf("token %q: %s", tc.token, rec.Body)
			}
		}
	}
}

// countingBody serves n bytes of a JSON string and then stalls, counting
// what was read.
type countingBody struct{ n, read int }

func (b *countingBody) Read(p []byte) (int, error) {
	if b.read >= b.n {
		return 0, os.ErrDeadlineExceeded
	}
	k := min(len(p), b.n-b.read)
	for i := range p[:k] {
		p[i] = 'x'
	}
	b.read += k
	return k, nil
}

// A body over the limit is refused with a 413. What is left of it is read
// first, so the client sees the reply, when it can be: not when the
// declared length is past what can be read, where reading would wait out
// the read timeout for bytes a client that declared too much never sends.
func TestOversizedBodyIsRefusedWithoutWaiting(t *testing.T) {
	h := newTestHandler(t)
	for _, tc := range []struct {
		declared int64
		drained  bool
	}{
		{3 << 20, true},
		{1 << 30, false},
	} {
		body := &countingBody{n: 3 << 20}
		req := httptest.NewRequest("POST", "https://localhost/dbs/db/colls/c/docs", body)
		req.ContentLength = tc.declared
		date := auth.FormatDate(time.Now())
		key, _ := auth.DecodeKey(auth.EmulatorKey)
		req.Header.Set("x-ms-date", date)
		req.Header.Set("Authorization", auth.MasterHeader("POST", "docs", "dbs/db/colls/c", date, key))
		req.Header.Set("x-ms-documentdb-partitionkey", `["p"]`)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusRequestEntityTooLarge, "an oversized body")
		if got := body.read == body.n; got != tc.drained {
			t.Errorf("declared %d: read %d of %d bytes sent; want it read whole %v", tc.declared, body.read, body.n, tc.drained)
		}
	}
}
