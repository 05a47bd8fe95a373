package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// TestQueryReadsListedPartitions: a query whose filter lists partition
// keys reads those logical partitions and no other, page by page, each
// page going on from where the last ended, in a container of several
// partition key ranges read whole or range by range.
func TestQueryReadsListedPartitions(t *testing.T) {
	be := newBatchEnv(t, "null")
	ctx := context.Background()
	ranges := be.rangedContainer(t)
	const parts, per = 40, 15
	be.writePartitions(t, parts, per, func(i int) string { return fmt.Sprintf(`,"n":%d,"s":"s%d"`, i%per, i%3) })
	// want returns the ids of the items of partitions keys that keep
	// holds for (by their number).
	want := func(keep func(i int) bool, keys ...int) []string {
		var ids []string
		for _, k := range keys {
			for i := k * per; i < (k+1)*per; i++ {
				if keep(i) {
					ids = append(ids, "i"+strconv.Itoa(i))
				}
			}
		}
		slices.Sort(ids)
		return ids
	}
	sIs := func(s int) func(int) bool { return func(i int) bool { return i%3 == s } }
	drain := func(t *testing.T, p QueryParams) drained {
		t.Helper()
		return drainIDs(t, be.e, p, 100)
	}
	for _, c := range []struct {
		query string
		keep  func(i int) bool
		keys  []int
		parts int // the distinct keys listed
		top   int // the rows a TOP takes of those, 0 for all
	}{
		{"SELECT TOP 7 * FROM c WHERE c.pk IN ('p3', 'p17', 'p30', 'none') AND c.s = 's1'", sIs(1), []int{3, 17, 30}, 4, 7},
		{"SELECT TOP 40 c.id FROM c WHERE c.pk IN ('p3', 'p17') AND c.n >= 0", func(int) bool { return true }, []int{3, 17}, 2, 0},
		{"SELECT TOP 16 c.id FROM c WHERE c.pk IN ('p3', 'p17') AND c.n >= 0", func(int) bool { return true }, []int{3, 17}, 2, 16},
		{"SELECT * FROM c WHERE c.pk IN ('p3', 'p17', 'p30', 'none') AND c.s = 's1'", sIs(1), []int{3, 17, 30}, 4, 0},
		{"SELECT * FROM c WHERE (c.pk = 'p3' OR c.pk = 'p17') AND c.s = 's2'", sIs(2), []int{3, 17}, 2, 0},
		{"SELECT * FROM c WHERE c.pk IN ('p5', 'p5', 'p6')", func(int) bool { return true }, []int{5, 6}, 2, 0},
		{"SELECT * FROM c WHERE ARRAY_CONTAINS(['p9', 'p12', 'p5'], c.pk) AND c.n > 9", func(i int) bool { return i%per > 9 }, []int{5, 9, 12}, 3, 0},
		{"SELECT * FROM c WHERE c.s = 's0' AND c.pk IN ('p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7', 'p8')", sIs(0), []int{1, 2, 3, 4, 5, 6, 7, 8}, 8, 0},
	} {
		t.Run(c.query, func(t *testing.T) {
			wanted := want(c.keep, c.keys...)
			for _, size := range []int{2, 7, 100} {
				// A TOP is served across ranges whole, as for the Data
				// Explorer; the gateway leaves it to the SDK otherwise.
				d := drain(t, QueryParams{ItemRef: ItemRef{DB: "db", Coll: "s"}, Query: c.query, CrossPartition: true, Whole: strings.HasPrefix(c.query, "SELECT TOP"), MaxItemCount: size})
				slices.Sort(d.ids)
				if c.top > 0 {
					// As many rows as the TOP, each once, of those.
					n := len(d.ids)
					if d.ids = slices.Compact(d.ids); n != c.top || len(d.ids) != n || slices.ContainsFunc(d.ids, func(id string) bool { return !slices.Contains(wanted, id) }) {
						t.Fatalf("%d a page: rows %v, want %d of %v", size, d.ids, c.top, wanted)
					}
				} else if !slices.Equal(d.ids, wanted) {
					t.Fatalf("%d a page: rows %v, want %v", size, d.ids, wanted)
				}
				// Each listed partition read once, and the record each
				// page after the first goes on from again: none of the
				// other partitions' records or entries.
				if limit := len(c.keys)*per + d.pages - 1; d.records > limit || d.entries > limit {
					t.Errorf("%d a page: %d records and %d entries read over %d pages, want at most %d of each", size, d.records, d.entries, d.pages, limit)
				}
				if d.plan == nil || d.plan.Scope.Parts != c.parts {
					t.Errorf("%d a page: the plan %s, want one of %d partitions", size, summary(d.plan), c.parts)
				}
			}
			// Range by range, as an SDK sends it: each row once, and a
			// range that holds none of the keys read for nothing.
			sc := be.containerOf(t, "s")
			var got []string
			for _, rg := range ranges {
				d := drain(t, QueryParams{ItemRef: ItemRef{DB: "db", Coll: "s"}, Query: c.query, RangeID: rg.ID, MaxItemCount: 3})
				got = append(got, d.ids...)
				holds := slices.ContainsFunc(c.keys, func(k int) bool { return holdsKey(sc, rg, "p"+strconv.Itoa(k)) })
				if !holds && d.records+d.entries > 0 {
					t.Errorf("range %s, none of the keys: %d records and %d entries read", rg.ID, d.records, d.entries)
				}
			}
			slices.Sort(got)
			if c.top == 0 && !slices.Equal(got, wanted) {
				t.Fatalf("range by range: rows %v, want %v", got, wanted)
			}
		})
	}
	// A count: the sum of the listed partitions' counts, whole or range by
	// range as the SDKs send it, boxed, reading only those partitions'
	// counters and entries.
	for _, c := range []struct {
		where string
		want  int64
	}{
		{"c.pk IN ('p3', 'p17', 'p30', 'none') AND c.s = 's1'", 15},
		{"(c.pk = 'p3' OR c.pk = 'p4') AND c.n > 9", 10},
		{"ARRAY_CONTAINS(['p3', 'p4', 'p5'], c.pk) AND IS_DEFINED(c.s)", 45},
	} {
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ItemRef{DB: "db", Coll: "s"}, Query: "SELECT VALUE COUNT(1) FROM c WHERE " + c.where, CrossPartition: true, Whole: true})
		if err != nil || len(page.Items) != 1 || string(page.Items[0]) != strconv.FormatInt(c.want, 10) {
			t.Fatalf("count of %s: %v, %q, want %d", c.where, err, page.Items, c.want)
		}
		if page.Plan == nil {
			t.Fatalf("count of %s: no plan", c.where)
		}
		if page.Plan.Scope.Parts < 2 || page.Examined+page.IndexEntries > 3*per+3 {
			t.Errorf("count of %s: %d records and %d entries read, plan %v", c.where, page.Examined, page.IndexEntries, page.Plan.Summary())
		}
		var sum int64
		for _, rg := range ranges {
			page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ItemRef{DB: "db", Coll: "s"}, Query: `SELECT VALUE [{"item": COUNT(1)}] FROM c WHERE ` + c.where, RangeID: rg.ID, CrossPartition: true})
			if err != nil || len(page.Items) != 1 {
				t.Fatalf("count of %s in range %s: %v, %q", c.where, rg.ID, err, page.Items)
			}
			n, ok := partialCount(page.Items, true)
			if !ok {
				t.Fatalf("count of %s in range %s: %s", c.where, rg.ID, page.Items[0])
			}
			sum += n
		}
		if sum != c.want {
			t.Errorf("count of %s range by range: %d, want %d", c.where, sum, c.want)
		}
	}

	// A token is refused by another query, and taken back by its own.
	p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "s"}, Query: "SELECT * FROM c WHERE c.pk IN ('p3', 'p4')", CrossPartition: true, MaxItemCount: 20}
	page, err := be.e.QueryItems(ctx, p)
	if err != nil || len(page.Items) != 20 || page.Continuation == "" {
		t.Fatalf("first page: %v, %d rows, token %q", err, len(page.Items), page.Continuation)
	}
	other := p
	other.Query, other.Continuation = "SELECT * FROM c WHERE c.pk IN ('p3', 'p5')", page.Continuation
	var qe *Error
	if _, err := be.e.QueryItems(ctx, other); !errors.As(err, &qe) || qe.Code != BadRequest {
		t.Fatalf("another query's token: %v, want a 400", err)
	}
	p.Continuation = page.Continuation
	if page, err = be.e.QueryItems(ctx, p); err != nil || len(page.Items) != 10 || page.Continuation != "" {
		t.Fatalf("second page: %v, %+v", err, page)
	}
}

