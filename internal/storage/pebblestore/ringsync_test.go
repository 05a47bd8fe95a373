package pebblestore

import (
	"context"
	"fmt"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// A durable store syncs its log through the ring where there is one: each
// of a run of commits, one after another, waits for a sync of its own.
// PlainSync, and a read-only store, use none.
func TestLogSyncsThroughRing(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if s.ring == nil {
		_ = s.Close()
		t.Skip("io_uring is unavailable here; the log syncs with fdatasync")
	}
	before := s.ring.Synced()
	const commits = 5
	for i := range commits {
		if err := s.Update(context.Background(), func(tx storage.Txn) error {
			return tx.Set(fmt.Appendf(nil, "k%d", i), []byte("v"))
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.ring.Synced() - before; got < commits {
		t.Errorf("%d syncs through the ring for %d commits, want at least %d", got, commits, commits)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	for _, opts := range []Options{{Dir: dir, PlainSync: true}, {Dir: dir, ReadOnly: true}} {
		s, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		if s.ring != nil {
			t.Errorf("Open(%+v) set up a ring", opts)
		}
		if err := s.View(context.Background(), func(r storage.Reader) error { _, err := r.Get([]byte("k4")); return err }); err != nil {
			t.Errorf("read after reopening: %v", err)
		}
		if !opts.ReadOnly {
			if err := s.Update(context.Background(), func(tx storage.Txn) error { return tx.Set([]byte("plain"), []byte("v")) }); err != nil {
				t.Errorf("commit with PlainSync: %v", err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
