package engine

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// BenchmarkUpsertWorkingSet is make bench's write phase without the
// transport: 16 goroutines upsert over a working set of 10,000 items in a
// container on durable Pebble, each write changing one property (n) as
// mayfly-load's do. It reports the process CPU per upsert, the background
// flushes and compactions of the run included.
func BenchmarkUpsertWorkingSet(b *testing.B) {
	const (
		workers    = 16
		workingSet = 10_000
	)
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	defer s.store.Close()
	ctx := context.Background()
	ref := ItemRef{DB: benchDB, Coll: benchColl}
	var next atomic.Int64
	var cpu cpuMeter
	b.ResetTimer()
	cpu.start()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				n := int(i % workingSet)
				body := []byte(`{"id":"w` + strconv.Itoa(n) + `","pk":"` + benchPK(n) + `","n":` + strconv.FormatInt(i, 10) + `,"payload":"` + benchPayload + `"}`)
				if _, err := s.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeUpsert, Body: body}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	cpu.stop()
	cpu.report(b, b.N, "cpu-ns/op")
}
