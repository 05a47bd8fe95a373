package engine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/memory"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// The purge benchmarks share these helpers: an engine on durable Pebble in
// a temporary directory, a container, a concurrent loader and percentiles.

const (
	benchDB   = "bench"
	benchColl = "items"
	// benchLink is the container's ID for the budget and the purger.
	benchLink = "dbs/" + benchDB + "/colls/" + benchColl
)

// benchItems is the size of the large data sets: 10⁶ unless
// MAYFLY_BENCH_ITEMS says otherwise (for a quick run, say 100000).
func benchItems(b *testing.B) int {
	b.Helper()
	s := os.Getenv("MAYFLY_BENCH_ITEMS")
	if s == "" {
		return 1_000_000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 100 {
		b.Fatalf("MAYFLY_BENCH_ITEMS=%q: want an integer of at least 100", s)
	}
	return n
}

// benchSeconds reads a duration in seconds from the environment, or def.
func benchSeconds(b *testing.B, name string, def time.Duration) time.Duration {
	b.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		b.Fatalf("%s=%q: want a positive number of seconds", name, s)
	}
	return time.Duration(f * float64(time.Second))
}

// benchPebbleOptions are the store's options for a benchmark on Pebble in
// dir: the server's defaults, or the sizes MAYFLY_BENCH_CACHE_MIB and
// MAYFLY_BENCH_MEMTABLE_MIB give, as the server's --cache-mib and
// --memtable-mib do.
func benchPebbleOptions(b testing.TB, dir string) pebblestore.Options {
	b.Helper()
	mib := func(name string) int64 {
		s := os.Getenv(name)
		if s == "" {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive number of MiB", name, s)
		}
		return n << 20
	}
	return pebblestore.Options{
		Dir:          dir,
		Filter:       &pebblestore.KeyFilter{Name: IteratedOnlyRule, Skip: IteratedOnly},
		Hot:          Hot,
		CacheSize:    mib("MAYFLY_BENCH_CACHE_MIB"),
		MemTableSize: uint64(mib("MAYFLY_BENCH_MEMTABLE_MIB")),
	}
}

// benchStore is an engine over Pebble on disk, synced on commit as in
// production, or, with MAYFLY_TEST_STORE=postgres, over PostgreSQL
// (teststore).
type benchStore struct {
	*Engine
	store storage.Store
	// pk is the partition key value of item number i; nil means benchPK.
	pk func(i int) string
	// coll is the container load writes to; "" means benchColl.
	coll string
	// block is how many items load writes in one batch, which must
	// share a partition key; 0 means MaxBatchOps.
	block int
}

// openBenchEngine opens an engine on a new Pebble store in b.TempDir()
// (or a PostgreSQL database, see benchStore), with the database and a
// container of the given defaultTtl ("null" for TTL off) partitioned on
// /pk. The store is closed when b ends.
func openBenchEngine(b testing.TB, clk clock.Clock, charges ChargeSink, defaultTTL string) *benchStore {
	b.Helper()
	// The garbage collector as the server sets it.
	memory.TuneGC()
	var s storage.Store
	if teststore.Backend() == "postgres" {
		s = teststore.Open(b)
	} else {
		ps, err := pebblestore.Open(benchPebbleOptions(b, b.TempDir()))
		if err != nil {
			b.Fatalf("open store: %v", err)
		}
		b.Cleanup(func() { ps.Close() })
		s = ps
	}
	e, err := New(Config{Store: s, Clock: clk, Charges: charges})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.CreateDatabase(ctx, benchParse(b, `{"id":"`+benchDB+`"}`), nil); err != nil {
		b.Fatal(err)
	}
	body := `{"id":"` + benchColl + `","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":` + defaultTTL + `}`
	if _, err := e.CreateContainer(ctx, benchDB, benchParse(b, body), nil); err != nil {
		b.Fatal(err)
	}
	return &benchStore{Engine: e, store: s}
}

