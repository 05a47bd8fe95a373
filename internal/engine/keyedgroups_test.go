package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/query/plan"
)

// A GROUP BY of whole groups pages in the order of its key: a page reads
// the documents of its own groups (and a run past the last), not the whole
// scope, so draining it reads the scope a few times at most however many
// pages it takes; and its pages hold the groups the whole evaluation
// makes, each once. Keys of every kind the index tells apart: absent,
// null, booleans, numbers, strings.
func TestWholeGroupsReadTheirOwnDocuments(t *testing.T) {
	be := newBatchEnv(t, "null")
	var docs []string
	for i := range 900 {
		g := fmt.Sprint(i % 90)
		switch {
		case i%17 == 0:
			g = ""
		case i%19 == 0:
			g = `,"g":null`
		case i%23 == 0:
			g = fmt.Sprintf(`,"g":%t`, i%2 == 0)
		case i%5 == 0:
			g = fmt.Sprintf(`,"g":"s%d"`, i%11)
		default:
			g = `,"g":` + g
		}
		docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p%d","k":%d%s}`, i, i%3, i%7, g))
	}
	be.seed(t, docs...)
	drain := func(p QueryParams) ([]string, int, int) { return drainGroups(t, be, p, nil) }
	keyed := QueryParams{ItemRef: batchRef("[\"p1\"]")}
	ranged := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true}
	for _, tc := range []struct {
		p     QueryParams
		query string
		// firstKey is set when a page reads the documents of its groups'
		// values of the first of several keys, a fifth of the scope or
		// less here, rather than its groups' own.
		firstKey bool
	}{
		{keyed, `SELECT c.g, COUNT(1) AS n, SUM(c.k) AS s FROM c GROUP BY c.g`, false},
		{keyed, `SELECT c.g, MAX(DocumentId(c)) AS d FROM c WHERE c.k > 2 GROUP BY c.g`, false},
		{keyed, `SELECT VALUE {"g": c.g, "ids": MakeSet(c.id)} FROM c GROUP BY c.g`, false},
		// The SDKs' rewrite, sent with a partition key: whole groups.
		{keyed, `SELECT [{"item": c.g}] AS groupByItems, {"g": c.g, "n": {"item": COUNT(1)}} AS payload FROM c GROUP BY c.g`, false},
		{ranged, `SELECT c.g, COUNT(1) AS n FROM c WHERE c.k != 4 GROUP BY c.g`, false},
		// Several keys: the stream sorts each value's documents of the
		// first by the others.
		{keyed, `SELECT c.g, c.k, COUNT(1) AS n FROM c GROUP BY c.g, c.k`, true},
		{ranged, `SELECT VALUE [c.k, c.g, MIN(c.id)] FROM c GROUP BY c.k, c.g`, true},
		// The partition key, one value in a logical partition, orders
		// nothing: the pages read their own groups' documents.
		{keyed, `SELECT c.pk, c.g, COUNT(1) AS n FROM c GROUP BY c.pk, c.g`, false},
		{keyed, `SELECT c.g, c.pk, SUM(c.k) AS s FROM c GROUP BY c.g, c.pk`, false},
		{QueryParams{ItemRef: batchRef(""), CrossPartition: true}, `SELECT c.pk, c.g, COUNT(1) AS n FROM c WHERE c.pk = "p2" GROUP BY c.pk, c.g`, false},
	} {
		whole := tc.p
		whole.Query, whole.MaxItemCount = tc.query, 1000
		want, once, _ := drain(whole)
		slices.Sort(want)
		for _, size := range []int{1, 3} {
			p := tc.p
			p.Query, p.MaxItemCount = tc.query, size
			got, examined, pages := drain(p)
			if len(got) != len(want) {
				t.Errorf("%s in pages of %d: %d rows, want %d", tc.query, size, len(got), len(want))
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s in pages of %d: rows differ from the whole evaluation's:\n%v\n%v", tc.query, size, got, want)
			}
			// Evaluating the scope on every page would read it once per
			// page: at least ten times over.
			bound := 4 * once
			if tc.firstKey {
				bound = pages * once / 5
			}
			if pages < 10 || examined > bound {
				t.Errorf("%s in pages of %d: %d records read in %d pages, where one evaluation reads %d", tc.query, size, examined, pages, once)
			}
		}
	}
}

