package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/parser"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// TestOrderedStreamOrder drains ORDER BY queries the ordered stream serves
// with small pages and checks the rows are exactly what the evaluator's
// sort gives over the scope's documents in scan order: undefined first
// ascending and last descending, ties in scan order, arrays and objects by
// document.Compare, integers the index keeps as one double told apart.
func TestOrderedStreamOrder(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[
			[{"path":"/v"},{"path":"/w","order":"descending"}],[{"path":"/v"},{"path":"/w"},{"path":"/u"}]]}}`)
	values := []string{"", "null", "false", "true", "1", "1.0", "0", "-0.0", "2.5", "-3",
		"9007199254740993", "9007199254740992", "9007199254740994", `"a"`, `"b"`, `""`, `"a"`,
		"[1,2]", "[1]", "[]", "[0,5]", `{"a":1}`, `{"b":0}`, "{}", `{"a":0}`, "[1]"}
	var docs []string
	for i := 0; i < 90; i++ {
		v := values[(i*7)%len(values)]
		doc := fmt.Sprintf(`{"id":"d%02d","pk":"p%d","w":%d`, i, i%3, i%2)
		if i%5 != 0 {
			doc += fmt.Sprintf(`,"u":%d`, (i*11)%4)
		}
		if v != "" {
			doc += `,"v":` + v
		}
		docs = append(docs, doc+"}")
	}
	be.seed(t, docs...)
	queries := []string{
		"SELECT VALUE c.id FROM c ORDER BY c.v",
		"SELECT VALUE c.id FROM c ORDER BY c.v DESC",
		"SELECT c.id, c.v FROM c WHERE c.w = 1 ORDER BY c.v ASC",
		"SELECT c.id, c.v FROM c WHERE c.w = 1 ORDER BY c.v DESC",
		"SELECT VALUE c.id FROM c WHERE c.v > 0 ORDER BY c.v",
		"SELECT VALUE c.id FROM c WHERE c.v >= 'a' ORDER BY c.v DESC",
		"SELECT VALUE c.id FROM c WHERE IS_DEFINED(c.v) ORDER BY c.v DESC",
		"SELECT VALUE c.v FROM c ORDER BY c.v",
		// several keys: groups of the first, each sorted whole
		"SELECT VALUE c.id FROM c ORDER BY c.v, c.w DESC",
		"SELECT c.id, c.w FROM c ORDER BY c.v DESC, c.w",
		"SELECT VALUE c.id FROM c WHERE c.v > 0 ORDER BY c.v, c.w DESC",
		"SELECT VALUE c.id FROM c ORDER BY c.v, c.w, c.u",
		"SELECT VALUE c.id FROM c ORDER BY c.v DESC, c.w DESC, c.u DESC",
		"SELECT VALUE c.u FROM c WHERE c.w = 1 ORDER BY c.v, c.w, c.u",
	}
	scopes := []struct{ key, rangeID string }{{rangeID: "0"}, {key: `["p1"]`}}
	for _, text := range queries {
		prog, err := compileQuery(text, nil, batchT0, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range scopes {
			var in []document.Value
			for _, d := range docs {
				v := batchJSON(t, d)
				if sc.key == "" || `["`+v.Get("pk").Str()+`"]` == sc.key {
					in = append(in, v)
				}
			}
			rows, err := prog.RunDocs(in)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, r := range rows {
				want = append(want, string(r.JSON()))
			}
			for _, size := range []int{1, 2, 3, 7} {
				p := QueryParams{ItemRef: batchRef(sc.key), Query: text, MaxItemCount: size, RangeID: sc.rangeID}
				got := drainRows(t, be.e, p, func(pages int, page *FeedPage) {
					// Over several keys a page reads a group whole, and
					// within a partition of 30 items a scan may cost less.
					several := strings.Contains(text[strings.Index(text, "ORDER BY"):], ",")
					if pages == 0 && !page.Plan.Chosen.Access.Streams() && (sc.key == "" || !several) {
						t.Fatalf("%s (scope %v, page size %d): chose %s", text, sc, size, page.Plan.Explain())
					}
					if len(page.Items) > size {
						t.Fatalf("%s: a page of %d rows", text, len(page.Items))
					}
				})
				if !slices.Equal(got, want) {
					t.Errorf("%s (scope %v, page size %d):\n got  %s\n want %s", text, sc, size, strings.Join(got, " "), strings.Join(want, " "))
				}
			}
		}
	}
}

// drainRows runs the query p names page by page to its end and returns its
// rows; each, when set, sees every page first. A continuation that does
// not advance fails the test.
func drainRows(t *testing.T, e *Engine, p QueryParams, each func(n int, page *FeedPage)) []string {
	t.Helper()
	var rows []string
	for pages := 0; ; pages++ {
		page, err := e.QueryItems(context.Background(), p)
		if err != nil {
			t.Fatalf("%s (key %v, range %q): %v", p.Query, p.PartitionKey, p.RangeID, err)
		}
		if each != nil {
			each(pages, page)
		}
		for _, it := range page.Items {
			rows = append(rows, string(it))
		}
		if page.Continuation == "" {
			return rows
		}
		if pages > 10_000 || page.Continuation == p.Continuation {
			t.Fatalf("%s (key %v, range %q): the continuation does not advance", p.Query, p.PartitionKey, p.RangeID)
		}
		p.Continuation = page.Continuation
	}
}

// TestOrderByResumeFilter resumes an ORDER BY the way the SDKs resume a
// cross-partition one from a user's continuation: the range's query, as
// the gateway plan rewrote it, comes back with a filter on the ORDER BY
// value in place of "true" and the range's token (the one after the last
// row returned, or the one before the page that held it), and the client
// drops the rows at the resume value it returned already (by _rid). The
// rows must be the rest of the drain, whichever access path served it.
func TestOrderByResumeFilter(t *testing.T) {
	be := newBatchEnv(t, "null")
	var docs []string
	for i := 0; i < 60; i++ {
		docs = append(docs, fmt.Sprintf(`{"id":"d%02d","pk":"p%d","n":%d}`, i, i%2, (i*7)%20))
	}
	be.seed(t, docs...)
	ctx := context.Background()
	rewritten := func(filter string) string {
		return `SELECT c._rid, [{"item": c.n}] AS orderByItems, c AS payload FROM c WHERE (` + filter + `) ORDER BY c.n`
	}
	drain := func(p QueryParams) ([]resumeRow, []string, []int, plan.Access) {
		var rows []resumeRow
		var tokens []string // the token before each page
		var starts []int    // the row each page starts at
		access := plan.Scan
		for pages := 0; ; pages++ {
			page, err := be.e.QueryItems(ctx, p)
			if err != nil {
				t.Fatalf("%s: %v", p.Query, err)
			}
			if pages == 0 && page.Plan != nil {
				access = page.Plan.Chosen.Access
			}
			tokens, starts = append(tokens, p.Continuation), append(starts, len(rows))
			for _, it := range page.Items {
				v := batchJSON(t, string(it))
				rows = append(rows, resumeRow{v.Get("_rid").Str(), []int64{v.Get("orderByItems").Index(0).Get("item").Int()}, string(it)})
			}
			if page.Continuation == "" || pages > 100 {
				return rows, tokens, starts, access
			}
			p.Continuation = page.Continuation
		}
	}
	for _, sc := range []struct {
		key, rangeID string
		size         int
		access       plan.Access
	}{{rangeID: "0", size: 4, access: plan.OrderedStream}, {key: `["p1"]`, size: 10, access: plan.Scan}} {
		p := QueryParams{ItemRef: batchRef(sc.key), Query: rewritten("true"), MaxItemCount: sc.size, RangeID: sc.rangeID}
		all, tokens, starts, access := drain(p)
		if access != sc.access {
			t.Fatalf("scope %v: the drain chose %s, want %s", sc, access, sc.access)
		}
		for k := 1; k < len(tokens); k++ {
			for _, back := range []int{0, 1} { // the token after page k-1, or the one before it
				if k-back < 1 {
					continue
				}
				last := all[starts[k]-1] // the last row the client returned
				q := p
				q.Query = rewritten(fmt.Sprintf("c.n >= %d", last.keys[0]))
				q.Continuation = tokens[k-back]
				rest, _, _, _ := drain(q)
				if d := resumeProblem(all, starts[k], rest); d != "" {
					t.Errorf("scope %v, resumed after page %d with the token %d back:%s", sc, k, back, d)
				}
			}
		}
	}
}

// TestOrderByResumeFilterSeveralKeys resumes an ORDER BY on two keys as an
// SDK resumes a cross-partition one: the range's token with a filter that
// leaves out the documents sorting before the last row returned. The
// stream's position inside a group is a sort key, which holds under it.
func TestOrderByResumeFilterSeveralKeys(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/n"},{"path":"/m","order":"descending"}]]}}`)
	var docs []string
	for i := 0; i < 60; i++ {
		docs = append(docs, fmt.Sprintf(`{"id":"d%02d","pk":"p%d","n":%d,"m":%d}`, i, i%2, (i*7)%5, (i*3)%4))
	}
	be.seed(t, docs...)
	ctx := context.Background()
	rewritten := func(filter string) string {
		return `SELECT c._rid, [{"item": c.n}, {"item": c.m}] AS orderByItems, c AS payload FROM c WHERE (` + filter + `) ORDER BY c.n, c.m DESC`
	}
	drain := func(p QueryParams) ([]resumeRow, []string, []int) {
		var rows []resumeRow
		var tokens []string
		var starts []int
		for pages := 0; ; pages++ {
			page, err := be.e.QueryItems(ctx, p)
			if err != nil {
				t.Fatalf("%s: %v", p.Query, err)
			}
			if pages == 0 && page.Plan != nil && page.Plan.Chosen.Access != plan.OrderedStream {
				t.Fatalf("%s: chose %s", p.Query, page.Plan.Explain())
			}
			tokens, starts = append(tokens, p.Continuation), append(starts, len(rows))
			for _, it := range page.Items {
				v := batchJSON(t, string(it))
				items := v.Get("orderByItems")
				rows = append(rows, resumeRow{v.Get("_rid").Str(), []int64{items.Index(0).Get("item").Int(), items.Index(1).Get("item").Int()}, string(it)})
			}
			if page.Continuation == "" || pages > 100 {
				return rows, tokens, starts
			}
			p.Continuation = page.Continuation
		}
	}
	p := QueryParams{ItemRef: batchRef(""), Query: rewritten("true"), MaxItemCount: 4, RangeID: "0"}
	all, tokens, starts := drain(p)
	if len(all) != len(docs) {
		t.Fatalf("the drain returned %d rows, want %d", len(all), len(docs))
	}
	for k := 1; k < len(tokens); k++ {
		for _, back := range []int{0, 1} {
			if k-back < 1 {
				continue
			}
			last := all[starts[k]-1]
			q := p
			q.Query = rewritten(fmt.Sprintf("c.n > %d OR (c.n = %d AND c.m <= %d)", last.keys[0], last.keys[0], last.keys[1]))
			q.Continuation = tokens[k-back]
			rest, _, _ := drain(q)
			if d := resumeProblem(all, starts[k], rest); d != "" {
				t.Errorf("resumed after page %d with the token %d back:%s", k, back, d)
			}
		}
	}
}

// TestOrderedStreamGroupBound refuses, as the in-memory sort is refused, an
// ORDER BY on several keys whose group of equal first values holds more
// documents than the sort bound and is not all in the composite index on
// the keys (here: half of the group c.a = 0 has no c.b), and serves one
// whose groups the composite covers, or whose groups fit.
func TestOrderedStreamGroupBound(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/a"},{"path":"/b"}],[{"path":"/b"},{"path":"/a"}]]}}`)
	be.e.maxSort = 8
	var docs []string
	for i := 0; i < 200; i++ {
		if i%20 == 0 {
			docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p%d","a":0}`, i, i%3))
			continue
		}
		docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p%d","a":%d,"b":%d}`, i, i%3, i%10, i))
	}
	be.seed(t, docs...)
	ctx := context.Background()
	cases := []struct {
		query string
		fails bool
		rows  int
	}{
		{"SELECT VALUE c.id FROM c WHERE c.a >= 0 ORDER BY c.a, c.b", true, 0},    // groups of 20, one not covered
		{"SELECT VALUE c.id FROM c WHERE c.a >= 1 ORDER BY c.a, c.b", false, 180}, // groups of 20, covered
		{"SELECT VALUE c.id FROM c WHERE c.b >= 0 ORDER BY c.b, c.a", false, 190}, // groups of 1
	}
	// The composites' gap entries (absent.go), which tell a covered group.
	for _, tc := range cases {
		be.orderReady(t, QueryParams{ItemRef: batchRef(""), Query: tc.query, RangeID: "0"})
	}
	for _, tc := range cases {
		p := QueryParams{ItemRef: batchRef(""), Query: tc.query, MaxItemCount: 5, RangeID: "0"}
		n := 0
		var err error
		for {
			var page *FeedPage
			if page, err = be.e.QueryItems(ctx, p); err != nil {
				break
			}
			if page.Plan != nil && page.Plan.Chosen.Access != plan.OrderedStream {
				t.Fatalf("%s: chose %s", tc.query, page.Plan.Explain())
			}
			n += len(page.Items)
			if p.Continuation = page.Continuation; p.Continuation == "" {
				break
			}
		}
		switch {
		case tc.fails && (err == nil || !strings.Contains(err.Error(), "SC3006")):
			t.Errorf("%s: got %v, want SC3006", tc.query, err)
		case !tc.fails && (err != nil || n != tc.rows):
			t.Errorf("%s: %d rows, %v", tc.query, n, err)
		}
	}
}