// An OFFSET and LIMIT without ORDER BY over listed partitions is read in
// those partitions, as a TOP of their sum whose first rows the pages drop:
// its rows are those of the same query without them, in the same order,
// the window's; the work stays within the listed partitions.
func TestOffsetOverListedPartitions(t *testing.T) {
	be := newBatchEnv(t, "null")
	ranges := be.rangedContainer(t)
	const parts, per = 40, 15
	be.writePartitions(t, parts, per, func(i int) string { return fmt.Sprintf(`,"n":%d,"s":"s%d"`, i%per, i%3) })
	for _, c := range []struct {
		query string
		keys  int // the keys listed
	}{
		{"SELECT c.id FROM c WHERE c.pk IN ('p3', 'p17', 'p30', 'none') AND c.s = 's1'", 4},
		{"SELECT * FROM c WHERE (c.pk = 'p3' OR c.pk = 'p17' OR c.pk = 'p5') AND c.n > 4", 3},
		{"SELECT c.id FROM c WHERE ARRAY_CONTAINS(['p9', 'p12'], c.pk)", 2},
	} {
		whole := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "s"}, Query: c.query, CrossPartition: true, MaxItemCount: 100}
		all := drainIDs(t, be.e, whole, 10).ids
		for _, w := range [][2]int{{0, 5}, {3, 4}, {5, 10}, {14, 100}, {len(all) - 1, 5}, {len(all) + 3, 5}, {2, 0}} {
			want := all[min(w[0], len(all)):min(w[0]+w[1], len(all))]
			q := fmt.Sprintf("%s OFFSET %d LIMIT %d", c.query, w[0], w[1])
			for _, size := range []int{1, 3, 100} {
				p := whole
				p.Query, p.Whole, p.MaxItemCount = q, true, size
				d := drainIDs(t, be.e, p, 100)
				if !slices.Equal(d.ids, want) && len(d.ids)+len(want) > 0 {
					t.Fatalf("%s, %d a page: rows %v, want %v", q, size, d.ids, want)
				}
				if d.plan == nil || d.plan.Scope.Parts != c.keys {
					t.Errorf("%s, %d a page: the plan %s, want one of %d partitions", q, size, summary(d.plan), c.keys)
				}
				if limit := c.keys*per + d.pages; d.records > limit || d.entries > limit {
					t.Errorf("%s, %d a page: %d records and %d entries read over %d pages, want at most %d of each", q, size, d.records, d.entries, d.pages, limit)
				}
			}
			// Range by range, the window of each range's rows.
			for _, rg := range ranges {
				p := whole
				p.RangeID, p.MaxItemCount = rg.ID, 100
				all := drainIDs(t, be.e, p, 10).ids
				want := all[min(w[0], len(all)):min(w[0]+w[1], len(all))]
				p.Query, p.MaxItemCount = q, 2
				if got := drainIDs(t, be.e, p, 100).ids; !slices.Equal(got, want) && len(got)+len(want) > 0 {
					t.Fatalf("%s in range %s: rows %v, want %v", q, rg.ID, got, want)
				}
			}
		}
	}

	// Rows to skip past what one page's bytes hold: the partition's page
	// of skipped rows goes on in the partition, and the first page has
	// rows.
	be = newBatchEnv(t, "null")
	be.rangedContainer(t)
	big := strings.Repeat("x", 1500<<10)
	be.writePartitions(t, 2, 3, func(int) string { return `,"big":"` + big + `"` })
	whole := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "s"}, Query: "SELECT * FROM c WHERE c.pk IN ('p0', 'p1')", CrossPartition: true}
	all := drainIDs(t, be.e, whole, 10).ids
	whole.Query, whole.Whole = whole.Query+" OFFSET 4 LIMIT 2", true
	page, err := be.e.QueryItems(context.Background(), whole)
	if err != nil || len(page.Items) == 0 {
		t.Fatalf("%s: %v, first page %d rows", whole.Query, err, len(page.Items))
	}
	if d := drainIDs(t, be.e, whole, 10); !slices.Equal(d.ids, all[4:]) {
		t.Fatalf("%s: rows %v, want %v", whole.Query, d.ids, all[4:])
	}
}

