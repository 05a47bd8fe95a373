package engine

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// The TOP … ORDER BY walk of the index filters candidates with the WHERE
// clause alone; that filter must judge GetCurrentDateTime() by the
// operation's "now" as the full query does, or it drops every row.
func TestOrderedWalkFilterUsesOperationNow(t *testing.T) {
	be := newBatchEnv(t, "null")
	past := batchT0.Add(-time.Hour).UTC().Format("2006-01-02T15:04:05.0000000Z")
	var items []string
	for i := 0; i < 20; i++ {
		items = append(items, `{"id":"`+strconv.Itoa(i)+`","pk":"a","n":`+strconv.Itoa(i)+`,"d":"`+past+`"}`)
	}
	be.seed(t, items...)
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"SELECT c.n FROM c WHERE c.n >= 0 AND c.d < GetCurrentDateTime() ORDER BY c.n", 20},
		{"SELECT TOP 5 c.n FROM c WHERE c.n >= 0 AND c.d < GetCurrentDateTime() ORDER BY c.n", 5},
		{"SELECT TOP 5 c.n FROM c WHERE c.d < GetCurrentDateTime() ORDER BY c.n DESC", 5},
	} {
		page, err := be.e.QueryItems(context.Background(), QueryParams{ItemRef: batchRef(`["a"]`), Query: tc.query, MaxItemCount: -1})
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		if len(page.Items) != tc.want {
			t.Errorf("%s: %d rows, want %d", tc.query, len(page.Items), tc.want)
		}
	}
}

// NaN and Infinity in a filter are left to the evaluator: the index holds
// neither, and the answer is the scan's.
func TestQueryNaNAndInfinity(t *testing.T) {
	be := newBatchEnv(t, "null")
	be.seed(t, `{"id":"a","pk":"p","n":1}`, `{"id":"b","pk":"p","n":-5}`, `{"id":"c","pk":"p","n":"s"}`)
	ctx := context.Background()
	for q, want := range map[string]string{
		"SELECT VALUE c.id FROM c WHERE c.n < Infinity":                  `"a" "b"`,
		"SELECT VALUE c.id FROM c WHERE c.n > -Infinity AND c.n < 0":     `"b"`,
		"SELECT VALUE c.id FROM c WHERE c.n >= NaN OR c.n = NaN":         ``,
		"SELECT VALUE c.id FROM c WHERE c.n > -Infinity ORDER BY c.n":    `"b" "a"`,
		"SELECT VALUE COUNT(1) FROM c WHERE c.n BETWEEN -Infinity AND 0": `1`,
	} {
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(`["p"]`), Query: q})
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		var got []string
		for _, it := range page.Items {
			got = append(got, string(it))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: %s, want %s", q, strings.Join(got, " "), want)
		}
	}
}

