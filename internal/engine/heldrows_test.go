package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/query/plan"
)

// The pages of a GROUP BY its keys' order cannot feed (here a key that is
// an expression) come from the rows the first page made, without reading
// a document, while nothing they depend on changes: a write to the
// container, an item expiring, a new container setting, or rows gone from
// the engine make the next page evaluate the query again. Whichever way a
// page is served, the drained rows are those of one evaluation of the data
// as it then is.
func TestHeldRowsServeLaterPages(t *testing.T) {
	ctx := context.Background()
	const docs, groups = 300, 60
	be := newBatchEnv(t, "-1")
	var seed []string
	for i := range docs {
		ttl := ""
		if i%groups == 7 {
			ttl = `,"ttl":100` // the whole of group s7
		}
		seed = append(seed, fmt.Sprintf(`{"id":"d%03d","pk":"p","s":"S%d"%s}`, i, i%groups, ttl))
	}
	be.seed(t, seed...)
	ref := batchRef(`["p"]`)
	const query = `SELECT LOWER(c.s) AS g, COUNT(1) AS n FROM c GROUP BY LOWER(c.s)`

	// drain pages the query in pages of 5, calling between (if given)
	// after the page numbered by its argument, and returns the rows and
	// each page's records read.
	drain := func(q string, between func(page int)) (rows []string, examined []int) {
		t.Helper()
		p := QueryParams{ItemRef: ref, Query: q, MaxItemCount: 5}
		for {
			page, err := be.e.QueryItems(ctx, p)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			for _, it := range page.Items {
				rows = append(rows, string(it))
			}
			examined = append(examined, page.Examined)
			if p.Continuation = page.Continuation; p.Continuation == "" {
				return rows, examined
			}
			if len(examined) > 100 {
				t.Fatalf("%s: no end after %d pages", q, len(examined))
			}
			if between != nil {
				between(len(examined))
			}
		}
	}
	whole := func() []string {
		t.Helper()
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ref, Query: query, MaxItemCount: 1000})
		if err != nil || page.Continuation != "" {
			t.Fatalf("%s whole: %v, continuation %q", query, err, page.Continuation)
		}
		var rows []string
		for _, it := range page.Items {
			rows = append(rows, string(it))
		}
		return rows
	}
	// reads lists the pages that read records.
	reads := func(examined []int) []int {
		var out []int
		for i, n := range examined {
			if n > 0 {
				out = append(out, i+1)
			}
		}
		return out
	}

	want := whole()
	rows, examined := drain(query, nil)
	if !slices.Equal(rows, want) {
		t.Fatalf("drained rows differ from the whole evaluation's:\n%v\n%v", rows, want)
	}
	if len(examined) != groups/5 || !slices.Equal(reads(examined), []int{1}) || examined[0] != docs {
		t.Errorf("records read by page: %v; want %d on the first of %d pages and none after", examined, docs, groups/5)
	}

	// A DISTINCT whose ORDER BY is not its value makes its rows whole too.
	distinct := `SELECT DISTINCT VALUE c.s FROM c ORDER BY c.id DESC`
	if rows, examined = drain(distinct, nil); len(rows) != groups || !slices.Equal(reads(examined), []int{1}) {
		t.Errorf("%s: %d rows, records read by page %v; want %d rows, read by the first page only", distinct, len(rows), examined, groups)
	}

	// A write after page 3: page 4 evaluates again, and sees it.
	rows, examined = drain(query, func(page int) {
		if page == 3 {
			body := `{"id":"new","pk":"p","s":"s59"}`
			if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		}
	})
	if got := reads(examined); !slices.Equal(got, []int{1, 4}) {
		t.Errorf("with a write after page 3, pages that read records: %v, want [1 4]", got)
	}
	if last := rows[len(rows)-1]; last != `{"g":"s59","n":6}` {
		t.Errorf("with a write after page 3, the last group is %s, want s59 of 6 documents", last)
	}

	// Group s7 expires after page 1 (its items' ttl is 100 s): page 2
	// evaluates again, and the group is gone.
	rows, examined = drain(query, func(page int) {
		if page == 1 {
			be.clock.Advance(101 * time.Second)
		}
	})
	if got := reads(examined); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("with items expiring after page 1, pages that read records: %v, want [1 2]", got)
	}
	if slices.ContainsFunc(rows, func(r string) bool { return strings.Contains(r, `"s7"`) }) {
		t.Errorf("the expired group s7 came after its expiry")
	}
	if want = whole(); !slices.Equal(rows, want) {
		t.Errorf("after the expiry, %d drained rows differ from the whole evaluation's %d", len(rows), len(want))
	}

	// A write through another engine over the same store (another
	// gateway) after page 2: page 3 evaluates again, and sees it.
	other, err := New(Config{Store: be.store, Clock: be.clock})
	if err != nil {
		t.Fatal(err)
	}
	rows, examined = drain(query, func(page int) {
		if page == 2 {
			if _, err := other.DeleteItem(ctx, DeleteItemParams{ItemRef: ref, ID: "new"}); err != nil {
				t.Fatal(err)
			}
		}
	})
	if got := reads(examined); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("with a write through another engine after page 2, pages that read records: %v, want [1 3]", got)
	}
	if want = whole(); !slices.Equal(rows, want) {
		t.Errorf("after a write through another engine, %d drained rows differ from the whole evaluation's %d", len(rows), len(want))
	}

	// Rows the engine no longer holds (another gateway served page 2):
	// page 3 evaluates again.
	_, examined = drain(query, func(page int) {
		if page == 2 {
			be.e.held = newKeeper[*heldRows](heldRowsMax)
		}
	})
	if got := reads(examined); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("with the rows dropped after page 2, pages that read records: %v, want [1 3]", got)
	}

	// Rows not asked for within keptIdleMax go with the engine's next
	// housekeeping pass: kept after page 2 and waited for half as long,
	// they serve page 3; kept after page 3 and waited for longer, they
	// are gone, and page 4 evaluates again.
	indexer := be.e.NewIndexer(nil)
	rows, examined = drain(query, func(page int) {
		switch page {
		case 2:
			be.clock.Advance(keptIdleMax / 2)
		case 3:
			be.clock.Advance(keptIdleMax + time.Second)
		default:
			return
		}
		if _, err := indexer.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if got := reads(examined); !slices.Equal(got, []int{1, 4}) {
		t.Errorf("with rows left waiting past keptIdleMax after page 3, pages that read records: %v, want [1 4]", got)
	}
	if want = whole(); !slices.Equal(rows, want) {
		t.Errorf("with rows forgotten, %d drained rows differ from the whole evaluation's %d", len(rows), len(want))
	}
	if be.e.held.bytes != 0 {
		t.Errorf("%d bytes held after the drain", be.e.held.bytes)
	}

	// A defaultTtl of 50 s after page 1 expires every item, all written
	// more than 50 s ago: page 2 evaluates again, and finds none.
	rows, examined = drain(query, func(page int) {
		if page == 1 {
			body := batchJSON(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":50}`)
			if _, err := be.e.ReplaceContainer(ctx, "db", "c", body, ""); err != nil {
				t.Fatal(err)
			}
		}
	})
	if len(rows) != 5 || len(examined) != 2 {
		t.Errorf("with every item expired by a new defaultTtl after page 1: %d rows in %d pages, want 5 in 2", len(rows), len(examined))
	}

	// A query that reads the clock evaluates on every page.
	_, examined = drain(`SELECT LOWER(c.s) AS g, COUNT(1) AS n FROM c WHERE c._ts < GetCurrentTimestamp() GROUP BY LOWER(c.s)`, nil)
	if len(reads(examined)) != len(examined) {
		t.Errorf("a query that reads the clock: records read by page %v, want every page to read", examined)
	}
}

// A query keeps rows for its next page only when they change with its
// items alone: no clock read, no user-defined function, in any clause or
// subquery.
func TestHoldsRows(t *testing.T) {
	for _, tc := range []struct {
		query string
		holds bool
	}{
		{`SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g`, true},
		{`SELECT LOWER(c.g) AS g, COUNT(1) AS n FROM c WHERE c.n > 1 GROUP BY LOWER(c.g)`, true},
		{`SELECT c.g, COUNT(1) AS n FROM c WHERE c.t < GetCurrentDateTime() GROUP BY c.g`, false},
		{`SELECT c.g, MAX(GetCurrentTicksStatic()) AS n FROM c GROUP BY c.g`, false},
		{`SELECT udf.f(c.g) AS g, COUNT(1) AS n FROM c GROUP BY udf.f(c.g)`, false},
		{`SELECT c.g, COUNT(1) AS n FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t < getcurrenttimestamp()) GROUP BY c.g`, false},
		{`SELECT c.g, COUNT(1) AS n FROM c JOIN (SELECT VALUE udf.f(t) FROM t IN c.tags) x GROUP BY c.g`, false},
		{`SELECT DISTINCT VALUE c.a FROM c ORDER BY udf.f(c.b)`, false},
	} {
		q, err := parseOnly(tc.query)
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		if got := holdsRows(q); got != tc.holds {
			t.Errorf("holdsRows(%s) = %v, want %v", tc.query, got, tc.holds)
		}
	}
}

// The pages after the first of an ORDER BY the evaluator sorts (here over
// the span of c.u, 200 of 20,000 items) hold the rows of a few pages
// after their own with their places, and the pages after take them
// without reading a document: a drain in pages of 10 read the 200
// candidates on every page, 4,004 records in all; a DISTINCT's, until
// its extra rows were counted as distinct rows, 3,000. Whichever way a page is served (held rows, held
// rows forgotten, a write between pages, a window), the rows are one
// evaluation's.
func TestSortedPagesHoldTheirRows(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	for i := range 20000 {
		u := hotEvery(i, 100)
		items = append(items, fmt.Sprintf(`{"id":"x%d","pk":"p%d","n":%d,"u":"%s","m":%d,"k":%d}`, i, i%50, (i*7919)%20000, u, i/100%50, i/100%3))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	for _, tc := range []struct {
		name, query string
		forget      bool // the held rows gone before every page
		records     int  // the most the drain may read
	}{
		{"held", `SELECT c.id, c.n FROM c WHERE c.u = 'hot' ORDER BY c.n`, false, 450},
		{"forgotten", `SELECT c.id, c.n FROM c WHERE c.u = 'hot' ORDER BY c.n`, true, 20 * 210},
		{"window", `SELECT c.id, c.n FROM c WHERE c.u = 'hot' ORDER BY c.n DESC OFFSET 15 LIMIT 150`, false, 450},
		// 150 distinct rows of the 200 candidates: the extra rows are
		// distinct rows too.
		{"distinct", `SELECT DISTINCT c.m, c.k FROM c WHERE c.u = 'hot' ORDER BY c.m DESC`, false, 450},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 10, Query: tc.query}
		records := 0
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			records += page.Examined
			if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.IndexSpan) {
				t.Errorf("%s: chose %v, want the span of c.u", tc.name, page.Plan)
			}
			if tc.forget {
				be.e.held.forget(time.Now().Add(time.Hour))
			}
		})
		if want := oracleRows(t, tc.query, docs, ""); len(want) < 150 || !slices.Equal(got, want) {
			t.Errorf("%s: %d rows %.200v, want %d %.200v", tc.name, len(got), got, len(want), want)
		}
		if records > tc.records {
			t.Errorf("%s: the drain read %d records, want at most %d", tc.name, records, tc.records)
		}
	}
	// A write between pages: the page after evaluates the query again,
	// and the drain ends with the new item.
	q := `SELECT c.id, c.n FROM c WHERE c.u = 'hot' ORDER BY c.n`
	p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 10, Query: q}
	var reads []int
	got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
		reads = append(reads, page.Examined)
		if n == 4 {
			be.seed(t, `{"id":"late","pk":"p1","n":99999,"u":"hot"}`)
		}
	})
	want := append(oracleRows(t, q, docs, ""), `{"id":"late","n":99999}`)
	if !slices.Equal(got, want) {
		t.Errorf("a write between pages: %d rows ending %.100v, want %d ending %.100v", len(got), got[max(len(got)-2, 0):], len(want), want[len(want)-2:])
	}
	if len(reads) < 6 || reads[2] != 0 || reads[5] < 200 {
		t.Errorf("a write between pages: the pages read %v records, want none on the third and all candidates on the sixth", reads)
	}
}
