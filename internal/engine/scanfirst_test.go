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
// terms counted a little way. Where the entries counted so far all lie at
// the scan's end (c.late), the scan is not tried: the page is planned from
// the counts. Where they start early but the rest lie at the end (c.w,
// whose lowest value one early item holds), the scan finds too few, the
// terms are counted to the end, the scan runs out of budget and the page
// is planned again, with what it read counted. Either way the rows are
// the query's, in the scan's order, with no page repeating or losing one.
func TestScanFirst(t *testing.T) {
	be := newBatchEnv(t, "null")
	const n = 4000
	items := make([]string, 0, n)
	for i := range n {
		late, w := 0, 0
		if i >= 3400 {
			late, w = 1, 2
		}
		if i == 0 {
			w = 1
		}
		items = append(items, fmt.Sprintf(`{"id":"i%04d","pk":"p%d","all":1,"late":%d,"w":%d}`, i, i%20, late, w))
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
	type tried uint8
	const (
		filled   tried = iota // the first page's tried scan fills it
		notTried              // the page is planned from the counts at once
		spent                 // the scan runs out of budget
	)
	tests := []struct {
		where string
		want  []string
		try   tried
	}{
		{"c.all = 1", want(0), filled},
		{"c.late = 1", want(3400), notTried},
		{"c.w >= 1", append([]string{"i0000"}, want(3400)...), spent},
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
			case tt.try == filled && (budget == 0 || page.Examined > 11):
				t.Errorf("%s: the first page read %d records by %s, want a tried scan of 11 (the page and the next)", tt.where, page.Examined, page.Plan.Summary())
			case tt.try == notTried && (budget != 0 || page.Examined > 11):
				t.Errorf("%s: the first page read %d records by %s, want no scan tried", tt.where, page.Examined, page.Plan.Summary())
			case tt.try == spent && (budget != 0 || page.Examined < 100):
				t.Errorf("%s: the first page read %d records by %s, want the tried scan's records counted and another path", tt.where, page.Examined, page.Plan.Summary())
			case tt.try == filled && page.IndexEntries >= 517:
				// √(rows·n·costRecordScan/costEntry) = 517 is how far
				// every term is counted before a scan is tried unpaced.
				t.Errorf("%s: the first page counted %d index entries; paced by its scan, it needs fewer than 517", tt.where, page.IndexEntries)
			}
		})
		if got := ids(rows); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %d rows from %v, want %d from %s", tt.where, len(got), got[:min(len(got), 3)], len(tt.want), tt.want[0])
		}
	}
}