// drainGroups drains p's pages and returns their rows, the records they
// read and how many there were; between pages it calls between, if given,
// with the rows so far.
func drainGroups(t *testing.T, be *batchEnv, p QueryParams, between func(rows []string)) (rows []string, examined, pages int) {
	t.Helper()
	for {
		page, err := be.e.QueryItems(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", p.Query, err)
		}
		pages++
		examined += page.Examined
		for _, it := range page.Items {
			rows = append(rows, string(it))
		}
		if p.Continuation = page.Continuation; p.Continuation == "" {
			return rows, examined, pages
		}
		if pages > 2000 {
			t.Fatalf("%s: no end after %d pages", p.Query, pages)
		}
		if between != nil {
			between(rows)
		}
	}
}

// Writes between the pages of a GROUP BY of whole groups, to groups the
// pages returned already, move no later group: each comes once, and with
// every document written before its page. Of keys the index tells apart,
// read in their order (a document added to or taken from a group before
// the position changes nothing after it), and of objects and numbers of
// 2^53 and more, which the index does not tell apart: their pages evaluate
// the scope, with its groups in the order of their first documents, where
// a count of the documents before the position would have shifted.
func TestWholeGroupsUnderWrites(t *testing.T) {
	ctx := context.Background()
	type keys struct {
		name string
		key  func(i int) string
	}
	var cases []struct {
		keys
		remove bool
	}
	for _, k := range []keys{
		{"numbers", func(i int) string { return fmt.Sprint(i) }},
		{"objects", func(i int) string { return fmt.Sprintf(`{"x":%d}`, i) }},
		{"large numbers", func(i int) string { return fmt.Sprint(1<<53 + 2*i) }},
	} {
		cases = append(cases, struct {
			keys
			remove bool
		}{k, false}, struct {
			keys
			remove bool
		}{k, true})
	}
	for _, tc := range cases {
		be := newBatchEnv(t, "null")
		var docs []string
		for i := range 120 {
			docs = append(docs, fmt.Sprintf(`{"id":"d%d","pk":"p","g":%s}`, i, tc.key(i%20)))
		}
		be.seed(t, docs...)
		p := QueryParams{ItemRef: batchRef(`["p"]`), MaxItemCount: 3, Query: `SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g`}
		added := 0
		rows, _, _ := drainGroups(t, be, p, func(rows []string) {
			// One more document in the first group returned, or one
			// fewer in the last.
			var first, last struct{ G json.RawMessage }
			if err := json.Unmarshal([]byte(rows[0]), &first); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(rows[len(rows)-1]), &last); err != nil {
				t.Fatal(err)
			}
			if !tc.remove {
				body := fmt.Sprintf(`{"id":"n%d","pk":"p","g":%s}`, added, first.G)
				if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: batchRef(`["p"]`), Mode: ModeCreate, Body: []byte(body)}); err != nil {
					t.Fatal(err)
				}
				added++
				return
			}
			var ids []string
			whole := QueryParams{ItemRef: batchRef(`["p"]`), Query: fmt.Sprintf(`SELECT VALUE c.id FROM c WHERE c.g = %s`, last.G)}
			page, err := be.e.QueryItems(ctx, whole)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				var id string
				_ = json.Unmarshal(it, &id)
				ids = append(ids, id)
			}
			// The group's last document, in the order of the scope: its
			// first stays where the evaluation's order of groups has it.
			if _, err := be.e.DeleteItem(ctx, DeleteItemParams{ItemRef: batchRef(`["p"]`), ID: ids[len(ids)-1]}); err != nil {
				t.Fatal(err)
			}
		})
		seen := map[string]int{}
		for _, row := range rows {
			r := groupRow(t, row)
			seen[string(r.G)]++
			if r.N != 6 {
				t.Errorf("%s, removing %t: group %s of %d documents, want 6", tc.name, tc.remove, r.G, r.N)
			}
		}
		if len(seen) != 20 || len(rows) != 20 {
			t.Errorf("%s, removing %t: %d rows of %d groups, want each of 20 once: %v", tc.name, tc.remove, len(rows), len(seen), seen)
		}
	}
}

