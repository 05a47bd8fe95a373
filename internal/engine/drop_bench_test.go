package engine

import (
	"context"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// BenchmarkDropContainer times DeleteContainer on a container of
// MAYFLY_BENCH_ITEMS items: the request, which deletes the container's data
// before it answers (cleanup.go), and then the store's own work until its
// size settles (the compactions that give the space back). It reports the
// request's time and CPU and the settled CPU, per item dropped, and the
// bytes left on disk once settled.
func BenchmarkDropContainer(b *testing.B) {
	n := benchItems(b)
	b.StopTimer()
	var cpu, settled cpuMeter
	for range b.N {
		s := openBenchEngine(b, clock.Real{}, nil, "null")
		s.load(b, 0, n, func(i int) []byte { return benchItem("x", i, "") })
		s.settle(b)
		left := s.timeSettled(b, &cpu, &settled, func() {
			if err := s.DeleteContainer(context.Background(), benchDB, benchColl, ""); err != nil {
				b.Fatal(err)
			}
		})
		b.ReportMetric(float64(left), "bytes-left")
	}
	cpu.report(b, n*b.N, "cpu-ns/item")
	settled.report(b, n*b.N, "settled-cpu-ns/item")
}
