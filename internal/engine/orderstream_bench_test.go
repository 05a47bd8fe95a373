package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/plan"
)

// BenchmarkOrderByDrain shows that a page of an ORDER BY drained through
// the ordered stream costs what the first page costs, whatever its place
// in the drain: records/op and entries/op of page-1 and page-k should
// match, and stay flat as the container grows. Every query runs over the
// range (pages of 100; the values of n are a permutation of the items, so
// ties are rare; m has 100 values, so every value is a group of ties):
//
//   - asc: SELECT c.id, c.n FROM c WHERE c.n >= 0 ORDER BY c.n
//   - desc: SELECT c.id, c.n FROM c ORDER BY c.n DESC, whose last page
//     also scans the range for documents without n
//   - ties: SELECT c.id, c.m FROM c WHERE c.m >= 0 ORDER BY c.m
//   - keys: SELECT c.id, c.g, c.m FROM c WHERE c.g >= 0 ORDER BY c.g, c.m DESC,
//     over two keys, which reads each group of equal g (10 items) whole
//   - keys-few: SELECT c.id, c.h, c.n FROM c WHERE c.h >= 0 ORDER BY c.h, c.n DESC,
//     whose first key has ten values (groups of a tenth of the items), walked
//     through the composite index on (h, n DESC)
//   - ts: SELECT c.id, c._ts FROM c ORDER BY c._ts DESC, the items written
//     within a few seconds (large groups of equal _ts, read through their
//     tie entries)
//   - filtered: SELECT c.id, c.n FROM c WHERE c.h IN (0, …, 8) AND c.m < 5
//     ORDER BY c.n, its walk filtered by the range (a twentieth of the
//     items) where the IN list holds nine tenths
//   - or: SELECT c.id, c.n FROM c WHERE c.m = 7 OR c.h = 3 ORDER BY c.n,
//     its walk filtered by the OR's items (eleven hundredths of them)
//
// page-1 is the first page, page-k a page at a random position of the
// drain (its continuation taken once, by draining). The paths n and m
// have their absence and tie entries, and the composites their gap
// entries, as a server's indexer builds them after the first such queries.
//
//	go test -run '^$' -bench BenchmarkOrderByDrain -benchtime 200x ./internal/engine/
func BenchmarkOrderByDrain(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			// The container body after "defaultTtl": composite indexes
			// for the ORDER BYs on two keys.
			s := openBenchEngine(b, clock.Real{}, nil, `null,"indexingPolicy":{"includedPaths":[{"path":"/*"}],`+
				`"compositeIndexes":[[{"path":"/g"},{"path":"/m","order":"descending"}],[{"path":"/h"},{"path":"/n","order":"descending"}]]}`)
			s.pk = func(i int) string { return "q" + strconv.Itoa(i/100) }
			s.load(b, 0, n, func(i int) []byte {
				return []byte(`{"id":"x` + strconv.Itoa(i) + `","pk":"q` + strconv.Itoa(i/100) + `","n":` + strconv.Itoa(i*7919%n) +
					`,"m":` + strconv.Itoa(i%100) + `,"g":` + strconv.Itoa(i*7919%n/10) + `,"h":` + strconv.Itoa(i%10) + `,"payload":"` + benchPayload + `"}`)
			})
			// The absence and tie entries a server's indexer builds after
			// the first such queries (absent.go).
			for _, q := range []string{"SELECT c.id FROM c ORDER BY c.n DESC", "SELECT c.id FROM c WHERE c.m >= 0 ORDER BY c.m",
				"SELECT c.id FROM c WHERE c.g >= 0 ORDER BY c.g, c.m DESC", "SELECT c.id FROM c WHERE c.h >= 0 ORDER BY c.h, c.n DESC",
				"SELECT c.id FROM c ORDER BY c._ts DESC"} {
				s.orderReady(b, QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: q, RangeID: "0", CrossPartition: true, MaxItemCount: 1})
			}
			s.settle(b)
			for _, c := range []struct{ name, query, access string }{
				{"asc", "SELECT c.id, c.n FROM c WHERE c.n >= 0 ORDER BY c.n", "ordered-stream"},
				{"desc", "SELECT c.id, c.n FROM c ORDER BY c.n DESC", "ordered-stream"},
				{"ties", "SELECT c.id, c.m FROM c WHERE c.m >= 0 ORDER BY c.m", "ordered-stream"},
				{"keys", "SELECT c.id, c.g, c.m FROM c WHERE c.g >= 0 ORDER BY c.g, c.m DESC", "ordered-stream"},
				{"keys-few", "SELECT c.id, c.h, c.n FROM c WHERE c.h >= 0 ORDER BY c.h, c.n DESC", "ordered-stream"},
				{"ts", "SELECT c.id, c._ts FROM c ORDER BY c._ts DESC", "ordered-stream"},
				{"filtered", "SELECT c.id, c.n FROM c WHERE c.h IN (0, 1, 2, 3, 4, 5, 6, 7, 8) AND c.m < 5 ORDER BY c.n", "filtered-stream"},
				{"or", "SELECT c.id, c.n FROM c WHERE c.m = 7 OR c.h = 3 ORDER BY c.n", "filtered-stream"},
			} {
				p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: c.query, RangeID: "0", CrossPartition: true, MaxItemCount: 100}
				benchPages(b, s, p, c.name+"/", func(page *FeedPage) {
					if page.Plan != nil && page.Plan.Chosen.Access.String() != c.access {
						b.Fatalf("%s: chose %s", c.query, page.Plan.Explain())
					}
				})
			}
		})
	}
}

