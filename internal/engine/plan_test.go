package engine

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

var updatePlans = flag.Bool("update", false, "rewrite the expected plans in testdata/plans.txt")

// TestPlanTranscript runs the queries of testdata/plans.txt against a
// fixed container and compares the planner's explanation, the rows and the
// work done with the file: which access path each query shape takes, at a
// glance. go test -run TestPlanTranscript -update rewrites the file.
//
// The container: 5,000 items in 50 logical partitions of 100 ("p0".."p49"),
// n = 0..99 within each partition, and one partition of 1,000 ("pbig",
// n = 0..999); s = "s"+n%10, tags = [n%3, n%5]; the default indexing
// policy with two composite indexes, (/s ASC, /n ASC) and
// (/pk ASC, /n DESC), a vector index on /tags, Euclidean, and a
// full-text index on /t: "the blue whale" when n%20 = 0, "red foxes" when
// n%10 = 1, "a blue fox" when n%10 = 5, "a sea story" otherwise.
func TestPlanTranscript(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"indexingPolicy":{"indexingMode":"consistent",
		"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/s","order":"ascending"},{"path":"/n","order":"ascending"}],
		[{"path":"/pk"},{"path":"/n","order":"descending"}]],"vectorIndexes":[{"path":"/tags","type":"flat"}],"fullTextIndexes":[{"path":"/t"}]},
		"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/tags","dataType":"float32","dimensions":2,"distanceFunction":"euclidean"}]},
		"fullTextPolicy":{"defaultLanguage":"en-US","fullTextPaths":[{"path":"/t","language":"en-US"}]}}`)
	text := func(n int) string {
		switch {
		case n%20 == 0:
			return "the blue whale"
		case n%10 == 1:
			return "red foxes"
		case n%10 == 5:
			return "a blue fox"
		}
		return "a sea story"
	}
	ctx := context.Background()
	for p := 0; p < 50; p++ {
		ops := make([]string, 0, 100)
		for n := 0; n < 100; n++ {
			ops = append(ops, fmt.Sprintf(`{"id":"i%d","pk":"p%d","n":%d,"s":"s%d","tags":[%d,%d],"t":%q}`, p*100+n, p, n, n%10, n%3, n%5, text(n)))
		}
		be.seed(t, ops...)
	}
	big := make([]string, 0, 1000)
	for n := 0; n < 1000; n++ {
		big = append(big, fmt.Sprintf(`{"id":"b%d","pk":"pbig","n":%d,"s":"s%d","tags":[%d,%d],"t":%q}`, n, n, n%10, n%3, n%5, text(n)))
	}
	be.seed(t, big...)
	const file = "testdata/plans.txt"
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, block := range strings.Split(strings.TrimSpace(string(raw)), "\n\n") {
		var query, key, rangeID, size string
		build := false
		for _, line := range strings.Split(block, "\n") {
			switch {
			case line == "build: indexer":
				build = true
			case strings.HasPrefix(line, "size: "):
				size = strings.TrimPrefix(line, "size: ")
			case strings.HasPrefix(line, "query: "):
				query = strings.TrimPrefix(line, "query: ")
			case strings.HasPrefix(line, "key: "):
				key = strings.TrimPrefix(line, "key: ")
			case strings.HasPrefix(line, "range: "):
				rangeID = strings.TrimPrefix(line, "range: ")
			}
		}
		p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, Query: query, MaxItemCount: -1, RangeID: rangeID, CrossPartition: true}
		if size != "" {
			if p.MaxItemCount, err = strconv.Atoi(size); err != nil {
				t.Fatalf("size %s: %v", size, err)
			}
		}
		if key != "" {
			k, err := partition.ParseHeader(key)
			if err != nil {
				t.Fatalf("key %s: %v", key, err)
			}
			p.PartitionKey, p.HasKey = k, true
		}
		if build {
			// The builder's work so far: the absence entries earlier
			// queries asked for (absent.go).
			fmt.Fprintf(&out, "build: indexer\n")
			drainIndexer(t, be.e.NewIndexer(nil))
		}
		page, err := be.e.QueryItems(ctx, p)
		fmt.Fprintf(&out, "query: %s\n", query)
		if key != "" {
			fmt.Fprintf(&out, "key: %s\n", key)
		}
		if rangeID != "" {
			fmt.Fprintf(&out, "range: %s\n", rangeID)
		}
		if size != "" {
			fmt.Fprintf(&out, "size: %s\n", size)
		}
		if err != nil {
			fmt.Fprintf(&out, "error: %v\n\n", err)
			continue
		}
		if page.Plan != nil {
			out.WriteString(page.Plan.Explain())
		}
		fmt.Fprintf(&out, "rows=%d records=%d entries=%d\n\n", len(page.Items), page.Examined, page.IndexEntries)
	}
	got := strings.TrimSpace(out.String()) + "\n"
	if *updatePlans {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != string(raw) {
		t.Errorf("plans differ from %s (go test -run TestPlanTranscript -update to accept):\n%s", file, diffLines(string(raw), got))
	}
}

// diffLines lists the lines that differ, with their numbers.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString(strconv.Itoa(i+1) + ":\n- " + wl + "\n+ " + gl + "\n")
		}
	}
	return b.String()
}

// An equality term in one logical partition is counted and read among the
// partition's own entries of its value (scopedSpans): a value most of
// the container holds but the partition holds three times is three
// entries there. Counted over the container, its count reached the
// probe, the scan of the partition's 300 items looked cheaper, and the
// page read them all after counting a thousand entries.
func TestScopedTermCountsItsPartition(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	for p := range 20 {
		items := make([]string, 0, 300)
		for n := range 300 {
			v := "x"
			if p == 0 && n%100 != 7 {
				v = "y"
			}
			items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","t":"%s"}`, p*300+n, p, v))
		}
		be.seed(t, items...)
	}
	for _, tc := range []struct{ name, key, query string }{
		{"header", `["p0"]`, "SELECT * FROM c WHERE c.t = 'x'"},
		{"pinned", "", "SELECT * FROM c WHERE c.t = 'x' AND c.pk = 'p0'"},
		{"in", `["p0"]`, "SELECT * FROM c WHERE c.t IN ('x', 'z')"},
	} {
		p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, Query: tc.query, MaxItemCount: -1}
		if tc.key != "" {
			k, err := partition.ParseHeader(tc.key)
			if err != nil {
				t.Fatal(err)
			}
			p.PartitionKey, p.HasKey = k, true
		}
		page, err := be.e.QueryItems(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(page.Items) != 3 || page.Plan == nil || page.Plan.Chosen.Access != plan.IndexSpan {
			t.Fatalf("%s: %d rows by %v, want 3 by the index span", tc.name, len(page.Items), page.Plan)
		}
		if page.Examined != 3 || page.IndexEntries > 10 {
			t.Errorf("%s: read %d records and %d index entries, want 3 and the partition's few", tc.name, page.Examined, page.IndexEntries)
		}
	}
}

// Pages of an equality, or an IN list, in one logical partition go on
// from their position in the values' entries (spanSource): a page reads
// its own entries, not the spans' from their start, and an IN list's
// spans merge in the scan order.
func TestPartitionSpanPagesSeek(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	items := make([]string, 0, 3000)
	for n := range 3000 {
		v := map[int]string{3: "x", 7: "w"}[n%10]
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p0","t":"%s","n":%d}`, n, cmp.Or(v, "y"), n))
	}
	be.seed(t, items...)
	for _, tc := range []struct {
		query string
		ends  []int // the last digits of the rows' n, in order
	}{
		{"SELECT VALUE c.n FROM c WHERE c.t = 'x'", []int{3}},
		{"SELECT VALUE c.n FROM c WHERE c.t IN ('w', 'x', 'z')", []int{3, 7}},
	} {
		p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: partition.Key{partition.String("p0")}},
			Query: tc.query, MaxItemCount: 50}
		// A page reads its 50 rows' entries, the one after them that
		// says more follow, and with several values the entry each
		// other value's span is at.
		got := drainSpanPages(t, be, p, true, 51+len(tc.ends))
		if want := numbersWhere(3000, 10, tc.ends); !slices.Equal(got, want) {
			t.Fatalf("%s: %d rows, want %d in order", tc.query, len(got), len(want))
		}
	}
}

// drainSpanPages drains p and checks that its first page is an index span
// (when first is set) and that every later page reads at most entries
// index entries.
func drainSpanPages(t *testing.T, be *batchEnv, p QueryParams, first bool, entries int) []string {
	t.Helper()
	return drainRows(t, be.e, p, func(n int, page *FeedPage) {
		if n == 0 && first && (page.Plan == nil || page.Plan.Chosen.Access != plan.IndexSpan) {
			t.Fatalf("%s: page 1 by %v, want the index span", p.Query, page.Plan)
		}
		if n > 0 && page.IndexEntries > entries {
			t.Errorf("%s: page %d read %d index entries for %d rows", p.Query, n+1, page.IndexEntries, len(page.Items))
		}
	})
}

// numbersWhere is the numbers below total whose remainder by mod is one
// of ends, in order, as rows of SELECT VALUE c.n.
func numbersWhere(total, mod int, ends []int) []string {
	var out []string
	for n := range total {
		if slices.Contains(ends, n%mod) {
			out = append(out, strconv.Itoa(n))
		}
	}
	return out
}

// firstPageBuildsTies runs p's first page, which must read an index span
// and ask for the tie entries of path, and the indexer after it, which
// must build them.
func firstPageBuildsTies(t *testing.T, be *batchEnv, p QueryParams, path string) {
	t.Helper()
	steps := strings.Split(path, "/")
	first, err := be.e.QueryItems(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if first.Plan == nil || first.Plan.Chosen.Access != plan.IndexSpan {
		t.Fatalf("%s: page 1 by %v, want the index span", p.Query, first.Plan)
	}
	drainIndexer(t, be.e.NewIndexer(nil))
	if !be.container(t).tiesReady(steps) {
		t.Fatalf("%s: the tie entries of /%s are not built", p.Query, path)
	}
}

// TestWideSpanPagesSeek pages an equality and an IN list across
// partitions: once a first page has asked for the path's tie entries and
// they are built, each page seeks to its position among them, in _rid
// order, and reads its own entries, where it collected and sorted every
// entry of the values (1,250 and 1,562 a page here).
func TestWideSpanPagesSeek(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	items := make([]string, 0, 10_000)
	for n := range 10_000 {
		v := map[int]string{3: "x", 11: "x", 19: "x", 27: "x", 5: "w"}[n%32]
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","t":"%s","n":%d}`, n, n%40, cmp.Or(v, "y"), n))
	}
	be.seed(t, items...)
	for _, tc := range []struct {
		query string
		ends  []int // n % 32 of the rows
	}{
		{"SELECT VALUE c.n FROM c WHERE c.t = 'x'", []int{3, 11, 19, 27}},
		{"SELECT VALUE c.n FROM c WHERE c.t IN ('w', 'x', 'z')", []int{3, 5, 11, 19, 27}},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: tc.query, MaxItemCount: 50}
		firstPageBuildsTies(t, be, p, "t")
		// Its 50 rows' entries, the one after them that says more
		// follow, and with several values the entry each other value's
		// span is at.
		got := drainSpanPages(t, be, p, false, 54)
		if want := numbersWhere(10_000, 32, tc.ends); !slices.Equal(got, want) {
			t.Fatalf("%s: %d rows, want %d in _rid order", tc.query, len(got), len(want))
		}
	}
}

