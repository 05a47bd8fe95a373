package engine

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// pageMemoryShapes are the queries whose pages should hold one page and
// the state of their merge, never their scope: rows in _rid order, rows
// through an index span, and the ordered streams, over one key and over
// two (through the composite index on them).
var pageMemoryShapes = []struct{ name, query string }{
	{"select-star", "SELECT * FROM c"},
	{"filter", "SELECT * FROM c WHERE c.n >= 0"},
	{"order-by", "SELECT * FROM c ORDER BY c.n"},
	{"order-by-desc", "SELECT * FROM c ORDER BY c.n DESC"},
	{"two-keys", "SELECT * FROM c ORDER BY c.n, c.id"},
}

// loadPageMemory opens a container of n items in logical partitions of
// 100, with c.n taking the given number of values (so groups of equal
// values grow with n) and a composite index on (n, id), and builds the
// absence, tie and gap entries the ordered streams use.
func loadPageMemory(tb testing.TB, n, values int) *benchStore {
	// The container body after "defaultTtl": a composite index for the
	// two keys.
	s := openBenchEngine(tb, clock.Real{}, nil, `null,"indexingPolicy":{"includedPaths":[{"path":"/*"}],`+
		`"compositeIndexes":[[{"path":"/n"},{"path":"/id"}]]}`)
	s.pk = func(i int) string { return "q" + strconv.Itoa(i/100) }
	s.load(tb, 0, n, func(i int) []byte {
		return []byte(`{"id":"x` + strconv.Itoa(i) + `","pk":"q` + strconv.Itoa(i/100) + `","n":` + strconv.Itoa((i*7919)%values) + `,"payload":"` + benchPayload + `"}`)
	})
	for _, q := range pageMemoryShapes {
		s.orderReady(tb, pageMemoryParams(q.query))
	}
	s.settle(tb)
	return s
}

func pageMemoryParams(query string) QueryParams {
	return QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: query, RangeID: "0", CrossPartition: true, MaxItemCount: 100}
}

// drainPageBytes drains p page by page and returns the number of rows and
// the bytes the Go heap allocated while each page was read: an upper bound
// on what the page held at once.
func drainPageBytes(tb testing.TB, s *benchStore, p QueryParams) (rows int, bytes []uint64) {
	tb.Helper()
	var before, after runtime.MemStats
	for {
		runtime.ReadMemStats(&before)
		page, err := s.QueryItems(context.Background(), p)
		runtime.ReadMemStats(&after)
		if err != nil {
			tb.Fatalf("%s: %v", p.Query, err)
		}
		rows += len(page.Items)
		bytes = append(bytes, after.TotalAlloc-before.TotalAlloc)
		if page.Continuation == "" {
			return rows, bytes
		}
		p.Continuation = page.Continuation
	}
}

// median is what half the pages stay under. The heap's count is the
// process's, so other goroutines (the store's background work, engines
// other tests left running) add to some pages; a page that read or held
// its group would add to every one.
func median(bytes []uint64) uint64 {
	s := slices.Clone(bytes)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestDrainHoldsOnePage drains each shape over 1,000 and 10,000 items in
// pages of 100, with c.n taking ten values (groups of 100 and 1,000 equal
// values): what a page allocates (the median page) must not grow with the
// container. A page that read or sorted its scope, or its group, would
// allocate ten times as much in the larger one.
func TestDrainHoldsOnePage(t *testing.T) {
	if testing.Short() || RaceEnabled {
		t.Skip("loads 11,000 items; under the race detector pools drop objects at random")
	}
	sizes := []int{1_000, 10_000}
	most := make(map[string][]uint64) // per shape, the median page at each size
	for _, n := range sizes {
		s := loadPageMemory(t, n, 10)
		for _, q := range pageMemoryShapes {
			rows, bytes := drainPageBytes(t, s, pageMemoryParams(q.query))
			if rows != n {
				t.Fatalf("%d items, %s: drained %d rows", n, q.query, rows)
			}
			most[q.name] = append(most[q.name], median(bytes))
		}
	}
	for _, q := range pageMemoryShapes {
		small, large := most[q.name][0], most[q.name][1]
		t.Logf("%s: bytes the median page allocated: %d at %d items, %d at %d", q.name, small, sizes[0], large, sizes[1])
		if large > 2*small {
			t.Errorf("%s: the median page allocated %d bytes at %d items against %d at %d: pages hold more than a page", q.query, large, sizes[1], small, sizes[0])
		}
	}
}
