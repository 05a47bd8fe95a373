package pgstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pgtest"
)

// GetMany reads its keys in one round trip and keeps none of the values:
// a reader that reads a whole container a run at a time holds one run.
// Get keeps what it read, so a second Get of a key costs nothing.
func TestGetManyKeepsNothing(t *testing.T) {
	s, err := Open(context.Background(), Options{URL: pgtest.URL(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var keys [][]byte
	if err := s.Update(context.Background(), func(tx storage.Txn) error {
		for i := range 300 {
			k := []byte(fmt.Sprintf("key%03d", i))
			keys = append(keys, k)
			if err := tx.Set(k, []byte("v")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	err = s.View(context.Background(), func(r storage.Reader) error {
		rd := r.(*reader)
		if _, _, err := rd.TxNow(); err != nil { // begins the transaction
			return err
		}
		before := s.Stats().RoundTrips
		n := 0
		if err := rd.GetMany(keys, func(_ int, v []byte) error {
			if string(v) == "v" {
				n++
			}
			return nil
		}); err != nil {
			return err
		}
		if trips := s.Stats().RoundTrips - before; n != len(keys) || trips != 1 || len(rd.got) != 0 {
			t.Errorf("GetMany: %d of %d values in %d round trips, %d kept; want all in 1, none kept", n, len(keys), trips, len(rd.got))
		}
		if _, err := rd.Get(keys[0]); err != nil {
			return err
		}
		if len(rd.got) != 1 {
			t.Errorf("Get kept %d values, want 1", len(rd.got))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