// TestArrayElementPagesSeek pages terms on array elements across
// partitions (ARRAY_CONTAINS, a JOIN's elements, EXISTS over them): once a
// first page has asked for the element path's tie entries (one for each
// distinct exact element of a document) and they are built, each page
// seeks to its position among them and reads its own entries, where it
// collected and sorted every entry of the values (1,250 to 1,563 a page
// here). A document holding the value twice has one entry and is read
// once; its JOIN rows are two.
func TestArrayElementPagesSeek(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	items := make([]string, 0, 10_000)
	for n := range 10_000 {
		tags := map[int]string{3: `["x","y","x"]`, 11: `["y","x"]`, 13: `["x"]`, 27: `["x",2]`, 19: `[["x"],"v"]`, 5: `["w",1]`}[n%32]
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","tags":%s,"n":%d}`, n, n%40, cmp.Or(tags, fmt.Sprintf(`["y","z%d"]`, n%5)), n))
	}
	be.seed(t, items...)
	twice := func(rows []string, ends ...int) []string {
		var out []string
		for _, r := range rows {
			n, _ := strconv.Atoi(r)
			out = append(out, r)
			if slices.Contains(ends, n%32) {
				out = append(out, r)
			}
		}
		return out
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"SELECT VALUE c.n FROM c WHERE ARRAY_CONTAINS(c.tags, 'x')", numbersWhere(10_000, 32, []int{3, 11, 13, 27})},
		{"SELECT VALUE c.n FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 'w')", numbersWhere(10_000, 32, []int{5})},
		{"SELECT VALUE c.n FROM c JOIN t IN c.tags WHERE t = 'x'", twice(numbersWhere(10_000, 32, []int{3, 11, 13, 27}), 3)},
		{"SELECT VALUE c.n FROM c JOIN t IN c.tags WHERE t IN ('w', 'x')", twice(numbersWhere(10_000, 32, []int{3, 5, 11, 13, 27}), 3)},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: tc.query, MaxItemCount: 50}
		if !be.container(t).tiesReady([]string{"tags", "[]"}) {
			firstPageBuildsTies(t, be, p, "tags/[]")
		}
		// A page's rows' entries, the one after them, and with two
		// values the entry the other value's span is at.
		if got := drainSpanPages(t, be, p, true, 53); !slices.Equal(got, tc.want) {
			t.Fatalf("%s: %d rows, want %d in _rid order", tc.query, len(got), len(tc.want))
		}
	}
}

// TestRangePagesMergeTieSpans pages ranges of few values across
// partitions: once the path's tie entries are built, a page finds the
// values in its ranges, seeks to its position in each, and merges them in
// _rid order, where it collected and sorted every entry of the ranges
// (625 to 1,250 a page here). A number of magnitude 2^53 or more has no
// tie entry; once one is in a range, the pages collect again.
func TestRangePagesMergeTieSpans(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	items := make([]string, 0, 10_000)
	for n := range 10_000 {
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","g":%d,"s":"s%02d","n":%d}`, n, n%40, n%32, n%32, n))
	}
	be.seed(t, items...)
	seq := func(lo, hi int) []int {
		var out []int
		for v := lo; v <= hi; v++ {
			out = append(out, v)
		}
		return out
	}
	cases := []struct {
		path    string
		query   string
		ends    []int // n % 32 of the rows
		entries int   // a page's bound
	}{
		// The rows' entries, the one after them, and two seeks a value.
		{"g", "SELECT VALUE c.n FROM c WHERE c.g >= 3 AND c.g <= 6", seq(3, 6), 51 + 2*4},
		// The excluded bound's entries are not read.
		{"g", "SELECT VALUE c.n FROM c WHERE c.g > 27", seq(28, 31), 51 + 2*4},
		{"s", "SELECT VALUE c.n FROM c WHERE c.s >= 's28' AND c.s < 's99'", seq(28, 31), 51 + 2*4},
		{"s", "SELECT VALUE c.n FROM c WHERE STARTSWITH(c.s, 's3')", seq(30, 31), 51 + 2*2},
	}
	for _, tc := range cases {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: tc.query, MaxItemCount: 50}
		if !be.container(t).tiesReady([]string{tc.path}) {
			firstPageBuildsTies(t, be, p, tc.path)
		}
		got := drainSpanPages(t, be, p, false, tc.entries)
		if want := numbersWhere(10_000, 32, tc.ends); !slices.Equal(got, want) {
			t.Fatalf("%s: %d rows, want %d in _rid order", tc.query, len(got), len(want))
		}
	}

	// Numbers of magnitude 2^53 or more, in the ranges of the first two
	// queries: their rows come last, in _rid order.
	be.seed(t, `{"id":"big","pk":"p1","g":9007199254740993,"n":10000}`, `{"id":"neg","pk":"p2","g":-9007199254740993,"n":10001}`)
	for _, tc := range []struct {
		query string
		extra []string
	}{
		{"SELECT VALUE c.n FROM c WHERE c.g > 27", []string{"10000"}},
		{"SELECT VALUE c.n FROM c WHERE c.g < 2", []string{"10001"}},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: tc.query, MaxItemCount: 50}
		got := drainSpanPages(t, be, p, false, 1<<20)
		ends := seq(28, 31)
		if tc.extra[0] == "10001" {
			ends = seq(0, 1)
		}
		if want := append(numbersWhere(10_000, 32, ends), tc.extra...); !slices.Equal(got, want) {
			t.Fatalf("%s: %d rows (last %v), want %d", tc.query, len(got), got[max(len(got)-2, 0):], len(want))
		}
	}
}

// TestRangeInLargePartitionReadsItsEntries pages ranges of values in one
// large logical partition. The path's entries hold every partition's, so
// such a page read the container's entries of the range (or scanned the
// partition); once a first page has asked for the path's partition
// entries and they are built, a page merges the partition's values of the
// range from its position, or, past maxRangeValues values, collects the
// partition's entries of the range alone.
func TestRangeInLargePartitionReadsItsEntries(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	items := make([]string, 0, 10_000)
	for n := range 10_000 {
		pk := fmt.Sprintf("p%d", n%40)
		if n%5 == 0 {
			pk = "big"
		}
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"%s","g":%d,"s":"s%02d","n":%d}`, n, pk, n%32, n%32, n))
	}
	be.seed(t, items...)
	ref := batchRef(`["big"]`)
	where := func(keep func(n int) bool) []string {
		var out []string
		for n := 0; n < 10_000; n += 5 {
			if keep(n) {
				out = append(out, strconv.Itoa(n))
			}
		}
		return out
	}
	for i, tc := range []struct {
		path             string
		query            string
		want             []string
		entries, records int // a page's bounds
	}{
		// 250 rows of 2,000 in the partition, 1,250 in the container:
		// the rows' entries, the one after them, two seeks a value.
		{"g", "SELECT VALUE c.n FROM c WHERE c.g >= 3 AND c.g <= 6", where(func(n int) bool { return n%32 >= 3 && n%32 <= 6 }), 51 + 2*4, 51},
		{"s", "SELECT VALUE c.n FROM c WHERE c.s >= 's28'", where(func(n int) bool { return n%32 >= 28 }), 51 + 2*4, 51},
		{"s", "SELECT VALUE c.n FROM c WHERE STARTSWITH(c.s, 's3')", where(func(n int) bool { return n%32 >= 30 }), 51 + 2*2, 51},
		// 1,500 values, 300 in the partition: past 64 values, each page
		// collects the partition's 300 entries, where it read the
		// container's 1,500.
		{"n", "SELECT VALUE c.n FROM c WHERE c.n >= 8500", where(func(n int) bool { return n >= 8500 }), 65 + 300, 51},
	} {
		p := QueryParams{ItemRef: ref, Query: tc.query, MaxItemCount: 50}
		if !be.container(t).partsReady([]string{tc.path}) {
			if _, err := be.e.QueryItems(context.Background(), p); err != nil {
				t.Fatal(err)
			}
			drainIndexer(t, be.e.NewIndexer(nil))
			if !be.container(t).partsReady([]string{tc.path}) {
				t.Fatalf("%s: the partition entries of /%s are not built", tc.query, tc.path)
			}
		}
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.IndexSpan) {
				t.Errorf("%s: page 1 by %v, want the index span", tc.query, page.Plan)
			}
			// Page 1 counts the terms' entries for the planner too.
			if n > 0 && (page.IndexEntries > tc.entries || page.Examined > tc.records) {
				t.Errorf("%s: page %d read %d index entries and %d records for %d rows", tc.query, n+1, page.IndexEntries, page.Examined, len(page.Items))
			}
		})
		if !slices.Equal(got, tc.want) {
			t.Fatalf("case %d, %s: %d rows, want %d in _rid order", i, tc.query, len(got), len(tc.want))
		}
	}
}

// TestIntersectionPagesSkipAhead pages intersections of two terms whose
// entries come in _rid order value by value (tie entries across
// partitions, a partition's own and partition entries within one): each
// page steps and seeks through the two from its position to its last row,
// where it collected and sorted every entry of both terms.
func TestIntersectionPagesSkipAhead(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	items := make([]string, 0, 10_000)
	for n := range 10_000 {
		pk := fmt.Sprintf("p%d", n%40)
		if n%5 == 0 {
			pk = "big"
		}
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"%s","k":%d,"g":%d,"n":%d}`, n, pk, n%7, n%32, n))
	}
	be.seed(t, items...)
	const query = "SELECT VALUE c.n FROM c WHERE c.k = 3 AND c.g >= 3 AND c.g <= 6"
	rows := func(big bool) []string {
		var out []string
		for n := range 10_000 {
			if n%7 == 3 && n%32 >= 3 && n%32 <= 6 && (!big || n%5 == 0) {
				out = append(out, strconv.Itoa(n))
			}
		}
		return out
	}
	// A row here is one item in 56: between two rows each term holds
	// about eight entries, so a page of 20 steps through about 300, and
	// seeks each of the five values' spans. Collecting read 2,681 across
	// partitions, and 1,538 in the partition (the container's entries of
	// the range).
	const entries = 20*16 + 20
	for _, tc := range []struct {
		name string
		p    QueryParams
		want []string
	}{
		{"across partitions", QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: query, MaxItemCount: 20}, rows(false)},
		{"in a partition", QueryParams{ItemRef: batchRef(`["big"]`), Query: query, MaxItemCount: 20}, rows(true)},
	} {
		first, err := be.e.QueryItems(context.Background(), tc.p)
		if err != nil {
			t.Fatal(err)
		}
		if first.Plan == nil || first.Plan.Chosen.Access != plan.Intersect {
			t.Fatalf("%s: page 1 by %v, want the intersection", tc.name, first.Plan)
		}
		drainIndexer(t, be.e.NewIndexer(nil))
		got := drainRows(t, be.e, tc.p, func(n int, page *FeedPage) {
			if n > 0 && (page.IndexEntries > entries || page.Examined > 21) {
				t.Errorf("%s: page %d read %d index entries and %d records for %d rows", tc.name, n+1, page.IndexEntries, page.Examined, len(page.Items))
			}
		})
		if !slices.Equal(got, tc.want) {
			t.Fatalf("%s: %d rows, want %d in _rid order", tc.name, len(got), len(tc.want))
		}
	}
}

