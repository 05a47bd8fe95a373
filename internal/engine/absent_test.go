package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// TestAbsentEntries checks the entries for documents without a property
// (absent.go): an ORDER BY on the property asks for them, the builder
// fills them, and from then on the documents without the property are
// read through them, so a TOP … ORDER BY ascending and the first page of
// an ORDER BY read about the rows they return, not the scope. The rows are
// the evaluator's over the scope's documents, before the build, after it,
// and after writes that add, remove and change documents with and
// without the property; CheckIndexes finds every entry in place.
func TestAbsentEntries(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/n"},{"path":"/id","order":"descending"}]]}}`)
	ctx := context.Background()
	var docs []string
	for i := range 300 {
		doc := fmt.Sprintf(`{"id":"d%03d","pk":"p%d"`, i, i%3)
		if i%10 != 0 {
			doc += fmt.Sprintf(`,"n":%d`, i%37)
		}
		docs = append(docs, doc+"}")
	}
	be.seed(t, docs...)

	type scope struct{ key, rangeID string }
	scopes := []scope{{rangeID: "0"}, {key: `["p1"]`}}
	queries := []string{
		"SELECT VALUE c.id FROM c ORDER BY c.n",
		"SELECT VALUE c.id FROM c ORDER BY c.n DESC",
		// Which of equal rows a TOP or a LIMIT keeps is not specified:
		// these return the values.
		"SELECT TOP 5 c.n FROM c ORDER BY c.n",
		"SELECT TOP 45 c.n FROM c ORDER BY c.n",
		"SELECT TOP 280 c.n FROM c ORDER BY c.n DESC",
		"SELECT c.n FROM c WHERE c.pk != 'p2' ORDER BY c.n OFFSET 3 LIMIT 40",
		"SELECT VALUE c.id FROM c ORDER BY c.n, c.id DESC",
		// A document without c.n makes no row of these: the walks count
		// only the documents that make one.
		"SELECT TOP 5 VALUE c.n FROM c ORDER BY c.n",
		"SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 2 LIMIT 4",
		"SELECT TOP 300 VALUE c.n FROM c ORDER BY c.n DESC",
		"SELECT TOP 5 VALUE c.n FROM c ORDER BY c.n, c.id DESC",
		"SELECT TOP 5 VALUE (c.n > 5 ? c.n : c.none) FROM c WHERE c.n >= 0 ORDER BY c.n",
		"SELECT TOP 5 VALUE (c.n > 5 ? c.n : c.none) FROM c WHERE c.n >= 0 ORDER BY c.n, c.id DESC",
	}
	// drain runs text over sc in pages of size, and returns its rows and
	// its first page.
	drain := func(text string, sc scope, size int) ([]string, *FeedPage) {
		t.Helper()
		var first *FeedPage
		rows := drainRows(t, be.e, QueryParams{ItemRef: batchRef(sc.key), Query: text, MaxItemCount: size, RangeID: sc.rangeID}, func(n int, page *FeedPage) {
			if n == 0 {
				first = page
			}
		})
		return rows, first
	}
	// want is the evaluator's answer over the scope's documents in scan
	// order, as a scan query returns them.
	want := func(text string, sc scope) []string {
		t.Helper()
		raw, _ := drain("SELECT * FROM c", sc, 1000)
		var in []document.Value
		for _, r := range raw {
			in = append(in, batchJSON(t, r))
		}
		prog, err := compileQuery(text, nil, batchT0, nil)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := prog.RunDocs(in)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			out = append(out, string(r.JSON()))
		}
		return out
	}
	check := func(stage string) {
		t.Helper()
		for _, text := range queries {
			for _, sc := range scopes {
				got, _ := drain(text, sc, 7)
				if w := want(text, sc); !slices.Equal(got, w) {
					t.Errorf("%s: %s (scope %v):\n got  %s\n want %s", stage, text, sc, strings.Join(got, " "), strings.Join(w, " "))
				}
			}
		}
		if _, err := be.e.CheckIndexes(ctx); err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
	}
	indexer := be.e.NewIndexer(nil)
	check("before the entries are listed")
	// The queries' wish is listed by the indexer's pass.
	if a := be.container(t).Index.Absent; len(a) != 0 {
		t.Fatalf("absence list %+v before a pass", a)
	}
	indexer.batch = 40 // several batches, with writes between them
	if _, err := indexer.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if a := be.container(t).Index.Absent; len(a) != 1 || !slices.Equal(a[0].Path, []string{"n"}) || a[0].Ready {
		t.Fatalf("absence list after one pass: %+v", a)
	}
	// Writes while the builder is part way: the writers keep the
	// entries of a listed path from the start.
	write := func(mode WriteMode, body string) {
		t.Helper()
		doc := batchJSON(t, body)
		ref := batchRef(`["` + doc.Get("pk").Str() + `"]`)
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: mode, ID: doc.Get("id").Str(), Body: []byte(body)}); err != nil {
			t.Fatalf("write %s: %v", body, err)
		}
	}
	write(ModeReplace, `{"id":"d290","pk":"p2"}`)
	write(ModeReplace, `{"id":"d010","pk":"p1","n":-1}`)
	write(ModeCreate, `{"id":"e1","pk":"p1"}`)
	check("while the entries are built")
	drainIndexer(t, indexer)
	if a := be.container(t).Index.Absent; len(a) != 1 || !a[0].Ready {
		t.Fatalf("absence list after the build: %+v", a)
	}
	check("after the build")

	// Through the entries, the ascending TOP reads its 5 rows and the
	// first page of the stream its 7 (and the next, to know there is
	// more), whatever the scope holds.
	for _, sc := range scopes {
		_, first := drain("SELECT TOP 5 VALUE c.id FROM c ORDER BY c.n", sc, 100)
		if c := first.Plan.Chosen; c.Access != plan.OrderedWalk || !c.Absent || first.Examined > 5 {
			t.Errorf("TOP 5 ascending (scope %v): examined %d; %s", sc, first.Examined, first.Plan.Explain())
		}
		_, first = drain("SELECT VALUE c.id FROM c ORDER BY c.n", sc, 7)
		if c := first.Plan.Chosen; c.Access != plan.OrderedStream || !c.Absent || first.Examined > 8 {
			t.Errorf("ORDER BY, first page (scope %v): examined %d; %s", sc, first.Examined, first.Plan.Explain())
		}
	}

	write(ModeReplace, `{"id":"d020","pk":"p2","n":3}`)
	write(ModeReplace, `{"id":"d001","pk":"p1"}`)
	write(ModeUpsert, `{"id":"e2","pk":"p0"}`)
	write(ModeCreate, `{"id":"e3","pk":"p1","n":null}`)
	if _, err := be.e.DeleteItem(ctx, DeleteItemParams{ItemRef: batchRef(`["p0"]`), ID: "d030"}); err != nil {
		t.Fatal(err)
	}
	check("after more writes")
}

