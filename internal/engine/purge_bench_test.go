package engine

// Benchmarks of physical deletion (ttl.md B3, A4), on durable Pebble in a
// temporary directory, as in production. docs/benchmarks.md says how to run
// them and what they measured. Sizes and rates come from the environment:
//
//	MAYFLY_BENCH_ITEMS         large data sets (default 1000000)
//	MAYFLY_BENCH_BATCH         the purge's batch size (default ttl.DefaultBatchSize)
//	MAYFLY_BENCH_LAG_RATE      writes/s of ttl-1 items in BenchmarkPurgeLag (default 500)
//	MAYFLY_BENCH_LAG_SECONDS   how long they are written (default 10)
//	MAYFLY_BENCH_READ_RATE     point reads/s in BenchmarkPointReadWithPurgeBacklog (default 1000)
//	MAYFLY_BENCH_WINDOW        seconds per measured phase there (default 5)
//	MAYFLY_BENCH_PURGE_RU      the container's budget there, RU/s (default ttl.DefaultRUPerSecond)
//	MAYFLY_BENCH_CPUPROFILE    a file for a CPU profile of the timed purges and the compactions they leave (throughput, cost per item)

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// purgeT0 is when the manual-clock fixtures write their items.
var purgeT0 = time.Unix(1_700_000_000, 0)

// benchInt reads a positive integer from the environment, or def.
func benchInt(b *testing.B, name string, def int) int {
	b.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// spread reports whether item i of total is one of the k chosen ones, the
// chosen ones being spread evenly; rank is its number among them.
func spread(i, k, total int) (chosen bool, rank int) {
	lo, hi := i*k/total, (i+1)*k/total
	return hi > lo, lo
}

// loadExpiring fills a container of defaultTtl 60, on a manual clock at
// purgeT0, with live items and due items, and returns the instant at which
// exactly the due ones have expired.
//
// The due items alternate between ttl 1 (the due index) and inheriting the
// default (the index by _ts), spread evenly among the live items in key
// order. The live items are of three kinds, so that both expiry indexes
// hold live entries above the horizon and not only below it:
// a third ttl -1 (no index entry), a third ttl 86400 (the due index, far
// ahead) and a third inheriting, written 30 s later (the _ts index, due at
// t0+90 s). Purging happens at t0+61 s.
func loadExpiring(b *testing.B, s *benchStore, clk *clock.Manual, live, due int) time.Time {
	b.Helper()
	late := live / 3
	early := live - late
	total := early + due
	s.load(b, 0, total, func(i int) []byte {
		if d, rank := spread(i, due, total); d {
			if rank%2 == 0 {
				return benchItem("a", i, "1")
			}
			return benchItem("a", i, "")
		}
		if i%2 == 0 {
			return benchItem("a", i, "-1")
		}
		return benchItem("a", i, "86400")
	})
	clk.Advance(30 * time.Second)
	s.load(b, 0, late, func(i int) []byte { return benchItem("b", i, "") })
	clk.Advance(31 * time.Second)
	now := clk.Now()
	if got := s.countDue(b, now); got != due {
		b.Fatalf("%d items due at t0+61s, want %d", got, due)
	}
	s.settle(b)
	return now
}

// purgeTimed purges everything due in s at now in batches of limit, timing
// only that, checks that exactly due items went, and adds the process CPU
// time it took to cpu, and that time plus the CPU of the flushes and
// compactions it left behind, until they settle, to settled.
func purgeTimed(b *testing.B, s *benchStore, now time.Time, limit, due int, cpu, settled *cpuMeter) {
	b.Helper()
	settled.start()
	cpu.start()
	if path := os.Getenv("MAYFLY_BENCH_CPUPROFILE"); path != "" {
		stop := cpuProfile(b, path)
		defer stop()
	}
	b.StartTimer()
	n := s.purgeAll(b, now, limit)
	b.StopTimer()
	cpu.stop()
	if n != due {
		b.Fatalf("purged %d items, want %d", n, due)
	}
	if left := s.countDue(b, now); left != 0 {
		b.Fatalf("%d due items left after purging", left)
	}
	s.settle(b)
	settled.stop()
}

// cpuProfile writes a CPU profile to path until stop is called.
func cpuProfile(b *testing.B, path string) (stop func()) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}
}

// cpuMeter adds up process CPU time over timed phases.
type cpuMeter struct {
	total, at time.Duration
	ok        bool
}

func (m *cpuMeter) start() { m.at, m.ok = processCPU() }

func (m *cpuMeter) stop() {
	if !m.ok {
		return
	}
	now, ok := processCPU()
	m.ok = ok
	m.total += now - m.at
}

