package document

import (
	"testing"
)

var topDocs = []string{
	`{}`,
	`{"id":"a","n":1,"payload":"xxxx"}`,
	`{"id":"a","n":1.5e3,"s":"br{ace[s\"]}","arr":[1,[2,{"n":3}],"]"],"o":{"n":{"x":[{}]}},"t":true,"f":false,"z":null}`,
	`{"n\u0061me":"escaped key","n":-0.5,"name":2}`,
	`{ "n" : 1 , "m" : [ 1 , 2 ] , "o" : { "a" : "b" } }`,
	`{"n":1,"n":2,"x":"\\\"","y":"é\u00e9"}`,
	`{"deep":[[[[["\\"]]]]],"n":"after"}`,
}

// ParseTop gives what Parse gives, less the properties it was not asked
// for, whatever they hold.
func TestParseTopMatchesParse(t *testing.T) {
	for _, doc := range topDocs {
		full, err := Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, keep := range []map[string]bool{{}, {"n": true}, {"name": true, "o": true}, {"y": true, "x": true, "n": true, "deep": true, "arr": true}} {
			checkTop(t, doc, full, keep)
		}
	}
}

func checkTop(t *testing.T, doc string, full Value, keep map[string]bool) {
	t.Helper()
	got, err := ParseTop([]byte(doc), keep)
	if err != nil {
		t.Fatalf("ParseTop(%s, %v): %v", doc, keep, err)
	}
	var want []Field
	for _, f := range full.Fields() {
		if keep[f.Name] {
			want = append(want, f)
		}
	}
	if Compare(got, Obj(want)) != 0 || len(got.Fields()) != len(want) {
		t.Fatalf("ParseTop(%s, %v) = %s, want %s", doc, keep, got.JSON(), Obj(want).JSON())
	}
}

// FuzzParseTop checks ParseTop against Parse on any valid JSON object.
func FuzzParseTop(f *testing.F) {
	for _, d := range topDocs {
		f.Add(d, "n")
	}
	f.Fuzz(func(t *testing.T, doc, name string) {
		full, err := Parse([]byte(doc))
		if err != nil || full.Kind() != Object {
			return
		}
		checkTop(t, doc, full, map[string]bool{name: true, "n": true})
	})
}
