package engine

import (
	"context"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// BenchmarkChangeFeedFromTime measures the first page of a latest-version
// change feed started from a time, in a container that took
// MAYFLY_BENCH_CHANGES creates (10⁵ by default) in the four minutes before
// that time and 100 at it: the page returns those 100. It reports the
// log entries each page examined beside its time.
//
//	go test -run '^$' -bench BenchmarkChangeFeedFromTime ./internal/engine/
func BenchmarkChangeFeedFromTime(b *testing.B) {
	n := benchInt(b, "MAYFLY_BENCH_CHANGES", 100_000)
	const block, page = 1000, 100
	clk := clock.NewManual(purgeT0)
	s := openBenchEngine(b, clk, nil, "null")
	step := 4 * time.Minute / time.Duration((n+block-1)/block)
	for i := 0; i < n; i += block {
		s.load(b, i, min(i+block, n), func(i int) []byte { return benchItem("f", i, "") })
		clk.Advance(step)
	}
	since := clk.Now().Add(time.Second).Truncate(time.Second)
	clk.Set(since)
	s.load(b, n, n+page, func(i int) []byte { return benchItem("f", i, "") })
	s.settle(b)
	ctx := context.Background()
	p := ChangeFeedParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Start: StartTime, Since: since, MaxItemCount: page}
	examined := 0
	b.ResetTimer()
	for range b.N {
		got, err := s.ChangeFeed(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		if len(got.Items) != page {
			b.Fatalf("%d changes from %v, want %d", len(got.Items), since, page)
		}
		examined += got.Examined
	}
	b.ReportMetric(float64(examined)/float64(b.N), "entries/op")
}

// BenchmarkChangeFeedPage reads a page of 100 of a latest-version change
// feed over the whole container, at a random position of its drain, on
// MAYFLY_BENCH_ITEMS items (10⁵ by default) written interleaved over 1,000
// partitions, so that LSN order crosses the partitions at every step.
//
//	go test -run '^$' -bench BenchmarkChangeFeedPage -benchtime 500x ./internal/engine/
func BenchmarkChangeFeedPage(b *testing.B) {
	n := benchInt(b, "MAYFLY_BENCH_ITEMS", 100_000)
	const parts = 1000
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	s.loadInterleaved(b, n, parts, nil)
	s.settle(b)
	warmAll(b, s)
	ctx := context.Background()
	p := ChangeFeedParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Start: StartBeginning, MaxItemCount: 100}
	var starts []ChangeFeedParams
	for i := 0; ; i++ {
		page, err := s.ChangeFeed(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		if len(page.Items) < 100 {
			break
		}
		if i%17 == 0 {
			starts = append(starts, p)
		}
		p.Start, p.After = StartAfter, page.Position
	}
	b.ResetTimer()
	for i := range b.N {
		got, err := s.ChangeFeed(ctx, starts[i%len(starts)])
		if err != nil {
			b.Fatal(err)
		}
		if len(got.Items) != 100 {
			b.Fatalf("%d changes", len(got.Items))
		}
	}
}