// Between the pages of a GROUP BY read in its keys' order, a document
// moved into the group the last page ended before, from one further on
// and written before that group's first document, counts in that group;
// and groups of objects, which the index does not tell apart, written
// after the first page, come each once however documents are added to
// those returned. A page resumes at the start of a group, by its keys.
func TestWholeGroupsResumeAtTheirStart(t *testing.T) {
	ctx := context.Background()
	for _, keys := range []string{"c.g", "c.g, c.h"} {
		be := newBatchEnv(t, "null")
		var docs []string
		for i := range 120 {
			// A group's first document in the scan's order is the
			// first of those a greater key's groups have.
			docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p","g":%d,"h":1}`, i, 19-i%20))
		}
		be.seed(t, docs...)
		write := func(id, g string) {
			body := fmt.Sprintf(`{"id":%q,"pk":"p","g":%s,"h":1}`, id, g)
			if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: batchRef(`["p"]`), Mode: ModeUpsert, Body: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		}
		count := map[string]int{}
		for g := range 20 {
			count[fmt.Sprint(g)] = 6
		}
		p := QueryParams{ItemRef: batchRef(`["p"]`), MaxItemCount: 3, Query: `SELECT c.g, COUNT(1) AS n FROM c GROUP BY ` + keys}
		pages := 0
		rows, _, _ := drainGroups(t, be, p, func(rows []string) {
			pages++
			var last struct{ G json.RawMessage }
			if err := json.Unmarshal([]byte(rows[len(rows)-1]), &last); err != nil {
				t.Fatal(err)
			}
			var g int
			if err := json.Unmarshal(last.G, &g); err != nil {
				// In the objects: one more document in the first.
				write(fmt.Sprintf("o%d", pages), `{"x":0}`)
				return
			}
			if pages == 1 {
				for j := range 10 {
					o := fmt.Sprintf(`{"x":%d}`, j)
					write(fmt.Sprintf("a%d", j), o)
					write(fmt.Sprintf("b%d", j), o)
					count[o] = 2
				}
			}
			if g+2 < 20 {
				// The first document of group g+2, written before every
				// document of g+1, moves into g+1.
				write(fmt.Sprintf("d%03d", 17-g), fmt.Sprint(g+1))
				count[fmt.Sprint(g+1)]++
				count[fmt.Sprint(g+2)]--
			}
		})
		seen := map[string]bool{}
		for _, row := range rows {
			r := groupRow(t, row)
			if seen[string(r.G)] {
				t.Errorf("GROUP BY %s: group %s came twice", keys, r.G)
			}
			seen[string(r.G)] = true
			if r.N != count[string(r.G)] {
				t.Errorf("GROUP BY %s: group %s of %d documents, want %d", keys, r.G, r.N, count[string(r.G)])
			}
		}
		if len(seen) != 30 {
			t.Errorf("GROUP BY %s: %d groups, want 30", keys, len(seen))
		}
	}
}

