// Package teststore opens the store that tests running on every backend
// use: in-memory Pebble by default, or, with MAYFLY_TEST_STORE=postgres, a
// database of the test's own on the test PostgreSQL server (pgtest). A
// package that uses it runs its tests through pgtest.Main.
//
// The PostgreSQL store is handed over without its clock (storage.Clocked
// and nothing else of it is hidden), so an engine over it runs on the
// test's clock exactly as over Pebble: the same test judges the same
// expiries on both backends. The shared clock has tests of its own.
package teststore

import (
	"context"
	"os"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
	"github.com/mayfly-db/mayfly/internal/storage/pgstore"
	"github.com/mayfly-db/mayfly/internal/storage/pgtest"
)

// Backend names the backend Open uses, from MAYFLY_TEST_STORE.
func Backend() string {
	if os.Getenv("MAYFLY_TEST_STORE") == "postgres" {
		return "postgres"
	}
	return "pebble"
}

// Open returns a new, empty store, closed when t ends.
func Open(t testing.TB) storage.Store {
	t.Helper()
	var s storage.Store
	switch Backend() {
	case "postgres":
		var err error
		if s, err = openPostgres(pgtest.URL(t)); err != nil {
			t.Fatal(err)
		}
	default:
		// Every key hot: every read goes through the store's cache of
		// hot keys, and every write invalidates it (pebblestore hot.go),
		// so every test checks that cache as well.
		ps, err := pebblestore.Open(pebblestore.Options{InMemory: true, Hot: allHot})
		if err != nil {
			t.Fatal(err)
		}
		s = ps
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// OpenDurable returns a new, empty store that keeps what it holds when
// closed, and a function that opens it again, as a server restarting on
// the same data does: a Pebble directory on disk, or the test's own
// PostgreSQL database. The caller closes each store it gets.
func OpenDurable(t testing.TB) (s storage.Store, reopen func() (storage.Store, error)) {
	t.Helper()
	switch Backend() {
	case "postgres":
		url := pgtest.URL(t)
		reopen = func() (storage.Store, error) { return openPostgres(url) }
	default:
		dir := t.TempDir()
		reopen = func() (storage.Store, error) {
			ps, err := pebblestore.Open(pebblestore.Options{Dir: dir, Hot: allHot})
			if err != nil {
				return nil, err
			}
			return ps, nil
		}
	}
	s, err := reopen()
	if err != nil {
		t.Fatal(err)
	}
	return s, reopen
}

// openPostgres opens the database at url, its clock hidden.
func openPostgres(url string) (storage.Store, error) {
	ps, err := pgstore.Open(context.Background(), pgstore.Options{URL: url, PoolSize: 8})
	if err != nil {
		return nil, err
	}
	return unclocked{ps, ps}, nil
}

// unclocked is a store with its Clocked method hidden; it keeps DeleteRange.
type unclocked struct {
	storage.Store
	pg *pgstore.Store
}

// InUse returns how many connections of a PostgreSQL store's pool are
// taken (0 for other stores): none once every operation has returned,
// unless one leaked its connection.
func InUse(s storage.Store) int {
	if u, ok := s.(unclocked); ok {
		return int(u.pg.Stats().PoolInUse)
	}
	return 0
}

// RoundTrips returns how many statements and batches a PostgreSQL store
// has sent (0 for other stores).
func RoundTrips(s storage.Store) int64 {
	if u, ok := s.(unclocked); ok {
		return u.pg.Stats().RoundTrips
	}
	return 0
}

// DeleteRange keeps the store's own (storage.RangeDeleter).
func (u unclocked) DeleteRange(ctx context.Context, lower, upper []byte, limit int) (bool, error) {
	return storage.DeleteRange(ctx, u.Store, lower, upper, limit)
}

func allHot([]byte) bool { return true }