// A GROUP BY over listed partitions, as an SDK rewrites it for a range, is
// read partition by partition: each partition's pages are its partial
// groups, which merge, as the SDKs merge pages, to the whole evaluation's
// groups; no page but a range's only one is empty, where the partitions
// after a full page have no rows too; and the work stays within the listed
// partitions.
func TestGroupsOverListedPartitions(t *testing.T) {
	be := newBatchEnv(t, "null")
	ranges := be.rangedContainer(t)
	const parts, per = 40, 15
	be.writePartitions(t, parts, per, func(i int) string { return fmt.Sprintf(`,"n":%d,"s":"s%d"`, i%per, i%3) })
	sc := be.containerOf(t, "s")
	for _, c := range []struct {
		key, where string
		keys       []string
	}{
		{"c.n % 3", "c.pk IN ('p3', 'p17', 'p30', 'none')", []string{"p3", "p17", "p30", "none"}},
		{"c.n", "c.pk IN ('p3', 'p4', 'p5') AND c.s = 's1'", []string{"p3", "p4", "p5"}},
		{"c.n % 4", "(c.pk = 'p3' OR c.pk = 'p9') AND c.n > 4", []string{"p3", "p9"}},
		// The keys after the one with rows have none.
		{"c.n", "c.pk IN ('p3', 'none1', 'none2', 'none3')", []string{"p3", "none1", "none2", "none3"}},
	} {
		// The groups as a client that does not merge gets them: whole.
		whole := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "s"}, Query: "SELECT " + c.key + " AS k, COUNT(1) AS n, MAX(c.n) AS m FROM c WHERE " + c.where + " GROUP BY " + c.key, CrossPartition: true, Whole: true}
		page, err := be.e.QueryItems(context.Background(), whole)
		if err != nil || page.Continuation != "" {
			t.Fatalf("%s: %v, token %q", whole.Query, err, page.Continuation)
		}
		var want []string
		for _, it := range page.Items {
			want = append(want, string(it))
		}
		slices.Sort(want)
		sdk := fmt.Sprintf(`SELECT [{"item": %s}] AS groupByItems, {"k": %s, "n": {"item": COUNT(1)}, "m": {"item": MAX(c.n)}} AS payload FROM c WHERE %s GROUP BY %s`, c.key, c.key, c.where, c.key)
		for _, size := range []int{1, 2, 5, 100} {
			type group struct{ k, n, m float64 }
			merged := map[float64]*group{}
			for _, rg := range ranges {
				p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "s"}, Query: sdk, RangeID: rg.ID, CrossPartition: true, MaxItemCount: size}
				var records, entries, pages int
				for {
					page, err := be.e.QueryItems(context.Background(), p)
					if err != nil {
						t.Fatalf("%s, range %s, %d a page: %v", sdk, rg.ID, size, err)
					}
					pages++
					records, entries = records+page.Examined, entries+page.IndexEntries
					if len(page.Items) == 0 && (page.Continuation != "" || pages > 1) {
						t.Fatalf("%s, range %s, %d a page: page %d is empty", sdk, rg.ID, size, pages)
					}
					if len(page.Items) > size {
						t.Fatalf("%s, range %s, %d a page: page %d has %d rows", sdk, rg.ID, size, pages, len(page.Items))
					}
					// The range's keys' partitions, one or the list.
					held := 0
					for _, k := range c.keys {
						if holdsKey(sc, rg, k) {
							held++
						}
					}
					if pages == 1 && held > 0 && (page.Plan == nil || !strings.HasPrefix(summary(page.Plan), "scope=partition") || held > 1 && page.Plan.Scope.Parts != held) {
						t.Errorf("%s, range %s: the plan %s, want one of %d partitions", sdk, rg.ID, summary(page.Plan), held)
					}
					for _, it := range page.Items {
						var row struct {
							Payload struct {
								K    float64
								N, M struct{ Item float64 }
							}
						}
						if err := json.Unmarshal(it, &row); err != nil {
							t.Fatal(err)
						}
						g := merged[row.Payload.K]
						if g == nil {
							g = &group{k: row.Payload.K}
							merged[g.k] = g
						}
						g.n += row.Payload.N.Item
						g.m = max(g.m, row.Payload.M.Item)
					}
					if page.Continuation == "" {
						break
					}
					p.Continuation = page.Continuation
				}
				// Each listed partition's items, read again as far as a
				// group by the page that ends before it, and no other's.
				if limit := 2*len(c.keys)*per + pages; records > limit || entries > limit {
					t.Errorf("%s, range %s, %d a page: %d records and %d entries read over %d pages, want at most %d of each", sdk, rg.ID, size, records, entries, pages, limit)
				}
			}
			var got []string
			for _, g := range merged {
				got = append(got, fmt.Sprintf(`{"k":%g,"n":%g,"m":%g}`, g.k, g.n, g.m))
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%s, %d a page: groups %v, want %v", sdk, size, got, want)
			}
		}
	}
}

