package integration

import (
	"encoding/json"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestAttachments: attachment metadata under an item, as the service keeps
// it: create, read, feed, query, replace with If-Match, upsert, delete;
// media uploads refused; an item deleted and created again has none.
func TestAttachments(t *testing.T) {
	e := start(t)
	db := e.database("db")
	e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	if r := e.do("POST", "/dbs/db/colls/c/docs", []byte(`{"id":"x","pk":"p"}`), pk); r.status != 201 {
		t.Fatalf("create item: %d %s", r.status, r.body)
	}
	base := "/dbs/db/colls/c/docs/x/attachments"
	var att struct {
		ID          string `json:"id"`
		ContentType string `json:"contentType"`
		Media       string `json:"media"`
		Rid         string `json:"_rid"`
		Self        string `json:"_self"`
		Etag        string `json:"_etag"`
	}
	decode := func(r rawResponse, want int, what string) {
		t.Helper()
		att = struct {
			ID          string `json:"id"`
			ContentType string `json:"contentType"`
			Media       string `json:"media"`
			Rid         string `json:"_rid"`
			Self        string `json:"_self"`
			Etag        string `json:"_etag"`
		}{}
		if r.status != want {
			t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, want)
		}
		if err := json.Unmarshal(r.body, &att); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	decode(e.do("POST", base, []byte(`{"id":"a1","contentType":"image/png","media":"https://example.com/a1.png"}`), pk), 201, "create")
	if att.ID != "a1" || att.Media != "https://example.com/a1.png" || att.Rid == "" || att.Etag == "" {
		t.Errorf("created attachment %+v", att)
	}
	firstEtag, self, rid := att.Etag, att.Self, att.Rid
	if r := e.do("POST", base, []byte(`{"id":"a1","media":"m"}`), pk); r.status != 409 {
		t.Errorf("duplicate: %d", r.status)
	}
	decode(e.do("GET", base+"/a1", nil, pk), 200, "read")
	if att.ContentType != "image/png" || att.Self != self {
		t.Errorf("read %+v", att)
	}
	decode(e.do("PUT", base+"/a1", []byte(`{"id":"a1","contentType":"text/plain","media":"m2"}`), with(map[string]string{"If-Match": firstEtag})), 200, "replace")
	if r := e.do("PUT", base+"/a1", []byte(`{"id":"a1","media":"m3"}`), with(map[string]string{"If-Match": firstEtag})); r.status != 412 {
		t.Errorf("replace with a stale etag: %d", r.status)
	}
	decode(e.do("POST", base, []byte(`{"id":"a2","media":"m"}`), with(map[string]string{"x-ms-documentdb-is-upsert": "true"})), 201, "upsert new")
	decode(e.do("POST", base, []byte(`{"id":"a2","media":"m9"}`), with(map[string]string{"x-ms-documentdb-is-upsert": "true"})), 200, "upsert existing")
	var feed struct {
		Attachments []json.RawMessage
		Count       int `json:"_count"`
	}
	if r := e.do("GET", base, nil, pk); json.Unmarshal(r.body, &feed) != nil || r.status != 200 || feed.Count != 2 {
		t.Errorf("feed: %d %s", r.status, r.body)
	}
	r := e.do("POST", base, []byte(`{"query":"SELECT * FROM root r WHERE r.media = 'm9'"}`), with(map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true"}))
	if json.Unmarshal(r.body, &feed) != nil || r.status != 200 || feed.Count != 1 {
		t.Errorf("query: %d %s", r.status, r.body)
	}
	// Addressed by its _self link, signed over its rid.
	decode(e.doRid("GET", "/"+self, rid, nil, pk), 200, "read by rid")
	if att.ID != "a1" {
		t.Errorf("read by rid: %+v", att)
	}
	if r := e.do("POST", base, []byte("raw bytes"), with(map[string]string{"Content-Type": "image/png", "Slug": "a3"})); r.status != 400 {
		t.Errorf("media upload: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/dbs/db/colls/c/docs/missing/attachments", nil, pk); r.status != 404 {
		t.Errorf("attachments of a missing item: %d", r.status)
	}
	if r := e.do("DELETE", base+"/a2", nil, pk); r.status != 204 {
		t.Errorf("delete: %d %s", r.status, r.body)
	}
	if r := e.do("GET", base+"/a2", nil, pk); r.status != 404 {
		t.Errorf("read deleted: %d", r.status)
	}
	// The item goes and comes back: its attachments went with it.
	if r := e.do("DELETE", "/dbs/db/colls/c/docs/x", nil, pk); r.status != 204 {
		t.Fatalf("delete item: %d", r.status)
	}
	if r := e.do("POST", "/dbs/db/colls/c/docs", []byte(`{"id":"x","pk":"p"}`), pk); r.status != 201 {
		t.Fatalf("create item again: %d", r.status)
	}
	if r := e.do("GET", base+"/a1", nil, pk); r.status != 404 {
		t.Errorf("an attachment of the deleted item is visible under the new one: %d %s", r.status, r.body)
	}
	if r := e.do("GET", base, nil, pk); json.Unmarshal(r.body, &feed) != nil || feed.Count != 0 {
		t.Errorf("feed of the new item: %s", r.body)
	}
}
