package integration

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// TestResourceTokens issues resource tokens for permissions and uses them
// as the SDKs do (the whole token, URL-encoded, as Authorization): each
// allows exactly its grant on every path, and expired, altered and revoked
// tokens are refused.
func TestResourceTokens(t *testing.T) {
	clk := clock.NewManual(time.Now())
	e := start(t, withManualClock(clk))
	e.database("tdb")
	pkp := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/colls", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`), nil), 201, "container")
	expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/colls", []byte(`{"id":"other","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`), nil), 201, "container")
	expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/colls/c/docs", []byte(`{"id":"a","pk":"p"}`), pkp), 201, "item a")
	expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/colls/c/docs", []byte(`{"id":"b","pk":"q"}`), map[string]string{"x-ms-documentdb-partitionkey": `["q"]`}), 201, "item b")
	expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/colls/c/docs", []byte(`{"id":"users","pk":"p"}`), pkp), 201, "item users")
	expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/users", []byte(`{"id":"u"}`), nil), 201, "user")
	expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/users", []byte(`{"id":"v"}`), nil), 201, "user")
	token := func(user, id, body string) string {
		p := expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/users/"+user+"/permissions", []byte(body), nil), 201, "permission "+id)
		tok, _ := p["_token"].(string)
		if !strings.HasPrefix(tok, "type=resource&ver=1&sig=") {
			t.Fatalf("permission %s has no resource token: %v", id, p)
		}
		return tok
	}
	read := token("u", "read", `{"id":"read","permissionMode":"Read","resource":"dbs/tdb/colls/c"}`)
	part := token("v", "part", `{"id":"part","permissionMode":"All","resource":"dbs/tdb/colls/c","resourcePartitionKey":["p"]}`)
	item := token("u", "item", `{"id":"item","permissionMode":"All","resource":"dbs/tdb/colls/c/docs/a"}`)
	expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/users", []byte(`{"id":"w"}`), nil), 201, "user")
	all := token("w", "all", `{"id":"all","permissionMode":"All","resource":"dbs/tdb/colls/c"}`)
	expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/colls/c/sprocs", []byte(`{"id":"sp","body":"function () { getContext().getResponse().setBody(1) }"}`), nil), 201, "procedure")
	sproc := func(body string) string {
		return `{"id":"sp2","body":"function () { getContext().getResponse().setBody(` + body + `) }"}`
	}

	type call struct {
		method, path, body string
		headers            map[string]string
		status             int
	}
	query := func(pk string) map[string]string {
		h := map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true",
			"x-ms-documentdb-query-enablecrosspartition": "true"}
		if pk != "" {
			h["x-ms-documentdb-partitionkey"] = pk
		}
		return h
	}
	batch := func(pk string) map[string]string {
		return map[string]string{"x-ms-cosmos-is-batch-request": "true", "x-ms-cosmos-batch-atomic": "true", "x-ms-documentdb-partitionkey": pk}
	}
	run := func(name, tok string, calls []call) {
		t.Helper()
		for _, c := range calls {
			h := map[string]string{"Authorization": url.QueryEscape(tok)}
			for k, v := range c.headers {
				h[k] = v
			}
			r := e.do(c.method, c.path, []byte(c.body), h)
			if r.status != c.status {
				t.Errorf("%s: %s %s: status %d, want %d: %s", name, c.method, c.path, r.status, c.status, r.body)
			}
		}
	}
	run("read token", read, []call{
		{"GET", "/", "", nil, 200},
		{"GET", "/dbs/tdb", "", nil, 200},
		{"GET", "/dbs/tdb/colls/c", "", nil, 200},
		{"GET", "/dbs/tdb/colls/c/pkranges", "", nil, 200},
		{"GET", "/dbs/tdb/colls/c/docs/a", "", pkp, 200},
		{"GET", "/dbs/tdb/colls/c/docs/users", "", pkp, 200},
		{"GET", "/dbs/tdb/colls/c/docs", "", nil, 200},
		{"GET", "/dbs/tdb/colls/c/docs", "", map[string]string{"A-IM": "Incremental Feed"}, 200},
		{"POST", "/dbs/tdb/colls/c/docs", `{"query":"SELECT * FROM c"}`, query(""), 200},
		{"POST", "/dbs/tdb/colls/c/docs", `{"id":"n","pk":"p"}`, pkp, 403},
		{"PUT", "/dbs/tdb/colls/c/docs/a", `{"id":"a","pk":"p"}`, pkp, 403},
		{"PATCH", "/dbs/tdb/colls/c/docs/a", `{"operations":[{"op":"add","path":"/x","value":1}]}`, pkp, 403},
		{"DELETE", "/dbs/tdb/colls/c/docs/a", "", pkp, 403},
		{"POST", "/dbs/tdb/colls/c/docs", `[{"operationType":"Read","id":"a"}]`, batch(`["p"]`), 403},
		{"GET", "/dbs", "", nil, 403},
		{"GET", "/dbs/tdb/colls", "", nil, 403},
		{"GET", "/dbs/tdb/colls/other", "", nil, 403},
		{"GET", "/dbs/tdb/colls/other/docs", "", nil, 403},
		{"GET", "/dbs/tdb/users", "", nil, 403},
		{"GET", "/dbs/tdb/users/u/permissions/read", "", nil, 403},
		{"DELETE", "/dbs/tdb/colls/c", "", nil, 403},
		{"GET", "/offers", "", nil, 403},
	})
	run("partition token", part, []call{
		{"GET", "/dbs/tdb/colls/c/docs/a", "", pkp, 200},
		{"GET", "/dbs/tdb/colls/c/docs/b", "", map[string]string{"x-ms-documentdb-partitionkey": `["q"]`}, 403},
		{"POST", "/dbs/tdb/colls/c/docs", `{"id":"n","pk":"p"}`, pkp, 201},
		{"POST", "/dbs/tdb/colls/c/docs", `{"id":"m","pk":"q"}`, map[string]string{"x-ms-documentdb-partitionkey": `["q"]`}, 403},
		{"PATCH", "/dbs/tdb/colls/c/docs/a", `{"operations":[{"op":"add","path":"/x","value":1}]}`, pkp, 200},
		{"POST", "/dbs/tdb/colls/c/docs", `{"query":"SELECT * FROM c"}`, query(""), 403},
		{"POST", "/dbs/tdb/colls/c/docs", `{"query":"SELECT * FROM c"}`, query(`["p"]`), 200},
		{"POST", "/dbs/tdb/colls/c/docs", `{"query":"SELECT * FROM c"}`, query(`["q"]`), 403},
		{"GET", "/dbs/tdb/colls/c/docs", "", nil, 403},
		{"GET", "/dbs/tdb/colls/c/docs", "", map[string]string{"A-IM": "Incremental Feed"}, 403},
		{"GET", "/dbs/tdb/colls/c/docs", "", map[string]string{"A-IM": "Incremental Feed", "x-ms-documentdb-partitionkey": `["p"]`}, 200},
		{"POST", "/dbs/tdb/colls/c/docs", `[{"operationType":"Create","resourceBody":{"id":"o","pk":"p"}}]`, batch(`["p"]`), 200},
		{"POST", "/dbs/tdb/colls/c/docs", `[{"operationType":"Create","resourceBody":{"id":"o","pk":"q"}}]`, batch(`["q"]`), 403},
		{"POST", "/dbs/tdb/colls/c/docs", `[{"operationType":"Create","partitionKey":"[\"q\"]","resourceBody":{"id":"o2","pk":"q"}}]`,
			map[string]string{"x-ms-cosmos-is-batch-request": "true", "x-ms-cosmos-batch-atomic": "false", "x-ms-documentdb-partitionkey": `["p"]`}, 403},
		{"POST", "/dbs/tdb/colls/c/sprocs/sp", `[]`, pkp, 200},
		{"POST", "/dbs/tdb/colls/c/sprocs/sp", `[]`, map[string]string{"x-ms-documentdb-partitionkey": `["q"]`}, 403},
		{"POST", "/dbs/tdb/colls/c/sprocs", sproc("2"), nil, 403},
	})
	run("item token", item, []call{
		{"GET", "/dbs/tdb/colls/c/docs/a", "", pkp, 200},
		{"PUT", "/dbs/tdb/colls/c/docs/a", `{"id":"a","pk":"p","v":2}`, pkp, 200},
		{"GET", "/dbs/tdb/colls/c", "", nil, 200},
		{"GET", "/dbs/tdb/colls/c/docs/b", "", map[string]string{"x-ms-documentdb-partitionkey": `["q"]`}, 403},
		{"GET", "/dbs/tdb/colls/c/docs", "", nil, 403},
		{"POST", "/dbs/tdb/colls/c/docs", `{"query":"SELECT * FROM c"}`, query(`["p"]`), 403},
		{"POST", "/dbs/tdb/colls/c/docs", `{"id":"z","pk":"p"}`, pkp, 403},
		{"POST", "/dbs/tdb/colls/c/sprocs/sp", `[]`, pkp, 403},
		{"POST", "/dbs/tdb/colls/c/sprocs", sproc("2"), nil, 403},
		{"GET", "/dbs/tdb/colls/c/sprocs/sp", "", nil, 403},
	})
	asQuery := func(h map[string]string) map[string]string {
		out := map[string]string{"x-ms-documentdb-isquery": "true", "Content-Type": "application/query+json"}
		for k, v := range h {
			out[k] = v
		}
		return out
	}
	run("read token and scripts", read, []call{
		{"GET", "/dbs/tdb/colls/c/sprocs/sp", "", nil, 200},
		{"POST", "/dbs/tdb/colls/c/sprocs/sp", `[]`, pkp, 403},
		{"POST", "/dbs/tdb/colls/c/sprocs", sproc("2"), nil, 403},
		// Query headers do not make a run or a delete a read.
		{"POST", "/dbs/tdb/colls/c/sprocs/sp", `[]`, asQuery(pkp), 403},
		{"POST", "/dbs/tdb/colls/c/operations/partitionkeydelete", ``, asQuery(pkp), 403},
	})
	// A delete by partition key is an item write: a token scoped to a
	// key may make it in that key only.
	run("partition token and a delete by partition key", part, []call{
		{"POST", "/dbs/tdb/colls/c/operations/partitionkeydelete", ``, map[string]string{"x-ms-documentdb-partitionkey": `["q"]`}, 403},
	})
	// All on the container: its stored procedures run, and its scripts
	// are written; the container itself is not.
	run("container token", all, []call{
		{"POST", "/dbs/tdb/colls/c/sprocs/sp", `[]`, pkp, 200},
		{"POST", "/dbs/tdb/colls/c/sprocs", sproc("2"), nil, 201},
		{"PUT", "/dbs/tdb/colls/c/sprocs/sp2", sproc("3"), nil, 200},
		{"DELETE", "/dbs/tdb/colls/c/sprocs/sp2", "", nil, 204},
		{"POST", "/dbs/tdb/colls/other/sprocs/sp", `[]`, pkp, 403},
		{"DELETE", "/dbs/tdb/colls/c", "", nil, 403},
	})

	// A permission on one stored procedure: with All it runs and is
	// rewritten, with Read only read; nothing else of the container is
	// reachable but what the SDKs read to address it.
	expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/users", []byte(`{"id":"x"}`), nil), 201, "user")
	expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/users", []byte(`{"id":"y"}`), nil), 201, "user")
	proc := token("x", "proc", `{"id":"proc","permissionMode":"All","resource":"dbs/tdb/colls/c/sprocs/sp"}`)
	procRead := token("y", "procRead", `{"id":"procRead","permissionMode":"Read","resource":"dbs/tdb/colls/c/sprocs/sp"}`)
	procPart := token("y", "procPart", `{"id":"procPart","permissionMode":"All","resource":"dbs/tdb/colls/c/sprocs/sp3","resourcePartitionKey":["p"]}`)
	expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/colls/c/sprocs", []byte(`{"id":"sp3","body":"function () { getContext().getResponse().setBody(3) }"}`), nil), 201, "procedure")
	run("procedure token", proc, []call{
		{"POST", "/dbs/tdb/colls/c/sprocs/sp", `[]`, pkp, 200},
		{"GET", "/dbs/tdb/colls/c/sprocs/sp", "", nil, 200},
		{"PUT", "/dbs/tdb/colls/c/sprocs/sp", `{"id":"sp","body":"function () { getContext().getResponse().setBody(1) }"}`, nil, 200},
		{"GET", "/dbs/tdb/colls/c", "", nil, 200},
		{"GET", "/dbs/tdb/colls/c/pkranges", "", nil, 200},
		{"POST", "/dbs/tdb/colls/c/sprocs/sp3", `[]`, pkp, 403},
		{"GET", "/dbs/tdb/colls/c/sprocs", "", nil, 403},
		{"POST", "/dbs/tdb/colls/c/sprocs", sproc("2"), nil, 403},
		{"GET", "/dbs/tdb/colls/c/docs/a", "", pkp, 403},
		{"POST", "/dbs/tdb/colls/c/docs", `{"id":"s","pk":"p"}`, pkp, 403},
		{"POST", "/dbs/tdb/colls/other/sprocs/sp", `[]`, pkp, 403},
	})
	run("procedure read token", procRead, []call{
		{"GET", "/dbs/tdb/colls/c/sprocs/sp", "", nil, 200},
		{"POST", "/dbs/tdb/colls/c/sprocs/sp", `[]`, pkp, 403},
		{"DELETE", "/dbs/tdb/colls/c/sprocs/sp", "", nil, 403},
	})
	run("procedure token for a partition key", procPart, []call{
		{"POST", "/dbs/tdb/colls/c/sprocs/sp3", `[]`, pkp, 200},
		{"POST", "/dbs/tdb/colls/c/sprocs/sp3", `[]`, map[string]string{"x-ms-documentdb-partitionkey": `["q"]`}, 403},
	})
	for _, res := range []string{"dbs/tdb/colls/c/sprocs", "dbs/tdb/colls/c/attachments/a", "dbs/tdb/colls/c/conflicts/a", "dbs/tdb/users/u"} {
		expectJSON(t, e.do(http.MethodPost, "/dbs/tdb/users/x/permissions", []byte(`{"id":"bad","permissionMode":"All","resource":"`+res+`"}`), nil), 400, "permission on "+res)
	}

	// Altered or forged tokens: 401.
	claims, mac, _ := strings.Cut(strings.TrimPrefix(read, "type=resource&ver=1&sig="), ".")
	raw, _ := base64.RawURLEncoding.DecodeString(claims)
	widened := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), `"p":"read"`, `"p":"part"`, 1)))
	for name, tok := range map[string]string{
		"altered claims": "type=resource&ver=1&sig=" + widened + "." + mac,
		"no mac":         "type=resource&ver=1&sig=" + claims,
		"bad mac":        "type=resource&ver=1&sig=" + claims + "." + strings.Repeat("A", len(mac)),
	} {
		run(name, tok, []call{{"GET", "/dbs/tdb/colls/c/docs/a", "", pkp, 401}})
	}

	// Revoked: deleting a permission, or replacing it, ends its tokens.
	expectJSON(t, e.do(http.MethodDelete, "/dbs/tdb/users/u/permissions/item", nil, nil), 204, "delete permission")
	run("deleted permission's token", item, []call{{"GET", "/dbs/tdb/colls/c/docs/a", "", pkp, 401}})
	expectJSON(t, e.do(http.MethodPut, "/dbs/tdb/users/v/permissions/part", []byte(`{"id":"part","permissionMode":"Read","resource":"dbs/tdb/colls/c"}`), nil), 200, "replace permission")
	run("replaced permission's token", part, []call{{"GET", "/dbs/tdb/colls/c/docs/a", "", pkp, 401}})

	// Lifetimes: 10 s to 5 h; a token stops working when it expires.
	expectJSON(t, e.do(http.MethodGet, "/dbs/tdb/users/u/permissions/read", nil, map[string]string{"x-ms-documentdb-expiry-seconds": "18001"}), 400, "lifetime too long")
	expectJSON(t, e.do(http.MethodGet, "/dbs/tdb/users/u/permissions/read", nil, map[string]string{"x-ms-documentdb-expiry-seconds": "9"}), 400, "lifetime too short")
	long := expectJSON(t, e.do(http.MethodGet, "/dbs/tdb/users/u/permissions/read", nil, map[string]string{"x-ms-documentdb-expiry-seconds": "18000"}), 200, "5 h token")["_token"].(string)
	feed := expectJSON(t, e.do(http.MethodGet, "/dbs/tdb/users/u/permissions", nil, nil), 200, "permission feed")
	for _, p := range feed["Permissions"].([]any) {
		if tok, _ := p.(map[string]any)["_token"].(string); tok == "" {
			t.Errorf("feed permission without a token: %v", p)
		}
	}
	clk.Advance(time.Hour)
	run("expired token", read, []call{{"GET", "/dbs/tdb/colls/c/docs/a", "", pkp, 403}})
	run("5 h token after an hour", long, []call{{"GET", "/dbs/tdb/colls/c/docs/a", "", pkp, 200}})
}

// TestResourceTokenOnSelfLink gives permissions on a resource's _self link,
// as the SDK samples do: the token grants what the link names, however a
// request addresses it, and nothing else; a link to nothing is refused.
func TestResourceTokenOnSelfLink(t *testing.T) {
	e := start(t)
	e.database("sdb")
	pkp := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	coll := `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`
	self := expectJSON(t, e.do(http.MethodPost, "/dbs/sdb/colls", []byte(coll), nil), 201, "container")["_self"].(string)
	expectJSON(t, e.do(http.MethodPost, "/dbs/sdb/colls", []byte(`{"id":"other","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`), nil), 201, "container")
	expectJSON(t, e.do(http.MethodPost, "/dbs/sdb/colls/c/docs", []byte(`{"id":"a","pk":"p"}`), pkp), 201, "item")
	expectJSON(t, e.do(http.MethodPost, "/dbs/sdb/colls/other/docs", []byte(`{"id":"a","pk":"p"}`), pkp), 201, "item")
	expectJSON(t, e.do(http.MethodPost, "/dbs/sdb/users", []byte(`{"id":"u"}`), nil), 201, "user")
	p := expectJSON(t, e.do(http.MethodPost, "/dbs/sdb/users/u/permissions",
		[]byte(`{"id":"bySelf","permissionMode":"All","resource":"`+self+`"}`), nil), 201, "permission on _self")
	if p["resource"] != strings.Trim(self, "/") {
		t.Errorf("resource = %v, want %q", p["resource"], self)
	}
	// A permission's rid is its user's 8 bytes and 8 more.
	if rid, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(p["_rid"].(string), "-", "/")); err != nil || len(rid) != 16 {
		t.Errorf("permission _rid %v: %d bytes, want 16 (%v)", p["_rid"], len(rid), err)
	}
	tok := p["_token"].(string)
	expectJSON(t, e.do(http.MethodPost, "/dbs/sdb/users/u/permissions",
		[]byte(`{"id":"nowhere","permissionMode":"All","resource":"dbs/AQAAAA==/colls/AQAAAJ0fgTc="}`), nil), 400, "permission on a rid link to nothing")
	get := func(tok, path string, status int) {
		t.Helper()
		r := e.do(http.MethodGet, path, nil, map[string]string{"Authorization": url.QueryEscape(tok), "x-ms-documentdb-partitionkey": `["p"]`})
		if r.status != status {
			t.Errorf("GET %s: status %d, want %d: %s", path, r.status, status, r.body)
		}
	}
	get(tok, "/dbs/sdb/colls/c/docs/a", 200)
	get(tok, "/"+strings.Trim(self, "/")+"/docs", 200)
	get(tok, "/dbs/sdb/colls/other/docs/a", 403)

	// A stored procedure's _self: the grant is the procedure, however a
	// request names it.
	sp := expectJSON(t, e.do(http.MethodPost, "/dbs/sdb/colls/c/sprocs", []byte(`{"id":"sp","body":"function () {}"}`), nil), 201, "procedure")["_self"].(string)
	p = expectJSON(t, e.do(http.MethodPost, "/dbs/sdb/users/u/permissions",
		[]byte(`{"id":"procSelf","permissionMode":"Read","resource":"`+sp+`"}`), nil), 201, "permission on a procedure's _self")
	get(p["_token"].(string), "/dbs/sdb/colls/c/sprocs/sp", 200)
	get(p["_token"].(string), "/"+strings.Trim(sp, "/"), 200)
	get(p["_token"].(string), "/dbs/sdb/colls/c/docs/a", 403)

	// An item's _self names one item: not another of the same id in
	// another partition. A permission whose resource is gone grants
	// nothing, even once a container of the same name is made again.
	item := expectJSON(t, e.do(http.MethodGet, "/dbs/sdb/colls/c/docs/a", nil, pkp), 200, "item")["_self"].(string)
	expectJSON(t, e.do(http.MethodPost, "/dbs/sdb/colls/c/docs", []byte(`{"id":"a","pk":"q"}`),
		map[string]string{"x-ms-documentdb-partitionkey": `["q"]`}), 201, "item of the same id in another partition")
	p = expectJSON(t, e.do(http.MethodPost, "/dbs/sdb/users/u/permissions",
		[]byte(`{"id":"itemSelf","permissionMode":"Read","resource":"`+item+`"}`), nil), 201, "permission on an item's _self")
	itemTok := url.QueryEscape(p["_token"].(string))
	for key, want := range map[string]int{`["p"]`: 200, `["q"]`: 403} {
		if r := e.do(http.MethodGet, "/dbs/sdb/colls/c/docs/a", nil, map[string]string{"Authorization": itemTok, "x-ms-documentdb-partitionkey": key}); r.status != want {
			t.Errorf("item token, GET docs/a in partition %s: %d %s, want %d", key, r.status, r.body, want)
		}
	}
	expectJSON(t, e.do(http.MethodDelete, "/dbs/sdb/colls/c", nil, nil), 204, "container delete")
	expectJSON(t, e.do(http.MethodPost, "/dbs/sdb/colls", []byte(coll), nil), 201, "container made again")
	expectJSON(t, e.do(http.MethodPost, "/dbs/sdb/colls/c/docs", []byte(`{"id":"a","pk":"p"}`), pkp), 201, "item in the new container")
	get(tok, "/dbs/sdb/colls/c/docs/a", 401)
	get(p["_token"].(string), "/dbs/sdb/colls/c/docs/a", 401)
}
