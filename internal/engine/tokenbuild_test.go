package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// TestTokensOutliveEntryBuilds drains ORDER BY queries a row a page while
// the entries their paths ask for (absence, tie, partition and _ts
// entries, absent.go) are listed and then built between two pages: a
// token issued before must serve the page after, with the drain's rows
// unchanged. Another scope's query lists the path first (a range's asks
// for tie entries, a partition's for partition entries), its entries
// built before the drain or not, so that the drain's pages list the path
// again with more kinds of entries.
func TestTokensOutliveEntryBuilds(t *testing.T) {
	ctx := context.Background()
	rangeQ := QueryParams{ItemRef: batchRef(""), RangeID: "0"}
	partQ := QueryParams{ItemRef: batchRef(`["p1"]`)}
	for qi, q := range []string{
		"SELECT * FROM c ORDER BY c._ts",
		"SELECT * FROM c ORDER BY c._ts DESC",
		"SELECT * FROM c ORDER BY c.a",
		"SELECT * FROM c ORDER BY c.a DESC",
		"SELECT c.id FROM c WHERE c.a >= 1 ORDER BY c.a",
	} {
		for _, order := range [][2]QueryParams{{rangeQ, partQ}, {partQ, rangeQ}} {
			first, drain := order[0], order[1]
			first.Query, drain.Query = q, q
			drain.MaxItemCount = -1
			want := drainRows(t, newTieEnv(t, 60, 4, 3).e, drain, nil)
			drain.MaxItemCount = 1
			for i := range 6 {
				pre, listed := i%2 == 1, 1+i/2
				// Built first or not, alternately from query to
				// query (everyOther).
				if !everyOther(i + qi) {
					continue
				}
				t.Run(fmt.Sprintf("%s/range first %v, built first %v, listed after page %d", q, first.RangeID != "", pre, listed), func(t *testing.T) {
					be := newTieEnv(t, 60, 4, 3)
					first.MaxItemCount = 1
					if _, err := be.e.QueryItems(ctx, first); err != nil {
						t.Fatal(err)
					}
					indexer := be.e.NewIndexer(nil)
					if pre {
						drainIndexer(t, indexer)
					}
					p := drain
					var got []string
					for page := 1; ; page++ {
						res, err := be.e.QueryItems(ctx, p)
						if err != nil {
							t.Fatalf("page %d: %v", page, err)
						}
						got = append(got, feedRows(res)...)
						switch page {
						case listed:
							// The paths the pages asked for listed, their
							// entries not built yet.
							if err := be.e.listAbsent(ctx); err != nil {
								t.Fatal(err)
							}
						case listed + 1:
							drainIndexer(t, indexer)
						}
						if res.Continuation == "" {
							break
						}
						p.Continuation = res.Continuation
					}
					if !slices.Equal(got, want) {
						t.Errorf("rows\n%v\nwant\n%v", got, want)
					}
				})
			}
		}
	}
}

func feedRows(page *FeedPage) []string {
	out := make([]string, 0, len(page.Items))
	for _, it := range page.Items {
		out = append(out, string(it))
	}
	return out
}

// TestTokensRefuseAnotherContainer: a query's or a read feed's token
// names its container, so the same query over another container refuses
// it (400) rather than resume there at a position of the first.
func TestTokensRefuseAnotherContainer(t *testing.T) {
	ctx := context.Background()
	be := newTieEnv(t, 20, 2, 3)
	if _, err := be.e.CreateContainer(ctx, "db", batchJSON(t, `{"id":"d","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`), nil); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		ref := batchRef("")
		ref.Coll = "d"
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(fmt.Sprintf(`{"id":"d%03d","pk":"p%d","a":%d}`, i, i%2, i%3))}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"SELECT * FROM c", "SELECT * FROM c ORDER BY c.a", "SELECT * FROM c WHERE c.a = 1"} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: q, MaxItemCount: 3}
		page, err := be.e.QueryItems(ctx, p)
		if err != nil || page.Continuation == "" {
			t.Fatalf("%s: %v, page %+v", q, err, page)
		}
		p.Continuation = page.Continuation
		if _, err := be.e.QueryItems(ctx, p); err != nil {
			t.Fatalf("%s, page 2: %v", q, err)
		}
		p.Coll = "d"
		if _, err := be.e.QueryItems(ctx, p); !isCode(err, BadRequest) {
			t.Errorf("%s: container c's token over container d: %v, want 400", q, err)
		}
	}
	f := FeedParams{ItemRef: batchRef(""), MaxItemCount: 3}
	page, err := be.e.ReadFeed(ctx, f)
	if err != nil || page.Continuation == "" {
		t.Fatalf("read feed: %v, page %+v", err, page)
	}
	f.Continuation, f.Coll = page.Continuation, "d"
	if _, err := be.e.ReadFeed(ctx, f); !isCode(err, BadRequest) {
		t.Errorf("container c's read feed token over container d: %v, want 400", err)
	}
}
