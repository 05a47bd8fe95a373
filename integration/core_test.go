package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

var ctx = context.Background()

func statusOf(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

func TestDatabaseLifecycle(t *testing.T) {
	e := start(t)
	if _, err := e.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db1"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db1"}, nil); statusOf(err) != 409 {
		t.Fatalf("duplicate database: %v, want 409", err)
	}
	db, _ := e.client.NewDatabase("db1")
	resp, err := db.Read(ctx, nil)
	if err != nil || resp.DatabaseProperties.ID != "db1" || resp.DatabaseProperties.ResourceID == "" || resp.ETag == "" {
		t.Fatalf("read: %+v %v", resp, err)
	}
	pager := e.client.NewQueryDatabasesPager("SELECT * FROM root r WHERE r.id = @id", &azcosmos.QueryDatabasesOptions{
		QueryParameters: []azcosmos.QueryParameter{{Name: "@id", Value: "db1"}}})
	var ids []string
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page.Databases {
			ids = append(ids, d.ID)
		}
	}
	if len(ids) != 1 || ids[0] != "db1" {
		t.Fatalf("query databases = %v", ids)
	}
	if _, err := db.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Read(ctx, nil); statusOf(err) != 404 {
		t.Fatalf("read after delete: %v, want 404", err)
	}
}

func TestContainerDefaultsAndValidation(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	resp, err := c.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.ContainerProperties
	if p.IndexingPolicy == nil || !p.IndexingPolicy.Automatic || len(p.IndexingPolicy.IncludedPaths) != 1 || p.IndexingPolicy.IncludedPaths[0].Path != "/*" {
		t.Errorf("indexing policy defaults missing: %+v", p.IndexingPolicy)
	}
	if p.PartitionKeyDefinition.Paths[0] != "/pk" {
		t.Errorf("partition key = %+v", p.PartitionKeyDefinition)
	}
	if !strings.Contains(resp.RawResponse.Header.Get("x-ms-resource-usage"), "documentsCount=0") {
		t.Errorf("x-ms-resource-usage = %q", resp.RawResponse.Header.Get("x-ms-resource-usage"))
	}

	bad := []struct {
		name string
		body string
	}{
		{"defaultTtl zero", `{"id":"x","partitionKey":{"paths":["/pk"]},"defaultTtl":0}`},
		{"defaultTtl below -1", `{"id":"x","partitionKey":{"paths":["/pk"]},"defaultTtl":-2}`},
		{"defaultTtl too big", `{"id":"x","partitionKey":{"paths":["/pk"]},"defaultTtl":2147483648}`},
		{"defaultTtl fraction", `{"id":"x","partitionKey":{"paths":["/pk"]},"defaultTtl":1.5}`},
		{"defaultTtl string", `{"id":"x","partitionKey":{"paths":["/pk"]},"defaultTtl":"10"}`},
		{"ttl with indexing none", `{"id":"x","partitionKey":{"paths":["/pk"]},"defaultTtl":10,"indexingPolicy":{"indexingMode":"none","automatic":false}}`},
		{"id with slash", `{"id":"a/b","partitionKey":{"paths":["/pk"]}}`},
		{"missing id", `{"partitionKey":{"paths":["/pk"]}}`},
		{"malformed json", `{"id":`},
		{"four pk paths", `{"id":"x","partitionKey":{"paths":["/a","/b","/c","/d"],"kind":"MultiHash","version":2}}`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do("POST", "/dbs/db/colls", []byte(tt.body), nil)
			if r.status != 400 {
				t.Fatalf("status %d, want 400: %s", r.status, r.body)
			}
			var body struct{ Code, Message string }
			if err := json.Unmarshal(r.body, &body); err != nil || body.Code != "BadRequest" || body.Message == "" {
				t.Fatalf("error body %s", r.body)
			}
			if strings.HasPrefix(tt.name, "defaultTtl") && !strings.Contains(body.Message, "defaultTtl") {
				t.Errorf("message %q does not name defaultTtl", body.Message)
			}
		})
	}
	if r := e.do("GET", "/dbs/db/colls/x", nil, nil); r.status != 404 {
		t.Fatalf("a refused container was created: %d", r.status)
	}
}

