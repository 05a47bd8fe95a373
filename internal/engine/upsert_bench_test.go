package engine

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
)

// The shape of make bench's load: its clients, and the items they write
// and read.
const (
	workers    = 16
	workingSet = 10_000
)

// BenchmarkUpsertWorkingSet is make bench's write phase without the
// transport: 16 goroutines upsert over a working set of 10,000 items in a
// container on durable Pebble, each write changing one property (n) as
// mayfly-load's do. It reports the process CPU per upsert, the background
// flushes and compactions of the run included.
func BenchmarkUpsertWorkingSet(b *testing.B) {
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	defer s.store.Close()
	var cpu cpuMeter
	b.ResetTimer()
	cpu.start()
	upsertWorkingSet(b, s, workers, workingSet, b.N)
	cpu.stop()
	cpu.report(b, b.N, "cpu-ns/op")
}

// upsertWorkingSet makes ops upserts with workers goroutines over a
// working set of items, as mayfly-load's create phase does: write i goes to
// item i modulo the working set, with n set to i.
func upsertWorkingSet(b *testing.B, s *benchStore, workers, workingSet, ops int) {
	ctx := context.Background()
	ref := ItemRef{DB: benchDB, Coll: benchColl}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(ops) {
					return
				}
				n := int(i % int64(workingSet))
				body := []byte(`{"id":"w` + strconv.Itoa(n) + `","pk":"` + benchPK(n) + `","n":` + strconv.FormatInt(i, 10) + `,"payload":"` + benchPayload + `"}`)
				if _, err := s.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeUpsert, Body: body}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkPartitionRangeQuery is make bench's range phase without the
// transport: SELECT * FROM c WHERE c.n > @min in one logical partition of
// about 156 items (10,000 items over 64 partition key values), drained in
// pages of 100.
func BenchmarkPartitionRangeQuery(b *testing.B) {
	s, pk := loadShape(b)
	ctx := context.Background()
	params := map[string]document.Value{"@min": document.Int(10)}
	rows := 0
	b.ResetTimer()
	for i := range b.N {
		ref := ItemRef{DB: benchDB, Coll: benchColl}
		key, err := partition.ParseHeader(`["` + pk(i*MaxBatchOps) + `"]`)
		if err != nil {
			b.Fatal(err)
		}
		ref.PartitionKey, ref.HasKey = key, true
		cont := ""
		for {
			page, err := s.QueryItems(ctx, QueryParams{ItemRef: ref, Query: "SELECT * FROM c WHERE c.n > @min", Params: params, Continuation: cont})
			if err != nil {
				b.Fatal(err)
			}
			rows += len(page.Items)
			if cont = page.Continuation; cont == "" {
				break
			}
		}
	}
	b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
}

// BenchmarkQueryByID is make bench's query phase without the transport:
// SELECT * FROM c WHERE c.id = @id with the partition key, over the 10,000
// items of BenchmarkPartitionRangeQuery's container.
func BenchmarkQueryByID(b *testing.B) {
	s, pk := loadShape(b)
	const items = loadShapeItems
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		n := i * 7919 % items
		key, err := partition.ParseHeader(`["` + pk(n) + `"]`)
		if err != nil {
			b.Fatal(err)
		}
		ref := ItemRef{DB: benchDB, Coll: benchColl, PartitionKey: key, HasKey: true}
		page, err := s.QueryItems(ctx, QueryParams{ItemRef: ref, Query: "SELECT * FROM c WHERE c.id = @id",
			Params: map[string]document.Value{"@id": document.Str("r" + strconv.Itoa(n))}})
		if err != nil || len(page.Items) != 1 {
			b.Fatalf("query r%d: %d rows, %v", n, len(page.Items), err)
		}
	}
}

// loadShapeItems is the size of mayfly-load's working set.
const loadShapeItems = 10_000

// loadShape opens a container holding mayfly-load's working set:
// 10,000 items of about 300 bytes over 64 partition key values, settled.
// It returns the store and the partition key of item i.
func loadShape(b *testing.B) (*benchStore, func(i int) string) {
	b.Helper()
	const partitions = 64
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	b.Cleanup(func() { s.store.Close() })
	// Loads go in batches of one partition key (MaxBatchOps items).
	pk := func(i int) string { return "p" + strconv.Itoa(i/MaxBatchOps%partitions) }
	s.pk = pk
	s.load(b, 0, loadShapeItems, func(i int) []byte {
		return []byte(`{"id":"r` + strconv.Itoa(i) + `","pk":"` + pk(i) + `","n":` + strconv.Itoa(i) + `,"payload":"` + benchPayload + `"}`)
	})
	s.settle(b)
	return s, pk
}

// BenchmarkPointReadWorkingSet is make bench's read phase without the
// transport: 16 workers read random items of a working set of 10,000,
// written as make bench's create phase writes it (each item created, then
// upserted three times), so that the store holds them in its memtables
// and tables as the server's does.
func BenchmarkPointReadWorkingSet(b *testing.B) {
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	defer s.store.Close()
	ctx := context.Background()
	ref := ItemRef{DB: benchDB, Coll: benchColl}
	upsertWorkingSet(b, s, workers, workingSet, 4*workingSet)
	var next atomic.Int64
	var wg sync.WaitGroup
	var cpu cpuMeter
	b.ResetTimer()
	cpu.start()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for next.Add(1) <= int64(b.N) {
				n := rng.IntN(workingSet)
				r := ref
				r.PartitionKey, r.HasKey = partition.Key{partition.String(benchPK(n))}, true
				if _, err := s.ReadItem(ctx, ReadItemParams{ItemRef: r, ID: "w" + strconv.Itoa(n)}); err != nil {
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
