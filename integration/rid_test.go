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
