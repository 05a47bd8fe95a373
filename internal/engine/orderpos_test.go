package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// An ORDER BY of strings of kilobytes pages with tokens of a few
// kilobytes, whatever the strings' length, in both directions, through
// the ordered stream and sorted in memory, and goes on where its last page
// ended.
//
// The stream's token names the item it ended before. When that item's
// value is gone between pages, the next page goes on past where it was if
// no other value shares its first bytes; if others do, the place is in
// doubt, and the token is refused with 400. An in-memory sort's token
// names the last item it returned: when that item changed, the token is
// refused.
func TestLongSortValuesMakeShortTokens(t *testing.T) {
	ctx := context.Background()
	shared := func(i int) string {
		return strings.Repeat(string(rune('a'+i%3)), maxPosValue+500) + fmt.Sprintf("%04d", i) + strings.Repeat("z", 3000)
	}
	own := func(i int) string { return fmt.Sprintf("%04d", i) + strings.Repeat("z", maxPosValue+3000) }
	const (
		none = iota
		next // the item the page ended before
		last // the last item the page returned
	)
	for i, tc := range []struct {
		name   string
		items  int // enough for the stream, or few enough for a sort
		stream bool
		value  func(int) string
		change int
		// refused: the page after the first change fails with 400.
		refused bool
	}{
		{"stream, shared first bytes", 600, true, shared, none, false},
		{"stream, own first bytes", 600, true, own, none, false},
		{"stream, own first bytes, changing", 600, true, own, next, false},
		{"stream, shared first bytes, changing", 600, true, shared, next, true},
		{"sort, shared first bytes", 300, false, shared, none, false},
		{"sort, changing", 300, false, own, last, true},
	} {
		for _, desc := range []bool{false, true} {
			// Each case in one direction or both (everyOther), the
			// directions alternating from case to case.
			if !everyOther(i + bit(desc)) {
				continue
			}
			be := newBatchEnv(t, "null")
			var docs []string
			for i := range tc.items {
				docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p","s":%q}`, i, tc.value(i)))
			}
			be.seed(t, docs...)
			q := `SELECT c.id FROM c ORDER BY c.s`
			if desc {
				q += ` DESC`
			}
			var want []string
			for i := range tc.items {
				want = append(want, fmt.Sprintf("d%03d", i))
			}
			slices.SortFunc(want, func(a, b string) int {
				var i, j int
				fmt.Sscanf(a, "d%d", &i)
				fmt.Sscanf(b, "d%d", &j)
				return strings.Compare(tc.value(i), tc.value(j))
			})
			if desc {
				slices.Reverse(want)
			}
			size := 10
			if !tc.stream {
				size = 100
			}
			p := QueryParams{ItemRef: batchRef(`["p"]`), Query: q, MaxItemCount: size}
			var ids, changed []string
			for {
				page, err := be.e.QueryItems(ctx, p)
				if tc.refused && len(changed) > 0 {
					if ErrorCode(err) != BadRequest {
						t.Errorf("%s, desc %v: %v, want 400", tc.name, desc, err)
					}
					break
				}
				if err != nil {
					t.Fatalf("%s, desc %v: %v", tc.name, desc, err)
				}
				ids = append(ids, pageIDs(t, page, tc.stream)...)
				if len(page.Continuation) > maxPosValue*2 {
					t.Fatalf("%s, desc %v: a token of %d bytes", tc.name, desc, len(page.Continuation))
				}
				if p.Continuation = page.Continuation; p.Continuation == "" {
					break
				}
				at := len(ids) + len(changed)
				if tc.change == last {
					at = len(ids) - 1
				}
				if tc.change != none && at < tc.items-100 {
					// The item's value goes: "" sorts first.
					body := fmt.Sprintf(`{"id":%q,"pk":"p","s":""}`, want[at])
					if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: batchRef(`["p"]`), Mode: ModeUpsert, Body: []byte(body)}); err != nil {
						t.Fatal(err)
					}
					changed = append(changed, want[at])
				}
			}
			if tc.refused {
				continue
			}
			// The changed items' rows come only where "" sorts: last,
			// descending.
			want = slices.DeleteFunc(want, func(id string) bool { return slices.Contains(changed, id) })
			if desc {
				want = append(want, changed...)
				slices.Sort(ids[len(ids)-len(changed):])
				slices.Sort(want[len(want)-len(changed):])
			}
			if !slices.Equal(ids, want) {
				t.Errorf("%s, desc %v: %d rows, not the %d in order (%d changed)", tc.name, desc, len(ids), len(want), len(changed))
			}
		}
	}
}