type item struct {
	ID    string `json:"id"`
	PK    string `json:"pk"`
	Value int    `json:"value"`
	ETag  string `json:"_etag,omitempty"`
	TS    int64  `json:"_ts,omitempty"`
	Rid   string `json:"_rid,omitempty"`
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestItemLifecycle(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	pk := azcosmos.NewPartitionKeyString("a")

	cr, err := c.CreateItem(ctx, pk, mustJSON(t, item{ID: "1", PK: "a", Value: 1}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cr.Value) != 0 || cr.SessionToken == nil || cr.RequestCharge <= 0 || cr.ETag == "" {
		t.Fatalf("create response: value=%q session=%v charge=%v etag=%q", cr.Value, cr.SessionToken, cr.RequestCharge, cr.ETag)
	}
	if _, err := c.CreateItem(ctx, pk, mustJSON(t, item{ID: "1", PK: "a"}), nil); statusOf(err) != 409 {
		t.Fatalf("duplicate create: %v", err)
	}
	// The same id under another partition key value is another item.
	if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString("b"), mustJSON(t, item{ID: "1", PK: "b", Value: 2}), nil); err != nil {
		t.Fatal(err)
	}
	rr, err := c.ReadItem(ctx, pk, "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got item
	if err := json.Unmarshal(rr.Value, &got); err != nil {
		t.Fatal(err)
	}
	if got.Value != 1 || got.ETag == "" || got.TS == 0 || got.Rid == "" || string(rr.ETag) != got.ETag {
		t.Fatalf("read = %+v (etag header %q)", got, rr.ETag)
	}
	// Replace with a stale etag fails; with the current one it succeeds.
	stale := azcore.ETag(`"stale"`)
	if _, err := c.ReplaceItem(ctx, pk, "1", mustJSON(t, item{ID: "1", PK: "a", Value: 3}), &azcosmos.ItemOptions{IfMatchEtag: &stale}); statusOf(err) != 412 {
		t.Fatalf("replace with stale etag: %v", err)
	}
	cur := rr.ETag
	rp, err := c.ReplaceItem(ctx, pk, "1", mustJSON(t, item{ID: "1", PK: "a", Value: 3}), &azcosmos.ItemOptions{IfMatchEtag: &cur, EnableContentResponseOnWrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if rp.ETag == cur || !strings.Contains(string(rp.Value), `"value":3`) {
		t.Fatalf("replace: etag unchanged or body %s", rp.Value)
	}
	// Upsert: 200 for an existing item, 201 for a new one.
	up, err := c.UpsertItem(ctx, pk, mustJSON(t, item{ID: "1", PK: "a", Value: 4}), nil)
	if err != nil || up.RawResponse.StatusCode != 200 {
		t.Fatalf("upsert existing: %v %v", err, up.RawResponse)
	}
	up, err = c.UpsertItem(ctx, pk, mustJSON(t, item{ID: "2", PK: "a", Value: 5}), nil)
	if err != nil || up.RawResponse.StatusCode != 201 {
		t.Fatalf("upsert new: %v", err)
	}
	// Replace of a missing item and a body/header key mismatch.
	if _, err := c.ReplaceItem(ctx, pk, "nope", mustJSON(t, item{ID: "nope", PK: "a"}), nil); statusOf(err) != 404 {
		t.Fatalf("replace missing: %v", err)
	}
	if _, err := c.CreateItem(ctx, pk, mustJSON(t, item{ID: "3", PK: "other"}), nil); statusOf(err) != 400 {
		t.Fatalf("key mismatch: %v", err)
	}
	// Delete with a stale etag, then for real, then again.
	if _, err := c.DeleteItem(ctx, pk, "1", &azcosmos.ItemOptions{IfMatchEtag: &stale}); statusOf(err) != 412 {
		t.Fatalf("delete with stale etag: %v", err)
	}
	del, err := c.DeleteItem(ctx, pk, "1", nil)
	if err != nil || del.RawResponse.StatusCode != 204 {
		t.Fatalf("delete: %v", err)
	}
	if _, err := c.ReadItem(ctx, pk, "1", nil); statusOf(err) != 404 {
		t.Fatalf("read deleted: %v", err)
	}
	if _, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString("b"), "1", nil); err != nil {
		t.Fatalf("the other partition's item 1 must remain: %v", err)
	}
}

func TestItemRawProtocol(t *testing.T) {
	e := start(t)
	db := e.database("db")
	e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	key := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}

	r := e.do("POST", "/dbs/db/colls/c/docs", []byte(`{"id":"n","pk":"a","big":9223372036854775807,"neg":-9223372036854775808,"f":0.1,"e":1.5e300}`), key)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	for _, want := range []string{`"big":9223372036854775807`, `"neg":-9223372036854775808`, `"f":0.1`, `"e":1.5e+300`} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("numbers not kept exactly: %s lacks %s", r.body, want)
		}
	}
	etag := r.header.Get("etag")
	if r := e.do("GET", "/dbs/db/colls/c/docs/n", nil, map[string]string{"x-ms-documentdb-partitionkey": `["a"]`, "If-None-Match": etag}); r.status != 304 {
		t.Errorf("If-None-Match with the current etag: %d, want 304", r.status)
	}
	cases := []struct {
		name   string
		method string
		path   string
		body   string
		hdr    map[string]string
		status int
	}{
		{"malformed json", "POST", "/dbs/db/colls/c/docs", `{"id":"x","pk":"a"`, key, 400},
		{"not an object", "POST", "/dbs/db/colls/c/docs", `[1,2]`, key, 400},
		{"id not a string", "POST", "/dbs/db/colls/c/docs", `{"id":5,"pk":"a"}`, key, 400},
		{"bad key header", "POST", "/dbs/db/colls/c/docs", `{"id":"x","pk":"a"}`, map[string]string{"x-ms-documentdb-partitionkey": `["a"`}, 400},
		{"missing key on read", "GET", "/dbs/db/colls/c/docs/n", "", nil, 400},
		{"oversized item", "POST", "/dbs/db/colls/c/docs", `{"id":"big","pk":"a","x":"` + strings.Repeat("x", 2<<20) + `"}`, key, 413},
		{"missing container", "GET", "/dbs/db/colls/zz/docs/n", "", key, 404},
		{"missing database", "GET", "/dbs/zz/colls/c", "", nil, 404},
		{"unknown route", "GET", "/dbs/db/colls/c/whatever", "", nil, 404},
		{"bad max item count", "GET", "/dbs/db/colls/c/docs", "", map[string]string{"x-ms-max-item-count": "many"}, 400},
		{"tampered continuation", "GET", "/dbs/db/colls/c/docs", "", map[string]string{"x-ms-continuation": "garbage"}, 400},
		{"wrong signature", "GET", "/dbs/db", "", map[string]string{"Authorization": "type%3Dmaster%26ver%3D1.0%26sig%3DAAAA"}, 401},
		{"no authorization", "GET", "/dbs/db", "", map[string]string{"Authorization": ""}, 401},
		{"no date", "GET", "/dbs/db", "", map[string]string{"x-ms-date": ""}, 401},
		{"old date", "GET", "/dbs/db", "", map[string]string{"x-ms-date": time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)}, 403},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(tt.method, tt.path, []byte(tt.body), tt.hdr)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			var body struct{ Code, Message string }
			if err := json.Unmarshal(r.body, &body); err != nil || body.Code == "" || body.Message == "" {
				t.Fatalf("not a Cosmos error body: %s", r.body)
			}
			if r.header.Get("x-ms-activity-id") == "" || r.header.Get("x-ms-request-charge") == "" {
				t.Errorf("missing activity id or charge headers: %v", r.header)
			}
		})
	}
}

