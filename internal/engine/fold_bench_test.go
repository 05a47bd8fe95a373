package engine

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// BenchmarkFilterOnNow: the first page of 100 of the items of the last ten
// minutes, by a filter on the request's "now", over containers of one item
// a second whose newest items are the last written, interleaved over
// partitions of 100. Its rows are the same 100 at every size; with the
// filter folded (eval/fold.go) the page reads their entries and records
// through the path's index, where it compared every entry's value.
//
//	go test -run '^$' -bench BenchmarkFilterOnNow -benchtime 200x ./internal/engine/
func BenchmarkFilterOnNow(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			s := openBenchEngine(b, clock.Real{}, nil, "null")
			t0 := time.Now().Unix()
			s.loadInterleaved(b, n, n/100, func(i int) string { return `,"t":` + strconv.FormatInt(t0-int64(n-i), 10) })
			s.settle(b)
			p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, RangeID: "0", CrossPartition: true, MaxItemCount: 100,
				Query: "SELECT * FROM c WHERE c.t > GetCurrentTimestamp() / 1000 - 600"}
			var records, entries int
			b.ResetTimer()
			for b.Loop() {
				page, err := s.QueryItems(context.Background(), p)
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Items) != 100 {
					b.Fatalf("%d rows, want 100", len(page.Items))
				}
				records += page.Examined
				entries += page.IndexEntries
				page.Release()
			}
			b.ReportMetric(float64(records)/float64(b.N), "records/op")
			b.ReportMetric(float64(entries)/float64(b.N), "entries/op")
		})
	}
}
