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
// each with its count, and the first query's rows 16 to 25 (offset) and
// the second's 151 to 250 (offset-whole) by OFFSET and LIMIT, as a client
// that sends a query whole asks them, and the count of each c.s of the
// second query (groups) and of its rows with c.n > 50 (groups-filtered),
// as the SDKs rewrite a GROUP BY, and the DISTINCT values of c.s of those
// two (distinct, distinct-filtered); each sent with a partition key
// range's id, as an SDK sends a query to a range, in containers of 100
// items a logical partition: "parts" reads the listed partitions one
// after another (listedParts; an aggregate, each partition's answer
// combined), or walks them merged (listScope), "wide" the container
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
	sizes := keyListSizes(b, 10_000, 100_000)
	const per = 100
	for _, n := range sizes {
		s := openBenchEngine(b, clock.Real{}, nil, "null")
		s.pk = func(i int) string { return "q" + strconv.Itoa(i/per) }
		s.load(b, 0, n, func(i int) []byte {
			return []byte(`{"id":"x` + strconv.Itoa(i) + `","pk":"q` + strconv.Itoa(i/per) + `","n":` + strconv.Itoa(i%per) + `,"s":"s` + strconv.Itoa(i%10) + `","payload":"` + benchPayload + `"}`)
		})
		s.orderReady(b, QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: "SELECT * FROM c WHERE c.pk IN ('q0', 'q1') ORDER BY c.n", RangeID: "0", CrossPartition: true})
		s.orderReady(b, QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: "SELECT DISTINCT VALUE c.s FROM c WHERE c.pk IN ('q0', 'q1')", RangeID: "0", CrossPartition: true})
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
			{"offset", "SELECT * FROM c", " AND c.s = 's3' OFFSET 15 LIMIT 10"},
			{"offset-whole", "SELECT * FROM c", " OFFSET 150 LIMIT 100"},
			{"groups", `SELECT [{"item": c.s}] AS groupByItems, {"s": c.s, "n": {"item": COUNT(1)}} AS payload FROM c`, " GROUP BY c.s"},
			{"groups-filtered", `SELECT [{"item": c.s}] AS groupByItems, {"s": c.s, "n": {"item": COUNT(1)}} AS payload FROM c`, " AND c.n > 50 GROUP BY c.s"},
			{"distinct", "SELECT DISTINCT VALUE c.s FROM c", ""},
			{"distinct-filtered", "SELECT DISTINCT VALUE c.s FROM c", " AND c.n > 50"},
		} {
			if only := os.Getenv("MAYFLY_BENCH_KEYLIST_SHAPES"); only != "" && !slices.Contains(strings.Split(only, ","), shape.name) {
				continue
			}
			keyListRounds(b, s, strconv.Itoa(n), shape.name, func() QueryParams {
				return QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: shape.head + " WHERE c.pk IN (" + list() + ")" + shape.where, RangeID: "0", CrossPartition: true, MaxItemCount: 100}
			})
		}
	}
}

// keyListRounds measures a query drained page by page, "parts" as the
// engine reads a key list and "wide" through the container
// (Engine.keyListsWide), alternating every round, seven rounds of 300 ms
// each, and reports the medians as size-shape-path-ns/op and in the log.
// Each operation drains the query params gives.
func keyListRounds(b *testing.B, s *benchStore, size, shape string, params func() QueryParams) {
	const rounds, slot = 7, 300 * time.Millisecond
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
			labels := pprof.Labels("size", size, "shape", shape, "path", []string{"parts", "wide"}[i])
			pprof.Do(context.Background(), labels, func(context.Context) {
				for ; done == 0 || time.Since(start) < slot; done++ {
					rec, ent := s.queryWork(b, params(), true)
					records[i], entries[i] = records[i]+rec, entries[i]+ent
				}
			})
			per[i] = append(per[i], float64(time.Since(start).Nanoseconds())/float64(done))
			ops[i] += done
		}
	}
	s.keyListsWide = false
	med := func(xs []float64) float64 { xs = slices.Clone(xs); slices.Sort(xs); return xs[len(xs)/2] }
	name := size + "-" + shape
	b.ReportMetric(med(per[0]), name+"-parts-ns/op")
	b.ReportMetric(med(per[1]), name+"-wide-ns/op")
	b.Logf("%s items, %s: parts %.0f µs, %.0f records, %.0f entries; wide %.0f µs, %.0f records, %.0f entries; wide/parts %.2f",
		size, shape, med(per[0])/1e3, float64(records[0])/float64(ops[0]), float64(entries[0])/float64(ops[0]),
		med(per[1])/1e3, float64(records[1])/float64(ops[1]), float64(entries[1])/float64(ops[1]), med(per[1])/med(per[0]))
}

