package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/storage/teststore"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// newDepthEnv is an engine on a durable store (teststore: Pebble in a
// temporary directory, or PostgreSQL), with database "db" and container
// "c" (partitioned on /pk) made from body.
func newDepthEnv(t *testing.T, body string) *batchEnv {
	t.Helper()
	s, _ := teststore.OpenDurable(t)
	t.Cleanup(func() { s.Close() })
	return newBatchEnvOn(t, s, body)
}

// nested returns a JSON value n levels deep: {"x":{"x":…1…}}.
func nested(n int) string {
	return strings.Repeat(`{"x":`, n) + "1" + strings.Repeat("}", n)
}

// pathX returns the pointer /x/x/… of n segments.
func pathX(n int) string { return strings.Repeat("/x", n) }

// wantCode fails unless err is an engine error with code want.
func wantCode(t *testing.T, what string, err error, want Code) {
	t.Helper()
	var ee *Error
	if !errors.As(err, &ee) || ee.Code != want {
		t.Fatalf("%s: got %v; want %s", what, err, codeNames[want])
	}
}

// TestQueryChainsTooDeep: every place that takes query text answers a chain
// that builds a deep tree with a 400, at the sizes that used to overflow
// the stack and kill the process.
func TestQueryChainsTooDeep(t *testing.T) {
	be := newDepthEnv(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	be.seed(t, `{"id":"a","pk":"p","v":1}`)
	ctx := context.Background()
	const size = 300 << 10
	chain := func(prefix, part, suffix string) string {
		return prefix + strings.Repeat(part, (size-len(prefix)-len(suffix))/len(part)) + suffix
	}
	items := func(q string) error {
		_, err := be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(""), Query: q, CrossPartition: true})
		return err
	}
	resources := func(kind ResourceKind) func(string) error {
		return func(q string) error {
			_, err := be.e.QueryResources(ctx, ResourceQueryParams{Kind: kind, DB: "db", Query: q})
			return err
		}
	}
	patchCondition := func(q string) error {
		_, err := be.e.PatchItem(ctx, PatchItemParams{ItemRef: batchRef(`["p"]`), ID: "a", Condition: q,
			Ops: []PatchOp{{Op: "set", Path: []string{"v"}, Value: batchJSON(t, "2")}}})
		return err
	}
	batchCondition := func(q string) error {
		body := fmt.Sprintf(`[{"operationType":"Patch","id":"a","resourceBody":{"condition":%q,"operations":[{"op":"set","path":"/v","value":2}]}}]`, q)
		ops, err := ParseBatch([]byte(body))
		if err != nil {
			return err
		}
		res, err := be.e.Batch(ctx, BatchParams{ItemRef: batchRef(`["p"]`), Ops: ops, Atomic: true})
		if err != nil {
			return err
		}
		if e := res.Ops[0].Err; e != nil {
			return e
		}
		return nil
	}
	cases := []struct {
		name string
		run  func(string) error
		text string
	}{
		{"sum", items, chain("SELECT * FROM c WHERE c.v = 1", "+1", "")},
		{"members", items, chain("SELECT * FROM c WHERE c", ".a", " = 1")},
		{"indexes", items, chain("SELECT * FROM c WHERE c", "[0]", " = 1")},
		{"no FROM", items, chain("SELECT 1", "+1", "")},
		{"databases feed", resources(ResourceDatabases), chain("SELECT * FROM r WHERE r.id = 1", "+1", "")},
		{"containers feed", resources(ResourceContainers), chain("SELECT * FROM r WHERE r", ".a", "")},
		{"offers feed", resources(ResourceOffers), chain("SELECT * FROM r WHERE r", "[0]", "")},
		{"patch condition", patchCondition, chain("FROM c WHERE c.v = 1", "+0", "")},
		{"patch condition in a batch", batchCondition, chain("FROM c WHERE c", ".a", " = 1")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(tc.text)
			wantCode(t, tc.name, err, BadRequest)
			if !strings.Contains(err.Error(), "nested too deeply") {
				t.Fatalf("got %v; want the depth error", err)
			}
		})
	}
	// And the long OR chains that generated filters use still run.
	q := chain("SELECT * FROM c WHERE c.v = 1", " OR c.v = 2", "")
	page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(""), Query: q, CrossPartition: true})
	if err != nil {
		t.Fatalf("long OR chain: %v", err)
	}
	if len(page.Items) != 1 {
		t.Fatalf("long OR chain: %d rows; want 1", len(page.Items))
	}
}

