package main

import (
	"net/http"
	"net/url"
	"testing"
)

// The vectors of cosmos-rest-protocol.md §1.1.
func TestVerifier(t *testing.T) {
	verify, err := newVerifier(emulatorKey)
	if err != nil {
		t.Fatal(err)
	}
	const date = "Tue, 01 Nov 1994 08:12:31 GMT"
	for _, tt := range []struct{ method, path, sig string }{
		{"GET", "/dbs/mydb", "V4kLO2EPXsNPZQ1SJ2bcBpEA48LEKZYnV+u5btozGb0="},
		{"POST", "/dbs/mydb/colls/mycoll/docs", "/MmzePYPMjZ2ZflFuLIc/ziLQ5Dyhdb3yoaxaGslkSs="},
		{"GET", "/", "N4K9sTh55gXE+YRPcuWlVBBIfFr7vgRBGMdn4Z+Nels="},
	} {
		r, _ := http.NewRequest(tt.method, "https://localhost:8082"+tt.path, nil)
		r.Header.Set("x-ms-date", date)
		r.Header.Set("Authorization", url.QueryEscape("type=master&ver=1.0&sig="+tt.sig))
		if err := verify(r); err != nil {
			t.Errorf("%s %s: %v", tt.method, tt.path, err)
		}
		r.Header.Set("x-ms-date", "Tue, 01 Nov 1994 08:12:32 GMT")
		if err := verify(r); err == nil {
			t.Errorf("%s %s: accepted with another date", tt.method, tt.path)
		}
	}
}

func TestResourceOf(t *testing.T) {
	for _, tt := range []struct{ path, typ, link string }{
		{"/", "", ""},
		{"/dbs", "dbs", ""},
		{"/dbs/db1", "dbs", "dbs/db1"},
		{"/dbs/db1/colls/c1/docs", "docs", "dbs/db1/colls/c1"},
		{"/dbs/db1/colls/c1/docs/a%2Fb", "docs", "dbs/db1/colls/c1/docs/a/b"},
		{"/dbs/db1/colls/c1/pkranges", "pkranges", "dbs/db1/colls/c1"},
		{"/offers/AbCd/", "offers", "abcd"},
	} {
		typ, link := resourceOf(tt.path)
		if typ != tt.typ || link != tt.link {
			t.Errorf("resourceOf(%q) = %q, %q; want %q, %q", tt.path, typ, link, tt.typ, tt.link)
		}
	}
}
