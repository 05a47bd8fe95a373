package engine

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// BenchmarkIndexAggregates counts the items with one value of a property
// (SELECT VALUE COUNT(1) FROM c WHERE c.k = 3, k = i % 10: a tenth of the
// items) and with a range of its values (c.k >= 8, a fifth) across
// partitions and in one logical partition of 100 items (where the range
// reads the property's partition entries, built first), and with both
// c.g = 1 and c.k >= 8 (a twentieth, from a composite index on g and k),
// and with both c.k = 3 and c.h = 2 (h = i % 7: a seventieth, stepping
// through the tie entries of both, or their entries in the partition),
// the items with a value of k (COUNT(c.k), from the counters less the
// items without k), and the items of each value of k (GROUP BY c.k, from
// its entries), alone and among those with c.h = 2 (a seventh); and the
// MIN, MAX and SUM of m among the items of one value of another property
// (c.h = 2, a seventh; c.k = 3, a tenth whose m is 3, so that the MAX
// walks most of m's entries to the first of them), from m's entries of
// the items the term's entries name.
// It takes the MAX of the property across partitions, alone and in the
// rewrite that carries its count (from the counters, since k has absence
// entries, and from the entries of m, which has none), in a partition
// (from k's partition entries), filtered by c.g = 1 (a quarter of the
// items, through the composite) and by c.k < 5 (half, from its span), and the SUM of the property, in AVG's
// rewrite across partitions and filtered by c.g = 1. Each is answered by
// the index (countByIndex, countByComposite, countByIntersection,
// countPathByIndex, groupCountByIndex, aggregateByIndex, sumByIndex)
// and evaluated (with
// "AND true" or "WHERE true", which the index does not answer, so each
// candidate's record is read), alternating every round (1 s each, seven
// rounds). It reports each one's time, records and entries per query, and
// the median over rounds of their ratio, index over evaluated. The
// container holds MAYFLY_BENCH_ITEMS items (10⁵ by default), written
// interleaved over partitions of 100.
//
//	go test -run '^$' -bench BenchmarkIndexAggregates -benchtime 1x ./internal/engine/
func BenchmarkIndexAggregates(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("MAYFLY_BENCH_ITEMS")); err == nil && v > 0 {
		n = v
	}
	const per = 100
	parts := max(n/per, 1)
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	policy := `{"id":"` + benchColl + `","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":null,` +
		`"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/g"},{"path":"/k"}]]}}`
	if _, err := s.ReplaceContainer(context.Background(), benchDB, benchColl, benchParse(b, policy), ""); err != nil {
		b.Fatal(err)
	}
	s.loadInterleaved(b, n, parts, func(i int) string {
		return `,"k":` + strconv.Itoa(i%10) + `,"m":` + strconv.Itoa(i%10) + `,"g":` + strconv.Itoa(i%4) + `,"h":` + strconv.Itoa(i%7)
	})
	s.settle(b)
	// The index of the replaced policy first: absence entries are listed
	// only in a ready index.
	drainIndexer(b, s.NewIndexer(nil))
	var c *containerRecord
	if err := s.store.View(context.Background(), func(r storage.Reader) (err error) {
		c, err = s.loadContainer(r, benchDB, benchColl)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	s.wantAbsent(c, []string{"k"}, entryKinds{parts: true, ties: true})
	s.wantAbsent(c, []string{"h"}, entryKinds{ties: true})
	drainIndexer(b, s.NewIndexer(nil))
	ctx := context.Background()
	count := "SELECT VALUE COUNT(1) FROM c WHERE "
	maxCount := func(path string) string {
		return `SELECT VALUE [{"item": {"max": MAX(c.` + path + `), "count": COUNT(c.` + path + `)}}] FROM c`
	}
	maxWhere := "SELECT VALUE MAX(c.k) FROM c WHERE c.g = 1"
	sumCount := `SELECT VALUE [{"item": {"sum": SUM(c.k), "count": COUNT(c.k)}}] FROM c`
	sumWhere := "SELECT VALUE SUM(c.k) FROM c WHERE c.g = 1"
	groupWhere := "SELECT c.k AS k, COUNT(1) AS n FROM c WHERE c.h = 2 GROUP BY c.k"
	for _, bench := range []struct{ scope, name, index, evaluated string }{
		{"cross", "k=3", count + "c.k = 3", count + "c.k = 3 AND true"},
		{"cross", "k>=8", count + "c.k >= 8", count + "c.k >= 8 AND true"},
		{"partition", "k=3", count + "c.k = 3", count + "c.k = 3 AND true"},
		{"partition", "k>=8", count + "c.k >= 8", count + "c.k >= 8 AND true"},
		{"cross", "g=1,k>=8", count + "c.g = 1 AND c.k >= 8", count + "c.g = 1 AND c.k >= 8 AND true"},
		{"cross", "k=3,h=2", count + "c.k = 3 AND c.h = 2", count + "c.k = 3 AND c.h = 2 AND true"},
		{"partition", "k=3,h=2", count + "c.k = 3 AND c.h = 2", count + "c.k = 3 AND c.h = 2 AND true"},
		{"cross", "count-path", "SELECT VALUE COUNT(c.k) FROM c", "SELECT VALUE COUNT(c.k) FROM c WHERE true"},
		{"partition", "count-path", "SELECT VALUE COUNT(c.k) FROM c", "SELECT VALUE COUNT(c.k) FROM c WHERE true"},
		{"cross", "group-count", "SELECT c.k AS k, COUNT(1) AS n FROM c GROUP BY c.k", "SELECT c.k AS k, COUNT(1) AS n FROM c WHERE true GROUP BY c.k"},
		{"partition", "group-count", "SELECT c.k AS k, COUNT(1) AS n FROM c GROUP BY c.k", "SELECT c.k AS k, COUNT(1) AS n FROM c WHERE true GROUP BY c.k"},
		{"cross", "group-count-where", groupWhere, strings.Replace(groupWhere, " GROUP", " AND true GROUP", 1)},
		{"partition", "group-count-where", groupWhere, strings.Replace(groupWhere, " GROUP", " AND true GROUP", 1)},
		{"cross", "max", "SELECT VALUE MAX(c.k) FROM c", "SELECT VALUE MAX(c.k) FROM c WHERE true"},
		{"cross", "max-count", maxCount("k"), maxCount("k") + " WHERE true"},
		{"cross", "max-count-entries", maxCount("m"), maxCount("m") + " WHERE true"},
		{"partition", "max", "SELECT VALUE MAX(c.k) FROM c", "SELECT VALUE MAX(c.k) FROM c WHERE true"},
		{"cross", "max-where", maxWhere, maxWhere + " AND true"},
		{"cross", "max-below", "SELECT VALUE MAX(c.k) FROM c WHERE c.k < 5", "SELECT VALUE MAX(c.k) FROM c WHERE c.k < 5 AND true"},
		{"cross", "sum-count", sumCount, sumCount + " WHERE true"},
		{"cross", "sum-where", sumWhere, sumWhere + " AND true"},
		{"cross", "min-beside", "SELECT VALUE MIN(c.m) FROM c WHERE c.h = 2", "SELECT VALUE MIN(c.m) FROM c WHERE c.h = 2 AND true"},
		{"cross", "max-beside-late", "SELECT VALUE MAX(c.m) FROM c WHERE c.k = 3", "SELECT VALUE MAX(c.m) FROM c WHERE c.k = 3 AND true"},
		{"cross", "sum-beside", "SELECT VALUE SUM(c.m) FROM c WHERE c.h = 2", "SELECT VALUE SUM(c.m) FROM c WHERE c.h = 2 AND true"},
	} {
		scope := bench.scope
		b.Run(scope+"/"+bench.name, func(b *testing.B) {
			params := func(q string) QueryParams {
				p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: q, RangeID: "0", CrossPartition: true}
				if scope == "partition" {
					p.RangeID, p.CrossPartition = "", false
					p.HasKey, p.PartitionKey = true, partition.Key{partition.String("q" + strconv.Itoa(rand.IntN(parts)))}
				}
				return p
			}
			shapes := []string{bench.index, bench.evaluated}
			var per [2][]float64
			var records, entries, done [2]int
			var ratios []float64
			for r := range 7 {
				for k := range shapes {
					i := k
					if r%2 == 1 {
						i = 1 - k
					}
					start, ops := time.Now(), 0
					for ; ops == 0 || time.Since(start) < time.Second; ops++ {
						page, err := s.QueryItems(ctx, params(shapes[i]))
						if err != nil {
							b.Fatal(err)
						}
						records[i], entries[i] = records[i]+page.Examined, entries[i]+page.IndexEntries
						page.Release()
					}
					per[i] = append(per[i], float64(time.Since(start).Microseconds())/float64(ops))
					done[i] += ops
				}
				ratios = append(ratios, per[0][r]/per[1][r])
			}
			med := func(xs []float64) float64 { xs = slices.Clone(xs); slices.Sort(xs); return xs[len(xs)/2] }
			b.ReportMetric(med(ratios), "index/evaluated")
			b.Logf("%s: index %.0f µs, %d records, %d entries a query; evaluated %.0f µs, %d records, %d entries; ratio per round %.3f, median %.3f",
				scope, med(per[0]), records[0]/done[0], entries[0]/done[0], med(per[1]), records[1]/done[1], entries[1]/done[1], ratios, med(ratios))
		})
	}
}

