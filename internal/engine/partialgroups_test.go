package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/partition"
)

// A GROUP BY an SDK rewrote pages by the documents it groups: a page
// groups the documents after the last page's until it has made its page
// of groups. So draining it reads each document of its access path once,
// however many groups there are; no page but the last is empty, even where
// the filter passes few documents far apart (an SDK takes an empty page
// for the end); and the pages' partial rows merge to the groups the whole
// evaluation makes. Over a range, as the SDKs send it, by a scan and by an
// index span. The same query sent with a
// partition key, by a client that need not merge, gets whole groups.
func TestPartialGroupsReadEachDocumentOnce(t *testing.T) {
	be := newBatchEnv(t, "null")
	var docs []string
	for i := range 600 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p%d","g":%d,"k":%d}`, i, i%3, i%250, i%7))
	}
	be.seed(t, docs...)
	type sums struct{ n, s float64 }
	for _, scope := range []string{"0"} {
		for _, tc := range []struct {
			where string
			size  int
		}{
			{"", 10},
			{" WHERE c.k = 3", 10},      // an index span over the range
			{" WHERE c.g % 97 = 5", 10}, // 6 documents of the scan pass
			// The last document passing makes the page's last group,
			// and a document follows it.
			{` WHERE SUBSTRING(c.id, 1, 3) IN ("597", "598")`, 2},
		} {
			where := tc.where
			p := QueryParams{ItemRef: batchRef(""), RangeID: scope, CrossPartition: true, MaxItemCount: tc.size}
			p.Query = `SELECT [{"item": c.g}] AS groupByItems, {"g": c.g, "n": {"item": COUNT(1)}, "s": {"item": SUM(c.k)}} AS payload FROM c` + where + ` GROUP BY c.g`
			got := map[float64]sums{}
			examined, pages := 0, 0
			for {
				page, err := be.e.QueryItems(context.Background(), p)
				if err != nil {
					t.Fatalf("%s, scope %s: %v", p.Query, scope, err)
				}
				pages++
				examined += page.Examined
				if len(page.Items) == 0 && (page.Continuation != "" || pages > 1) {
					t.Fatalf("%s, scope %s: page %d is empty", p.Query, scope, pages)
				}
				for _, it := range page.Items {
					var row struct {
						Payload struct {
							G    float64
							N, S struct{ Item float64 }
						}
					}
					if err := json.Unmarshal(it, &row); err != nil {
						t.Fatal(err)
					}
					g := got[row.Payload.G]
					got[row.Payload.G] = sums{g.n + row.Payload.N.Item, g.s + row.Payload.S.Item}
				}
				if p.Continuation = page.Continuation; p.Continuation == "" {
					break
				}
			}
			whole := p
			whole.Continuation, whole.MaxItemCount = "", 1000
			whole.Query = `SELECT c.g, COUNT(1) AS n, SUM(c.k) AS s FROM c` + where + ` GROUP BY c.g`
			page, err := be.e.QueryItems(context.Background(), whole)
			if err != nil || page.Continuation != "" {
				t.Fatalf("%s: %v, continuation %q", whole.Query, err, page.Continuation)
			}
			want := map[float64]sums{}
			for _, it := range page.Items {
				var row struct{ G, N, S float64 }
				if err := json.Unmarshal(it, &row); err != nil {
					t.Fatal(err)
				}
				want[row.G] = sums{row.N, row.S}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s, scope %s: merged pages %v, want %v", p.Query, scope, got, want)
			}
			// The whole evaluation reads the access path once; each page
			// reads one document past its end, where the next begins.
			if examined > page.Examined+pages {
				t.Errorf("%s, scope %s: %d records read in %d pages, where the whole evaluation reads %d", p.Query, scope, examined, pages, page.Examined)
			}
		}
	}

	// With a partition key, whole groups: no key twice over the pages.
	p := QueryParams{ItemRef: batchRef(""), MaxItemCount: 3,
		Query: `SELECT [{"item": c.g}] AS groupByItems, {"g": c.g, "n": {"item": COUNT(1)}} AS payload FROM c GROUP BY c.g`}
	p.HasKey, p.PartitionKey = true, partition.Key{partition.String("p1")}
	keys := map[string]bool{}
	for {
		page, err := be.e.QueryItems(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			var row struct{ GroupByItems json.RawMessage }
			if err := json.Unmarshal(it, &row); err != nil {
				t.Fatal(err)
			}
			if keys[string(row.GroupByItems)] {
				t.Fatalf("group %s came twice in a partition", row.GroupByItems)
			}
			keys[string(row.GroupByItems)] = true
		}
		if p.Continuation = page.Continuation; p.Continuation == "" {
			break
		}
	}
	if len(keys) != 200 {
		t.Fatalf("%d groups in a partition, want 200", len(keys))
	}
}

