package engine

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// BenchmarkWindowedPage reads page k of queries whose TOP or OFFSET and
// LIMIT outlast many pages, across partitions (pages of 100):
//
//   - top: SELECT TOP 100000 * FROM c
//   - offset: SELECT * FROM c OFFSET 10 LIMIT 100000
//
// at pages 1, 10 and 50. Each page goes on where the one before it ended,
// so every page should cost what page 1 costs. MAYFLY_BENCH_ITEMS sets the
// container's size (2·10⁴ by default).
//
//	go test -run '^$' -bench BenchmarkWindowedPage -benchtime 200x ./internal/engine/
func BenchmarkWindowedPage(b *testing.B) {
	n := 20_000
	if v, err := strconv.Atoi(os.Getenv("MAYFLY_BENCH_ITEMS")); err == nil && v > 0 {
		n = v
	}
	parts := max(n/100, 1)
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	s.pk = func(i int) string { return "q" + strconv.Itoa(i%parts) }
	s.block = 1
	s.load(b, 0, n, func(i int) []byte {
		return []byte(`{"id":"x` + strconv.Itoa(i) + `","pk":"q` + strconv.Itoa(i%parts) + `","n":` + strconv.Itoa(i/parts) + `,"payload":"` + benchPayload + `"}`)
	})
	s.settle(b)
	warmAll(b, s)
	ctx := context.Background()
	for _, q := range []struct{ name, text string }{
		{"top", "SELECT TOP 100000 * FROM c"},
		{"offset", "SELECT * FROM c OFFSET 10 LIMIT 100000"},
	} {
		for _, k := range []int{1, 10, 50} {
			b.Run(q.name+"/page="+strconv.Itoa(k), func(b *testing.B) {
				p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: q.text, RangeID: "0", CrossPartition: true, MaxItemCount: 100}
				p.Continuation = pageToken(b, s, p, k)
				records := 0
				for b.Loop() {
					page, err := s.QueryItems(ctx, p)
					if err != nil {
						b.Fatal(err)
					}
					if len(page.Items) != 100 {
						b.Fatalf("%d rows", len(page.Items))
					}
					records += page.Examined
					page.Release()
				}
				b.ReportMetric(float64(records)/float64(b.N), "records/op")
			})
		}
	}
}