// report adds the CPU time per item as a metric of the given unit, where it
// was measured.
func (m *cpuMeter) report(b *testing.B, items int, unit string) {
	if m.ok && items > 0 {
		b.ReportMetric(float64(m.total.Nanoseconds())/float64(items), unit)
	}
}

// BenchmarkPurgeThroughput measures how fast PurgeDue deletes a backlog:
// MAYFLY_BENCH_ITEMS due items among as many live ones, in batches of the
// purger's batch size, one transaction per batch. It bypasses the budget
// (which caps the purger at DefaultRUPerSecond / DefaultItemCost = 2,000
// items/s per container by default): this is the store's capacity.
func BenchmarkPurgeThroughput(b *testing.B) {
	n := benchItems(b)
	limit := benchInt(b, "MAYFLY_BENCH_BATCH", ttl.DefaultBatchSize)
	benchPurge(b, n, n, limit)
	b.ReportMetric(float64(limit), "batch")
}

// BenchmarkPurgeCostPerItem purges the same number of due items (a tenth
// of MAYFLY_BENCH_ITEMS) among a tenth of MAYFLY_BENCH_ITEMS and among
// MAYFLY_BENCH_ITEMS live items. B3: the cost per due item must not grow
// with the live items.
func BenchmarkPurgeCostPerItem(b *testing.B) {
	n := benchItems(b)
	limit := benchInt(b, "MAYFLY_BENCH_BATCH", ttl.DefaultBatchSize)
	for _, live := range []int{n / 10, n} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			benchPurge(b, live, n/10, limit)
		})
	}
}

// benchPurge loads due items among live ones (loadExpiring) and purges
// them in batches of limit, b.N times, timing only the purges, and reports
// items/s, ns/item and cpu-ns/item.
func benchPurge(b *testing.B, live, due, limit int) {
	b.StopTimer()
	purged := 0
	var cpu, settled cpuMeter
	for range b.N {
		clk := clock.NewManual(purgeT0)
		s := openBenchEngine(b, clk, nil, "60")
		now := loadExpiring(b, s, clk, live, due)
		purgeTimed(b, s, now, limit, due, &cpu, &settled)
		purged += due
		s.store.Close()
	}
	b.ReportMetric(float64(purged)/b.Elapsed().Seconds(), "items/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(purged), "ns/item")
	cpu.report(b, purged, "cpu-ns/item")
	settled.report(b, purged, "settled-cpu-ns/item")
}

// atRate calls op(k) for k = 0, 1, … at rate per second for d, open loop
// (a slow call does not delay the schedule), from workers goroutines, and
// returns how many calls it made once they have all returned.
func atRate(rate int, d time.Duration, workers int, op func(k int)) int {
	ks := make(chan int, rate)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for k := range ks {
				op(k)
			}
		})
	}
	start := time.Now()
	sent := 0
	for {
		el := time.Since(start)
		if el >= d {
			break
		}
		for due := int(el.Seconds() * float64(rate)); sent < due; sent++ {
			ks <- sent
		}
		time.Sleep(time.Millisecond)
	}
	close(ks)
	wg.Wait()
	return sent
}

// BenchmarkPurgeLag runs the real purger loop (Start, DefaultInterval,
// default budget) on the real clock while items of ttl 1 are written
// through WriteItem at a steady rate that leaves spare capacity, and
// measures each item's lag from its expiry to its physical deletion, as
// the purger reports it to Metrics.Lag. B3: p99 at most 1 s.
func BenchmarkPurgeLag(b *testing.B) {
	rate := benchInt(b, "MAYFLY_BENCH_LAG_RATE", 500)
	d := benchSeconds(b, "MAYFLY_BENCH_LAG_SECONDS", 10*time.Second)
	b.StopTimer()
	var lags []time.Duration
	for range b.N {
		budget := ttl.NewBudget(clock.Real{}, 0)
		s := openBenchEngine(b, clock.Real{}, budget, "-1")
		rec := &lagRecorder{}
		p := ttl.New(ttl.Config{Target: s.Engine, Clock: clock.Real{}, Budget: budget, Metrics: rec})
		p.Start()
		ctx := context.Background()
		b.StartTimer()
		written := atRate(rate, d, 32, func(k int) {
			_, err := s.WriteItem(ctx, WriteItemParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Mode: ModeCreate, Body: benchItem("t", k, "1")})
			if err != nil {
				b.Errorf("write item %d: %v", k, err)
			}
		})
		// The last items fall due up to 2 s after they were written.
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, purged := rec.snapshot(); purged >= written {
				break
			}
			if time.Now().After(deadline) {
				_, purged := rec.snapshot()
				b.Fatalf("%d of %d items purged 30 s after the last write", purged, written)
			}
			time.Sleep(10 * time.Millisecond)
		}
		b.StopTimer()
		p.Close()
		got, _ := rec.snapshot()
		lags = append(lags, got...)
		s.store.Close()
	}
	b.ReportMetric(ms(percentile(lags, 50)), "p50-lag-ms")
	b.ReportMetric(ms(percentile(lags, 99)), "p99-lag-ms")
	b.ReportMetric(ms(percentile(lags, 100)), "max-lag-ms")
	b.ReportMetric(float64(len(lags))/float64(b.N), "items")
	b.ReportMetric(float64(rate), "writes/s")
}

