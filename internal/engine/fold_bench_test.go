package engine

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/document"
)

// BenchmarkFilterOnNow: the first page of 100 of a filter that eval folds
// (eval/fold.go), over containers of one item a second whose newest items
// are the last written, interleaved over partitions of 100:
//
//   - now: the items of the last ten minutes, by a filter on the
//     request's "now", whose path's index it reads once folded, where it
//     compared every entry's value
//   - optional: an optional filter, (@s = null OR c.s = @s) AND (@o = null
//     OR c.o = @o), with @s = 's7' (a fiftieth of the items) and @o null,
//     which reads the index of c.s once folded, where it scanned
//
// Its rows are the same 100 at every size.
//
//	go test -run '^$' -bench BenchmarkFilterOnNow -benchtime 200x ./internal/engine/
func BenchmarkFilterOnNow(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			s := openBenchEngine(b, clock.Real{}, nil, "null")
			t0 := time.Now().Unix()
			s.loadInterleaved(b, n, n/100, func(i int) string {
				return `,"t":` + strconv.FormatInt(t0-int64(n-i), 10) + `,"s":"s` + strconv.Itoa(i%50) + `"`
			})
			s.settle(b)
			for _, shape := range []struct{ name, query string }{
				{"now", "SELECT * FROM c WHERE c.t > GetCurrentTimestamp() / 1000 - 600"},
				{"optional", "SELECT * FROM c WHERE (@s = null OR c.s = @s) AND (@o = null OR c.o = @o)"},
			} {
				b.Run(shape.name, func(b *testing.B) {
					p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, RangeID: "0", CrossPartition: true, MaxItemCount: 100,
						Query: shape.query, Params: map[string]document.Value{"@s": document.Str("s7"), "@o": document.NullValue()}}
					firstPage(b, s, p, 100)
				})
			}
		})
	}
}

// firstPage runs query p's first page b.N times, each of rows rows (any
// number when rows < 0), and reports the records and entries it read.
func firstPage(b *testing.B, s *benchStore, p QueryParams, rows int) {
	var records, entries int
	b.ResetTimer()
	for b.Loop() {
		page, err := s.QueryItems(context.Background(), p)
		if err != nil {
			b.Fatal(err)
		}
		if rows >= 0 && len(page.Items) != rows {
			b.Fatalf("%d rows, want %d", len(page.Items), rows)
		}
		records += page.Examined
		entries += page.IndexEntries
		page.Release()
	}
	b.ReportMetric(float64(records)/float64(b.N), "records/op")
	b.ReportMetric(float64(entries)/float64(b.N), "entries/op")
}
