package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// doRid sends a request the way DocumentDB-era clients address resources
// by _rid: signed over the addressed resource's rid (for a feed, create
// or query, its parent's), lower-cased.
func (e *env) doRid(method, path, signedRid string, body []byte, headers map[string]string) rawResponse {
	e.t.Helper()
	date := time.Now().UTC().Format(http.TimeFormat)
	typ, _ := resourceOf(path)
	h := map[string]string{"x-ms-date": date, "Authorization": signature(method, typ, strings.ToLower(signedRid), date, emulatorKey)}
	for k, v := range headers {
		h[k] = v
	}
	return e.do(method, path, body, h)
}

// TestRidAddressing: every resource can be addressed by the _self link it
// returns, signed as the older SDKs sign it; the two forms are not mixed in
// one link.
func TestRidAddressing(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	for _, id := range []string{"a", "b", "c"} {
		if _, err := c.CreateItem(t.Context(), azcosmos.NewPartitionKeyString("p"), []byte(`{"id":"`+id+`","pk":"p","n":1}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	var res struct {
		ID   string `json:"id"`
		Rid  string `json:"_rid"`
		Self string `json:"_self"`
	}
	read := func(r rawResponse, what string) {
		t.Helper()
		res.ID, res.Rid, res.Self = "", "", ""
		if err := json.Unmarshal(r.body, &res); err != nil || r.status/100 != 2 {
			t.Fatalf("%s: %d %s", what, r.status, r.body)
		}
	}
	read(e.do("GET", "/dbs/db", nil, nil), "read db by name")
	dbRid, dbSelf := res.Rid, res.Self
	read(e.do("GET", "/dbs/db/colls/c", nil, nil), "read container by name")
	collRid, collSelf := res.Rid, res.Self
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	read(e.do("GET", "/dbs/db/colls/c/docs/b", nil, pk), "read item by name")
	itemRid, itemSelf := res.Rid, res.Self
	if dbSelf != "dbs/"+dbRid+"/" || collSelf != dbSelf+"colls/"+collRid+"/" || itemSelf != collSelf+"docs/"+itemRid+"/" {
		t.Fatalf("_self links %q %q %q do not nest", dbSelf, collSelf, itemSelf)
	}

	read(e.doRid("GET", "/"+dbSelf, dbRid, nil, nil), "read db by rid")
	if res.ID != "db" || res.Self != dbSelf {
		t.Errorf("db by rid: id %q self %q", res.ID, res.Self)
	}
	read(e.doRid("GET", "/"+collSelf, collRid, nil, nil), "read container by rid")
	if res.ID != "c" {
		t.Errorf("container by rid: id %q", res.ID)
	}
	read(e.doRid("GET", "/"+itemSelf, itemRid, nil, pk), "read item by rid")
	if res.ID != "b" || res.Self != itemSelf {
		t.Errorf("item by rid: id %q self %q", res.ID, res.Self)
	}

	var feed struct {
		Documents []json.RawMessage
		Count     int `json:"_count"`
	}
	r := e.doRid("GET", "/"+collSelf+"docs/", collRid, nil, nil)
	if err := json.Unmarshal(r.body, &feed); r.status != 200 || err != nil || feed.Count != 3 {
		t.Errorf("item feed by rid: %d %s", r.status, r.body)
	}
	r = e.doRid("POST", "/"+collSelf+"docs/", collRid, []byte(`{"query":"SELECT * FROM c WHERE c.n = 1"}`), map[string]string{
		"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true", "x-ms-documentdb-partitionkey": `["p"]`})
	if err := json.Unmarshal(r.body, &feed); r.status != 200 || err != nil || feed.Count != 3 {
		t.Errorf("query by rid: %d %s", r.status, r.body)
	}
	read(e.doRid("POST", "/"+collSelf+"docs/", collRid, []byte(`{"id":"d","pk":"p"}`), pk), "create item by rid")
	read(e.doRid("PUT", "/"+itemSelf, itemRid, []byte(`{"id":"b","pk":"p","n":2}`), pk), "replace item by rid")
	if r := e.doRid("DELETE", "/"+itemSelf, itemRid, nil, pk); r.status != 204 {
		t.Errorf("delete item by rid: %d %s", r.status, r.body)
	}
	if r := e.doRid("GET", "/"+itemSelf, itemRid, nil, pk); r.status != 404 {
		t.Errorf("read deleted item by rid: %d %s", r.status, r.body)
	}
	read(e.doRid("GET", "/"+dbSelf+"colls/", dbRid, nil, nil), "container feed by rid")

	for _, tc := range []struct {
		name, path string
		signed     string // the rid signed; "" signs the link by name
		want       int
	}{
		{"name under rid", "/" + dbSelf + "colls/c/", "c", 400},
		{"rid under name", "/dbs/db/colls/" + collRid + "/", "", 404},
		{"container rid of another database", "/dbs/" + dbRid + "/colls/AAAAAAAAAAA=/", "AAAAAAAAAAA=", 400},
		{"signed over another rid", "/" + collSelf, dbRid, 401},
		{"unknown database rid is a name", "/dbs/AAAAAA==/", "", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			send := func() rawResponse { return e.do("GET", tc.path, nil, nil) }
			if tc.signed != "" {
				send = func() rawResponse { return e.doRid("GET", tc.path, tc.signed, nil, nil) }
			}
			if r := send(); r.status != tc.want {
				t.Errorf("GET %s: %d %s, want %d", tc.path, r.status, r.body, tc.want)
			}
		})
	}
}

// TestRidAddressingUsersAndScripts: users, permissions, stored procedures,
// triggers and functions are read, replaced, run and deleted through their
// _self links, as the DocumentDB-era SDKs do.
func TestRidAddressingUsersAndScripts(t *testing.T) {
	e := start(t)
	db := e.database("db")
	e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	type resource struct {
		ID   string `json:"id"`
		Rid  string `json:"_rid"`
		Self string `json:"_self"`
		Body string `json:"body"`
	}
	decode := func(r rawResponse, status int, what string) resource {
		t.Helper()
		var res resource
		if r.status != status {
			t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, status)
		}
		if len(r.body) > 0 {
			if err := json.Unmarshal(r.body, &res); err != nil {
				t.Fatalf("%s: %v: %s", what, err, r.body)
			}
		}
		return res
	}
	user := decode(e.do("POST", "/dbs/db/users", []byte(`{"id":"u"}`), nil), 201, "create user")
	perm := decode(e.do("POST", "/dbs/db/users/u/permissions", []byte(`{"id":"p","permissionMode":"Read","resource":"dbs/db/colls/c"}`), nil), 201, "create permission")
	if got := decode(e.doRid("GET", "/"+user.Self, user.Rid, nil, nil), 200, "read user by rid"); got.ID != "u" {
		t.Errorf("user by rid: %+v", got)
	}
	decode(e.doRid("GET", "/"+user.Self+"permissions/", user.Rid, nil, nil), 200, "permission feed by rid")
	if got := decode(e.doRid("GET", "/"+perm.Self, perm.Rid, nil, nil), 200, "read permission by rid"); got.ID != "p" {
		t.Errorf("permission by rid: %+v", got)
	}
	if got := decode(e.doRid("PUT", "/"+user.Self, user.Rid, []byte(`{"id":"u2"}`), nil), 200, "rename user by rid"); got.ID != "u2" || got.Rid != user.Rid {
		t.Errorf("user renamed by rid: %+v", got)
	}

	pk := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	for _, tc := range []struct{ feed, body, replaced string }{
		{"sprocs", `{"id":"s","body":"function () { getContext().getResponse().setBody(1) }"}`, `{"id":"s","body":"function () { getContext().getResponse().setBody(2) }"}`},
		{"triggers", `{"id":"t","body":"function () {}","triggerType":"Pre","triggerOperation":"All"}`, `{"id":"t","body":"function () { }","triggerType":"Pre","triggerOperation":"All"}`},
		{"udfs", `{"id":"f","body":"function (x) { return x }"}`, `{"id":"f","body":"function (x) { return 2 * x }"}`},
	} {
		created := decode(e.do("POST", "/dbs/db/colls/c/"+tc.feed, []byte(tc.body), nil), 201, "create "+tc.feed)
		if got := decode(e.doRid("GET", "/"+created.Self, created.Rid, nil, nil), 200, "read "+tc.feed+" by rid"); got.ID != created.ID {
			t.Errorf("%s by rid: %+v", tc.feed, got)
		}
		replaced := decode(e.doRid("PUT", "/"+created.Self, created.Rid, []byte(tc.replaced), nil), 200, "replace "+tc.feed+" by rid")
		if tc.feed == "sprocs" {
			if r := e.doRid("POST", "/"+created.Self, created.Rid, []byte(`[]`), pk); r.status != 200 || string(r.body) != "2" {
				t.Errorf("run the procedure by rid: %d %s", r.status, r.body)
			}
		}
		decode(e.doRid("DELETE", "/"+replaced.Self, replaced.Rid, nil, nil), 204, "delete "+tc.feed+" by rid")
		decode(e.doRid("GET", "/"+replaced.Self, replaced.Rid, nil, nil), 404, "read deleted "+tc.feed+" by rid")
	}

	decode(e.doRid("DELETE", "/"+perm.Self, perm.Rid, nil, nil), 204, "delete permission by rid")
	decode(e.doRid("DELETE", "/"+user.Self, user.Rid, nil, nil), 204, "delete user by rid")
	decode(e.doRid("GET", "/"+user.Self, user.Rid, nil, nil), 404, "read deleted user by rid")
	dbRid := strings.Split(user.Self, "/")[1]
	decode(e.doRid("GET", "/dbs/"+dbRid+"/users/AAAAAAAAAAA=/", "AAAAAAAAAAA=", nil, nil), 400, "user rid of another database")
}