// BenchmarkKeyListUnderAPrefix drains queries that list users under a
// tenant of a hierarchical key (/t, /u): tenants of 2,000 items in 20
// users of 100, in containers of 2·10⁴ and 2·10⁵ items
// (MAYFLY_BENCH_KEYLIST_SIZES), three random users of a random tenant:
// SELECT * FROM c WHERE c.t = … AND c.u IN (…) (list), the same with
// ORDER BY c.k (ordered), and SELECT VALUE COUNT(1) of the first with
// c.g = 3 beside it (count), each as an SDK sends it to a partition key
// range, pages of 100; "parts" as the engine reads the listed users'
// partitions, "wide" under the tenant's prefix (keyListRounds).
//
//	go test -run '^$' -bench BenchmarkKeyListUnderAPrefix -benchtime 1x ./internal/engine/
func BenchmarkKeyListUnderAPrefix(b *testing.B) {
	sizes := keyListSizes(b, 20_000, 200_000)
	const per, users = 100, 20
	ctx := context.Background()
	for _, n := range sizes {
		s := openBenchEngine(b, clock.Real{}, nil, "null")
		body := `{"id":"h","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2}}`
		if _, err := s.CreateContainer(ctx, benchDB, benchParse(b, body), nil); err != nil {
			b.Fatal(err)
		}
		tenants := n / (per * users)
		s.loadTenants(b, n, per, func(p int) (string, string) { return "t" + strconv.Itoa(p%tenants), "u" + strconv.Itoa(p) })
		// Three users of one tenant: user p is under tenant p % tenants.
		where := func() string {
			t := rand.IntN(tenants)
			u := make([]string, 3)
			for i := range u {
				u[i] = "'u" + strconv.Itoa(t+tenants*rand.IntN(users)) + "'"
			}
			return " WHERE c.t = 't" + strconv.Itoa(t) + "' AND c.u IN (" + strings.Join(u, ", ") + ")"
		}
		s.orderReady(b, QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: "h"}, Query: "SELECT * FROM c" + where() + " ORDER BY c.k", RangeID: "0", CrossPartition: true})
		s.settle(b)
		for _, shape := range []struct{ name, head, tail string }{
			{"list", "SELECT * FROM c", ""},
			{"ordered", "SELECT * FROM c", " ORDER BY c.k"},
			{"count", `SELECT VALUE [{"item": COUNT(1)}] FROM c`, " AND c.g = 3"},
		} {
			keyListRounds(b, s, strconv.Itoa(n), shape.name, func() QueryParams {
				return QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: "h"}, Query: shape.head + where() + shape.tail, RangeID: "0", CrossPartition: true, MaxItemCount: 100}
			})
		}
	}
}

// keyListSizes is the container sizes of a key-list benchmark:
// MAYFLY_BENCH_KEYLIST_SIZES, a comma-separated list, or defaults.
func keyListSizes(b *testing.B, defaults ...int) []int {
	v := os.Getenv("MAYFLY_BENCH_KEYLIST_SIZES")
	if v == "" {
		return defaults
	}
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			b.Fatal(err)
		}
		sizes = append(sizes, n)
	}
	return sizes
}
