package engine

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/query/plan"
)

// TestFilterOnNowReadsItsEntries: a filter that compares a path with a
// value computed from the request's "now" (the last half hour, as
// DateTimeAdd of GetCurrentDateTime(), or as GetCurrentTimestamp()
// arithmetic on _ts-like numbers) is read through the path's index, its
// value computed once for the request (eval's folded filters), where it
// read every entry of the path and compared each; the rows follow the
// clock.
func TestFilterOnNowReadsItsEntries(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	const n = 3000
	items := make([]string, 0, n)
	for i := range n {
		at := batchT0.Add(-time.Duration(i) * time.Minute)
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"p%d","n":%d,"d":%q,"t":%d}`,
			i, i%40, i, at.UTC().Format("2006-01-02T15:04:05.0000000Z"), at.Unix()))
	}
	be.seed(t, items...)
	for _, later := range []time.Duration{0, 10 * time.Minute} {
		be.clock.Set(batchT0.Add(later))
		for _, query := range []string{
			"SELECT VALUE c.n FROM c WHERE c.d > DateTimeAdd('mi', -30, GetCurrentDateTime())",
			"SELECT VALUE c.n FROM c WHERE c.t > GetCurrentTimestamp() / 1000 - 30 * 60",
		} {
			// The items of the last half hour before now: i < 30 - later.
			var want []string
			for i := range 30 - int(later/time.Minute) {
				want = append(want, strconv.Itoa(i))
			}
			p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: query, MaxItemCount: 7}
			records, entries := 0, 0
			got := drainRows(t, be.e, p, func(k int, page *FeedPage) {
				if k == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.IndexSpan) {
					t.Errorf("%s: page 1 by %v, want the index span", query, page.Plan)
				}
				records += int(page.Examined)
				entries += int(page.IndexEntries)
			})
			slices.SortFunc(got, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
			if !slices.Equal(got, want) {
				t.Fatalf("%s at now+%v: rows %v, want %v", query, later, got, want)
			}
			// A record and an entry a row, and one more a page.
			if records > len(want)+5 || entries > 2*len(want)+5 {
				t.Errorf("%s at now+%v: read %d records and %d entries for %d rows", query, later, records, entries, len(want))
			}
		}
	}
}