// A query over resources whose resources make several rows each (a JOIN)
// pages through them whole, a page ending inside one resource's rows.
func TestResourceQueryPagesThroughJoins(t *testing.T) {
	be := newBatchEnv(t, "null")
	ctx := context.Background()
	for _, id := range []string{"x", "y"} {
		body := `{"id":"` + id + `","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"includedPaths":[{"path":"/a/?"},{"path":"/b/?"},{"path":"/*"}]}}`
		if _, err := be.e.CreateContainer(ctx, "db", batchJSON(t, body), nil); err != nil {
			t.Fatal(err)
		}
	}
	q := ResourceQueryParams{Kind: ResourceContainers, DB: "db", Query: "SELECT c.id, p.path FROM c JOIN p IN c.indexingPolicy.includedPaths", MaxItemCount: 2}
	var got []string
	for range 10 {
		page, err := be.e.QueryResources(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			got = append(got, string(it))
		}
		if q.Continuation = page.Continuation; q.Continuation == "" {
			break
		}
	}
	want := []string{`{"id":"c","path":"/*"}`}
	for _, id := range []string{"x", "y"} {
		for _, p := range []string{"/a/?", "/b/?", "/*"} {
			want = append(want, `{"id":"`+id+`","path":"`+p+`"}`)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("paged %s\nwant  %s", strings.Join(got, " "), strings.Join(want, " "))
	}
}

// A page reports the size of the records it read, returned or not, as
// the query metrics' retrievedDocumentSize does.
func TestPageCountsTheBytesItRead(t *testing.T) {
	be := newBatchEnv(t, "null")
	var items []string
	for i := range 20 {
		items = append(items, `{"id":"`+strconv.Itoa(i)+`","pk":"a","pad":"`+strings.Repeat("x", 1000)+`"}`)
	}
	be.seed(t, items...)
	page, err := be.e.QueryItems(context.Background(), QueryParams{ItemRef: batchRef(`["a"]`), Query: "SELECT VALUE c.id FROM c WHERE c.pad > 'y'", MaxItemCount: -1})
	if err != nil {
		t.Fatal(err)
	}
	if page.Examined != 20 || page.ExaminedBytes < 20*1000 || page.ExaminedBytes > 20*1400 {
		t.Errorf("%d records of %d bytes read, want 20 of about 1,100 bytes each", page.Examined, page.ExaminedBytes)
	}
}

// A LIKE whose pattern begins with literal characters reads the index span
// of that prefix, as STARTSWITH does, and the pattern filters what it
// reads; a count reads the span's entries alone only for a prefix and %.
func TestLikePrefixReadsItsSpan(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 3000 {
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","s":"%s%d"}`, i, i%3, []string{"ab", "abc", "a_c", "a%c", "b"}[i%5], i))
	}
	items = append(items, `{"id":"n1","pk":"p1","s":5}`, `{"id":"n2","pk":"p1","s":["ab1"]}`)
	be.seed(t, items...)
	docs := parseItems(t, items)
	for _, tc := range []struct {
		query   string
		records int // the most a page may read
	}{
		// 222 strings begin with abc1, 1,200 with ab, 111 with a%c1.
		{`SELECT c.id FROM c WHERE c.s LIKE 'abc1%'`, 51},
		{`SELECT c.id FROM c WHERE c.s LIKE 'abc1%6'`, 230},
		{`SELECT c.id FROM c WHERE c.s LIKE 'ab_1%'`, 1300},
		{`SELECT c.id FROM c WHERE c.s LIKE 'a!%c1_' ESCAPE '!'`, 230},
		{`SELECT c.id FROM c WHERE c.s LIKE 'a[_]c1%'`, 3100},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.s LIKE 'abc1%'`, 0},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.s LIKE 'abc1%6'`, 230},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.s LIKE 'abc1%' ESCAPE '!'`, 230},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.s LIKE 'abc1_'`, 230},
	} {
		want := oracleRows(t, tc.query, docs, "")
		if strings.Contains(tc.query, "ORDER BY") || !strings.Contains(tc.query, "COUNT") {
			slices.Sort(want)
		}
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 50, Query: tc.query}
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if page.Examined > tc.records {
				t.Errorf("%s: page %d read %d records", tc.query, n+1, page.Examined)
			}
		})
		if !strings.Contains(tc.query, "COUNT") {
			slices.Sort(got)
		}
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: %d rows %.200v, want %d %.200v", tc.query, len(got), got, len(want), want)
		}
	}
}

// ARRAY_CONTAINS with partial matching reads the elements' entries of the
// object's scalar properties, where it scanned; the evaluator checks that
// one element holds them all, and a count reads the records.
func TestPartialArrayContainsReadsTheElementsEntries(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 3000 {
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","tags":[{"name":"t%d","n":%d},{"name":"t%d","n":%d}]}`, i, i%3, i%20, i%7, (i+1)%20, i%5))
	}
	items = append(items, `{"id":"x1","pk":"p1","tags":{"name":"t3"}}`, `{"id":"x2","pk":"p1","tags":[["t3"], {"[]": 4}]}`)
	be.seed(t, items...)
	docs := parseItems(t, items)
	for _, tc := range []struct {
		query   string
		records int // the most a page may read
	}{
		// 300 documents have an element named t3; a page of another
		// property's filter reads up to all of them.
		{`SELECT c.id FROM c WHERE ARRAY_CONTAINS(c.tags, {"name": "t3"}, true)`, 51},
		{`SELECT c.id FROM c WHERE ARRAY_CONTAINS(c.tags, {"name": "t3", "n": 2}, true)`, 310},
		{`SELECT c.id FROM c WHERE ARRAY_CONTAINS(c.tags, @v, true)`, 310},
		{`SELECT VALUE COUNT(1) FROM c WHERE ARRAY_CONTAINS(c.tags, {"name": "t3"}, true)`, 310},
		{`SELECT c.id FROM c WHERE ARRAY_CONTAINS(c.tags, {"[]": 4}, true)`, 3100},
	} {
		params := map[string]document.Value{"v": document.Obj([]document.Field{{Name: "n", Value: document.Int(3)}, {Name: "name", Value: document.Str("t3")}})}
		prog, err := compileQuery(tc.query, params, time.Now(), nil)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := prog.RunDocs(docs)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, v := range rows {
			want = append(want, string(v.JSON()))
		}
		slices.Sort(want)
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 50, Query: tc.query, Params: params}
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if page.Examined > tc.records {
				t.Errorf("%s: page %d read %d records", tc.query, n+1, page.Examined)
			}
		})
		slices.Sort(got)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: %d rows %.200v, want %d %.200v", tc.query, len(got), got, len(want), want)
		}
	}
}

