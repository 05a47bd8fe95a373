package engine

import (
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// BenchmarkLoadTTL measures what a container's TTL setting costs writes:
// a tenth of MAYFLY_BENCH_ITEMS items inheriting the default are loaded
// (load: batches of MaxBatchOps creates, synced) into a container with TTL
// off, into one with defaultTtl -1 (the items cannot expire, so they get no
// record image) and into one with defaultTtl 3600, where each item also
// writes the record image of its expiry entry (purge.go, dueRecords). It reports
// items/s and cpu-ns/item of the loading, settled-cpu-ns/item with the
// flushes and compactions it leaves behind, and the store's disk bytes
// per item once they have settled.
func BenchmarkLoadTTL(b *testing.B) {
	n := benchItems(b) / 10
	for _, def := range []string{"null", "-1", "3600"} {
		b.Run("defaultTtl="+def, func(b *testing.B) {
			b.StopTimer()
			var cpu, settled cpuMeter
			var disk uint64
			for range b.N {
				s := openBenchEngine(b, clock.NewManual(purgeT0), nil, def)
				disk += s.timeSettled(b, &cpu, &settled, func() {
					s.load(b, 0, n, func(i int) []byte { return benchItem("w", i, "") })
				})
				s.store.Close()
			}
			items := n * b.N
			b.ReportMetric(float64(items)/b.Elapsed().Seconds(), "items/s")
			cpu.report(b, items, "cpu-ns/item")
			settled.report(b, items, "settled-cpu-ns/item")
			b.ReportMetric(float64(disk)/float64(items), "disk-B/item")
		})
	}
}
