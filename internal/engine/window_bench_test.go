package engine

import (
	"cmp"
	"context"
	"maps"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/partition"
)

// BenchmarkDeepPage reads page 1 and page 20 of long queries across
// partitions (pages of 100), one shape per access path, to show whether
// page k costs what page 1 costs. The container holds MAYFLY_BENCH_ITEMS
// items (2·10⁴ by default) written interleaved over 200 partitions, each
// with n (0..99 by write order), k (0..6), t (its place in the write
// order) and two tags; every tenth also has gone, a string or an object,
// and all but every tenth seen.
//
//	go test -run '^$' -bench BenchmarkDeepPage -benchtime 100x ./internal/engine/
func BenchmarkDeepPage(b *testing.B) {
	n := 20_000
	if v, err := strconv.Atoi(os.Getenv("MAYFLY_BENCH_ITEMS")); err == nil && v > 0 {
		n = v
	}
	parts := max(n/100, 1)
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	extra := func(i int) string {
		gone := ""
		switch i % 20 {
		case 0:
			gone = `,"gone":"` + strconv.Itoa(i) + `"`
		case 10:
			gone = `,"gone":{"at":` + strconv.Itoa(i) + `}`
		}
		if i%10 != 5 {
			gone += `,"seen":1`
		}
		return `,"n":` + strconv.Itoa(i/parts) + `,"k":` + strconv.Itoa(i%7) + `,"t":` + strconv.Itoa(i) + `,"tags":["a` + strconv.Itoa(i%5) + `","b"],"m":` + strconv.Itoa(i%17) + `,"h":` + strconv.Itoa(i%19) + gone
	}
	s.loadInterleaved(b, n, parts, extra)
	s.settle(b)
	warmAll(b, s)
	for _, q := range []struct {
		name, text string
		rows       int // a page's, when not 100
	}{
		{"scan", "SELECT * FROM c", 0},
		{"index-span", "SELECT * FROM c WHERE c.k = 3", 0},
		{"intersect", "SELECT * FROM c WHERE c.k = 3 AND c.n >= 20", 0},
		// Two equalities (a seventh and a seventeenth of the items), and
		// an equality with a range of 15 values of 17, spread through
		// the order; two equalities that share a 323rd.
		{"intersect-eq", "SELECT * FROM c WHERE c.k = 3 AND c.m = 5", 0},
		{"intersect-spread", "SELECT * FROM c WHERE c.k = 3 AND c.m >= 2", 0},
		{"intersect-narrow", "SELECT * FROM c WHERE c.m = 5 AND c.h = 7", 0},
		// Terms of 6 and 16 values that hold most of the items: a scan
		// fills ten rows within a dozen records.
		{"top-intersect-wide", "SELECT TOP 10 * FROM c WHERE c.k IN (0, 1, 2, 3, 4, 5) AND c.m < 16", 10},
		{"range-span", "SELECT * FROM c WHERE c.n BETWEEN 20 AND 39", 0},
		{"range-string", "SELECT * FROM c WHERE c.pk >= 'q100' AND c.pk < 'q120'", 0},
		// Eleven partitions' items of 200 (q12, q120 to q129).
		{"like-prefix", "SELECT * FROM c WHERE c.pk LIKE 'q12%'", 0},
		// The last tenth of the items written, one value each: a range
		// of times (c.ts > @since) across partitions.
		{"range-recent", "SELECT * FROM c WHERE c.t >= " + strconv.Itoa(n-n/10), 0},
		{"array-contains", "SELECT * FROM c WHERE ARRAY_CONTAINS(c.tags, 'a3')", 0},
		// A tenth of the items, spread through the order.
		{"is-defined", "SELECT * FROM c WHERE IS_DEFINED(c.gone)", 0},
		// The tenth of the items without seen (a queue of items not yet
		// marked), spread through the order.
		{"not-defined", "SELECT * FROM c WHERE NOT IS_DEFINED(c.seen)", 0},
		// ORs of terms on two paths: a seventh of the items or the
		// items written first (a quarter of the items); the items of
		// ten values of c.n, each written together, or the first
		// twentieth written (an eighth).
		{"or-wide", "SELECT * FROM c WHERE c.k = 3 OR c.n < 10", 0},
		{"or-tenth", "SELECT * FROM c WHERE c.n IN (3, 13, 23, 33, 43, 53, 63, 73, 83, 93) OR c.t < " + strconv.Itoa(n/20), 0},
		// A seventeenth of the items or a nineteenth, spread through
		// the order (a ninth).
		{"or-spread", "SELECT * FROM c WHERE c.m = 5 OR c.h = 7", 0},
		{"join-element", "SELECT c.id FROM c JOIN t IN c.tags WHERE t = 'a3'", 0},
		{"order-stream", "SELECT * FROM c ORDER BY c.n DESC", 0},
		// Equalities on another path and no composite index of the
		// two: two seventeenths of the items by a key of one each, and
		// a seventh by a key of 200 each.
		{"eq-order", "SELECT * FROM c WHERE c.m IN (5, 6) ORDER BY c.t DESC", 0},
		{"eq-order-ties", "SELECT * FROM c WHERE c.k = 3 ORDER BY c.n", 0},
		// The same two seventeenths as a range, and a tenth by a type
		// check: the walk filters by a term of several values too.
		{"range-order", "SELECT * FROM c WHERE c.m >= 15 ORDER BY c.t DESC", 0},
		{"kind-order", "SELECT * FROM c WHERE IS_DEFINED(c.gone) ORDER BY c.t", 0},
		// Six sevenths of the items: the walk of c.t reads about its
		// rows, and the filter's entries would cost more.
		{"eq-order-wide", "SELECT * FROM c WHERE c.k IN (0, 1, 2, 3, 4, 5) ORDER BY c.t", 0},
		// And beside a second such filter (sixteen seventeenths).
		{"eq2-order-wide", "SELECT * FROM c WHERE c.k IN (0, 1, 2, 3, 4, 5) AND c.m < 16 ORDER BY c.t", 0},
		// The latest ten of them: one page, so page 20 is page 1 again.
		{"top-eq-wide", "SELECT TOP 10 * FROM c WHERE c.k IN (0, 1, 2, 3, 4, 5) ORDER BY c.t DESC", 10},
		{"order-join", "SELECT c.id, t FROM c JOIN t IN c.tags ORDER BY c.n", 0},
		// A window of 50 pages: the latest half of the items.
		{"top-ordered", "SELECT TOP " + strconv.Itoa(min(n/2, 5000)) + " * FROM c ORDER BY c.t DESC", 0},
		{"offset-ordered", "SELECT * FROM c ORDER BY c.t DESC OFFSET 100 LIMIT " + strconv.Itoa(min(n/2, 5000)), 0},
		{"top", "SELECT TOP 100000 * FROM c", 0},
		{"offset", "SELECT * FROM c OFFSET 10 LIMIT 100000", 0},
		{"distinct", "SELECT DISTINCT VALUE c.id FROM c", 0},
		{"distinct-ordered", "SELECT DISTINCT VALUE c.id FROM c ORDER BY c.id", 0},
		// The per-range query of an SDK's cross-partition DISTINCT with
		// ORDER BY.
		{"distinct-sdk", `SELECT DISTINCT c._rid, [{"item": c.id}] AS orderByItems, c.id AS payload FROM c WHERE true ORDER BY c.id`, 0},
		// Rows of two paths: one per document here, in groups of 100
		// by partition key, a page a group.
		{"distinct-items", "SELECT DISTINCT c.pk, c.n FROM c", 0},
		{"distinct-items-ordered", "SELECT DISTINCT c.pk, c.n FROM c ORDER BY c.pk", 0},
		// Groups of 200 (one document of each partition), so that page
		// 20 resumes in the middle of one.
		{"distinct-items-mid", "SELECT DISTINCT c.n, c.pk FROM c", 0},
		// Seven groups (c.k) of about 2,860 documents each: page 20
		// resumes deep inside the first.
		{"distinct-items-few", "SELECT DISTINCT c.k, c.t FROM c", 0},
		{"distinct-top", "SELECT DISTINCT TOP 5000 VALUE c.id FROM c ORDER BY c.id", 0},
		// Six tags: one page, so page 20 is page 1 again.
		{"distinct-tags", "SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags", 6},
		// Rows no index gives in order, each value of four documents:
		// pages of such a DISTINCT keep their rows in the engine.
		{"distinct-expr", "SELECT DISTINCT VALUE c.t % " + strconv.Itoa(n/4) + " FROM c", 0},
		{"distinct-expr-top", "SELECT DISTINCT TOP " + strconv.Itoa(n/4) + " VALUE c.t % " + strconv.Itoa(n/4) + " FROM c", 0},
		// Groups by an expression, of four documents each: the first
		// page makes every group, and keeps those after it for the
		// next (heldRows).
		// Groups of two keys, of one document each, the first key of
		// seven values and no composite index of the two: page 20 is
		// inside the first value's 2,858 documents.
		{"group-keys", "SELECT c.k, c.t, COUNT(1) AS n FROM c GROUP BY c.k, c.t", 0},
		{"group-expr", "SELECT c.t % " + strconv.Itoa(n/4) + " AS g, COUNT(1) AS n FROM c GROUP BY c.t % " + strconv.Itoa(n/4), 0},
	} {
		p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: q.text, RangeID: "0", CrossPartition: true, MaxItemCount: 100}
		s.orderReady(b, p)
		for _, k := range []int{1, 20} {
			b.Run(q.name+"/page="+strconv.Itoa(k), func(b *testing.B) { benchPage(b, s, p, k, cmp.Or(q.rows, 100)) })
		}
		if afterWrite[q.name] {
			b.Run(q.name+"/page=20-written", func(b *testing.B) { benchPageAfterWrite(b, s, p, 20, n, extra) })
		}
		if drainFirst[q.name] {
			b.Run(q.name+"/pages=1-50", func(b *testing.B) { benchDrain(b, s, p, 50) })
		}
	}
}