// A type check (IS_DEFINED, IS_NUMBER, …) reads its path's index entries
// of its kinds, arrays' and objects' bare markers among them, where it
// scanned: a property few documents have costs a page its rows.
func TestTypeChecksReadTheirPathsEntries(t *testing.T) {
	be := newBatchEnv(t, "-1")
	gone := []string{`"2026-01-01"`, `17`, `{"by":"x"}`, `[1, 2]`, `null`, `true`, `[]`, `{}`}
	var items []string
	for i := range 3000 {
		if i%20 == 0 {
			items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d,"gone":%s}`, i, i%3, i%7, gone[i/20%len(gone)]))
			continue
		}
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d,"o":{"gone":1}}`, i, i%3, i%7))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	cases := []struct {
		query, pk string
		records   int // the most a page may read
	}{
		// 150 documents have /gone, 50 in each partition.
		{`SELECT c.id FROM c WHERE IS_DEFINED(c.gone)`, "", 51},
		{`SELECT c.id FROM c WHERE IS_DEFINED(c.gone)`, `["p1"]`, 51},
		{`SELECT c.id FROM c WHERE IS_NUMBER(c.gone)`, "", 51},
		{`SELECT c.id FROM c WHERE IS_STRING(c.gone) AND c.n > 2`, "", 51},
		{`SELECT c.id FROM c WHERE IS_OBJECT(c.gone)`, "", 51},
		{`SELECT c.id FROM c WHERE is_array(c.gone)`, `["p2"]`, 51},
		{`SELECT c.id FROM c WHERE IS_PRIMITIVE(c.gone)`, "", 51},
		{`SELECT c.id FROM c WHERE IS_BOOL(c.gone) OR IS_NULL(c.gone)`, "", 51},
		{`SELECT VALUE COUNT(1) FROM c WHERE IS_DEFINED(c.gone) AND c.n = 3`, "", 51},
		{`SELECT c.id FROM c WHERE IS_DEFINED(c.gone) ORDER BY c.n`, "", 160},
	}
	drain := func(built string) {
		for _, tc := range cases {
			prog, err := compileQuery(tc.query, nil, time.Now(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var scoped []document.Value
			for _, d := range docs {
				if tc.pk == "" || `["`+d.Get("pk").Str()+`"]` == tc.pk {
					scoped = append(scoped, d)
				}
			}
			rows, err := prog.RunDocs(scoped)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, v := range rows {
				want = append(want, string(v.JSON()))
			}
			p := QueryParams{ItemRef: batchRef(tc.pk), MaxItemCount: 50, Query: tc.query}
			if tc.pk == "" {
				p.RangeID, p.CrossPartition = "0", true
			}
			got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
				if page.Examined > tc.records {
					t.Errorf("%s in %q%s: page %d read %d records", tc.query, tc.pk, built, n+1, page.Examined)
				}
			})
			if !strings.Contains(tc.query, "ORDER BY") {
				slices.Sort(got)
				slices.Sort(want)
			}
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Errorf("%s in %q%s: %d rows %.200v, want %d %.200v", tc.query, tc.pk, built, len(got), got, len(want), want)
			}
		}
	}
	drain("")
	// The path's tie entries leave arrays and objects out, so a type
	// check that holds them cannot merge them (holdsStructures); its
	// partition entries hold their markers.
	be.e.wantAbsent(be.container(t), []string{"gone"}, entryKinds{ties: true, parts: true})
	drainIndexer(t, be.e.NewIndexer(nil))
	if c := be.container(t); !c.tiesReady([]string{"gone"}) || !c.partsReady([]string{"gone"}) {
		t.Fatal("the tie and partition entries of /gone are not built")
	}
	drain(" (tie and partition entries built)")
}

