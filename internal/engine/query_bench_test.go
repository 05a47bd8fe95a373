package engine

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/document"
)

// BenchmarkSelectiveQuery shows that a selective query costs what it
// returns, not what the container holds: a cross-partition equality on id,
// a TOP 10 … ORDER BY served by walking the index, and a STARTSWITH that
// matches about ten items, on containers of 10⁵ and 10⁶ items. ns/op and examined/op should be flat between the sizes.
//
//	go test -run '^$' -bench BenchmarkSelectiveQuery -benchtime 2000x ./internal/engine/
func BenchmarkSelectiveQuery(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			s := openBenchEngine(b, clock.Real{}, nil, "null")
			s.load(b, 0, n, func(i int) []byte { return benchItem("x", i, "") })
			s.settle(b)
			ctx := context.Background()
			run := func(b *testing.B, query func(i int) (string, map[string]document.Value), want int) {
				examined := 0
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					q, params := query(rand.IntN(n / 10))
					page, err := s.QueryItems(ctx, QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl},
						Query: q, Params: params, MaxItemCount: -1, RangeID: "0", CrossPartition: true})
					if err != nil {
						b.Fatal(err)
					}
					if want > 0 && len(page.Items) < want {
						b.Fatalf("%s: %d rows, want at least %d", q, len(page.Items), want)
					}
					examined += page.Examined
				}
				b.ReportMetric(float64(examined)/float64(b.N), "examined/op")
			}
			b.Run("eq", func(b *testing.B) {
				run(b, func(i int) (string, map[string]document.Value) {
					return "SELECT * FROM c WHERE c.id = @id", map[string]document.Value{"@id": document.Str("x" + strconv.Itoa(i*10))}
				}, 1)
			})
			b.Run("top-order-by", func(b *testing.B) {
				run(b, func(i int) (string, map[string]document.Value) {
					// "x" and a number from 1: some ids always sort below it.
					return "SELECT TOP 10 c.id FROM c WHERE c.id < @hi ORDER BY c.id DESC", map[string]document.Value{"@hi": document.Str("x" + strconv.Itoa(i+1))}
				}, 1)
			})
			b.Run("prefix", func(b *testing.B) {
				run(b, func(i int) (string, map[string]document.Value) {
					// x<i> followed by one more digit: about ten items.
					return "SELECT c.id FROM c WHERE STARTSWITH(c.id, @p) AND c.id > @p", map[string]document.Value{"@p": document.Str("x" + strconv.Itoa(i+1))}
				}, 1)
			})
		})
	}
}

// BenchmarkInequalityDrain drains, in pages of 100, SELECT * FROM c WHERE
// c.status != 'done', 301 of 10⁵ items, across partitions: the index
// entries on either side of 'done'. Each op is the whole drain; records/op
// and entries/op are its work.
//
//	go test -run '^$' -bench BenchmarkInequalityDrain -benchtime 20x ./internal/engine/
func BenchmarkInequalityDrain(b *testing.B) {
	const n = 100_000
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	s.load(b, 0, n, func(i int) []byte {
		status := "done"
		if i%333 == 0 {
			status = "open"
		}
		return []byte(`{"id":"x` + strconv.Itoa(i) + `","pk":"` + benchPK(i) + `","status":"` + status + `","payload":"` + benchPayload + `"}`)
	})
	s.settle(b)
	p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: "SELECT * FROM c WHERE c.status != 'done'", RangeID: "0", CrossPartition: true, MaxItemCount: 100}
	if w := benchWholeDrain(b, s, p, true, nil); w.rows != 301*b.N {
		b.Fatalf("%d rows a drain, want 301", w.rows/b.N)
	}
}

// drainBench loads 10⁵ items across partitions, item i being
// {"id", "pk", fields(i), "payload"}, has the index entries each of the
// queries asks for built, and returns the store.
func drainBench(b *testing.B, fields func(i int) string, queries ...string) *benchStore {
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	s.load(b, 0, 100_000, func(i int) []byte {
		return []byte(`{"id":"x` + strconv.Itoa(i) + `","pk":"` + benchPK(i) + `",` + fields(i) + `,"payload":"` + benchPayload + `"}`)
	})
	for _, q := range queries {
		s.orderReady(b, drainParams(q))
	}
	s.settle(b)
	return s
}

// drainParams is query across partitions, in pages of 100.
func drainParams(query string) QueryParams {
	return QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: query, RangeID: "0", CrossPartition: true, MaxItemCount: 100}
}