// groupRow reads a row of {"g": key, "n": count}.
func groupRow(t *testing.T, row string) (r struct {
	G json.RawMessage
	N int
}) {
	t.Helper()
	if err := json.Unmarshal([]byte(row), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// A partition key of 2^53 or more is not taken as one value of its path
// in its logical partition: 2^53 and 2^53 + 1 are one float64, so share a
// partition, and make two groups. Each group still comes once.
func TestWholeGroupsOfLargeKeysInOnePartition(t *testing.T) {
	be := newBatchEnv(t, "null")
	var docs []string
	for i := range 60 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%d","pk":%d,"g":%d}`, i, 1<<53+i%2, i%5))
	}
	be.seed(t, docs...)
	p := QueryParams{ItemRef: batchRef(fmt.Sprintf("[%d]", 1<<53)), Query: `SELECT c.pk, c.g, COUNT(1) AS n FROM c GROUP BY c.pk, c.g`, MaxItemCount: 1}
	rows, _, _ := drainGroups(t, be, p, nil)
	seen := map[string]int{}
	for _, r := range rows {
		seen[r]++
	}
	if len(rows) != 10 || len(seen) != 10 {
		t.Errorf("%d rows of %d groups, want each of 10 once: %v", len(rows), len(seen), rows)
	}
}

// Under a hierarchical partition key, the paths of the prefix a query is
// given are left out of its keys' order, and the others kept: each group
// comes once, and the drain reads the scope a few times at most.
func TestWholeGroupsUnderAHierarchicalPrefix(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/a","/b"],"kind":"MultiHash","version":2}}`)
	var docs []string
	for i := range 600 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%d","a":"x%d","b":"y%d","g":%d}`, i, i%2, i%3, i%40))
	}
	be.seed(t, docs...)
	for _, tc := range []struct {
		key, query string
		groups     int
	}{
		{`["x1"]`, `SELECT c.a, c.b, c.g, COUNT(1) AS n FROM c GROUP BY c.a, c.g, c.b`, 60},
		{`["x1"]`, `SELECT c.a, c.g, COUNT(1) AS n FROM c GROUP BY c.a, c.g`, 20},
		{`["x0","y2"]`, `SELECT c.b, c.a, c.g, COUNT(1) AS n FROM c GROUP BY c.b, c.a, c.g`, 20},
	} {
		p := QueryParams{ItemRef: batchRef(tc.key), Query: tc.query, MaxItemCount: 1000}
		want, once, _ := drainGroups(t, be, p, nil)
		p.MaxItemCount = 2
		got, examined, pages := drainGroups(t, be, p, nil)
		slices.Sort(want)
		slices.Sort(got)
		if len(want) != tc.groups || !slices.Equal(got, want) {
			t.Errorf("%s under %s: %d rows in pages of 2, %d in one page, want %d each, the same", tc.query, tc.key, len(got), len(want), tc.groups)
		}
		if examined > 4*once {
			t.Errorf("%s under %s: %d records read in %d pages, where one evaluation reads %d", tc.query, tc.key, examined, pages, once)
		}
	}
}

