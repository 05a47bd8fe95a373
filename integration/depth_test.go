package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// chainOf returns prefix + part repeated to about size bytes + suffix.
func chainOf(prefix, part, suffix string, size int) string {
	return prefix + strings.Repeat(part, (size-len(prefix)-len(suffix))/len(part)) + suffix
}

// want400 fails unless err is the service's 400 and its message says what.
func want400(t *testing.T, what string, err error, says string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusBadRequest {
		t.Fatalf("%s: got %v; want 400", what, err)
	}
	if !strings.Contains(err.Error(), says) {
		t.Fatalf("%s: got %v; want a message with %q", what, err, says)
	}
}

// TestDeepQueriesAnswer400: queries whose chains of operators or accessors
// used to overflow the server's stack, killing the process, answer 400
// through the Go SDK and raw requests, and the server keeps serving.
func TestDeepQueriesAnswer400(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	pk := azcosmos.NewPartitionKeyString("p")
	if _, err := c.CreateItem(ctx, pk, []byte(`{"id":"a","pk":"p","v":1}`), nil); err != nil {
		t.Fatal(err)
	}
	const size = 300 << 10
	query := func(q string) error {
		pager := c.NewQueryItemsPager(q, pk, nil)
		_, err := pager.NextPage(ctx)
		return err
	}
	for _, tc := range []struct{ name, text string }{
		{"sum", chainOf("SELECT * FROM c WHERE c.v = 1", "+1", "", size)},
		{"members", chainOf("SELECT * FROM c WHERE c", ".a", " = 1", size)},
		{"indexes", chainOf("SELECT * FROM c WHERE c", "[0]", " = 1", size)},
		{"no FROM", chainOf("SELECT 1", "+1", "", size)},
	} {
		want400(t, tc.name, query(tc.text), "nested too deeply")
	}
	_, err := e.client.NewQueryDatabasesPager(chainOf("SELECT * FROM r WHERE r.id = 1", "+1", "", size), nil).NextPage(ctx)
	want400(t, "databases feed", err, "nested too deeply")
	_, err = db.NewQueryContainersPager(chainOf("SELECT * FROM r WHERE r", ".a", "", size), nil).NextPage(ctx)
	want400(t, "containers feed", err, "nested too deeply")

	ops := azcosmos.PatchOperations{}
	ops.SetCondition(chainOf("FROM c WHERE c.v = 1", "+0", "", size))
	ops.AppendSet("/v", 2)
	_, err = c.PatchItem(ctx, pk, "a", ops, nil)
	want400(t, "patch condition", err, "nested too deeply")

	// A cross-partition query without FROM, as a raw request.
	r := e.do("POST", "/dbs/db/colls/c/docs", mustJSON(t, map[string]any{"query": chainOf("SELECT VALUE 1", "+1", "", size)}),
		map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true",
			"x-ms-documentdb-query-enablecrosspartition": "true"})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "nested too deeply") {
		t.Fatalf("raw query: %d %s", r.status, r.body)
	}

	// Long OR chains, as generated filters have, still run.
	pager := c.NewQueryItemsPager(chainOf("SELECT * FROM c WHERE c.v = 1", " OR c.v = 2", "", size), pk, nil)
	page, err := pager.NextPage(ctx)
	if err != nil {
		t.Fatalf("long OR chain: %v", err)
	}
	if len(page.Items) != 1 {
		t.Fatalf("long OR chain: %d rows; want 1", len(page.Items))
	}
}

// TestPatchCannotNestTooDeep: a patch that would nest the item past the
// service's limit answers 400 and leaves the item readable and unchanged.
func TestPatchCannotNestTooDeep(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	pk := azcosmos.NewPartitionKeyString("p")
	if _, err := c.CreateItem(ctx, pk, []byte(`{"id":"a","pk":"p","v":1}`), nil); err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat(`{"x":`, 128) + "1" + strings.Repeat("}", 128)
	ops := azcosmos.PatchOperations{}
	ops.AppendSet("/d", json.RawMessage(deep))
	_, err := c.PatchItem(ctx, pk, "a", ops, nil)
	want400(t, "patch", err, "nesting depth")

	batch := c.NewTransactionalBatch(pk)
	batch.PatchItem("a", ops, nil)
	res, err := c.ExecuteTransactionalBatch(ctx, batch, nil)
	if err != nil {
		t.Fatalf("batch: %v", err)
	}
	if res.Success || res.OperationResults[0].StatusCode != http.StatusBadRequest {
		t.Fatalf("batch patch: success %v, status %d; want 400", res.Success, res.OperationResults[0].StatusCode)
	}

	got, err := c.ReadItem(ctx, pk, "a", nil)
	if err != nil {
		t.Fatalf("read after the refused patches: %v", err)
	}
	var item map[string]any
	if err := json.Unmarshal(got.Value, &item); err != nil {
		t.Fatal(err)
	}
	if _, ok := item["d"]; ok {
		t.Fatalf("the refused patch was stored: %s", got.Value)
	}
}