// TestThinScanPagesStepThroughTerms drains queries whose terms each hold
// many items: two (14% and 33%) holding few together (4.8%), one on a
// fifth of the items, one on array elements of a fifth. The first page
// tries a scan (plan.ScanFirstBounds), which read about 210 records for
// each page of 10 rows of the first to the end of the drain, and 50 of
// the others. A scan page that finds so few of its records passing asks
// for the terms' tie entries, and once they are built has the next page
// step through both terms, or read the one term's entries, instead
// (mergeAfterScan), from the scan's position.
func TestThinScanPagesStepThroughTerms(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	items := make([]string, 0, 10_000)
	var both, fifth []string
	for n := range 10_000 {
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","a":%d,"b":%d,"f":%d,"tags":["t%d","u"],"n":%d}`, n, n%40, n%7, n/7%9, n%5, n%5, n))
		if n%7 == 3 && n/7%9 >= 2 && n/7%9 <= 4 {
			both = append(both, strconv.Itoa(n))
		}
		if n%5 == 2 {
			fifth = append(fifth, strconv.Itoa(n))
		}
	}
	be.seed(t, items...)
	for _, tc := range []struct {
		query   string
		want    []string
		entries int // a stepping page's bound
	}{
		{"SELECT VALUE c.n FROM c WHERE c.a = 3 AND c.b BETWEEN 2 AND 4", both, 10*12 + 20},
		{"SELECT VALUE c.n FROM c WHERE c.f = 2", fifth, 12},
		{"SELECT VALUE c.n FROM c WHERE ARRAY_CONTAINS(c.tags, 't2')", fifth, 12},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: tc.query, MaxItemCount: 10}
		got := drainRows(t, be.e, p, func(pages int, page *FeedPage) {
			if pages == 0 {
				if page.Plan == nil || page.Plan.Chosen.Access != plan.Scan {
					t.Fatalf("%s: page 1 by %v, want a scan", tc.query, page.Plan)
				}
				drainIndexer(t, be.e.NewIndexer(nil))
			}
			// Page 2 scans on from page 1's position, and has page 3 step.
			if pages >= 2 && (page.Examined > 11 || page.IndexEntries > tc.entries) {
				t.Errorf("%s: page %d read %d records and %d index entries for %d rows", tc.query, pages+1, page.Examined, page.IndexEntries, len(page.Items))
			}
		})
		if !slices.Equal(got, tc.want) {
			t.Fatalf("%s: %d rows, want %d in _rid order", tc.query, len(got), len(tc.want))
		}
	}
}

// TestThinScanPagesCollectOnce drains queries whose one term the index
// serves only by collecting its entries (a range of many values, the
// items that have a path), each on a tenth of the items, spread through
// _rid order, across partitions and over each of four ranges with a
// sequence each. The first page tries a scan (plan.ScanFirstBounds),
// which fills a page of 10 rows in about 100 records; every page after it
// scanned on, so the drain read every record. Once the scan has cost what
// collecting the term's entries does (plan.CollectPays), the page
// collects them and keeps them for the pages after it (collectAfterScan),
// which read their rows' records alone.
func TestThinScanPagesCollectOnce(t *testing.T) {
	const n = 10_000
	items := make([]string, 0, n)
	for i := range n {
		gone := ""
		if i%10 == 4 {
			gone = fmt.Sprintf(`,"gone":%d`, i)
		}
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","v":%d,"a":%d,"b":%d,"n":%d%s}`, i, i%40, i*7919%n, i%17, i%19, i, gone))
	}
	for pi, parts := range []int{1, 4} {
		be := newBatchEnvIn(t, Config{Store: teststore.Open(t), Partitions: parts}, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
		be.seed(t, items...)
		for ci, tc := range []struct {
			query string
			keep  func(i int) bool
			// scans is how many of four ranges begin with a scan: the
			// others' own entries of the terms are few.
			scans int
		}{
			{"SELECT VALUE c.n FROM c WHERE IS_DEFINED(c.gone)", func(i int) bool { return i%10 == 4 }, 3},
			{"SELECT VALUE c.n FROM c WHERE c.v >= 3000 AND c.v < 4000", func(i int) bool { v := i * 7919 % n; return v >= 3000 && v < 4000 }, 4},
			// A union of two terms whose tie entries are not built.
			{"SELECT VALUE c.n FROM c WHERE c.a = 3 OR c.b = 7", func(i int) bool { return i%17 == 3 || i%19 == 7 }, 0},
		} {
			if !everyOther(pi + ci) {
				continue // each query over one of the partitionings
			}
			var want []int
			for i := range n {
				if tc.keep(i) {
					want = append(want, i)
				}
			}
			var got []int
			records, scanned := 0, 0
			for r := range parts {
				p := QueryParams{ItemRef: batchRef(""), RangeID: strconv.Itoa(r), CrossPartition: true, Query: tc.query, MaxItemCount: 10}
				collected, scan := -1, false
				rows := drainRows(t, be.e, p, func(pages int, page *FeedPage) {
					records += page.Examined
					if pages == 0 {
						// A range whose items hold few of the term's
						// entries may collect them from page 1.
						scan = page.Plan != nil && page.Plan.Chosen.Access == plan.Scan
					}
					if collected >= 0 && pages >= collected && (page.Examined > 11 || page.IndexEntries > 2) {
						t.Errorf("%s, range %d of %d: page %d read %d records and %d index entries for %d rows", tc.query, r, parts, pages+1, page.Examined, page.IndexEntries, len(page.Items))
					}
					if scan && collected < 0 && page.Continuation != "" && mustCursor(t, page.Continuation).access != plan.Scan {
						collected = pages + 1
					}
				})
				if scan {
					scanned++
					// The term's entries are estimated from the range's
					// share of them: where it holds more than the
					// others, the collection comes later.
					if collected < 0 || collected > 3*parts {
						t.Errorf("%s, range %d of %d: collected on page %d", tc.query, r, parts, collected+1)
					}
				}
				// In _rid order: each sequence's items as they were created.
				var last = -1
				for _, row := range rows {
					v, _ := strconv.Atoi(row)
					if v <= last {
						t.Fatalf("%s, range %d of %d: %d after %d", tc.query, r, parts, v, last)
					}
					got, last = append(got, v), v
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%s over %d ranges: %d rows, want %d", tc.query, parts, len(got), len(want))
			}
			if want := tc.scans; parts == 1 && scanned != 1 || parts > 1 && scanned != want {
				t.Errorf("%s over %d ranges: %d began with a scan", tc.query, parts, scanned)
			}
			t.Logf("%s over %d ranges: the drain read %d records", tc.query, parts, records)
			// A drain that scans throughout reads every record once.
			if records > n/4 {
				t.Errorf("%s over %d ranges: the drain read %d records for %d rows", tc.query, parts, records, len(want))
			}
		}
		if parts > 1 {
			continue
		}
		// Once the union's terms have their tie entries, the page after
		// the scan merges them from its position, without counting them.
		drainIndexer(t, be.e.NewIndexer(nil))
		q := "SELECT VALUE c.n FROM c WHERE c.a = 3 OR c.b = 7"
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: q, MaxItemCount: 10}
		drainRows(t, be.e, p, func(pages int, page *FeedPage) {
			switch {
			case pages == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.Scan || mustCursor(t, page.Continuation).access != plan.Union):
				t.Fatalf("%s: page 1 by %v, its token %v", q, page.Plan, mustCursor(t, page.Continuation).access)
			case pages > 0 && (page.Examined > 11 || page.IndexEntries > 40):
				t.Errorf("%s: page %d read %d records and %d index entries for %d rows", q, pages+1, page.Examined, page.IndexEntries, len(page.Items))
			}
		})
	}
}