// reopenBenchEngine opens an engine on the Pebble store in dir, which
// openBenchEngine made.
func reopenBenchEngine(b testing.TB, dir string, clk clock.Clock) *benchStore {
	b.Helper()
	ps, err := pebblestore.Open(benchPebbleOptions(b, dir))
	if err != nil {
		b.Fatalf("open store: %v", err)
	}
	b.Cleanup(func() { ps.Close() })
	e, err := New(Config{Store: ps, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	return &benchStore{Engine: e, store: ps}
}

func benchParse(b testing.TB, s string) document.Value {
	b.Helper()
	v, err := document.Parse([]byte(s))
	if err != nil {
		b.Fatalf("parse %s: %v", s, err)
	}
	return v
}

// benchPartitions is how many logical partitions items are spread over,
// in blocks of MaxBatchOps consecutive items.
const benchPartitions = 1000

// benchPK is the partition key value of item number i.
func benchPK(i int) string { return "p" + strconv.Itoa(i/MaxBatchOps%benchPartitions) }

// benchPayload pads items to about 300 bytes of JSON, a small document.
var benchPayload = string(slices.Repeat([]byte("x"), 200))

// benchItem is the JSON of item number i; ttlJSON is its ttl property as JSON,
// "" for none (the item inherits the container default).
func benchItem(prefix string, i int, ttlJSON string) []byte {
	out := make([]byte, 0, 320)
	out = append(out, `{"id":"`...)
	out = append(out, prefix...)
	out = strconv.AppendInt(out, int64(i), 10)
	out = append(out, `","pk":"`...)
	out = append(out, benchPK(i)...)
	out = append(out, '"')
	if ttlJSON != "" {
		out = append(out, `,"ttl":`...)
		out = append(out, ttlJSON...)
	}
	out = append(out, `,"payload":"`...)
	out = append(out, benchPayload...)
	return append(out, `"}`...)
}

// benchRef addresses item number i of the bench container for a point read.
func benchRef(i int) ItemRef {
	return ItemRef{DB: benchDB, Coll: benchColl, HasKey: true,
		PartitionKey: partition.Key{partition.String(benchPK(i))}}
}

// benchLoaders is how many transactional batches are in flight at once
// while loading, so that Pebble's group commit shares fsyncs between them.
const benchLoaders = 8

// loadInterleaved writes n items over parts logical partitions one at a
// time, so that _rid order crosses the partitions at every step: item i,
// id "x<i>", is the (i / parts)th of partition "q<i % parts>", with the
// properties extra(i) gives (JSON members, each after a comma; nil: none)
// and benchPayload.
func (s *benchStore) loadInterleaved(b testing.TB, n, parts int, extra func(i int) string) {
	b.Helper()
	s.pk = func(i int) string { return "q" + strconv.Itoa(i%parts) }
	s.block = 1
	s.load(b, 0, n, func(i int) []byte { return interleavedItem(i, parts, extra) })
}

// interleavedItem is the JSON of item i of loadInterleaved over parts
// partitions, with extra's properties.
func interleavedItem(i, parts int, extra func(i int) string) []byte {
	more := ""
	if extra != nil {
		more = extra(i)
	}
	return []byte(`{"id":"x` + strconv.Itoa(i) + `","pk":"q` + strconv.Itoa(i%parts) + `"` + more + `,"payload":"` + benchPayload + `"}`)
}

// load creates items from, from+1, … to-1 with body(i) as their JSON,
// through transactional batches of MaxBatchOps creates: one synced commit
// per item would take many minutes for a million items on this kind of
// disk. Items come in blocks of MaxBatchOps that share a partition key (see
// benchItem), as an atomic batch requires.
func (s *benchStore) load(b testing.TB, from, to int, body func(i int) []byte) {
	b.Helper()
	ctx := context.Background()
	var next atomic.Int64
	size := MaxBatchOps
	if s.block > 0 {
		size = s.block
	}
	next.Store(int64(from / size))
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	loaders := benchLoaders
	if teststore.Backend() == "postgres" {
		// Every batch updates the container's state record, so over
		// PostgreSQL concurrent batches only fail and run again.
		loaders = 1
	}
	for range loaders {
		wg.Go(func() {
			for {
				block := int(next.Add(1) - 1)
				lo, hi := max(block*size, from), min((block+1)*size, to)
				if lo >= to {
					return
				}
				if err := s.createBlock(ctx, lo, hi, body); err != nil {
					errMu.Lock()
					if first == nil {
						first = err
					}
					errMu.Unlock()
					next.Store(int64(to))
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

// createBlock creates items lo … hi-1, which share a partition key, in one
// atomic batch.
func (s *benchStore) createBlock(ctx context.Context, lo, hi int, body func(i int) []byte) error {
	ops := make([]BatchOp, 0, hi-lo)
	for i := lo; i < hi; i++ {
		v, err := document.Parse(body(i))
		if err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		ops = append(ops, BatchOp{Type: BatchCreate, Body: v})
	}
	ref := benchRef(lo)
	if s.pk != nil {
		ref.PartitionKey = partition.Key{partition.String(s.pk(lo))}
	}
	if s.coll != "" {
		ref.Coll = s.coll
	}
	res, err := s.Batch(ctx, BatchParams{ItemRef: ref, Ops: ops, Atomic: true})
	if err != nil {
		return fmt.Errorf("batch of items %d to %d: %w", lo, hi-1, err)
	}
	for j := range res.Ops {
		if res.Ops[j].Failed() {
			return fmt.Errorf("batch of items %d to %d: item %d: %v", lo, hi-1, lo+j, res.Ops[j].Err)
		}
	}
	return nil
}

// orderReady runs an ORDER BY query once, which asks for the absence
// entries of its path (absent.go), and builds them, as the server's
// indexer does in the background.
func (s *benchStore) orderReady(b testing.TB, p QueryParams) {
	b.Helper()
	ctx := context.Background()
	if _, err := s.QueryItems(ctx, p); err != nil {
		b.Fatal(err)
	}
	drainIndexer(b, s.NewIndexer(nil))
}

// settle waits until the store's files stop changing (Pebble's flushes and
// compactions after loading have caught up), for at most a minute, so that
// a timed phase does not share the two cores with the aftermath of loading.
func (s *benchStore) settle(b testing.TB) {
	b.Helper()
	sizer, ok := s.store.(storage.Sizer)
	if !ok {
		debug.FreeOSMemory()
		return
	}
	last, err := sizer.DiskUsage()
	if err != nil {
		b.Fatal(err)
	}
	stable := 0
	for deadline := time.Now().Add(time.Minute); stable < 4 && time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
		n, err := sizer.DiskUsage()
		if err != nil {
			b.Fatal(err)
		}
		if n == last {
			stable++
		} else {
			stable, last = 0, n
		}
	}
	// Return the memory loading freed to the system now, so that the
	// runtime's scavenger does not do it during the timed phase.
	debug.FreeOSMemory()
}

// timeSettled runs fn with the benchmark's timer and cpu running, then
// waits for the store to settle with settled still running, and returns the
// store's bytes on disk then (0 where the store cannot tell).
func (s *benchStore) timeSettled(b *testing.B, cpu, settled *cpuMeter, fn func()) uint64 {
	b.Helper()
	settled.start()
	cpu.start()
	b.StartTimer()
	fn()
	b.StopTimer()
	cpu.stop()
	s.settle(b)
	settled.stop()
	sizer, ok := s.store.(storage.Sizer)
	if !ok {
		return 0
	}
	d, err := sizer.DiskUsage()
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// purgeAll calls PurgeDue in batches of limit at now until nothing due is
// left, and returns how many items it deleted.
func (s *benchStore) purgeAll(b testing.TB, now time.Time, limit int) int {
	b.Helper()
	ctx := context.Background()
	n := 0
	for {
		res, err := s.PurgeDue(ctx, ttl.PurgeParams{Container: benchLink, Now: now, Limit: limit})
		if err != nil {
			b.Fatalf("PurgeDue after %d items: %v", n, err)
		}
		n += len(res.Items)
		if !res.More {
			return n
		}
	}
}

// countDue counts the container's expired items still on disk.
func (s *benchStore) countDue(b testing.TB, now time.Time) int {
	b.Helper()
	n, err := s.CountDue(context.Background(), ttl.CountDueParams{Container: benchLink, Now: now, Max: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// processCPU returns the CPU time this process has used (user and
// system, every thread: the purge and Pebble's compactions alike), read
// from /proc/self/stat; ok is false where that file does not exist. On a
// shared machine it measures the work done where wall time also measures
// the neighbours.
func processCPU() (d time.Duration, ok bool) {
	raw, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	// The fields after the command name, which is in parentheses:
	// state is the first, utime the 12th and stime the 13th.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	user, err1 := strconv.ParseInt(f[11], 10, 64)
	sys, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	// Linux reports clock ticks of 1/100 s (USER_HZ) on every
	// architecture Go supports.
	return time.Duration(user+sys) * 10 * time.Millisecond, true
}

// offsetClock is the real clock moved forward by an offset that a
// benchmark can step: expiry can be brought on at once while timers and
// the purger's budget run in real time.
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// After waits in real time: the offset only ever jumps forward, and a
// timer that fires a little late after a jump only delays one pass.
func (c *offsetClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

func (c *offsetClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

var _ clock.Clock = (*offsetClock)(nil)

// lagRecorder is a ttl.Metrics that keeps every lag it is told of.
type lagRecorder struct {
	mu     sync.Mutex
	lags   []time.Duration
	purged int
}

func (m *lagRecorder) AwaitingPurge(string, int) {}
func (m *lagRecorder) Deferred(string)           {}
func (m *lagRecorder) Forget(string)             {}

func (m *lagRecorder) Purged(_ string, n int) {
	m.mu.Lock()
	m.purged += n
	m.mu.Unlock()
}

func (m *lagRecorder) Lag(_ string, d time.Duration) {
	m.mu.Lock()
	m.lags = append(m.lags, d)
	m.mu.Unlock()
}

// snapshot returns the lags recorded so far and the purged count.
func (m *lagRecorder) snapshot() ([]time.Duration, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.lags), m.purged
}

var _ ttl.Metrics = (*lagRecorder)(nil)

// percentile returns the p-th percentile (0 < p <= 100) of ds by the
// nearest-rank method; ds is sorted in place.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	rank := int(float64(len(ds))*p/100+0.999999) - 1
	return ds[min(max(rank, 0), len(ds)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// queryWork runs the page p names, or with drain every page from it on,
// and returns the records and index entries they read.
func (s *benchStore) queryWork(b *testing.B, p QueryParams, drain bool) (records, entries int) {
	for {
		page, err := s.QueryItems(context.Background(), p)
		if err != nil {
			b.Fatal(err)
		}
		records, entries = records+page.Examined, entries+page.IndexEntries
		if !drain || page.Continuation == "" {
			return records, entries
		}
		p.Continuation = page.Continuation
	}
}

// reportWork reports records and entries read over b.N operations.
func reportWork(b *testing.B, records, entries int) {
	b.ReportMetric(float64(records)/float64(b.N), "records/op")
	b.ReportMetric(float64(entries)/float64(b.N), "entries/op")
}

// drainWork is what benchWholeDrain's pages did, summed over its drains.
type drainWork struct {
	pageReads
	rows, pages int
}

// benchWholeDrain drains p from its first page once each b.Loop (only the
// first page unless whole), calling check, when not nil, on each page,
// and reports the records and index entries read per op: a drain's,
// where benchDrain reports a page's of a drain's first pages.
func benchWholeDrain(b *testing.B, s *benchStore, p QueryParams, whole bool, check func(*FeedPage)) drainWork {
	b.Helper()
	var w drainWork
	for b.Loop() {
		p.Continuation = ""
		for {
			page, err := s.QueryItems(context.Background(), p)
			if err != nil {
				b.Fatal(err)
			}
			if check != nil {
				check(page)
			}
			w.add(page)
			w.rows, w.pages = w.rows+len(page.Items), w.pages+1
			p.Continuation = page.Continuation
			page.Release()
			if p.Continuation == "" || !whole {
				break
			}
		}
	}
	b.ReportMetric(float64(w.records)/float64(b.N), "records/op")
	b.ReportMetric(float64(w.entries)/float64(b.N), "entries/op")
	return w
}

// hotEvery is the value of the property "u" that the tests and
// benchmarks of filtered queries give item i: "hot" for every k-th item,
// "cold" for the others.
func hotEvery(i, k int) string {
	if i%k == 0 {
		return "hot"
	}
	return "cold"
}
