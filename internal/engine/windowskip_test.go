package engine

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/partition"
)

// TestOffsetSkipsByEntries pages ORDER BY queries with an OFFSET and
// checks their rows against the drained query without the window, across
// a logical partition and the whole container, with ties, documents
// without the property, arrays and objects among its values, a filter, a
// range on the ordered path (its bounds in or out), the partition key pinned by the WHERE clause,
// and items expired but not purged; and queries without ORDER BY, which
// scan or read the span of a term. The window's skipped rows are counted
// by their entries or their items' keys: a page reads the records of its
// own rows, and a few.
func TestOffsetSkipsByEntries(t *testing.T) {
	be := newBatchEnv(t, "-1")
	be.seed(t, offsetDocs(func(i int) string { return fmt.Sprintf(`"pk":"p%d"`, i%10) })...)
	be.clock.Advance(20 * time.Second) // a tenth of the items expire; the purge has not run
	checkOffsetPages(t, be, []offsetCase{
		{`["p3"]`, "SELECT * FROM c ORDER BY c.k OFFSET %d LIMIT %d", true},
		{`["p3"]`, "SELECT * FROM c ORDER BY c.k DESC OFFSET %d LIMIT %d", true},
		{`["p3"]`, "SELECT c.id, c.k FROM c ORDER BY c.k OFFSET %d LIMIT %d", true},
		{`["p3"]`, "SELECT VALUE c.k FROM c ORDER BY c.k DESC OFFSET %d LIMIT %d", true},
		{`["p3"]`, "SELECT * FROM c WHERE c.pk = 'p3' ORDER BY c.k OFFSET %d LIMIT %d", true},
		{"", "SELECT * FROM c WHERE c.pk = 'p3' ORDER BY c.k DESC OFFSET %d LIMIT %d", true},
		{`["p3"]`, "SELECT * FROM c WHERE c.k >= 10 ORDER BY c.k DESC OFFSET %d LIMIT %d", true},
		{`["p3"]`, "SELECT * FROM c WHERE c.k > 10 ORDER BY c.k OFFSET %d LIMIT %d", true},
		{"", "SELECT c.id, c.k FROM c WHERE c.k < 20 ORDER BY c.k DESC OFFSET %d LIMIT %d", true},
		{`["p3"]`, "SELECT * FROM c ORDER BY c._ts OFFSET %d LIMIT %d", true},
		{`["p3"]`, "SELECT VALUE c.s FROM c ORDER BY c.k OFFSET %d LIMIT %d", false},
		{`["p3"]`, "SELECT * FROM c WHERE c.s != 's1' ORDER BY c.k OFFSET %d LIMIT %d", false},
		{`["p3"]`, "SELECT * FROM c WHERE c.pk = 'p4' ORDER BY c.k OFFSET %d LIMIT %d", false},
		{"", "SELECT * FROM c ORDER BY c.k OFFSET %d LIMIT %d", true},
		{"", "SELECT * FROM c ORDER BY c.k DESC OFFSET %d LIMIT %d", true},
		{"", "SELECT * FROM c WHERE c.s = 's1' ORDER BY c.k OFFSET %d LIMIT %d", true},
		// A list of partition keys: the partitions the window skips
		// whole by their counts, the one it starts in by its entries.
		{"", "SELECT * FROM c WHERE c.pk IN ('p3', 'p5', 'p6') OFFSET %d LIMIT %d", true},
		// Every item of p6 has s1: its plan is the partition's scan,
		// which reads the records it skips, as with its key in the
		// header.
		{"", "SELECT * FROM c WHERE c.pk IN ('p3', 'p5', 'p6') AND c.s = 's1' OFFSET %d LIMIT %d", false},
		{"", "SELECT c.id FROM c WHERE c.pk IN ('p1', 'p5', 'p6') AND c.m IN (1, 2, 3) OFFSET %d LIMIT %d", true},
		{"", "SELECT c.id FROM c WHERE c.k < 20 ORDER BY c.k OFFSET %d LIMIT %d", true},
		// A term whose one span is not a range: the walk is bounded to
		// the other boolean's entries, and counts only those (it
		// counted the true entries it walked past as rows skipped), or
		// to the kinds' entries (whose rows are read).
		{"", "SELECT c.id, c.b FROM c WHERE c.b != true ORDER BY c.b DESC OFFSET %d LIMIT %d", true},
		{`["p3"]`, "SELECT c.id, c.k FROM c WHERE IS_NUMBER(c.k) ORDER BY c.k DESC OFFSET %d LIMIT %d", false},
		{"", "SELECT c.id, c.k FROM c WHERE IS_STRING(c.k) ORDER BY c.k OFFSET %d LIMIT %d", false},
		{`["p3"]`, "SELECT * FROM c OFFSET %d LIMIT %d", true},
		{`["p3"]`, "SELECT c.id, c.k FROM c WHERE c.pk = 'p3' OFFSET %d LIMIT %d", true},
		{`["p3"]`, "SELECT VALUE c.k FROM c OFFSET %d LIMIT %d", false},
		{"", "SELECT * FROM c OFFSET %d LIMIT %d", true},
		{`["p3"]`, "SELECT * FROM c WHERE c.m IN (1, 2, 3) OFFSET %d LIMIT %d", true},
		{`["p3"]`, "SELECT c.id FROM c WHERE c.m = 3 AND c.pk = 'p3' OFFSET %d LIMIT %d", true},
		{"", "SELECT * FROM c WHERE c.s = 's1' OFFSET %d LIMIT %d", true},
		{"", "SELECT * FROM c WHERE c.s = 's1' AND IS_DEFINED(c.k) OFFSET %d LIMIT %d", false},
		// Two IN lists on one path make one term of one of them: not
		// the whole filter.
		{"", "SELECT * FROM c WHERE c.s IN ('s1', 's2') AND c.s IN ('s2', 's3') OFFSET %d LIMIT %d", false},
		{`["p3"]`, "SELECT * FROM c WHERE c.m IN (1, 2) AND c.m IN (2, 3) ORDER BY c.k OFFSET %d LIMIT %d", false},
	})
}

