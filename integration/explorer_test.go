package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/server"
)

// The Data Explorer is served by the binary itself, with nothing fetched
// from elsewhere, and is told the account key only when it is the
// well-known emulator key.
func TestExplorerIsServed(t *testing.T) {
	get := func(e *env, path string) (int, http.Header, string) {
		t.Helper()
		resp, err := e.http.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	e := start(t)
	// Typed without its slash, the address leads to the page.
	code, _, body := get(e, "_explorer")
	if code != http.StatusOK || !strings.Contains(body, "app.js") {
		t.Errorf("GET /_explorer: %d, not the page", code)
	}
	for _, path := range []string{"_explorer/index.html", "_explorer/app.js", "_explorer/style.css"} {
		code, hdr, body := get(e, path)
		if code != http.StatusOK || body == "" {
			t.Fatalf("GET /%s: %d", path, code)
		}
		if !strings.Contains(hdr.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("GET /%s: CSP %q", path, hdr.Get("Content-Security-Policy"))
		}
		if strings.Contains(body, "http://") || strings.Contains(body, "https://") {
			t.Errorf("/%s names another origin", path)
		}
	}
	keyOf := func(e *env) string {
		_, _, body := get(e, "_explorer/config.json")
		var cfg struct{ EmulatorKey string }
		if err := json.Unmarshal([]byte(body), &cfg); err != nil {
			t.Fatal(err)
		}
		return cfg.EmulatorKey
	}
	if got := keyOf(e); got != emulatorKey {
		t.Errorf("with the emulator key, config.json gives %q", got)
	}
	own := start(t, func(c *server.Config) {
		c.Keys = []string{"b3duIGtleSBvZiB0aGlzIHRlc3QsIG5vdCB0aGUgZW11bGF0b3IncyBrZXkgYXQgYWxs"}
	})
	if got := keyOf(own); got != "" {
		t.Errorf("with a key of its own, config.json gives %q", got)
	}
}
