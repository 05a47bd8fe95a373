package engine

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// BenchmarkWholeScopeAggregate runs queries that read every document of
// the container before their first row is known, across partitions, on
// items written interleaved over their partitions (so that _rid order,
// the order they are read in, crosses the partitions at every step):
//
//   - sum: SELECT VALUE SUM(c.n) FROM c
//   - group-by: SELECT c.n, COUNT(1) AS k FROM c GROUP BY c.n (100 groups)
//
// MAYFLY_BENCH_ITEMS sets the container's size (10⁵ by default).
//
//	go test -run '^$' -bench BenchmarkWholeScopeAggregate -benchtime 20x ./internal/engine/
func BenchmarkWholeScopeAggregate(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("MAYFLY_BENCH_ITEMS")); err == nil && v > 0 {
		n = v
	}
	parts := max(n/100, 1)
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	s.loadInterleaved(b, n, parts, func(i int) string { return `,"n":` + strconv.Itoa(i/parts) })
	s.settle(b)
	warmAll(b, s)
	ctx := context.Background()
	for _, q := range []struct{ name, text string }{
		{"sum", "SELECT VALUE SUM(c.n) FROM c"},
		{"group-by", "SELECT c.n, COUNT(1) AS k FROM c GROUP BY c.n"},
	} {
		b.Run(q.name, func(b *testing.B) {
			records := 0
			for b.Loop() {
				page, err := s.QueryItems(ctx, QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: q.text, RangeID: "0", CrossPartition: true})
				if err != nil {
					b.Fatal(err)
				}
				if page.Continuation != "" {
					b.Fatalf("%s: more than one page", q.name)
				}
				records += page.Examined
				page.Release()
			}
			b.ReportMetric(float64(records)/float64(b.N), "records/op")
		})
	}
}