// TestPartitionThinScanPagesStepThroughTerms drains queries in one large
// logical partition whose first page scans and finds few rows: the pages
// after it step through the term's entries from the scan's position (a
// location there, a sequence to the index paths). A range asks for its
// partition entries first. A term on the partition key, which holds for
// every item of the partition, is left to the scope. An equality's own
// entries come in the partition's scan order, so its first page reads
// them uncounted instead (plan.SpanFirst) and never scans.
func TestPartitionThinScanPagesStepThroughTerms(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	items := make([]string, 0, 10_200)
	for n := range 10_000 {
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"big","f":%d,"g":%d,"n":%d}`, n, n%5, n%10, n))
	}
	for n := range 200 {
		items = append(items, fmt.Sprintf(`{"id":"o%d","pk":"p%d","f":2,"g":3,"n":%d}`, n, n%20, n))
	}
	be.seed(t, items...)
	fifth := func(n int) bool { return n%5 == 2 }
	for _, tc := range []struct {
		query, key string
		keep       func(n int) bool
		// A stepping page's bounds; entries 0: it scans on.
		records, entries int
		spanFirst        bool
	}{
		{"SELECT VALUE c.n FROM c WHERE c.f = 2", `["big"]`, fifth, 11, 12, true},
		{"SELECT VALUE c.n FROM c WHERE c.pk = 'big' AND c.f = 2", "", fifth, 11, 12, true},
		{"SELECT VALUE c.n FROM c WHERE c.g >= 7 AND c.g <= 8", `["big"]`, func(n int) bool { return n%10 == 7 || n%10 == 8 }, 11, 15, false},
		// The filter, not the range, passes few rows: before the
		// range's partition entries, its pages scan on.
		{"SELECT VALUE c.n FROM c WHERE c.n >= 0 AND c.n < 3000 AND c.g % 5 = 2", `["big"]`, func(n int) bool { return n < 3000 && n%5 == 2 }, 0, 0, false},
		// With them, the range's values merge from page 1, and the
		// filter passes half the records read.
		{"SELECT VALUE c.n FROM c WHERE c.g >= 2 AND c.g <= 3 AND c.n % 5 = 2", `["big"]`, func(n int) bool { return n%10 == 2 }, 21, 25, true},
	} {
		p := QueryParams{ItemRef: batchRef(tc.key), Query: tc.query, MaxItemCount: 10}
		got := drainRows(t, be.e, p, func(pages int, page *FeedPage) {
			if pages == 0 {
				if first := page.Plan != nil && page.Plan.Chosen.Access == plan.IndexSpan && page.Plan.Chosen.First; tc.spanFirst != first {
					t.Fatalf("%s: page 1 by %v, span first %v", tc.query, page.Plan, tc.spanFirst)
				}
				if page.Plan == nil || !tc.spanFirst && page.Plan.Chosen.Access != plan.Scan {
					t.Fatalf("%s: page 1 by %v, want a scan", tc.query, page.Plan)
				}
				drainIndexer(t, be.e.NewIndexer(nil))
			}
			switch {
			case (pages >= 2 || tc.spanFirst) && tc.entries > 0 && (page.Examined > tc.records || page.IndexEntries > tc.entries):
				t.Errorf("%s: page %d read %d records and %d index entries for %d rows", tc.query, pages+1, page.Examined, page.IndexEntries, len(page.Items))
			case tc.entries == 0 && page.Examined < 40:
				t.Errorf("%s: page %d read %d records, want a scan's", tc.query, pages+1, page.Examined)
			}
		})
		var want []string
		for n := range 10_000 {
			if tc.keep(n) {
				want = append(want, strconv.Itoa(n))
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %d rows, want %d in _rid order", tc.query, len(got), len(want))
		}
	}
}

// TestRangeScanReadsItsOwnSequences drains SELECT * over each partition key
// range of a container of four, which keeps a sequence per range: a
// range's first page reads the _rid-order entries of its own sequence,
// not those of the ranges before it, and the ranges' rows together are
// every item once. Keys of both hash versions spread over the four
// ranges (partition.SplitV1), and a partition's query finds its items in
// the range that holds its key.
func TestRangeScanReadsItsOwnSequences(t *testing.T) {
	for _, pk := range []string{`{"paths":["/pk"],"kind":"Hash","version":2}`, `{"paths":["/pk"]}`} {
		clk := clock.NewManual(batchT0)
		e, err := New(Config{Store: teststore.Open(t), Clock: clk, Partitions: 4})
		if err != nil {
			t.Fatal(err)
		}
		createDBAndContainer(t, e, `{"id":"c","partitionKey":`+pk+`}`)
		be := &batchEnv{e: e, clock: clk}
		items := make([]string, 0, 4000)
		for n := range 4000 {
			items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","n":%d}`, n, n%97, n))
		}
		be.seed(t, items...)
		seen := map[string]int{}
		for _, rangeID := range []string{"0", "1", "2", "3"} {
			p := QueryParams{ItemRef: batchRef(""), RangeID: rangeID, CrossPartition: true, Query: "SELECT VALUE c.n FROM c", MaxItemCount: 10}
			rows := 0
			drainRows(t, e, p, func(n int, page *FeedPage) {
				if page.IndexEntries > 11 {
					t.Errorf("%s, range %s: page %d read %d entries for %d rows", pk, rangeID, n+1, page.IndexEntries, len(page.Items))
				}
				for _, it := range page.Items {
					seen[string(it)]++
				}
				rows += len(page.Items)
			})
			if rows < 500 {
				t.Errorf("%s: range %s holds %d of 4,000 items", pk, rangeID, rows)
			}
		}
		if len(seen) != 4000 {
			t.Fatalf("%s: %d items across the ranges, want 4000", pk, len(seen))
		}
		for v, k := range seen {
			if k != 1 {
				t.Fatalf("%s: item %s came %d times", pk, v, k)
			}
		}
		for _, key := range []string{"p0", "p5", "p96"} {
			rows := drainRows(t, e, QueryParams{ItemRef: batchRef(`["` + key + `"]`), Query: "SELECT VALUE c.n FROM c", MaxItemCount: 7}, nil)
			if want := 4000 / 97; len(rows) < want {
				t.Errorf("%s: partition %s returned %d items, want at least %d", pk, key, len(rows), want)
			}
		}
	}
}

// TestCollectingPagesScanRowsThatLieTogether drains ranges of many values
// across partitions, whose pages collect the range's entries and sort
// them. When the rows of every page ahead lie close together in _rid
// order (c.t, written in order: a range of times), the pages after the
// first scan from their position: each reads its rows' records and the
// _rid entries between them. When the rows spread over the container
// (c.u), or lie together at first and spread later (c.v), the pages go on
// reading the candidates the first page collected, which each page keeps
// for the next (keptCandidates), and none reads thousands of records for
// its rows.
func TestCollectingPagesScanRowsThatLieTogether(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	items := make([]string, 0, 10_000)
	var tail, spread, early []string
	for n := range 10_000 {
		v := -1
		if n < 1000 || n%100 == 0 {
			v = n
			early = append(early, strconv.Itoa(n))
		}
		u := n * 7919 % 10_000
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","t":%d,"u":%d,"v":%d,"n":%d}`, n, n%40, n, u, v, n))
		if n >= 9000 {
			tail = append(tail, strconv.Itoa(n))
		}
		if u >= 9000 {
			spread = append(spread, strconv.Itoa(n))
		}
	}
	be.seed(t, items...)
	for _, tc := range []struct {
		query string
		want  []string
		scans bool
	}{
		{"SELECT VALUE c.n FROM c WHERE c.t >= 9000", tail, true},
		{"SELECT VALUE c.n FROM c WHERE c.u >= 9000", spread, false},
		{"SELECT VALUE c.n FROM c WHERE c.v >= 0", early, false},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: tc.query, MaxItemCount: 50}
		got := drainRows(t, be.e, p, func(pages int, page *FeedPage) {
			if pages == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.IndexSpan) {
				t.Fatalf("%s: page 1 by %v, want an index span", tc.query, page.Plan)
			}
			switch {
			case page.Examined > 51:
				t.Errorf("%s: page %d read %d records for %d rows", tc.query, pages+1, page.Examined, len(page.Items))
			case tc.scans && pages > 0 && page.IndexEntries > 53:
				t.Errorf("%s: page %d read %d index entries for %d rows, want a scan from its position", tc.query, pages+1, page.IndexEntries, len(page.Items))
			case !tc.scans && pages == 0 && page.IndexEntries < len(tc.want):
				t.Errorf("%s: page %d read %d index entries, want the %d it collects", tc.query, pages+1, page.IndexEntries, len(tc.want))
			case !tc.scans && pages > 0 && page.IndexEntries > 1:
				t.Errorf("%s: page %d read %d index entries, want the candidates the page before kept", tc.query, pages+1, page.IndexEntries)
			}
		})
		if !slices.Equal(got, tc.want) {
			t.Fatalf("%s: %d rows, want %d in _rid order", tc.query, len(got), len(tc.want))
		}
	}
}

// TestThinScanListsTiesOnlyWhenTheyServe drains queries whose scan pages
// find few rows, and checks which paths they ask tie entries for. Not for
// a range of many values (10³ here): tie entries would not serve it (past
// maxRangeValues), and each listed path costs every write an entry. Not
// when a filter the index cannot serve (c.n % 7 = 3) is what passes few
// rows: the term holds many more items, each of which the steps would
// read by location. For a range of two values alone, yes.
func TestThinScanListsTiesOnlyWhenTheyServe(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	items := make([]string, 0, 10_000)
	for n := range 10_000 {
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","f":%d,"m":%d,"n":%d}`, n, n%40, n%10, n*7919%10_000, n))
	}
	be.seed(t, items...)
	for _, tc := range []struct {
		query, path string
		listed      bool
	}{
		{"SELECT VALUE c.n FROM c WHERE c.m < 1000", "m", false},
		{"SELECT VALUE c.n FROM c WHERE c.f IN (1, 2, 3) AND c.n % 7 = 3", "f", false},
		{"SELECT VALUE c.n FROM c WHERE c.f >= 1 AND c.f <= 2", "f", true},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: tc.query, MaxItemCount: 10}
		drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.Scan) {
				t.Fatalf("%s: page 1 by %v, want a scan", tc.query, page.Plan)
			}
		})
		drainIndexer(t, be.e.NewIndexer(nil))
		if got := be.container(t).tiesReady([]string{tc.path}); got != tc.listed {
			t.Errorf("%s: the tie entries of /%s built: %v, want %v", tc.query, tc.path, got, tc.listed)
		}
	}
}