// Over PostgreSQL (MAYFLY_TEST_STORE=postgres), a query that lists three
// partition keys beside a term on another path reads those partitions, a
// few round trips each, rather than stepping through the other term's
// entries across the container (33 round trips, and 1,400 entries for 30
// rows, read that way).
func TestListedPartitionsInFewRoundTrips(t *testing.T) {
	ctx := context.Background()
	s, be := postgresEnv(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var docs []string
	for i := range 4000 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%04d","pk":"p%d","n":%d,"s":"s%d"}`, i, i/100, i%100, i%10))
	}
	be.seed(t, docs...)
	before := teststore.RoundTrips(s)
	page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(""), Query: "SELECT * FROM c WHERE c.pk IN ('p0', 'p3', 'p6') AND c.s = 's3'", MaxItemCount: 100, CrossPartition: true})
	if err != nil {
		t.Fatal(err)
	}
	trips := teststore.RoundTrips(s) - before
	t.Logf("%d round trips", trips)
	if len(page.Items) != 30 || page.Continuation != "" || trips > 16 || page.IndexEntries > 0 {
		t.Errorf("%d rows (token %q) in %d round trips, %d entries read", len(page.Items), page.Continuation, trips, page.IndexEntries)
	}
}

// TestOrderByOverListedPartitions: an ORDER BY whose filter lists
// partition keys walks the listed partitions' entries of its path, merged
// in its order, and their documents without the path in _rid order: the
// rows come as the walk of the whole container gives them, ties and all,
// whole or range by range, page by page, reading the listed partitions'
// entries and records and no others'.
func TestOrderByOverListedPartitions(t *testing.T) {
	be := newBatchEnv(t, "null")
	ranges := be.rangedContainer(t)
	const parts, per = 40, 15
	be.writePartitions(t, parts, per, func(i int) string {
		n := ""
		if i%5 != 0 {
			// Values repeat within and across partitions; every fifth
			// item has none.
			n = fmt.Sprintf(`,"n":%d`, (i*7)%11)
		}
		return fmt.Sprintf(`,"s":"s%d"%s`, i%3, n)
	})
	// Each query's rows are compared with the container's walk; those
	// marked merged are planned as the walk of the listed partitions,
	// whose cost is bounded below. Beside another term the planner weighs
	// that term's entries, which are the container's; and a value many
	// items share (every _ts here) is read through its tie entries,
	// which are the container's too.
	queries := []struct {
		query  string
		merged bool
	}{
		{"SELECT c.id FROM c WHERE c.pk IN ('p3', 'p17', 'p30', 'none') ORDER BY c.n", true},
		{"SELECT c.id FROM c WHERE c.pk IN ('p3', 'p17', 'p30') ORDER BY c.n DESC", true},
		{"SELECT TOP 7 c.id FROM c WHERE c.pk IN ('p3', 'p17', 'p30') ORDER BY c.n", true},
		{"SELECT TOP 7 c.id FROM c WHERE c.pk IN ('p3', 'p17', 'p30') ORDER BY c.n DESC", true},
		{"SELECT c.id FROM c WHERE (c.pk = 'p5' OR c.pk = 'p9') AND c.s = 's1' ORDER BY c.n", false},
		{"SELECT c.id FROM c WHERE ARRAY_CONTAINS(['p9', 'p12', 'p5'], c.pk) AND c.n > 3 ORDER BY c.n DESC", false},
		{"SELECT c.id FROM c WHERE c.pk IN ('p3', 'p17') ORDER BY c._ts", true},
	}
	var asks []QueryParams
	for _, q := range queries {
		asks = append(asks, QueryParams{ItemRef: ItemRef{DB: "db", Coll: "s"}, Query: q.query, CrossPartition: true, Whole: true})
	}
	be.orderReady(t, asks...)
	for _, path := range [][]string{{"n"}, {"_ts"}} {
		be.e.wantAbsent(be.containerOf(t, "s"), path, entryKinds{ties: true, parts: true})
		drainIndexer(t, be.e.NewIndexer(nil))
	}
	if c := be.containerOf(t, "s"); !c.partsReady([]string{"n"}) || !c.absentReady([]string{"n"}) || !c.partsReady([]string{"_ts"}) {
		t.Fatal("the partition and absence entries of /n and /_ts are not built")
	}
	drain := func(t *testing.T, p QueryParams, wide bool) drained {
		t.Helper()
		be.e.keyListsWide = wide
		defer func() { be.e.keyListsWide = false }()
		return drainIDs(t, be.e, p, 200)
	}
	for _, c := range queries {
		q := c.query
		t.Run(q, func(t *testing.T) {
			top := strings.HasPrefix(q, "SELECT TOP")
			listed := 3 * per // the items of the listed partitions, at most
			for _, size := range []int{2, 7, 100} {
				p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "s"}, Query: q, CrossPartition: true, Whole: true, MaxItemCount: size}
				want, got := drain(t, p, true), drain(t, p, false)
				if len(want.ids) == 0 || !slices.Equal(got.ids, want.ids) {
					t.Fatalf("%d a page: rows %v, want %v", size, got.ids, want.ids)
				}
				// Each page reads its rows' entries, a partition's count
				// and a seek each, and the group it ends in again.
				// Over PostgreSQL a partition's seek is a round trip: the
				// walk reads the container's entries there (listScope).
				merged := c.merged && teststore.Backend() != "postgres"
				if merged && (got.plan == nil || !got.plan.Chosen.Scoped) {
					t.Errorf("%d a page: the first page's plan walks no partitions' entries: %v", size, got.plan)
				}
				if limit := 2*listed + got.pages*8; merged && (got.entries > limit || got.records > listed+got.pages) {
					t.Errorf("%d a page: %d entries and %d records over %d pages, want at most %d and %d (the container's walk: %d and %d)",
						size, got.entries, got.records, got.pages, limit, listed+got.pages, want.entries, want.records)
				}
			}
			if top {
				return // the gateway leaves a TOP across ranges to the SDK
			}
			for _, rg := range ranges {
				p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "s"}, Query: q, RangeID: rg.ID, MaxItemCount: 3}
				if want, got := drain(t, p, true), drain(t, p, false); !slices.Equal(got.ids, want.ids) {
					t.Fatalf("range %s: rows %v, want %v", rg.ID, got.ids, want.ids)
				}
			}
		})
	}
}