// BenchmarkPointReadWithPurgeBacklog measures user point reads while a
// backlog of MAYFLY_BENCH_ITEMS expired items drains (the real purger loop
// and budget, users charging the budget through Config.Charges) against
// reads while no purge runs, in the same run on the same store. The phases
// alternate (idle, draining, idle, draining, …) so that drift (compactions,
// cache, the neighbours' load) falls on both alike. Reads are open loop at
// MAYFLY_BENCH_READ_RATE per second on random live items, a tenth of
// MAYFLY_BENCH_ITEMS of them. A4: p99 at most 5% worse with the backlog.
// The purge drains at what the budget leaves the purger: about
// (MAYFLY_BENCH_PURGE_RU - reads/s × 1 RU) / 5 items per second.
func BenchmarkPointReadWithPurgeBacklog(b *testing.B) {
	n := benchItems(b)
	live := max(n/10, 100)
	rate := benchInt(b, "MAYFLY_BENCH_READ_RATE", 1000)
	window := benchSeconds(b, "MAYFLY_BENCH_WINDOW", 5*time.Second)
	ru := benchInt(b, "MAYFLY_BENCH_PURGE_RU", ttl.DefaultRUPerSecond)
	batch := benchInt(b, "MAYFLY_BENCH_BATCH", ttl.DefaultBatchSize)
	const rounds = 6
	b.StopTimer()
	var idle, draining []time.Duration
	purged, drainTime := 0, time.Duration(0)
	for range b.N {
		// The offset clock runs in real time (timers, budget refill) and
		// jumps an hour ahead once the backlog is written.
		clk := &offsetClock{}
		budget := ttl.NewBudget(clk, float64(ru))
		s := openBenchEngine(b, clk, budget, "3600")
		total := live + n
		var liveIdx []int
		for i := range total {
			if l, _ := spread(i, live, total); l {
				liveIdx = append(liveIdx, i)
			}
		}
		s.load(b, 0, total, func(i int) []byte {
			if l, _ := spread(i, live, total); l {
				return benchItem("r", i, "-1")
			}
			return benchItem("r", i, "")
		})
		clk.Advance(3601 * time.Second)
		if got := s.countDue(b, clk.Now()); got != n {
			b.Fatalf("%d items due, want %d", got, n)
		}
		s.settle(b)

		ctx := context.Background()
		read := func(into *[]time.Duration, mu *sync.Mutex) func(int) {
			return func(k int) {
				i := liveIdx[rand.IntN(len(liveIdx))]
				start := time.Now()
				_, err := s.ReadItem(ctx, ReadItemParams{ItemRef: benchRef(i), ID: "r" + strconv.Itoa(i)})
				el := time.Since(start)
				if err != nil {
					b.Errorf("read item %d: %v", i, err)
					return
				}
				if into != nil {
					mu.Lock()
					*into = append(*into, el)
					mu.Unlock()
				}
			}
		}
		var mu sync.Mutex
		atRate(rate, time.Second, 8, read(nil, &mu)) // warm the cache
		b.StartTimer()
		for range rounds {
			atRate(rate, window, 8, read(&idle, &mu))

			rec := &lagRecorder{}
			p := ttl.New(ttl.Config{Target: s.Engine, Clock: clk, Budget: budget, BatchSize: batch, Metrics: rec})
			start := time.Now()
			p.Start()
			atRate(rate, window, 8, read(&draining, &mu))
			p.Close()
			drainTime += time.Since(start)
			_, np := rec.snapshot()
			purged += np
		}
		b.StopTimer()
		s.store.Close()
	}
	p99Idle, p99Drain := percentile(idle, 99), percentile(draining, 99)
	b.ReportMetric(ms(percentile(idle, 50)), "p50-idle-ms")
	b.ReportMetric(ms(percentile(draining, 50)), "p50-draining-ms")
	b.ReportMetric(ms(p99Idle), "p99-idle-ms")
	b.ReportMetric(ms(p99Drain), "p99-draining-ms")
	b.ReportMetric(float64(p99Drain)/float64(p99Idle), "p99-ratio")
	b.ReportMetric(float64(purged)/drainTime.Seconds(), "purged/s")
	b.ReportMetric(float64(n), "backlog")
	b.ReportMetric(float64(ru), "budget-RU/s")
	b.ReportMetric(float64(batch), "batch")
}

