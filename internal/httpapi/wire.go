package httpapi

import (
	"net/http"
	"strings"
)

// The service spells its own response headers in lower case
// (x-ms-continuation, x-ms-request-charge, etag, lsn), and clients written
// against it may look them up case-sensitively: the DocumentDB-era SDKs do
// over HTTP/1.1, and one that misses x-ms-continuation stops after the first
// page without an error. Go's Header.Set stores keys in canonical form
// (X-Ms-Continuation), and HTTP/1.1 writes keys as stored, so every
// response's keys are respelled once, just before the header is written.
// HTTP/2 lower-cases every key on the wire anyway, so its responses are
// left as they are.
//
// The respelled keys are no longer found by Header.Get, so this wraps the
// handler where it meets the connection (WireSpelling), not inside it.

// WireSpelling returns h with its response header keys spelled as the
// service spells them.
func WireSpelling(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor >= 2 {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&wireWriter{ResponseWriter: w}, r)
	})
}

// wireName returns the service's spelling of a canonical header key, and
// whether it differs.
func wireName(key string) (string, bool) {
	switch {
	case strings.HasPrefix(key, "X-Ms-"):
		return strings.ToLower(key), true
	case key == "Etag":
		return "etag", true
	case key == "Lsn":
		return "lsn", true
	}
	return key, false
}

// respell moves every header whose service spelling differs from Go's
// canonical one to that spelling.
func respell(h http.Header) {
	for k, v := range h {
		if name, ok := wireName(k); ok {
			delete(h, k)
			h[name] = v
		}
	}
}

// wireWriter respells the header the first time it is written.
type wireWriter struct {
	http.ResponseWriter
	written bool
}

func (w *wireWriter) WriteHeader(status int) {
	if !w.written {
		w.written = true
		respell(w.Header())
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *wireWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *wireWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
