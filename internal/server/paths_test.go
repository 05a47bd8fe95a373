package server

import (
	"os"
	"path/filepath"
	"testing"
)

// A path through a symbolic link into a directory lies within it, as the
// path it leads to does; one beside it does not.
func TestWithinFollowsLinks(t *testing.T) {
	root := t.TempDir()
	store := filepath.Join(root, "data", "store")
	if err := os.MkdirAll(store, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(store, link); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		filepath.Join(store, "bk"):             true,
		filepath.Join(link, "bk"):              true,
		filepath.Join(link, "new", "deeper"):   true,
		filepath.Join(root, "data", "bk"):      false,
		filepath.Join(root, "elsewhere", "bk"): false,
	} {
		if got := within(path, store); got != want {
			t.Errorf("within(%s, %s) = %v, want %v", path, store, got, want)
		}
	}
}

// A --public-url names a host and, if any, a port a URL can have.
func TestCheckPublicURLs(t *testing.T) {
	for u, ok := range map[string]bool{
		"https://db.example.com:8081/": true,
		"http://10.0.0.5/":             true,
		"https://[::1]:8081":           true,
		"https://:8081/":               false,
		"https://db.example.com:99999": false,
		"https://db.example.com:0/":    false,
		"https://db.example.com/x":     false,
		"ftp://db.example.com/":        false,
		"https://db.example.com/#top":  false,
	} {
		if err := checkPublicURLs([]string{u}); (err == nil) != ok {
			t.Errorf("checkPublicURLs(%q) = %v, want ok %v", u, err, ok)
		}
	}
}
