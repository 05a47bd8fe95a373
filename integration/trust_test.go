package integration

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/server"
)

// What a key or token may do beyond the resources it signs for: a reader
// with the read-only key gets no resource token (one signed with the
// read-write key, which of mode All writes); a token confined to a
// partition key writes no script (scripts run in every partition); an
// Entra ID token works with items and runs procedures but manages nothing
// (the service's role-based access: no database, container, throughput,
// script, user or permission is written with one).
func TestWhatKeysAndTokensReach(t *testing.T) {
	ro := base64.StdEncoding.EncodeToString([]byte("a read-only key for the trust tests"))
	e := start(t, func(cfg *server.Config) { cfg.ReadOnlyKeys = []string{ro} })
	e.database("tdb")
	expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/colls", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`), nil), 201, "container")
	expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/colls/c/sprocs", []byte(`{"id":"sp","body":"function () { getContext().getResponse().setBody(1) }"}`), nil), 201, "procedure")
	expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/users", []byte(`{"id":"u"}`), nil), 201, "user")
	perm := expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/users/u/permissions",
		[]byte(`{"id":"p","permissionMode":"All","resource":"dbs/tdb/colls/c","resourcePartitionKey":["p"]}`), nil), 201, "permission")
	if perm["_token"] == nil {
		t.Fatal("the read-write key's permission create carried no token")
	}

	// The read-only key reads permissions, without their tokens.
	for _, path := range []string{"/dbs/tdb/users/u/permissions/p", "/dbs/tdb/users/u/permissions"} {
		date := time.Now().UTC().Format(http.TimeFormat)
		typ, link := resourceOf(path)
		r := e.do(http.MethodGet, path, nil, map[string]string{"x-ms-date": date, "Authorization": signature(http.MethodGet, typ, link, date, ro)})
		if r.status != http.StatusOK || strings.Contains(string(r.body), "_token") {
			t.Errorf("GET %s with the read-only key: %d %s, want 200 without a token", path, r.status, r.body)
		}
	}

	// A token for partition key ["p"] runs the procedure there and writes
	// items there, but writes no script.
	tok := url.QueryEscape(perm["_token"].(string))
	pk := `["p"]`
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{http.MethodPost, "/dbs/tdb/colls/c/sprocs/sp", `[]`, 200},
		{http.MethodPost, "/dbs/tdb/colls/c/docs", `{"id":"a","pk":"p"}`, 201},
		{http.MethodPost, "/dbs/tdb/colls/c/sprocs", `{"id":"planted","body":"function () {}"}`, 403},
		{http.MethodPut, "/dbs/tdb/colls/c/sprocs/sp", `{"id":"sp","body":"function () { getContext().getResponse().setBody(2) }"}`, 403},
		{http.MethodPost, "/dbs/tdb/colls/c/triggers", `{"id":"t","body":"function () {}","triggerType":"Pre","triggerOperation":"All"}`, 403},
		{http.MethodPost, "/dbs/tdb/colls/c/udfs", `{"id":"f","body":"function () {}"}`, 403},
		{http.MethodDelete, "/dbs/tdb/colls/c/sprocs/sp", ``, 403},
	} {
		r := e.do(c.method, c.path, []byte(c.body), map[string]string{"Authorization": tok, "x-ms-date": "", "x-ms-documentdb-partitionkey": pk})
		if r.status != c.want {
			t.Errorf("%s %s with a token for one partition key: %d %s, want %d", c.method, c.path, r.status, r.body, c.want)
		}
	}

	// An Entra ID token (the emulator's form: the key in place of a
	// signature).
	aad := url.QueryEscape("type=aad&ver=1.0&sig=" + keyToken(emulatorKey, time.Now()))
	offers := expectJSON(t, e.do(http.MethodGet, "/offers", nil, nil), 200, "offers")["Offers"].([]any)
	if len(offers) == 0 {
		t.Fatal("no offer to replace")
	}
	offer := offers[0].(map[string]any)
	offer["content"] = map[string]any{"offerThroughput": 10000}
	offerBody, _ := json.Marshal(offer)
	for _, c := range []struct {
		method, path, body string
		headers            map[string]string
		want               int
	}{
		{http.MethodGet, "/dbs/tdb/colls/c", ``, nil, 200},
		{http.MethodPost, "/dbs/tdb/colls/c/docs", `{"id":"b","pk":"p"}`, nil, 201},
		{http.MethodPost, "/dbs/tdb/colls/c/docs", `{"query":"SELECT * FROM c"}`, map[string]string{"x-ms-documentdb-isquery": "true", "Content-Type": "application/query+json"}, 200},
		{http.MethodPost, "/dbs/tdb/colls/c/sprocs/sp", `[]`, nil, 200},
		{http.MethodPost, "/dbs", `{"id":"other"}`, nil, 403},
		{http.MethodPost, "/dbs/tdb/colls/c/sprocs", `{"id":"planted","body":"function () {}"}`, nil, 403},
		{http.MethodPost, "/dbs/tdb/colls/c/triggers", `{"id":"t","body":"function () {}","triggerType":"Pre","triggerOperation":"All"}`, nil, 403},
		{http.MethodPost, "/dbs/tdb/users", `{"id":"v"}`, nil, 403},
		{http.MethodPost, "/dbs/tdb/users/u/permissions", `{"id":"q","permissionMode":"All","resource":"dbs/tdb/colls/c"}`, nil, 403},
		{http.MethodPut, "/offers/" + offer["id"].(string), string(offerBody), nil, 403},
	} {
		h := map[string]string{"Authorization": aad, "x-ms-documentdb-partitionkey": pk}
		for k, v := range c.headers {
			h[k] = v
		}
		r := e.do(c.method, c.path, []byte(c.body), h)
		if r.status != c.want {
			t.Errorf("%s %s with an Entra ID token: %d %s, want %d", c.method, c.path, r.status, r.body, c.want)
		}
	}
	if got := expectJSON(t, e.do(http.MethodGet, "/offers", nil, nil), 200, "offers"); strings.Contains(string(mustJSON(t, got)), `"offerThroughput":10000`) {
		t.Error("an Entra ID token changed the throughput")
	}
}