// resumeRow is a row of a rewritten ORDER BY: its _rid, its ORDER BY
// values, and its text.
type resumeRow struct {
	rid  string
	keys []int64
	raw  string
}

// resumeProblem checks the rows rest of a query resumed after all[:start]
// were returned: once the client drops the rows tied with the last one
// returned that it returned already (by _rid), they must be all[start:].
func resumeProblem(all []resumeRow, start int, rest []resumeRow) string {
	last := all[start-1]
	var got, want []string
	for _, r := range rest {
		if slices.Equal(r.keys, last.keys) && slices.ContainsFunc(all[:start], func(a resumeRow) bool { return a.rid == r.rid }) {
			continue
		}
		got = append(got, r.raw)
	}
	for _, r := range all[start:] {
		want = append(want, r.raw)
	}
	if slices.Equal(got, want) {
		return ""
	}
	return fmt.Sprintf("\n got  %s\n want %s", strings.Join(got, " "), strings.Join(want, " "))
}

// TestCoveredGroupTies drains ORDER BY on two keys whose groups the
// composite index on the keys covers, with many documents equal under both
// keys spread over partitions: equal documents come in _rid order (the
// order they were created in here), backwards when a key is descending, as
// eval's sort gives them, in every direction the composite serves and at
// several page sizes.
func TestCoveredGroupTies(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/a"},{"path":"/b"}],[{"path":"/a"},{"path":"/b","order":"descending"}]]}}`)
	type doc struct{ i, a, b int }
	var docs []doc
	var bodies []string
	for i := range 60 {
		d := doc{i, i * 7 % 2, i * 5 % 3}
		docs = append(docs, d)
		bodies = append(bodies, fmt.Sprintf(`{"id":"d%02d","pk":"p%d","a":%d,"b":%d}`, i, i*13%10, d.a, d.b))
	}
	be.seed(t, bodies...)
	ctx := context.Background()
	for _, dirs := range [][2]bool{{false, false}, {true, true}, {false, true}, {true, false}} {
		want := slices.Clone(docs)
		tiesDesc := dirs[0] || dirs[1]
		slices.SortStableFunc(want, func(x, y doc) int {
			for k, d := range []int{x.a - y.a, x.b - y.b} {
				if d != 0 {
					if dirs[k] {
						return -d
					}
					return d
				}
			}
			if tiesDesc {
				return y.i - x.i
			}
			return x.i - y.i
		})
		var wantIDs []string
		for _, d := range want {
			wantIDs = append(wantIDs, fmt.Sprintf(`"d%02d"`, d.i))
		}
		dir := func(desc bool) string {
			if desc {
				return " DESC"
			}
			return ""
		}
		query := "SELECT VALUE c.id FROM c WHERE c.a >= 0 ORDER BY c.a" + dir(dirs[0]) + ", c.b" + dir(dirs[1])
		// The composite's gap entries (absent.go), which tell a covered
		// group.
		be.orderReady(t, QueryParams{ItemRef: batchRef(""), Query: query, RangeID: "0"})
		for _, size := range []int{1, 4, 7} {
			p := QueryParams{ItemRef: batchRef(""), Query: query, MaxItemCount: size, RangeID: "0"}
			var got []string
			for pages := 1; ; pages++ {
				if pages > len(docs)+1 {
					t.Fatalf("%s, pages of %d: still draining after %d pages", query, size, pages)
				}
				page, err := be.e.QueryItems(ctx, p)
				if err != nil {
					t.Fatalf("%s, pages of %d: %v", query, size, err)
				}
				if page.Plan != nil && page.Plan.Chosen.Access != plan.OrderedStream {
					t.Fatalf("%s: chose %s", query, page.Plan.Explain())
				}
				for _, it := range page.Items {
					got = append(got, string(it))
				}
				if p.Continuation = page.Continuation; p.Continuation == "" {
					break
				}
			}
			if !slices.Equal(got, wantIDs) {
				t.Errorf("%s, pages of %d:\n got %v\nwant %v", query, size, got, wantIDs)
			}
		}
	}
}

// An ORDER BY over a JOIN streams too: a document's rows share its key and
// come together in their order, and a page may end inside them. Drained in
// pages of 7, the rows are those the evaluator sorts in one page, and no
// page reads more than its rows' documents and the group they end in.
func TestOrderedStreamWithJoin(t *testing.T) {
	be := newBatchEnv(t, "null")
	var docs []string
	for i := range 300 {
		tags := []string{}
		for j := range i % 4 {
			tags = append(tags, fmt.Sprintf(`"t%d"`, (i+j)%5))
		}
		docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p%d","n":%d,"tags":[%s]}`, i, i%11, i%40, strings.Join(tags, ",")))
	}
	be.seed(t, docs...)
	for _, q := range []string{
		"SELECT c.id, t FROM c JOIN t IN c.tags ORDER BY c.n",
		"SELECT c.id, t FROM c JOIN t IN c.tags ORDER BY c.n DESC",
		"SELECT VALUE [c.id, t] FROM c JOIN t IN c.tags WHERE t != 't1' ORDER BY c.n",
	} {
		p := QueryParams{ItemRef: batchRef(""), Query: q, RangeID: "0", CrossPartition: true}
		be.orderReady(t, p)
		whole := p
		whole.Query, whole.MaxItemCount = q+" OFFSET 0 LIMIT 100000", 100000
		want := drainRows(t, be.e, whole, nil)
		p.MaxItemCount = 7
		most := 0
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.OrderedStream) {
				t.Errorf("%s: planned %v, want the ordered stream", q, page.Plan)
			}
			most = max(most, page.Examined)
		})
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d rows in pages of 7, %d in one page:\n%v\n%v", q, len(got), len(want), got, want)
		}
		// A value of c.n holds 7 or 8 documents: a page reads its
		// group and the next at most.
		if most > 40 {
			t.Errorf("%s: a page read %d records", q, most)
		}
	}
}

// TestDistinctPagesWalkTheIndex drains SELECT DISTINCT [VALUE] of one
// path, with and without ORDER BY, across partitions and within one: the rows
// are each distinct value once, in the value's order, and a page reads
// about one record and at most distinctSkim entries per row wherever it
// starts, where pages that kept the order of the documents read every
// document before them. Arrays and objects, which the index does not tell
// apart, are a group read whole. A filter that only some of a group's
// documents pass, past those the walk stepped through, sends it into the
// rest of the group.
func TestDistinctPagesWalkTheIndex(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	for n := range 2000 {
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","v":%d,"n":%d}`, n, n%20, n%100, n))
	}
	for n := range 30 {
		items = append(items, fmt.Sprintf(`{"id":"a%d","pk":"p%d","v":[%d],"n":%d}`, n, n%20, n%3, n))
		items = append(items, fmt.Sprintf(`{"id":"o%d","pk":"p%d","v":{"a":%d},"n":%d}`, n, n%20, n%2, n))
		items = append(items, fmt.Sprintf(`{"id":"u%d","pk":"p%d","n":%d}`, n, n%20, n))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	cross := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 20}
	inP3 := QueryParams{ItemRef: batchRef(`["p3"]`), MaxItemCount: 20}
	for _, tc := range []struct {
		query, oracle   string
		p               QueryParams
		stream, bounded bool // served by the walk; pages read about their rows
	}{
		{"SELECT DISTINCT VALUE c.v FROM c", "SELECT DISTINCT VALUE c.v FROM c ORDER BY c.v", cross, true, true},
		{"SELECT DISTINCT VALUE c.v FROM c ORDER BY c.v DESC", "", cross, true, true},
		{"SELECT DISTINCT VALUE c.v FROM c WHERE c.n * 1 >= 1900", "SELECT DISTINCT VALUE c.v FROM c WHERE c.n * 1 >= 1900 ORDER BY c.v", cross, true, false},
		{"SELECT DISTINCT VALUE c.v FROM c WHERE c.n * 1 < 100 ORDER BY c.v DESC", "", cross, true, false},
		// Documents without c.v make {}, once, last: the last page
		// scans for them.
		{"SELECT DISTINCT c.v FROM c", "SELECT DISTINCT c.v FROM c ORDER BY c.v DESC", cross, true, true},
		{"SELECT DISTINCT c.v AS w FROM c ORDER BY c.v DESC", "", cross, true, false},
		{"SELECT DISTINCT c.v FROM c WHERE c.n * 1 < 100", "SELECT DISTINCT c.v FROM c WHERE c.n * 1 < 100 ORDER BY c.v DESC", cross, true, false},
		{"SELECT DISTINCT VALUE c.v FROM c WHERE c.n >= 1000", "SELECT DISTINCT VALUE c.v FROM c WHERE c.n >= 1000 ORDER BY c.v", cross, false, false},
		{"SELECT DISTINCT VALUE c.v FROM c WHERE c.pk = 'p3'", "SELECT DISTINCT VALUE c.v FROM c WHERE c.pk = 'p3' ORDER BY c.v", inP3, false, false},
		{"SELECT DISTINCT VALUE c.v FROM c ORDER BY c.v", "", inP3, false, false},
	} {
		pk := ""
		if tc.p.HasKey {
			pk = "p3"
		}
		wantRows := oracleRows(t, cmp.Or(tc.oracle, tc.query), docs, pk)
		p := tc.p
		p.Query = tc.query
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n == 0 && tc.stream && (page.Plan == nil || page.Plan.Chosen.Access != plan.OrderedStream) {
				t.Errorf("%s: page 1 by %v, want the ordered stream", tc.query, page.Plan)
			}
			if !tc.bounded || n == 0 || page.Continuation == "" {
				return
			}
			// The arrays' group and the objects' hold 60 documents.
			if page.Examined > len(page.Items)+61 || page.IndexEntries > distinctSkim*(len(page.Items)+1)+61 {
				t.Errorf("%s: page %d read %d records and %d entries for %d rows", tc.query, n+1, page.Examined, page.IndexEntries, len(page.Items))
			}
		})
		if !slices.Equal(got, wantRows) {
			t.Errorf("%s: %d rows\n%.300v\nwant %d\n%.300v", tc.query, len(got), got, len(wantRows), wantRows)
		}
	}
}

// TestDistinctWithRidStreams drains the per-range query an SDK sends for a
// cross-partition DISTINCT with ORDER BY: its rows hold each document's
// _rid, so no two are equal, and it is served as the query without
// DISTINCT is, by the ordered stream, a page reading its own rows; before,
// every page read the whole scope.
func TestDistinctWithRidStreams(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	for n := range 1500 {
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","v":%d}`, n, n%20, n%100))
	}
	be.seed(t, items...)
	const rewrite = `SELECT %s c._rid, [{"item": c.v}] AS orderByItems, c.v AS payload FROM c WHERE true ORDER BY c.v DESC`
	p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 50}
	p.Query = fmt.Sprintf(rewrite, "")
	want := drainRows(t, be.e, p, nil)
	p.Query = fmt.Sprintf(rewrite, "DISTINCT")
	got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
		if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.OrderedStream) {
			t.Errorf("page 1 by %v, want the ordered stream", page.Plan)
		}
		// The last page descending also scans for documents without
		// c.v, until their absence entries are built.
		if page.Continuation != "" && page.Examined > 2*len(page.Items)+1 {
			t.Errorf("page %d read %d records for %d rows", n+1, page.Examined, len(page.Items))
		}
	})
	if len(want) != 1500 || !slices.Equal(got, want) {
		t.Errorf("DISTINCT: %d rows, want the %d of the query without it, in its order", len(got), len(want))
	}
}