// BenchmarkPartitionOrderBy measures a page of SELECT * FROM c ORDER BY
// c.n within one logical partition of 5,000 items while the container
// around it grows (the other items in partitions of 100), before and
// after the path's partition entries are built (absent.go): page-1 is the
// first page of 100, page-k one at a random position of the drain. keys/
// does the same for SELECT * FROM c ORDER BY c.s, c.n, whose first key
// has three values (groups of a third of the partition), before and after
// the partition composite entries of the index on (s, n) are built; ts/
// for SELECT * FROM c ORDER BY c._ts DESC, the items written within a few
// seconds (large groups of equal _ts), before and after the partition
// entries of _ts are built.
//
//	go test -run '^$' -bench BenchmarkPartitionOrderBy -benchtime 100x ./internal/engine/
func BenchmarkPartitionOrderBy(b *testing.B) {
	const big = 5000
	for _, n := range []int{10_000, 100_000} {
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			s := openBenchEngine(b, clock.Real{}, nil, `null,"indexingPolicy":{"includedPaths":[{"path":"/*"}],`+
				`"compositeIndexes":[[{"path":"/s"},{"path":"/n"}]]}`)
			pk := func(i int) string {
				if i < big {
					return "big"
				}
				return "q" + strconv.Itoa(i/100)
			}
			s.pk = pk
			s.load(b, 0, n, func(i int) []byte {
				return []byte(`{"id":"x` + strconv.Itoa(i) + `","pk":"` + pk(i) + `","n":` + strconv.Itoa(i*7919%n) +
					`,"s":` + strconv.Itoa(i%3) + `,"payload":"` + benchPayload + `"}`)
			})
			s.settle(b)
			for _, c := range []struct{ name, query string }{
				{"", "SELECT * FROM c ORDER BY c.n"},
				{"keys/", "SELECT * FROM c ORDER BY c.s, c.n"},
				{"ts/", "SELECT * FROM c ORDER BY c._ts DESC"},
			} {
				p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl, HasKey: true, PartitionKey: partition.Key{partition.String("big")}},
					Query: c.query, MaxItemCount: 100}
				for _, built := range []bool{false, true} {
					if built {
						s.orderReady(b, p)
					}
					benchPages(b, s, p, fmt.Sprintf("%sentries=%v/", c.name, built), nil)
				}
			}
		})
	}
}

// BenchmarkEqualitiesOrderBy drains, across the range, SELECT * FROM c
// WHERE c.t = 3 AND c.st = 4 ORDER BY c.created DESC (a hundredth of the
// items: t and st have ten values each) under the composite index (/t,
// /st, /created DESC), as written (fixed) and with the equalities' paths
// leading its ORDER BY (keys), once the composite's entries are built:
// page-1 is the first page of 100, page-k one at a random position of the
// drain.
//
//	go test -run '^$' -bench BenchmarkEqualitiesOrderBy -benchtime 100x ./internal/engine/
func BenchmarkEqualitiesOrderBy(b *testing.B) {
	const n = 100_000
	s := openBenchEngine(b, clock.Real{}, nil, `null,"indexingPolicy":{"includedPaths":[{"path":"/*"}],`+
		`"compositeIndexes":[[{"path":"/t"},{"path":"/st"},{"path":"/created","order":"descending"}]]}`)
	s.pk = func(i int) string { return "q" + strconv.Itoa(i/100) }
	s.load(b, 0, n, func(i int) []byte {
		return []byte(`{"id":"x` + strconv.Itoa(i) + `","pk":"q` + strconv.Itoa(i/100) + `","t":` + strconv.Itoa(i%10) +
			`,"st":` + strconv.Itoa(i/10%10) + `,"created":` + strconv.Itoa(i*7919%n) + `,"payload":"` + benchPayload + `"}`)
	})
	queries := map[string]QueryParams{}
	for name, query := range map[string]string{
		"fixed/": "SELECT * FROM c WHERE c.t = 3 AND c.st = 4 ORDER BY c.created DESC",
		"keys/":  "SELECT * FROM c WHERE c.t = 3 AND c.st = 4 ORDER BY c.t, c.st, c.created DESC",
	} {
		queries[name] = QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: query, RangeID: "0", CrossPartition: true, MaxItemCount: 100}
		s.orderReady(b, queries[name])
	}
	s.settle(b)
	for _, name := range []string{"fixed/", "keys/"} {
		benchPages(b, s, queries[name], name, nil)
	}
}

