package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A first page whose terms all hold much of a container tries a scan
// before counting them whole, within a budget, and counts them on only as
// the scan reads (scanPace). Where the passing items are spread through
// the scan's order, the scan fills the page in a few records, with the
// terms counted a little way; where they all lie at its end, the scan
// finds too few, the terms are counted to the end, the scan runs out of
// budget and the page is planned again, with what it read counted. Either way the rows
// are the query's, in the scan's order, with no page repeating or losing
// one.
func TestScanFirst(t *testing.T) {
	be := newBatchEnv(t, "null")
	const n = 4000
	items := make([]string, 0, n)
	for i := range n {
		late := 0
		if i >= 3400 {
			late = 1
		}
		items = append(items, fmt.Sprintf(`{"id":"i%04d","pk":"p%d","all":1,"late":%d}`, i, i%20, late))
	}
	be.seed(t, items...)
	ids := func(rows []string) []string {
		var out []string
		for _, r := range rows {
			i := strings.Index(r, `"id":"`)
			out = append(out, r[i+6:i+11])
		}
		return out
	}
	want := func(from int) []string {
		var out []string
		for i := from; i < n; i++ {
			out = append(out, fmt.Sprintf("i%04d", i))
		}
		return out
	}
	tests := []struct {
		where   string
		from    int  // the first passing item
		scanned bool // whether the first page's tried scan fills it
	}{
		{"c.all = 1", 0, true},
		{"c.late = 1", 3400, false},
	}
	for _, tt := range tests {
		p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, Query: "SELECT * FROM c WHERE " + tt.where, RangeID: "0", CrossPartition: true, MaxItemCount: 10}
		rows := drainRows(t, be.e, p, func(k int, page *FeedPage) {
			if k > 0 {
				return
			}
			if page.Plan == nil {
				t.Fatalf("%s: no plan", tt.where)
			}
			budget := page.Plan.Chosen.Budget
			switch {
			case tt.scanned && (budget == 0 || page.Examined > 11):
				t.Errorf("%s: the first page read %d records by %s, want a tried scan of 11 (the page and the next)", tt.where, page.Examined, page.Plan.Summary())
			case !tt.scanned && (budget != 0 || page.Examined < 100):
				t.Errorf("%s: the first page read %d records by %s, want the tried scan's records counted and another path", tt.where, page.Examined, page.Plan.Summary())
			case tt.scanned && page.IndexEntries >= 517:
				// √(rows·n·costRecordScan/costEntry) = 517 is how far
				// every term is counted before a scan is tried unpaced.
				t.Errorf("%s: the first page counted %d index entries; paced by its scan, it needs fewer than 517", tt.where, page.IndexEntries)
			}
		})
		if got := ids(rows); !slices.Equal(got, want(tt.from)) {
			t.Errorf("%s: %d rows from %v, want %d from %s", tt.where, len(got), got[:min(len(got), 3)], n-tt.from, want(tt.from)[0])
		}
	}
}
