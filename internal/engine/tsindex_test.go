package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestTsIndex checks the entries of _ts (absent.go): a query that orders
// by _ts or filters on it asks for them, and once the indexer has built
// them ORDER BY c._ts and a range filter on it read about a page, over a
// range and within a partition, where they read the whole scope before,
// and return the same rows, which were eval's.
func TestTsIndex(t *testing.T) {
	be := newBatchEnv(t, "null")
	ctx := context.Background()
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
			t.Fatalf("%s before the _ts entries: %d rows, at most %d records a page: the test no longer shows the entries' use", q.Query, len(rows), most)
		}
		want[q.Query+fmt.Sprint(q.PartitionKey)] = rows
	}
	for _, q := range queries {
		be.orderReady(t, q) // the _ts entries, then the others ORDER BY asks for
	}
	if c := be.container(t); !c.tsReady() || c.Index.Version != 1 {
		t.Fatalf("index %+v, want version 1 with the _ts entries ready", c.Index)
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
	// Writers keep the entries: CheckIndexes finds each item's, at its
	// new _ts, after more upserts and a delete.
	for i := 1; i < 600; i += 11 {
		be.clock.Advance(time.Second)
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: batchRef(""), Mode: ModeUpsert,
			Body: []byte(fmt.Sprintf(`{"id":"d%03d","pk":"p%d","n":%d}`, i, i%6, i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := be.e.DeleteItem(ctx, DeleteItemParams{ItemRef: batchRef(`["p0"]`), ID: "d000"}); err != nil {
		t.Fatal(err)
	}
	if _, err := be.e.CheckIndexes(ctx); err != nil {
		t.Fatal(err)
	}
}