// A page that collects its candidates and sorts them (an index span of
// many values over a range or the whole container) keeps them for the
// next page, which reads them in place of collecting them again while the
// container is not written (keptCandidates).
func TestCollectedCandidatesServeLaterPages(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 3000 {
		gone := ""
		if i%10 == 0 {
			gone = fmt.Sprintf(`,"gone":{"at":%d}`, i)
		}
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d%s}`, i, i%3, (i*7919)%3000, gone))
	}
	be.seed(t, items...)
	for _, query := range []string{
		`SELECT c.id FROM c WHERE IS_DEFINED(c.gone)`,
		`SELECT c.id FROM c WHERE c.n >= 2700`,
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 20, Query: query}
		// Drained with the candidates kept, and with them dropped
		// before every page.
		var entries [2][]int
		var rows [2][]string
		for drop := range 2 {
			rows[drop] = drainRows(t, be.e, p, func(n int, page *FeedPage) {
				entries[drop] = append(entries[drop], page.IndexEntries)
				if drop == 1 {
					be.e.kept.forget(time.Now().Add(time.Hour))
				}
			})
		}
		if len(rows[0]) != 300 || !slices.Equal(rows[0], rows[1]) {
			t.Fatalf("%s: %d rows kept, %d dropped", query, len(rows[0]), len(rows[1]))
		}
		// (The last page reads where the scope's entries end.)
		for n := 1; n < len(entries[0]); n++ {
			if entries[0][n] > 1 || entries[1][n] < 300 {
				t.Errorf("%s: page %d read %d entries with the candidates kept, %d without", query, n+1, entries[0][n], entries[1][n])
			}
		}
		// A write between two pages may add a candidate: the next page
		// takes it in (TestKeptCandidatesTakeInWrites).
		first, err := be.e.QueryItems(context.Background(), p)
		if err != nil || first.Continuation == "" {
			t.Fatalf("%s: %v", query, err)
		}
		be.seed(t, `{"id":"late","pk":"p0","n":2999.5,"gone":1}`)
		p.Continuation = first.Continuation
		if got := drainRows(t, be.e, p, nil); !slices.Contains(got, `{"id":"late"}`) {
			t.Errorf("%s: the item written between the pages is missing", query)
		}
		be.run(t, `["p0"]`, false, `[{"operationType":"Delete","id":"late"}]`)
	}
}

// What a page kept of its candidates serves the next page after writes
// too: the next page takes in the items written since from the
// latest-version log (catchUp) instead of reading the term's entries
// again. Two stores get the same documents and, after every page, the
// same random writes: items created, changed (to pass the filter, or to
// fail it) and deleted, and now and then a burst of more writes than the
// candidates cost (the next page then reads them again). The drain with
// the candidates kept gives the rows of the one that drops them before
// every page, and its later pages read the written items' entries alone.
func TestKeptCandidatesTakeInWrites(t *testing.T) {
	var items []string
	for i := range 3000 {
		gone := ""
		if i%10 == 0 {
			gone = fmt.Sprintf(`,"gone":{"at":%d}`, i)
		}
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d,"s":"s%d"%s}`, i, i%3, (i*7919)%3000, i/4%12, gone))
	}
	mix := writeMix{
		doc: func(rng *rand.Rand, id, pk string) string {
			gone := ""
			if rng.IntN(2) == 0 {
				gone = `,"gone":2`
			}
			return fmt.Sprintf(`{"id":%q,"pk":%q,"n":%d,"s":"s%d"%s}`, id, pk, rng.IntN(3000), 3*rng.IntN(2), gone)
		},
		burst: func(rng *rand.Rand, id string) string {
			return fmt.Sprintf(`{"id":%q,"pk":"p0","n":%d}`, id, rng.IntN(3000))
		},
	}
	cases := []struct {
		query, pk string
		stream    bool // a filtered stream, whose pages walk the order's entries too
	}{
		{`SELECT c.id FROM c WHERE IS_DEFINED(c.gone)`, "", false},
		{`SELECT c.id FROM c WHERE c.n >= 2700`, "", false},
		{`SELECT c.id FROM c WHERE IS_DEFINED(c.gone) AND c.n >= 1500`, "", false},
		{`SELECT c.id, c.n FROM c WHERE c.s = 's3' ORDER BY c.n`, "", true},
		{`SELECT c.id, c.n FROM c WHERE c.s = 's3' ORDER BY c.n DESC`, `["p1"]`, true},
	}
	// check compares the drains of p and returns its rows.
	check := func(p QueryParams, stream bool, parts int, seed uint64) int {
		d := drainBesideWrites(t, "", items, p, seed, mix, parts)
		if !slices.Equal(d.rows[0], d.rows[1]) {
			t.Errorf("seed %d: %s in %q, range %q of %d: %d rows kept, %d dropped: %.300v, want %.300v", seed, p.Query, p.PartitionKey, p.RangeID, parts, len(d.rows[0]), len(d.rows[1]), d.rows[0], d.rows[1])
			return 0
		}
		for n := 1; n < len(d.entries[0]) && n < len(d.entries[1]); n++ {
			bound := 8 // the written items' entries, and the last page's end
			if stream {
				// The walk's entries, and fewer than the term's where
				// they are many.
				bound = d.entries[1][n]
				if bound >= 200 {
					bound -= 50
				}
			}
			if d.burst[n-1] || d.scans[n] {
				continue
			}
			if d.entries[0][n] > bound {
				t.Errorf("seed %d: %s in %q, range %q of %d: page %d read %d entries with the candidates kept, %d without", seed, p.Query, p.PartitionKey, p.RangeID, parts, n+1, d.entries[0][n], d.entries[1][n])
			}
		}
		return len(d.rows[0])
	}
	// Over PostgreSQL (short mode), one seed and two of the queries; under
	// the race detector one seed, the unit run drawing both.
	seeds, short := uint64(2), []int{0, 3}
	if RaceEnabled {
		seeds = 1
	}
	for seed := range seeds {
		for i, tc := range cases {
			if testing.Short() && (seed > 0 || !slices.Contains(short, i)) {
				continue
			}
			p := QueryParams{ItemRef: batchRef(tc.pk), MaxItemCount: 20, Query: tc.query}
			if tc.pk == "" {
				p.RangeID, p.CrossPartition = "0", true
			}
			if rows := check(p, tc.stream, 0, seed); rows < 50 {
				t.Errorf("seed %d: %s in %q: %d rows", seed, tc.query, tc.pk, rows)
			}
		}
	}
	// An ORDER BY of two keys that a composite orders, a filtered
	// stream: the filter's locations a page keeps take in the writes.
	if !testing.Short() {
		body := `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1,"indexingPolicy":{"indexingMode":"consistent",
			"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/pk"},{"path":"/n","order":"descending"}]]}}`
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 20, Query: `SELECT c.id, c.n FROM c WHERE c.s = 's3' ORDER BY c.pk, c.n DESC`}
		for seed := range seeds {
			if d := drainBesideWrites(t, body, items, p, seed, mix, 0); !slices.Equal(d.rows[0], d.rows[1]) || len(d.rows[0]) < 50 {
				t.Errorf("seed %d: %s: %d rows kept, %d dropped: %.300v, want %.300v", seed, p.Query, len(d.rows[0]), len(d.rows[1]), d.rows[0], d.rows[1])
			}
		}
	}
	// A full-text filter whose candidates a word's stored entries name
	// (plan.WordSpan) keeps them alike, over one range and four.
	{
		body := `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1,"indexingPolicy":{"fullTextIndexes":[{"path":"/t"}]}}`
		text := func(whale bool) string {
			if whale {
				return "a blue whale's song"
			}
			return "the open sea"
		}
		var texts []string
		for i := range 3000 {
			texts = append(texts, fmt.Sprintf(`{"id":"d%d","pk":"p%d","t":%q}`, i, i%3, text(i%20 == 0)))
		}
		textMix := writeMix{
			doc: func(rng *rand.Rand, id, pk string) string {
				return fmt.Sprintf(`{"id":%q,"pk":%q,"t":%q}`, id, pk, text(rng.IntN(2) == 0))
			},
			burst: func(rng *rand.Rand, id string) string {
				return fmt.Sprintf(`{"id":%q,"pk":"p0","t":%q}`, id, text(rng.IntN(20) == 0))
			},
		}
		query := `SELECT c.id FROM c WHERE FullTextContains(c.t, 'whales')`
		for _, parts := range []int{0, 4} {
			if testing.Short() && parts > 0 {
				continue
			}
			for seed := range seeds {
				if testing.Short() && seed > 0 {
					continue
				}
				rows, later := 0, 0
				for r := range max(parts, 1) {
					p := QueryParams{ItemRef: batchRef(""), RangeID: strconv.Itoa(r), CrossPartition: true, MaxItemCount: 20, Query: query}
					d := drainBesideWrites(t, body, texts, p, seed, textMix, parts)
					if !slices.Equal(d.rows[0], d.rows[1]) {
						t.Errorf("seed %d: %s, range %d of %d: %d rows kept, %d dropped: %.300v, want %.300v", seed, query, r, parts, len(d.rows[0]), len(d.rows[1]), d.rows[0], d.rows[1])
					}
					rows += len(d.rows[0])
					for n := 1; n < len(d.entries[0]) && n < len(d.entries[1]); n++ {
						if d.burst[n-1] || d.scans[n] {
							continue
						}
						later++
						if d.entries[0][n] > 8 {
							t.Errorf("seed %d: %s, range %d of %d: page %d read %d entries with the candidates kept, %d without", seed, query, r, parts, n+1, d.entries[0][n], d.entries[1][n])
						}
					}
				}
				if rows < 100 || later < 3 {
					t.Errorf("seed %d: %s over %d ranges: %d rows, %d later pages by the words", seed, query, parts, rows, later)
				}
			}
		}
	}
	// A range of four, each with a sequence of its own: the writes in
	// every sequence since, of the range's items alone.
	for _, tc := range short {
		if testing.Short() && tc != short[0] {
			continue
		}
		rows := 0
		for r := range 4 {
			p := QueryParams{ItemRef: batchRef(""), RangeID: strconv.Itoa(r), CrossPartition: true, MaxItemCount: 20, Query: cases[tc].query}
			rows += check(p, cases[tc].stream, 4, 0)
		}
		if rows < 50 {
			t.Errorf("%s over four ranges: %d rows", cases[tc].query, rows)
		}
	}
}

