package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

func TestOperationOf(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		header       map[string]string
		want         string
	}{
		{"GET", "/", nil, "GET account"},
		{"GET", "/dbs", nil, "GET dbs"},
		{"GET", "/dbs/db/colls/c", nil, "GET colls"},
		{"GET", "/dbs/db/colls/c/docs/x", nil, "GET docs"},
		{"POST", "/dbs/db/colls/c/docs", nil, "POST docs"},
		{"POST", "/dbs/db/colls/c/docs", map[string]string{"x-ms-documentdb-isquery": "True"}, "POST docs query"},
		{"POST", "/dbs/db/colls/c/docs", map[string]string{"Content-Type": "application/query+json"}, "POST docs query"},
		{"GET", "/dbs/db/colls/c/whatever/x", nil, "GET other"},
		{"POST", "/_mayfly/backup", nil, "POST other"},
		{"FROB123", "/dbs", nil, "OTHER dbs"},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		for k, v := range tc.header {
			r.Header.Set(k, v)
		}
		if got := operationOf(r); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}

// failingStore is a store whose reads fail, as one over an unreachable
// database does.
type failingStore struct{ storage.Store }

func (failingStore) View(context.Context, func(storage.Reader) error) error {
	return storage.ErrUnavailable
}

func TestHealth(t *testing.T) {
	st, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	get := func(h *health, path string) int {
		w := httptest.NewRecorder()
		h.routes()[path].ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Code
	}
	ok := &health{store: st}
	down := &health{store: failingStore{st}}
	for _, tc := range []struct {
		name string
		h    *health
		path string
		want int
	}{
		{"live", ok, "/_health/live", 200},
		{"ready", ok, "/_health/ready", 200},
		{"live, store down", down, "/_health/live", 200},
		{"ready, store down", down, "/_health/ready", 503},
	} {
		if got := get(tc.h, tc.path); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	ok.closing.Store(true)
	if got := get(ok, "/_health/ready"); got != 503 {
		t.Errorf("ready while shutting down: %d, want 503", got)
	}
}