// benchPages drains p once, handing each page to check (when not nil),
// then runs sub-benchmarks name+"page-1", the first page, and
// name+"page-k", a page at a random position of the drain, reporting the
// records and index entries a page read.
func benchPages(b *testing.B, s *benchStore, p QueryParams, name string, check func(*FeedPage)) {
	ctx := context.Background()
	conts := []string{""}
	for {
		page, err := s.QueryItems(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		if check != nil {
			check(page)
		}
		if page.Continuation == "" {
			break
		}
		conts = append(conts, page.Continuation)
		p.Continuation = page.Continuation
	}
	for _, k := range []string{"page-1", "page-k"} {
		b.Run(name+k, func(b *testing.B) {
			records, entries := 0, 0
			for b.Loop() {
				p.Continuation = ""
				if k == "page-k" {
					p.Continuation = conts[1+rand.IntN(len(conts)-1)]
				}
				page, err := s.QueryItems(ctx, p)
				if err != nil {
					b.Fatal(err)
				}
				records, entries = records+page.Examined, entries+page.IndexEntries
			}
			b.ReportMetric(float64(records)/float64(b.N), "records/op")
			b.ReportMetric(float64(entries)/float64(b.N), "entries/op")
		})
	}
}

// BenchmarkSortedDrain drains, in pages of 20, an ORDER BY the evaluator
// sorts over an index span: SELECT * FROM c WHERE c.u = 'hot' ORDER BY
// c.n, 301 of 10⁵ items, whose span the planner prefers to the stream.
// Each op of drain/ is the whole drain, of page-1/ its first page;
// distinct-drain/ drains a DISTINCT of two paths the evaluator sorts over
// the same span, 100 rows. records/op and entries/op are their work.
//
//	go test -run '^$' -bench BenchmarkSortedDrain -benchtime 20x ./internal/engine/
func BenchmarkSortedDrain(b *testing.B) {
	const n = 100_000
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	s.pk = func(i int) string { return "q" + strconv.Itoa(i/100) }
	s.load(b, 0, n, func(i int) []byte {
		u := hotEvery(i, 333)
		return []byte(`{"id":"x` + strconv.Itoa(i) + `","pk":"q` + strconv.Itoa(i/100) + `","n":` + strconv.Itoa(i*7919%n) +
			`,"u":"` + u + `","m":` + strconv.Itoa(i/333%100) + `,"k":` + strconv.Itoa(i/333%2) + `,"payload":"` + benchPayload + `"}`)
	})
	s.settle(b)
	sorted := "SELECT * FROM c WHERE c.u = 'hot' ORDER BY c.n"
	for _, c := range []struct {
		name, query string
		whole       bool
	}{
		{"drain", sorted, true},
		{"page-1", sorted, false}, // what a first page pays for the rows it leaves
		{"distinct-drain", "SELECT DISTINCT c.m, c.k FROM c WHERE c.u = 'hot' ORDER BY c.m DESC", true},
	} {
		p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: c.query, RangeID: "0", CrossPartition: true, MaxItemCount: 20}
		b.Run(c.name, func(b *testing.B) {
			w := benchWholeDrain(b, s, p, c.whole, func(page *FeedPage) {
				if page.Plan != nil && page.Plan.Chosen.Access != plan.IndexSpan {
					b.Fatalf("chose %s", page.Plan.Explain())
				}
			})
			b.ReportMetric(float64(w.pages)/float64(b.N), "pages/op")
		})
	}
}
