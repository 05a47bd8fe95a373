package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
)

func TestIndexPolicy(t *testing.T) {
	pol := newIndexPolicy(mustParse(`{"indexingMode":"consistent","includedPaths":[{"path":"/*"},{"path":"/big/keep/?"}],
		"excludedPaths":[{"path":"/\"_etag\"/?"},{"path":"/big/*"},{"path":"/tags/[]/?"}]}`))
	tests := []struct {
		path []string
		want bool
	}{
		{[]string{"a"}, true},
		{[]string{"a", "b", "c"}, true},
		{[]string{"_etag"}, false},
		{[]string{"big", "x"}, false},
		{[]string{"big", "keep"}, true},
		{[]string{"big", "keep", "deeper"}, false},
		{[]string{"tags", "[]"}, false},
		{[]string{"tags", "x"}, true},
	}
	for _, tt := range tests {
		if got := pol.indexes(tt.path); got != tt.want {
			t.Errorf("indexes(%v) = %v, want %v", tt.path, got, tt.want)
		}
	}
	if newIndexPolicy(mustParse(`{"indexingMode":"none"}`)).indexes([]string{"a"}) {
		t.Error("mode none indexes nothing")
	}
	only := newIndexPolicy(mustParse(`{"indexingMode":"consistent","includedPaths":[{"path":"/a/?"}],"excludedPaths":[{"path":"/*"}]}`))
	if !only.indexes([]string{"a"}) || only.indexes([]string{"b"}) {
		t.Error("an include-list policy must index /a and nothing else")
	}
}

// The encoding must sort like the query language orders values of one type.
func TestIndexValueOrder(t *testing.T) {
	vals := []string{`null`, `false`, `true`, `-1e300`, `-5`, `-0.5`, `0`, `0.25`, `1`, `2`, `9007199254740993`, `1e300`, `""`, `"a"`, `"a\u0000"`, `"ab"`, `"b"`}
	var keys [][]byte
	for _, s := range vals {
		v, err := document.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		k, ok := appendIndexValue(nil, v)
		if !ok {
			t.Fatalf("%s not indexable", s)
		}
		keys = append(keys, k)
	}
	if !sort.SliceIsSorted(keys, func(i, j int) bool { return bytes.Compare(keys[i], keys[j]) < 0 }) {
		t.Fatalf("encodings out of order")
	}
	for _, s := range []string{`[1]`, `{}`} {
		v, _ := document.Parse([]byte(s))
		if _, ok := appendIndexValue(nil, v); ok {
			t.Errorf("%s should not be indexed as a value", s)
		}
	}
}