// drainFirst names the shapes of BenchmarkDeepPage also run as the first
// 50 pages of a drain: those whose first page tries a scan
// (plan.ScanFirstBounds) or walks the ORDER BY path plain beside a filter,
// whose later pages go on so or collect the terms' entries once
// (collectAfterScan, filterAfterWalk), which page 1 and page 20 alone do
// not show.
var drainFirst = map[string]bool{"is-defined": true, "range-string": true, "array-contains": true, "index-span": true, "or-spread": true, "eq-order": true, "eq-order-ties": true, "eq-order-wide": true}

// benchDrain reads the first pages pages of p, of 100 rows each, over and
// over, and reports the time, records and index entries per page.
func benchDrain(b *testing.B, s *benchStore, p QueryParams, pages int) {
	var reads pageReads
	for b.Loop() {
		p := p
		for range pages {
			page, err := s.QueryItems(context.Background(), p)
			if err != nil {
				b.Fatal(err)
			}
			reads.add(page)
			p.Continuation = page.Continuation
			page.Release()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pages)/1e6, "ms/page")
	b.ReportMetric(float64(reads.records)/float64(b.N*pages), "records/page")
	b.ReportMetric(float64(reads.entries)/float64(b.N*pages), "entries/page")
}

// afterWrite names the shapes of BenchmarkDeepPage whose pages keep their
// candidates for the next (keptCandidates), also run with an item written
// between page 19 and page 20.
var afterWrite = map[string]bool{"is-defined": true, "eq-order": true, "eq-order-ties": true, "group-keys": true}

