package pgstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pgtest"
)

// A write transaction that names a key to Prefetch with Lock as it begins
// waits there while another holds the key's row, and when the other
// commits it runs again at once on the new value: it never works on the
// value the other was replacing, only to fail at its commit.
func TestLockAheadWaitsInsteadOfWorkingOnAStaleValue(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s, err := Open(ctx, Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := []byte("state")
	if err := s.Update(ctx, func(tx storage.Txn) error { return tx.Set(key, []byte("0")) }); err != nil {
		t.Fatal(err)
	}
	increment := func(tx storage.Txn, seen *[]string, hold func()) error {
		storage.Prefetch(tx, storage.Read{Key: key, Lock: true})
		v, err := tx.Get(key)
		if err != nil {
			return err
		}
		*seen = append(*seen, string(v))
		if hold != nil {
			hold()
		}
		return tx.Set(key, []byte{v[0] + 1})
	}
	holding := make(chan struct{})
	var first, second []string
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.Update(ctx, func(tx storage.Txn) error {
			return increment(tx, &first, func() {
				if len(first) == 1 {
					close(holding)
					// Until the other waits for the row's lock.
					waitForLockWaiter(t, url)
				}
			})
		}); err != nil {
			t.Error(err)
		}
	})
	<-holding
	retries := s.Stats().Retries
	if err := s.Update(ctx, func(tx storage.Txn) error { return increment(tx, &second, nil) }); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(second) != 1 || second[0] != "1" {
		t.Errorf("the waiting transaction read %q, want only the other's committed \"1\"", second)
	}
	if got := s.Stats().Retries - retries; got != 1 {
		t.Errorf("%d retries, want the one after the wait", got)
	}
	v, err := getValue(ctx, s, key)
	if err != nil || v != "2" {
		t.Errorf("state = %q, %v; want \"2\"", v, err)
	}
}

func getValue(ctx context.Context, s storage.Store, key []byte) (string, error) {
	var out string
	err := s.View(ctx, func(r storage.Reader) error {
		v, err := r.Get(key)
		out = string(v)
		return err
	})
	return out, err
}

// A write transaction whose gateway stops in its middle, holding a row's
// lock, is ended by PostgreSQL once it has sat idle past IdleWrite, so
// another gateway's write to the row goes on rather than waiting for it.
func TestAStoppedWriterReleasesItsLocks(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	stopped, err := Open(ctx, Options{URL: url, IdleWrite: 300 * time.Millisecond, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer stopped.Close()
	other, err := Open(ctx, Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	key := []byte("row")
	if err := other.Update(ctx, func(tx storage.Txn) error { return tx.Set(key, []byte("0")) }); err != nil {
		t.Fatal(err)
	}
	holding, resumed := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		once := false
		_ = stopped.Update(ctx, func(tx storage.Txn) error {
			storage.Prefetch(tx, storage.Read{Key: key, Lock: true})
			if _, err := tx.Get(key); err != nil {
				return err
			}
			if !once {
				once = true
				close(holding)
				time.Sleep(3 * time.Second) // stopped, its lock held
				close(resumed)
			}
			return tx.Set(key, []byte("stopped"))
		})
	})
	<-holding
	if err := other.Update(ctx, func(tx storage.Txn) error {
		storage.Prefetch(tx, storage.Read{Key: key, Lock: true})
		if _, err := tx.Get(key); err != nil {
			return err
		}
		return tx.Set(key, []byte("other"))
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-resumed:
		t.Error("the other write waited for the stopped one to resume")
	default:
	}
	wg.Wait()
}

// waitForLockWaiter returns once a session of the database at url waits
// for a lock, failing the test after 30 s.
func waitForLockWaiter(t *testing.T, url string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close(ctx)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Error(err)
			return
		}
		if n > 0 {
			return
		}
	}
	t.Error("no session waits for the row's lock")
}
