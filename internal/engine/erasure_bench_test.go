package engine

import (
	"bytes"
	"context"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// The payload markers of BenchmarkErasure's expiring and live items.
var goneMarker, liveMarker = []byte("GONEmark"), []byte("LIVEmark")

// BenchmarkErasure measures the erasure of MAYFLY_BENCH_ITEMS expired
// items among as many live ones (ttl.md B4), after the purge has deleted
// them: the wall time and process CPU of one Erase of the container, the
// bytes Pebble's compactions wrote for it per byte of item erased (the
// write amplification erasure adds), and, under "reads", user point reads
// at MAYFLY_BENCH_READ_RATE per second during the erasure against the same
// reads, for as long, on a checkpoint of the store taken as the erasure begins,
// where Pebble's own flushes and compactions go on but nothing is erased
// (p99-ratio; the goal is at most 1.05). p99-settled-ratio compares them
// instead with the same reads once the erased store has settled, which
// also charges the erasure with the compaction debt the purge left.
// The erasure lag of an item is then at most half its deadline, plus the
// loop's look (a second), plus this wall time. Afterwards every file of
// the store is searched (pebblestore.SearchFiles): no expired item's
// payload may be found, and live ones must be.
func BenchmarkErasure(b *testing.B) {
	for _, reads := range []bool{false, true} {
		name := "idle"
		if reads {
			name = "reads"
		}
		b.Run(name, func(b *testing.B) { benchErasure(b, reads) })
	}
}

func benchErasure(b *testing.B, reads bool) {
	if testing.Short() {
		b.Skip("loads a large data set")
	}
	n := benchItems(b)
	rate := benchInt(b, "MAYFLY_BENCH_READ_RATE", 1000)
	b.StopTimer()
	var cpu cpuMeter
	var idle, during, settled []time.Duration
	erased, compacted, erasedBytes := 0, uint64(0), int64(0)
	var wall time.Duration
	for range b.N {
		clk := clock.NewManual(purgeT0)
		s := openBenchEngine(b, clk, nil, "-1")
		ps, ok := s.store.(*pebblestore.Store)
		if !ok {
			b.Skip("erasure is measured on Pebble")
		}
		total := 2 * n
		var liveIdx []int
		// Every item's payload holds its kind's marker, which the files
		// are searched for once erasure is done.
		s.load(b, 0, total, func(i int) []byte {
			if i%2 == 0 {
				return bytes.Replace(benchItem("e", i, ""), []byte("xxxxxxxx"), liveMarker, 1)
			}
			return bytes.Replace(benchItem("e", i, "60"), []byte("xxxxxxxx"), goneMarker, 1)
		})
		for i := 0; i < total; i += 2 {
			liveIdx = append(liveIdx, i)
		}
		s.settle(b)
		clk.Advance(61 * time.Second)
		if got := s.purgeAll(b, clk.Now(), ttl.DefaultBatchSize); got != n {
			b.Fatalf("purged %d items, want %d", got, n)
		}
		// No settling here: the erasure starts with the purge's deletions
		// where they are, most not yet compacted, its worst case. (On a
		// server, compactions between the purge and the erasure, half a
		// deadline later, would have taken part of its work.)
		clk.Advance(ttl.DefaultEraseDeadline / 2)
		twinDir := ""
		if reads {
			twinDir = s.checkpoint(b)
		}
		ctx := context.Background()
		backlog, err := s.ErasureBacklog(ctx, 1)
		if err != nil || len(backlog) != 1 {
			b.Fatalf("erasure backlog %+v, %v", backlog, err)
		}
		var mu sync.Mutex
		readFrom := func(s *benchStore, into *[]time.Duration) func(int) {
			return func(int) {
				i := liveIdx[rand.IntN(len(liveIdx))]
				start := time.Now()
				if _, err := s.ReadItem(ctx, ReadItemParams{ItemRef: benchRef(i), ID: "e" + strconv.Itoa(i)}); err != nil {
					b.Errorf("read item %d: %v", i, err)
					return
				}
				el := time.Since(start)
				mu.Lock()
				*into = append(*into, el)
				mu.Unlock()
			}
		}
		read := func(into *[]time.Duration) func(int) { return readFrom(s, into) }
		before := ps.CompactedBytes()
		stop := make(chan struct{})
		readsDone := make(chan struct{})
		start := time.Now()
		if reads {
			atRate(rate, time.Second, 8, read(new([]time.Duration))) // warm the cache
			start = time.Now()
			go func() {
				defer close(readsDone)
				for {
					select {
					case <-stop:
						return
					default:
					}
					atRate(rate, 500*time.Millisecond, 8, read(&during))
				}
			}()
		}
		cpu.start()
		b.StartTimer()
		res, err := s.Erase(ctx, []string{backlog[0].ID})
		b.StopTimer()
		cpu.stop()
		wall += time.Since(start)
		if reads {
			close(stop)
			<-readsDone
		}
		if err != nil {
			b.Fatal(err)
		}
		if reads {
			took := max(time.Since(start), 5*time.Second)
			// The same reads for as long on the twin, opened now on the
			// checkpoint, which erases nothing: the store as it was, its
			// own flushes and compactions running. (Opening replays its
			// write-ahead log, which may flush it: if anything, it starts
			// more settled than the store did.)
			twin := reopenBenchEngine(b, twinDir, clk)
			atRate(rate, time.Second, 8, readFrom(twin, new([]time.Duration)))
			atRate(rate, took, 8, readFrom(twin, &idle))
			twin.store.Close()
			// And on the erased store once it has settled.
			s.settle(b)
			atRate(rate, took, 8, read(&settled))
		}
		if len(res.Expired) != n || !res.Physical {
			b.Fatalf("erased %d items (physically: %v), want %d", len(res.Expired), res.Physical, n)
		}
		erased += n
		erasedBytes += res.Bytes
		compacted += ps.CompactedBytes() - before
		found, err := pebblestore.SearchFiles(ps.Dir(), [][]byte{goneMarker, liveMarker})
		if err != nil {
			b.Fatal(err)
		}
		if files := found[string(goneMarker)]; len(files) > 0 {
			b.Fatalf("an erased item's payload is still in %v", files)
		}
		if len(found[string(liveMarker)]) == 0 {
			b.Fatal("no live item's payload is in the files: the search finds nothing")
		}
		s.store.Close()
	}
	b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "erase-ms")
	b.ReportMetric(float64(erased)/wall.Seconds(), "items/s")
	cpu.report(b, erased, "cpu-ns/item")
	b.ReportMetric(float64(compacted)/float64(erasedBytes), "compacted-B/erased-B")
	if reads {
		p99Idle, p99During, p99Settled := percentile(idle, 99), percentile(during, 99), percentile(settled, 99)
		b.ReportMetric(ms(p99Idle), "p99-idle-ms")
		b.ReportMetric(ms(p99During), "p99-erasing-ms")
		b.ReportMetric(float64(p99During)/float64(p99Idle), "p99-ratio")
		b.ReportMetric(float64(p99During)/float64(p99Settled), "p99-settled-ratio")
	}
}

// checkpoint copies s, open, into a new directory (storage.Checkpointer)
// and returns it, for a twin store to be opened there later.
func (s *benchStore) checkpoint(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "twin")
	if err := s.store.(storage.Checkpointer).Checkpoint(dir); err != nil {
		b.Fatalf("copy the store: %v", err)
	}
	return dir
}