// benchQueryDrain drains query whole an op (benchWholeDrain), which must
// make rows rows.
func benchQueryDrain(b *testing.B, s *benchStore, query string, rows int) {
	if w := benchWholeDrain(b, s, drainParams(query), true, nil); w.rows != rows*b.N {
		b.Fatalf("%d rows a drain, want %d", w.rows/b.N, rows)
	}
}

// BenchmarkFilteredKeyDrain drains, in pages of 100, a DISTINCT and a
// GROUP BY of a path of 3,001 values under a term a tenth of 10⁵ items
// pass, across partitions: the path's walk filtered by the term's
// locations, a record a group for the DISTINCT and one a passing item for
// the GROUP BY. Each op is the whole drain.
//
//	go test -run '^$' -bench BenchmarkFilteredKeyDrain -benchtime 5x ./internal/engine/
func BenchmarkFilteredKeyDrain(b *testing.B) {
	queries := []struct{ name, query string }{
		{"distinct", "SELECT DISTINCT VALUE c.w FROM c WHERE c.u = 'hot'"},
		{"group-by", "SELECT c.w, COUNT(1) AS n FROM c WHERE c.u = 'hot' GROUP BY c.w"},
	}
	s := drainBench(b, func(i int) string {
		return `"u":"` + hotEvery(i, 10) + `","w":` + strconv.Itoa(i%3001)
	}, queries[0].query, queries[1].query)
	for _, c := range queries {
		b.Run(c.name, func(b *testing.B) { benchQueryDrain(b, s, c.query, 3001) })
	}
}

// BenchmarkEqualityBesideRangeDrain drains, in pages of 100, SELECT * FROM
// c WHERE c.h = 1 AND c.n < 500 over 10⁵ items (a tenth hold h = 1, half
// of them n < 500: 5,000 rows), across partitions: a first page that
// scans, and pages after it that step through the equality's entries once
// the scan has cost what counting them does. Each op is the whole drain.
//
//	go test -run '^$' -bench BenchmarkEqualityBesideRangeDrain -benchtime 5x ./internal/engine/
func BenchmarkEqualityBesideRangeDrain(b *testing.B) {
	const q = "SELECT * FROM c WHERE c.h = 1 AND c.n < 500"
	s := drainBench(b, func(i int) string { return `"h":` + strconv.Itoa(i%10) + `,"n":` + strconv.Itoa(i%1000) }, q)
	benchQueryDrain(b, s, q, 5000)
}

// BenchmarkOrBesideRangeDrain drains, in pages of 100, SELECT * FROM c
// WHERE (c.u = 'hot' OR c.h = 2) AND c.n < 100 over 10⁵ items (the OR
// holds 11,000 of them, the range 10,000, both 1,100), across partitions:
// the OR's items intersected with the range's before any record is read.
// Each op is the whole drain.
//
//	go test -run '^$' -bench BenchmarkOrBesideRangeDrain -benchtime 5x ./internal/engine/
func BenchmarkOrBesideRangeDrain(b *testing.B) {
	const q = "SELECT * FROM c WHERE (c.u = 'hot' OR c.h = 2) AND c.n < 100"
	s := drainBench(b, func(i int) string {
		return `"u":"` + hotEvery(i, 100) + `","h":` + strconv.Itoa(i%10) + `,"n":` + strconv.Itoa(i%1000)
	}, q)
	benchQueryDrain(b, s, q, 1100)
}

// BenchmarkValueScanDrain drains, in pages of 100, filters no index span
// answers over 10⁵ items, across partitions: CONTAINS on a name (280
// rows), LOWER of a city (1,002 rows: "Oslo", "OSLO" and "oslo" among 300
// cities), CONTAINS that every name passes (10⁵ rows), and the first
// beside a range of half the items. The first two and the last read the
// path's entries and their rows' records (plan.ValueScan), where a scan,
// or the range's span, reads every record; the third scans, its first
// page a scan tried first that fills it. Each op is the whole drain, its first page alone
// (-page1), or the COUNT(1) of the first two and the last (-count),
// counted from the entries.
//
//	go test -run '^$' -bench BenchmarkValueScanDrain -benchtime 5x ./internal/engine/
func BenchmarkValueScanDrain(b *testing.B) {
	queries := []struct {
		name, query string
		rows        int
	}{
		{"contains", "SELECT * FROM c WHERE CONTAINS(c.name, '777')", 280},
		{"lower", "SELECT * FROM c WHERE LOWER(c.city) = 'oslo'", 1002},
		{"most-pass", "SELECT * FROM c WHERE CONTAINS(c.name, 'n')", 100_000},
		{"beside-range", "SELECT * FROM c WHERE c.n >= 500 AND CONTAINS(c.name, '777')", 280},
	}
	spellings := []string{"Oslo", "OSLO", "oslo"}
	s := drainBench(b, func(i int) string {
		city := "city-" + strconv.Itoa(i%300)
		if i%300 < 3 {
			city = spellings[i%300]
		}
		return `"name":"n` + strconv.Itoa(i) + `","city":"` + city + `","n":` + strconv.Itoa(i%1000)
	})
	for _, c := range queries {
		b.Run(c.name, func(b *testing.B) { benchQueryDrain(b, s, c.query, c.rows) })
		b.Run(c.name+"-page1", func(b *testing.B) { benchFirstPage(b, s, drainParams(c.query)) })
		if c.name == "contains" || c.name == "lower" || c.name == "beside-range" {
			count := strings.Replace(c.query, "SELECT *", "SELECT VALUE COUNT(1)", 1)
			b.Run(c.name+"-count", func(b *testing.B) { benchFirstPage(b, s, drainParams(count)) })
		}
	}
}

