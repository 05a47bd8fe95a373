package main

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/auth"
)

// The vectors of docs/protocol.md §1.1, through the floor's
// verifier.
func TestVerifier(t *testing.T) {
	const date = "Tue, 01 Nov 1994 08:12:31 GMT"
	now, _ := time.Parse(http.TimeFormat, date)
	verify, err := newVerifier(auth.Config{Keys: []string{emulatorKey}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ method, path, sig string }{
		{"GET", "/dbs/mydb", "V4kLO2EPXsNPZQ1SJ2bcBpEA48LEKZYnV+u5btozGb0="},
		{"POST", "/dbs/mydb/colls/mycoll/docs", "/MmzePYPMjZ2ZflFuLIc/ziLQ5Dyhdb3yoaxaGslkSs="},
		{"GET", "/", "N4K9sTh55gXE+YRPcuWlVBBIfFr7vgRBGMdn4Z+Nels="},
	} {
		r, _ := http.NewRequest(tt.method, "https://localhost:8082"+tt.path, nil)
		r.Header.Set("x-ms-date", date)
		r.Header.Set("Authorization", url.QueryEscape("type=master&ver=1.0&sig="+tt.sig))
		if _, err := verify(r); err != nil {
			t.Errorf("%s %s: %v", tt.method, tt.path, err)
		}
		r.Header.Set("x-ms-date", "Tue, 01 Nov 1994 08:12:32 GMT")
		if _, err := verify(r); err == nil {
			t.Errorf("%s %s: accepted with another date", tt.method, tt.path)
		}
	}
}