// TestDistinctOfSeveralItemsPagesByGroup drains DISTINCT queries whose rows
// hold more than one path: served in the order of one of the paths, a
// group of its equal values at a time, a page reads the groups it returns
// rows of and the one it resumes in, where each page read every document
// before its last row.
func TestDistinctOfSeveralItemsPagesByGroup(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	// 100 values of v in groups of 20 documents, each group with 7
	// values of w: 700 distinct pairs, all of them among the first 700
	// documents.
	for n := range 2000 {
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","v":%d,"w":%d,"n":%d}`, n, n%20, n%100, n%7, n))
	}
	for n := range 30 {
		items = append(items, fmt.Sprintf(`{"id":"a%d","pk":"p%d","v":[%d],"w":%d,"n":%d}`, n, n%20, n%3, n%2, n))
		items = append(items, fmt.Sprintf(`{"id":"o%d","pk":"p%d","v":{"a":%d},"w":%d,"n":%d}`, n, n%20, n%2, n%3, n))
		items = append(items, fmt.Sprintf(`{"id":"u%d","pk":"p%d","w":%d,"n":%d}`, n, n%20, n%4, n))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	cross := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 20}
	inP3 := QueryParams{ItemRef: batchRef(`["p3"]`), MaxItemCount: 20}
	for _, tc := range []struct {
		query, oracle   string
		p               QueryParams
		stream, bounded bool // served by the walk; pages read about the groups of their rows
	}{
		{"SELECT DISTINCT c.v, c.w FROM c", "SELECT DISTINCT c.v, c.w FROM c ORDER BY c.v DESC", cross, true, true},
		{"SELECT DISTINCT c.v, c.w FROM c ORDER BY c.v", "", cross, true, true},
		{"SELECT DISTINCT c.w AS x, c.v FROM c ORDER BY c.v DESC", "", cross, true, true},
		{"SELECT DISTINCT c.v, c.w FROM c WHERE c.n * 1 >= 1000", "SELECT DISTINCT c.v, c.w FROM c WHERE c.n * 1 >= 1000 ORDER BY c.v DESC", cross, true, true},
		// Groups of w: about 290 documents, 100 rows each.
		{"SELECT DISTINCT c.w, c.v FROM c", "SELECT DISTINCT c.w, c.v FROM c ORDER BY c.w DESC", cross, true, false},
		{"SELECT DISTINCT c.v, c.w FROM c ORDER BY c.w", "", cross, true, false},
		// One partition's 106 documents cost less scanned.
		{"SELECT DISTINCT c.v, c.w FROM c", "SELECT DISTINCT c.v, c.w FROM c ORDER BY c.v DESC", inP3, false, false},
	} {
		pk := ""
		if tc.p.HasKey {
			pk = "p3"
		}
		wantRows := oracleRows(t, cmp.Or(tc.oracle, tc.query), docs, pk)
		p := tc.p
		p.Query = tc.query
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n == 0 && tc.stream && (page.Plan == nil || page.Plan.Chosen.Access != plan.OrderedStream) {
				t.Errorf("%s: page 1 by %v, want the ordered stream", tc.query, page.Plan)
			}
			// Ascending, page 1 scans for the documents without c.v
			// until their absence entries are built.
			if !tc.bounded || n == 0 || page.Continuation == "" {
				return
			}
			// A page of 20 rows touches at most four groups of 20
			// documents (7 rows each) and may meet the arrays' and
			// the objects' groups (60 documents).
			if page.Examined > 4*20+61 || page.IndexEntries > 4*20+61 {
				t.Errorf("%s: page %d read %d records and %d entries for %d rows", tc.query, n+1, page.Examined, page.IndexEntries, len(page.Items))
			}
		})
		if len(wantRows) == 0 || !slices.Equal(got, wantRows) {
			t.Errorf("%s: %d rows\n%.300v\nwant %d\n%.300v", tc.query, len(got), got, len(wantRows), wantRows)
		}
	}
}

// TestDistinctWindowStopsEarly checks that a DISTINCT with TOP or OFFSET
// and no ORDER BY stops once it has made its rows, in the documents'
// order, rather than being served in a path's order (distinctInOrder),
// which read the whole scope for them.
func TestDistinctWindowStopsEarly(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	for n := range 2000 {
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","v":%d,"w":%d}`, n, n%20, n%100, n%7))
	}
	be.seed(t, items...)
	for _, tc := range []struct {
		query string
		rows  int
	}{
		{"SELECT DISTINCT TOP 10 VALUE c.v FROM c", 10},
		{"SELECT DISTINCT TOP 10 c.v, c.w FROM c", 10},
		{"SELECT DISTINCT VALUE c.v FROM c OFFSET 5 LIMIT 10", 15},
	} {
		page, err := be.e.QueryItems(context.Background(), QueryParams{ItemRef: batchRef(""), Query: tc.query, RangeID: "0", CrossPartition: true, MaxItemCount: 100})
		if err != nil {
			t.Fatal(err)
		}
		// Each of the first 100 documents holds a value of c.v of its own.
		if page.Examined > tc.rows+1 {
			t.Errorf("%s: %d rows, %d records read, want at most %d", tc.query, len(page.Items), page.Examined, tc.rows+1)
		}
	}
}

// TestDistinctWindowWalksTheIndex drains DISTINCT queries with ORDER BY
// and a TOP, or an OFFSET and LIMIT, in pages smaller than their windows:
// the walk keeps the window, so a page reads about its rows, where every
// page read the whole scope.
func TestDistinctWindowWalksTheIndex(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	for n := range 2000 {
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","v":%d,"w":%d}`, n, n%20, n%100, n%7))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	for _, tc := range []struct {
		query      string
		rows       int
		perPage    int  // records a page of 10 may read
		scansFirst bool // page 1 scans for documents without c.v
	}{
		{"SELECT DISTINCT TOP 35 VALUE c.v FROM c ORDER BY c.v", 35, 11, false},
		{"SELECT DISTINCT VALUE c.v FROM c ORDER BY c.v DESC OFFSET 20 LIMIT 25", 25, 31, false},
		// Groups of 20 documents, 7 rows each: a page reads the group
		// it resumes in and up to two more.
		{"SELECT DISTINCT TOP 35 c.v, c.w FROM c ORDER BY c.v", 35, 3*20 + 1, true},
		// The offset's 30 rows come from five groups.
		{"SELECT DISTINCT c.v AS x, c.w FROM c ORDER BY c.v DESC OFFSET 30 LIMIT 40", 40, 7*20 + 1, false},
	} {
		wantRows := oracleRows(t, tc.query, docs, "")
		p := QueryParams{ItemRef: batchRef(""), Query: tc.query, RangeID: "0", CrossPartition: true, MaxItemCount: 10}
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.OrderedStream) {
				t.Errorf("%s: page 1 by %v, want the ordered stream", tc.query, page.Plan)
			}
			if page.Examined > tc.perPage && !(n == 0 && tc.scansFirst) {
				t.Errorf("%s: page %d read %d records for %d rows", tc.query, n+1, page.Examined, len(page.Items))
			}
		})
		if len(got) != tc.rows || !slices.Equal(got, wantRows) {
			t.Errorf("%s: %d rows\n%.300v\nwant %d\n%.300v", tc.query, len(got), got, len(wantRows), wantRows)
		}
	}
}

// TestDistinctOfJoinedElementsWalksTheIndex drains DISTINCT queries of a
// JOIN's array elements: served from the index entries of the elements'
// path, a page reads about a document per row and at most 16 entries,
// where every page read the whole scope.
func TestDistinctOfJoinedElementsWalksTheIndex(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	for n := range 2000 {
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","tags":["t%d","u%d",%d,"t%d"],"parts":[{"name":"n%d"},{"name":"m%d"}],"v":%d}`,
			n, n%20, n%50, n%7, n%3, n%50, n%40, n%9, n))
	}
	// Elements the index does not tell apart, and documents without the
	// array or with an empty one.
	for n := range 30 {
		items = append(items, fmt.Sprintf(`{"id":"a%d","pk":"p%d","tags":[[%d],{"k":%d},"t1"],"v":%d}`, n, n%20, n%3, n%2, n))
		items = append(items, fmt.Sprintf(`{"id":"e%d","pk":"p%d","tags":[],"v":%d}`, n, n%20, n))
		items = append(items, fmt.Sprintf(`{"id":"u%d","pk":"p%d","v":%d}`, n, n%20, n))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	for _, tc := range []struct {
		query, oracle string
		bounded       bool // pages read about their rows
		inP3          bool // in one logical partition, which a scan serves
		exactFirst    bool // page 1 meets only groups of exact values
	}{
		{"SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags", "SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags ORDER BY t", true, false, true},
		{"SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags", "SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags ORDER BY t", false, true, false},
		{"SELECT DISTINCT VALUE p.name FROM c JOIN p IN c.parts", "SELECT DISTINCT VALUE p.name FROM c JOIN p IN c.parts ORDER BY p.name", true, false, false},
		// Filters the walk checks on each group's documents.
		{"SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags WHERE c.v * 1 >= 1990", "SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags WHERE c.v * 1 >= 1990 ORDER BY t", false, false, false},
		// A term on the elements does not bound the walk, which reads
		// the groups outside it and finds no row there: such a term
		// may be on other elements than the rows' (below).
		{"SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags WHERE t IN ('u1', 'u3', 't7')", "SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags WHERE t IN ('u1', 'u3', 't7') ORDER BY t", false, false, false},
		{"SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags WHERE t > 'u'", "SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags WHERE t > 'u' ORDER BY t", false, false, false},
		{"SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags WHERE ARRAY_CONTAINS(c.tags, 'u3')", "SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags WHERE ARRAY_CONTAINS(c.tags, 'u3') ORDER BY t", false, false, false},
		{"SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags WHERE EXISTS(SELECT VALUE x FROM x IN c.tags WHERE x = 'u3')", "SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags WHERE EXISTS(SELECT VALUE x FROM x IN c.tags WHERE x = 'u3') ORDER BY t", false, false, false},
		{"SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags JOIN u IN c.tags WHERE u = 'u3'", "SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags JOIN u IN c.tags WHERE u = 'u3' ORDER BY t", false, false, false},
	} {
		wantRows := oracleRows(t, cmp.Or(tc.oracle, tc.query), docs, "")
		p := QueryParams{ItemRef: batchRef(""), Query: tc.query, RangeID: "0", CrossPartition: true, MaxItemCount: 10}
		if tc.inP3 {
			p = QueryParams{ItemRef: batchRef(`["p3"]`), Query: tc.query, MaxItemCount: 10}
			wantRows = oracleRows(t, cmp.Or(tc.oracle, tc.query), docs, "p3")
		}
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n == 0 && !tc.inP3 && (page.Plan == nil || page.Plan.Chosen.Access != plan.OrderedStream) {
				t.Errorf("%s: page 1 by %v, want the ordered stream", tc.query, page.Plan)
			}
			// The arrays' and objects' groups hold 30 documents each. A
			// document holds elements of several groups: a group whose
			// first document an earlier group read reads it again,
			// alone (a page of 10 read 21 records when it read ahead
			// the group's next 16).
			// Among groups of exact values a page reads a record a
			// row, and one to tell that more follow.
			if n == 0 && tc.exactFirst && page.Examined > len(page.Items)+1 || tc.bounded && (page.Examined > len(page.Items)+61 || page.IndexEntries > distinctSkim*(len(page.Items)+1)+61) {
				t.Errorf("%s: page %d read %d records and %d entries for %d rows", tc.query, n+1, page.Examined, page.IndexEntries, len(page.Items))
			}
		})
		if len(wantRows) == 0 || !slices.Equal(got, wantRows) {
			t.Errorf("%s: %d rows\n%.300v\nwant %d\n%.300v", tc.query, len(got), got, len(wantRows), wantRows)
		}
	}
}