// benchPageAfterWrite reads page k of p, of 100 rows, over and over, each
// time after reading page k-1 and then creating an item, as a container
// written while its query is paged through: the items are the load's
// (loadInterleaved, with extra), numbered on from n. Only page k is
// timed; its records and index entries are reported.
func benchPageAfterWrite(b *testing.B, s *benchStore, p QueryParams, k, n int, extra func(i int) string) {
	ctx := context.Background()
	before := p
	before.Continuation = pageToken(b, s, p, k-1)
	parts := max(n/100, 1)
	var reads pageReads
	for i := n; b.Loop(); i++ {
		b.StopTimer()
		page, err := s.QueryItems(ctx, before)
		if err != nil {
			b.Fatal(err)
		}
		p.Continuation = page.Continuation
		page.Release()
		ref := ItemRef{DB: benchDB, Coll: benchColl, HasKey: true, PartitionKey: partition.Key{partition.String("q" + strconv.Itoa(i%parts))}}
		if _, err := s.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeUpsert, Body: interleavedItem(i, parts, extra)}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		reads.read(b, s, p, 100)
	}
	reads.report(b)
}

// pageReads counts the records and index entries of the pages a
// benchmark reads.
type pageReads struct{ records, entries int }

// read reads the page of p, which must hold rows rows.
func (pr *pageReads) read(b *testing.B, s *benchStore, p QueryParams, rows int) {
	page, err := s.QueryItems(context.Background(), p)
	if err != nil {
		b.Fatal(err)
	}
	if len(page.Items) != rows {
		b.Fatalf("%d rows", len(page.Items))
	}
	pr.add(page)
	page.Release()
}

// add counts the records and index entries page read.
func (pr *pageReads) add(page *FeedPage) {
	pr.records += page.Examined
	pr.entries += page.IndexEntries
}

