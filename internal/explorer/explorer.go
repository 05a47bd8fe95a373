// Package explorer serves the Data Explorer: one page, embedded in the
// binary, that talks to the server's own API with requests it signs in
// the browser, as the SDKs do. It opens no way around authentication: the
// page asks for the account key, and is told it only when the server runs
// with the well-known emulator key, which is public anyway.
package explorer

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
)

//go:embed site
var site embed.FS

// Routes are the explorer's paths under /_explorer/, for the API's
// listener. emulatorKey is the well-known key when the server runs with
// it, else empty.
func Routes(emulatorKey string) map[string]http.Handler {
	files, _ := fs.Sub(site, "site")
	out := map[string]http.Handler{}
	for _, name := range []string{"index.html", "app.js", "style.css"} {
		out["/_explorer/"+name] = serveFile(files, name)
	}
	out["/_explorer/"] = out["/_explorer/index.html"]
	// The address as a user types it, without the slash the page's
	// relative links need.
	out["/_explorer"] = http.RedirectHandler("/_explorer/", http.StatusFound)
	out["/_explorer/config.json"] = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(map[string]string{"emulatorKey": emulatorKey})
	})
	return out
}

func serveFile(files fs.FS, name string) http.Handler {
	types := map[string]string{"index.html": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := fs.ReadFile(files, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", types[name])
		h.Set("Cache-Control", "no-cache")
		// Nothing is fetched from elsewhere: the page is self-contained.
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
		h.Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(b)
	})
}
