package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// A range of a cross-partition ORDER BY asked with the .NET SDK's
// resumeFilter returns the rows after its values in the ORDER BY's order,
// by kind first (the rows at them too when it does not exclude them),
// the same rows as that range's whole result from that point, over
// values of every kind, ascending and descending, and on two keys. With
// the rid of a row tied at the values, the rows tied before it are left
// out too (and it, when excluded).
func TestResumeFilter(t *testing.T) {
	clk := clock.NewManual(batchT0)
	e, err := New(Config{Store: teststore.Open(t), Clock: clk, Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	createDBAndContainer(t, e, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/n","order":"ascending"},{"path":"/m","order":"descending"}]]}}`)
	be := &batchEnv{e: e, clock: clk}
	kinds := []string{`null`, `true`, `false`, `"a"`, `"b"`, `[1]`, `{"x":1}`}
	for i := range 120 {
		n := fmt.Sprint(i % 9)
		if i%5 == 0 {
			n = kinds[i%len(kinds)]
		}
		item := fmt.Sprintf(`{"id":"i%d","pk":"p%d","n":%s,"m":%d}`, i, i%13, n, i%4)
		if i%17 == 0 {
			item = fmt.Sprintf(`{"id":"i%d","pk":"p%d","m":%d}`, i, i%13, i%4) // no n
		}
		be.seed(t, item)
	}
	ids := func(rows []document.Value) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.Get("id").Str())
		}
		return out
	}
	withRids := 0
	for _, tc := range []struct {
		order string
		keys  []string // the ORDER BY paths
		desc  []bool
		vals  []document.Value
	}{
		{"c.n", []string{"n"}, []bool{false}, []document.Value{document.Int(4)}},
		{"c.n", []string{"n"}, []bool{false}, []document.Value{document.Str("a")}},
		{"c.n", []string{"n"}, []bool{false}, []document.Value{document.BoolValue(false)}},
		{"c.n", []string{"n"}, []bool{false}, []document.Value{document.NullValue()}},
		{"c.n", []string{"n"}, []bool{false}, []document.Value{document.Undef}},
		{"c.n DESC", []string{"n"}, []bool{true}, []document.Value{document.Int(4)}},
		{"c.n DESC", []string{"n"}, []bool{true}, []document.Value{document.Str("b")}},
		{"c.n, c.m DESC", []string{"n", "m"}, []bool{false, true}, []document.Value{document.Int(3), document.Int(2)}},
	} {
		for _, exclude := range []bool{true, false} {
			for _, rangeID := range []string{"0", "1", "2", "3"} {
				q := QueryParams{ItemRef: batchRef(""), RangeID: rangeID, CrossPartition: true, MaxItemCount: 7,
					Query: "SELECT c.id, c._rid, c.n, c.m FROM c WHERE (true) ORDER BY " + tc.order}
				all := parseItems(t, drainRows(t, e, q, nil))
				// past compares a row with the values: below, at or past them.
				past := func(r document.Value) int {
					d := 0
					for k, key := range tc.keys {
						if d = document.Compare(r.Get(key), tc.vals[k]); tc.desc[k] {
							d = -d
						}
						if d != 0 {
							break
						}
					}
					return d
				}
				var want, tied []document.Value
				for _, r := range all {
					if d := past(r); d > 0 || d == 0 && !exclude {
						want = append(want, r)
					}
					if past(r) == 0 {
						tied = append(tied, r)
					}
				}
				q.Resume = &ResumeFilter{Values: tc.vals, Hashed: make([]bool, len(tc.vals)), Exclude: exclude}
				got := parseItems(t, drainRows(t, e, q, nil))
				if !slices.Equal(ids(got), ids(want)) {
					t.Errorf("ORDER BY %s after %v (exclude %v), range %s: %v, want %v", tc.order, tc.vals, exclude, rangeID, ids(got), ids(want))
				}
				if len(tied) < 3 {
					continue
				}
				// Resumed at the rid of the middle row of the tie.
				mid := tied[len(tied)/2]
				want = want[:0]
				at := false
				for _, r := range all {
					at = at || r.Get("id").Str() == mid.Get("id").Str()
					if d := past(r); d > 0 || d == 0 && at && (!exclude || r.Get("id").Str() != mid.Get("id").Str()) {
						want = append(want, r)
					}
				}
				q.Resume.Rid = mid.Get("_rid").Str()
				got = parseItems(t, drainRows(t, e, q, nil))
				if !slices.Equal(ids(got), ids(want)) {
					t.Errorf("ORDER BY %s after %v at %s (exclude %v), range %s: %v, want %v", tc.order, tc.vals, mid.Get("id").Str(), exclude, rangeID, ids(got), ids(want))
				}
				withRids++
			}
		}
	}
	if withRids < 10 {
		t.Errorf("%d resumes at a rid, want at least 10: the data has too few ties", withRids)
	}
	// A rid of another container is refused.
	q0 := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: "SELECT c.id FROM c ORDER BY c.n",
		Resume: &ResumeFilter{Values: []document.Value{document.Int(1)}, Hashed: []bool{false}, Rid: "AAAAAAAAAAAAAAAAAAAAAA=="}}
	if _, err := e.QueryItems(t.Context(), q0); err == nil || !strings.Contains(err.Error(), "rid") {
		t.Errorf("a rid of no document of the container: %v, want a 400 naming the rid", err)
	}
	// A hashed array keeps every row of its kind and after.
	q := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: "SELECT c.id, c.n FROM c ORDER BY c.n",
		Resume: &ResumeFilter{Values: []document.Value{document.Arr(nil)}, Hashed: []bool{true}, Exclude: true}}
	rows := parseItems(t, drainRows(t, e, q, nil))
	for _, r := range rows {
		if k := r.Get("n").Kind(); k != document.Array && k != document.Object {
			t.Errorf("after a hashed array: %s, whose n is a %v", r.Get("id").Str(), k)
		}
	}
	if len(rows) == 0 {
		t.Errorf("after a hashed array: no rows, want the arrays and objects")
	}
}

// Within a hierarchical key's prefix the rows tied at equal values keep
// location order, partition by partition, not _rid order: a rid there
// narrows nothing, and every tied row comes, as without it.
func TestResumeFilterRidInAPrefix(t *testing.T) {
	clk := clock.NewManual(batchT0)
	e, err := New(Config{Store: teststore.Open(t), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	createDBAndContainer(t, e, `{"id":"c","partitionKey":{"paths":["/a","/b"],"kind":"MultiHash","version":2}}`)
	be := &batchEnv{e: e, clock: clk}
	for i := range 30 {
		be.seed(t, fmt.Sprintf(`{"id":"i%d","a":"x","b":"b%d","n":%d}`, i, i%7, i%2))
	}
	q := QueryParams{ItemRef: batchRef(`["x"]`), Query: "SELECT c.id, c._rid FROM c ORDER BY c.n"}
	all := parseItems(t, drainRows(t, e, q, nil))
	q.Resume = &ResumeFilter{Values: []document.Value{document.Int(0)}, Hashed: []bool{false}, Rid: all[7].Get("_rid").Str()}
	got := parseItems(t, drainRows(t, e, q, nil))
	if len(got) != len(all) {
		t.Errorf("resumed at %s in a prefix: %d rows, want all %d", all[7].Get("id").Str(), len(got), len(all))
	}
}