// TestAbsentBuildListsOneAfterAnother checks that the builder reports work
// left while any listed path awaits its entries: a pass that ends one
// path's build is not the end when a second was listed with it, and a
// loop that stops on "no more" would leave the second unbuilt until the
// next tick.
func TestAbsentBuildListsOneAfterAnother(t *testing.T) {
	be := newTieEnv(t, 50, 4, 50)
	for _, q := range []string{"SELECT * FROM c ORDER BY c.a", "SELECT * FROM c ORDER BY c.b", "SELECT * FROM c ORDER BY c.c"} {
		drainRows(t, be.e, QueryParams{ItemRef: batchRef(""), Query: q, MaxItemCount: 10, RangeID: "0"}, nil)
	}
	indexer := be.e.NewIndexer(nil)
	indexer.batch = 20
	drainIndexer(t, indexer)
	if c := be.container(t); len(c.Index.Absent) != 3 || c.Index.building() {
		t.Fatalf("absence list after the passes: %+v", c.Index.Absent)
	}
	if _, err := be.e.CheckIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestTieEntriesPageWork checks that an ORDER BY over a range on a
// property with few values reads about a page of entries a page once the
// path's tie entries are built, and returns the rows it returned before:
// equal values in _rid order (backwards descending), resumed inside a
// value from page to page.
func TestTieEntriesPageWork(t *testing.T) {
	be := newTieEnv(t, 900, 7, 3)
	// Ten rows; for each of the (at most two) groups a page touches, the
	// entries read before the walk turns to its tie entries; and one entry
	// more to know the page is full.
	checkPageWork(t, be, QueryParams{ItemRef: batchRef(""), RangeID: "0"}, []string{
		"SELECT VALUE c.id FROM c ORDER BY c.a",
		"SELECT VALUE c.id FROM c ORDER BY c.a DESC",
		"SELECT VALUE c.id FROM c WHERE c.a >= 1 ORDER BY c.a DESC",
	}, 300, 10+2*(tieGroupMin+2)+1)
}

// TestTieEntriesOnlyForWideScopes checks that an ORDER BY within a
// partition lists its path for absence entries only, without the tie
// entries only a range or the whole container reads (each costs a write
// for every document with the property), and that an ORDER BY over a
// range then lists it again with them.
func TestTieEntriesOnlyForWideScopes(t *testing.T) {
	be := newTieEnv(t, 20, 2, 3)
	indexer := be.e.NewIndexer(nil)
	// listed runs the query and the indexer, and returns the path's list
	// entry and the container's index entries.
	listed := func(q QueryParams) (absentPath, int) {
		t.Helper()
		drainRows(t, be.e, q, nil)
		drainIndexer(t, indexer)
		counts, err := be.e.CheckIndexes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c := be.container(t)
		if len(c.Index.Absent) != 1 {
			t.Fatalf("absence list %+v", c.Index.Absent)
		}
		return c.Index.Absent[0], counts["dbs/db/colls/c"].OrderEntries
	}
	a, before := listed(QueryParams{ItemRef: batchRef(`["p1"]`), Query: "SELECT * FROM c ORDER BY c.a", MaxItemCount: 5})
	if !a.Ready || a.Ties {
		t.Fatalf("after a partition's ORDER BY: %+v, want ready without ties", a)
	}
	a, after := listed(QueryParams{ItemRef: batchRef(""), Query: "SELECT * FROM c ORDER BY c.a", MaxItemCount: 5, RangeID: "0"})
	if !a.Ready || !a.Ties || after != before+20 {
		t.Fatalf("after a range's ORDER BY: %+v, %d index entries (%d before), want ready with ties and one entry more a document", a, after, before)
	}
}

// newTieEnv is a container of n documents {"id", "pk": "p"+i%parts,
// "a": i%values}.
func newTieEnv(t *testing.T, n, parts, values int) *batchEnv {
	t.Helper()
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	docs := make([]string, 0, n)
	for i := range n {
		docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p%d","a":%d}`, i, i%parts, i%values))
	}
	be.seed(t, docs...)
	return be
}

// drainIndexer runs x's passes until it reports no work left.
func drainIndexer(t testing.TB, x *Indexer) {
	t.Helper()
	for more := true; more; {
		var err error
		if more, err = x.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// orderReady runs the first page of each query, which asks for the
// entries its ORDER BY reads (a page may still fail: a group too large to
// sort without them), and then the indexer, which builds them.
func (be *batchEnv) orderReady(t *testing.T, queries ...QueryParams) {
	t.Helper()
	for _, p := range queries {
		p.MaxItemCount = 1
		be.e.QueryItems(context.Background(), p) //nolint:errcheck // only its wish counts
	}
	drainIndexer(t, be.e.NewIndexer(nil))
}

// container reads the record of the test container.
func (be *batchEnv) container(t *testing.T) *containerRecord {
	t.Helper()
	return be.containerOf(t, "c")
}

// containerOf reads the record of be's container coll.
func (be *batchEnv) containerOf(t *testing.T, coll string) *containerRecord {
	t.Helper()
	var c *containerRecord
	err := be.e.store.View(context.Background(), func(r storage.Reader) error {
		var err error
		c, err = be.e.loadContainer(r, "db", coll)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPartEntriesPageWork checks that an ORDER BY within one logical
// partition of a container of many (streamed, or a TOP) reads about a page
// of entries a page once the path's partition entries are built (it
// walked every partition's entries of the path before, skipping the
// others'), and returns the rows it returned before.
func TestPartEntriesPageWork(t *testing.T) {
	be := newTieEnv(t, 3000, 10, 700)
	// Ten rows, the members of the page's first value read again when it
	// resumes inside it, and the entries of the next value (values here
	// repeat up to five times in the partition).
	checkPageWork(t, be, QueryParams{ItemRef: batchRef(`["p3"]`)}, []string{
		"SELECT VALUE c.id FROM c ORDER BY c.a",
		"SELECT VALUE c.id FROM c ORDER BY c.a DESC",
		"SELECT VALUE c.id FROM c WHERE c.a >= 350 ORDER BY c.a DESC",
		"SELECT TOP 9 VALUE c.id FROM c ORDER BY c.a DESC", // the TOP walk
	}, 50, 20)
	if a := be.container(t).Index.Absent; len(a) != 1 || !a[0].Parts || a[0].Ties {
		t.Fatalf("absence list %+v, want the path with partition entries only", a)
	}
}

// checkPageWork drains each of queries over base's scope in pages of ten,
// runs the indexer to the end, and drains them again: the rows must be
// the same, and the most index entries a page read (the first page's of a
// query with a filter left out: it has the planner count the filter's
// span) at least before before the build, at most after after it.
func checkPageWork(t *testing.T, be *batchEnv, base QueryParams, queries []string, before, after int) {
	t.Helper()
	drain := func(q string) ([]string, int) {
		t.Helper()
		p := base
		p.Query, p.MaxItemCount = q, 10
		most := 0
		rows := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n > 0 || !strings.Contains(q, "WHERE") {
				most = max(most, page.IndexEntries)
			}
		})
		return rows, most
	}
	want := map[string][]string{}
	for _, q := range queries {
		rows, most := drain(q)
		if len(rows) == 0 || most < before {
			t.Fatalf("%s: %d rows, a page read at most %d index entries before the build: the test no longer shows the entries' use", q, len(rows), most)
		}
		want[q] = rows
	}
	drainIndexer(t, be.e.NewIndexer(nil))
	for _, q := range queries {
		rows, most := drain(q)
		if !slices.Equal(rows, want[q]) {
			t.Errorf("%s: rows after the build differ:\n got %v\nwant %v", q, rows, want[q])
		}
		if most > after {
			t.Errorf("%s: a page read %d index entries", q, most)
		}
	}
	if _, err := be.e.CheckIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestPartCompositePageWork checks that an ORDER BY on two keys within one
// logical partition reads about a page of records a page once the
// composite's partition entries are built, where a page read its whole
// group of equal first values before, in every direction the composites
// serve; the rows are eval's order before the build, after it, and after
// writes that leave a document of a group out of the composite.
func TestPartCompositePageWork(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/a"},{"path":"/b"}],[{"path":"/a"},{"path":"/b","order":"descending"}]]}}`)
	type doc struct {
		i, a int
		b    *int // nil: no b
	}
	var docs []doc // those of partition p3, in creation (and so location) order
	var bodies []string
	for i := range 2000 {
		a, b := i%3, i*7%997
		bodies = append(bodies, fmt.Sprintf(`{"id":"d%04d","pk":"p%d","a":%d,"b":%d}`, i, i%10, a, b))
		if i%10 == 3 {
			docs = append(docs, doc{i, a, &b})
		}
	}
	be.seed(t, bodies...)
	queries := map[string][2]bool{
		"SELECT VALUE c.id FROM c ORDER BY c.a, c.b":                     {false, false},
		"SELECT VALUE c.id FROM c ORDER BY c.a DESC, c.b DESC":           {true, true},
		"SELECT VALUE c.id FROM c WHERE c.a >= 1 ORDER BY c.a, c.b DESC": {false, true},
		"SELECT VALUE c.id FROM c ORDER BY c.a DESC, c.b":                {true, false},
	}
	// want is eval's order of docs under the query's directions: a
	// document without b sorts first under b ascending; equal keys in
	// location order, backwards when a key is descending.
	want := func(q string) []string {
		dirs := queries[q]
		var out []doc
		for _, d := range docs {
			if !strings.Contains(q, "c.a >= 1") || d.a >= 1 {
				out = append(out, d)
			}
		}
		bOf := func(d doc) int {
			if d.b == nil {
				return -1
			}
			return *d.b
		}
		slices.SortStableFunc(out, func(x, y doc) int {
			for k, d := range []int{x.a - y.a, bOf(x) - bOf(y)} {
				if d != 0 {
					if dirs[k] {
						return -d
					}
					return d
				}
			}
			if dirs[0] || dirs[1] {
				return y.i - x.i
			}
			return x.i - y.i
		})
		ids := make([]string, len(out))
		for j, d := range out {
			ids[j] = fmt.Sprintf(`"d%04d"`, d.i)
		}
		return ids
	}
	// drain returns the rows of q in pages of ten and the most records
	// and index entries a page read.
	drain := func(q string) (rows []string, records, entries int) {
		t.Helper()
		rows = drainRows(t, be.e, QueryParams{ItemRef: batchRef(`["p3"]`), Query: q, MaxItemCount: 10}, func(_ int, page *FeedPage) {
			records, entries = max(records, page.Examined), max(entries, page.IndexEntries)
		})
		return rows, records, entries
	}
	// check drains the queries: a page must read lo to hi records, and
	// at most maxEntries index entries when that is not 0.
	check := func(stage string, lo, hi, maxEntries int) {
		t.Helper()
		for q := range queries {
			rows, records, entries := drain(q)
			if !slices.Equal(rows, want(q)) {
				t.Errorf("%s: %s:\n got %v\nwant %v", stage, q, rows, want(q))
			}
			if records < lo || records > hi {
				t.Errorf("%s: %s: a page read at most %d records, want %d to %d", stage, q, records, lo, hi)
			}
			if maxEntries > 0 && entries > maxEntries {
				t.Errorf("%s: %s: a page read %d index entries, want at most %d", stage, q, entries, maxEntries)
			}
		}
		if _, err := be.e.CheckIndexes(context.Background()); err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
	}
	// orderEntries counts the container's entries for ORDER BY (absent.go).
	orderEntries := func() int {
		t.Helper()
		counts, err := be.e.CheckIndexes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return counts["dbs/db/colls/c"].OrderEntries
	}
	// Across partitions the composite's own entries serve: its gap
	// entries are built (none here: every document has both keys), not
	// its entries of each partition.
	be.orderReady(t, QueryParams{ItemRef: batchRef(""), Query: "SELECT VALUE c.id FROM c ORDER BY c.a, c.b", RangeID: "0"})
	if c := be.container(t); len(c.Index.Absent) != 1 || c.Index.Absent[0].Parts || len(c.Index.Absent[0].Comps) != 1 || orderEntries() != 0 {
		t.Fatalf("after an ORDER BY across partitions: absence list %+v and %d entries, want /a with the composite and no entries", c.Index.Absent, orderEntries())
	}
	// A group of p3 holds about 66 documents, read whole by every page;
	// the first page scans the partition's 200 for documents without a.
	check("before the build", 60, 200, 0)
	drainIndexer(t, be.e.NewIndexer(nil))
	c := be.container(t)
	if len(c.Index.Absent) != 1 || !c.Index.Absent[0].Ready || len(c.Index.Absent[0].Comps) != 1 {
		t.Fatalf("absence list %+v, want /a with the first composite's partition entries (it serves every direction)", c.Index.Absent)
	}
	if n := orderEntries(); n != 4000 {
		t.Fatalf("%d entries for ORDER BY, want the partition entries of a and of the composite, 2,000 each", n)
	}
	check("after the build", 10, 15, 20)

	// A document of p3 without b leaves its group (a = 1) out of the
	// composite: that group is read whole again, the others are not.
	if _, err := be.e.WriteItem(context.Background(), WriteItemParams{ItemRef: batchRef(""), Mode: ModeCreate,
		Body: []byte(`{"id":"d9999","pk":"p3","a":1}`)}); err != nil {
		t.Fatal(err)
	}
	docs = append(docs, doc{i: 9999, a: 1})
	check("with a document without b", 60, 90, 0)
}

// TestPartCompositeSpanPageWork checks that a filter a composite index
// answers within one logical partition (an equality on its first path and
// a range on the next) asks for the composite's entries of each partition
// apart, and once they are built counts and reads the partition's entries
// alone: before, its first page counted the span across every partition,
// and a count read the partition's records.
func TestPartCompositeSpanPageWork(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/m"},{"path":"/k"}]]}}`)
	var bodies []string
	for i := range 4000 {
		bodies = append(bodies, fmt.Sprintf(`{"id":"d%04d","pk":"p%d","k":%d,"m":%d}`, i, i%20, i*37%1000, i/20%2))
	}
	be.seed(t, bodies...)
	// Of p3's 200 items, 100 pass; the span across partitions holds
	// some 2,000 entries.
	filter := QueryParams{ItemRef: batchRef(`["p3"]`), Query: "SELECT VALUE c.id FROM c WHERE c.m = 1 AND c.k > 10", MaxItemCount: 10}
	count := QueryParams{ItemRef: batchRef(`["p3"]`), Query: "SELECT VALUE COUNT(1) FROM c WHERE c.m = 1 AND c.k > 10"}
	// run drains the filter and returns its rows and the first page's
	// index entries, and the count's value, records and index entries.
	run := func() (rows []string, first int, n string, records, entries int) {
		t.Helper()
		rows = drainRows(t, be.e, filter, func(i int, page *FeedPage) {
			if i == 0 {
				first = page.IndexEntries
			}
		})
		page, err := be.e.QueryItems(context.Background(), count)
		if err != nil {
			t.Fatal(err)
		}
		return rows, first, string(page.Items[0]), page.Examined, page.IndexEntries
	}
	rows, first, n, records, _ := run()
	if len(rows) != 100 || n != "100" || first < 500 || records < 200 {
		t.Fatalf("before the build: %d rows, %s counted, the first page read %d entries, the count %d records: the test no longer shows the entries' use", len(rows), n, first, records)
	}
	drainIndexer(t, be.e.NewIndexer(nil))
	if c := be.container(t); !partComposite(c, &c.index.composites[0], &itemScope{kind: plan.ScopePartition}) {
		t.Fatalf("the filter did not ask for the partition composite entries: absence list %+v", c.Index.Absent)
	}
	after, first, n, records, entries := run()
	if !slices.Equal(after, rows) || n != "100" {
		t.Errorf("after the build: %s counted, rows\n got %v\nwant %v", n, after, rows)
	}
	if first > 150 || records > 0 || entries > 150 {
		t.Errorf("after the build: the first page read %d index entries, the count %d records and %d entries", first, records, entries)
	}
	if _, err := be.e.CheckIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
}
