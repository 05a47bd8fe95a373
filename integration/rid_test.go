package integration

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
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

// TestRidAddressingScriptsAndUsers: stored procedures, triggers,
// user-defined functions, users and permissions are addressed by the _self
// links they return, as the DocumentDB-era SDKs address them
// (executeStoredProcedure, replaceTrigger, createPermission under a user's
// _self...), and the rids under a container have the service's shape.
func TestRidAddressingScriptsAndUsers(t *testing.T) {
	e := start(t)
	db := e.database("db")
	e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	var res struct {
		ID   string `json:"id"`
		Rid  string `json:"_rid"`
		Self string `json:"_self"`
		Body string `json:"body"`
	}
	ok := func(r rawResponse, want int, what string) {
		t.Helper()
		res.ID, res.Rid, res.Self, res.Body = "", "", "", ""
		if r.status != want {
			t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, want)
		}
		if len(r.body) > 0 {
			if err := json.Unmarshal(r.body, &res); err != nil {
				t.Fatalf("%s: %v in %s", what, err, r.body)
			}
		}
	}
	ok(e.do("GET", "/dbs/db", nil, nil), 200, "read db")
	dbRid, dbSelf := res.Rid, res.Self
	ok(e.do("GET", "/dbs/db/colls/c", nil, nil), 200, "read container")
	collRid, collSelf := res.Rid, res.Self

	for _, tc := range []struct {
		kind, body, replaced string
		nibble               byte
	}{
		{"sprocs", `{"id":"s","body":"function(a){getContext().getResponse().setBody(a + 1)}"}`, `{"id":"s","body":"function(a){getContext().getResponse().setBody(a * 10)}"}`, 8},
		{"triggers", `{"id":"t","body":"function(){}","triggerType":"Pre","triggerOperation":"All"}`, `{"id":"t","body":"function(){ }","triggerType":"Pre","triggerOperation":"Create"}`, 7},
		{"udfs", `{"id":"u","body":"function(x){return x}"}`, `{"id":"u","body":"function(x){return x + 1}"}`, 6},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			ok(e.doRid("POST", "/"+collSelf+tc.kind+"/", collRid, []byte(tc.body), nil), 201, "create by the container's rid")
			rid, self, id := res.Rid, res.Self, res.ID
			b, _ := base64.StdEncoding.DecodeString(strings.ReplaceAll(rid, "-", "/"))
			if len(b) != 16 || b[15]>>4 != tc.nibble || self != collSelf+tc.kind+"/"+rid+"/" {
				t.Fatalf("rid %q (% x) self %q: want 16 bytes ending in type %d under %s", rid, b, self, tc.nibble, collSelf)
			}
			ok(e.doRid("GET", "/"+self, rid, nil, nil), 200, "read by rid")
			if res.ID != id || res.Self != self {
				t.Errorf("read by rid: id %q self %q", res.ID, res.Self)
			}
			ok(e.doRid("PUT", "/"+self, rid, []byte(tc.replaced), nil), 200, "replace by rid")
			if res.Rid != rid {
				t.Errorf("replace by rid changed the rid: %q", res.Rid)
			}
			if tc.kind == "sprocs" {
				r := e.doRid("POST", "/"+self, rid, []byte(`[4]`), map[string]string{"x-ms-documentdb-partitionkey": `["p"]`})
				if r.status != 200 || string(r.body) != "40" {
					t.Errorf("execute by rid: %d %s, want 200 40", r.status, r.body)
				}
			}
			other := strings.ReplaceAll(base64.StdEncoding.EncodeToString(append(b[:8:8], 0, 0, 0, 0, 0, 0, 0, tc.nibble<<4)), "/", "-")
			ok(e.doRid("GET", "/"+collSelf+tc.kind+"/"+other+"/", other, nil, nil), 404, "read an unknown rid")
			ok(e.doRid("GET", "/"+collSelf+tc.kind+"/"+id+"/", id, nil, nil), 400, "a name under rids")
			ok(e.doRid("DELETE", "/"+self, rid, nil, nil), 204, "delete by rid")
			ok(e.doRid("GET", "/"+self, rid, nil, nil), 404, "read deleted by rid")
		})
	}

	ok(e.doRid("POST", "/"+dbSelf+"users/", dbRid, []byte(`{"id":"alice"}`), nil), 201, "create user by the database's rid")
	userRid, userSelf := res.Rid, res.Self
	ok(e.doRid("GET", "/"+userSelf, userRid, nil, nil), 200, "read user by rid")
	if res.ID != "alice" {
		t.Errorf("user by rid: id %q", res.ID)
	}
	ok(e.doRid("POST", "/"+userSelf+"permissions/", userRid, []byte(`{"id":"p","permissionMode":"Read","resource":"dbs/db/colls/c"}`), nil), 201, "create permission by the user's rid")
	permRid, permSelf := res.Rid, res.Self
	if permSelf != userSelf+"permissions/"+permRid+"/" {
		t.Errorf("permission self %q is not under %q", permSelf, userSelf)
	}
	ok(e.doRid("GET", "/"+userSelf+"permissions/", userRid, nil, nil), 200, "permission feed by rid")
	ok(e.doRid("GET", "/"+permSelf, permRid, nil, nil), 200, "read permission by rid")
	if res.ID != "p" {
		t.Errorf("permission by rid: id %q", res.ID)
	}
	ok(e.doRid("PUT", "/"+permSelf, permRid, []byte(`{"id":"p","permissionMode":"All","resource":"dbs/db/colls/c"}`), nil), 200, "replace permission by rid")
	ok(e.doRid("DELETE", "/"+permSelf, permRid, nil, nil), 204, "delete permission by rid")
	ok(e.doRid("PUT", "/"+userSelf, userRid, []byte(`{"id":"bob"}`), nil), 200, "rename user by rid")
	if res.ID != "bob" || res.Self != userSelf {
		t.Errorf("renamed user: id %q self %q", res.ID, res.Self)
	}
	ok(e.doRid("GET", "/"+dbSelf+"users/"+collRid+"/", collRid, nil, nil), 404, "a user rid that names no user")
	ok(e.doRid("GET", "/"+dbSelf+"users/AAAAAAAAAAA=/", "AAAAAAAAAAA=", nil, nil), 400, "a user rid of another database")
	ok(e.doRid("DELETE", "/"+userSelf, userRid, nil, nil), 204, "delete user by rid")
	ok(e.doRid("GET", "/"+userSelf, userRid, nil, nil), 404, "read deleted user by rid")
}

