package engine

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
)

// BenchmarkRangeUnderAPrefix measures ranges under a hierarchical prefix
// (/t, /u) in a container of 2·10⁵ items (MAYFLY_BENCH_PREFIX_ITEMS):
// values of t each a prefix of 2,000 items in 20 logical partitions of
// 100, the entries the queries ask for built first. Each operation takes
// a random prefix:
//
//   - page1: the first page of 100 of SELECT * FROM c WHERE c.k > 4000 (a
//     fifth of the prefix's items, 1,000 values)
//
//   - drain: every page of it
//
//   - count: SELECT VALUE COUNT(1) FROM c WHERE c.k > 4000
//
//   - narrow: SELECT * FROM c WHERE c.k >= 1000 AND c.k < 1250 (a
//     twentieth of the prefix's items)
//
//   - composite: every page of SELECT * FROM c WHERE c.g = 3 AND c.k > 4000
//     under the composite index (/g, /k) (a seventh of the wide range)
//
//   - composite-count: SELECT VALUE COUNT(1) of it
//
//     go test -run '^$' -bench BenchmarkRangeUnderAPrefix -benchtime 300x ./internal/engine/
func BenchmarkRangeUnderAPrefix(b *testing.B) {
	items := 200_000
	if v, err := strconv.Atoi(os.Getenv("MAYFLY_BENCH_PREFIX_ITEMS")); err == nil && v >= 2000 {
		items = v
	}
	const per = 100
	tenants := items / 2000
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	ctx := context.Background()
	body := `{"id":"h","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2},
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/g"},{"path":"/k"}]]}}`
	if _, err := s.CreateContainer(ctx, benchDB, benchParse(b, body), nil); err != nil {
		b.Fatal(err)
	}
	s.loadTenants(b, items, per, func(p int) (string, string) { return "t" + strconv.Itoa(p%tenants), "u" + strconv.Itoa(p/tenants) })
	prefix := func() ItemRef {
		return ItemRef{DB: benchDB, Coll: "h", HasKey: true, PartitionKey: partition.Key{partition.String("t" + strconv.Itoa(rand.IntN(tenants)))}}
	}
	const wide, narrow = "SELECT * FROM c WHERE c.k > 4000", "SELECT * FROM c WHERE c.k >= 1000 AND c.k < 1250"
	const composite = "SELECT * FROM c WHERE c.g = 3 AND c.k > 4000"
	s.orderReady(b, QueryParams{ItemRef: prefix(), Query: wide, MaxItemCount: 100})
	s.orderReady(b, QueryParams{ItemRef: prefix(), Query: composite, MaxItemCount: 100})
	s.settle(b)
	run := func(b *testing.B, q string, drain bool) {
		records, entries := 0, 0
		for b.Loop() {
			r, e := s.queryWork(b, QueryParams{ItemRef: prefix(), Query: q, MaxItemCount: 100}, drain)
			records, entries = records+r, entries+e
		}
		reportWork(b, records, entries)
	}
	b.Run("page1", func(b *testing.B) { run(b, wide, false) })
	b.Run("drain", func(b *testing.B) { run(b, wide, true) })
	b.Run("count", func(b *testing.B) { run(b, "SELECT VALUE COUNT(1) FROM c WHERE c.k > 4000", false) })
	b.Run("narrow", func(b *testing.B) { run(b, narrow, true) })
	b.Run("composite", func(b *testing.B) { run(b, composite, true) })
	b.Run("composite-count", func(b *testing.B) { run(b, "SELECT VALUE COUNT(1) FROM c WHERE c.g = 3 AND c.k > 4000", false) })
}

// loadTenants writes items items into container "h" of key (/t, /u), per
// to a logical partition, partition p's key being key(p), each partition
// in one batch: item i has k = i·37 mod 5000, g = i mod 7 and the
// benchmarks' payload.
func (s *benchStore) loadTenants(b *testing.B, items, per int, key func(p int) (t, u string)) {
	b.Helper()
	ctx := context.Background()
	for p := range items / per {
		t, u := key(p)
		ops := make([]BatchOp, 0, per)
		for i := p * per; i < (p+1)*per; i++ {
			doc := `{"id":"x` + strconv.Itoa(i) + `","t":"` + t + `","u":"` + u + `","k":` + strconv.Itoa(i*37%5000) + `,"g":` + strconv.Itoa(i%7) + `,"payload":"` + benchPayload + `"}`
			v, err := document.Parse([]byte(doc))
			if err != nil {
				b.Fatal(err)
			}
			ops = append(ops, BatchOp{Type: BatchCreate, Body: v})
		}
		ref := ItemRef{DB: benchDB, Coll: "h", HasKey: true, PartitionKey: partition.Key{partition.String(t), partition.String(u)}}
		if _, err := s.Batch(ctx, BatchParams{ItemRef: ref, Ops: ops, Atomic: true}); err != nil {
			b.Fatal(err)
		}
	}
}