// A GROUP BY of several keys whose first has few values reads, without a
// composite index on the keys, the documents of that value on a page that
// begins in it, and keeps them sorted for the next page (keptGroup), which
// reads its own groups' documents while the container is not written;
// with the kept members dropped before every page, every page reads the
// documents of its value again. With a composite, once the index's gap
// entries are built (absent.go), its pages walk the composite from their
// position and read their own groups' documents.
func TestWholeGroupsOfSeveralKeysThroughAComposite(t *testing.T) {
	const docs, groups = 3000, 1500
	for _, tc := range []struct {
		policy string
		bound  int // records the drain reads at most
	}{
		// Each value's documents once, and each page's groups'.
		{"", 3 * docs},
		{`,"indexingPolicy":{"indexingMode":"consistent","includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/g","order":"ascending"},{"path":"/k","order":"descending"}]]}`, 2 * docs},
	} {
		be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}`+tc.policy+`}`)
		var items []string
		for i := range docs {
			items = append(items, fmt.Sprintf(`{"id":"d%04d","pk":"p","g":%d,"k":%d}`, i, i%3, i%500))
		}
		be.seed(t, items...)
		const query = `SELECT c.g, c.k, COUNT(1) AS n FROM c GROUP BY c.g, c.k`
		p := QueryParams{ItemRef: batchRef(`["p"]`), Query: query, MaxItemCount: 50}
		// A first page asks for the gap entries, which the builder then
		// makes.
		if _, err := be.e.QueryItems(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		drainIndexer(t, be.e.NewIndexer(nil))
		for _, drop := range []bool{false, true} {
			var between func([]string)
			if drop {
				between = func([]string) { be.e.kept.forget(time.Now().Add(time.Hour)) }
			}
			rows, examined, pages := drainGroups(t, be, p, between)
			seen := map[string]bool{}
			for _, r := range rows {
				seen[r] = true
			}
			if len(rows) != groups || len(seen) != groups {
				t.Errorf("composite %v: %d rows of %d groups, want each of %d once", tc.policy != "", len(rows), len(seen), groups)
			}
			if tc.policy == "" && drop && examined < pages*docs/4 {
				t.Errorf("without a composite, the sorted groups dropped: %d records in %d pages, want a third of the scope a page", examined, pages)
			}
			if examined > tc.bound && !(drop && tc.policy == "") {
				t.Errorf("composite %v, kept groups dropped %v: %d records in %d pages, want at most %d", tc.policy != "", drop, examined, pages, tc.bound)
			}
		}
	}
}

// A GROUP BY whose filter fixes the path a composite index names before
// the group keys reads, once the composite's entries are complete, the
// documents of its page's groups alone, where each page read every
// document of its groups' values the filter then mostly passed over.
func TestWholeGroupsOfAnEqualityThroughAComposite(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"indexingPolicy":{"indexingMode":"consistent","includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/region","order":"ascending"},{"path":"/k","order":"descending"}]]}}`)
	var items []string
	for i := range 4000 {
		items = append(items, fmt.Sprintf(`{"id":"d%04d","pk":"p","region":"r%d","k":%d,"n":%d}`, i, i%10, i%400, i))
	}
	be.seed(t, items...)
	const query = `SELECT c.k, COUNT(1) AS c, SUM(c.n) AS s FROM c WHERE c.region = "r3" GROUP BY c.k`
	p := QueryParams{ItemRef: batchRef(`["p"]`), Query: query, MaxItemCount: 1000}
	want, _, _ := drainGroups(t, be, p, nil)
	p.MaxItemCount = 10
	before, beforeRead, pages := drainGroups(t, be, p, nil)
	drainIndexer(t, be.e.NewIndexer(nil))
	after, afterRead, _ := drainGroups(t, be, p, nil)
	for _, got := range [][]string{before, after} {
		if len(want) != 40 || !slices.Equal(got, want) {
			t.Errorf("%d groups in pages of 10 differ from the %d of one page", len(got), len(want))
		}
	}
	// 40 groups of ten documents in four pages: a page reads its groups'
	// ten documents each and a few more; before, every document of its
	// groups' values of k, nine in ten of them in other regions.
	if afterRead > 2*400 || beforeRead < 4*afterRead {
		t.Errorf("records read by the drain: %d in %d pages before the composite's entries, %d after", beforeRead, pages, afterRead)
	}
}

// A page of a GROUP BY fed by the ordered stream reads ahead as many
// documents as it still wants groups, and one more to tell whether the
// last goes on, rather than a page's worth at every turn: through kept
// sorted groups of one document each, a page reads its own groups'
// documents and one more.
func TestWholeGroupsReadAheadForTheirGroups(t *testing.T) {
	const docs, values, size = 3000, 3, 100
	be := newBatchEnv(t, "null")
	var items []string
	for i := range docs {
		items = append(items, fmt.Sprintf(`{"id":"d%04d","pk":"p%d","g":%d,"k":%d}`, i, i%7, i%values, i))
	}
	be.seed(t, items...)
	p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: `SELECT c.g, c.k, COUNT(1) AS n FROM c GROUP BY c.g, c.k`, MaxItemCount: size}
	// A first page asks for the entries the stream reads, which the
	// builder then makes.
	if _, err := be.e.QueryItems(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	drainIndexer(t, be.e.NewIndexer(nil))
	rows, examined, pages := drainGroups(t, be, p, nil)
	if len(rows) != docs {
		t.Fatalf("%d rows, want %d", len(rows), docs)
	}
	// Each value's documents once, to sort them, and each page its
	// groups' and one more.
	if bound := docs + pages*(size+2); examined > bound {
		t.Errorf("%d records read in %d pages, want at most %d", examined, pages, bound)
	}
}