// TestWritesCheckNesting: no write path stores an item nested deeper than
// the service allows; each answers 400 and leaves the item as it was.
func TestWritesCheckNesting(t *testing.T) {
	ctx := context.Background()
	deep := nested(maxItemDepth) // with the item's own object, one level too many
	ok := nested(maxItemDepth - 1)
	single := func(op string) func(*batchEnv) error {
		return func(be *batchEnv) error {
			ops, _, err := ParsePatch([]byte(op))
			if err != nil {
				return err
			}
			_, err = be.e.PatchItem(ctx, PatchItemParams{ItemRef: batchRef(`["p"]`), ID: "a", Ops: ops})
			return err
		}
	}
	batch := func(atomic bool, ops string) func(*batchEnv) error {
		return func(be *batchEnv) error {
			parsed, err := ParseBatch([]byte(ops))
			if err != nil {
				return err
			}
			res, err := be.e.Batch(ctx, BatchParams{ItemRef: batchRef(`["p"]`), Ops: parsed, Atomic: atomic, ContinueOnError: true})
			if err != nil {
				return err
			}
			for _, op := range res.Ops {
				if op.Err != nil && op.Err.Code != FailedDependency {
					return op.Err
				}
			}
			return nil
		}
	}
	write := func(mode WriteMode, body string) func(*batchEnv) error {
		return func(be *batchEnv) error {
			ref := batchRef("")
			_, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: mode, ID: "a", Body: []byte(body)})
			return err
		}
	}
	cases := []struct {
		name string
		run  func(*batchEnv) error
	}{
		{"create", write(ModeCreate, `{"id":"b","pk":"p","d":`+deep+`}`)},
		{"replace", write(ModeReplace, `{"id":"a","pk":"p","d":`+deep+`}`)},
		{"upsert", write(ModeUpsert, `{"id":"a","pk":"p","d":`+deep+`}`)},
		{"patch set", single(`[{"op":"set","path":"/d","value":` + deep + `}]`)},
		{"patch add", single(`[{"op":"add","path":"/d","value":` + deep + `}]`)},
		{"patch replace", single(`[{"op":"replace","path":"/v","value":` + deep + `}]`)},
		{"patch set under a deep path", single(`[{"op":"set","path":"/ok` + pathX(maxItemDepth-1) + `","value":{"y":1}}]`)},
		{"patch ops that add up", single(`[{"op":"set","path":"/d","value":` + ok + `},{"op":"set","path":"/d` + pathX(maxItemDepth-2) + `","value":{"y":{"z":1}}}]`)},
		{"patch move", single(`[{"op":"set","path":"/d","value":{"y":1}},{"op":"move","from":"/ok","path":"/d/y"}]`)},
		{"batch patch", batch(true, `[{"operationType":"Patch","id":"a","resourceBody":{"operations":[{"op":"set","path":"/d","value":`+deep+`}]}}]`)},
		{"batch create", batch(true, `[{"operationType":"Create","resourceBody":{"id":"b","pk":"p","d":`+deep+`}}]`)},
		{"bulk patch", batch(false, `[{"operationType":"Patch","id":"a","resourceBody":{"operations":[{"op":"set","path":"/d","value":`+deep+`}]}}]`)},
		{"bulk upsert", batch(false, `[{"operationType":"Upsert","resourceBody":{"id":"a","pk":"p","d":`+deep+`}}]`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			be := newDepthEnv(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
			be.seed(t, `{"id":"a","pk":"p","v":1,"ok":`+ok+`}`)
			before, err := be.e.ReadItem(ctx, ReadItemParams{ItemRef: batchRef(`["p"]`), ID: "a"})
			if err != nil {
				t.Fatal(err)
			}
			err = tc.run(be)
			wantCode(t, tc.name, err, BadRequest)
			if !strings.Contains(err.Error(), "nesting depth") {
				t.Fatalf("got %v; want the nesting error", err)
			}
			after, err := be.e.ReadItem(ctx, ReadItemParams{ItemRef: batchRef(`["p"]`), ID: "a"})
			if err != nil || string(after.Body) != string(before.Body) {
				t.Fatalf("item changed: %v", err)
			}
		})
	}
}