// writeMix makes the documents drainBesideWrites writes: doc a document
// of id in partition pk, burst one of a burst's, in partition p0.
type writeMix struct {
	doc   func(rng *rand.Rand, id, pk string) string
	burst func(rng *rand.Rand, id string) string
}

// keptDrain is a query drained in two stores by drainBesideWrites: in the
// first, pages keep what they keep for the next; in the second, what they
// kept is dropped before every page. For each: the rows, and each page's
// index entries and records. For each page: whether a burst of writes
// came before it, and whether the first store's page was a scan from its
// position (scanAfterCollect).
type keptDrain struct {
	rows             [2][]string
	entries, records [2][]int
	burst, scans     []bool
}

// drainBesideWrites drains p in two stores of container body (the test
// container's own when empty) in an engine of parts ranges (0: one),
// each seeded with items, with the same
// random writes after every page (from seed): a batch in one partition
// of up to five deletes and upserts of mix's documents of ids d0 to d2999
// (as items are numbered, item i in partition p(i%3)) and w0 to w999, and
// one time in eight a burst of 400 creates in p0.
func drainBesideWrites(t *testing.T, body string, items []string, p QueryParams, seed uint64, mix writeMix, parts int) keptDrain {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	var envs [2]*batchEnv
	var params [2]QueryParams
	for i := range envs {
		envs[i] = newBatchEnvIn(t, Config{Store: teststore.Open(t), Partitions: parts}, cmp.Or(body, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1}`))
		envs[i].seed(t, items...)
		envs[i].orderReady(t, p)
		params[i] = p
	}
	var d keptDrain
	done := [2]bool{}
	for n := 0; !done[0] || !done[1]; n++ {
		if n > 1000 {
			t.Fatalf("%s: the drain does not end", p.Query)
		}
		pk := fmt.Sprintf("p%d", rng.IntN(3))
		var ops []string
		for range rng.IntN(6) {
			j := 3*rng.IntN(1000) + int(pk[1]-'0')
			switch rng.IntN(4) {
			case 0:
				ops = append(ops, fmt.Sprintf(`{"operationType":"Delete","id":"d%d"}`, j))
			case 1:
				ops = append(ops, `{"operationType":"Upsert","resourceBody":`+mix.doc(rng, fmt.Sprintf("w%d", rng.IntN(1000)), pk)+`}`)
			default:
				ops = append(ops, `{"operationType":"Upsert","resourceBody":`+mix.doc(rng, fmt.Sprintf("d%d", j), pk)+`}`)
			}
		}
		var creates []string
		if rng.IntN(8) == 0 {
			for range 400 {
				creates = append(creates, mix.burst(rng, fmt.Sprintf("b%d", rng.Uint64())))
			}
		}
		d.burst = append(d.burst, creates != nil)
		for i, be := range envs {
			if done[i] {
				continue
			}
			if i == 0 {
				d.scans = append(d.scans, params[0].Continuation != "" && mustCursor(t, params[0].Continuation).access == plan.Scan)
			} else {
				be.e.kept.forget(time.Now().Add(time.Hour))
			}
			page, err := be.e.QueryItems(context.Background(), params[i])
			if err != nil {
				t.Fatalf("%s: page %d: %v", p.Query, n+1, err)
			}
			for _, it := range page.Items {
				d.rows[i] = append(d.rows[i], string(it))
			}
			d.entries[i] = append(d.entries[i], page.IndexEntries)
			d.records[i] = append(d.records[i], page.Examined)
			params[i].Continuation = page.Continuation
			done[i] = page.Continuation == ""
			if len(ops) > 0 {
				if _, err := be.run(t, fmt.Sprintf(`[%q]`, pk), false, "["+strings.Join(ops, ",")+"]"); err != nil {
					t.Fatal(err)
				}
			}
			be.seed(t, creates...)
		}
	}
	return d
}

// NOT IS_DEFINED(c.path) reads the documents without the path through
// its absence entries (plan.AbsentScan), once the first such query has
// had them built, in the scan's order: a queue of documents not yet
// marked done costs a page its rows, where it scanned the scope.
func TestNotDefinedReadsItsAbsenceEntries(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 3000 {
		done := `,"done":true`
		if i%20 == 0 {
			done = ""
		}
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d%s}`, i, i%3, i%7, done))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	cases := []struct {
		query, pk string
		records   int // the most a page may read
		// The most index entries a page may read, the first too: with
		// no other term, the absence entries are read uncounted
		// (plan.SpanFirst). 0: no bound.
		entries int
	}{
		// 150 documents lack /done, 50 in each partition.
		{`SELECT c.id FROM c WHERE NOT IS_DEFINED(c.done)`, "", 51, 52},
		{`SELECT c.id FROM c WHERE NOT IS_DEFINED(c.done)`, `["p1"]`, 51, 52},
		{`SELECT c.id FROM c WHERE NOT IS_DEFINED(c.done) AND c.n > 2`, "", 51 * 7 / 4, 0},
		{`SELECT VALUE COUNT(1) FROM c WHERE NOT IS_DEFINED(c.done) AND c.n = 3`, "", 151, 0},
	}
	// The first query asks for the path's absence entries, which the
	// builder then makes.
	first := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: cases[0].query}
	if _, err := be.e.QueryItems(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	drainIndexer(t, be.e.NewIndexer(nil))
	if !be.container(t).absentReady([]string{"done"}) {
		t.Fatal("the absence entries of /done are not built")
	}
	for _, tc := range cases {
		prog, err := compileQuery(tc.query, nil, time.Now(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var scoped []document.Value
		for _, d := range docs {
			if tc.pk == "" || `["`+d.Get("pk").Str()+`"]` == tc.pk {
				scoped = append(scoped, d)
			}
		}
		rows, err := prog.RunDocs(scoped)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, v := range rows {
			want = append(want, string(v.JSON()))
		}
		p := QueryParams{ItemRef: batchRef(tc.pk), MaxItemCount: 50, Query: tc.query}
		if tc.pk == "" {
			p.RangeID, p.CrossPartition = "0", true
		}
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n == 0 && page.Plan != nil && page.Plan.Chosen.Access != plan.AbsentScan {
				t.Errorf("%s in %q: chose %s", tc.query, tc.pk, page.Plan.Explain())
			}
			if page.Examined > tc.records || tc.entries > 0 && page.IndexEntries > tc.entries {
				t.Errorf("%s in %q: page %d read %d records and %d index entries", tc.query, tc.pk, n+1, page.Examined, page.IndexEntries)
			}
		})
		slices.Sort(got)
		slices.Sort(want)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s in %q: %d rows %.200v, want %d %.200v", tc.query, tc.pk, len(got), got, len(want), want)
		}
	}
	// Over a container of several ranges a page ends one past its last
	// item's position, where the next item's is not known yet (0x00
	// after the sequence): the next page passes over that item's
	// absence entry, whose location follows the sequence. Pages of one
	// and two rows each returned the last row again.
	ranges := be.rangedContainer(t)
	ctx := context.Background()
	for i := range 200 {
		pk := "p" + strconv.Itoa(i%7)
		body := fmt.Sprintf(`{"id":"s%d","pk":"%s"%s}`, i, pk, map[bool]string{true: "", false: `,"done":1`}[i%10 == 0])
		ref := ItemRef{DB: "db", Coll: "s", HasKey: true, PartitionKey: partition.Key{partition.String(pk)}}
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeUpsert, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	whole := ItemRef{DB: "db", Coll: "s"}
	first = QueryParams{ItemRef: whole, RangeID: ranges[0].ID, CrossPartition: true, Query: `SELECT VALUE c.id FROM c WHERE NOT IS_DEFINED(c.done)`}
	if _, err := be.e.QueryItems(ctx, first); err != nil {
		t.Fatal(err)
	}
	drainIndexer(t, be.e.NewIndexer(nil))
	for _, size := range []int{1, 2} {
		// The whole container at once, as a client that sends no range
		// has it served, and range by range.
		p := first
		p.RangeID, p.MaxItemCount = "", size
		whole := drainRows(t, be.e, p, nil)
		slices.Sort(whole)
		if len(whole) != 20 || len(slices.Compact(slices.Clone(whole))) != 20 {
			t.Errorf("pages of %d across the container: %d rows %v, want the 20 documents without /done once each", size, len(whole), whole)
		}
		var got []string
		for _, rg := range ranges {
			p := first
			p.RangeID, p.MaxItemCount = rg.ID, size
			got = append(got, drainRows(t, be.e, p, func(n int, page *FeedPage) {
				if n == 0 && page.Plan != nil && page.Plan.Chosen.Access != plan.AbsentScan {
					t.Errorf("range %s: chose %s", rg.ID, page.Plan.Explain())
				}
			})...)
		}
		slices.Sort(got)
		if len(got) != 20 || len(slices.Compact(slices.Clone(got))) != 20 {
			t.Errorf("pages of %d: %d rows %v, want the 20 documents without /done once each", size, len(got), got)
		}
	}
}