// TestDistinctOfObjectValuesPagesByGroup drains DISTINCT VALUE queries of
// object literals: a property of every row, the path is walked as a
// select item is, where page k read every document before its last row.
func TestDistinctOfObjectValuesPagesByGroup(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	for n := range 1000 {
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","v":%d,"w":%d}`, n, n%20, n%100, n%7))
	}
	for n := range 20 {
		items = append(items, fmt.Sprintf(`{"id":"u%d","pk":"p%d","w":%d}`, n, n%20, n%3))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	for _, tc := range []struct {
		query, oracle string
		stream        bool
		scansFirst    bool // ascending, page 1 scans for documents without c.v
	}{
		{`SELECT DISTINCT VALUE {"v": c.v, "w": c.w} FROM c`, `SELECT DISTINCT VALUE {"v": c.v, "w": c.w} FROM c ORDER BY c.v DESC`, true, false},
		{`SELECT DISTINCT VALUE {"v": c.v} FROM c`, `SELECT DISTINCT VALUE {"v": c.v} FROM c ORDER BY c.v DESC`, true, false},
		{`SELECT DISTINCT VALUE {"w": c.w, "v": c.v} FROM c ORDER BY c.v`, "", true, true},
		{`SELECT DISTINCT TOP 30 VALUE {"v": c.v, "w": c.w} FROM c ORDER BY c.v DESC`, "", true, false},
		// The same name twice: the row need not hold c.v.
		{`SELECT DISTINCT VALUE {"v": c.v, "v": c.w} FROM c`, "", false, false},
	} {
		wantRows := oracleRows(t, cmp.Or(tc.oracle, tc.query), docs, "")
		p := QueryParams{ItemRef: batchRef(""), Query: tc.query, RangeID: "0", CrossPartition: true, MaxItemCount: 20}
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n == 0 && tc.stream != (page.Plan != nil && page.Plan.Chosen.Access == plan.OrderedStream) {
				t.Errorf("%s: page 1 by %v, want the ordered stream %v", tc.query, page.Plan, tc.stream)
			}
			// Groups of 10 documents and 7 rows: a page of 20 reads the
			// group it resumes in and at most three more. The last page
			// descending scans for the documents without c.v.
			if tc.stream && !(n == 0 && tc.scansFirst) && page.Continuation != "" && page.Examined > 4*10+1 {
				t.Errorf("%s: page %d read %d records for %d rows", tc.query, n+1, page.Examined, len(page.Items))
			}
		})
		if tc.stream || tc.oracle != "" {
			if !slices.Equal(got, wantRows) {
				t.Errorf("%s: %d rows\n%.300v\nwant %d\n%.300v", tc.query, len(got), got, len(wantRows), wantRows)
			}
		} else if len(got) != len(wantRows) {
			t.Errorf("%s: %d rows, want %d", tc.query, len(got), len(wantRows))
		}
	}
}

// parseItems parses the items a test seeds.
func parseItems(t *testing.T, items []string) []document.Value {
	t.Helper()
	var docs []document.Value
	for _, it := range items {
		doc, err := document.Parse([]byte(it))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc)
	}
	return docs
}