// A token's first bytes of a value may end inside an escaped 0x00. When
// the item the token names is gone, the next page goes on just past the
// values with the whole escape, not past every value with the bytes
// before it, which the page has not returned yet.
func TestLongSortValueCutInsideAnEscape(t *testing.T) {
	ctx := context.Background()
	head := strings.Repeat("a", maxPosValue-2) // the tag and these: the escape's first byte is the last kept
	for _, desc := range []bool{false, true} {
		be := newBatchEnv(t, "null")
		item := func(id, s string) string {
			b, err := json.Marshal(map[string]string{"id": id, "pk": "p", "s": s})
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		be.seed(t, item("w", "0"), item("x", head+"\x00"+strings.Repeat("x", 2000)), item("y", head+"b"),
			item("z", head+strings.Repeat("c", 3000)), item("v", head[:100]),
			// Encoded, its first bytes end in the 0x00 of the 0x00 0x01
			// that ends it.
			item("u", head[:len(head)-1]+"c"))
		q, want := `SELECT c.id FROM c ORDER BY c.s`, "w v y z u"
		if desc {
			q, want = q+` DESC`, "u z y v w"
		}
		p := QueryParams{ItemRef: batchRef(`["p"]`), Query: q, MaxItemCount: 1}
		var ids []string
		for {
			page, err := be.e.QueryItems(ctx, p)
			if err != nil {
				t.Fatalf("desc %v: %v", desc, err)
			}
			ids = append(ids, pageIDs(t, page, true)...)
			if p.Continuation = page.Continuation; p.Continuation == "" {
				break
			}
			if ids[len(ids)-1] == "v" && !desc || ids[len(ids)-1] == "y" && desc {
				// The next page's first item, with the escape, goes.
				if _, err := be.e.DeleteItem(ctx, DeleteItemParams{ItemRef: batchRef(`["p"]`), ID: "x"}); err != nil && ErrorCode(err) != NotFound {
					t.Fatal(err)
				}
			}
		}
		if got := strings.Join(ids, " "); got != want {
			t.Errorf("desc %v: %s, want %s", desc, got, want)
		}
	}
}

// An ORDER BY on several keys whose first is a long string pages with
// short tokens too: the sort key of its position leaves the first key
// out, which is the walk's value.
func TestLongFirstOfSeveralKeys(t *testing.T) {
	ctx := context.Background()
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"indexingPolicy":{"includedPaths":[{"path":"/*"}],
		"compositeIndexes":[[{"path":"/s","order":"ascending"},{"path":"/n","order":"ascending"}],[{"path":"/s","order":"descending"},{"path":"/n","order":"descending"}]]}}`)
	value := func(i int) string { return fmt.Sprintf("%d", i%5) + strings.Repeat("s", maxPosValue+2000) }
	var docs []string
	for i := range 600 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p","s":%q,"n":%d}`, i, value(i), i))
	}
	be.seed(t, docs...)
	for _, desc := range []bool{false, true} {
		q := `SELECT c.id FROM c ORDER BY c.s, c.n`
		want := make([]string, 0, 600)
		for i := range 600 {
			want = append(want, fmt.Sprintf("d%03d", i))
		}
		slices.SortFunc(want, func(a, b string) int {
			var i, j int
			fmt.Sscanf(a, "d%d", &i)
			fmt.Sscanf(b, "d%d", &j)
			if d := strings.Compare(value(i), value(j)); d != 0 {
				return d
			}
			return i - j
		})
		if desc {
			q = `SELECT c.id FROM c ORDER BY c.s DESC, c.n DESC`
			slices.Reverse(want)
		}
		p := QueryParams{ItemRef: batchRef(`["p"]`), Query: q, MaxItemCount: 7}
		var ids []string
		for {
			page, err := be.e.QueryItems(ctx, p)
			if err != nil {
				t.Fatalf("desc %v: %v", desc, err)
			}
			ids = append(ids, pageIDs(t, page, true)...)
			if len(page.Continuation) > maxPosValue*2 {
				t.Fatalf("desc %v: a token of %d bytes", desc, len(page.Continuation))
			}
			if p.Continuation = page.Continuation; p.Continuation == "" {
				break
			}
		}
		if !slices.Equal(ids, want) {
			t.Errorf("desc %v: %d rows, not the 600 in order", desc, len(ids))
		}
	}
}