// drained is a query drained page by page (drainIDs).
// holdsKey reports whether range rg of container c holds the partition
// key with the one string component key.
func holdsKey(c *containerRecord, rg KeyRange, key string) bool {
	epk := c.epk(partition.Key{partition.String(key)})
	return rg.Min <= epk && (rg.Max == "" || rg.Max == "FF" || epk < rg.Max)
}

type drained struct {
	ids                     []string   // the rows' ids, in the order they came
	pages, records, entries int        // the pages, and the records and entries they read
	plan                    *plan.Plan // the first page's
}

// drainIDs drains query p page by page, failing after maxPages.
func drainIDs(t *testing.T, e *Engine, p QueryParams, maxPages int) drained {
	t.Helper()
	var d drained
	for {
		page, err := e.QueryItems(context.Background(), p)
		if err != nil {
			t.Fatalf("%s, page %d: %v", p.Query, d.pages+1, err)
		}
		if d.pages == 0 {
			d.plan = page.Plan
		}
		d.pages++
		d.records += page.Examined
		d.entries += page.IndexEntries
		for _, it := range page.Items {
			v, err := document.Parse(it)
			if err != nil {
				t.Fatal(err)
			}
			d.ids = append(d.ids, v.Get("id").Str())
		}
		if page.Continuation == "" {
			return d
		}
		if d.pages > maxPages {
			t.Fatalf("%s: no end after %d pages", p.Query, d.pages)
		}
		p.Continuation = page.Continuation
	}
}