// TestDeepStoredItemsStayManageable: an item an earlier build stored past
// the nesting limit (its patches did not check it) can still be read,
// queried, fixed, replaced, deleted and purged, and leaves the indexes
// consistent. Items that deep are made here by lifting the limit, as that
// build had none.
func TestDeepStoredItemsStayManageable(t *testing.T) {
	ctx := context.Background()
	be := newDepthEnv(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1,
		"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/u"]}]}}`)
	saved := maxItemDepth
	maxItemDepth = 1 << 30
	// grow patches the item id three times, each time with a value 120
	// levels deep under the bottom of the last: an item about 360 levels
	// deep, past what the document parser of that build accepted (256),
	// though each step stayed within it.
	grow := func(id string) {
		t.Helper()
		for depth := 0; depth < 360; depth += 120 {
			body := fmt.Sprintf(`[{"op":"set","path":"/d%s","value":%s}]`, pathX(depth), nested(120))
			ops, _, err := ParsePatch([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := be.e.PatchItem(ctx, PatchItemParams{ItemRef: batchRef(`["p"]`), ID: id, Ops: ops}); err != nil {
				t.Fatalf("grow %s: %v", id, err)
			}
		}
	}
	for i, id := range []string{"fix", "replace", "delete", "purge", "other"} {
		ttl := ""
		if id == "purge" {
			ttl = `,"ttl":10`
		}
		be.seed(t, fmt.Sprintf(`{"id":%q,"pk":"p","u":%d%s}`, id, i, ttl))
		grow(id)
	}
	maxItemDepth = saved

	page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(`["p"]`), Query: `SELECT c.id FROM c WHERE c.pk = "p" AND IS_DEFINED(c.d.x)`})
	if err != nil {
		t.Fatalf("query over the partition: %v", err)
	}
	if len(page.Items) != 5 {
		t.Fatalf("query over the partition: %d rows; want 5", len(page.Items))
	}
	if _, err := be.e.ReadItem(ctx, ReadItemParams{ItemRef: batchRef(`["p"]`), ID: "fix"}); err != nil {
		t.Fatalf("read: %v", err)
	}
	// Adding to it is refused with the limit; removing the deep part is
	// how it is fixed.
	_, err = be.e.PatchItem(ctx, PatchItemParams{ItemRef: batchRef(`["p"]`), ID: "fix",
		Ops: []PatchOp{{Op: "set", Path: []string{"v"}, Value: batchJSON(t, "1")}}})
	wantCode(t, "patch that keeps it too deep", err, BadRequest)
	if _, err := be.e.PatchItem(ctx, PatchItemParams{ItemRef: batchRef(`["p"]`), ID: "fix",
		Ops: []PatchOp{{Op: "remove", Path: []string{"d"}}}}); err != nil {
		t.Fatalf("patch that removes the deep part: %v", err)
	}
	if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: batchRef(""), Mode: ModeReplace, ID: "replace",
		Body: []byte(`{"id":"replace","pk":"p","u":1}`)}); err != nil {
		t.Fatalf("replace: %v", err)
	}
	if _, err := be.e.DeleteItem(ctx, DeleteItemParams{ItemRef: batchRef(`["p"]`), ID: "delete"}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	be.clock.Advance(time.Minute)
	res, err := be.e.PurgeDue(ctx, ttl.PurgeParams{Container: "dbs/db/colls/c", Now: be.clock.Now(), Limit: 10})
	if err != nil || len(res.Items) != 1 {
		t.Fatalf("purge: %v, %d items", err, len(res.Items))
	}
	if _, err := be.e.CheckIndexes(ctx); err != nil {
		t.Fatalf("index check: %v", err)
	}
}

// TestUnreadableBodyStillRemovable: an item whose stored body cannot be
// parsed at all (here: deeper than the parser accepts) is still deleted
// with all its index and unique-key entries, and purged when it expires.
// (The deep part is kept out of the index only to keep the test fast: an
// indexed path n levels deep makes n entries of up to n segments.)
func TestUnreadableBodyStillRemovable(t *testing.T) {
	ctx := context.Background()
	be := newDepthEnv(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1,
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/d/*"}],
			"compositeIndexes":[[{"path":"/u"},{"path":"/pk"}]]},
		"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/u"]}]}}`)
	saved := maxItemDepth
	maxItemDepth = 1 << 30
	const step = 4000 // under the parser's limit per request
	for i, id := range []string{"delete", "purge"} {
		be.seed(t, fmt.Sprintf(`{"id":%q,"pk":"p","u":%d,"ttl":%d}`, id, i, 10*(i*1000+1)))
		for depth := 0; depth < 2*step; depth += step {
			body := fmt.Sprintf(`[{"op":"set","path":"/d%s","value":%s}]`, pathX(depth), nested(step))
			ops, _, err := ParsePatch([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := be.e.PatchItem(ctx, PatchItemParams{ItemRef: batchRef(`["p"]`), ID: id, Ops: ops}); err != nil {
				t.Fatalf("grow %s: %v", id, err)
			}
		}
	}
	maxItemDepth = saved
	be.seed(t, `{"id":"keep","pk":"p","u":9}`)

	if _, err := be.e.DeleteItem(ctx, DeleteItemParams{ItemRef: batchRef(`["p"]`), ID: "delete"}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	be.clock.Advance(20000 * time.Second)
	res, err := be.e.PurgeDue(ctx, ttl.PurgeParams{Container: "dbs/db/colls/c", Now: be.clock.Now(), Limit: 10})
	if err != nil || len(res.Items) != 1 {
		t.Fatalf("purge: %v, %d items", err, len(res.Items))
	}
	counts, err := be.e.CheckIndexes(ctx)
	if err != nil {
		t.Fatalf("index check: %v", err)
	}
	if n := counts["dbs/db/colls/c"].Items; n != 1 {
		t.Fatalf("%d items left; want 1", n)
	}
	// The unique values of the removed items are free again.
	be.seed(t, `{"id":"again","pk":"p","u":0}`, `{"id":"again2","pk":"p","u":1}`)
}

// TestQueryTextTooLong: text over the limit gets the service's code and
// message, in the service's error body.
func TestQueryTextTooLong(t *testing.T) {
	be := newDepthEnv(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	q := "SELECT VALUE '" + strings.Repeat("a", 512<<10) + "'"
	_, err := be.e.QueryItems(context.Background(), QueryParams{ItemRef: batchRef(""), Query: q, CrossPartition: true})
	wantCode(t, "long query", err, BadRequest)
	want := `"code":"SC3020","message":"The SQL query text exceeded the maximum limit of 524288 characters."`
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v; want %s", err, want)
	}
}