// BenchmarkGroupCountDrain drains SELECT c.k, COUNT(1) AS n FROM c GROUP
// BY c.k across the partitions of 10⁵ items, k = i % 5000 (5,000 groups of
// 20), in pages of the server's choice (1,000 groups): counted/ from k's
// entries, a page of groups at a time (groupCountByIndex), evaluated/ the
// same with WHERE true, which the index does not answer, reading every
// document in key order (keyedgroups.go). Each op is a whole drain;
// records/op and entries/op are its work.
//
//	go test -run '^$' -bench BenchmarkGroupCountDrain -benchtime 10x ./internal/engine/
func BenchmarkGroupCountDrain(b *testing.B) {
	const n = 100_000
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	s.load(b, 0, n, func(i int) []byte {
		return []byte(`{"id":"g` + strconv.Itoa(i) + `","pk":"` + benchPK(i) + `","k":` + strconv.Itoa(i%5000) + `,"payload":"` + benchPayload + `"}`)
	})
	for _, q := range []string{"SELECT c.k, COUNT(1) AS n FROM c GROUP BY c.k", "SELECT c.k, COUNT(1) AS n FROM c WHERE true GROUP BY c.k"} {
		s.orderReady(b, QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: q, RangeID: "0", CrossPartition: true, MaxItemCount: 1})
	}
	s.settle(b)
	for _, c := range []struct{ name, query string }{
		{"counted", "SELECT c.k, COUNT(1) AS n FROM c GROUP BY c.k"},
		{"evaluated", "SELECT c.k, COUNT(1) AS n FROM c WHERE true GROUP BY c.k"},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: c.query, RangeID: "0", CrossPartition: true, MaxItemCount: -1}
			if w := benchWholeDrain(b, s, p, true, nil); w.rows != 5000*b.N {
				b.Fatalf("%d groups a drain, want 5,000", w.rows/b.N)
			}
		})
	}
}
