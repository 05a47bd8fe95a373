package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

var retrievedRE = regexp.MustCompile(`retrievedDocumentCount=(\d+)`)

// queryRaw runs a cross-partition query page by page and returns the ids of
// the rows and the documents the server examined, from the query metrics.
func (e *env) queryRaw(t *testing.T, query string) (ids []string, examined int) {
	t.Helper()
	cont := ""
	for {
		hdr := map[string]string{
			"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true",
			"x-ms-documentdb-query-enablecrosspartition": "true", "x-ms-documentdb-populatequerymetrics": "true",
			"x-ms-documentdb-partitionkeyrangeid": "0", // as the SDKs send per range
		}
		if cont != "" {
			hdr["x-ms-continuation"] = cont
		}
		r := e.do("POST", "/dbs/db/colls/c/docs", mustJSON(t, map[string]any{"query": query}), hdr)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", query, r.status, r.body)
		}
		var page struct{ Documents []json.RawMessage }
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		for _, d := range page.Documents {
			var it struct{ ID string }
			_ = json.Unmarshal(d, &it)
			ids = append(ids, it.ID)
		}
		m := retrievedRE.FindStringSubmatch(r.header.Get("x-ms-documentdb-query-metrics"))
		if m == nil {
			t.Fatalf("no query metrics: %v", r.header)
		}
		n, _ := strconv.Atoi(m[1])
		examined += n
		if cont = r.header.Get("x-ms-continuation"); cont == "" {
			return ids, examined
		}
	}
}

