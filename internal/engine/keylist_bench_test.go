package engine

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// BenchmarkKeyList drains SELECT * FROM c WHERE c.pk IN (three keys) AND
// c.s = 's3' (30 rows of 300), the same query without the c.s term (300
// rows), SELECT TOP 10 * FROM c WHERE c.pk IN (three keys) AND c.n > 50,
// the count of the first query's rows, SELECT * FROM c WHERE c.pk IN
// (three keys) ORDER BY c.n (300 rows, three pages), SELECT TOP 10 *
// FROM c WHERE c.pk IN (three keys) ORDER BY c.n DESC, and that drain
// with c.s = 's3' beside the list (ordered-filtered), the MAX of c.n
// (max) and the SUM of c.n with c.s = 's3' beside the list (sum-filtered),
// each with its count, each as an SDK sends it to a partition key range,
// in containers of 100 items a logical partition: "parts" reads the
// listed partitions one after another (listedParts; an aggregate, each
// partition's answer combined), or walks them merged (listScope), "wide" the container
// through its index (Engine.keyListsWide), alternating every round, seven
// rounds of 300 ms each, medians.
//
//	go test -run '^$' -bench BenchmarkKeyList -benchtime 1x ./internal/engine/
//
// MAYFLY_BENCH_KEYLIST_SIZES sets the sizes (default 10000,100000),
// MAYFLY_BENCH_KEYLIST_SHAPES the shapes by name (default all); with
// -cpuprofile, the samples carry the size, the shape and the path as
// labels, for pprof's -tagfocus.
func BenchmarkKeyList(b *testing.B) {
	sizes := []int{10_000, 100_000}
	if v := os.Getenv("MAYFLY_BENCH_KEYLIST_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	const per, rounds, slot = 100, 7, 300 * time.Millisecond
	for _, n := range sizes {
		s := openBenchEngine(b, clock.Real{}, nil, "null")
		s.pk = func(i int) string { return "q" + strconv.Itoa(i/per) }
		s.load(b, 0, n, func(i int) []byte {
			return []byte(`{"id":"x` + strconv.Itoa(i) + `","pk":"q` + strconv.Itoa(i/per) + `","n":` + strconv.Itoa(i%per) + `,"s":"s` + strconv.Itoa(i%10) + `","payload":"` + benchPayload + `"}`)
		})
		s.orderReady(b, QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: "SELECT * FROM c WHERE c.pk IN ('q0', 'q1') ORDER BY c.n", RangeID: "0", CrossPartition: true})
		s.settle(b)
		list := func() string {
			k := make([]string, 3)
			for i := range k {
				k[i] = "'q" + strconv.Itoa(rand.IntN(n/per)) + "'"
			}
			return strings.Join(k, ", ")
		}
		for _, shape := range []struct{ name, head, where string }{
			{"filtered", "SELECT * FROM c", " AND c.s = 's3'"},
			{"whole", "SELECT * FROM c", ""},
			{"top", "SELECT TOP 10 * FROM c", " AND c.n > 50"},
			{"count", `SELECT VALUE [{"item": COUNT(1)}] FROM c`, " AND c.s = 's3'"},
			{"ordered", "SELECT * FROM c", " ORDER BY c.n"},
			{"ordered-top", "SELECT TOP 10 * FROM c", " ORDER BY c.n DESC"},
			{"ordered-filtered", "SELECT * FROM c", " AND c.s = 's3' ORDER BY c.n"},
			{"max", `SELECT VALUE [{"item": {"max": MAX(c.n), "count": COUNT(c.n)}}] FROM c`, ""},
			{"sum-filtered", `SELECT VALUE [{"item": {"sum": SUM(c.n), "count": COUNT(c.n)}}] FROM c`, " AND c.s = 's3'"},
		} {
			if only := os.Getenv("MAYFLY_BENCH_KEYLIST_SHAPES"); only != "" && !slices.Contains(strings.Split(only, ","), shape.name) {
				continue
			}
			var per [2][]float64
			var records, entries, ops [2]int
			for r := range rounds {
				for k := range 2 {
					wide := (k+r)%2 == 1
					s.keyListsWide = wide
					i := 0
					if wide {
						i = 1
					}
					start, done := time.Now(), 0
					// Labelled for pprof's -tagfocus.
					labels := pprof.Labels("size", strconv.Itoa(n), "shape", shape.name, "path", []string{"parts", "wide"}[i])
					pprof.Do(context.Background(), labels, func(context.Context) {
						for ; done == 0 || time.Since(start) < slot; done++ {
							p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: shape.head + " WHERE c.pk IN (" + list() + ")" + shape.where, RangeID: "0", CrossPartition: true, MaxItemCount: 100}
							rec, ent := s.queryWork(b, p, true)
							records[i], entries[i] = records[i]+rec, entries[i]+ent
						}
					})
					per[i] = append(per[i], float64(time.Since(start).Nanoseconds())/float64(done))
					ops[i] += done
				}
			}
			s.keyListsWide = false
			med := func(xs []float64) float64 { xs = slices.Clone(xs); slices.Sort(xs); return xs[len(xs)/2] }
			name := strconv.Itoa(n) + "-" + shape.name
			b.ReportMetric(med(per[0]), name+"-parts-ns/op")
			b.ReportMetric(med(per[1]), name+"-wide-ns/op")
			b.Logf("%d items, %s: parts %.0f µs, %.0f records, %.0f entries; wide %.0f µs, %.0f records, %.0f entries; wide/parts %.2f",
				n, shape.name, med(per[0])/1e3, float64(records[0])/float64(ops[0]), float64(entries[0])/float64(ops[0]),
				med(per[1])/1e3, float64(records[1])/float64(ops[1]), float64(entries[1])/float64(ops[1]), med(per[1])/med(per[0]))
		}
	}
}