// oracleRows returns the evaluator's answer to query over docs (those of
// partition key pk when it is not ""), as JSON rows.
func oracleRows(t *testing.T, query string, docs []document.Value, pk string) []string {
	t.Helper()
	prog, err := compileQuery(query, nil, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if pk != "" {
		docs = slices.DeleteFunc(slices.Clone(docs), func(d document.Value) bool { return d.Get("pk").Str() != pk })
	}
	want, err := prog.RunDocs(docs)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, v := range want {
		rows = append(rows, string(v.JSON()))
	}
	return rows
}

// A query that orders by a JOIN's values is refused, as the service
// refuses it, whatever its scope; ORDER BY a path of the document with a
// JOIN, and a DISTINCT of a JOIN's values without ORDER BY (which the
// engine walks in their order itself), are served.
func TestOrderByAJoinsValuesIsRefused(t *testing.T) {
	be := newBatchEnv(t, "-1")
	be.seed(t, `{"id":"a","pk":"p","n":2,"tags":["x","y"],"parts":[{"name":"m"}]}`, `{"id":"b","pk":"q","n":1,"tags":["z"]}`)
	for _, tc := range []struct {
		query   string
		refused bool
	}{
		{"SELECT c.id, t FROM c JOIN t IN c.tags ORDER BY t", true},
		{"SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags ORDER BY t DESC", true},
		{"SELECT DISTINCT TOP 3 VALUE t FROM c JOIN t IN c.tags ORDER BY t", true},
		{"SELECT p.name FROM c JOIN p IN c.parts ORDER BY p.name", true},
		{`SELECT p FROM c JOIN p IN c.parts ORDER BY p["name"]`, true},
		{"SELECT c.id FROM c JOIN t IN c.tags ORDER BY c.n, t", true},
		{"SELECT VALUE v FROM c JOIN (SELECT DISTINCT VALUE t FROM t IN c.tags) AS v ORDER BY v", true},
		{"SELECT c.id, t FROM c JOIN t IN c.tags ORDER BY c.n DESC", false},
		{"SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags", false},
		{"SELECT c.id FROM c ORDER BY c.n", false},
	} {
		for _, p := range []QueryParams{
			{ItemRef: batchRef(`["p"]`), Query: tc.query},
			{ItemRef: batchRef(""), Query: tc.query, RangeID: "0", CrossPartition: true},
		} {
			_, err := be.e.QueryItems(context.Background(), p)
			var e *Error
			switch {
			case tc.refused && (!errors.As(err, &e) || e.Code != BadRequest || !strings.Contains(e.Message, "Order-by over correlated collections is not supported.")):
				t.Errorf("%s (key %v): %v, want 400 Order-by over correlated collections", tc.query, p.HasKey, err)
			case !tc.refused && err != nil:
				t.Errorf("%s (key %v): %v", tc.query, p.HasKey, err)
			}
		}
	}
}

// Every item has an id and a _ts, so an ORDER BY on either looks for no
// document without it: its first page reads about its own rows, where it
// read the whole scope while no absence entries of the path were built;
// and a TOP of it that one page holds walks the index from its start.
func TestOrderByIDLooksForNoDocumentWithoutIt(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 2000 {
		items = append(items, fmt.Sprintf(`{"id":"d%04d","pk":"p%d"}`, i, i%2))
	}
	be.seed(t, items...)
	for _, query := range []string{`SELECT * FROM c ORDER BY c.id`, `SELECT c.id FROM c ORDER BY c["id"] DESC`, `SELECT TOP 10 c.id FROM c ORDER BY c.id`} {
		want := 200 // in 20 pages
		if strings.HasPrefix(query, "SELECT TOP") {
			want = 10
		}
		for _, p := range []QueryParams{
			{ItemRef: batchRef(`["p1"]`), Query: query, MaxItemCount: 10},
			{ItemRef: batchRef(""), Query: query, RangeID: "0", CrossPartition: true, MaxItemCount: 10},
		} {
			rows, pages := 0, 0
			for {
				page, err := be.e.QueryItems(context.Background(), p)
				if err != nil {
					t.Fatalf("%s: %v", query, err)
				}
				if pages++; page.Examined > 2*len(page.Items)+2 {
					t.Errorf("%s (key %v): page %d read %d records for %d rows", query, p.HasKey, pages, page.Examined, len(page.Items))
				}
				rows += len(page.Items)
				if p.Continuation = page.Continuation; p.Continuation == "" || pages == 20 {
					break
				}
			}
			if rows != want {
				t.Errorf("%s (key %v): %d rows in %d pages, want %d", query, p.HasKey, rows, pages, want)
			}
		}
	}
}

// A TOP, or an OFFSET and LIMIT, of an ORDER BY whose window is longer
// than a page streams it: each page goes on from where the last ended and
// reads about its own rows, where every page read and sorted the whole
// window's documents. Its rows are those of the window in one page.
func TestLongWindowsOfAnOrderByPageFromTheirPosition(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 3000 {
		items = append(items, fmt.Sprintf(`{"id":"d%04d","pk":"p%d","n":%d,"m":%d}`, i, i%2, i%700, i%5))
	}
	be.seed(t, items...)
	for _, query := range []string{
		`SELECT * FROM c ORDER BY c.n DESC OFFSET 40 LIMIT 300`,
		`SELECT TOP 300 c.id, c.n FROM c WHERE c.n >= 0 ORDER BY c.n`,
		`SELECT TOP 250 c.id FROM c WHERE c.m = 3 ORDER BY c.n DESC`,
	} {
		for _, base := range []QueryParams{
			{ItemRef: batchRef(`["p1"]`), Query: query},
			{ItemRef: batchRef(""), Query: query, RangeID: "0", CrossPartition: true},
		} {
			whole := base
			whole.MaxItemCount = 1000
			page, err := be.e.QueryItems(context.Background(), whole)
			if err != nil || page.Continuation != "" {
				t.Fatalf("%s: %v, continuation %q", query, err, page.Continuation)
			}
			var want []string
			for _, it := range page.Items {
				want = append(want, string(it))
			}
			p := base
			p.MaxItemCount = 20
			var got []string
			pages := 0
			for {
				page, err := be.e.QueryItems(context.Background(), p)
				if err != nil {
					t.Fatalf("%s: %v", query, err)
				}
				// A filter passing a fifth of the documents reads five
				// a row.
				if pages++; pages > 1 && page.Examined > 6*len(page.Items)+10 {
					t.Errorf("%s (key %v): page %d read %d records for %d rows", query, p.HasKey, pages, page.Examined, len(page.Items))
				}
				for _, it := range page.Items {
					got = append(got, string(it))
				}
				if p.Continuation = page.Continuation; p.Continuation == "" {
					break
				}
			}
			if len(want) < 200 || !slices.Equal(got, want) {
				t.Errorf("%s (key %v): %d rows in %d pages differ from the %d of one page", query, p.HasKey, len(got), pages, len(want))
			}
		}
	}
}

// An ORDER BY whose filter fixes the paths a composite index names before
// the ORDER BY keys pages through that composite once its entries are
// complete: a page reads about its own rows, where each read every
// document the filter passes. The rows are the evaluator's, ties and
// documents without the key included, in either direction, and a drain
// begun before the entries were complete goes on as it began.
func TestAnEqualityAndOrderByPageThroughTheirComposite(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"indexingPolicy":{"indexingMode":"consistent","includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/status","order":"ascending"},{"path":"/created","order":"descending"}],[{"path":"/b","order":"descending"},{"path":"/created"}],[{"path":"/a"},{"path":"/b","order":"descending"},{"path":"/created","order":"descending"}]]}}`)
	var items []string
	for i := range 4000 {
		status, a, b, created := "closed", i%4, i%3, fmt.Sprintf(`,"created":%d`, i/3) // ties of three
		switch {
		case i%20 == 7:
			status = "open"
		case i%97 == 0:
			// No created (first ascending, last descending) in groups
			// of "closed" and "x9" alone, which the composites then
			// serve no page of (a gap entry).
			a, b, created = 9, 9, ""
		}
		items = append(items, fmt.Sprintf(`{"id":"d%04d","pk":"p%d","status":"%s","a":%d,"b":"x%d"%s}`, i, i%2, status, a, b, created))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	queries := []struct {
		text    string
		bounded bool // its pages read about their rows
	}{
		{`SELECT c.id, c.created FROM c WHERE c.status = "open" ORDER BY c.created DESC`, true},
		{`SELECT c.id, c.created FROM c WHERE c.status = "open" ORDER BY c.created`, true},
		{`SELECT c.id FROM c WHERE c.b = "x2" ORDER BY c.created DESC`, true},
		{`SELECT TOP 70 c.id FROM c WHERE c.status = "open" AND c.created > 100 ORDER BY c.created DESC`, true},
		// Windows one page holds: the composite's for "open", the TOP
		// walk's for "closed", some of whose documents lack created.
		{`SELECT TOP 10 c.id FROM c WHERE c.status = "open" ORDER BY c.created DESC`, true},
		{`SELECT TOP 10 c.id FROM c WHERE c.status = "closed" ORDER BY c.created DESC`, true},
		// As an SDK's gateway plan has it sent to each range.
		{`SELECT c._rid, [{"item": c.created}] AS orderByItems, {"id": c.id} AS payload FROM c WHERE (c.status = "open") AND (true) ORDER BY c.created DESC`, true},
		// Two fixed paths before the key, through the composite of all
		// three, in its directions and reversed.
		{`SELECT c.id FROM c WHERE c.a = 1 AND c.b = "x2" ORDER BY c.created DESC`, true},
		{`SELECT c.id, c.created FROM c WHERE c.b = "x2" AND c.a = 1 ORDER BY c.created`, true},
		{`SELECT TOP 30 c.id FROM c WHERE c.a = 1 AND c.b = "x2" ORDER BY c.created DESC`, true},
		// A range on the key: the walk starts at its bound.
		{`SELECT c.id FROM c WHERE c.a = 1 AND c.b = "x2" AND c.created < 1000 ORDER BY c.created DESC`, true},
		{`SELECT c.id, c.created FROM c WHERE c.status = "open" AND c.created <= 900 ORDER BY c.created DESC`, true},
		{`SELECT c.id, c.created FROM c WHERE c.status = "open" AND c.created >= 300 ORDER BY c.created`, true},
		// A filter the walk checks on each document: a page reads the
		// documents of its rows and those it passes over.
		{`SELECT c.id FROM c WHERE c.a = 1 AND c.status = "closed" ORDER BY c.created DESC`, false},
		// A group with a gap entry, read whole.
		{`SELECT c.id, c.created FROM c WHERE c.status = "closed" AND c.a = 9 ORDER BY c.created`, false},
	}
	// The rows of the SDKs' form hold _rid, which the evaluator's
	// documents lack: those of one page of it read the way it was read
	// before the composite's entries were complete stand in.
	whole := map[string][]string{}
	drain := func(query string, p QueryParams, pk string, bounded bool) {
		t.Helper()
		p.Query, p.MaxItemCount = query, 10
		want := oracleRows(t, query, docs, pk)
		if strings.Contains(query, "_rid") {
			key := query + pk
			if whole[key] == nil {
				one := p
				one.MaxItemCount = 1000
				whole[key] = drainRows(t, be.e, one, nil)
			}
			want = whole[key]
		}
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if bounded && page.Examined > 2*len(page.Items)+4 {
				t.Errorf("%s (key %v): page %d read %d records for %d rows", query, p.HasKey, n+1, page.Examined, len(page.Items))
			}
		})
		if len(want) < 10 || !slices.Equal(got, want) {
			t.Errorf("%s (key %v, bounded %v): %d rows differ from the evaluator's %d\n%v\n%v", query, p.HasKey, bounded, len(got), len(want), got, want)
		}
	}
	keyed := QueryParams{ItemRef: batchRef(`["p1"]`)}
	ranged := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true}
	// Before the entries are complete, and a drain that crosses into
	// their being complete.
	for _, q := range queries {
		drain(q.text, keyed, "p1", false)
		drain(q.text, ranged, "", false)
	}
	half := ranged
	half.Query, half.MaxItemCount = queries[0].text, 10
	page, err := be.e.QueryItems(context.Background(), half)
	if err != nil {
		t.Fatal(err)
	}
	drainIndexer(t, be.e.NewIndexer(nil))
	rows := []string{}
	for _, it := range page.Items {
		rows = append(rows, string(it))
	}
	half.Continuation = page.Continuation
	rows = append(rows, drainRows(t, be.e, half, nil)...)
	if want := oracleRows(t, queries[0].text, docs, ""); !slices.Equal(rows, want) {
		t.Errorf("a drain begun before the composite's entries were complete: %d rows differ from the evaluator's %d", len(rows), len(want))
	}
	for _, q := range queries {
		drain(q.text, keyed, "p1", q.bounded)
		drain(q.text, ranged, "", q.bounded)
	}
	// The first page of two equalities through their composite counts
	// the terms' entries no further than the stream's page reads
	// (plan.WithinBound): each equality holds 1,000 entries or more.
	for _, p := range []QueryParams{keyed, ranged} {
		p.Query, p.MaxItemCount = `SELECT c.id FROM c WHERE c.a = 1 AND c.b = "x2" ORDER BY c.created DESC`, 10
		page, err := be.e.QueryItems(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if page.Plan == nil || page.Plan.Chosen.Access != plan.OrderedStream || page.IndexEntries > 100 {
			t.Errorf("%s (key %v): page 1 read %d entries, by %v", p.Query, p.HasKey, page.IndexEntries, page.Plan)
		}
	}
}

// A DISTINCT of several items whose first item has few values pages
// through a group from its position: the page before kept the rows the
// group made before it, so a page reads about its own rows' documents
// and, once the path's partition and tie entries are built, their
// entries, where each read the group's documents before its position
// again. Without the kept rows (a restart, another gateway) a page reads
// them again, to the same rows.
func TestDistinctOfSeveralItemsPagesFromInsideAGroup(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	// In partition p, three values of g in groups of 1,000 documents:
	// the first 400 of a group make a row each, then every other one
	// repeats a row of the group's first 400. The documents without g
	// do the same in groups of 200.
	s := func(k int) int {
		if k >= 400 && k%2 == 0 {
			return k % 400
		}
		return k
	}
	var items []string
	for i := range 3000 {
		items = append(items, fmt.Sprintf(`{"id":"p%d","pk":"p","g":%d,"s":%d}`, i, i%3, s(i/3)))
	}
	for i := range 600 {
		items = append(items, fmt.Sprintf(`{"id":"u%d","pk":"p","s":%d}`, i, s(i)))
	}
	for i := range 500 {
		items = append(items, fmt.Sprintf(`{"id":"q%d","pk":"q","g":%d,"s":%d}`, i, i%3, 5000+i))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	const limit = 50
	queries := []struct{ query, oracle string }{
		{"SELECT DISTINCT c.g, c.s FROM c", "SELECT DISTINCT c.g, c.s FROM c ORDER BY c.g DESC"},
		{"SELECT DISTINCT c.g, c.s FROM c ORDER BY c.g", ""},
		{"SELECT DISTINCT c.s, c.g FROM c ORDER BY c.g DESC", ""},
	}
	scope := 0 // the query, scope and build state's number
	for _, built := range []bool{false, true} {
		if built {
			drainIndexer(t, be.e.NewIndexer(nil))
		}
		for _, tc := range queries {
			for _, inP := range []bool{true, false} {
				p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: limit, Query: tc.query}
				pk := ""
				if inP {
					p, pk = QueryParams{ItemRef: batchRef(`["p"]`), MaxItemCount: limit, Query: tc.query}, "p"
				}
				want := oracleRows(t, cmp.Or(tc.oracle, tc.query), docs, pk)
				scope++
				for _, forget := range []bool{false, true} {
					// Each query, scope and build state with the
					// kept rows dropped, or not, or both
					// (everyOther), alternately.
					if !everyOther(scope + bit(forget)) {
						continue
					}
					records := 0
					got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
						if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.OrderedStream) {
							t.Errorf("%s: page 1 by %v, want the ordered stream", tc.query, page.Plan)
						}
						records += page.Examined
						if forget {
							be.e.seen = newSeenSets(seenSetsMax)
							return
						}
						// Until the absence entries are built, a page
						// looks for documents without g by a scan. A
						// row takes up to two documents, and a page
						// reads on to the next row it has no room for.
						// Across partitions, the walk steps through
						// tieGroupMin entries of each group it meets
						// before it reads the group's tie entries.
						if built && n > 0 && page.Examined > 2*limit+4 {
							t.Errorf("%s (in p: %v): page %d read %d records for %d rows", tc.query, inP, n+1, page.Examined, len(page.Items))
						}
						if built && n > 0 && page.IndexEntries > 2*limit+4+2*(tieGroupMin+1) {
							t.Errorf("%s (in p: %v): page %d read %d entries for %d rows", tc.query, inP, n+1, page.IndexEntries, len(page.Items))
						}
					})
					if len(want) < 1000 || !slices.Equal(got, want) {
						t.Errorf("%s (in p: %v, entries built: %v, kept rows dropped: %v): %d rows, want %d", tc.query, inP, built, forget, len(got), len(want))
					}
					t.Logf("%s (in p: %v, entries built: %v, kept rows dropped: %v): %d records", tc.query, inP, built, forget, records)
				}
			}
		}
	}
}

// An ORDER BY of one key in a logical partition pages through a large
// group of equal values from its position: the partition's entries of a
// value come in the order of their locations, the evaluator's order of
// ties there, so a page starts at its item and reads a page's worth of the
// group's entries, where each read the group's entries from its start.
func TestOrderByTiesInAPartitionPageFromTheirPosition(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 3000 {
		items = append(items, fmt.Sprintf(`{"id":"d%04d","pk":"p","n":%d}`, i, i%3))
	}
	for i := range 300 {
		items = append(items, fmt.Sprintf(`{"id":"q%04d","pk":"q","n":%d}`, i, i%3))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	const limit = 50
	for _, query := range []string{
		"SELECT c.id, c.n FROM c ORDER BY c.n DESC",
		"SELECT c.id FROM c WHERE c.n >= 0 ORDER BY c.n",
		"SELECT c.id FROM c WHERE c.n = 1 ORDER BY c.n DESC",
	} {
		want := oracleRows(t, query, docs, "p")
		for _, built := range []bool{false, true} {
			if built {
				drainIndexer(t, be.e.NewIndexer(nil))
			}
			p := QueryParams{ItemRef: batchRef(`["p"]`), Query: query, MaxItemCount: limit}
			got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
				// Before the partition's entries of n are built, the
				// walk passes over the other partition's entries too.
				if n > 0 && built && page.IndexEntries > limit+2 {
					t.Errorf("%s: page %d read %d entries for %d rows", query, n+1, page.IndexEntries, len(page.Items))
				}
				// Until the absence entries are built, the last page
				// descending scans the partition for documents
				// without n.
				if n > 0 && page.Examined > limit+2 && (built || page.Continuation != "") {
					t.Errorf("%s: page %d read %d records for %d rows", query, n+1, page.Examined, len(page.Items))
				}
			})
			if len(want) < 1000 || !slices.Equal(got, want) {
				t.Errorf("%s (entries built: %v): %d rows differ from the evaluator's %d", query, built, len(got), len(want))
			}
		}
	}
}

// An equality (or IN) on another path beside an ORDER BY of one key, with
// no composite index of the two: each page collects the term's entries in
// the scope and reads the record of a walked entry only when they name its
// item (plan.FilteredStream), where it read the record of every walked
// entry (the plain stream) or of every matching item (the index span). The
// first page collects them as the planner counts them.
// The first page of an ORDER BY beside one equality or IN that holds
// most of the container (10,286 of 12,000 items) counts the term's entries
// no further than its count can change the choice. The stream, and a TOP
// walk, are tried first, the term counted a step at a time as they read,
// until the documents read settle the choice (walkPace): about 270
// entries. Counted to where the walk costs less than the term's entries
// (plan.WalkBound), it read about 1,500; counted to the probe, 4,544. A
// narrow term (a twelfth of the items) proves so after the stream's
// sample, and the page is planned again. Every page's rows are still the
// evaluator's.
func TestWideFilterCountStopsAtTheWalk(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 12_000 {
		t := (i * 7919) % 12_000
		g := 0
		if t%7 == 0 && t >= 16 {
			g = 1 // a seventh of the items, none among the first walked
		}
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","t":%d,"k":%d,"s":%d,"g":%d}`, i, i%40, t, i%7, i%12, g))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	for i, tc := range []struct {
		query   string
		entries int // at most, on the first page
		access  plan.Access
	}{
		{`SELECT c.id, c.t FROM c WHERE c.k IN (0, 1, 2, 3, 4, 5) ORDER BY c.t`, 400, plan.OrderedStream},
		{`SELECT c.id, c.t FROM c WHERE c.k IN (0, 1, 2, 3, 4, 5) ORDER BY c.t DESC`, 400, plan.OrderedStream},
		{`SELECT TOP 10 c.id, c.t FROM c WHERE c.k IN (0, 1, 2, 3, 4, 5) ORDER BY c.t`, 400, plan.OrderedWalk},
		{`SELECT c.id, c.t FROM c WHERE c.s = 5 ORDER BY c.t`, 1_200, plan.FilteredStream},
		// The TOP walk would read a record for each of the 120 entries
		// it walks; the filtered stream reads the 10 rows' records.
		{`SELECT TOP 10 c.id, c.t FROM c WHERE c.s = 5 ORDER BY c.t`, 1_200, plan.FilteredStream},
		// Two terms, each counted to the probe before: 9,101 entries.
		{`SELECT c.id, c.t FROM c WHERE c.k IN (0, 1, 2, 3, 4, 5) AND c.s IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10) ORDER BY c.t`, 700, plan.OrderedStream},
		// Two narrower terms (1,714 and 1,000 entries): the sample, and
		// then the terms counted and weighed as before (3,667 entries).
		// The first term's entries, read whole with their locations,
		// are paid either way: the filtered stream reads a record for a
		// seventh of the walked entries.
		{`SELECT c.id, c.t FROM c WHERE c.k = 1 AND c.s = 5 ORDER BY c.t DESC`, 3_700, plan.FilteredStream},
		// A seventh of the items, none among the sample: the term is
		// counted to WalkBound without ending, and on as far as an end
		// makes the filtered stream the cheaper (plan.GatherBound),
		// where it ends (1,713 entries).
		{`SELECT c.id, c.t FROM c WHERE c.g = 1 ORDER BY c.t`, 1_900, plan.FilteredStream},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 10, Query: tc.query}
		be.orderReady(t, p)
		first := func(page *FeedPage) {
			if page.Plan == nil || page.Plan.Chosen.Access != tc.access || page.IndexEntries > tc.entries {
				t.Errorf("%s: the first page read %d index entries by %v, want at most %d by %v", tc.query, page.IndexEntries, page.Plan, tc.entries, tc.access)
			}
		}
		if !everyOther(i) {
			// The first page alone: a drain is a thousand pages.
			page, err := be.e.QueryItems(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			first(page)
			continue
		}
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if n == 0 {
				first(page)
			}
		})
		if want := oracleRows(t, tc.query, docs, ""); !slices.Equal(got, want) {
			t.Errorf("%s: %d rows differ from the evaluator's %d", tc.query, len(got), len(want))
		}
	}
}