// A NOT IS_DEFINED beside a narrow term counts the path's absence entries
// only as far as their path could still win: past the entries that cost
// what the term's span does (plan.EntriesCosting). Beside 200 items of
// 20,000, nearly all without the path, the first page counted them to
// the probe, 7,563.
func TestNotDefinedCountedAsFarAsItMayWin(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 20000 {
		u, x := "cold", ""
		if i%100 == 0 {
			u = "hot"
		}
		if i%1000 == 500 {
			x = `,"x":1`
		}
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","u":"%s"%s}`, i, i%40, u, x))
	}
	be.seed(t, items...)
	q := `SELECT c.id FROM c WHERE c.u = 'hot' AND NOT IS_DEFINED(c.x)`
	p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 50, Query: q}
	if _, err := be.e.QueryItems(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	drainIndexer(t, be.e.NewIndexer(nil))
	if !be.container(t).absentReady([]string{"x"}) {
		t.Fatal("the absence entries of /x are not built")
	}
	got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
		if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.IndexSpan || page.IndexEntries > 4_000) {
			t.Errorf("the first page read %d index entries by %v, want at most 4,000 by the span of c.u", page.IndexEntries, page.Plan)
		}
	})
	if want := oracleRows(t, q, parseItems(t, items), ""); len(want) != 180 || !slices.Equal(got, want) {
		t.Errorf("%d rows, want %d", len(got), len(want))
	}
}