// Composite entries sort by the first path, then the next, each in its
// own direction, across types as the query language orders them; they
// never fall among single-path entries; and the location is found again
// at their end.
func TestCompositeOrder(t *testing.T) {
	c := &containerRecord{index: newIndexPolicy(mustParse(`{"includedPaths":[{"path":"/*"}],
		"compositeIndexes":[[{"path":"/a"},{"path":"/b","order":"descending"}],[{"path":"/_ts"},{"path":"/a"}],[{"path":"/x/[]"},{"path":"/a"}]]}`))}
	if len(c.index.composites) != 2 || c.index.composites[1].kept {
		t.Fatalf("composites %+v: want two, the one on _ts without entries", c.index.composites)
	}
	vals := []string{`null`, `false`, `true`, `-2`, `0`, `0.5`, `3`, `""`, `"a"`, `"a\u0000"`, `"ab"`}
	type entry struct {
		a, b document.Value
		key  []byte
	}
	var entries []entry
	seq := uint64(1)
	for _, as := range vals {
		for _, bs := range vals {
			doc := mustParse(`{"a":` + as + `,"b":` + bs + `}`)
			loc := itemLoc("0A", seq)
			seq++
			var comp [][]byte
			for _, k := range indexEntries(c, doc, loc) {
				if bytes.HasPrefix(k, append(indexPrefix(c), compositeMarker...)) {
					comp = append(comp, k)
				}
			}
			if len(comp) != 1 {
				t.Fatalf("%s: %d composite entries, want 1", doc.JSON(), len(comp))
			}
			got, ok := compositeLoc(comp[0], len(compositePrefix(indexPrefix(c), 0)), &c.index.composites[0])
			if !ok || !bytes.Equal(got, loc) {
				t.Fatalf("%s: location %x, want %x", doc.JSON(), got, loc)
			}
			entries = append(entries, entry{doc.Get("a"), doc.Get("b"), comp[0]})
		}
	}
	for _, missing := range []string{`{"a":1}`, `{"a":1,"b":[1]}`, `{"a":{},"b":1}`} {
		for _, k := range indexEntries(c, mustParse(missing), itemLoc("0A", 1)) {
			if bytes.HasPrefix(k, append(indexPrefix(c), compositeMarker...)) {
				t.Errorf("%s has a composite entry; only items with scalars on every path do", missing)
			}
		}
	}
	want := slices.Clone(entries)
	slices.SortStableFunc(want, func(x, y entry) int {
		if d := document.Compare(x.a, y.a); d != 0 {
			return d
		}
		return document.Compare(y.b, x.b)
	})
	slices.SortStableFunc(entries, func(x, y entry) int { return bytes.Compare(x.key, y.key) })
	for i := range want {
		if document.Compare(want[i].a, entries[i].a) != 0 || document.Compare(want[i].b, entries[i].b) != 0 {
			t.Fatalf("entry %d is (%s, %s), want (%s, %s)", i, entries[i].a.JSON(), entries[i].b.JSON(), want[i].a.JSON(), want[i].b.JSON())
		}
	}
	// No path's encoding begins with the composite marker.
	for _, path := range [][]string{{"a"}, {"\x00"}, {"\x03"}, {"a", "b"}} {
		if bytes.HasPrefix(appendIndexPath(nil, path), compositeMarker) {
			t.Errorf("path %q encodes like the composite marker", path)
		}
	}
}

// The service always indexes id, whatever the policy: ORDER BY and range
// filters on it are served under a policy that includes only other paths,
// where the same on a path the policy leaves out are refused.
func TestIdIsAlwaysIndexed(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"indexingPolicy":{"includedPaths":[{"path":"/name/?"}],"excludedPaths":[{"path":"/*"}]}}`)
	for i := range 3 {
		be.seed(t, fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d,"name":"x"}`, i, i, i))
	}
	ctx := context.Background()
	query := func(q string) (string, error) {
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, Query: q, Whole: true, CrossPartition: true})
		if err != nil {
			return "", err
		}
		var ids []string
		for _, it := range page.Items {
			ids = append(ids, string(it))
		}
		return strings.Join(ids, ","), nil
	}
	for q, want := range map[string]string{
		"SELECT VALUE c.id FROM c ORDER BY c.id DESC":    `"d2","d1","d0"`,
		"SELECT VALUE COUNT(1) FROM c WHERE c.id > 'd0'": `2`,
		"SELECT VALUE c.id FROM c ORDER BY c.name, c.id": "",
	} {
		got, err := query(q)
		switch {
		case want == "" && ErrorCode(err) != BadRequest:
			t.Errorf("%s: %v, want a 400 (no composite index)", q, err)
		case want != "" && err != nil:
			t.Errorf("%s: %v", q, err)
		case want != "" && got != want:
			t.Errorf("%s: %s, want %s", q, got, want)
		}
	}
	for _, q := range []string{"SELECT VALUE c.id FROM c ORDER BY c.n", "SELECT VALUE c.id FROM c WHERE c.n > 0"} {
		if _, err := query(q); ErrorCode(err) != BadRequest {
			t.Errorf("%s on a path the policy leaves out: %v, want a 400", q, err)
		}
	}
}

