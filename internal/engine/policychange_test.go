package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// A query's pages go on across an indexing policy change that leaves the
// paths they read indexed (a composite added, another path excluded):
// once the index is built for the new policy, the next page resumes at
// its token's position, and the pages hold every row once. A change that
// takes a path they read out of the index ends them with 400, as does
// every change while the new index is being built.
func TestPagesGoOnAcrossAPolicyChange(t *testing.T) {
	ctx := context.Background()
	const def = `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"indexingPolicy":`
	for _, tc := range []struct {
		query string
		// policy is the new indexing policy; stops, that the pages end
		// with 400 under it.
		policy string
		stops  bool
	}{
		{`SELECT c.id FROM c WHERE c.n > 730`, `{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/z/*"}],"compositeIndexes":[[{"path":"/a"},{"path":"/m"}]]}`, false},
		{`SELECT c.id FROM c WHERE c.n > 730 AND c.m = 3`, `{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/z/*"}]}`, false},
		{`SELECT c.id FROM c WHERE c.n < 30 OR c.m = 3 AND c.a = 1`, `{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/z/*"}]}`, false},
		{`SELECT c.id, c.n FROM c ORDER BY c.n`, `{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/z/*"}]}`, false},
		{`SELECT c.id FROM c WHERE c.n > 730`, `{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/n/?"}]}`, true},
		{`SELECT c.id, c.n FROM c ORDER BY c.n`, `{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/n/?"}]}`, true},
	} {
		for _, ref := range []QueryParams{{ItemRef: batchRef(`["p0"]`)}, {ItemRef: batchRef(""), RangeID: "0", CrossPartition: true}} {
			be := newBatchEnvWith(t, def+`{"includedPaths":[{"path":"/*"}]}}`)
			var docs []string
			for i := range 800 {
				docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p%d","n":%d,"m":%d,"a":%d,"z":{"q":%d}}`, i, i%2, (i*37)%800, i%7, i%3, i))
			}
			be.seed(t, docs...)
			drainIndexer(t, be.e.NewIndexer(nil))
			p := ref
			p.Query, p.MaxItemCount = tc.query, 1000
			whole, err := be.e.QueryItems(ctx, p)
			if err != nil || whole.Continuation != "" {
				t.Fatalf("%s: %v, continuation %q", tc.query, err, whole.Continuation)
			}
			p.MaxItemCount = 8
			var rows []string
			for pages := 0; ; pages++ {
				if pages == 2 {
					if _, err := be.e.ReplaceContainer(ctx, "db", "c", batchJSON(t, def+tc.policy+`}`), ""); err != nil {
						t.Fatal(err)
					}
					// While the index is built, the token cannot go on.
					if _, err := be.e.QueryItems(ctx, p); ErrorCode(err) != BadRequest {
						t.Fatalf("%s: a page while the index is built: %v, want 400", tc.query, err)
					}
					drainIndexer(t, be.e.NewIndexer(nil))
				}
				page, err := be.e.QueryItems(ctx, p)
				if tc.stops && pages == 2 {
					if ErrorCode(err) != BadRequest {
						t.Errorf("%s under %s: %v, want 400", tc.query, tc.policy, err)
					}
					break
				}
				if err != nil {
					t.Fatalf("%s, page %d: %v", tc.query, pages+1, err)
				}
				for _, it := range page.Items {
					rows = append(rows, string(it))
				}
				if p.Continuation = page.Continuation; p.Continuation == "" {
					break
				}
			}
			if tc.stops {
				continue
			}
			var want []string
			for _, it := range whole.Items {
				want = append(want, string(it))
			}
			slices.Sort(rows)
			slices.Sort(want)
			if !slices.Equal(rows, want) {
				t.Errorf("%s: %d rows over the change, want the %d of one page", tc.query, len(rows), len(want))
			}
		}
	}
}