// Groups whose rows take more than a response holds are grouped again in
// smaller parts, each a response of its own, so a write between responses
// shifts no row: deleting the first document after the first response
// loses none of the second's groups. The rows of one document alone that
// take more than a response come over several, each group once.
func TestPartialGroupsOverAResponse(t *testing.T) {
	skipMegabytesUnderRace(t)
	be := newBatchEnv(t, "null")
	var docs []string
	for d := range 3 {
		var tags []string
		for i := range 20 {
			tags = append(tags, fmt.Sprintf("%q", fmt.Sprintf("%d.%02d.", d, i)+strings.Repeat("x", 90_000)))
		}
		docs = append(docs, fmt.Sprintf(`{"id":"d%d","pk":"p%d","tags":[%s]}`, d, d, strings.Join(tags, ",")))
	}
	be.seed(t, docs[:2]...)
	drain := func(query string, between func()) (map[string]int, int) {
		t.Helper()
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 100, Query: query}
		seen := map[string]int{}
		pages := 0
		for {
			page, err := be.e.QueryItems(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, it := range page.Items {
				var row struct {
					Payload struct {
						T string
						N struct{ Item int }
					}
				}
				if err := json.Unmarshal(it, &row); err != nil {
					t.Fatal(err)
				}
				seen[row.Payload.T[:5]] += row.Payload.N.Item
			}
			if p.Continuation = page.Continuation; p.Continuation == "" {
				return seen, pages
			}
			if pages == 1 && between != nil {
				between()
			}
		}
	}
	seen, pages := drain(`SELECT [{"item": t}] AS groupByItems, {"t": t, "n": {"item": COUNT(1)}} AS payload FROM c JOIN t IN c.tags GROUP BY t`, func() {
		if _, err := be.e.DeleteItem(context.Background(), DeleteItemParams{ItemRef: batchRef(`["p0"]`), ID: "d0"}); err != nil {
			t.Fatal(err)
		}
	})
	for i := range 20 {
		if k := fmt.Sprintf("1.%02d.", i); seen[k] != 1 {
			t.Errorf("group %q of the document not deleted counted %d times", k, seen[k])
		}
	}
	if pages < 2 {
		t.Errorf("%d pages, want several", pages)
	}

	be.seed(t, docs[2])
	seen, pages = drain(`SELECT [{"item": t}] AS groupByItems, {"t": t, "a": t, "b": t, "c": t, "n": {"item": COUNT(1)}} AS payload FROM c JOIN t IN c.tags WHERE c.id = "d2" GROUP BY t`, nil)
	if len(seen) != 20 || pages < 2 {
		t.Fatalf("%d groups in %d pages, want 20 in several", len(seen), pages)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("group %q counted %d times", k, n)
		}
	}
}

// Only a page of partial groups writes a token of version 7, which a
// gateway of the version before refuses; every other token stays of
// version 6, which it takes.
func TestOnlyPartialGroupsTokensAreVersion7(t *testing.T) {
	be := newBatchEnv(t, "null")
	var docs []string
	for i := range 30 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%02d","pk":"p%d","g":%d}`, i, i%3, i%10))
	}
	be.seed(t, docs...)
	for query, want := range map[string]byte{
		`SELECT [{"item": c.g}] AS groupByItems, {"n": {"item": COUNT(1)}} AS payload FROM c GROUP BY c.g`: 7,
		"SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g":                                                    6,
		"SELECT * FROM c":                     6,
		"SELECT * FROM c ORDER BY c.g":        6,
		"SELECT TOP 20 * FROM c ORDER BY c.g": 6,
	} {
		page, err := be.e.QueryItems(context.Background(), QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 2, Query: query})
		if err != nil {
			t.Fatal(err)
		}
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(page.Continuation, cursorPrefix))
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: token %q: %v", query, page.Continuation, err)
		}
		if b[0] != want {
			t.Errorf("%s: a token of version %d, want %d", query, b[0], want)
		}
	}
}
