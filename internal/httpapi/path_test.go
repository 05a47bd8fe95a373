package httpapi

import (
	"errors"
	"testing"
)

func TestParseResourcePath(t *testing.T) {
	tests := []struct {
		path, typ, link string
		segs            int
	}{
		{"/", "", "", 0},
		{"/dbs", "dbs", "", 1},
		{"/dbs/db1", "dbs", "dbs/db1", 2},
		{"/dbs/db1/colls/c1/docs", "docs", "dbs/db1/colls/c1", 5},
		{"/dbs/db1/colls/c1/docs/item%201", "docs", "dbs/db1/colls/c1/docs/item 1", 6},
		{"/offers/AbCd/", "offers", "abcd", 2},
		{"/dbs/db1/colls/c1/docs/Disallowed%3FChars", "docs", "dbs/db1/colls/c1/docs/Disallowed?Chars", 6},
		// The routing gateway's reading: a trailing space is dropped, an
		// escaped slash or backslash separates, '#' ends the path, escapes
		// are decoded twice. The client signed something else: 401.
		{"/dbs/d/colls/c/docs/Test%20", "docs", "dbs/d/colls/c/docs/Test", 6},
		{"/dbs/d/colls/c/docs/a%2Fb", "b", "dbs/d/colls/c/docs/a", 7},
		{"/dbs/d/colls/c/docs/a%5Cb", "b", "dbs/d/colls/c/docs/a", 7},
		{"/dbs/d/colls/c/docs/a%23b", "docs", "dbs/d/colls/c/docs/a", 6},
		{"/dbs/d/colls/c/docs/x%2520", "docs", "dbs/d/colls/c/docs/x", 6},
	}
	for _, tt := range tests {
		p, err := parseResourcePath(tt.path)
		if err != nil {
			t.Errorf("%s: %v", tt.path, err)
			continue
		}
		if p.typ != tt.typ || p.link != tt.link || len(p.segs) != tt.segs {
			t.Errorf("%s: got type %q link %q segs %d, want %q %q %d", tt.path, p.typ, p.link, len(p.segs), tt.typ, tt.link, tt.segs)
		}
	}
	for _, bad := range []string{"/dbs/a%0Ab", "/dbs/a%0Db", "/dbs/a%09b", "/dbs/%zz"} {
		var pe *pathError
		if _, err := parseResourcePath(bad); !errors.As(err, &pe) {
			t.Errorf("%s: %v, want a path error", bad, err)
		}
	}
}

func FuzzParseResourcePath(f *testing.F) {
	for _, s := range []string{"/dbs/a/colls/b/docs/c", "/offers/x/", "/%25%32%35", "//\\#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseResourcePath(s)
		if err != nil {
			return
		}
		if len(p.segs) > 0 && p.typ == "" && p.segs[len(p.segs)-1] != "" {
			if len(p.segs)%2 == 1 {
				t.Fatalf("odd path %q without a type", s)
			}
		}
	})
}

// TestParseComputePath: the compute gateway keeps every escaped character
// of an id, and decodes once.
func TestParseComputePath(t *testing.T) {
	for _, tt := range []struct{ path, typ, link string }{
		{"/dbs/d/colls/c/docs/Test%20", "docs", "dbs/d/colls/c/docs/Test "},
		{"/dbs/d/colls/c/docs/a%2Fb", "docs", "dbs/d/colls/c/docs/a/b"},
		{"/dbs/d/colls/c/docs/a%5Cb", "docs", "dbs/d/colls/c/docs/a\\b"},
		{"/dbs/d/colls/c/docs/a%23b", "docs", "dbs/d/colls/c/docs/a#b"},
		{"/dbs/d/colls/c/docs/a%3Fb", "docs", "dbs/d/colls/c/docs/a?b"},
		{"/dbs/d/colls/c/docs/a%0Db%09c%0A", "docs", "dbs/d/colls/c/docs/a\rb\tc\n"},
		{"/dbs/d/colls/c/docs/x%2520", "docs", "dbs/d/colls/c/docs/x%20"},
		{"/dbs/d/colls/c/docs", "docs", "dbs/d/colls/c"},
	} {
		p, err := parseComputePath(tt.path)
		if err != nil {
			t.Errorf("%s: %v", tt.path, err)
			continue
		}
		if p.typ != tt.typ || p.link != tt.link {
			t.Errorf("%s: type %q link %q, want %q %q", tt.path, p.typ, p.link, tt.typ, tt.link)
		}
	}
	if _, err := parseComputePath("/dbs/%zz"); err == nil {
		t.Error("a bad escape was accepted")
	}
}