// TestPrefixSpanPagesSeek pages equalities, IN lists, ranges of few values
// and intersections within a hierarchical partition key prefix. A value's
// entries hold the prefix's items by location, the prefix's scan order
// (partition by partition), so a page seeks to its position in each
// value's span and merges them by location, where it collected every entry
// of the prefix's values and sorted them by sequence (1,000 to 2,000 a
// page here). The rows are the scan's, in its order: a filter the index
// cannot serve (c.k + c.n * 0, on two paths) makes the planner scan.
func TestPrefixSpanPagesSeek(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2}}`)
	items := make([]string, 0, 10_000)
	for n := range 10_000 {
		items = append(items, fmt.Sprintf(`{"id":"i%d","t":"%s","u":"u%d","k":%d,"g":%d,"x":%d,"y":%d,"n":%d}`, n, []string{"a", "a", "a", "a", "b"}[n%5], n%60, n%20, n%7, n%7, n/7%9, n))
	}
	be.seed(t, items...)
	ref := batchRef(`["a"]`)
	for _, tc := range []struct {
		where, scanned string
		entries        int // a page's bound
		rows           int // a page's, when not 50
		first          int // page 1's bound on entries, when not entries
	}{
		{"c.k = 3", "c.k + c.n * 0 = 3", 52, 0, 0},
		{"c.k IN (2, 3)", "c.k + c.n * 0 IN (2, 3)", 53, 0, 0},
		{"c.k >= 2 AND c.k <= 4", "c.k + c.n * 0 >= 2 AND c.k + c.n * 0 <= 4", 51 + 2*3, 0, 0},
		// Page 1 steps through both from the start, uncounted: counted,
		// it read 2,009 entries.
		{"c.k = 3 AND c.g = 3", "c.k + c.n * 0 = 3 AND c.g + c.n * 0 = 3", 240, 0, 400},
		// Terms on 14% and 33% of the prefix and 4.8% together, in pages
		// of ten: page 1 steps through both as every page after it.
		{"c.x = 3 AND c.y BETWEEN 2 AND 4", "c.x + c.n * 0 = 3 AND c.y + c.n * 0 BETWEEN 2 AND 4", 280, 10, 0},
	} {
		p := QueryParams{ItemRef: ref, Query: "SELECT VALUE c.n FROM c WHERE " + tc.where, MaxItemCount: cmp.Or(tc.rows, 50)}
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n == 0 && (page.Plan == nil || page.Plan.Scope.Kind != plan.ScopePrefix || (page.Plan.Chosen.Access != plan.IndexSpan && page.Plan.Chosen.Access != plan.Intersect)) {
				t.Fatalf("%s: page 1 by %v, want an index path in the prefix", p.Query, page.Plan)
			}
			if page.Examined > 51 {
				t.Errorf("%s: page %d read %d records for %d rows", p.Query, n+1, page.Examined, len(page.Items))
			}
			bound := tc.entries
			if n == 0 {
				bound = cmp.Or(tc.first, bound)
			}
			if page.IndexEntries > bound {
				t.Errorf("%s: page %d read %d index entries for %d rows", p.Query, n+1, page.IndexEntries, len(page.Items))
			}
		})
		scan := QueryParams{ItemRef: ref, Query: "SELECT VALUE c.n FROM c WHERE " + tc.scanned, MaxItemCount: 1000}
		want := drainRows(t, be.e, scan, func(n int, page *FeedPage) {
			if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.Scan) {
				t.Fatalf("%s: page 1 by %v, want a scan", scan.Query, page.Plan)
			}
		})
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Fatalf("%s: %d rows, want %d in the prefix's scan order", p.Query, len(got), len(want))
		}
	}

	// A token whose position is a sequence, as a page that sorted by
	// sequence there made, is refused rather than misread.
	p := QueryParams{ItemRef: ref, Query: "SELECT VALUE c.n FROM c WHERE c.k = 3", MaxItemCount: 50}
	page, err := be.e.QueryItems(context.Background(), p)
	if err != nil || page.Continuation == "" {
		t.Fatalf("page 1: %v, token %q", err, page.Continuation)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(page.Continuation, cursorPrefix))
	if err != nil || len(raw) < 9 {
		t.Fatalf("token %q: %v", page.Continuation, err)
	}
	cur, derr := parseCursor(page.Continuation, binary.BigEndian.Uint64(raw[1:]))
	if derr != nil || len(cur.pos) < 10 {
		t.Fatalf("token %q: %v, position %x", page.Continuation, derr, cur.pos)
	}
	cur.pos = seqPos(cur.pos)
	p.Continuation = cur.String()
	var ee *Error
	if _, err := be.e.QueryItems(context.Background(), p); !errors.As(err, &ee) || ee.Code != BadRequest {
		t.Fatalf("a sequence for a position: %v, want 400", err)
	}
}

// TestAnOrBesideAWideTerm: an OR of few items beside a term that holds
// half the container is counted before the term, and bounds it: the
// pages read the OR's items, where the first page counted the term to
// the probe and tried a scan first, the ORDER BY walked a path reading
// the record of nearly every item (its estimate knew the term alone),
// and the COUNT counted the term whole.
func TestAnOrBesideAWideTerm(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	for i := range 20000 {
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","t":"t%d","a":%d,"b":%d}`, i, i%100, i%2, (i*7919)%10007%1000, (i*104729)%10009%1000))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	for _, tc := range []struct {
		query            string
		entries, records int // at most, over the drain
	}{
		// 22 rows of the OR's 44 items; before: 8,584 entries and
		// 1,021 records, 32,923 and 17,112, and 7,607 and 44.
		{`SELECT c.id FROM c WHERE c.t = 't1' AND (c.a = 5 OR c.b = 7)`, 200, 100},
		{`SELECT c.id FROM c WHERE c.t = 't1' AND (c.a = 5 OR c.b = 7) ORDER BY c.id`, 300, 150},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.t = 't1' AND (c.a = 5 OR c.b = 7)`, 200, 50},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 10, Query: tc.query}
		entries, records := 0, 0
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			entries += page.IndexEntries
			records += page.Examined
			if n == 0 && page.Plan != nil && page.Plan.Chosen.Access != plan.Union {
				t.Errorf("%s: the first page's plan, want the union:\n%s", tc.query, page.Plan.Explain())
			}
		})
		if want := oracleRows(t, tc.query, docs, ""); len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: rows %.200v, want %.200v", tc.query, got, want)
		}
		if entries > tc.entries || records > tc.records {
			t.Errorf("%s: read %d index entries and %d records, want at most %d and %d", tc.query, entries, records, tc.entries, tc.records)
		}
	}
}

// TestUnionPages: an OR of terms on two paths reads the items their spans
// name, across partitions and in one, page by page in the order a scan
// returns them; the pages read about their own records (page 1 a scan's
// first two pages' worth too), where they read every record of the scope.
// An OR that holds the first items the scan reads is read by the scan.
func TestUnionPages(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	items := make([]string, 0, 4_000)
	for n := range 4_000 {
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","a":%d,"b":"b%d","n":%d}`, n, n%8, n%40, n%50, n))
	}
	be.seed(t, items...)
	for _, tc := range []struct {
		where string
		key   string
		rows  int
		// the union's items that fail the rest of the filter: a page
		// reads their records too
		fail int
	}{
		{"c.a = 7 OR c.b = 'b3'", "", 180, 0},
		{"c.b = 'b9' OR c.a IN (1, 2) OR c.n >= 3970", "", 310, 0},
		{"(c.a = 7 OR c.b = 'b3') AND c.n >= 1000", "", 135, 45},
		{"c.a = 7 OR c.b = 'b3'", `["p3"]`, 20, 0},
	} {
		p := QueryParams{ItemRef: batchRef(tc.key), RangeID: "0", CrossPartition: true, Query: "SELECT VALUE c.n FROM c WHERE " + tc.where, MaxItemCount: 25}
		if tc.key != "" {
			p.RangeID = ""
		}
		var records int
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.Union) {
				t.Fatalf("%s: page %d by %v, want the union", tc.where, n+1, page.Plan)
			}
			// Page 1 tries a scan first, for two pages' worth of
			// records; the last pages, whose rows lie together, may
			// scan them (scanAfterCollect).
			if page.Examined > 3*(p.MaxItemCount+1)+tc.fail {
				t.Errorf("%s: page %d read %d records for %d rows", tc.where, n+1, page.Examined, len(page.Items))
			}
			records += page.Examined
		})
		// The same filter as the evaluator reads it: no term of it is an
		// OR at the top.
		e := p
		e.Query = "SELECT VALUE c.n FROM c WHERE NOT NOT (" + tc.where + ")"
		want := drainRows(t, be.e, e, nil)
		if !slices.Equal(got, want) || len(got) != tc.rows {
			t.Fatalf("%s: %d rows, the evaluation %d, want %d", tc.where, len(got), len(want), tc.rows)
		}
		if records > len(got)+len(got)/2+tc.fail+2*(p.MaxItemCount+1) {
			t.Errorf("%s: %d records read for %d rows", tc.where, records, len(got))
		}
	}
	p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: "SELECT VALUE c.n FROM c WHERE c.b = 'b9' OR c.n < 30", MaxItemCount: 25}
	page, err := be.e.QueryItems(context.Background(), p)
	if err != nil || page.Plan == nil || page.Plan.Chosen.Access != plan.Scan || page.Examined > 26 || page.IndexEntries > 26 {
		t.Fatalf("%s: %v, plan %v, %d records, %d entries", p.Query, err, page.Plan, page.Examined, page.IndexEntries)
	}
	// Where its rows thin out, the scan hands on to the union
	// (unionAfterScan): after the page that found them thin (a page's
	// worth of rows, one item in 50), the drain reads about its rows'
	// records, where it read all 4,000.
	records := 0
	got := drainRows(t, be.e, p, func(_ int, page *FeedPage) { records += page.Examined })
	e := p
	e.Query = "SELECT VALUE c.n FROM c WHERE NOT NOT (c.b = 'b9' OR c.n < 30)"
	if want := drainRows(t, be.e, e, nil); !slices.Equal(got, want) || len(got) != 109 {
		t.Fatalf("%s: %d rows, the evaluation %d", p.Query, len(got), len(want))
	}
	if records > 1300 {
		t.Errorf("%s: %d records read for %d rows", p.Query, records, len(got))
	}
}

// TestUnionPagesMerge: a union across partitions whose terms hold many
// entries asks for their tie entries, as an index span does; once they are
// built, each page merges the terms' entries from its position and reads
// about its own, where it collected every term's entries (1,125 here).
func TestUnionPagesMerge(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	items := make([]string, 0, 10_000)
	for n := range 10_000 {
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","x":%d,"y":%d,"n":%d}`, n, n%40, n%16, n%20, n))
	}
	be.seed(t, items...)
	p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: "SELECT VALUE c.n FROM c WHERE c.x = 3 OR c.y = 5", MaxItemCount: 50}
	first, err := be.e.QueryItems(context.Background(), p)
	if err != nil || first.Plan == nil || first.Plan.Chosen.Access != plan.Union {
		t.Fatalf("%s: page 1 by %v (%v), want the union", p.Query, first.Plan, err)
	}
	drainIndexer(t, be.e.NewIndexer(nil))
	if c := be.container(t); !c.tiesReady([]string{"x"}) || !c.tiesReady([]string{"y"}) {
		t.Fatal("the tie entries of /x and /y are not built")
	}
	got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
		if n > 0 && page.IndexEntries > 56 {
			t.Errorf("page %d read %d index entries for %d rows", n+1, page.IndexEntries, len(page.Items))
		}
	})
	if want := numbersWhere(10_000, 80, []int{3, 19, 35, 51, 67, 5, 25, 45, 65}); !slices.Equal(got, want) {
		t.Fatalf("%d rows, want %d in _rid order", len(got), len(want))
	}
}