// TestOffsetSkipsByEntriesUnderAPrefix is TestOffsetSkipsByEntries under
// a hierarchical key's prefix, of few partitions (whose entries the walk
// merges) and of many.
func TestOffsetSkipsByEntriesUnderAPrefix(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2},"defaultTtl":-1}`)
	be.seed(t, offsetDocs(func(i int) string {
		if i%3 == 0 {
			return fmt.Sprintf(`"t":"wide","u":"u%d"`, i%(3*2*maxMergedParts))
		}
		return fmt.Sprintf(`"t":"t%d","u":"u%d"`, i%2, i%12)
	})...)
	be.clock.Advance(20 * time.Second)
	var cases []offsetCase
	for _, prefix := range []string{`["t1"]`, `["wide"]`} {
		cases = append(cases,
			offsetCase{prefix, "SELECT * FROM c ORDER BY c.k OFFSET %d LIMIT %d", true},
			offsetCase{prefix, "SELECT * FROM c ORDER BY c.k DESC OFFSET %d LIMIT %d", true},
			offsetCase{prefix, "SELECT * FROM c WHERE c.s = 's2' ORDER BY c.k DESC OFFSET %d LIMIT %d", true},
			offsetCase{prefix, "SELECT * FROM c OFFSET %d LIMIT %d", true},
			offsetCase{prefix, "SELECT * FROM c WHERE c.s = 's2' OFFSET %d LIMIT %d", true},
		)
	}
	checkOffsetPages(t, be, cases)
}

// offsetDocs are 3,000 documents whose keys key makes of their number:
// ORDER BY c.k finds 50 numbers, strings, documents without k, arrays and
// objects, m (0..12) varies within a partition, and a tenth of the
// documents have a TTL of ten seconds.
func offsetDocs(key func(i int) string) []string {
	var docs []string
	for i := range 3000 {
		var k string
		switch {
		case i%17 == 0:
			k = ""
		case i%97 == 0:
			k = fmt.Sprintf(`,"k":[%d]`, i%3)
		case i%89 == 0:
			k = fmt.Sprintf(`,"k":{"a":%d}`, i%3)
		case i%13 == 0:
			k = fmt.Sprintf(`,"k":"k%d"`, i%7)
		default:
			k = fmt.Sprintf(`,"k":%d`, i%50)
		}
		ttl := ""
		if i%11 == 0 {
			ttl = `,"ttl":10`
		}
		docs = append(docs, fmt.Sprintf(`{"id":"d%04d",%s,"s":"s%d","m":%d,"b":%t%s%s}`, i, key(i), i%5, i%13, i%3 == 0, k, ttl))
	}
	return docs
}

// offsetCase is a query with a window, of its offset and limit, in the
// scope of key ("": the whole container).
type offsetCase struct {
	key, q string
	skips  bool // the window's rows before it are counted, not read
}

// checkOffsetPages checks the pages of each case, at offsets from 0 to
// past the end, against the rows of the query without its window; and
// that a page whose skipped rows are counted reads few records.
func checkOffsetPages(t *testing.T, be *batchEnv, cases []offsetCase) {
	t.Helper()
	window := regexp.MustCompile(` OFFSET \d+ LIMIT \d+$`)
	offsets := []int{0, 1, 7, 40, 90, 137, 250, 271, 290, 299, 600, 1500, 2999, 5000}
	if testing.Short() || RaceEnabled {
		offsets = []int{0, 7, 40, 90, 137, 290, 1500, 5000}
	}
	for _, tc := range cases {
		ref := batchRef(tc.key)
		// The entries the ORDER BY asks for, then the rows without the
		// window: the same at every offset.
		be.orderReady(t, QueryParams{ItemRef: ref, Query: fmt.Sprintf(tc.q, 1, 10), Whole: tc.key == ""})
		all := drainRows(t, be.e, QueryParams{ItemRef: ref, Query: window.ReplaceAllString(fmt.Sprintf(tc.q, 0, 1), ""), Whole: tc.key == ""}, nil)
		for _, off := range offsets {
			for _, limit := range []int{10, 100} {
				q := fmt.Sprintf(tc.q, off, limit)
				p := QueryParams{ItemRef: ref, Query: q, Whole: tc.key == ""}
				want := all[min(off, len(all)):min(off+limit, len(all))]
				p.MaxItemCount = 7
				records := -1
				got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
					if n == 0 {
						records = page.Examined
					}
				})
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("%s (key %s): %d rows\n%v\nwant %d\n%v", q, tc.key, len(got), got, len(want), want)
				}
				if tc.skips && off >= 100 && off < len(all) && records > 60 {
					t.Errorf("%s (key %s): the first page read %d records", q, tc.key, records)
				}
				if off < 40 || off >= 100 || limit != 10 {
					continue
				}
				// A window one page holds, after an offset the stream
				// counts (by itself, or beside a filter it collects): the
				// stream's, not the TOP walk's, which reads every
				// document before the window.
				p.MaxItemCount = 0
				page, err := be.e.QueryItems(context.Background(), p)
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Items) != len(want) || tc.skips && page.Examined > 50 {
					t.Errorf("%s (key %s), one page: %d rows, %d records, by %v", q, tc.key, len(page.Items), page.Examined, page.Plan)
				}
			}
		}
	}
}

// A window of no rows (OFFSET n LIMIT 0) returns none, by every path: a
// scan of a logical partition returned the row after the skipped ones.
func TestAWindowOfNoRows(t *testing.T) {
	be := newBatchEnv(t, "null")
	be.rangedContainer(t)
	be.writePartitions(t, 4, 15, func(i int) string { return fmt.Sprintf(`,"n":%d,"s":"s%d"`, i%15, i%3) })
	for _, c := range []struct {
		query string
		key   bool // sent with p1 as its partition key
	}{
		{"SELECT c.id FROM c WHERE c.s = 's1' OFFSET 2 LIMIT 0", true},
		{"SELECT c.id FROM c OFFSET 2 LIMIT 0", true},
		{"SELECT c.id FROM c WHERE c.pk = 'p1' AND c.s = 's1' OFFSET 2 LIMIT 0", false},
		{"SELECT c.id FROM c WHERE c.s = 's1' OFFSET 2 LIMIT 0", false},
		{"SELECT c.id FROM c WHERE c.pk IN ('p1', 'p2') AND c.s = 's1' OFFSET 2 LIMIT 0", false},
		{"SELECT c.id FROM c WHERE c.pk = 'p1' ORDER BY c.n OFFSET 2 LIMIT 0", false},
	} {
		p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "s"}, Query: c.query, CrossPartition: !c.key, Whole: !c.key, MaxItemCount: 1}
		if c.key {
			p.ItemRef.HasKey, p.ItemRef.PartitionKey = true, partition.Key{partition.String("p1")}
		}
		page, err := be.e.QueryItems(context.Background(), p)
		if err != nil || len(page.Items) != 0 || page.Continuation != "" {
			t.Errorf("%s (key %v): %v, rows %s, token %q, want none", c.query, c.key, err, page.Items, page.Continuation)
		}
	}
}