func idsWhere(n int, keep func(i int) bool) []string {
	var out []string
	for i := 0; i < n; i++ {
		if keep(i) {
			out = append(out, fmt.Sprint(i))
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, ",") == strings.Join(b, ",")
}

func TestRangeIndex(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	const n = 200
	for i := 0; i < n; i++ {
		pk := fmt.Sprint(i % 4)
		body := fmt.Sprintf(`{"id":"%d","pk":"%s","n":%d,"cat":%d,"name":"item-%03d","tags":["t%d"]}`, i, pk, i, i%10, i, i%3)
		if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(pk), []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		query       string
		want        []string
		maxExamined int // the index must narrow the candidates to about the rows
	}{
		{"SELECT * FROM c WHERE c.cat = 3", idsWhere(n, func(i int) bool { return i%10 == 3 }), 20},
		{"SELECT * FROM c WHERE c.n >= 50 AND c.n < 60", idsWhere(n, func(i int) bool { return i >= 50 && i < 60 }), 11},
		{"SELECT * FROM c WHERE c.n > 190", idsWhere(n, func(i int) bool { return i > 190 }), 10},
		{"SELECT * FROM c WHERE c.cat IN (1, 2) AND c.n < 100", idsWhere(n, func(i int) bool { return (i%10 == 1 || i%10 == 2) && i < 100 }), 40},
		{"SELECT * FROM c WHERE STARTSWITH(c.name, 'item-01')", idsWhere(n, func(i int) bool { return i >= 10 && i < 20 }), 10},
		{"SELECT * FROM c WHERE c.id = '42'", []string{"42"}, 1},
		{"SELECT * FROM c WHERE c.cat = '3'", nil, 0}, // another type: nothing matches
		{"SELECT * FROM c WHERE c.cat = 3 ORDER BY c.n DESC", idsWhere(n, func(i int) bool { return i%10 == 3 }), 20},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.cat = 3", nil, 20},
		{"SELECT * FROM c WHERE ARRAY_CONTAINS(c.tags, 't1')", idsWhere(n, func(i int) bool { return i%3 == 1 }), n}, // no index use: a scan
	}
	for _, tt := range cases {
		t.Run(tt.query, func(t *testing.T) {
			ids, examined := e.queryRaw(t, tt.query)
			if strings.HasPrefix(tt.query, "SELECT VALUE COUNT") {
				ids = nil
			}
			if !sameSet(ids, tt.want) {
				t.Fatalf("rows %v, want %v", ids, tt.want)
			}
			if examined > tt.maxExamined {
				t.Fatalf("examined %d documents, want at most %d (the index was not used)", examined, tt.maxExamined)
			}
		})
	}

	// Writes keep the index exact: move item 3 out of category 3, delete 13.
	pk3 := azcosmos.NewPartitionKeyString("3")
	if _, err := c.ReplaceItem(ctx, pk3, "3", []byte(`{"id":"3","pk":"3","n":3,"cat":99,"name":"x"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteItem(ctx, azcosmos.NewPartitionKeyString("1"), "13", nil); err != nil {
		t.Fatal(err)
	}
	want := idsWhere(n, func(i int) bool { return i%10 == 3 && i != 3 && i != 13 })
	if ids, examined := e.queryRaw(t, "SELECT * FROM c WHERE c.cat = 3"); !sameSet(ids, want) || examined != len(want) {
		t.Fatalf("after writes: %v (examined %d), want %v", ids, examined, want)
	}
	if ids, _ := e.queryRaw(t, "SELECT * FROM c WHERE c.cat = 99"); !sameSet(ids, []string{"3"}) {
		t.Fatalf("cat 99: %v", ids)
	}

	// A new policy that excludes /cat: queries stay correct at once (they
	// scan while the index is rebuilt, and afterwards since cat is no longer
	// indexed), and other paths use the rebuilt index.
	props := azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		IndexingPolicy: &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
			IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}}, ExcludedPaths: []azcosmos.ExcludedPath{{Path: "/cat/?"}}}}
	if _, err := c.Replace(ctx, props, nil); err != nil {
		t.Fatal(err)
	}
	if ids, _ := e.queryRaw(t, "SELECT * FROM c WHERE c.cat = 3"); !sameSet(ids, want) {
		t.Fatalf("during rebuild: %v, want %v", ids, want)
	}
	for {
		more, err := e.srv.Indexer().Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
	}
	if ids, examined := e.queryRaw(t, "SELECT * FROM c WHERE c.cat = 3"); !sameSet(ids, want) || examined < n-1 {
		t.Fatalf("after rebuild, excluded path: %v examined %d, want %v by a scan", ids, examined, want)
	}
	if ids, examined := e.queryRaw(t, "SELECT * FROM c WHERE c.n = 7"); !sameSet(ids, []string{"7"}) || examined != 1 {
		t.Fatalf("after rebuild, included path: %v examined %d", ids, examined)
	}
}

// Queries that need an index the policy does not keep are refused as the
// service refuses them; a scan header lets range filters through.
func TestQueriesNeedingAnIndex(t *testing.T) {
	e := start(t)
	e.database("db")
	for _, body := range []string{
		`{"id":"none","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"indexingMode":"none","automatic":false}}`,
		`{"id":"excl","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"indexingMode":"consistent","includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/n/?"}]}}`,
	} {
		if r := e.do("POST", "/dbs/db/colls", []byte(body), nil); r.status != 201 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
	}
	for _, coll := range []string{"none", "excl"} {
		if r := e.do("POST", "/dbs/db/colls/"+coll+"/docs", []byte(`{"id":"1","pk":"a","n":5}`), map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}); r.status != 201 {
			t.Fatalf("create item: %d %s", r.status, r.body)
		}
	}
	cases := []struct {
		coll, query string
		scan        bool
		status      int
	}{
		{"none", "SELECT * FROM c WHERE c.n = 5", false, 200},
		{"none", "SELECT * FROM c WHERE c.n > 1", false, 400},
		{"none", "SELECT * FROM c WHERE c.n > 1", true, 200},
		{"none", "SELECT * FROM c ORDER BY c.n", true, 400},
		{"excl", "SELECT * FROM c WHERE c.n > 1", false, 400},
		{"excl", "SELECT * FROM c WHERE c.id > '0'", false, 200},
		{"excl", "SELECT * FROM c ORDER BY c.n", false, 400},
		{"excl", "SELECT * FROM c ORDER BY c.id", false, 200},
	}
	for _, tt := range cases {
		hdr := map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true",
			"x-ms-documentdb-partitionkey": `["a"]`}
		if tt.scan {
			hdr["x-ms-documentdb-query-enable-scan"] = "true"
		}
		r := e.do("POST", "/dbs/db/colls/"+tt.coll+"/docs", mustJSON(t, map[string]any{"query": tt.query}), hdr)
		if r.status != tt.status {
			t.Errorf("%s on %s (scan %v): %d, want %d: %s", tt.query, tt.coll, tt.scan, r.status, tt.status, r.body)
		}
	}
}

// ORDER BY with TOP or OFFSET/LIMIT walks the index and stops once it has
// the rows: it reads about as many documents as it returns (and those the
// filter drops on the way), and gives the answer a full sort would.
func TestOrderByFromIndex(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	const n = 200
	for i := 0; i < n; i++ {
		pk := fmt.Sprint(i % 4)
		body := fmt.Sprintf(`{"id":"%d","pk":"%s","n":%d,"even":%v}`, i, pk, i, i%2 == 0)
		if i == 7 {
			body = fmt.Sprintf(`{"id":"%d","pk":"%s","n":[1,2],"even":false}`, i, pk) // an array sorts above every number
		}
		if i == 9 {
			body = fmt.Sprintf(`{"id":"%d","pk":"%s","even":false}`, i, pk) // no n at all
		}
		if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(pk), []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		query       string
		want        []string
		maxExamined int
	}{
		{"SELECT TOP 3 c.id FROM c ORDER BY c.n DESC", []string{"7", "199", "198"}, 4}, // three, and the array
		// every record read counts: the walk reads the odd ones it skips.
		{"SELECT TOP 3 c.id FROM c WHERE c.even = true ORDER BY c.n DESC", []string{"198", "196", "194"}, 7},
		{"SELECT c.id FROM c ORDER BY c.n DESC OFFSET 2 LIMIT 2", []string{"198", "197"}, 5},
		{"SELECT TOP 2 c.id FROM c WHERE c.n >= 100 ORDER BY c.n", []string{"100", "101"}, 2},
		// ascending without a filter on n: documents lacking n come first,
		// so this one scans.
		{"SELECT TOP 2 c.id FROM c ORDER BY c.n", []string{"9", "0"}, n},
		// fewer documents than TOP have the property: a scan finds the rest.
		{"SELECT TOP 500 VALUE c.id FROM c WHERE c.id = '9' ORDER BY c.n DESC", []string{"9"}, n},
	}
	for _, tt := range cases {
		t.Run(tt.query, func(t *testing.T) {
			ids, examined := e.queryRaw(t, tt.query)
			if strings.Contains(tt.query, "VALUE") {
				ids = nil
				r := e.do("POST", "/dbs/db/colls/c/docs", mustJSON(t, map[string]any{"query": tt.query}), map[string]string{
					"Content-Type": "application/query+json", "x-ms-documentdb-partitionkeyrangeid": "0"})
				var page struct{ Documents []string }
				_ = json.Unmarshal(r.body, &page)
				ids = page.Documents
			}
			if strings.Join(ids, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("rows %v, want %v", ids, tt.want)
			}
			if examined > tt.maxExamined {
				t.Fatalf("examined %d documents, want at most %d", examined, tt.maxExamined)
			}
		})
	}
}

// A composite index serves ORDER BY on its paths after an equality, page
// by page through the SDK, reading about as many documents as it returns;
// ORDER BY on several paths that no composite follows is refused.
func TestCompositeIndex(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		IndexingPolicy: &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
			IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}},
			CompositeIndexes: [][]azcosmos.CompositeIndex{{
				{Path: "/cat", Order: azcosmos.CompositeIndexAscending}, {Path: "/n", Order: azcosmos.CompositeIndexDescending}}}}})
	const n = 200
	for i := 0; i < n; i++ {
		pk := fmt.Sprint(i % 4)
		body := fmt.Sprintf(`{"id":"%d","pk":"%s","cat":%d,"n":%d}`, i, pk, i%5, i)
		if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(pk), []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	const query = "SELECT TOP 4 c.id FROM c WHERE c.cat = 2 AND c.n >= 0 ORDER BY c.cat, c.n DESC"
	pager := c.NewQueryItemsPager(query, azcosmos.NewPartitionKeyString("1"), &azcosmos.QueryOptions{PageSizeHint: 1})
	var ids []string
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			var row struct{ ID string }
			_ = json.Unmarshal(it, &row)
			ids = append(ids, row.ID)
		}
	}
	// In partition "1" (i%4 == 1) with cat 2 (i%5 == 2): i ≡ 17 mod 20.
	if got, want := strings.Join(ids, ","), "197,177,157,137"; got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	r := e.do("POST", "/dbs/db/colls/c/docs", mustJSON(t, map[string]any{"query": query}), map[string]string{
		"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true", "x-ms-documentdb-populatequerymetrics": "true",
		"x-ms-documentdb-partitionkey": `["1"]`})
	if plan := r.header.Get("x-ms-mayfly-query-plan"); r.status != 200 || !strings.Contains(plan, "composite-ordered") {
		t.Fatalf("%d %s, plan %q: want the composite walk", r.status, r.body, plan)
	}
	if m := retrievedRE.FindStringSubmatch(r.header.Get("x-ms-documentdb-query-metrics")); m == nil || m[1] != "4" {
		t.Fatalf("query metrics %q: want 4 documents read", r.header.Get("x-ms-documentdb-query-metrics"))
	}
	for _, q := range []string{"SELECT * FROM c ORDER BY c.n, c.cat", "SELECT * FROM c ORDER BY c.cat, c.n"} {
		_, err := c.NewQueryItemsPager(q, azcosmos.NewPartitionKeyString("1"), nil).NextPage(ctx)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != 400 || !strings.Contains(err.Error(), "corresponding composite index") {
			t.Errorf("%s: %v, want 400 for want of a composite index", q, err)
		}
	}
}