func TestFilteredStreamReadsItsRowsRecords(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 4000 {
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d,"s":"s%d","k":%d,"r":%d}`, i, i%4, (i*7919)%4000, i/4%12, i%5, i/3%25))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	cases := []struct {
		query, pk string
		extra     float64 // records a page may read per row, past the page's rows and two
	}{
		// 334 items of 4,000 (a twelfth), 83 or 84 in each partition.
		{`SELECT c.id, c.n FROM c WHERE c.s = 's3' ORDER BY c.n`, "", 0},
		{`SELECT c.id, c.n FROM c WHERE c.s = 's3' ORDER BY c.n DESC`, "", 0},
		// A fifth of the term's items fail the other filter.
		{`SELECT c.id, c.n FROM c WHERE c.s IN ('s3', 's7') AND c.k % 5 != 2 ORDER BY c.n`, "", 0.5},
		{`SELECT c.id, c.n FROM c WHERE c.s = 's3' ORDER BY c.n DESC`, `["p1"]`, 0},
		{`SELECT c.id, c.n FROM c WHERE c.pk = 'p2' AND c.s = 's3' ORDER BY c.n`, "", 0},
		// Ranges and a prefix: 480 items of 4,000, 80 of 1,000, and 332
		// of 4,000.
		{`SELECT c.id, c.n FROM c WHERE c.r > 21 ORDER BY c.n`, "", 0},
		// The range's partition entries are not built: its count reads the
		// container's entries, and the walk tried first a record more.
		{`SELECT c.id, c.n FROM c WHERE c.r >= 2 AND c.r < 4 ORDER BY c.n DESC`, `["p1"]`, 0.1},
		{`SELECT c.id, c.n FROM c WHERE STARTSWITH(c.s, 's10') ORDER BY c.n DESC`, "", 0},
	}
	var params []QueryParams
	for _, tc := range cases {
		p := QueryParams{ItemRef: batchRef(tc.pk), MaxItemCount: 10, Query: tc.query}
		if tc.pk == "" {
			p.RangeID, p.CrossPartition = "0", true
		}
		params = append(params, p)
	}
	// The entries of the documents without /n, and within a partition
	// the partition's entries of /n, built (absent.go).
	be.orderReady(t, params...)
	filtered := 0
	for i, tc := range cases {
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
		// Drained with the locations each page keeps for the next, and
		// with them dropped before every page: a later page then
		// collects them again, reading the term's entries.
		var entries [2][]int
		for drop := range 2 {
			got := drainRows(t, be.e, params[i], func(n int, page *FeedPage) {
				if n == 0 && drop == 0 && page.Plan != nil && page.Plan.Chosen.Access == plan.FilteredStream {
					filtered++
				}
				// A page's rows' records, the next row's, and one read
				// ahead of it; on the first page, the sample of a stream
				// tried first and one read ahead of it (walkPace), before
				// the term proves narrow.
				tried := 0
				if n == 0 {
					tried = plan.WalkSample + 1
				}
				if float64(page.Examined) > float64(len(page.Items))*(1+tc.extra)+2+float64(tried) {
					t.Errorf("%s in %q: page %d read %d records for %d rows", tc.query, tc.pk, n+1, page.Examined, len(page.Items))
				}
				entries[drop] = append(entries[drop], page.IndexEntries)
				if drop == 1 {
					be.e.kept.forget(time.Now().Add(time.Hour))
				}
			})
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Errorf("%s in %q: %d rows %.200v, want %d %.200v", tc.query, tc.pk, len(got), got, len(want), want)
			}
		}
		// The first page goes on collecting from the count that weighed
		// the term, so it reads about what a page that collects them
		// reads, not the term's entries twice.
		if len(entries[1]) > 1 && entries[0][0] > entries[1][1]*11/10+5 {
			t.Errorf("%s in %q: page 1 read %d entries, a later page collecting the term's %d", tc.query, tc.pk, entries[0][0], entries[1][1])
		}
		for n := 1; n < len(entries[0]); n++ {
			if entries[0][n] >= entries[1][n] {
				t.Errorf("%s in %q: page %d read %d entries with the locations kept, %d without", tc.query, tc.pk, n+1, entries[0][n], entries[1][n])
			}
		}
	}
	if filtered < len(cases) {
		t.Errorf("%d first pages chose the filtered stream, want %d", filtered, len(cases))
	}
	// A write between two pages may give the term an item the kept
	// locations lack: the next page takes it in
	// (TestKeptCandidatesTakeInWrites).
	p := params[0]
	page, err := be.e.QueryItems(context.Background(), p)
	if err != nil || page.Continuation == "" {
		t.Fatalf("%v, token %q", err, page.Continuation)
	}
	be.seed(t, `{"id":"late","pk":"p0","n":5000,"s":"s3"}`)
	p.Continuation = page.Continuation
	if rows := drainRows(t, be.e, p, nil); len(rows) == 0 || rows[len(rows)-1] != `{"id":"late","n":5000}` {
		t.Errorf("the item written between the pages is not the last row: %.100v", rows[max(len(rows)-2, 0):])
	}
}

// A filtered stream's first page goes on collecting its filter's
// locations from where the planner's count of the term stopped
// (filterStart): whatever the count's bound, within a span or between
// spans, in a partition or across the container, the locations are those
// a collection from the start finds.
func TestFilterLocsGoOnFromTheCount(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 600 {
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","s":"s%d"}`, i, i%4, i%5))
	}
	be.seed(t, items...)
	c := be.container(t)
	inP1, derr := be.e.scopeFor(c, partition.Key{partition.String("p1")}, true, "")
	if derr != nil {
		t.Fatal(derr)
	}
	for _, query := range []string{
		`SELECT * FROM c WHERE c.s = 's3'`,
		`SELECT * FROM c WHERE c.s IN ('s0', 's2', 's4')`,
	} {
		q, err := parser.Parse(query)
		if err != nil {
			t.Fatal(err)
		}
		term := plan.Terms(plan.Predicates(q, nil))[0]
		for _, s := range []*itemScope{wholeContainer(), inP1} {
			err := be.e.store.View(context.Background(), func(r storage.Reader) error {
				want, err := filterLocs(r, c, term, s, nil, &readStats{})
				if err != nil {
					return err
				}
				for _, bound := range []int64{1, 7, 64, 119, 120, 121, 250, 1000} {
					tc := newTermCounts(c, []plan.Term{term}, []int{0}, s)
					tc.collectLocs(c, term, 0, s)
					var counted, rest readStats
					if err := tc.counters[0].count(r, bound, &counted); err != nil {
						return err
					}
					got, err := filterLocs(r, c, term, s, tc.filterStart(0), &rest)
					if err != nil {
						return err
					}
					if !maps.Equal(got, want) {
						t.Errorf("%s, scope %v, counted to %d: %d locations, want %d", query, s.kind, bound, len(got), len(want))
					}
					if all := counted.entries + rest.entries; all != len(want) {
						t.Errorf("%s, scope %v, counted to %d: %d entries read for %d locations", query, s.kind, bound, all, len(want))
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// An ORDER BY on a property of few values within a hierarchical prefix,
// or one range of several, walks the property's entries of the whole
// container, where each value's entries of the scope lie together: the
// walk seeks past the other entries of a value rather than step through
// them, so a page reads about its rows' entries wherever its values
// begin and end; and within a range of a container that keeps a sequence
// a range, a value's tie entries (absent.go) of the range's sequences
// alone. Before, a page where a value began stepped through its entries
// outside the scope (5,437 for 100 rows within a prefix, 1,661 for 50 in
// a range), and a DISTINCT of the key read a value's entries up to the
// scope's first.
func TestOrderByWithinANarrowScopeSeeksPastOtherEntries(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2},
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/m"},{"path":"/id"}]]}}`)
	var docs []string
	for i := range 6000 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%04d","t":"t%d","u":"u%d","m":%d}`, i, i%10, i%60, i/10%3))
	}
	be.seed(t, docs...)
	ctx := context.Background()
	if _, err := be.e.CreateContainer(ctx, "db", batchJSON(t, `{"id":"r","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`), &Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	for i := range 6000 {
		ref := ItemRef{DB: "db", Coll: "r", HasKey: true, PartitionKey: partition.Key{partition.String(fmt.Sprint("p", i%50))}}
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(fmt.Sprintf(`{"id":"d%04d","pk":"p%d","m":%d}`, i, i%50, i/10%3))}); err != nil {
			t.Fatal(err)
		}
	}
	ranges, _, err := be.e.PartitionKeyRanges(ctx, "db", "r")
	if err != nil || len(ranges) < 3 {
		t.Fatalf("%d ranges (%v), want several", len(ranges), err)
	}
	prefix := QueryParams{ItemRef: batchRef(`["t1"]`), MaxItemCount: 50}
	oneRange := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "r"}, RangeID: ranges[1].ID, CrossPartition: true, MaxItemCount: 50}
	for bi, base := range []QueryParams{prefix, oneRange} {
		for qi, q := range []string{"SELECT c.id, c.m FROM c ORDER BY c.m", "SELECT c.id, c.m FROM c ORDER BY c.m DESC"} {
			if !everyOther(bi + qi) {
				continue // each scope in one direction
			}
			p := base
			p.Query = q
			be.orderReady(t, p)
			var ms []int
			rows := drainRows(t, be.e, p, func(n int, page *FeedPage) {
				// Its rows' entries, those past which it seeks, and
				// where a value begins, the value's entries before it
				// reads them through its tie entries (tieGroupMin).
				if page.IndexEntries > 2*len(page.Items)+2*skimOutside+tieGroupMin+4 {
					t.Errorf("%s (range %q): page %d read %d index entries for %d rows", q, p.RangeID, n+1, page.IndexEntries, len(page.Items))
				}
			})
			for _, r := range rows {
				var row struct{ M int }
				if err := json.Unmarshal([]byte(r), &row); err != nil {
					t.Fatal(err)
				}
				ms = append(ms, row.M)
			}
			if strings.Contains(q, "DESC") {
				slices.Reverse(ms)
			}
			if len(ms) < 100 || !slices.IsSorted(ms) {
				t.Errorf("%s (range %q): %d rows, sorted %v", q, p.RangeID, len(ms), slices.IsSorted(ms))
			}
		}
		// Ordered by a second key too, a page reads the group of equal
		// first keys it begins in whole and sorts it, and the pages
		// after it take the group kept: draining the prefix's 600
		// items reads each about once. Before, the planner counted
		// each group's entries across the container, and every page
		// scanned the prefix and sorted it.
		if base.RangeID == "" {
			p := base
			p.Query = "SELECT c.id, c.m FROM c ORDER BY c.m, c.id"
			be.orderReady(t, p)
			records := 0
			rows := drainRows(t, be.e, p, func(_ int, page *FeedPage) { records += page.Examined })
			if len(rows) != 600 || records > 2*600 {
				t.Errorf("%s: %d rows, %d records", p.Query, len(rows), records)
			}
		}
		// A DISTINCT of the key reads a few entries of each value, and
		// looks for the one that makes its row among the scope's.
		p := base
		p.Query = "SELECT DISTINCT VALUE c.m FROM c ORDER BY c.m"
		page, err := be.e.QueryItems(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range page.Items {
			got = append(got, string(it))
		}
		if !slices.Equal(got, []string{"0", "1", "2"}) || page.IndexEntries > 3*(distinctSkim+2) {
			t.Errorf("%s (range %q): %s, %d index entries", p.Query, p.RangeID, got, page.IndexEntries)
		}
	}
}

// An ORDER BY under a hierarchical prefix of a few partitions merges its
// partitions' partition entries of the path (prefixparts.go), once they
// are built (the query asks for them): a page reads its rows' entries and
// a seek a partition, where it stepped through every other partition's
// entries between its rows (about ten times its rows here, a prefix
// holding a tenth of the container). A prefix of more partitions than a
// page merges walks the container's entries as before, and so does every
// prefix over PostgreSQL, where each partition's seek is a round trip.
// All return the evaluator's order.
func TestOrderByUnderAPrefixMergesItsPartitions(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2}}`)
	var docs []string
	for i := range 6000 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%04d","t":"t%d","u":"u%d","k":%d}`, i, i%10, i%60, i*37%1500))
	}
	for i := range 2 * maxMergedParts {
		docs = append(docs, fmt.Sprintf(`{"id":"w%04d","t":"wide","u":"u%d","k":%d}`, i, i, i*7%50))
	}
	be.seed(t, docs...)
	for _, tc := range []struct {
		prefix string
		rows   int
		merged bool
	}{{"t1", 600, true}, {"wide", 2 * maxMergedParts, false}} {
		for _, q := range []string{"SELECT c.id, c.k FROM c ORDER BY c.k", "SELECT c.id, c.k FROM c ORDER BY c.k DESC"} {
			p := QueryParams{ItemRef: batchRef(`["` + tc.prefix + `"]`), Query: q, MaxItemCount: 50}
			be.orderReady(t, p)
			var ks []int
			rows := drainRows(t, be.e, p, func(n int, page *FeedPage) {
				// Its rows' entries, the partitions' first past them, and
				// the partitions' counts.
				if tc.merged && teststore.Backend() != "postgres" && page.IndexEntries > len(page.Items)+3*6 {
					t.Errorf("%s under %s: page %d read %d index entries for %d rows", q, tc.prefix, n+1, page.IndexEntries, len(page.Items))
				}
			})
			for _, r := range rows {
				var row struct{ K int }
				if err := json.Unmarshal([]byte(r), &row); err != nil {
					t.Fatal(err)
				}
				ks = append(ks, row.K)
			}
			if strings.Contains(q, "DESC") {
				slices.Reverse(ks)
			}
			if len(ks) != tc.rows || !slices.IsSorted(ks) {
				t.Errorf("%s under %s: %d rows, sorted %v", q, tc.prefix, len(ks), slices.IsSorted(ks))
			}
		}
	}
}