// TestPermissionOnRidLink: a permission's resource may be the _self link
// of a container or item, as DocumentDB-era applications set it
// (resource: collection._self). It is returned as given, so that the
// documentdb SDK's permissionFeed files the token under that rid, and its
// token grants the resource however a request addresses it.
func TestPermissionOnRidLink(t *testing.T) {
	e := start(t)
	db := e.database("db")
	e.database("other")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	if _, err := c.CreateItem(t.Context(), azcosmos.NewPartitionKeyString("p"), []byte(`{"id":"a","pk":"p"}`), nil); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Rid      string `json:"_rid"`
		Self     string `json:"_self"`
		Resource string `json:"resource"`
		Token    string `json:"_token"`
	}
	read := func(r rawResponse, want int, what string) {
		t.Helper()
		if r.status != want {
			t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, want)
		}
		if err := json.Unmarshal(r.body, &res); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	read(e.do("GET", "/dbs/db/colls/c", nil, nil), 200, "read container")
	collRid, collSelf := res.Rid, res.Self
	read(e.do("GET", "/dbs/other", nil, nil), 200, "read other database")
	otherSelf := res.Self
	read(e.do("POST", "/dbs/db/users", []byte(`{"id":"u"}`), nil), 201, "create user")

	read(e.do("POST", "/dbs/db/users/u/permissions", []byte(`{"id":"p","permissionMode":"Read","resource":"`+collSelf+`"}`), nil), 201, "permission on the container's _self")
	if res.Resource != strings.TrimSuffix(collSelf, "/") {
		t.Errorf("resource %q, want the link given, %q", res.Resource, collSelf)
	}
	tok := map[string]string{"Authorization": url.QueryEscape(res.Token), "x-ms-documentdb-partitionkey": `["p"]`, "x-ms-date": time.Now().UTC().Format(http.TimeFormat)}
	if r := e.do("GET", "/dbs/db/colls/c/docs/a", nil, tok); r.status != 200 {
		t.Errorf("read by name with the token: %d %s", r.status, r.body)
	}
	read(e.do("GET", "/dbs/db/colls/c/docs/a", nil, map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}), 200, "read item")
	if r := e.do("GET", "/"+res.Self, nil, tok); r.status != 200 {
		t.Errorf("read by rid with the token: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", "/dbs/db/colls/c/docs/a", nil, tok); r.status != 403 {
		t.Errorf("delete with a read token: %d %s, want 403", r.status, r.body)
	}
	if r := e.do("POST", "/dbs/db/users/u/permissions", []byte(`{"id":"q","permissionMode":"All","resource":"dbs/db/colls/c"}`), nil); r.status != 409 {
		t.Errorf("a second permission on the container by name: %d %s, want 409", r.status, r.body)
	}
	for name, link := range map[string]string{
		"another database":     otherSelf + "colls/" + collRid,
		"an unknown container": "dbs/" + strings.Split(collSelf, "/")[1] + "/colls/AAAAAQAAAAA=",
		"a mixed link":         "dbs/" + strings.Split(collSelf, "/")[1] + "/colls/c",
	} {
		if r := e.do("POST", "/dbs/db/users/u/permissions", []byte(`{"id":"x","permissionMode":"Read","resource":"`+link+`"}`), nil); r.status/100 != 4 || r.status == 409 {
			t.Errorf("permission on %s (%s): %d %s, want a 400 or 404", name, link, r.status, r.body)
		}
	}
}

