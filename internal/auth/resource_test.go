package auth

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestParseResource(t *testing.T) {
	tests := []struct {
		path string
		typ  string
		link string
		segs []string
	}{
		{"", "", "", nil},
		{"/", "", "", nil},
		{"/dbs", "dbs", "", []string{"dbs"}},
		{"/dbs/", "dbs", "", []string{"dbs"}},
		{"/dbs/mydb", "dbs", "dbs/mydb", []string{"dbs", "mydb"}},
		{"/dbs/mydb/", "dbs", "dbs/mydb", []string{"dbs", "mydb"}},
		{"/dbs/mydb/colls", "colls", "dbs/mydb", []string{"dbs", "mydb", "colls"}},
		{"/dbs/mydb/colls/mycoll/docs", "docs", "dbs/mydb/colls/mycoll", []string{"dbs", "mydb", "colls", "mycoll", "docs"}},
		{"/dbs/mydb/colls/mycoll/docs/item%201", "docs", "dbs/mydb/colls/mycoll/docs/item 1",
			[]string{"dbs", "mydb", "colls", "mycoll", "docs", "item 1"}},
		// An escaped slash stays inside its segment but is signed unescaped.
		{"/dbs/a%2Fb/colls/c", "colls", "dbs/a/b/colls/c", []string{"dbs", "a/b", "colls", "c"}},
		{"/dbs/db/colls/c/docs/%25%3F%23%C3%A9", "docs", "dbs/db/colls/c/docs/%?#é",
			[]string{"dbs", "db", "colls", "c", "docs", "%?#é"}},
		// '+' is not a space in a path.
		{"/dbs/a+b", "dbs", "dbs/a+b", []string{"dbs", "a+b"}},
		{"/dbs/Mixed/colls/Case", "colls", "dbs/Mixed/colls/Case", []string{"dbs", "Mixed", "colls", "Case"}},
		{"/dbs/db/colls/c/pkranges", "pkranges", "dbs/db/colls/c", []string{"dbs", "db", "colls", "c", "pkranges"}},
		{"/dbs/db/users/u/permissions/p", "permissions", "dbs/db/users/u/permissions/p",
			[]string{"dbs", "db", "users", "u", "permissions", "p"}},
		// Offers go by rid; the SDKs sign the rid alone, lowercased.
		{"/offers", "offers", "", []string{"offers"}},
		{"/offers/AbC9xy==/", "offers", "abc9xy==", []string{"offers", "AbC9xy=="}},
		{"//dbs/x//", "dbs", "dbs/x", []string{"dbs", "x"}},
	}
	for _, tt := range tests {
		r, err := ParseResource(tt.path)
		if err != nil {
			t.Errorf("ParseResource(%q): %v", tt.path, err)
			continue
		}
		want := Resource{Type: tt.typ, Link: tt.link, Segments: tt.segs}
		if !reflect.DeepEqual(r, want) {
			t.Errorf("ParseResource(%q) = %+v, want %+v", tt.path, r, want)
		}
	}
}

func TestParseResourceErrors(t *testing.T) {
	for _, path := range []string{"/dbs//colls", "/dbs/%zz", "/dbs/db/colls/%", "/dbs/a%2"} {
		_, err := ParseResource(path)
		var e *Error
		if !errors.As(err, &e) || e.Status != 400 || e.Code != "BadRequest" || !strings.Contains(e.Message, path) {
			t.Errorf("ParseResource(%q) error = %v, want a 400 naming the path", path, err)
		}
	}
}

func FuzzParseResource(f *testing.F) {
	for _, s := range []string{"/", "/dbs/db/colls/c/docs/x%2Fy", "/offers/AB/", "//a//", "/dbs/%zz", "/a/b/c/d/e/f/g"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		r, err := ParseResource(path)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status != 400 {
				t.Fatalf("ParseResource(%q): %v is not a 400 *Error", path, err)
			}
			return
		}
		n := len(r.Segments)
		if n == 0 {
			if r.Type != "" || r.Link != "" {
				t.Fatalf("account path %q gave %+v", path, r)
			}
			return
		}
		if (n%2 == 0 && r.Type != r.Segments[n-2]) || (n%2 == 1 && r.Type != r.Segments[n-1]) {
			t.Fatalf("ParseResource(%q) type %q from %q", path, r.Type, r.Segments)
		}
		// Escaping the segments again gives the same resource.
		esc := make([]string, n)
		for i, s := range r.Segments {
			if s == "" {
				t.Fatalf("ParseResource(%q) has an empty segment", path)
			}
			esc[i] = url.PathEscape(s)
		}
		r2, err := ParseResource("/" + strings.Join(esc, "/") + "/")
		if err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("re-escaped %q: %+v, %v; want %+v", path, r2, err, r)
		}
	})
}