// pageIDs returns the ids of a page's rows, failing the test when its
// first page was not served by the ordered stream and stream is set, or
// was and it is not.
func pageIDs(t *testing.T, page *FeedPage, stream bool) []string {
	t.Helper()
	if page.Plan != nil && (page.Plan.Chosen.Access.String() == "ordered-stream") != stream {
		t.Fatalf("served by %s", page.Plan.Chosen.Access)
	}
	var ids []string
	for _, it := range page.Items {
		var row struct{ ID string }
		if err := json.Unmarshal(it, &row); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, row.ID)
	}
	return ids
}

// Over PostgreSQL (MAYFLY_TEST_STORE=postgres), which reads the keys that
// share their first bytes past its index's bound as one group, a page
// that finds its token's long value among 200 such values steps through
// them with one iterator: every page after the first takes as many round
// trips as the second, wherever its token lies in the group. With a scan
// for each value before the token's, pages 2 to 10 took 67, 107, ... 387.
func TestLongSortValueTokenInFewRoundTrips(t *testing.T) {
	ctx := context.Background()
	s, be := postgresEnv(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	head := strings.Repeat("a", maxPosValue+500)
	var docs []string
	for i := range 200 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p","s":"%s%04d"}`, i, head, i))
	}
	be.seed(t, docs...)
	p := QueryParams{ItemRef: batchRef(`["p"]`), Query: `SELECT c.id FROM c ORDER BY c.s`, MaxItemCount: 20}
	var ids []string
	var second int64
	for n := 1; ; n++ {
		before := teststore.RoundTrips(s)
		page, err := be.e.QueryItems(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		trips := teststore.RoundTrips(s) - before
		ids = append(ids, pageIDs(t, page, true)...)
		switch {
		case n == 2:
			second = trips
		case n > 2 && trips > second+2:
			t.Errorf("page %d: %d round trips, page 2 %d", n, trips, second)
		}
		if p.Continuation = page.Continuation; p.Continuation == "" {
			break
		}
	}
	if len(ids) != 200 || !slices.IsSorted(ids) {
		t.Errorf("%d rows, in order %v", len(ids), slices.IsSorted(ids))
	}
}

// A page of an ORDER BY over values each held by one item reads its
// records together, whether its groups stream as they are, sorted by a
// further key through a composite index, grouped by a GROUP BY, or make
// a DISTINCT's rows; and so does a page within a group the composite
// orders: over PostgreSQL its
// round trips do not grow with the rows it returns (before, one to three a
// row).
func TestDistinctSortValuesPageInFewRoundTrips(t *testing.T) {
	ctx := context.Background()
	s, be := postgresEnv(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
		"indexingPolicy":{"indexingMode":"consistent","includedPaths":[{"path":"/*"}],
		"compositeIndexes":[[{"path":"/k","order":"ascending"},{"path":"/m","order":"ascending"}],
			[{"path":"/m","order":"ascending"},{"path":"/k","order":"ascending"}]]}}`)
	var docs []string
	for i := range 300 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p%d","k":%d,"m":%d,"g":%d}`, i, i%7, (i*37)%300, i%3, i%150))
	}
	be.seed(t, docs...)
	for _, c := range []struct {
		query string
		rows  int
	}{
		{`SELECT c.k FROM c ORDER BY c.k`, 300},
		{`SELECT c.k FROM c ORDER BY c.k DESC`, 300},
		{`SELECT c.k FROM c ORDER BY c.k, c.m`, 300},
		{`SELECT c.k FROM c ORDER BY c.k DESC, c.m DESC`, 300},
		{`SELECT c.k, MAX(c.g) AS n FROM c GROUP BY c.k`, 300},
		// Counted from the index a page of groups at a time.
		{`SELECT c.k, COUNT(1) AS n FROM c GROUP BY c.k`, 300},
		{`SELECT c.m, c.k FROM c ORDER BY c.m, c.k`, 300},
		{`SELECT c.m, c.k FROM c WHERE c.m = 1 ORDER BY c.k`, 100},
		{`SELECT DISTINCT c.g, c.k FROM c ORDER BY c.g`, 300},
	} {
		p := QueryParams{ItemRef: batchRef(""), Query: c.query, MaxItemCount: 50, CrossPartition: true, Whole: true}
		be.orderReady(t, p)
		var keys []float64
		for n := 1; ; n++ {
			before := teststore.RoundTrips(s)
			page, err := be.e.QueryItems(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if page.Plan != nil && page.Plan.Chosen.Access.String() != "ordered-stream" && !(strings.Contains(c.query, "COUNT") && page.Plan.Chosen.Access.String() == "index-count") {
				t.Fatalf("%s: served by %s", c.query, page.Plan.Chosen.Access)
			}
			if trips := teststore.RoundTrips(s) - before; trips > 15 {
				t.Errorf("%s: page %d of %d rows: %d round trips", c.query, n, len(page.Items), trips)
			}
			for _, it := range page.Items {
				var row struct{ K, M, G float64 }
				if err := json.Unmarshal(it, &row); err != nil {
					t.Fatal(err)
				}
				key := row.M*1000 + row.K
				if strings.Contains(c.query, "c.g") {
					key = row.G
				}
				keys = append(keys, key)
			}
			if p.Continuation = page.Continuation; p.Continuation == "" {
				break
			}
		}
		if strings.Contains(c.query, "DESC") {
			slices.Reverse(keys)
		}
		if len(keys) != c.rows || !slices.IsSorted(keys) {
			t.Errorf("%s: %d rows, in order %v", c.query, len(keys), slices.IsSorted(keys))
		}
	}
}