// TestPurgeDueMoreAcrossIndexes: a batch filled by the due index must
// still report More when the _ts index has expired entries, or a backlog
// of inheriting items would be left behind (the benchmarks above found it).
func TestPurgeDueMoreAcrossIndexes(t *testing.T) {
	clk := clock.NewManual(purgeT0)
	s := openBenchEngine(t, clk, nil, "60")
	s.load(t, 0, 3, func(i int) []byte {
		if i < 2 {
			return benchItem("m", i, "1")
		}
		return benchItem("m", i, "")
	})
	clk.Advance(61 * time.Second)
	ctx := context.Background()
	for _, want := range []struct {
		items int
		more  bool
	}{{2, true}, {1, false}} {
		res, err := s.PurgeDue(ctx, ttl.PurgeParams{Container: benchLink, Now: clk.Now(), Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Items) != want.items || res.More != want.more {
			t.Fatalf("PurgeDue = %d items, More %v; want %d, %v", len(res.Items), res.More, want.items, want.more)
		}
	}
}

// TestPurgeDueSparesItemsWrittenAgain: an expired item created again
// between two batches is a new item; the next batch must leave it, its id
// entry included, and purge the rest.
func TestPurgeDueSparesItemsWrittenAgain(t *testing.T) {
	clk := clock.NewManual(purgeT0)
	s := openBenchEngine(t, clk, nil, "60")
	s.load(t, 0, 4, func(i int) []byte { return benchItem("m", i, "1") })
	clk.Advance(2 * time.Second)
	ctx := context.Background()
	purge := func() ttl.PurgeResult {
		t.Helper()
		res, err := s.PurgeDue(ctx, ttl.PurgeParams{Container: benchLink, Now: clk.Now(), Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := purge(); len(res.Items) != 2 || !res.More {
		t.Fatalf("first batch: %d items, More %v; want 2, true", len(res.Items), res.More)
	}
	// m2 is created again (it has expired, so this is a new item, which
	// does not expire).
	_, err := s.WriteItem(ctx, WriteItemParams{ItemRef: benchRef(2), Mode: ModeCreate, Body: benchItem("m", 2, "-1")})
	if err != nil {
		t.Fatalf("create m2 again: %v", err)
	}
	if res := purge(); len(res.Items) != 1 || res.More {
		t.Fatalf("second batch: %d items, More %v; want 1 (m3), false", len(res.Items), res.More)
	}
	if _, err := s.ReadItem(ctx, ReadItemParams{ItemRef: benchRef(2), ID: "m2"}); err != nil {
		t.Fatalf("m2, written again, after the purge: %v", err)
	}
	if _, err := s.ReadItem(ctx, ReadItemParams{ItemRef: benchRef(3), ID: "m3"}); !isNotFound(err) {
		t.Fatalf("m3 after the purge: %v, want not found", err)
	}
	if n := s.countDue(t, clk.Now()); n != 0 {
		t.Fatalf("%d items due after the purge, want 0", n)
	}
}

// TestPurgeReadsImagesAndRecords: items written while TTL was off have no
// record image and are purged from their records; items written or
// replaced since TTL is on are purged from their images; batches mixing
// both purge exactly the expired items, and the indexes match the items
// at every step.
func TestPurgeReadsImagesAndRecords(t *testing.T) {
	clk := clock.NewManual(purgeT0)
	s := openBenchEngine(t, clk, nil, "null")
	ctx := context.Background()
	check := func(step string, images int) { t.Helper(); wantImages(t, s.Engine, step, images) }
	// Items 0-9 while TTL is off: odd ones inheriting, even ones with ttl
	// 5, 4, 3, 2, 1, so that their expiry order is not their records' order;
	// items 10-19 later, alike but with ttl 1.
	body := func(i int) []byte {
		switch {
		case i%2 == 1:
			return benchItem("m", i, "")
		case i < 10:
			return benchItem("m", i, strconv.Itoa(5-i/2))
		}
		return benchItem("m", i, "1")
	}
	s.load(t, 0, 10, body)
	check("TTL off", 0)
	clk.Advance(time.Second)
	on := `{"id":"` + benchColl + `","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":60}`
	if _, err := s.ReplaceContainer(ctx, benchDB, benchColl, benchParse(t, on), ""); err != nil {
		t.Fatal(err)
	}
	check("TTL turned on", 0)
	clk.Advance(time.Second)
	// Items 10-19 while TTL is on, and items 1 and 3 replaced, 1 now with
	// ttl 1: the new versions' entries and images.
	s.load(t, 10, 20, body)
	for i, ttlJSON := range map[int]string{1: "1", 3: ""} {
		_, err := s.WriteItem(ctx, WriteItemParams{ItemRef: benchRef(i), Mode: ModeReplace, ID: "m" + strconv.Itoa(i), Body: benchItem("m", i, ttlJSON)})
		if err != nil {
			t.Fatal(err)
		}
	}
	check("written while on", 12)

	// At +6 s, only own-ttl items are due: the even ones written while off
	// (their ttl counts from _ts once TTL is on), 1, and the even ones of
	// 10-19.
	clk.Advance(4 * time.Second)
	if purged, want := s.purgeAll(t, clk.Now(), 3), 5+1+5; purged != want {
		t.Errorf("purged %d items, want %d", purged, want)
	}
	check("after the purge", 6)
	for i := range 20 {
		_, err := s.ReadItem(ctx, ReadItemParams{ItemRef: benchRef(i), ID: "m" + strconv.Itoa(i)})
		wantGone := i%2 == 0 || i == 1
		if gone := isNotFound(err); gone != wantGone || (!gone && err != nil) {
			t.Errorf("m%d after the purge: %v, want gone %v", i, err, wantGone)
		}
	}
}

// TestNoImageForItemsThatCannotExpire: under defaultTtl -1 an item that
// inherits the default cannot fall due, so it gets no record image (a
// copy of its record kept for nothing); an item with its own ttl does.
// When the default becomes a number, the inheriting items expire and are
// purged from their records, and the indexes match the items throughout.
func TestNoImageForItemsThatCannotExpire(t *testing.T) {
	clk := clock.NewManual(purgeT0)
	s := openBenchEngine(t, clk, nil, "-1")
	ctx := context.Background()
	check := func(step string, images int) { t.Helper(); wantImages(t, s.Engine, step, images) }
	// Items 0-9 inherit -1; items 10-14 have ttl 100.
	s.load(t, 0, 15, func(i int) []byte {
		if i < 10 {
			return benchItem("n", i, "")
		}
		return benchItem("n", i, "100")
	})
	check("defaultTtl -1", 5)
	clk.Advance(time.Second)
	on := `{"id":"` + benchColl + `","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":2}`
	if _, err := s.ReplaceContainer(ctx, benchDB, benchColl, benchParse(t, on), ""); err != nil {
		t.Fatal(err)
	}
	check("defaultTtl 2", 5)
	// Item 20 inherits 2 now: it gets an image.
	s.load(t, 20, 21, func(i int) []byte { return benchItem("n", i, "") })
	check("written under 2", 6)
	clk.Advance(3 * time.Second)
	if purged, want := s.purgeAll(t, clk.Now(), 4), 11; purged != want {
		t.Errorf("purged %d items, want %d", purged, want)
	}
	check("after the purge", 5)
}

// TestImageKeyRoundTrip: imageEntry recovers the expiry entry of every
// image key and rejects keys that are not a container's image keys.
func TestImageKeyRoundTrip(t *testing.T) {
	rid := []byte{0, 0, 0, 1, 0, 0, 0, 2}
	other := []byte{0, 0, 0, 1, 0, 0, 0, 3}
	for _, ek := range [][]byte{ownDueKey(rid, 1_700_000_061, 7), byTsKey(rid, 0, 1<<63), byTsKey(rid, -1, 0)} {
		ik := imageKey(rid, ek)
		if got := imageEntry(rid, ik); !bytes.Equal(got, ek) {
			t.Errorf("imageEntry(imageKey(%x)) = %x", ek, got)
		}
		if got := imageEntry(other, ik); got != nil {
			t.Errorf("imageEntry of another container's key %x = %x, want nil", ik, got)
		}
		if got := imageEntry(rid, ik[:len(ik)-1]); got != nil {
			t.Errorf("imageEntry of a short key = %x, want nil", got)
		}
		if got := imageEntry(rid, ek); got != nil {
			t.Errorf("imageEntry of the expiry key %x itself = %x, want nil", ek, got)
		}
	}
	bad := imageKey(rid, ownDueKey(rid, 5, 5))
	bad[len(collPrefix(famImage, rid))] = famItem
	if got := imageEntry(rid, bad); got != nil {
		t.Errorf("imageEntry of an image key of family 'i' = %x, want nil", got)
	}
}