// A GROUP BY the Go SDK sends as written, with a partition key, returns
// whole groups page by page, each once, and each page's charge is about
// the first's: it reads its own groups' documents, where every page read
// the whole partition.
func TestGroupByPagesThroughTheSDK(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	const n = 1200
	for i := range n {
		pk := "p"
		if i%4 == 0 {
			pk = "other"
		}
		body := fmt.Sprintf(`{"id":"%d","pk":"%s","g":%d,"n":%d}`, i, pk, i%150, i)
		if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(pk), []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	drain := func(query string, size int32) (map[float64][2]float64, []float32) {
		pager := c.NewQueryItemsPager(query, azcosmos.NewPartitionKeyString("p"), &azcosmos.QueryOptions{PageSizeHint: size})
		groups := map[float64][2]float64{}
		var charges []float32
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			charges = append(charges, page.RequestCharge)
			for _, it := range page.Items {
				var row struct{ G, N, S float64 }
				if err := json.Unmarshal(it, &row); err != nil {
					t.Fatal(err)
				}
				if _, ok := groups[row.G]; ok {
					t.Fatalf("%s: group %v came twice", query, row.G)
				}
				groups[row.G] = [2]float64{row.N, row.S}
			}
		}
		return groups, charges
	}
	for _, query := range []string{
		// Read in the key's order: a page reads its own groups' documents.
		"SELECT c.g, COUNT(1) AS n, SUM(c.n) AS s FROM c GROUP BY c.g",
		// A key that is an expression: the first page makes every group,
		// and the pages after it return those it kept.
		"SELECT c.g + 0 AS g, COUNT(1) AS n, SUM(c.n) AS s FROM c GROUP BY c.g + 0",
	} {
		want, whole := drain(query, 1000)
		if len(want) != 150 || len(whole) != 1 {
			t.Fatalf("%s: %d groups in %d pages, want 150 in one", query, len(want), len(whole))
		}
		got, charges := drain(query, 5)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: groups in pages of 5 differ from those of one page:\n%v\n%v", query, got, want)
		}
		// Page 1 may scan the partition for documents without the key;
		// the pages after it read at most their own groups' documents (6
		// each, and runs past them), where each read all 900 before.
		if len(charges) != 30 || charges[29] > 3*charges[1] || charges[15] > whole[0]/4 {
			t.Fatalf("%s: charges of 30 pages %v; one page of every group %v", query, charges, whole)
		}
	}
}

