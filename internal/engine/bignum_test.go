package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Integers of magnitude 2^53 or more that share a double have one index
// key, while the evaluator orders them exactly. Every access path must
// give the answer the evaluator gives: the filters read such a key's
// entries and judge each document; the ordered walks read the whole group
// of entries under such a key before trusting their order. The composite
// walk once cut the group at the want-th item's whole entry, so an item
// with the same inexact first value and a later second one was never read
// (found by TestDifferential, seed 819 with composite indexes).
func TestBigIntegersInTheIndex(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/n","order":"descending"},{"path":"/x"}]]}}`)
	items := []string{
		// a and b share the double 2^53; e and d share 2^53+4.
		`{"id":"a","pk":"a","n":9007199254740993,"x":2}`,
		`{"id":"b","pk":"a","n":9007199254740992,"x":1}`,
		`{"id":"c","pk":"a","n":9007199254740991,"x":3}`,
		`{"id":"e","pk":"a","n":9007199254740996,"x":4}`,
		`{"id":"d","pk":"a","n":9007199254740995,"x":5}`,
	}
	// Enough other items that the planner reads the index rather than
	// the partition.
	for i := range 500 {
		items = append(items, `{"id":"f`+strconv.Itoa(i)+`","pk":"a","n":`+strconv.Itoa(i)+`,"x":0}`)
	}
	be.seed(t, items...)
	for _, tc := range []struct{ query, access, want string }{
		{"SELECT VALUE c.id FROM c WHERE c.n > 9007199254740992", "index", "a,e,d"},
		{"SELECT VALUE c.id FROM c WHERE c.n >= 9007199254740993 AND c.n < 9007199254740995", "index", "a"},
		{"SELECT VALUE c.id FROM c WHERE c.n = 9007199254740993", "index", "a"},
		{"SELECT VALUE c.id FROM c WHERE c.n > 9007199254740990 ORDER BY c.n", "", "c,b,a,d,e"},
		{"SELECT VALUE c.id FROM c WHERE c.n > 9007199254740990 ORDER BY c.n DESC", "", "e,d,a,b,c"},
		{"SELECT TOP 2 VALUE c.id FROM c WHERE c.n > 0 ORDER BY c.n DESC", "ordered", "e,d"},
		{"SELECT TOP 4 VALUE c.id FROM c WHERE c.n > 0 ORDER BY c.n", "", "f1,f2,f3,f4"},
		// The composite (n descending, x) read backwards: within the
		// double 2^53 it meets a (x 2) before b (x 1), and b comes first.
		{"SELECT TOP 1 VALUE c.id FROM c WHERE c.n >= 9007199254740992 AND c.x >= 0 ORDER BY c.n, c.x DESC", "composite-ordered", "b"},
		{"SELECT TOP 2 VALUE c.id FROM c WHERE c.n >= 9007199254740992 AND c.x >= 0 ORDER BY c.n, c.x DESC", "", "b,a"},
		{"SELECT TOP 1 VALUE c.id FROM c WHERE c.n >= 9007199254740995 AND c.x >= 0 ORDER BY c.n DESC, c.x", "", "e"},
		// An equality pins the shared double to one exact value.
		{"SELECT TOP 1 VALUE c.id FROM c WHERE c.n = 9007199254740992 AND c.x >= 0 ORDER BY c.n DESC, c.x", "", "b"},
	} {
		page, err := be.e.QueryItems(context.Background(), QueryParams{ItemRef: batchRef(`["a"]`), Query: tc.query, MaxItemCount: -1})
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		var ids []string
		for _, it := range page.Items {
			ids = append(ids, strings.Trim(string(it), `"`))
		}
		if got := strings.Join(ids, ","); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.query, got, tc.want)
		}
		if tc.access != "" && (page.Plan == nil || fmt.Sprint(page.Plan.Chosen.Access) != tc.access) {
			t.Errorf("%s: planned %+v, want access path %s", tc.query, page.Plan, tc.access)
		}
	}
}
