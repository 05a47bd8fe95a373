package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/mayfly-db/mayfly/internal/auth"
	"github.com/mayfly-db/mayfly/internal/engine"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

// failingStore fails every Update with the error set, once one is set.
type failingStore struct {
	storage.Store
	err atomic.Pointer[error]
}

func (s *failingStore) Update(ctx context.Context, fn func(storage.Txn) error) error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return s.Store.Update(ctx, fn)
}

// Each storage failure is answered with the status the SDKs act on, in
// a Cosmos-style body, never a 500: a lost race 449 (retried), a full disk
// 507 (nothing stored), a store that cannot serve 503 with a retry hint.
func TestStorageErrorsHaveTheirStatuses(t *testing.T) {
	base, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	st := &failingStore{Store: base}
	eng, err := engine.New(engine.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewVerifier(auth.Config{Keys: []string{auth.EmulatorKey}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Engine: eng, Auth: v})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/dbs", `{"id":"db"}`},
		{"POST", "/dbs/db/colls", `{"id":"c","partitionKey":{"paths":["/pk"]}}`},
	} {
		if rec := serve(h, r.method, r.path, r.body, nil); rec.Code >= 300 {
			t.Fatalf("setup %s %s: %d %s", r.method, r.path, rec.Code, rec.Body)
		}
	}
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}
	for _, tc := range []struct {
		err        error
		status     int
		retryAfter bool
	}{
		{fmt.Errorf("commit: %w", storage.ErrConflict), 449, false},
		{fmt.Errorf("commit: %w", storage.ErrNoSpace), http.StatusInsufficientStorage, false},
		{fmt.Errorf("commit: %w", storage.ErrUnavailable), http.StatusServiceUnavailable, true},
	} {
		st.err.Store(&tc.err)
		rec := serve(h, "POST", "/dbs/db/colls/c/docs", `{"id":"x","pk":"a"}`, pk)
		wantCosmosError(t, rec, rec.Body.Bytes(), tc.status, tc.err.Error())
		if got := headerValue(rec.Result().Header, "x-ms-retry-after-ms") != ""; got != tc.retryAfter {
			t.Errorf("%v: x-ms-retry-after-ms present: %v, want %v", tc.err, got, tc.retryAfter)
		}
	}
}