// report reports the records and index entries of a read.
func (pr *pageReads) report(b *testing.B) {
	b.ReportMetric(float64(pr.records)/float64(b.N), "records/op")
	b.ReportMetric(float64(pr.entries)/float64(b.N), "entries/op")
}

// benchPage reads page k of p (of rows rows) over and over, and reports
// the records and index entries a read reads and the page's plan. The
// rows a DISTINCT's pages before k returned, the rows a whole result's
// page before kept, and the candidates the page before kept
// (keptCandidates), which a page takes from the engine, are put back
// before each read, as the page before would have.
func benchPage(b *testing.B, s *benchStore, p QueryParams, k, rows int) {
	ctx := context.Background()
	p.Continuation = pageToken(b, s, p, k)
	var seen *seenSet
	var held *heldRows
	var kept *keptCandidates
	var id uint64
	if k > 1 && p.Continuation != "" {
		cur := mustCursor(b, p.Continuation)
		seen = s.seen.take(cur)
		held, _ = s.held.take(cur.kept)
		kept, _ = s.kept.take(cur.kept)
		id = cur.kept
	}
	var reads pageReads
	for b.Loop() {
		if seen != nil {
			b.StopTimer()
			// With room to grow, as a drain's set has on average.
			keys := make(map[string]struct{}, 2*len(seen.keys))
			maps.Copy(keys, seen.keys)
			s.seen.keep(&seenSet{id: seen.id, fp: seen.fp, pos: seen.pos, skip: seen.skip, keys: keys, bytes: seen.bytes}, time.Time{})
			b.StartTimer()
		}
		if held != nil {
			s.held.keep(held.next.kept, held, held.size(), time.Time{})
		}
		if kept != nil {
			s.kept.keep(id, kept, 0, time.Time{})
		}
		reads.read(b, s, p, rows)
	}
	reads.report(b)
	if page, err := s.QueryItems(ctx, p); err == nil && page.Plan != nil {
		b.Logf("page %d: %s", k, page.Plan.Explain())
	}
}

// BenchmarkLargePartitionRange reads page 1 and page 5 of a range of four
// values in one large logical partition: 10⁴ of MAYFLY_BENCH_ITEMS items
// (10⁵ by default; the rest in partitions of 100), each with k (0..49,
// a tenth of the items at a time),
// 800 rows of the partition's in pages of 100. The path's entries of the
// range hold the container's 8,000.
//
//	go test -run '^$' -bench BenchmarkLargePartitionRange -benchtime 20x ./internal/engine/
func BenchmarkLargePartitionRange(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("MAYFLY_BENCH_ITEMS")); err == nil && v > 0 {
		n = v
	}
	pk := func(i int) string {
		if i%10 == 0 {
			return "big"
		}
		return "q" + strconv.Itoa(i/1000)
	}
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	s.pk = pk
	s.block = 1
	s.load(b, 0, n, func(i int) []byte {
		return []byte(`{"id":"x` + strconv.Itoa(i) + `","pk":"` + pk(i) + `","k":` + strconv.Itoa(i/10%50) + `,"payload":"` + benchPayload + `"}`)
	})
	s.settle(b)
	ref := ItemRef{DB: benchDB, Coll: benchColl, HasKey: true, PartitionKey: partition.Key{partition.String("big")}}
	p := QueryParams{ItemRef: ref, Query: "SELECT * FROM c WHERE c.k >= 10 AND c.k < 14", MaxItemCount: 100}
	s.orderReady(b, p)
	warmAll(b, s)
	for _, k := range []int{1, 5} {
		b.Run("page="+strconv.Itoa(k), func(b *testing.B) { benchPage(b, s, p, k, 100) })
	}
}