// An OFFSET and LIMIT over a list of partition keys, sent whole as the Data
// Explorer sends it (x-ms-mayfly-query-whole; the gateway refuses it to the
// SDKs, which send each range OFFSET 0), a page of three rows at a time,
// returns the window of the rows the same query makes without it, and
// reads the listed partitions only: the partitions it skips whole by their
// counts, not through the other term's entries across the container.
func TestOffsetOverAKeyListSentWhole(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	const parts, per = 40, 20
	for i := range parts * per {
		pk := fmt.Sprintf("p%d", i/per)
		body := fmt.Sprintf(`{"id":"%d","pk":"%s","n":%d,"s":"s%d"}`, i, pk, i%per, i%4)
		if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(pk), []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	drain := func(query string) (ids []string, examined int) {
		cont := ""
		for pages := 0; ; pages++ {
			hdr := map[string]string{
				"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true", "x-ms-max-item-count": "3",
				"x-ms-documentdb-query-enablecrosspartition": "true", "x-ms-documentdb-populatequerymetrics": "true",
				"x-ms-mayfly-query-whole": "true",
			}
			if cont != "" {
				hdr["x-ms-continuation"] = cont
			}
			r := e.do("POST", "/dbs/db/colls/c/docs", mustJSON(t, map[string]any{"query": query}), hdr)
			if r.status != 200 || pages > 50 {
				t.Fatalf("%s, page %d: %d %s", query, pages+1, r.status, r.body)
			}
			var page struct{ Documents []struct{ ID string } }
			if err := json.Unmarshal(r.body, &page); err != nil {
				t.Fatal(err)
			}
			for _, d := range page.Documents {
				ids = append(ids, d.ID)
			}
			if m := retrievedRE.FindStringSubmatch(r.header.Get("x-ms-documentdb-query-metrics")); m != nil {
				n, _ := strconv.Atoi(m[1])
				examined += n
			}
			if cont = r.header.Get("x-ms-continuation"); cont == "" {
				return ids, examined
			}
		}
	}
	const list = "SELECT c.id FROM c WHERE c.pk IN ('p3', 'p17', 'p30') AND c.s = 's1'"
	all, _ := drain(list)
	if len(all) != 15 {
		t.Fatalf("%s: %d rows, want 15", list, len(all))
	}
	for _, w := range [][2]int{{0, 4}, {6, 5}, {12, 10}, {20, 3}} {
		q := fmt.Sprintf("%s OFFSET %d LIMIT %d", list, w[0], w[1])
		want := all[min(w[0], len(all)):min(w[0]+w[1], len(all))]
		got, examined := drain(q)
		if !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Fatalf("%s: rows %v, want %v", q, got, want)
		}
		// The records the pages read: the window's, and those of the
		// partitions it starts and ends in, at most; none of the 200
		// items of c.s = 's1' elsewhere.
		if examined > 2*per {
			t.Errorf("%s: examined %d documents, want at most %d", q, examined, 2*per)
		}
	}
}
