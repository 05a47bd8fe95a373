package pebblestore

import (
	"bytes"
	"context"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// An in-memory store writes no log: its writes are in the memtable alone,
// and read back from there.
func TestInMemoryKeepsNoLog(t *testing.T) {
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Update(ctx, func(tx storage.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	if n := s.db.Metrics().WAL.BytesIn; n != 0 {
		t.Errorf("an in-memory store wrote %d bytes to its log", n)
	}
	err = s.View(ctx, func(r storage.Reader) error {
		v, err := r.Get([]byte("k"))
		if err == nil && !bytes.Equal(v, []byte("v")) {
			t.Errorf("read back %q", v)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