// A query served whole (QueryParams.Whole, the Data Explorer's) over a
// container of four ranges answers what the gateway refuses to serve
// there, with the rows a single range would give, page by page.
func TestQueryServedWholeAcrossRanges(t *testing.T) {
	clk := clock.NewManual(batchT0)
	e, err := New(Config{Store: teststore.Open(t), Clock: clk, Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	createDBAndContainer(t, e, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	be := &batchEnv{e: e, clock: clk}
	for n := range 200 {
		be.seed(t, fmt.Sprintf(`{"id":"i%d","pk":"p%d","n":%d,"g":%d}`, n, n%31, n, n%3))
	}
	tests := []struct {
		query string
		want  []string
	}{
		{"SELECT VALUE COUNT(1) FROM c", []string{"200"}},
		{"SELECT TOP 3 VALUE c.n FROM c ORDER BY c.n DESC", []string{"199", "198", "197"}},
		{"SELECT VALUE c.n FROM c WHERE c.n < 12 ORDER BY c.n", []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}},
		{"SELECT DISTINCT VALUE c.g FROM c ORDER BY c.g", []string{"0", "1", "2"}},
		{"SELECT c.g, COUNT(1) AS k FROM c GROUP BY c.g", []string{`{"g":0,"k":67}`, `{"g":1,"k":67}`, `{"g":2,"k":66}`}},
		{"SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 190 LIMIT 5", []string{"190", "191", "192", "193", "194"}},
	}
	for _, tc := range tests {
		p := QueryParams{ItemRef: batchRef(""), CrossPartition: true, Query: tc.query, MaxItemCount: 5}
		if _, err := e.QueryItems(context.Background(), p); !isCode(err, BadRequest) {
			t.Errorf("%s: without Whole, %v; want the gateway's refusal", tc.query, err)
		}
		p.Whole = true
		got := drainRows(t, e, p, nil)
		if tc.query == "SELECT c.g, COUNT(1) AS k FROM c GROUP BY c.g" {
			slices.Sort(got)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.query, got, tc.want)
		}
	}
}

// A query or read feed scoped to an EPK span (x-ms-start-epk and
// x-ms-end-epk with a range's id, as an SDK sends a hierarchical key's
// prefix or a feed range) returns the items of that span alone, on one
// range and on four; a span that covers the range returns all of it.
func TestQueryAndFeedScopedToEPKSpan(t *testing.T) {
	for _, parts := range []int{1, 4} {
		clk := clock.NewManual(batchT0)
		e, err := New(Config{Store: teststore.Open(t), Clock: clk, Partitions: parts})
		if err != nil {
			t.Fatal(err)
		}
		createDBAndContainer(t, e, `{"id":"c","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2}}`)
		be := &batchEnv{e: e, clock: clk}
		for n := range 60 {
			be.seed(t, fmt.Sprintf(`{"id":"i%d","t":"t%d","u":"u%d","n":%d}`, n, n%3, n%7, n))
		}
		c := be.containerOf(t, "c")
		min, max, err := partition.EPKRange(c.hashDefinition(), partition.Key{partition.String("t1")})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for n := 1; n < 60; n += 3 {
			want = append(want, fmt.Sprintf(`"i%d"`, n))
		}
		rangeID := ""
		for _, rg := range e.rangesOf(c) {
			if rg.Min <= min && (rg.Max == partition.MaxEPK || min < rg.Max) {
				rangeID = rg.ID
			}
		}
		sorted := func(rows []string) []string { slices.Sort(rows); return rows }
		q := QueryParams{ItemRef: batchRef(""), RangeID: rangeID, MinEPK: min, MaxEPK: max, MaxItemCount: 4}
		for _, text := range []string{"SELECT VALUE c.id FROM c", "SELECT VALUE c.id FROM c WHERE c.n >= 0", "SELECT VALUE c.id FROM c ORDER BY c.n"} {
			q.Query = text
			if got := sorted(drainRows(t, e, q, nil)); !slices.Equal(got, sorted(slices.Clone(want))) {
				t.Errorf("%d ranges, %s over the span of t1: %v, want %v", parts, text, got, want)
			}
		}
		q.Query = "SELECT VALUE COUNT(1) FROM c"
		if got := drainRows(t, e, q, nil); !slices.Equal(got, []string{"20"}) {
			t.Errorf("%d ranges, COUNT over the span of t1: %v, want 20", parts, got)
		}
		var feed []string
		fp := FeedParams{ItemRef: batchRef(""), RangeID: rangeID, MinEPK: min, MaxEPK: max, MaxItemCount: 7}
		for {
			page, err := e.ReadFeed(context.Background(), fp)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				var d struct{ ID string }
				if err := json.Unmarshal(it, &d); err != nil {
					t.Fatal(err)
				}
				feed = append(feed, `"`+d.ID+`"`)
			}
			if page.Continuation == "" {
				break
			}
			fp.Continuation = page.Continuation
		}
		if got := sorted(feed); !slices.Equal(got, sorted(slices.Clone(want))) {
			t.Errorf("%d ranges, read feed over the span of t1: %v, want %v", parts, got, want)
		}
		// A span covering the range is the range.
		whole := QueryParams{ItemRef: batchRef(""), RangeID: rangeID, Query: "SELECT VALUE c.id FROM c", MaxItemCount: 100}
		all := drainRows(t, e, whole, nil)
		whole.MinEPK, whole.MaxEPK = "", "FF"
		if got := drainRows(t, e, whole, nil); !slices.Equal(got, all) {
			t.Errorf("%d ranges: a span covering the range gave %d rows, the range %d", parts, len(got), len(all))
		}
	}
}

// TestPlainStreamPagesFilterOnce drains ORDER BY pages beside an equality
// on another path that holds a third of the items, without a composite
// of the two: the first page walks the ORDER BY path's index plain, which
// reads three records for each row, where collecting the equality's
// entries first would cost more than the page. Every page after it walked
// plain too. Once the records read for nothing have cost what collecting
// the entries does (plan.FilterPays), a page collects them and hands on
// the filtered stream (filterAfterWalk), whose pages read their rows'
// records alone.
func TestPlainStreamPagesFilterOnce(t *testing.T) {
	const n = 10_000
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	items := make([]string, 0, n)
	var want []int
	for i := range n {
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","k":%d,"n":%d}`, i, i%40, i%3, i*7919%n))
		if i%3 == 1 {
			want = append(want, i*7919%n)
		}
	}
	slices.Sort(want)
	be.seed(t, items...)
	// The ORDER BY path's absence entries, which a first page asks for,
	// name the documents without it (none) for the pages that reach them.
	drainRows(t, be.e, QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: "SELECT VALUE c.n FROM c ORDER BY c.n", MaxItemCount: 10}, nil)
	drainIndexer(t, be.e.NewIndexer(nil))
	for _, desc := range []bool{false, true} {
		q := "SELECT VALUE c.n FROM c WHERE c.k = 1 ORDER BY c.n"
		w := slices.Clone(want)
		if desc {
			q += " DESC"
			slices.Reverse(w)
		}
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: q, MaxItemCount: 10}
		records, filtered := 0, -1
		rows := drainRows(t, be.e, p, func(pages int, page *FeedPage) {
			records += page.Examined
			if pages == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.OrderedStream) {
				t.Fatalf("%s: page 1 by %v, want the plain stream", q, page.Plan)
			}
			if filtered >= 0 && pages >= filtered && page.Examined > 11 {
				t.Errorf("%s: page %d read %d records for %d rows", q, pages+1, page.Examined, len(page.Items))
			}
			if filtered < 0 && page.Continuation != "" && mustCursor(t, page.Continuation).access == plan.FilteredStream {
				filtered = pages + 1
			}
		})
		var got []int
		for _, r := range rows {
			v, _ := strconv.Atoi(r)
			got = append(got, v)
		}
		if !slices.Equal(got, w) {
			t.Fatalf("%s: %d rows, want %d in order", q, len(got), len(w))
		}
		t.Logf("%s: filtered from page %d; the drain read %d records", q, filtered+1, records)
		// A plain drain reads every record once.
		if filtered < 0 || filtered > 20 || records > len(w)*13/10 {
			t.Errorf("%s: filtered from page %d; the drain read %d records for %d rows", q, filtered+1, records, len(w))
		}
	}
}

// TestIntersectionFirstPages pages filters of two terms whose entries come
// in the scan order (the paths' tie entries over the container; a
// partition's own entries of an equality), which no composite index
// holds: page 1 steps through the two spans together from the start,
// uncounted (spanFirst), as every page after it does, so it reads about a
// page's records and the entries between its rows, where counting both
// terms first read every entry of each. A query's first page, counted
// before the terms' tie entries are built, asks for those of both, even
// where it reads one term's span. The rows are the scan's, in its order: a
// filter the index cannot serve (c.k + c.n * 0, on two paths) makes the planner scan.
func TestIntersectionFirstPages(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	items := make([]string, 0, 12_000)
	for n := range 12_000 {
		pk := "big"
		if n%2 == 1 {
			pk = fmt.Sprintf("p%d", n%50)
		}
		// h grows with the write order: its high values' items come last.
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"%s","k":%d,"m":%d,"h":%d,"n":%d}`, n, pk, n%7, n%17, n/120, n))
	}
	be.seed(t, items...)
	for _, tc := range []struct {
		where, scanned, key string
		rows, entries       int // a page's size and its bound on entries
	}{
		// Most items hold the range: counted, page 1 read the span of
		// the equality and asked for the tie entries of both.
		{"c.k = 3 AND c.m >= 2", "c.k + c.n * 0 = 3 AND c.m + c.n * 0 >= 2", "", 50, 460},
		{"c.k = 3 AND c.m = 5", "c.k + c.n * 0 = 3 AND c.m + c.n * 0 = 5", "", 10, 280},
		// The items of high h lie last: page 1 seeks past those before.
		{"c.k = 3 AND c.h >= 97", "c.k + c.n * 0 = 3 AND c.h + c.n * 0 >= 97", "", 10, 90},
		{"c.k IN (1, 2) AND c.m BETWEEN 3 AND 5", "c.k + c.n * 0 IN (1, 2) AND c.m + c.n * 0 BETWEEN 3 AND 5", "", 10, 120},
		{"c.k = 3 AND c.m = 5", "c.k + c.n * 0 = 3 AND c.m + c.n * 0 = 5", `["big"]`, 10, 280},
	} {
		p := QueryParams{ItemRef: batchRef(tc.key), Query: "SELECT VALUE c.n FROM c WHERE " + tc.where, MaxItemCount: tc.rows}
		if tc.key == "" {
			p.RangeID, p.CrossPartition = "0", true
		}
		if _, err := be.e.QueryItems(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		drainIndexer(t, be.e.NewIndexer(nil))
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.Intersect || !page.Plan.Chosen.First) {
				t.Fatalf("%s (key %s): page 1 by %v, want an intersection first", p.Query, tc.key, page.Plan)
			}
			if page.Examined > tc.rows+1 || page.IndexEntries > tc.entries {
				t.Errorf("%s (key %s): page %d read %d records and %d index entries for %d rows", p.Query, tc.key, n+1, page.Examined, page.IndexEntries, len(page.Items))
			}
		})
		scan := p
		scan.Query, scan.MaxItemCount = "SELECT VALUE c.n FROM c WHERE "+tc.scanned, 1000
		want := drainRows(t, be.e, scan, func(n int, page *FeedPage) {
			if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.Scan) {
				t.Fatalf("%s: page 1 by %v, want a scan", scan.Query, page.Plan)
			}
		})
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Fatalf("%s (key %s): %d rows, want %d in the scan's order", p.Query, tc.key, len(got), len(want))
		}
	}
}

// TestRangeUnderAPrefixReadsItsPartitions checks a range of many values
// under a hierarchical prefix of a few partitions, once the path's
// partition entries are built (a first page asks for them): counting it,
// collecting it and counting its items read the prefix's partitions'
// entries of the range (prefixRange), where they read the container's,
// ten times as many here (the prefix holds a tenth of the items), and a
// GROUP BY's counts under the range read a record a group. The rows are
// the scan's, in its order, and the counts the evaluation's. A prefix
// of more partitions than a walk merges reads the container's entries, as
// does every prefix over PostgreSQL (prefixparts.go).
func TestRangeUnderAPrefixReadsItsPartitions(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2}}`)
	var docs []string
	for i := range 8_000 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%05d","t":"t%d","u":"u%d","k":%d,"s":"s%04d","g":%d}`, i, i%10, i%200, i*37%5000, i*53%4000, i%7))
	}
	for i := range 2 * maxMergedParts {
		docs = append(docs, fmt.Sprintf(`{"id":"w%04d","t":"wide","u":"u%d","k":%d,"s":"s%04d","g":%d}`, i, i, 4000+i*7%1000, i, i%7))
	}
	be.seed(t, docs...)
	few := teststore.Backend() != "postgres"
	for _, tc := range []struct {
		prefix, where, scanned string
		merged                 bool
	}{
		{"t1", "c.k > 4000", "c.k + 0 > 4000", few},
		{"t1", "c.k >= 100 AND c.k < 1100", "c.k + 0 >= 100 AND c.k + 0 < 1100", few},
		{"t1", "STARTSWITH(c.s, 's1')", "STARTSWITH(c.s || '', 's1')", few},
		{"wide", "c.k > 4000", "c.k + 0 > 4000", false},
	} {
		ref := batchRef(`["` + tc.prefix + `"]`)
		p := QueryParams{ItemRef: ref, Query: "SELECT VALUE c.id FROM c WHERE " + tc.where, MaxItemCount: 50}
		be.orderReady(t, p)
		scan := QueryParams{ItemRef: ref, Query: "SELECT VALUE c.id FROM c WHERE " + tc.scanned, MaxItemCount: 1000}
		want := drainRows(t, be.e, scan, nil)
		// The prefix's entries of the range, its partitions' counts, and
		// the values' first entries (a range of few values merges them).
		bound := len(want) + maxMergedParts + 65
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n == 0 && tc.merged && page.IndexEntries > bound {
				t.Errorf("%s under %s: page 1 read %d index entries; the prefix holds %d items in the range", p.Query, tc.prefix, page.IndexEntries, len(want))
			}
		})
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s under %s: %d rows, want %d in the prefix's scan order", p.Query, tc.prefix, len(got), len(want))
		}
		count := QueryParams{ItemRef: ref, Query: "SELECT VALUE COUNT(1) FROM c WHERE " + tc.where}
		page, err := be.e.QueryItems(context.Background(), count)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 1 || string(page.Items[0]) != strconv.Itoa(len(want)) {
			t.Errorf("%s under %s: %s, want %d", count.Query, tc.prefix, page.Items, len(want))
		}
		if tc.merged && (page.Examined > 0 || page.IndexEntries > bound) {
			t.Errorf("%s under %s: %d records, %d index entries", count.Query, tc.prefix, page.Examined, page.IndexEntries)
		}
		// A GROUP BY's counts under the range: from the group path's
		// entries at the locations the range's entries name, a record a
		// group, where it read every item under the prefix.
		group := QueryParams{ItemRef: ref, Query: "SELECT c.g, COUNT(1) AS n FROM c WHERE " + tc.where + " GROUP BY c.g"}
		be.orderReady(t, group)
		page, err = be.e.QueryItems(context.Background(), group)
		if err != nil {
			t.Fatal(err)
		}
		scanned := QueryParams{ItemRef: ref, Query: "SELECT c.g, COUNT(1) AS n FROM c WHERE " + tc.scanned + " GROUP BY c.g"}
		var gotGroups []string
		for _, it := range page.Items {
			gotGroups = append(gotGroups, string(it))
		}
		wantGroups := drainRows(t, be.e, scanned, nil)
		slices.Sort(gotGroups)
		slices.Sort(wantGroups)
		if len(wantGroups) != 7 || !slices.Equal(gotGroups, wantGroups) {
			t.Errorf("%s under %s: %v, want %v", group.Query, tc.prefix, gotGroups, wantGroups)
		}
		if tc.merged && page.Examined > len(wantGroups) {
			t.Errorf("%s under %s: %d records for %d groups", group.Query, tc.prefix, page.Examined, len(wantGroups))
		}
	}
}