// Included and excluded paths are checked as the service checks them, and
// a quoted label is one segment whatever it holds.
func TestIndexPathsAreChecked(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	ctx := context.Background()
	for i, tc := range []struct {
		policy string
		err    string // "" when accepted
	}{
		{`{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/a/?"},{"path":"/tags/[]/?"},{"path":"/\"a-b c/d\"/*"},{"path":"/ünï_1/?"}]}`, ""},
		{`{"includedPaths":[{"path":"/name/?"}],"excludedPaths":[{"path":"/*"}]}`, ""},
		{`{"includedPaths":[{"path":"/"}]}`, ""},
		{`{"indexingMode":"none","automatic":false}`, ""},
		{`{"includedPaths":[],"excludedPaths":[],"compositeIndexes":[[{"path":"/a"},{"path":"/b"}]]}`, ""},
		{`{"includedPaths":[],"excludedPaths":[{"path":"/*"}]}`, ""},
		{`{"includedPaths":[{"path":"/a/?"}]}`, `mandatory indexing path "/"`},
		{`{"excludedPaths":[{"path":"/lineItems/*/x/?"}]}`, "failed near position '12'"},
		{`{"excludedPaths":[{"path":"/expiration"}]}`, "failed near position '11'"},
		{`{"excludedPaths":[{"path":"/a-b/?"}]}`, "failed near position '2'"},
		{`{"excludedPaths":[{"path":"/a b/?"}]}`, "failed near position '2'"},
		{`{"excludedPaths":[{"path":"/a/"}]}`, "failed near position '3'"},
		{`{"excludedPaths":[{"path":"//a/?"}]}`, "failed near position '1'"},
		{`{"excludedPaths":[{"path":"/a/?/b"}]}`, "failed near position '4'"},
		{`{"excludedPaths":[{"path":"/\"a/?"}]}`, "could not be accepted"},
		{`{"includedPaths":[{"path":"/*"},{"path":"/a/?"}],"excludedPaths":[{"path":"/a/?"}]}`, "both included and excluded"},
		{`{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/*"}]}`, "both included and excluded"},
	} {
		body := fmt.Sprintf(`{"id":"p%d","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"indexingPolicy":%s}`, i, tc.policy)
		_, err := be.e.CreateContainer(ctx, "db", batchJSON(t, body), nil)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.policy, err)
		case tc.err != "" && (ErrorCode(err) != BadRequest || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want a 400 saying %q", tc.policy, err, tc.err)
		}
	}
	// An empty list of included paths, as the .NET SDK sends one, is the
	// whole document.
	res, _, err := be.e.ReadContainer(ctx, "db", "p4")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Body.Get("indexingPolicy").Get("includedPaths").String(); got != `[{"path":"/*"}]` {
		t.Errorf("includedPaths [] reads back as %s, want the root", got)
	}
	// A container whose stored policy predates the checks may be replaced
	// with that policy, though not given another path that fails them.
	stored := `{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/my-prop/?"}],"excludedPaths":[{"path":"/\"_etag\"/?"}]}`
	rewriteContainer(t, be.e, be.e.store, "c", func(c *containerRecord) {
		c.Props = c.Props.With("indexingPolicy", mustParse(stored))
	})
	e2, err := New(Config{Store: be.e.store, Clock: be.e.clock})
	if err != nil {
		t.Fatal(err)
	}
	replace := func(policy string) error {
		_, err := e2.ReplaceContainer(ctx, "db", "c", batchJSON(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":60,"indexingPolicy":`+policy+`}`), "")
		return err
	}
	if err := replace(stored); err != nil {
		t.Errorf("a replace keeping the stored policy: %v", err)
	}
	if err := replace(`{"includedPaths":[{"path":"/other-prop/?"}],"excludedPaths":[{"path":"/*"}]}`); ErrorCode(err) != BadRequest {
		t.Errorf("a replace with another path that fails the checks: %v, want a 400", err)
	}
	pol := newIndexPolicy(mustParse(`{"indexingMode":"consistent","includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"a/b\"/?"}]}`))
	if pol.indexes([]string{"a/b"}) || !pol.indexes([]string{"a", "b"}) {
		t.Errorf(`excluding /"a/b"/?: a/b indexed %v, a.b indexed %v; want false, true`, pol.indexes([]string{"a/b"}), pol.indexes([]string{"a", "b"}))
	}
}