// A TOP under a hierarchical prefix reads its rows' entries: merged from
// the partition entries of a prefix of a few partitions, and under a
// prefix of more, from the path's own entries, seeking past a run of
// other partitions' (a value of few is most of the container's entries).
// Its rows are those of the prefix's documents sorted.
func TestTopUnderAPrefixReadsItsRowsEntries(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2}}`)
	var docs []string
	for i := range 6000 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%04d","t":"t%d","u":"u%d","m":%d}`, i, i%10, i%30, i/7%3))
	}
	for i := range 2 * maxMergedParts {
		docs = append(docs, fmt.Sprintf(`{"id":"w%04d","t":"wide","u":"u%d","m":%d}`, i, i, i%3))
	}
	be.seed(t, docs...)
	merged, seeks := 5+3+3, 5+maxMergedParts+1+2*(skimOutside+1)
	if teststore.Backend() == "postgres" {
		merged = seeks // over a store across the network, no merge (prefixparts.go)
	}
	for _, tc := range []struct {
		prefix  string
		entries int // at most, with the partitions' counts
	}{{"t1", merged}, {"wide", seeks}} {
		ref := batchRef(`["` + tc.prefix + `"]`)
		var want []int
		for _, r := range drainRows(t, be.e, QueryParams{ItemRef: ref, Query: "SELECT VALUE c.m FROM c"}, nil) {
			m, _ := strconv.Atoi(r)
			want = append(want, m)
		}
		slices.Sort(want)
		for _, desc := range []bool{false, true} {
			q := "SELECT VALUE c.m FROM c ORDER BY c.m"
			top := slices.Clone(want[:5])
			if desc {
				q += " DESC"
				top = slices.Clone(want[len(want)-5:])
				slices.Reverse(top)
			}
			q = strings.Replace(q, "SELECT", "SELECT TOP 5", 1)
			p := QueryParams{ItemRef: ref, Query: q}
			be.orderReady(t, p)
			page, err := be.e.QueryItems(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, it := range page.Items {
				m, _ := strconv.Atoi(string(it))
				got = append(got, m)
			}
			if !slices.Equal(got, top) {
				t.Errorf("%s under %s: %v, want %v", q, tc.prefix, got, top)
			}
			if page.Plan == nil || page.Plan.Chosen.Access != plan.OrderedWalk || page.IndexEntries > tc.entries {
				t.Errorf("%s under %s: by %v, %d index entries", q, tc.prefix, page.Plan, page.IndexEntries)
			}
		}
	}
}

// An ORDER BY walk under an excluded bound (>, <) on its path starts past
// the bound's entries, and one within an IN list's hull passes over the
// values between the list's: the documents of such a value cannot pass,
// and a walk that read their group read each one's record. Every value of
// /g is held by 500 documents, in all four partitions.
func TestAnExcludedBoundsGroupIsNotRead(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"indexingPolicy":{"indexingMode":"consistent",
		"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/g","order":"ascending"},{"path":"/n","order":"ascending"}]]}}`)
	var items []string
	for i := range 4000 {
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","g":%d,"s":"s%d","n":%d}`, i, i%4, i%8, i%8, (i*7919)%4000))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	cases := []struct {
		query string
		size  int
	}{
		{`SELECT TOP 5 c.id, c.n FROM c WHERE c.g > 5 ORDER BY c.g, c.n`, -1},
		{`SELECT TOP 5 c.id, c.n FROM c WHERE c.g < 2 ORDER BY c.g DESC, c.n DESC`, -1},
		{`SELECT c.id, c.n FROM c WHERE c.g > 6 ORDER BY c.g, c.n`, 10},
		{`SELECT c.id, c.n FROM c WHERE c.s > 's6' ORDER BY c.s`, 50},
		{`SELECT c.id, c.n FROM c WHERE c.s < 's1' ORDER BY c.s DESC`, 50},
		// The walk's bounds are an IN list's hull: the values between
		// its values are passed over.
		{`SELECT c.id, c.n FROM c WHERE c.g IN (1, 5) ORDER BY c.g`, 50},
		{`SELECT c.id, c.n FROM c WHERE c.s IN ('s2', 's6') ORDER BY c.s DESC`, 50},
		{`SELECT c.id, c.n FROM c WHERE c.g IN (2, 6) AND c.s != 's0' ORDER BY c.g, c.n`, 20},
		{`SELECT TOP 600 c.id, c.n FROM c WHERE c.g IN (1, 5) ORDER BY c.g DESC`, -1},
		{`SELECT TOP 600 c.id, c.n FROM c WHERE c.g IN (1, 5) ORDER BY c.g`, -1},
	}
	var params []QueryParams
	for _, tc := range cases {
		params = append(params, QueryParams{ItemRef: batchRef(""), MaxItemCount: tc.size, Query: tc.query, RangeID: "0", CrossPartition: true})
	}
	// The documents without the paths, and the composite's gap entries
	// and the paths' tie entries, built (absent.go).
	be.orderReady(t, params...)
	for i, tc := range cases {
		want := oracleRows(t, tc.query, docs, "")
		records := 0
		got := drainRows(t, be.e, params[i], func(n int, page *FeedPage) { records += page.Examined })
		if len(want) == 0 || !slices.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Errorf("%s: %d rows, want %d; from row %d: %.200v, want %.200v", tc.query, len(got), len(want), i, got[i:], want[i:])
		}
		// The rows' records and about one a page more (a page reads the
		// next row's to know it has one), far fewer than the 500 of the
		// bound's group.
		if records > len(want)+len(want)/10+10 {
			t.Errorf("%s: read %d records for %d rows", tc.query, records, len(want))
		}
	}
}

// The first page of a TOP that a composite walks in order counts its
// terms only as far as the walk costs (plan.CompositeWalkBound): before,
// each term and the composite's span were counted to the probe, 4,544
// entries each here, for a walk of a few dozen: 13,642 entries for the
// first query, 15,414 for the third (4,384 and 5,900 now).
func TestCompositeWalkCountStopsAtTheWalk(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"indexingPolicy":{"indexingMode":"consistent",
		"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/s","order":"ascending"},{"path":"/t","order":"ascending"}]]}}`)
	var items []string
	for i := range 12_000 {
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","t":%d,"s":%d,"k":%d}`, i, i%40, (i*7919)%12_000, i%12, i%7))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	for _, tc := range []struct {
		query   string
		entries int // at most
	}{
		{`SELECT TOP 10 c.id, c.s, c.t FROM c WHERE c.s > 3 AND c.t >= 0 ORDER BY c.s, c.t`, 5_000},
		{`SELECT TOP 10 c.id, c.s, c.t FROM c WHERE c.s > 3 AND c.t >= 0 ORDER BY c.s DESC, c.t DESC`, 5_000},
		// A narrower term elsewhere makes the walk dearer: the terms are
		// counted further, c.k to its end (1,714 entries).
		{`SELECT TOP 10 c.id, c.s, c.t FROM c WHERE c.s IN (2, 3, 4, 5, 6, 7, 8) AND c.t < 9000 AND c.k = 3 ORDER BY c.s, c.t`, 7_000},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: -1, Query: tc.query}
		page, err := be.e.QueryItems(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if page.Plan == nil {
			t.Fatalf("%s: no plan", tc.query)
		}
		if page.Plan.Chosen.Access != plan.CompositeWalk || page.IndexEntries > tc.entries {
			t.Errorf("%s: read %d index entries, want at most %d by the composite's walk; plan:\n%s", tc.query, page.IndexEntries, tc.entries, page.Plan.Explain())
		}
		var got []string
		for _, it := range page.Items {
			got = append(got, string(it))
		}
		if want := oracleRows(t, tc.query, docs, ""); !slices.Equal(got, want) {
			t.Errorf("%s: rows %.200v, want %.200v", tc.query, got, want)
		}
	}
}

// An ORDER BY of several keys that a composite orders, beside a term on
// another path, is a filtered stream too: its walk, and the groups it
// walks through the composite, read a record only for an entry the term
// names. Before, a page of c.s = 's3' (a twelfth of the items) read about
// twelve records a row.
func TestFilteredStreamOfSeveralKeys(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"indexingPolicy":{"indexingMode":"consistent",
		"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/g","order":"ascending"},{"path":"/n","order":"descending"}]]}}`)
	var items []string
	for i := range 4000 {
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","g":%d,"n":%d,"s":"s%d","k":%d}`, i, i%4, i%7, (i*7919)%4000, i/4%12, i%5))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	cases := []struct {
		query string
		per   int // records a row at most
	}{
		{`SELECT c.id, c.g, c.n FROM c WHERE c.s = 's3' ORDER BY c.g, c.n DESC`, 1},
		{`SELECT c.id, c.g, c.n FROM c WHERE c.s = 's3' ORDER BY c.g DESC, c.n`, 1},
		// A fifth of the items the filter names pass c.k > 3: before,
		// pages read 25 to 40 records a row.
		{`SELECT c.id, c.g, c.n FROM c WHERE c.s IN ('s3', 's5') AND c.k > 3 ORDER BY c.g, c.n DESC`, 8},
	}
	var params []QueryParams
	for _, tc := range cases {
		params = append(params, QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 10, Query: tc.query})
	}
	// The composite's gap entries and the documents without /g built.
	be.orderReady(t, params...)
	for i, tc := range cases {
		q := tc.query
		filtered := false
		got := drainRows(t, be.e, params[i], func(n int, page *FeedPage) {
			if n == 0 {
				filtered = page.Plan != nil && page.Plan.Chosen.Access == plan.FilteredStream
			}
			// The rows' records, the next row's and one read ahead; on
			// the first page the sample of a stream tried first too.
			tried := 0
			if n == 0 {
				tried = plan.WalkSample + 1
			}
			if page.Examined > len(page.Items)*tc.per+3+tried {
				t.Errorf("%s: page %d read %d records for %d rows", q, n+1, page.Examined, len(page.Items))
			}
		})
		if want := oracleRows(t, q, docs, ""); len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: %d rows %.200v, want %d %.200v", q, len(got), got, len(want), want)
		}
		if !filtered {
			t.Errorf("%s: the first page did not choose the filtered stream", q)
		}
	}
	// With what each page keeps dropped before the next (a page then
	// collects the term's locations, and sorts its group, again), the
	// same rows.
	q := cases[0].query
	got := drainRows(t, be.e, params[0], func(int, *FeedPage) { be.e.kept.forget(time.Now().Add(time.Hour)) })
	if want := oracleRows(t, q, docs, ""); !slices.Equal(got, want) {
		t.Errorf("%s, nothing kept: %d rows, want %d", q, len(got), len(want))
	}
	// A write between two pages, which ended inside a group, gives the
	// term an item of that group and one of a later group: the pages
	// after them take both in.
	p := params[0]
	page, err := be.e.QueryItems(context.Background(), p)
	if err != nil || page.Continuation == "" {
		t.Fatalf("%v, token %q", err, page.Continuation)
	}
	be.seed(t, `{"id":"late","pk":"p0","g":0,"n":-1,"s":"s3"}`, `{"id":"later","pk":"p1","g":3,"n":-1,"s":"s3"}`)
	p.Continuation = page.Continuation
	rest := drainRows(t, be.e, p, nil)
	for _, row := range []string{`{"id":"late","g":0,"n":-1}`, `{"id":"later","g":3,"n":-1}`} {
		if !slices.Contains(rest, row) {
			t.Errorf("%s, written between the pages, is not among the rows after them", row)
		}
	}
}