// A composite index's span under a hierarchical prefix of a few logical
// partitions reads the prefix's partitions' composite entries, merged
// (prefixComposite), where the composite's entries hold every
// partition's: counting the span and collecting it read the prefix's
// entries, not the container's, for a page or a COUNT, which reads no
// record.
func TestCompositeUnderAPrefixReadsItsPartitions(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2},
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/g"},{"path":"/k"}]]}}`)
	var docs []string
	for i := range 8_000 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%05d","t":"t%d","u":"u%d","k":%d,"g":%d}`, i, i%20, i%200, i*37%5000, i%7))
	}
	be.seed(t, docs...)
	few := teststore.Backend() != "postgres"
	ref := batchRef(`["t1"]`)
	for _, tc := range []struct {
		where   string
		counted bool // the COUNT is counted from the composite's entries alone
	}{
		{"c.g = 3 AND c.k > 2000", true},
		{"c.g = 3 AND c.k >= 1000 AND c.k < 3000", true},
		// The composite's span bounds only the IN list, not the range.
		{"c.g IN (2, 5) AND c.k < 100", false},
	} {
		where := tc.where
		p := QueryParams{ItemRef: ref, Query: "SELECT VALUE c.id FROM c WHERE " + where, MaxItemCount: 100}
		count := QueryParams{ItemRef: ref, Query: "SELECT VALUE COUNT(1) FROM c WHERE " + where}
		be.orderReady(t, p)
		scanned := strings.NewReplacer("c.g", "(c.g + 0)", "c.k", "(c.k + 0)").Replace(where)
		want := drainRows(t, be.e, QueryParams{ItemRef: ref, Query: "SELECT VALUE c.id FROM c WHERE " + scanned, MaxItemCount: 1000}, nil)
		wantCount := drainRows(t, be.e, QueryParams{ItemRef: ref, Query: "SELECT VALUE COUNT(1) FROM c WHERE " + scanned}, nil)
		top := QueryParams{ItemRef: ref, Query: "SELECT TOP 5 VALUE c.id FROM c WHERE " + where + " ORDER BY c.g, c.k", MaxItemCount: 100}
		wantTop := drainRows(t, be.e, QueryParams{ItemRef: ref, Query: "SELECT TOP 5 VALUE c.id FROM c WHERE " + scanned + " ORDER BY c.g, c.k", MaxItemCount: 100}, nil)
		for _, q := range []struct {
			p    QueryParams
			want []string
		}{{p, want}, {count, wantCount}, {top, wantTop}} {
			got := drainRows(t, be.e, q.p, func(n int, page *FeedPage) {
				// The terms' entries under t1 (400 items in 10
				// partitions), counted and collected, and the
				// partitions' counts: the container's entries of the
				// composite's span alone are 1,352 for the first.
				if n == 0 && few && page.IndexEntries > 400+maxMergedParts {
					t.Errorf("%s under t1: page 1 read %d index entries: %s", q.p.Query, page.IndexEntries, page.Plan.Explain())
				}
				if few && tc.counted && q.p.Query == count.Query && page.Examined > 0 {
					t.Errorf("%s under t1: %d records: %s", q.p.Query, page.Examined, page.Plan.Explain())
				}
			})
			if len(q.want) == 0 || !slices.Equal(got, q.want) {
				t.Errorf("%s under t1: %.100v, want %.100v", q.p.Query, got, q.want)
			}
		}
	}
}

// An IN list on a composite's leading path fixes it to each of its
// values, a span each (plan.CompositeUses): the span of c.st IN ('a',
// 'c') AND c.ts >= 7000 under (/st, /ts) holds the rows' entries, where
// it held every entry of 'a' and 'c' and told the rows by their keys.
func TestAnInListFixesACompositesPath(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"indexingPolicy":{"indexingMode":"consistent",
		"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/st","order":"ascending"},{"path":"/ts","order":"ascending"}]]}}`)
	var items []string
	for i := range 8000 {
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","st":"%c","ts":%d}`, i, i%40, 'a'+i%8, (i*7919)%8000))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	for _, tc := range []struct {
		query   string
		access  plan.Access
		entries int // at most, over every page
	}{
		// 250 rows: the composite's span collected as it is counted.
		{`SELECT c.id FROM c WHERE c.st IN ('a', 'c') AND c.ts >= 7000`, plan.CompositeSpan, 260},
		// The span counted as far as the walk costs, and walked.
		{`SELECT TOP 10 c.id, c.st, c.ts FROM c WHERE c.st IN ('b', 'd', 'f') AND c.ts < 5000 ORDER BY c.st DESC, c.ts DESC`, plan.CompositeWalk, 200},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.st IN ('a', 'c') AND c.ts >= 7000`, plan.IndexCount, 260},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 50, Query: tc.query}
		entries := 0
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			entries += page.IndexEntries
			if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != tc.access) {
				t.Errorf("%s: the first page's plan is %v, want %v", tc.query, page.Plan, tc.access)
			}
		})
		if want := oracleRows(t, tc.query, docs, ""); len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: rows %.200v, want %.200v", tc.query, got, want)
		}
		if entries > tc.entries {
			t.Errorf("%s: read %d index entries, want at most %d", tc.query, entries, tc.entries)
		}
	}
}

// A scan page beside an equality and a range of many values (c.h = 1 AND
// c.n < 500: a tenth of the items and half of them) scanned on to the
// scope's end, as the range's entries would be collected and the two
// were not stepped through together: the drain read every record for a
// twentieth of them. Once the drain has scanned what counting the
// equality's entries costs, and finds it holding few enough of the
// scope's items, the next page steps through the equality alone
// (mergeAfterScan), meeting the range on the records.
func TestThinScanPagesStepThroughTheirEquality(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	for i := range 20000 {
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d,"h":%d}`, i, i%50, i%1000, i%10))
	}
	be.seed(t, items...)
	q := "SELECT c.id FROM c WHERE c.h = 1 AND c.n < 500"
	p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 20, Query: q}
	be.orderReady(t, p)
	records := 0
	got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
		if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.Scan) {
			t.Fatalf("page 1 by %v, want a scan", page.Plan)
		}
		records += page.Examined
	})
	if want := oracleRows(t, q, parseItems(t, items), ""); len(want) != 1000 || !slices.Equal(got, want) {
		t.Fatalf("%d rows, want %d in _rid order", len(got), len(want))
	}
	// The equality's 2,000 items, and the scan's first pages.
	if records > 3500 {
		t.Errorf("the drain read %d records for 1,000 rows", records)
	}
}

