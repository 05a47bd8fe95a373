package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// batchContainer is container "c" of database "db", partitioned on /pk.
func batchContainer(e *env) *azcosmos.ContainerClient {
	return e.container(e.database("db"), azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
}

// batchStatuses lists the status of each operation result.
func batchStatuses(r azcosmos.TransactionalBatchResponse) string {
	var s []string
	for _, op := range r.OperationResults {
		s = append(s, fmt.Sprint(op.StatusCode))
	}
	return strings.Join(s, " ")
}

func TestBatchThroughGoSDK(t *testing.T) {
	e := start(t)
	c := batchContainer(e)
	pk := azcosmos.NewPartitionKeyString("a")
	if _, err := c.CreateItem(ctx, pk, mustJSON(t, item{ID: "x", PK: "a", Value: 1}), nil); err != nil {
		t.Fatal(err)
	}

	t.Run("success, minimal", func(t *testing.T) {
		b := c.NewTransactionalBatch(pk)
		b.CreateItem(mustJSON(t, item{ID: "1", PK: "a", Value: 1}), nil)
		b.UpsertItem(mustJSON(t, item{ID: "2", PK: "a", Value: 2}), nil)
		b.UpsertItem(mustJSON(t, item{ID: "x", PK: "a", Value: 3}), nil)
		p := azcosmos.PatchOperations{}
		p.AppendIncrement("/value", 10)
		b.PatchItem("1", p, nil)
		b.ReplaceItem("2", mustJSON(t, item{ID: "2", PK: "a", Value: 20}), nil)
		r, err := c.ExecuteTransactionalBatch(ctx, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Success || r.RawResponse.StatusCode != 200 {
			t.Fatalf("success %v, status %d", r.Success, r.RawResponse.StatusCode)
		}
		if got := batchStatuses(r); got != "201 201 200 200 200" {
			t.Errorf("statuses %s", got)
		}
		for i, op := range r.OperationResults {
			if op.RequestCharge <= 0 || op.ETag == "" || op.ResourceBody != nil {
				t.Errorf("operation %d: charge %v, etag %q, body %s", i, op.RequestCharge, op.ETag, op.ResourceBody)
			}
		}
		if r.SessionToken == "" || r.RequestCharge <= 0 {
			t.Errorf("session token %q, charge %v", r.SessionToken, r.RequestCharge)
		}
		rr, err := c.ReadItem(ctx, pk, "1", nil)
		if err != nil || !strings.Contains(string(rr.Value), `"value":11`) {
			t.Fatalf("patched item: %s %v", rr.Value, err)
		}
		if rr.ETag != r.OperationResults[3].ETag {
			t.Errorf("etag %s, batch reported %s", rr.ETag, r.OperationResults[3].ETag)
		}
	})

	var written string // the session token of the last committed batch
	t.Run("success, full responses", func(t *testing.T) {
		b := c.NewTransactionalBatch(pk)
		b.CreateItem(mustJSON(t, item{ID: "3", PK: "a", Value: 3}), nil)
		b.DeleteItem("2", nil)
		r, err := c.ExecuteTransactionalBatch(ctx, b, &azcosmos.TransactionalBatchOptions{EnableContentResponseOnWrite: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := batchStatuses(r); !r.Success || got != "201 204" {
			t.Fatalf("success %v, statuses %s", r.Success, got)
		}
		written = r.SessionToken
		var got item
		if err := json.Unmarshal(r.OperationResults[0].ResourceBody, &got); err != nil || got.ID != "3" || got.Value != 3 || got.ETag != string(r.OperationResults[0].ETag) || got.TS == 0 {
			t.Errorf("created body %s: %v", r.OperationResults[0].ResourceBody, err)
		}
		if r.OperationResults[1].ResourceBody != nil {
			t.Errorf("delete carried a body: %s", r.OperationResults[1].ResourceBody)
		}
	})

	t.Run("failure rolls back", func(t *testing.T) {
		b := c.NewTransactionalBatch(pk)
		b.CreateItem(mustJSON(t, item{ID: "new", PK: "a"}), nil)
		b.DeleteItem("3", nil)
		b.CreateItem(mustJSON(t, item{ID: "x", PK: "a"}), nil)
		b.ReadItem("1", nil)
		r, err := c.ExecuteTransactionalBatch(ctx, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Success || r.RawResponse.StatusCode != http.StatusMultiStatus {
			t.Fatalf("success %v, status %d", r.Success, r.RawResponse.StatusCode)
		}
		if got := batchStatuses(r); got != "424 424 409 424" {
			t.Errorf("statuses %s", got)
		}
		if _, err := c.ReadItem(ctx, pk, "new", nil); statusOf(err) != 404 {
			t.Errorf("the rolled-back create is visible: %v", err)
		}
		if _, err := c.ReadItem(ctx, pk, "3", nil); err != nil {
			t.Errorf("the rolled-back delete took effect: %v", err)
		}
	})

	t.Run("read-only", func(t *testing.T) {
		before, err := c.ReadItem(ctx, pk, "x", nil)
		if err != nil {
			t.Fatal(err)
		}
		b := c.NewTransactionalBatch(pk)
		b.ReadItem("x", nil)
		b.ReadItem("1", nil)
		r, err := c.ExecuteTransactionalBatch(ctx, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := batchStatuses(r); !r.Success || got != "200 200" {
			t.Fatalf("success %v, statuses %s", r.Success, got)
		}
		if string(r.OperationResults[0].ResourceBody) != string(before.Value) || r.OperationResults[0].ETag != before.ETag {
			t.Errorf("read %s, want %s", r.OperationResults[0].ResourceBody, before.Value)
		}
		// Neither reads nor the rolled-back batch took an LSN.
		if r.SessionToken != written {
			t.Errorf("session token %q after reads, %q after the last write", r.SessionToken, written)
		}
		b = c.NewTransactionalBatch(pk)
		b.ReadItem("x", nil)
		b.ReadItem("missing", nil)
		r, err = c.ExecuteTransactionalBatch(ctx, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := batchStatuses(r); r.Success || got != "424 404" {
			t.Fatalf("success %v, statuses %s", r.Success, got)
		}
	})

	t.Run("another partition key in a body", func(t *testing.T) {
		b := c.NewTransactionalBatch(pk)
		b.CreateItem(mustJSON(t, item{ID: "y", PK: "b"}), nil)
		r, err := c.ExecuteTransactionalBatch(ctx, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := batchStatuses(r); r.Success || got != "400" {
			t.Fatalf("success %v, statuses %s", r.Success, got)
		}
	})
}

// TestBatchRawProtocol checks the wire format the SDKs rely on: keys left
// out under return=minimal, per-operation failure details, refusals as
// Cosmos error bodies, and bulk.
func TestBatchRawProtocol(t *testing.T) {
	e := start(t)
	batchContainer(e)
	atomic := map[string]string{"x-ms-cosmos-is-batch-request": "True", "x-ms-cosmos-batch-atomic": "True", "x-ms-documentdb-partitionkey": `["a"]`}
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{}
		for k, v := range atomic {
			h[k] = v
		}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	type result struct {
		StatusCode    *int            `json:"statusCode"`
		RequestCharge float64         `json:"requestCharge"`
		ETag          string          `json:"eTag"`
		ResourceBody  json.RawMessage `json:"resourceBody"`
		SubStatusCode *int            `json:"subStatusCode"`
		Message       string          `json:"message"`
	}
	decode := func(t *testing.T, r rawResponse) []map[string]json.RawMessage {
		t.Helper()
		var raw []map[string]json.RawMessage
		if err := json.Unmarshal(r.body, &raw); err != nil {
			t.Fatalf("status %d, body %s: %v", r.status, r.body, err)
		}
		return raw
	}

	r := e.do("POST", "/dbs/db/colls/c/docs", []byte(`[
		{"operationType":"Create","resourceBody":{"id":"1","pk":"a"}},
		{"operationType":"Read","id":"1"},
		{"operationType":"Delete","id":"1"}]`), with(map[string]string{"Prefer": "return=minimal"}))
	if r.status != 200 || r.header.Get("x-ms-session-token") == "" || r.header.Get("lsn") != "2" {
		t.Fatalf("status %d, session token %q, lsn %q: %s", r.status, r.header.Get("x-ms-session-token"), r.header.Get("lsn"), r.body)
	}
	raw := decode(t, r)
	if _, ok := raw[0]["resourceBody"]; ok {
		t.Errorf("a minimal create carries resourceBody: %s", r.body)
	}
	if _, ok := raw[1]["resourceBody"]; !ok {
		t.Errorf("a read lacks resourceBody: %s", r.body)
	}
	if _, ok := raw[2]["resourceBody"]; ok {
		t.Errorf("a delete carries resourceBody: %s", r.body)
	}

	r = e.do("POST", "/dbs/db/colls/c/docs", []byte(`[
		{"operationType":"Create","resourceBody":{"id":"2","pk":"a"}},
		{"operationType":"Replace","id":"nope","resourceBody":{"id":"nope","pk":"a"}}]`), atomic)
	if r.status != 207 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var results []result
	if err := json.Unmarshal(r.body, &results); err != nil {
		t.Fatal(err)
	}
	if *results[0].StatusCode != 424 || *results[1].StatusCode != 404 || results[1].SubStatusCode == nil || results[1].Message == "" || results[1].RequestCharge <= 0 {
		t.Errorf("results %s", r.body)
	}

	ops := make([]string, 101)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"operationType":"Create","resourceBody":{"id":"m%d","pk":"a"}}`, i)
	}
	refusals := []struct {
		name   string
		body   string
		hdr    map[string]string
		status int
		msg    string
	}{
		{"malformed", `[{"operationType":"Create"`, atomic, 400, "invalid"},
		{"not an array", `{"operationType":"Create"}`, atomic, 400, "array"},
		{"unknown operation", `[{"operationType":"Merge","id":"1"}]`, atomic, 400, "Merge"},
		{"no operations", `[]`, atomic, 400, "no operations"},
		{"101 operations", "[" + strings.Join(ops, ",") + "]", atomic, 400, "Batch request has more operations than what is supported."},
		{"over 2 MB", `[{"operationType":"Create","resourceBody":{"id":"big","pk":"a","x":"` + strings.Repeat("x", 2<<20) + `"}}]`, atomic, 413, "too large"},
		{"an operation under another key", `[{"operationType":"Read","id":"1","partitionKey":"[\"b\"]"}]`, atomic, 400, "partition key"},
		{"no partition key", `[{"operationType":"Read","id":"1"}]`, with(map[string]string{"x-ms-documentdb-partitionkey": ""}), 400, "PartitionKey"},
		{"missing container", `[{"operationType":"Read","id":"1"}]`, atomic, 404, ""},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			path := "/dbs/db/colls/c/docs"
			if tt.name == "missing container" {
				path = "/dbs/db/colls/zz/docs"
			}
			r := e.do("POST", path, []byte(tt.body), tt.hdr)
			var body struct{ Code, Message string }
			if r.status != tt.status || json.Unmarshal(r.body, &body) != nil || body.Code == "" || !strings.Contains(body.Message, tt.msg) {
				t.Fatalf("status %d, want %d with %q: %s", r.status, tt.status, tt.msg, r.body)
			}
		})
	}
	if r := e.do("GET", "/dbs/db/colls/c/docs/m0", nil, map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}); r.status != 404 {
		t.Errorf("a refused batch wrote: %d", r.status)
	}

	t.Run("bulk", func(t *testing.T) {
		bulk := map[string]string{"x-ms-cosmos-is-batch-request": "true", "x-ms-cosmos-batch-atomic": "false",
			"x-ms-cosmos-batch-continue-on-error": "true", "x-ms-documentdb-partitionkeyrangeid": "0"}
		r := e.do("POST", "/dbs/db/colls/c/docs", []byte(`[
			{"operationType":"Create","partitionKey":"[\"a\"]","resourceBody":{"id":"b1","pk":"a"}},
			{"operationType":"Create","partitionKey":"[\"b\"]","resourceBody":{"id":"b1","pk":"b"}}]`), bulk)
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if err := json.Unmarshal(r.body, &results); err != nil || len(results) != 2 || *results[0].StatusCode != 201 || *results[1].StatusCode != 201 || results[0].ResourceBody == nil {
			t.Fatalf("results %s: %v", r.body, err)
		}
		r = e.do("POST", "/dbs/db/colls/c/docs", []byte(`[
			{"operationType":"Create","partitionKey":"[\"a\"]","resourceBody":{"id":"b1","pk":"a"}},
			{"operationType":"Upsert","partitionKey":"[\"b\"]","resourceBody":{"id":"b2","pk":"b"}},
			{"operationType":"Read","partitionKey":"[\"b\"]","id":"b1"}]`), bulk)
		if r.status != 207 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if err := json.Unmarshal(r.body, &results); err != nil || *results[0].StatusCode != 409 || *results[1].StatusCode != 201 || *results[2].StatusCode != 200 {
			t.Fatalf("results %s: %v", r.body, err)
		}
		if r := e.do("GET", "/dbs/db/colls/c/docs/b2", nil, map[string]string{"x-ms-documentdb-partitionkey": `["b"]`}); r.status != 200 {
			t.Errorf("b2 after bulk: %d", r.status)
		}
	})
}

// TestBatchTTL: ttl.md inside a batch, on the server's manual clock.
func TestBatchTTL(t *testing.T) {
	te := startTTL(t)
	c := te.coll(t, "c", i32(10))
	c.create(t, "old")
	c.create(t, "kept")
	te.to(t, 10, 0) // both have expired

	b := c.NewTransactionalBatch(pk)
	b.ReadItem("old", nil)
	r, err := c.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := batchStatuses(r); got != "404" {
		t.Errorf("read of an expired item: %s", got)
	}

	b = c.NewTransactionalBatch(pk)
	b.CreateItem(doc("old", `"v":2`), nil)
	b.UpsertItem(doc("kept", `"ttl":-1`), nil)
	b.ReadItem("old", nil)
	r, err = c.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := batchStatuses(r); got != "201 201 200" {
		t.Fatalf("create and upsert over expired items: %s", got)
	}
	c.checkTS(t, r.OperationResults[2].ResourceBody)

	b = c.NewTransactionalBatch(pk)
	b.UpsertItem(doc("new"), nil)
	b.UpsertItem(doc("kept", `"ttl":0`), nil)
	r, err = c.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := batchStatuses(r); got != "424 400" {
		t.Errorf("an invalid ttl: %s", got)
	}

	te.to(t, 19, 900*time.Millisecond)
	if got := c.readStatus(t, "old"); got != 200 {
		t.Errorf("the recreated item at 19.9 s: %d", got)
	}
	te.to(t, 20, 0)
	if got, want := c.readStatus(t, "old"), 404; got != want {
		t.Errorf("the recreated item at 20 s: %d, want %d", got, want)
	}
	if got := c.readStatus(t, "kept"); got != 200 {
		t.Errorf("the item upserted with ttl -1: %d", got)
	}
}