// A sorted group a page kept (keptGroup) serves the next page after
// writes too: the items written since (catchUp) are read and placed anew,
// each in or out of the group, where the page read the whole group again.
// Two stores get the same documents and the same random writes after
// every page (drainBesideWrites): the one that keeps its groups gives the
// rows of the one that drops them before every page, for a fraction of
// the records.
func TestKeptGroupsTakeInWrites(t *testing.T) {
	var items []string
	for i := range 3000 {
		k := fmt.Sprintf(`,"k":%d`, i%500)
		if i%10 == 3 {
			k = "" // a gap entry in the composite: its group is read whole
		}
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","g":%d%s}`, i, i%3, i/7%3, k))
	}
	mix := writeMix{
		doc: func(rng *rand.Rand, id, pk string) string {
			k := fmt.Sprintf(`,"k":%d`, rng.IntN(500))
			if rng.IntN(5) == 0 {
				k = ""
			}
			return fmt.Sprintf(`{"id":%q,"pk":%q,"g":%d%s}`, id, pk, rng.IntN(3), k)
		},
		burst: func(rng *rand.Rand, id string) string {
			return fmt.Sprintf(`{"id":%q,"pk":"p0","g":%d,"k":%d}`, id, rng.IntN(3), rng.IntN(500))
		},
	}
	composite := `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"indexingPolicy":{"indexingMode":"consistent","includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/g","order":"ascending"},{"path":"/k","order":"descending"}]]}}`
	cases := []struct {
		body, query, pk string
	}{
		{"", `SELECT c.g, c.k, COUNT(1) AS n FROM c GROUP BY c.g, c.k`, ""},
		{composite, `SELECT c.id, c.g, c.k FROM c ORDER BY c.g, c.k DESC`, ""},
		{composite, `SELECT c.id, c.g, c.k FROM c ORDER BY c.g DESC, c.k`, `["p1"]`},
	}
	for seed := range uint64(2) {
		if seed > 0 && RaceEnabled {
			break // the unit run draws the second seed
		}
		for i, tc := range cases {
			if testing.Short() && (seed > 0 || i == 1) {
				continue // over PostgreSQL, one seed and the shorter drains
			}
			p := QueryParams{ItemRef: batchRef(tc.pk), MaxItemCount: 50, Query: tc.query}
			if tc.pk == "" {
				p.RangeID, p.CrossPartition = "0", true
			}
			d := drainBesideWrites(t, tc.body, items, p, seed, mix, 0)
			if len(d.rows[0]) < 300 || !slices.Equal(d.rows[0], d.rows[1]) {
				t.Errorf("seed %d: %s in %q: %d rows kept, %d dropped: %.300v, want %.300v", seed, tc.query, tc.pk, len(d.rows[0]), len(d.rows[1]), d.rows[0], d.rows[1])
				continue
			}
			// The pages after a burst read their groups again.
			var kept, dropped int
			for n := range min(len(d.records[0]), len(d.records[1])) {
				if n == 0 || !d.burst[n-1] {
					kept, dropped = kept+d.records[0][n], dropped+d.records[1][n]
				}
			}
			if kept*3 > dropped {
				t.Errorf("seed %d: %s in %q: %d records read with the groups kept, %d without", seed, tc.query, tc.pk, kept, dropped)
			}
		}
	}
}