// TestAggregatesOverListedPartitions: a MIN, MAX, SUM or AVG whose filter
// lists partition keys (or the SDKs' rewrite of one, with its count) is
// answered from each listed partition's, as the container-wide evaluation
// answers it, whole and range by range: a partition without values, one
// with a value the aggregate refuses (an object, a string to sum), one
// with a fraction, and a list of which no key is in the range among them.
// It reads the listed partitions only.
func TestAggregatesOverListedPartitions(t *testing.T) {
	be := newBatchEnv(t, "null")
	ctx := context.Background()
	ranges := be.rangedContainer(t)
	const parts, per = 40, 15
	be.writePartitions(t, parts, per, func(i int) string {
		var n string
		switch {
		case i/per == 25, i%5 == 0: // p25 has no values
		case i == 20*per+3:
			n = `,"n":2.5`
		case i == 21*per+3:
			n = `,"n":{"x":1}`
		case i == 22*per+3:
			n = `,"n":"z"`
		default:
			n = fmt.Sprintf(`,"n":%d`, (i*7)%11-3)
		}
		return fmt.Sprintf(`,"s":"s%d"%s`, i%3, n)
	})
	answer := func(t *testing.T, p QueryParams, wide bool) *FeedPage {
		t.Helper()
		be.e.keyListsWide = wide
		defer func() { be.e.keyListsWide = false }()
		page, err := be.e.QueryItems(ctx, p)
		if err != nil || page.Continuation != "" {
			t.Fatalf("%s (wide %v): %v, token %q", p.Query, wide, err, page.Continuation)
		}
		return page
	}
	rows := func(page *FeedPage) string {
		var b strings.Builder
		for _, it := range page.Items {
			b.Write(it)
			b.WriteByte(';')
		}
		return b.String()
	}
	for _, c := range []struct {
		value, where string
		parts        int    // the listed keys
		want         string // the plain query's rows, each ending in ';'; "?": not checked
	}{
		{"MAX(c.n)", "c.pk IN ('p3', 'p17', 'p30', 'none')", 4, "7;"},
		{"MIN(c.n)", "c.pk IN ('p3', 'p17', 'p30') AND c.s = 's1'", 3, "-3;"},
		{"SUM(c.n)", "(c.pk = 'p3' OR c.pk = 'p17') AND c.s = 's2'", 2, "?"},
		{"AVG(c.n)", "ARRAY_CONTAINS(['p3', 'p20'], c.pk)", 2, "?"},
		{"SUM(c.n)", "c.pk IN ('p3', 'p20')", 2, "?"},
		{"MAX(c.n)", "c.pk IN ('p3', 'p22')", 2, `"z";`},
		{"SUM(c.n)", "c.pk IN ('p3', 'p22')", 2, ""},
		{"MIN(c.n)", "c.pk IN ('p3', 'p21')", 2, ""},
		{"MIN(c.n)", "c.pk IN ('p3', 'p25')", 2, "?"},
		{"MAX(c.n)", "c.pk IN ('p25', 'p26') AND c.s = 's9'", 2, ""},
		{"SUM(c.n)", "c.pk IN ('p25', 'p26') AND c.s = 's9'", 2, "0;"},
		{"AVG(c.n)", "c.pk IN ('p25', 'p26') AND c.s = 's9'", 2, ""},
	} {
		for _, sel := range []string{
			c.value,
			`[{"item": ` + c.value + `}]`,
			`[{"item": {"v": ` + strings.Replace(c.value, "AVG", "SUM", 1) + `, "count": COUNT(c.n)}}]`,
		} {
			q := "SELECT VALUE " + sel + " FROM c WHERE " + c.where
			t.Run(q, func(t *testing.T) {
				p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "s"}, Query: q, CrossPartition: true, Whole: true}
				want, got := answer(t, p, true), answer(t, p, false)
				if rows(got) != rows(want) {
					t.Fatalf("rows %s, want %s (the container's)", rows(got), rows(want))
				}
				if sel == c.value && c.want != "?" && rows(got) != c.want {
					t.Fatalf("rows %q, want %q", rows(got), c.want)
				}
				if got.Plan == nil || got.Plan.Scope.Parts != c.parts {
					t.Errorf("the plan %s, want one of %d partitions", summary(got.Plan), c.parts)
				}
				// The listed partitions' entries and records, each
				// partition's count, and no other partition's.
				if limit := c.parts * (per + 2); got.Examined+got.IndexEntries > limit {
					t.Errorf("%d records and %d entries read, want at most %d in all (the container's: %d and %d)",
						got.Examined, got.IndexEntries, limit, want.Examined, want.IndexEntries)
				}
				for _, rg := range ranges {
					p := p
					p.RangeID, p.Whole = rg.ID, false
					if got, want := answer(t, p, false), answer(t, p, true); rows(got) != rows(want) {
						t.Fatalf("range %s: rows %s, want %s", rg.ID, rows(got), rows(want))
					}
				}
			})
		}
	}
}