// BenchmarkIntersectionPage reads pages of intersections across
// partitions: MAYFLY_BENCH_ITEMS items (10⁵ by default) written
// interleaved over partitions of 100, each with a (0..12), b (0..24, a
// thirteenth of the items at a time), x (0..6) and y (0..8, a seventh at
// a time); pages of 100.
//
//   - chosen: c.a = 3 AND c.b BETWEEN 2 AND 3, 7.7% and 8% of the items,
//     both 615; pages 1 and 5. A term holding more than √(rows·n/0.15)
//     entries (8,206 here) has the page try a scan first
//     (plan.ScanFirstBounds), so an intersection the planner chooses holds
//     fewer than about 700 rows whatever the container's size.
//   - after-scan: c.x = 3 AND c.y BETWEEN 2 AND 4, 14% and 33%, both
//     4.8%: a page scans, and the pages after it step through both terms
//     once their tie entries are built (mergeAfterScan); once they are,
//     page 1 steps through both too, uncounted (spanFirst); pages 1 and
//     20.
//
// Run with:
//
//	go test -run '^$' -bench BenchmarkIntersectionPage -benchtime 20x ./internal/engine/
func BenchmarkIntersectionPage(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("MAYFLY_BENCH_ITEMS")); err == nil && v > 0 {
		n = v
	}
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	s.loadInterleaved(b, n, max(n/100, 1), func(i int) string {
		return `,"a":` + strconv.Itoa(i%13) + `,"b":` + strconv.Itoa(i/13%25) + `,"x":` + strconv.Itoa(i%7) + `,"y":` + strconv.Itoa(i/7%9)
	})
	s.settle(b)
	for _, q := range []struct {
		name, text string
		pages      []int
	}{
		{"chosen", "SELECT * FROM c WHERE c.a = 3 AND c.b BETWEEN 2 AND 3", []int{1, 5}},
		{"after-scan", "SELECT * FROM c WHERE c.x = 3 AND c.y BETWEEN 2 AND 4", []int{1, 20}},
	} {
		p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: q.text, RangeID: "0", CrossPartition: true, MaxItemCount: 100}
		s.orderReady(b, p)
		warmAll(b, s)
		for _, k := range q.pages {
			b.Run(q.name+"/page="+strconv.Itoa(k), func(b *testing.B) { benchPage(b, s, p, k, 100) })
		}
	}
}

// BenchmarkOffsetPage reads one page of an OFFSET and LIMIT, the paging
// applications write by hand: a logical partition of 1,000 items in a
// container of MAYFLY_BENCH_ITEMS (10⁵ by default; the rest in partitions
// of 100), ordered by the time written, by a number (t, 0..99, ten items
// each) or not at all, at offsets 0, 50, 500 and 980, and filtered to a
// tenth of t's values at offsets 0 and 50, limit 20; and across the
// container ordered by t at offsets 0 and 5,000, and by the time written
// among the items of one value of t (a hundredth) at offsets 0, 50 and
// 500. Page 1 at offset 0 is
// what a page costs; the others should cost about as much.
//
//	go test -run '^$' -bench BenchmarkOffsetPage -benchtime 200x ./internal/engine/
func BenchmarkOffsetPage(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("MAYFLY_BENCH_ITEMS")); err == nil && v > 0 {
		n = v
	}
	pk := func(i int) string {
		if i%(n/1000) == 0 {
			return "big"
		}
		return "q" + strconv.Itoa(i/100)
	}
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	s.pk = pk
	s.block = 1
	s.load(b, 0, n, func(i int) []byte {
		return []byte(`{"id":"x` + strconv.Itoa(i) + `","pk":"` + pk(i) + `","t":` + strconv.Itoa(i/(n/1000)%100) + `,"payload":"` + benchPayload + `"}`)
	})
	s.settle(b)
	big := ItemRef{DB: benchDB, Coll: benchColl, HasKey: true, PartitionKey: partition.Key{partition.String("big")}}
	all := ItemRef{DB: benchDB, Coll: benchColl}
	for _, q := range []struct {
		name string
		ref  ItemRef
		text string
		offs []int
	}{
		{"partition-ts", big, "SELECT * FROM c WHERE c.pk = 'big' ORDER BY c._ts DESC", []int{0, 50, 500, 980}},
		{"partition-t", big, "SELECT * FROM c ORDER BY c.t", []int{0, 50, 500, 980}},
		{"partition-scan", big, "SELECT * FROM c", []int{0, 50, 500, 980}},
		{"partition-span", big, "SELECT * FROM c WHERE c.t IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)", []int{0, 50}},
		{"cross-t", all, "SELECT * FROM c ORDER BY c.t", []int{0, 5000}},
		{"cross-filter", all, "SELECT * FROM c WHERE c.t = 7 ORDER BY c._ts DESC", []int{0, 50, 500}},
	} {
		for _, off := range q.offs {
			p := QueryParams{ItemRef: q.ref, Query: q.text + " OFFSET " + strconv.Itoa(off) + " LIMIT 20", Whole: !q.ref.HasKey, MaxItemCount: 100}
			s.orderReady(b, p)
			warmAll(b, s)
			b.Run(q.name+"/offset="+strconv.Itoa(off), func(b *testing.B) { benchPage(b, s, p, 1, 20) })
		}
	}
}