// A GROUP BY whose filter a term's entries answer reads the documents
// that pass it once and groups them, where its groups, read in the order
// of their key, would read more: a key of few values holds every document
// in a page's groups, and a filter that most groups' documents fail has
// the walk read far past a page's groups to fill it. A key of many values
// without such a filter still pages in its order. Before, the first read
// every record of the container, the others every entry of the key.
func TestWholeGroupsUnderAFilterReadItsDocumentsOnce(t *testing.T) {
	be := newBatchEnv(t, "null")
	var docs []string
	for i := range 20000 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%05d","pk":"p%d","s":%d,"m":%d,"k":%d}`, i, i%10, i%50, i/10%3, i*37%2000))
	}
	be.seed(t, docs...)
	ranged := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 100}
	for i, tc := range []struct {
		query            string
		rows             int
		records, entries int // at most, on the first page
		byKey            bool
	}{
		// 6,670 documents pass, in 50 groups. The entries: the filter
		// term's, counted once for both plans the page weighs, and the
		// key's of the first groups. (A COUNT would be counted from the
		// index: groupCountByIndex.)
		{`SELECT c.s, MAX(c.k) AS n FROM c WHERE c.m = 1 GROUP BY c.s`, 50, 7000, 15000, false},
		// 400 documents pass, in 3 groups of m, and 40 groups of k
		// among its 2,000 values. Their 400 entries are read a time
		// more, to find that counting the groups from the key's 20,000
		// entries would cost more than their records.
		{`SELECT c.m, COUNT(1) AS n FROM c WHERE c.s = 7 GROUP BY c.m`, 3, 410, 6600, false},
		{`SELECT c.k, COUNT(1) AS n FROM c WHERE c.s = 7 GROUP BY c.k`, 40, 410, 2300, false},
		// 2,000 groups of 10 documents: pages of 100 groups in key order,
		// and those of a COUNT alone counted from the key's entries, a
		// record a group for its value (groupCountByIndex).
		{`SELECT c.k, MAX(c.s) AS n FROM c GROUP BY c.k`, 2000, 1010, 0, true},
		{`SELECT c.k, COUNT(1) AS n FROM c GROUP BY c.k`, 2000, 100, 1010, false},
	} {
		p := ranged
		p.Query = tc.query
		// The entries its first page asks for built: those of the
		// documents without the key.
		be.orderReady(t, p)
		page, err := be.e.QueryItems(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if stream := page.Plan != nil && page.Plan.Chosen.Access.Streams(); stream != tc.byKey {
			t.Errorf("%s: page 1 by %v", tc.query, page.Plan)
		}
		if page.Examined > tc.records || tc.entries > 0 && page.IndexEntries > tc.entries {
			t.Errorf("%s: page 1 read %d records and %d index entries", tc.query, page.Examined, page.IndexEntries)
		}
		if !everyOther(i) {
			continue
		}
		rows, _, _ := drainGroups(t, be, p, nil)
		whole := p
		whole.Query, whole.MaxItemCount = strings.Replace(tc.query, " GROUP BY", " AND true GROUP BY", 1), 5000
		if !strings.Contains(tc.query, "WHERE") {
			whole.Query = strings.Replace(tc.query, "GROUP BY", "WHERE true GROUP BY", 1)
		}
		want, _, _ := drainGroups(t, be, whole, nil)
		slices.Sort(rows)
		slices.Sort(want)
		if len(rows) != tc.rows || !slices.Equal(rows, want) {
			t.Errorf("%s: %d rows, want %d, the evaluation's", tc.query, len(rows), tc.rows)
		}
	}
}

// The pages after a GROUP BY's first page that walked the key's entries
// filtered by a term's locations (plan.FilteredStream) walk them so too,
// reading the records of their groups' documents that pass the term
// alone. Before, the token said an unfiltered stream: every later page
// read the record of every entry it walked.
func TestWholeGroupsKeepTheirFilteredStream(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 20000 {
		u := hotEvery(i, 10)
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","u":"%s","w":%d,"n":%d}`, i, i%50, u, i%1201, i%7))
	}
	be.seed(t, items...)
	p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 100,
		Query: `SELECT c.w, MAX(c.n) AS n FROM c WHERE c.u = 'hot' GROUP BY c.w`}
	be.orderReady(t, p)
	// 2,000 documents pass, about 1.7 in each of 1,201 groups: a page's
	// 100 groups hold about 170.
	got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
		if n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.FilteredStream) {
			t.Fatalf("page 1 by %v, want a filtered stream", page.Plan)
		}
		if page.Examined > 250 {
			t.Errorf("page %d read %d records for %d groups", n+1, page.Examined, len(page.Items))
		}
	})
	whole := p
	whole.Query, whole.MaxItemCount = strings.Replace(p.Query, " GROUP BY", " AND true GROUP BY", 1), 5000
	want, _, _ := drainGroups(t, be, whole, nil)
	slices.Sort(got)
	slices.Sort(want)
	if len(got) != 1201 || !slices.Equal(got, want) {
		t.Errorf("%d rows, want 1,201, the evaluation's", len(got))
	}
}
