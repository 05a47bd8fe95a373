package httpapi

import "net/http"

// The service spells its own response headers in lower case
// (x-ms-continuation, x-ms-request-charge, etag, lsn), and clients written
// against it may look them up case-sensitively: the DocumentDB-era SDKs do
// over HTTP/1.1, and one that misses x-ms-continuation stops after the first
// page without an error. HTTP/1.1 writes a header's name as the map holds
// it, so the handler stores every name as the service spells it, with
// setHeader, never through Header.Set, which would store X-Ms-Continuation.
// HTTP/2 lower-cases every name on the wire; names already in lower case
// cost it nothing.
//
// Header.Get canonicalizes the name it is given and so misses these:
// read them back with headerValue.

// setHeader stores v under name, spelled as it goes on the wire.
func setHeader(hd http.Header, name, v string) {
	hd[name] = []string{v}
}

// headerValue returns the first value stored under name, spelled as
// setHeader stored it.
func headerValue(hd http.Header, name string) string {
	if v := hd[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}