// TestRidShapes: the rids a new container and its items and attachments
// get have the service's shape (docs/protocol.md §2.2), which the
// documentdb 1.x SDK parses for every link it addresses by rid, and throws
// from the response callback on any other: the container's fifth byte has
// its high bit set, an item's last byte its high nibble clear, whatever
// its sequence number, and an attachment adds 4 bytes to its item's 16.
// Each is found again by its _self.
func TestRidShapes(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	decode := func(rid string) []byte {
		t.Helper()
		b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(rid, "-", "/"))
		if err != nil {
			t.Fatalf("rid %q: %v", rid, err)
		}
		return b
	}
	var res struct {
		Rid  string `json:"_rid"`
		Self string `json:"_self"`
	}
	r := e.do("GET", "/dbs/db/colls/c", nil, nil)
	if err := json.Unmarshal(r.body, &res); err != nil || r.status != 200 {
		t.Fatalf("read container: %d %s", r.status, r.body)
	}
	if b := decode(res.Rid); len(b) != 8 || b[4]&0x80 == 0 {
		t.Fatalf("container rid %q (% x): want 8 bytes, the fifth with its high bit set", res.Rid, b)
	}
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	var last string
	for i := range 40 {
		resp, err := c.CreateItem(t.Context(), azcosmos.NewPartitionKeyString("p"), []byte(`{"id":"`+strconv.Itoa(i)+`","pk":"p"}`), &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(resp.Value, &res); err != nil {
			t.Fatal(err)
		}
		if b := decode(res.Rid); len(b) != 16 || b[15]>>4 != 0 {
			t.Fatalf("item %d: rid %q (% x), want 16 bytes with the last high nibble clear", i, res.Rid, b)
		}
		if r := e.doRid("GET", "/"+res.Self, res.Rid, nil, pk); r.status != 200 || !strings.Contains(string(r.body), `"id":"`+strconv.Itoa(i)+`"`) {
			t.Fatalf("item %d by its _self %s: %d %s", i, res.Self, r.status, r.body)
		}
		last = res.Self
	}
	itemRid := strings.Split(last, "/")[5]
	r = e.doRid("POST", "/"+last+"attachments/", itemRid, []byte(`{"id":"a","contentType":"text/plain","media":"http://example.com/a"}`), pk)
	if err := json.Unmarshal(r.body, &res); err != nil || r.status != 201 {
		t.Fatalf("create attachment: %d %s", r.status, r.body)
	}
	if b := decode(res.Rid); len(b) != 20 || string(b[:16]) != string(decode(itemRid)) {
		t.Fatalf("attachment rid %q (% x), want its item's 16 bytes and 4 more", res.Rid, b)
	}
	if r := e.doRid("GET", "/"+res.Self, res.Rid, nil, pk); r.status != 200 {
		t.Fatalf("attachment by its _self: %d %s", r.status, r.body)
	}
}

// A request signed over its path as names addresses resources by name,
// even when a segment is another resource's rid: with no database of that
// name, it is a 404, not the database whose rid it is.
func TestNameThatIsAnotherDatabasesRid(t *testing.T) {
	e := start(t)
	e.database("victim")
	rid := expectJSON(t, e.do(http.MethodGet, "/dbs/victim", nil, nil), 200, "database")["_rid"].(string)
	if r := e.do(http.MethodGet, "/dbs/"+rid, nil, nil); r.status != http.StatusNotFound {
		t.Errorf("GET dbs/%s signed as a name: %d %s, want 404", rid, r.status, r.body)
	}
	if r := e.do(http.MethodDelete, "/dbs/"+rid, nil, nil); r.status != http.StatusNotFound {
		t.Errorf("DELETE dbs/%s signed as a name: %d %s, want 404", rid, r.status, r.body)
	}
	expectJSON(t, e.doRid(http.MethodGet, "/dbs/"+rid, rid, nil, nil), 200, "the database read by its rid, signed as a rid")
	expectJSON(t, e.do(http.MethodGet, "/dbs/victim", nil, nil), 200, "the database, still there")
}