// An OR of wide terms beside a range (a hundredth and a tenth of 20,000
// items, beside a tenth) has its items intersected with the range's
// before any is read (plan.Path.Beside): the pages read their rows'
// records, from a collection kept for them, where the range's span read
// the records of all of its 2,000 items (2,900 records a drain in pages
// of 20). Forgotten between pages, the collection is made again.
func TestAnOrIntersectedWithATerm(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	for i := range 20000 {
		u := hotEvery(i, 100)
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d,"u":"%s","h":%d}`, i, i%50, i%1000, u, i%10))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	q := `SELECT c.id FROM c WHERE (c.u = 'hot' OR c.h = 2) AND c.n < 100`
	p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 20, Query: q}
	be.orderReady(t, p)
	want := oracleRows(t, q, docs, "")
	for drop := range 2 {
		records := 0
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.Union || len(page.Plan.Chosen.Beside) != 1) {
				t.Errorf("the first page chose %v, want the OR's items intersected with the range's", page.Plan)
			}
			if n > 0 {
				records += page.Examined
			}
			if drop == 1 {
				be.e.kept.forget(time.Now().Add(time.Hour))
			}
		})
		if len(want) != 220 || !slices.Equal(got, want) {
			t.Errorf("kept dropped %v: %d rows, want %d", drop == 1, len(got), len(want))
		}
		// The pages after the first (which tries a scan) read their
		// rows' records and the one past each.
		if records > 220+20 {
			t.Errorf("kept dropped %v: the pages after the first read %d records", drop == 1, records)
		}
	}
}

// A filter no index span answers, on one path (CONTAINS, a function of the
// value, arithmetic), reads the path's entries and the records of the
// items whose value passes, not every record (plan.ValueScan); where most
// items pass, or documents without the path may, the scope is scanned.
// The first page tries a scan first, for two pages' records; the pages
// after it read their rows' records, from the locations kept or
// collected again.
func TestValueScan(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	for i := range 10000 {
		extra := ""
		if i%7 == 0 {
			extra = `,"x":"set"`
		}
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d,"w":%s,"u":"%s"%s}`, i, i%50, i%1000, wValue(i), strings.ToUpper(hotEvery(i, 10)), extra))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	// A COUNT of such a filter is counted from the entries: the record
	// of an item only where the index does not hold its value (an
	// array's or an object's, five each here).
	for _, tc := range []struct {
		query   string
		records int
	}{
		{`SELECT VALUE COUNT(1) FROM c WHERE CONTAINS(c.w, '77')`, 10},
		{`SELECT VALUE COUNT(1) FROM c WHERE LOWER(c.u) = 'hot'`, 0},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.n * 2 = 40 OR ToString(c.n) = '999'`, 0},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: tc.query}
		page, err := be.e.QueryItems(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		want := oracleRows(t, tc.query, docs, "")
		if len(page.Items) != 1 || string(page.Items[0]) != want[0] {
			t.Errorf("%s: %s, want %v", tc.query, page.Items, want)
		}
		if page.Examined != tc.records || page.Plan == nil || page.Plan.Chosen.Access != plan.IndexCount {
			t.Errorf("%s: %d records by %v, want %d counted by the index", tc.query, page.Examined, page.Plan, tc.records)
		}
	}
	for _, tc := range []struct {
		query string
		value bool // a value scan, whose pages read their rows' records
	}{
		{`SELECT c.id FROM c WHERE CONTAINS(c.w, '77')`, true},
		{`SELECT c.id FROM c WHERE LOWER(c.u) = 'hot'`, true},
		{`SELECT c.id, c.n FROM c WHERE c.n * 2 = 40 OR ToString(c.n) = '999'`, true},
		{`SELECT c.id FROM c WHERE CONTAINS(c.w, 'w')`, false},
		{`SELECT c.id FROM c WHERE (c.x ?? 'unset') = 'unset' AND c.n = 3`, false},
		// Beside a term of half the items: the items both name.
		{`SELECT c.id FROM c WHERE c.n < 500 AND CONTAINS(c.w, '77')`, true},
		// Beside a term of few: the term's span.
		{`SELECT c.id FROM c WHERE c.n = 77 AND CONTAINS(c.w, '77')`, false},
	} {
		for drop := range 2 {
			p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 50, Query: tc.query}
			records, entries, pages := 0, 0, 0
			got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
				pages++
				records += page.Examined
				entries += page.IndexEntries
				if n == 0 && (page.Plan == nil || (page.Plan.Chosen.Access == plan.ValueScan) != tc.value) {
					t.Errorf("%s: the first page chose %v", tc.query, page.Plan)
				}
				if drop == 1 {
					be.e.kept.forget(time.Now().Add(time.Hour))
				}
			})
			want := oracleRows(t, tc.query, docs, "")
			if !slices.Equal(got, want) {
				t.Fatalf("%s: %d rows, want %d", tc.query, len(got), len(want))
			}
			if !tc.value {
				continue
			}
			// A record for each row and the one past each page, each
			// array's and object's (ten), and the first page's scan
			// tried first (two pages' records and their entries in _rid
			// order, or beside a wide term a budget of 294); the
			// entries of the path on the first page, and on every page
			// whose kept locations were dropped.
			tried := 2 * p.MaxItemCount
			if strings.Contains(tc.query, "c.n <") {
				tried = 294 + 5000 // and the term's entries
			}
			if records > len(want)+pages+10+tried {
				t.Errorf("%s (kept dropped %v): %d records for %d rows in %d pages", tc.query, drop == 1, records, len(want), pages)
			}
			wantEntries := 10000 + pages + tried
			if drop == 1 {
				wantEntries = 10000*pages + pages + tried
			}
			if entries > wantEntries {
				t.Errorf("%s (kept dropped %v): %d entries in %d pages", tc.query, drop == 1, entries, pages)
			}
		}
	}
}

// wValue is the JSON of item i's w in TestValueScan and
// TestValueFilteredWalk: "w" and i among 3,001 values, and every 2,000
// items an array and an object holding "w77", which the index holds as
// bare markers.
func wValue(i int) string {
	switch i % 2000 {
	case 1:
		return `["w77"]`
	case 3:
		return `{"a":"w77"}`
	}
	return fmt.Sprintf(`"w%d"`, i%3001)
}

// TestValueFilteredWalk checks the ORDER BY walks over a value filter
// (valuestream.go): on the walk's path, the records of the values the
// filter fails are not read; on another path, once the records read for
// nothing cost what collecting the filter's items does, the walk reads
// only theirs, and the pages after it too, also when what the page kept
// is gone.
func TestValueFilteredWalk(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	for i := range 10000 {
		w := wValue(i)
		if i%500 == 7 {
			w = `null`
		}
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d,"w":%s,"h":%d}`, i, i%50, i%1000, w, i%40))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	// The records read for nothing before the walk collects: as many as
	// cost what the path's 10,000 entries do.
	const switched = 10000 * 0.15 / 2.5
	// The paths' absence and tie entries, which the first ORDER BY of
	// each asks for, built.
	for _, path := range []string{"n", "w"} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: "SELECT TOP 1 c.id FROM c ORDER BY c." + path}
		if _, err := be.e.QueryItems(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	drainIndexer(t, be.e.NewIndexer(nil))
	for _, tc := range []struct {
		query string
		top   bool
		// most is how many records the drain may read past its rows, the
		// one past each page and the arrays' and objects' (ten); kept
		// says only while the pages' kept locations last (a page that
		// finds none filters by the term alone).
		most int
		kept bool
	}{
		{query: `SELECT c.id, c.n FROM c WHERE CONTAINS(c.w, '77') ORDER BY c.n`, most: switched},
		{query: `SELECT c.id, c.n FROM c WHERE CONTAINS(c.w, '77') ORDER BY c.n DESC`, most: switched},
		{query: `SELECT c.id, c.w FROM c WHERE CONTAINS(c.w, '77') ORDER BY c.w`},
		{query: `SELECT c.id, c.w FROM c WHERE ENDSWITH(c.w, '7') ORDER BY c.w DESC`},
		{query: `SELECT TOP 30 c.id, c.n FROM c WHERE CONTAINS(c.w, '77') ORDER BY c.n DESC`, top: true, most: switched},
		{query: `SELECT TOP 30 c.id, c.w FROM c WHERE CONTAINS(c.w, '77') ORDER BY c.w`, top: true},
		// Beside a term the walk filters by: the term's items the value
		// filter passes (and those read ahead of the switch).
		{query: `SELECT c.id, c.n FROM c WHERE c.h IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12) AND CONTAINS(c.w, '77') ORDER BY c.n`, most: switched},
		{query: `SELECT c.id, c.n FROM c WHERE c.h IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12) AND ENDSWITH(c.w, '7') ORDER BY c.n DESC`, most: switched + 50, kept: true},
		// A filter most items pass: the walk fills its pages first.
		{query: `SELECT c.id, c.n FROM c WHERE CONTAINS(c.w, 'w') ORDER BY c.n`, most: 2000},
	} {
		for drop := range 2 {
			p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 50, Query: tc.query}
			records, pages := 0, 0
			got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
				pages++
				records += page.Examined
				if drop == 1 {
					be.e.kept.forget(time.Now().Add(time.Hour))
				}
			})
			want := oracleRows(t, tc.query, docs, "")
			if !slices.Equal(got, want) {
				t.Fatalf("%s (kept dropped %v): %d rows, want %d", tc.query, drop == 1, len(got), len(want))
			}
			if extra := records - len(want) - pages - 10; extra > tc.most && !(tc.kept && drop == 1) {
				t.Errorf("%s (kept dropped %v): %d records for %d rows in %d pages", tc.query, drop == 1, records, len(want), pages)
			}
		}
	}
}

// TestIDListInAPartitionReadsItsIDs: an IN list of ids with the partition
// key, as the SDKs' ReadMany sends the ids of one key, reads each id's
// entry and record, however large the partition (one of 100 items, below
// the size it would scan, and one of 1,000), in the partition's scan
// order, a page at a time from its position; ids listed twice or of no
// item return nothing more. Without it the small partition read its 100
// records and the large one its id entries' counts.
func TestIDListInAPartitionReadsItsIDs(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	for n := range 1000 {
		if n < 100 {
			items = append(items, fmt.Sprintf(`{"id":"s%d","pk":"small","n":%d}`, n, n))
		}
		items = append(items, fmt.Sprintf(`{"id":"b%d","pk":"big","n":%d}`, n, n))
	}
	be.seed(t, items...)
	for _, tc := range []struct {
		key, list string
		want      []string
	}{
		{"small", "'s70', 's3', 'none', 's3', 's41'", []string{`"s3"`, `"s41"`, `"s70"`}},
		{"big", "'b999', 'b5', 'b500', 'b5', 'x'", []string{`"b5"`, `"b500"`, `"b999"`}},
	} {
		for _, size := range []int{1, 2, 10} {
			p := QueryParams{ItemRef: batchRef(`["` + tc.key + `"]`), Query: "SELECT VALUE c.id FROM c WHERE c.id IN (" + tc.list + ")", MaxItemCount: size}
			records, entries := 0, 0
			got := drainRows(t, be.e, p, func(k int, page *FeedPage) {
				if k == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.PointRead) {
					t.Errorf("%s: page 1 by %v, want point reads", p.Query, page.Plan)
				}
				records += page.Examined
				entries += page.IndexEntries
			})
			if !slices.Equal(got, tc.want) {
				t.Fatalf("%s, %d a page: rows %v, want %v", p.Query, size, got, tc.want)
			}
			// An entry an id a page, a record a row and the one after a
			// page's last.
			pages := (len(tc.want) + size - 1) / size
			if records > len(tc.want)+pages || entries > 4*pages {
				t.Errorf("%s, %d a page: read %d records and %d entries", p.Query, size, records, entries)
			}
		}
	}
}