// Over PostgreSQL, a DISTINCT of several items ordered by one whose groups
// are large reads a group's documents in a few batches: the page's room
// counts rows, and a group's 80 documents make 4, so near a page's end a
// batch of the room's few documents was a round trip each (291 round
// trips for a page of 100 rows over 25 groups before, about 6 a group
// after).
func TestGroupedDistinctReadsLargeGroupsInFewRoundTrips(t *testing.T) {
	ctx := context.Background()
	s, be := postgresEnv(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var docs []string
	for i := range 2400 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%04d","pk":"p%d","s":"s%02d","m":%d}`, i, i%3, i%30, i/30%4))
	}
	be.seed(t, docs...)
	p := QueryParams{ItemRef: batchRef(""), Query: `SELECT DISTINCT c.s, c.m FROM c ORDER BY c.s`, MaxItemCount: 100, CrossPartition: true, Whole: true}
	be.orderReady(t, p)
	var rows []string
	for n := 1; ; n++ {
		before := teststore.RoundTrips(s)
		page, err := be.e.QueryItems(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if trips, groups := teststore.RoundTrips(s)-before, int64(len(page.Items)/4+1); trips > 7*groups {
			t.Errorf("page %d of %d rows over %d groups: %d round trips", n, len(page.Items), groups, trips)
		}
		for _, it := range page.Items {
			rows = append(rows, string(it))
		}
		if p.Continuation = page.Continuation; p.Continuation == "" {
			break
		}
	}
	if len(rows) != 120 || !slices.IsSortedFunc(rows, func(a, b string) int { return strings.Compare(a[:9], b[:9]) }) {
		t.Errorf("%d rows, want 120 in order of s: %v", len(rows), rows)
	}
}
