package engine

import (
	"context"
	"strconv"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/partition"
)

// BenchmarkFirstPage measures the first page of 100 of queries (without
// ORDER BY but where named) whose filter is on indexed paths, across a container of
// MAYFLY_BENCH_ITEMS items (2 × 10⁵ here by default), from filters most
// items pass to filters few do, and an OR of few items beside a term of
// all of them. The planner weighs each term's index span
// against a scan of the container before the page is read; the page's
// records and index entries are reported beside its time, all the work
// the page did. Each is measured again once the builder has made the
// entries the pages asked for (the paths' tie entries), with which some
// pages read their span uncounted (plan.SpanFirst), and two-wide once more
// with a composite index of its two paths, which then serves a filter
// within one logical partition too, an equality (or an IN list) and a
// range under a composite of their paths (read whole, in order for a TOP,
// or filtering the stream of an ORDER BY of another path), and a TOP and
// an ORDER BY the composite serves in order.
//
//	go test -run '^$' -bench BenchmarkFirstPage ./internal/engine/
func BenchmarkFirstPage(b *testing.B) {
	n := benchInt(b, "MAYFLY_BENCH_ITEMS", 200_000)
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	s.load(b, 0, n, func(i int) []byte {
		return []byte(`{"id":"w` + strconv.Itoa(i) + `","pk":"` + benchPK(i) + `","all":1,"n":` + strconv.Itoa(i%100) +
			`,"k":` + strconv.Itoa(i%1000) + `,"m":` + strconv.Itoa(i%10000) + `,"payload":"` + benchPayload + `"}`)
	})
	s.settle(b)
	queries := []struct{ name, query string }{
		{"all", "SELECT * FROM c WHERE c.all = 1"},
		{"half", "SELECT * FROM c WHERE c.n >= 50"},
		{"top10-most", "SELECT TOP 10 * FROM c WHERE c.n < 90"},
		{"top10-few", "SELECT TOP 10 * FROM c WHERE c.k < 5"},
		{"two-wide", "SELECT * FROM c WHERE c.all = 1 AND c.n >= 10"},
		{"tenth", "SELECT * FROM c WHERE c.n < 10"},
		{"3-in-100", "SELECT * FROM c WHERE c.n < 3"},
		{"1-in-100", "SELECT * FROM c WHERE c.n = 7"},
		{"one-in-1000", "SELECT * FROM c WHERE c.k = 7"},
		{"one-in-10000", "SELECT * FROM c WHERE c.m = 7"},
		// An OR of 220 items beside a term every item passes, and the
		// same under an ORDER BY of another path.
		{"or-beside", "SELECT * FROM c WHERE c.all = 1 AND (c.m = 7 OR c.k = 3)"},
		{"or-beside-order", "SELECT * FROM c WHERE c.all = 1 AND (c.m = 7 OR c.k = 3) ORDER BY c.id"},
		// A range on the ORDER BY path that nearly every item passes,
		// beside an equality of 20 items.
		{"order-range-beside", "SELECT * FROM c WHERE c.k >= 5 AND c.m = 7 ORDER BY c.k"},
	}
	params := func(query string) QueryParams {
		return QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: query, RangeID: "0", CrossPartition: true, MaxItemCount: 100}
	}
	for _, q := range queries {
		b.Run(q.name, func(b *testing.B) { benchFirstPage(b, s, params(q.query)) })
	}
	// Again once the builder has made the entries the pages asked for:
	// the tie entries of the paths whose pages collected many.
	for _, q := range queries {
		s.orderReady(b, params(q.query))
	}
	for _, q := range queries {
		b.Run(q.name+"/built", func(b *testing.B) { benchFirstPage(b, s, params(q.query)) })
	}
	// And once a composite index of its two paths serves two-wide.
	body := `{"id":"` + benchColl + `","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":null,
		"indexingPolicy":{"indexingMode":"consistent","includedPaths":[{"path":"/*"}],
		"compositeIndexes":[[{"path":"/all","order":"ascending"},{"path":"/n","order":"ascending"}],[{"path":"/n"},{"path":"/k"}]]}}`
	if _, err := s.ReplaceContainer(context.Background(), benchDB, benchColl, benchParse(b, body), ""); err != nil {
		b.Fatal(err)
	}
	drainIndexer(b, s.NewIndexer(nil))
	b.Run("two-wide/composite", func(b *testing.B) { benchFirstPage(b, s, params("SELECT * FROM c WHERE c.all = 1 AND c.n >= 10")) })
	// An equality and a range that meet in a two-hundredth of the items,
	// each holding far more, under their composite (/n, /k).
	b.Run("eq-range/composite", func(b *testing.B) { benchFirstPage(b, s, params("SELECT * FROM c WHERE c.n = 7 AND c.k >= 500")) })
	// The same with an IN list of two values, and its TOP in the
	// composite's order.
	b.Run("in-range/composite", func(b *testing.B) { benchFirstPage(b, s, params("SELECT * FROM c WHERE c.n IN (3, 7) AND c.k >= 500")) })
	b.Run("in-range/top", func(b *testing.B) {
		benchFirstPage(b, s, params("SELECT TOP 10 * FROM c WHERE c.n IN (3, 7) AND c.k >= 500 ORDER BY c.n, c.k"))
	})
	// The same filter under an ORDER BY of another path: the stream
	// filtered by the composite's span.
	b.Run("in-range/stream", func(b *testing.B) {
		benchFirstPage(b, s, params("SELECT * FROM c WHERE c.n IN (3, 7) AND c.k >= 500 ORDER BY c.id"))
	})
	// A TOP that the composite walks in order, its terms holding most
	// of the items; and an ORDER BY of the two paths past an excluded
	// bound held by a hundredth of the items, whose groups of equal
	// c.n the composite orders (the absence entries the page asks for
	// built first).
	b.Run("top-composite", func(b *testing.B) {
		benchFirstPage(b, s, params("SELECT TOP 10 * FROM c WHERE c.n > 10 AND c.k >= 0 ORDER BY c.n, c.k"))
	})
	past := params("SELECT * FROM c WHERE c.n > 10 ORDER BY c.n, c.k")
	s.orderReady(b, past)
	b.Run("order-composite", func(b *testing.B) { benchFirstPage(b, s, past) })
	// An equality of 20 items beside a NOT IS_DEFINED every item
	// passes (the path's absence entries, which the page asks for,
	// built first).
	absent := params("SELECT * FROM c WHERE c.m = 7 AND NOT IS_DEFINED(c.gone)")
	s.orderReady(b, absent)
	b.Run("not-defined-beside", func(b *testing.B) { benchFirstPage(b, s, absent) })
	// And the composite's span within one logical partition (of 200
	// items here, 20 rows), before and after the composite's entries of
	// each partition apart, which the page asks for, are built.
	part := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl, HasKey: true, PartitionKey: partition.Key{partition.String(benchPK(0))}},
		Query: "SELECT * FROM c WHERE c.all = 1 AND c.n >= 90", MaxItemCount: 100}
	b.Run("partition-composite", func(b *testing.B) { benchFirstPage(b, s, part) })
	s.orderReady(b, part)
	b.Run("partition-composite/built", func(b *testing.B) { benchFirstPage(b, s, part) })
}

// benchFirstPage reads the first page of p over and over, and reports its
// records and index entries beside its time.
func benchFirstPage(b *testing.B, s *benchStore, p QueryParams) {
	records, entries := 0, 0
	for range b.N {
		page, err := s.QueryItems(context.Background(), p)
		if err != nil {
			b.Fatal(err)
		}
		if len(page.Items) == 0 {
			b.Fatalf("%s: no rows", p.Query)
		}
		records, entries = records+page.Examined, entries+page.IndexEntries
		page.Release()
	}
	b.ReportMetric(float64(records)/float64(b.N), "records/op")
	b.ReportMetric(float64(entries)/float64(b.N), "entries/op")
}
