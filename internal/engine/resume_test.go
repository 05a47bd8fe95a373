package engine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// A range of a cross-partition ORDER BY asked with the .NET SDK's
// resumeFilter returns the rows after its values in the ORDER BY's order,
// by kind first (the rows at them too when it does not exclude them),
// the same rows as that range's whole result from that point, over
// values of every kind, ascending and descending, and on two keys.
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
					Query: "SELECT c.id, c.n, c.m FROM c WHERE (true) ORDER BY " + tc.order}
				all := parseItems(t, drainRows(t, e, q, nil))
				var want []document.Value
				for _, r := range all {
					d := 0
					for k, key := range tc.keys {
						if d = document.Compare(r.Get(key), tc.vals[k]); tc.desc[k] {
							d = -d
						}
						if d != 0 {
							break
						}
					}
					if d > 0 || d == 0 && !exclude {
						want = append(want, r)
					}
				}
				q.Resume = &ResumeFilter{Values: tc.vals, Hashed: make([]bool, len(tc.vals)), Exclude: exclude}
				got := parseItems(t, drainRows(t, e, q, nil))
				if !slices.Equal(ids(got), ids(want)) {
					t.Errorf("ORDER BY %s after %v (exclude %v), range %s: %v, want %v", tc.order, tc.vals, exclude, rangeID, ids(got), ids(want))
				}
			}
		}
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
