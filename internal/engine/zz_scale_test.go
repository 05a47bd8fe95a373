package engine

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// Partitions of 100 items each; container grows.
func TestZZScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ZZN"))
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range n {
		u := "cold"
		if i%100 == 0 {
			u = "hot"
		}
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d,"u":"%s","w":"w%d","h":%d,"ts":%d}`,
			i, i/100, i%100, u, i%37, i%10, i))
	}
	be.seed(t, items...)
	type qc struct{ q, pk string }
	for _, c := range []qc{
		{`SELECT c.id FROM c WHERE c.pk IN ('p1','p2') AND c.n > 90`, ""},
		{`SELECT c.id FROM c WHERE c.pk IN ('p1','p2')`, ""},
		{`SELECT c.id FROM c WHERE c.pk IN ('p1','p2') ORDER BY c.ts DESC`, ""},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.pk IN ('p1','p2') AND c.h = 3`, ""},
		{`SELECT c.id FROM c WHERE c.pk = 'p3' AND c.h = 3`, "p3"},
		{`SELECT c.id FROM c WHERE c.pk = 'p3' ORDER BY c.ts DESC`, "p3"},
		{`SELECT c.id FROM c WHERE c.pk = 'p3' AND c.w = 'w5' ORDER BY c.ts DESC`, "p3"},
		{`SELECT c.id FROM c WHERE c.h = 3 ORDER BY c.ts DESC`, "p3"},
		{`SELECT DISTINCT VALUE c.w FROM c`, "p3"},
		{`SELECT c.w, COUNT(1) AS k FROM c GROUP BY c.w`, "p3"},
		{`SELECT VALUE MAX(c.ts) FROM c WHERE c.h = 3`, "p3"},
		{`SELECT c.id FROM c WHERE c.u = 'hot' AND c.h = 0`, "p3"},
		{`SELECT TOP 5 c.id FROM c WHERE c.ts > 50 ORDER BY c.ts`, "p3"},
		{`SELECT c.id FROM c WHERE c.ts >= 30 AND c.ts < 60`, "p3"},
		{`SELECT c.id FROM c WHERE c.ts >= 30 AND c.ts < 60 AND c.h = 1`, "p3"},
		{`SELECT c.id FROM c WHERE c.id = 'd305'`, "p3"},
		{`SELECT c.id FROM c WHERE c.w IN ('w1','w2')`, "p3"},
		{`SELECT c.id FROM c WHERE STARTSWITH(c.w, 'w1')`, "p3"},
		{`SELECT c.id FROM c WHERE c.w != 'w1'`, "p3"},
		{`SELECT c.id FROM c WHERE c.u = 'hot' OR c.h = 2`, "p3"},
		{`SELECT c.id FROM c WHERE NOT IS_DEFINED(c.zz)`, "p3"},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 20, Query: c.q}
		if c.pk != "" {
			p = QueryParams{ItemRef: batchRef(`["` + c.pk + `"]`), MaxItemCount: 20, Query: c.q}
		}
		be.orderReady(t, p)
		records, entries, pages, rows := 0, 0, 0, 0
		var first string
		drainRows(t, be.e, p, func(n int, page *FeedPage) {
			records += page.Examined
			entries += page.IndexEntries
			pages++
			rows += len(page.Items)
			if n == 0 && page.Plan != nil {
				first = page.Plan.Summary()
			}
		})
		t.Logf("%-80s rows=%5d pages=%3d records=%6d entries=%7d  %.110s", c.q, rows, pages, records, entries, first)
	}
}