func TestReadFeedPaging(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	for i := 0; i < 12; i++ {
		pkv := []string{"a", "b"}[i%2]
		if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(pkv), mustJSON(t, item{ID: string(rune('a' + i)), PK: pkv}), nil); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	cont := ""
	pages := 0
	for {
		hdr := map[string]string{"x-ms-max-item-count": "5"}
		if cont != "" {
			hdr["x-ms-continuation"] = cont
		}
		r := e.do("GET", "/dbs/db/colls/c/docs", nil, hdr)
		if r.status != 200 {
			t.Fatalf("feed: %d %s", r.status, r.body)
		}
		var page struct {
			Documents []item
			Count     int `json:"_count"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		pages++
		if page.Count != len(page.Documents) || r.header.Get("x-ms-item-count") != itoa(len(page.Documents)) {
			t.Fatalf("count mismatch: %d vs %d", page.Count, len(page.Documents))
		}
		for _, d := range page.Documents {
			ids = append(ids, d.ID)
		}
		cont = r.header.Get("x-ms-continuation")
		if cont == "" {
			break
		}
	}
	if pages != 3 || strings.Join(ids, "") != "abcdefghijkl" {
		t.Fatalf("pages=%d ids=%v", pages, ids)
	}
	// Scoped to one partition key.
	r := e.do("GET", "/dbs/db/colls/c/docs", nil, map[string]string{"x-ms-documentdb-partitionkey": `["b"]`})
	var page struct{ Documents []item }
	_ = json.Unmarshal(r.body, &page)
	if len(page.Documents) != 6 {
		t.Fatalf("partition b has %d items, want 6", len(page.Documents))
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestUniqueKeys(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		UniqueKeyPolicy:        &azcosmos.UniqueKeyPolicy{UniqueKeys: []azcosmos.UniqueKey{{Paths: []string{"/email"}}}},
	})
	pk := azcosmos.NewPartitionKeyString("a")
	if _, err := c.CreateItem(ctx, pk, []byte(`{"id":"1","pk":"a","email":"x@y"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateItem(ctx, pk, []byte(`{"id":"2","pk":"a","email":"x@y"}`), nil); statusOf(err) != 409 {
		t.Fatalf("unique violation: %v, want 409", err)
	}
	// Another partition may reuse the value; the item itself may be rewritten.
	if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString("b"), []byte(`{"id":"2","pk":"b","email":"x@y"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpsertItem(ctx, pk, []byte(`{"id":"1","pk":"a","email":"x@y","n":1}`), nil); err != nil {
		t.Fatal(err)
	}
	// After a delete the value is free again.
	if _, err := c.DeleteItem(ctx, pk, "1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateItem(ctx, pk, []byte(`{"id":"3","pk":"a","email":"x@y"}`), nil); err != nil {
		t.Fatalf("value should be free after delete: %v", err)
	}
}

func TestPartitionKeyRangesNotModified(t *testing.T) {
	e := start(t)
	db := e.database("db")
	e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	r := e.do("GET", "/dbs/db/colls/c/pkranges", nil, map[string]string{"A-IM": "Incremental Feed", "x-ms-max-item-count": "-1"})
	if r.status != 200 || !strings.Contains(string(r.body), `"maxExclusive":"FF"`) || r.header.Get("etag") == "" {
		t.Fatalf("pkranges: %d %s", r.status, r.body)
	}
	r2 := e.do("GET", "/dbs/db/colls/c/pkranges", nil, map[string]string{"If-None-Match": r.header.Get("etag")})
	if r2.status != 304 {
		t.Fatalf("pkranges refresh: %d, want 304", r2.status)
	}
}

// TestResourceFeedsResumeAfterTheLastReturned: a read feed or a query of
// databases, users or stored procedures pages on from the last resource
// it returned, so a resource deleted or created between pages hides no
// other one and repeats none (a loop that deletes each page it lists sees
// every resource).
func TestResourceFeedsResumeAfterTheLastReturned(t *testing.T) {
	e := start(t)
	e.database("zdb") // sorts after the databases the test lists and deletes
	if r := e.do("POST", "/dbs/zdb/colls", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`), nil); r.status != 201 {
		t.Fatalf("container: %d %s", r.status, r.body)
	}
	for _, query := range []bool{false, true} {
		for _, tc := range []struct {
			feed, key, create string
			ids               []string // created in this order
		}{
			{"/dbs/zdb/users", "Users", `{"id":"%s"}`, []string{"u3", "u1", "u0", "u2", "u4"}},
			{"/dbs/zdb/colls/c/sprocs", "StoredProcedures", `{"id":"%s","body":"function () {}"}`, []string{"s3", "s1", "s0", "s2", "s4"}},
			{"/dbs", "Databases", `{"id":"%s"}`, []string{"p3", "p1", "p0", "p2", "p4"}},
		} {
			name := fmt.Sprintf("%s (query %v)", tc.feed, query)
			for _, id := range tc.ids {
				if r := e.do("POST", tc.feed, []byte(fmt.Sprintf(tc.create, fmt.Sprint(id, query))), nil); r.status != 201 {
					t.Fatalf("create %s: %d %s", id, r.status, r.body)
				}
			}
			page := func(cont string) ([]string, string) {
				t.Helper()
				hdr := map[string]string{"x-ms-max-item-count": "2"}
				if cont == "all" {
					hdr["x-ms-max-item-count"] = "-1"
				} else if cont != "" {
					hdr["x-ms-continuation"] = cont
				}
				r := e.do("GET", tc.feed, nil, hdr)
				if query {
					hdr["Content-Type"], hdr["x-ms-documentdb-isquery"] = "application/query+json", "true"
					r = e.do("POST", tc.feed, []byte(`{"query":"SELECT * FROM root"}`), hdr)
				}
				var body map[string]json.RawMessage
				var list []map[string]any
				if r.status != 200 || json.Unmarshal(r.body, &body) != nil || json.Unmarshal(body[tc.key], &list) != nil {
					t.Fatalf("%s: %d %s", name, r.status, r.body)
				}
				var ids []string
				for _, v := range list {
					ids = append(ids, v["id"].(string))
				}
				return ids, r.header.Get("x-ms-continuation")
			}
			all, _ := page("all")
			first, cont := page("")
			// Delete the first page's resources and create one that sorts
			// before every other: none of it moves the next page.
			for _, id := range first {
				if r := e.do("DELETE", tc.feed+"/"+id, nil, nil); r.status != 204 {
					t.Fatalf("delete %s: %d %s", id, r.status, r.body)
				}
			}
			if r := e.do("POST", tc.feed, []byte(fmt.Sprintf(tc.create, fmt.Sprint("0first", query))), nil); r.status != 201 {
				t.Fatalf("create: %d %s", r.status, r.body)
			}
			seen := slices.Clone(first)
			for cont != "" {
				var ids []string
				ids, cont = page(cont)
				seen = append(seen, ids...)
			}
			if got, want := strings.Join(seen, " "), strings.Join(all, " "); got != want {
				t.Errorf("%s: paged %s, want %s", name, got, want)
			}
		}
	}
	if r := e.do("GET", "/dbs", nil, map[string]string{"x-ms-continuation": "2"}); r.status != 400 {
		t.Errorf("a continuation that is no position: %d, want 400", r.status)
	}
}