// summary is a plan's summary, or "none".
func summary(p *plan.Plan) string {
	if p == nil {
		return "none"
	}
	return p.Summary()
}

// TestKeyListsOfAHierarchicalKey: a filter that fixes every path of a
// hierarchical key, by an equality or a list, and lists at least one
// (c.t = 't1' AND c.u IN (…), or lists on both paths, their keys
// combined) reads the listed logical partitions, whole or range by range,
// page by page: the rows a query whose rows stream makes, its count and
// its aggregates one partition after another, an ORDER BY's through the
// listed partitions' entries merged in _rid order (a prefix the equality
// pins is read as its range, ridOrderedPrefix). Each gives
// the rows the container's plan gives and reads the listed partitions'
// items, where that plan read the prefix's, or the container's entries.
func TestKeyListsOfAHierarchicalKey(t *testing.T) {
	be := newBatchEnv(t, "null")
	ctx := context.Background()
	if _, err := be.e.CreateContainer(ctx, "db", batchJSON(t, `{"id":"h","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2}}`), &Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	ranges, _, err := be.e.PartitionKeyRanges(ctx, "db", "h")
	if err != nil || len(ranges) < 2 {
		t.Fatalf("%d ranges (%v), want several", len(ranges), err)
	}
	// 40 users of 15 items, user k under tenant k%4; every fifth item
	// without n.
	const users, per = 40, 15
	for i := range users * per {
		u := i / per
		n := ""
		if i%5 != 0 {
			n = fmt.Sprintf(`,"n":%d`, (i*7)%11)
		}
		body := fmt.Sprintf(`{"id":"i%d","t":"t%d","u":"u%d","s":"s%d"%s}`, i, u%4, u, i%3, n)
		key := partition.Key{partition.String(fmt.Sprintf("t%d", u%4)), partition.String(fmt.Sprintf("u%d", u))}
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ItemRef{DB: "db", Coll: "h", HasKey: true, PartitionKey: key}, Mode: ModeCreate, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	queries := []struct {
		query   string
		parts   int  // the partitions the plan reads one by one; 0: the ORDER BY's merge
		ordered bool // the rows' order is the query's
	}{
		{"SELECT c.id FROM c WHERE c.t = 't1' AND c.u IN ('u1', 'u5', 'u9', 'none')", 4, false},
		{"SELECT TOP 7 c.id FROM c WHERE c.t = 't1' AND (c.u = 'u5' OR c.u = 'u9') AND c.s = 's1'", 2, false},
		{"SELECT c.id FROM c WHERE c.t IN ('t1', 't2') AND ARRAY_CONTAINS(['u1', 'u2', 'u5'], c.u)", 6, false},
		{"SELECT c.id FROM c WHERE c.t = 't1' AND c.u IN ('u1', 'u5', 'u9') ORDER BY c.n", 0, true},
		{"SELECT c.id FROM c WHERE c.t = 't1' AND c.u IN ('u1', 'u5', 'u9') ORDER BY c.n DESC", 0, true},
		{"SELECT TOP 5 c.id FROM c WHERE c.t = 't1' AND c.u IN ('u1', 'u5', 'u9') ORDER BY c.n DESC", 0, true},
		{"SELECT c.id FROM c WHERE c.t IN ('t1', 't2') AND c.u IN ('u1', 'u2', 'u5') ORDER BY c.n", 0, true},
	}
	var asks []QueryParams
	for _, q := range queries {
		asks = append(asks, QueryParams{ItemRef: ItemRef{DB: "db", Coll: "h"}, Query: q.query, CrossPartition: true, Whole: true})
	}
	be.orderReady(t, asks...)
	be.e.wantAbsent(be.containerOf(t, "h"), []string{"n"}, entryKinds{ties: true, parts: true})
	drainIndexer(t, be.e.NewIndexer(nil))
	drain := func(t *testing.T, p QueryParams, wide bool) drained {
		t.Helper()
		be.e.keyListsWide = wide
		defer func() { be.e.keyListsWide = false }()
		return drainIDs(t, be.e, p, 300)
	}
	const listed = 3 * per // the items of the listed partitions that hold any
	for _, c := range queries {
		t.Run(c.query, func(t *testing.T) {
			top := strings.HasPrefix(c.query, "SELECT TOP")
			for _, size := range []int{2, 7, 100} {
				p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "h"}, Query: c.query, CrossPartition: true, Whole: true, MaxItemCount: size}
				want, got := drain(t, p, true), drain(t, p, false)
				if !c.ordered && !top {
					slices.Sort(want.ids)
					slices.Sort(got.ids)
				}
				if len(want.ids) == 0 || (!top || c.ordered) && !slices.Equal(got.ids, want.ids) || top && len(got.ids) != len(want.ids) {
					t.Fatalf("%d a page: rows %v, want %v", size, got.ids, want.ids)
				}
				// Over PostgreSQL a partition's seek is a round trip: an
				// ORDER BY walks the path's own entries there (listScope),
				// and its rows alone are compared.
				if c.parts == 0 && teststore.Backend() == "postgres" {
					continue
				}
				switch {
				case c.parts > 0 && (got.plan == nil || got.plan.Scope.Parts != c.parts):
					t.Errorf("%d a page: the plan %s, want one of %d partitions", size, summary(got.plan), c.parts)
				case c.parts == 0 && (got.plan == nil || !got.plan.Chosen.Scoped):
					t.Errorf("%d a page: the plan %s walks no partitions' entries", size, summary(got.plan))
				}
				// An ORDER BY reads the range with its partitions
				// listed, where the terms on the key's paths are counted
				// as far as a page's rows (Ordered.Within); the records
				// are the listed partitions' alone.
				entries := 2*listed + 8*got.pages
				if c.parts == 0 {
					entries += 2 * size * got.pages
				}
				if limit := listed + 2*got.pages; got.records > limit || got.entries > entries {
					t.Errorf("%d a page: %d records and %d entries over %d pages, want at most %d and %d (the container's plan: %d and %d)",
						size, got.records, got.entries, got.pages, limit, entries, want.records, want.entries)
				}
			}
			if top {
				return // the gateway leaves a TOP across ranges to the SDK
			}
			for _, rg := range ranges {
				p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "h"}, Query: c.query, RangeID: rg.ID, MaxItemCount: 3}
				want, got := drain(t, p, true), drain(t, p, false)
				if !c.ordered {
					slices.Sort(want.ids)
					slices.Sort(got.ids)
				}
				if !slices.Equal(got.ids, want.ids) {
					t.Fatalf("range %s: rows %v, want %v", rg.ID, got.ids, want.ids)
				}
			}
		})
	}
	// A count and an aggregate, from the partitions'.
	for _, q := range []string{
		"SELECT VALUE COUNT(1) FROM c WHERE c.t = 't1' AND c.u IN ('u1', 'u5') AND c.s = 's1'",
		"SELECT VALUE MAX(c.n) FROM c WHERE c.t = 't1' AND c.u IN ('u1', 'u5')",
		`SELECT VALUE [{"item": {"sum": SUM(c.n), "count": COUNT(c.n)}}] FROM c WHERE c.t IN ('t1', 't2') AND c.u IN ('u1', 'u2')`,
	} {
		p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "h"}, Query: q, CrossPartition: true, Whole: true}
		be.e.keyListsWide = true
		want, err := be.e.QueryItems(ctx, p)
		be.e.keyListsWide = false
		if err != nil {
			t.Fatal(err)
		}
		got, err := be.e.QueryItems(ctx, p)
		if err != nil || len(got.Items) != 1 || string(got.Items[0]) != string(want.Items[0]) {
			t.Fatalf("%s: %v, %q, want %q", q, err, got.Items, want.Items)
		}
		if got.Plan == nil || got.Plan.Scope.Parts < 2 || got.Examined+got.IndexEntries > 2*per+4 {
			t.Errorf("%s: %d records and %d entries read, plan %s (the container's plan: %d and %d)", q, got.Examined, got.IndexEntries, summary(got.Plan), want.Examined, want.IndexEntries)
		}
	}
}

// writePartitions writes parts·per items into the container "s" of
// rangedContainer, per to a logical partition: item i is {"id": "i<i>",
// "pk": "p<i/per>"} with the properties props(i) gives (",…" each).
func (be *batchEnv) writePartitions(t *testing.T, parts, per int, props func(i int) string) {
	t.Helper()
	for i := range parts * per {
		pk := "p" + strconv.Itoa(i/per)
		body := fmt.Sprintf(`{"id":"i%d","pk":%q%s}`, i, pk, props(i))
		if _, err := be.e.WriteItem(context.Background(), WriteItemParams{ItemRef: ItemRef{DB: "db", Coll: "s", HasKey: true, PartitionKey: partition.Key{partition.String(pk)}},
			Mode: ModeCreate, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
}