// TestInequalityReadsItsSpans: an inequality with a scalar reads the index
// entries on either side of its value, so a filter that leaves out the
// value most items hold reads about the rows' records, not every record
// of the scope.
func TestInequalityReadsItsSpans(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 20000 {
		u, done := "cold", true
		if i%100 == 0 {
			u, done = "hot", false
		}
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","u":"%s","done":%v,"n":%d}`, i, i%40, u, done, i%100))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	for _, q := range []string{
		`SELECT c.id FROM c WHERE c.u != 'cold'`,
		`SELECT c.id FROM c WHERE NOT (c.u = 'cold')`,
		`SELECT c.id FROM c WHERE c.done != true`,
		`SELECT c.id FROM c WHERE 0 <> c.n`, // the values on either side: not few, but all right
		`SELECT c.id FROM c WHERE NOT (c.n < 99)`,
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 50, Query: q}
		records := 0
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) { records += page.Examined })
		want := oracleRows(t, q, docs, "")
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d rows, want %d", q, len(got), len(want))
		}
		if len(want) <= 200 && records > len(want)+len(want)/10+10 {
			t.Errorf("%s: read %d records for %d rows", q, records, len(want))
		}
	}
}

// TestOrderTermCountedAsFarAsItMayWin: the term on an ORDER BY's path
// bounds its walk, and is counted as far as the walk's estimate needs,
// but no further than the entries that cost what the paths already
// settled do: past them the walk, which reads at least as many, cannot
// win.
func TestOrderTermCountedAsFarAsItMayWin(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 20000 {
		u := hotEvery(i, 200)
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d,"u":"%s"}`, i, i%40, i, u))
	}
	be.seed(t, items...)
	q := `SELECT c.id FROM c WHERE c.n >= 50 AND c.u = 'hot' ORDER BY c.n`
	p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 20, Query: q}
	be.orderReady(t, p)
	got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
		if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.IndexSpan || page.IndexEntries > 2_500) {
			t.Errorf("the first page read %d index entries by %v, want at most 2,500 by the span of c.u", page.IndexEntries, page.Plan)
		}
	})
	if want := oracleRows(t, q, parseItems(t, items), ""); len(want) != 99 || !slices.Equal(got, want) {
		t.Errorf("%d rows, want %d", len(got), len(want))
	}
}
