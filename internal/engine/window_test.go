package engine

import (
	"fmt"
	"slices"
	"testing"
)

// A page of a TOP, or of an OFFSET and LIMIT, without ORDER BY goes on
// from where the page before it ended: page k reads what page 1 reads, not
// every row before it again, and the pages together return the rows one
// page returns.
func TestWindowedPagesGoOn(t *testing.T) {
	be := newBatchEnv(t, "null")
	var docs []string
	for i := range 600 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p%d","n":%d,"tags":["a%d","b%d"]}`, i, i%7, i, i, i))
	}
	be.seed(t, docs...)
	for _, tc := range []struct {
		query string
		key   string
		rows  int
		most  int // records a page after the first reads at most
	}{
		{"SELECT TOP 450 c.id FROM c", "", 450, 26},
		{"SELECT c.id FROM c OFFSET 100 LIMIT 300", "", 300, 26},
		{"SELECT TOP 30 c.id FROM c OFFSET 10 LIMIT 300", "", 20, 26},
		// A third of the documents pass.
		{"SELECT VALUE c.n FROM c WHERE c.n % 3 = 0 OFFSET 7 LIMIT 150", "", 150, 78},
		// Two rows a document: pages end within one.
		{"SELECT VALUE t FROM c JOIN t IN c.tags OFFSET 3 LIMIT 201", "", 201, 14},
		{"SELECT TOP 70 c.id FROM c", `["p3"]`, 70, 26},
		{"SELECT c.id FROM c OFFSET 5 LIMIT 80", `["p3"]`, 80, 26},
	} {
		p := QueryParams{ItemRef: batchRef(tc.key), Query: tc.query, CrossPartition: true}
		if tc.key == "" {
			p.RangeID = "0"
		}
		p.MaxItemCount = 1000
		whole := drainRows(t, be.e, p, nil)
		if len(whole) != tc.rows {
			t.Fatalf("%s: %d rows in one page, want %d", tc.query, len(whole), tc.rows)
		}
		p.MaxItemCount = 25
		var examined []int
		paged := drainRows(t, be.e, p, func(n int, page *FeedPage) { examined = append(examined, page.Examined) })
		if !slices.Equal(paged, whole) {
			t.Errorf("%s: pages of 25 returned %d rows, not the %d of one page", tc.query, len(paged), len(whole))
		}
		// Page 1 reads its OFFSET too.
		for k, n := range examined[1:] {
			if n > tc.most {
				t.Errorf("%s: page %d read %d records (page 1: %d)", tc.query, k+2, n, examined[0])
			}
		}
	}
}
