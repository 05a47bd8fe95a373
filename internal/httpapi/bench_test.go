package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/auth"
)

// BenchmarkReadItemRequest is a point read through the handler, signed as
// the SDKs sign it, without the transport: what Mayfly adds to a read
// beyond HTTP/2 and TLS, which the floor server pays too.
func BenchmarkReadItemRequest(b *testing.B) {
	h := newTestHandler(b)
	req := httptest.NewRequest("GET", "https://localhost/dbs/db/colls/c/docs/x", nil)
	date := auth.FormatDate(time.Now())
	key, _ := auth.DecodeKey(auth.EmulatorKey)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("Authorization", auth.MasterHeader("GET", "docs", "dbs/db/colls/c/docs/x", date, key))
	req.Header.Set("x-ms-documentdb-partitionkey", `["a"]`)
	req.Header.Set("x-ms-version", "2020-07-15")
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}
