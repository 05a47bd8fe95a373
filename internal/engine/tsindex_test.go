package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// TestTsIndex checks the index entries of _ts (index.go): ORDER BY c._ts,
// a range filter on it and an ORDER BY through a composite index with it
// read about a page, over a range and within a partition, where they read
// the whole scope or a group without them, and return eval's rows. A container whose index version was built without them (by
// an earlier Mayfly) answers the same rows by sorting in memory until the
// indexer gives it a version with them.
func TestTsIndex(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/g"},{"path":"/_ts","order":"descending"}]]}}`)
	ctx := context.Background()
	// An index version without _ts, as an earlier Mayfly built it.
	err := be.e.store.Update(ctx, func(tx storage.Txn) error {
		c, err := be.e.loadContainer(tx, "db", "c")
		if err != nil {
			return err
		}
		c.Index.TS = false
		return setJSON(tx, containerKey(c.DBRid, c.ID), c)
	})
	if err != nil {
		t.Fatal(err)
	}
	be.e.containerChanged(ctx, be.container(t))
	// 600 items over six partitions, a second apart in groups of three,
	// then every seventh rewritten later.
	for i := range 600 {
		if i%3 == 0 {
			be.clock.Advance(time.Second)
		}
		be.seed(t, fmt.Sprintf(`{"id":"d%03d","pk":"p%d","n":%d,"g":%d}`, i, i%6, i, i%2))
	}
	for i := 0; i < 600; i += 7 {
		be.clock.Advance(time.Second)
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: batchRef(""), Mode: ModeUpsert,
			Body: []byte(fmt.Sprintf(`{"id":"d%03d","pk":"p%d","n":%d,"g":%d,"again":true}`, i, i%6, i, i%2))}); err != nil {
			t.Fatal(err)
		}
	}
	queries := []QueryParams{
		{ItemRef: batchRef(""), Query: "SELECT VALUE c.id FROM c ORDER BY c._ts DESC", RangeID: "0"},
		{ItemRef: batchRef(""), Query: "SELECT VALUE c.id FROM c ORDER BY c._ts", RangeID: "0"},
		{ItemRef: batchRef(`["p2"]`), Query: "SELECT VALUE c.id FROM c ORDER BY c._ts DESC"},
		{ItemRef: batchRef(""), Query: fmt.Sprintf("SELECT VALUE c.id FROM c WHERE c._ts > %d", batchT0.Unix()+200), RangeID: "0"},
		// Through the composite index on (g, _ts DESC).
		{ItemRef: batchRef(""), Query: "SELECT VALUE c.id FROM c ORDER BY c.g, c._ts DESC", RangeID: "0"},
	}
	// drain returns q's rows in pages of ten and the most records a page
	// read.
	drain := func(q QueryParams) ([]string, int) {
		t.Helper()
		q.MaxItemCount = 10
		most := 0
		rows := drainRows(t, be.e, q, func(_ int, page *FeedPage) { most = max(most, page.Examined) })
		return rows, most
	}
	want := map[string][]string{}
	for _, q := range queries {
		rows, most := drain(q)
		if len(rows) < 30 || most < 50 {
			t.Fatalf("%s without _ts entries: %d rows, at most %d records a page: the test no longer shows the entries' use", q.Query, len(rows), most)
		}
		want[q.Query+fmt.Sprint(q.PartitionKey)] = rows
	}
	for _, q := range queries {
		be.orderReady(t, q) // the new version, then the entries ORDER BY asks for
	}
	if c := be.container(t); !c.Index.Ready || !c.Index.TS || c.Index.Version != 2 {
		t.Fatalf("index %+v, want version 2, ready, with _ts", c.Index)
	}
	for _, q := range queries {
		rows, most := drain(q)
		if !slices.Equal(rows, want[q.Query+fmt.Sprint(q.PartitionKey)]) {
			t.Errorf("%s: rows with the _ts entries differ:\n got %v\nwant %v", q.Query, rows, want[q.Query+fmt.Sprint(q.PartitionKey)])
		}
		if most > 15 {
			t.Errorf("%s: a page read %d records", q.Query, most)
		}
	}
	if _, err := be.e.CheckIndexes(ctx); err != nil {
		t.Fatal(err)
	}
}
