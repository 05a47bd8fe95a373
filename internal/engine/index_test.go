package engine

import (
	"bytes"
	"sort"
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