// BenchmarkValueFilteredOrderBy pages, in pages of 100, ORDER BY queries
// over filters no index span answers, over the items of
// BenchmarkValueScanDrain: CONTAINS on a name (280 rows) ordered by
// another path and by the name, a TOP 10 of LOWER of a city (1,002
// items pass) ordered by another path, CONTAINS on a name beside the
// cities that start with "city-1" (111 of 300), and CONTAINS that every
// name passes. The walk of the ORDER BY path reads the records of the items
// the filter passes rather than every walked entry's (valuestream.go).
// Each op is the whole drain, or its first page alone (-page1).
//
//	go test -run '^$' -bench BenchmarkValueFilteredOrderBy -benchtime 5x ./internal/engine/
func BenchmarkValueFilteredOrderBy(b *testing.B) {
	queries := []struct {
		name, query string
		rows        int // 0: the first page alone; -1: a drain of rows not counted
	}{
		{"by-other", "SELECT * FROM c WHERE CONTAINS(c.name, '777') ORDER BY c.n", 280},
		{"by-path", "SELECT * FROM c WHERE CONTAINS(c.name, '777') ORDER BY c.name DESC", 280},
		{"top", "SELECT TOP 10 * FROM c WHERE LOWER(c.city) = 'oslo' ORDER BY c.n DESC", 0},
		{"beside-term", "SELECT * FROM c WHERE STARTSWITH(c.city, 'city-1') AND CONTAINS(c.name, '77') ORDER BY c.n", -1},
		{"most-pass", "SELECT * FROM c WHERE CONTAINS(c.name, 'n') ORDER BY c.n", 0},
	}
	spellings := []string{"Oslo", "OSLO", "oslo"}
	var all []string
	for _, c := range queries {
		all = append(all, c.query)
	}
	s := drainBench(b, func(i int) string {
		city := "city-" + strconv.Itoa(i%300)
		if i%300 < 3 {
			city = spellings[i%300]
		}
		return `"name":"n` + strconv.Itoa(i) + `","city":"` + city + `","n":` + strconv.Itoa(i%1000)
	}, all...)
	for _, c := range queries {
		switch {
		case c.rows > 0:
			b.Run(c.name, func(b *testing.B) { benchQueryDrain(b, s, c.query, c.rows) })
		case c.rows < 0:
			b.Run(c.name, func(b *testing.B) { benchWholeDrain(b, s, drainParams(c.query), true, nil) })
		}
		b.Run(c.name+"-page1", func(b *testing.B) { benchFirstPage(b, s, drainParams(c.query)) })
	}
}

// BenchmarkCountKeys counts the items of ten logical partitions of 100
// among 10⁵ items across partitions, SELECT VALUE COUNT(1) FROM c WHERE
// c.pk IN (…): from the ten partitions' counters (countByKeys), where the
// partition key's index entries are one an item.
//
//	go test -run '^$' -bench BenchmarkCountKeys -benchtime 2000x ./internal/engine/
func BenchmarkCountKeys(b *testing.B) {
	keys := make([]string, 10)
	for i := range keys {
		keys[i] = "'p" + strconv.Itoa(i*37) + "'"
	}
	q := "SELECT VALUE COUNT(1) FROM c WHERE c.pk IN (" + strings.Join(keys, ", ") + ")"
	s := drainBench(b, func(i int) string { return `"n":` + strconv.Itoa(i%1000) })
	b.Run("in-10", func(b *testing.B) { benchFirstPage(b, s, drainParams(q)) })
}