// Before the composite's gap entries are built, a filtered stream of
// several keys sorts each group of equal first values, and a page that
// ends inside one keeps its members for the next with the filter's
// locations. An item written between the pages, of a later group and
// passing the filter, is taken into both (catchUp): without it in the
// locations, the walk of its group passes it over.
func TestFilteredStreamKeepsItsLocationsWithASortedGroup(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1,"indexingPolicy":{"indexingMode":"consistent",
		"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/g","order":"ascending"},{"path":"/n","order":"descending"}]]}}`)
	var items []string
	for i := range 4000 {
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","g":%d,"n":%d,"s":"s%d"}`, i, i%4, i%7, (i*7919)%4000, i/4%12))
	}
	be.seed(t, items...)
	p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 10, Query: `SELECT c.id, c.g, c.n FROM c WHERE c.s = 's3' ORDER BY c.g, c.n DESC`}
	page, err := be.e.QueryItems(context.Background(), p)
	if err != nil || page.Continuation == "" {
		t.Fatalf("%v, token %q", err, page.Continuation)
	}
	if page.Plan == nil || page.Plan.Chosen.Access != plan.FilteredStream {
		t.Fatalf("the first page's plan is %v, want the filtered stream", page.Plan)
	}
	got := make([]string, 0, len(page.Items))
	for _, it := range page.Items {
		got = append(got, string(it))
	}
	be.seed(t, `{"id":"later","pk":"p1","g":3,"n":-1,"s":"s3"}`)
	items = append(items, `{"id":"later","pk":"p1","g":3,"n":-1,"s":"s3"}`)
	p.Continuation = page.Continuation
	got = append(got, drainRows(t, be.e, p, nil)...)
	if want := oracleRows(t, p.Query, parseItems(t, items), ""); !slices.Equal(got, want) {
		t.Errorf("%d rows, want %d; the written item among them: %v", len(got), len(want), slices.Contains(got, `{"id":"later","g":3,"n":-1}`))
	}
}

// TestACompositeFiltersTheStream: an ORDER BY on one path beside terms a
// composite index's span bounds (an equality and a range under (/s, /n))
// filters its walk by the span's locations, counted and collected as one
// read of the span, where it counted each term and collected the
// equality's: the first page read 5,461 index entries for the span's 495
// items, and the drain 1,050 records. The pages after it take the
// locations kept, or, with
// nothing kept, collect the span again; a write between pages is taken
// in.
func TestACompositeFiltersTheStream(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"indexingPolicy":{"indexingMode":"consistent",
		"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/s","order":"ascending"},{"path":"/n","order":"ascending"}]]}}`)
	var items []string
	for i := range 10000 {
		items = append(items, fmt.Sprintf(`{"id":"d%05d","pk":"p%d","s":"s%d","n":%d}`, i, i%50, i/7%10, (i*7919)%10007%100))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	q := `SELECT c.id, c.n FROM c WHERE c.s = 's3' AND c.n > 50 ORDER BY c.id DESC`
	p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 10, Query: q}
	want := oracleRows(t, q, docs, "")
	first, records := 0, 0
	got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
		records += page.Examined
		if n > 0 {
			return
		}
		first = page.IndexEntries
		if c := page.Plan.Chosen; c.Access != plan.FilteredStream || c.Composite == nil {
			t.Errorf("the first page's plan: %s", page.Plan.Explain())
		}
	})
	if len(want) < 400 || !slices.Equal(got, want) {
		t.Fatalf("%d rows %.200v, want %d %.200v", len(got), got, len(want), want)
	}
	// The span's entries and the walk's to the tenth row.
	if first > len(want)+300 {
		t.Errorf("the first page read %d index entries; the span holds %d", first, len(want))
	}
	// Each row's record, and one read ahead a page.
	if pages := (len(want) + 9) / 10; records > len(want)+2*pages {
		t.Errorf("the drain read %d records for %d rows", records, len(want))
	}
	got = drainRows(t, be.e, p, func(int, *FeedPage) { be.e.kept.forget(time.Now().Add(time.Hour)) })
	if !slices.Equal(got, want) {
		t.Errorf("nothing kept: %d rows, want %d", len(got), len(want))
	}
	page, err := be.e.QueryItems(context.Background(), p)
	if err != nil || page.Continuation == "" {
		t.Fatalf("%v, token %q", err, page.Continuation)
	}
	be.seed(t, `{"id":"a","pk":"p0","s":"s3","n":99}`)
	p.Continuation = page.Continuation
	if rest := drainRows(t, be.e, p, nil); !slices.Contains(rest, `{"id":"a","n":99}`) {
		t.Errorf("the item written between the pages is not among the rows after them")
	}
}

// TestAStreamFiltersByItsNarrowestTerm: the filtered stream weighs every
// term it could filter by, a range beside an equality too, and a page
// filters by the one its plan chose, as the pages after it do. With the
// equality alone weighed (half the items) the stream walked plain, reading
// a record for every walked entry: 10,459 records for the 507 rows of
// WHERE c.t = 't1' AND c.a < 50 ORDER BY c.n, and 20,110 for the 1,013 of
// its IN list.
func TestAStreamFiltersByItsNarrowestTerm(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	for i := range 20000 {
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","t":"t%d","a":%d,"n":%d}`, i, i%100, i%2, (i*7919)%10007%1000, (i*31)%100))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	queries := []string{
		`SELECT c.id, c.n FROM c WHERE c.t = 't1' AND c.a < 50 ORDER BY c.n`,
		`SELECT c.id, c.n FROM c WHERE c.t IN ('t1', 't0') AND c.a < 50 ORDER BY c.n DESC`,
	}
	var params []QueryParams
	for _, q := range queries {
		params = append(params, QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 10, Query: q})
	}
	// The entries of the documents without /n built, which the walk
	// would otherwise find by a scan of the container.
	be.orderReady(t, params...)
	for i, q := range queries {
		p := params[i]
		want := oracleRows(t, q, docs, "")
		records := 0
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			records += page.Examined
			if n == 0 && page.Plan != nil && page.Plan.Chosen.Access != plan.FilteredStream {
				t.Errorf("%s: the first page's plan, want the filtered stream:\n%s", q, page.Plan.Explain())
			}
		})
		if len(want) < 500 || !slices.Equal(got, want) {
			t.Errorf("%s: %d rows %.200v, want %d %.200v", q, len(got), got, len(want), want)
		}
		// A record a row, and about as many again: each page reads the
		// passing documents of the group of equal c.n it resumes in
		// (a hundred values, two hundred documents each), to return
		// them in _rid order.
		if pages := (len(want) + 9) / 10; records > 2*len(want)+2*pages+plan.WalkSample+1 {
			t.Errorf("%s: the drain read %d records for %d rows", q, records, len(want))
		}
		// With nothing kept, a page collects the locations of the term
		// its token names again: the same rows, as few records.
		again := 0
		got = drainRows(t, be.e, p, func(_ int, page *FeedPage) {
			again += page.Examined
			be.e.kept.forget(time.Now().Add(time.Hour))
		})
		if !slices.Equal(got, want) {
			t.Errorf("%s, nothing kept: %d rows, want %d", q, len(got), len(want))
		}
		if again > records+records/4 {
			t.Errorf("%s, nothing kept: the drain read %d records, where it read %d", q, again, records)
		}
	}
}

// TestStreamTermsCountedAsFarAsTheyMatter runs ORDER BYs whose filter has
// an equality or IN list beside a narrower range. The first counted the
// IN list (nine tenths of the items) to the probe, 7,551 entries, for a
// stream filtered by the range: past where its entries cost what that
// stream does, and once the range is narrower, its count changes no
// choice (plan.CountSettled). The second, whose equality holds a tenth,
// filtered its walk by the equality, whose count had gathered its
// locations, and read a record for every tenth walked entry, where the
// range's locations, gathered by its own count, name a twentieth: each
// term's count gathers them now.
func TestStreamTermsCountedAsFarAsTheyMatter(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var items []string
	for i := range 20000 {
		items = append(items, fmt.Sprintf(`{"id":"x%d","pk":"p%d","n":%d,"m":%d,"h":%d}`, i, i%100, i*7919%20000, i%100, i%10))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	for _, tc := range []struct {
		query            string
		entries, records int // at most: the first page's entries, the drain's records
	}{
		// Before: 9,775 entries on the first page.
		{`SELECT c.id, c.n FROM c WHERE c.h IN (0, 1, 2, 3, 4, 5, 6, 7, 8) AND c.m < 5 ORDER BY c.n`, 3_000, 1_300},
		// Before: 4,069 entries on the first page, 2,028 records in all.
		{`SELECT c.id, c.n FROM c WHERE c.h = 3 AND c.m < 5 ORDER BY c.n`, 3_500, 1_200},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 10, Query: tc.query}
		be.orderReady(t, p)
		records := 0
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			records += page.Examined
			if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.FilteredStream || page.IndexEntries > tc.entries) {
				t.Errorf("%s: the first page read %d index entries by %v, want at most %d by the filtered stream", tc.query, page.IndexEntries, page.Plan, tc.entries)
			}
		})
		if want := oracleRows(t, tc.query, docs, ""); len(want) < 200 || !slices.Equal(got, want) {
			t.Errorf("%s: %d rows differ from the evaluator's %d", tc.query, len(got), len(want))
		}
		if records > tc.records {
			t.Errorf("%s: the drain read %d records, want at most %d", tc.query, records, tc.records)
		}
	}
}

// TestStreamFilteredByTheOr: an ORDER BY whose filter is an OR of terms on
// several paths walks its path reading the records only of the items the
// OR's entries name, on its first page from the locations the OR's
// weighing collected, on the pages after from those the page before kept,
// or, when they are gone, collected again.
func TestStreamFilteredByTheOr(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 20000 {
		u := hotEvery(i, 400)
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d,"u":"%s","w":"w%d","h":%d}`, i, i%50, i*7919%20000, u, i%67, i%10))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	for _, q := range []string{
		`SELECT c.id FROM c WHERE c.u = 'hot' OR c.w = 'w5' ORDER BY c.n`,
		`SELECT c.id FROM c WHERE c.h = 2 AND (c.u = 'hot' OR c.w = 'w5') ORDER BY c.n DESC`,
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 20, Query: q}
		be.orderReady(t, p)
		want := oracleRows(t, q, docs, "")
		for drop := range 2 {
			records := 0
			got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
				if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.FilteredStream || !page.Plan.Chosen.ByUnion) {
					t.Errorf("%s: the first page chose %v, want the stream filtered by the OR", q, page.Plan)
				}
				records += page.Examined
				if drop == 1 {
					be.e.kept.forget(time.Now().Add(time.Hour))
				}
			})
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Errorf("%s: %d rows, want %d", q, len(got), len(want))
			}
			// The OR's items, each read once: those that fail the
			// other term too.
			if limit := 367 + 100; records > limit {
				t.Errorf("%s (kept dropped: %v): read %d records for %d rows, want at most %d", q, drop == 1, records, len(want), limit)
			}
		}
	}
}

// A DISTINCT of one path walks the path's entries filtered by a term's
// locations, or by its OR's, as an ORDER BY does: a group's first
// document the filter's entries name is the one read, where before the
// walk read its documents one by one until one passed, most of the
// container's for a filter most documents fail. The pages after the first
// filter by the locations it kept, or collect them again.
func TestDistinctWalksItsFilteredStream(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 20000 {
		u := hotEvery(i, 10)
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","u":"%s","w":%d,"n":%d}`, i, i%50, u, i%1201, i%97))
	}
	be.seed(t, items...)
	docs := parseItems(t, items)
	for _, tc := range []struct {
		query string
		union bool
	}{
		{`SELECT DISTINCT c.w FROM c WHERE c.u = 'hot'`, false},
		{`SELECT DISTINCT VALUE c.w FROM c WHERE c.u = 'hot' ORDER BY c.w DESC`, false},
		{`SELECT DISTINCT VALUE c.w FROM c WHERE c.u = 'hot' OR c.n = 3`, true},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 100, Query: tc.query}
		be.orderReady(t, p)
		want := oracleRows(t, tc.query, docs, "")
		for drop := range 2 {
			records := 0
			got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
				if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.FilteredStream || page.Plan.Chosen.ByUnion != tc.union) {
					t.Errorf("%s: the first page chose %v, want a filtered stream", tc.query, page.Plan)
				}
				records += page.Examined
				if drop == 1 {
					be.e.kept.forget(time.Now().Add(time.Hour))
				}
			})
			if !strings.Contains(tc.query, "ORDER BY") {
				// In the order of their values, which the evaluation
				// does not promise.
				got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
			}
			if len(want) != 1201 || !slices.Equal(got, want) {
				t.Errorf("%s: %d rows, want %d", tc.query, len(got), len(want))
			}
			// A record a group, and one a page past its rows.
			if records > 1201+100 {
				t.Errorf("%s (kept dropped: %v): read %d records for %d rows", tc.query, drop == 1, records, len(want))
			}
		}
	}
}
