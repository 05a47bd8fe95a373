package pebblestore

import (
	"context"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// TestEraseLeavesReadsAlone checks that the tables Erase's flushes leave
// behind (each holds the deletion of eraseFlushKey, rotateManifest) cost
// later reads nothing. A level-0 table is consulted by every point read of
// a key at or below its largest key: with eraseFlushKey after every engine
// key, each read after an erasure looked up that table's bloom filter as
// well, which doubled the blocks a drain page read.
func TestEraseLeavesReadsAlone(t *testing.T) {
	const n = 2000
	s := compactedStore(t, n)
	ctx := context.Background()
	key := testKey
	// blocks reads every key, each with a Get of its own, and returns the
	// blocks those reads looked up.
	blocks := func() int64 {
		before := s.BlockReads()
		for i := range n {
			err := s.View(ctx, func(r storage.Reader) error {
				_, err := r.Get(key(i))
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		return s.BlockReads() - before
	}
	before := blocks()
	if err := s.Erase(ctx, [][2][]byte{{[]byte("k"), []byte("l")}}); err != nil {
		t.Fatal(err)
	}
	if after := blocks(); after > before+n/10 {
		t.Errorf("%d Gets looked up %d blocks after an erasure, %d before", n, after, before)
	}
}

// A View's point reads of keys that lie before a level-0 table look up
// nothing of that table: pointGet bounds each seek to its key. Unbounded,
// every read looked up the table's bloom filter, as it would for a table
// a flush left after writes stopped.
func TestPointReadsPassTablesAfterTheKey(t *testing.T) {
	const n = 2000
	s := compactedStore(t, n)
	ctx := context.Background()
	// blocks reads every key in one View and returns the blocks looked up.
	blocks := func() int64 {
		before := s.BlockReads()
		err := s.View(ctx, func(r storage.Reader) error {
			for i := range n {
				if _, err := r.Get(testKey(i)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return s.BlockReads() - before
	}
	before := blocks()
	err := s.Update(ctx, func(tx storage.Txn) error { return tx.Set([]byte("z"), []byte("after every key read")) })
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if l0 := s.db.Metrics().Levels[0].NumFiles; l0 != 1 {
		t.Fatalf("level 0 holds %d tables, want the one flushed", l0)
	}
	if after := blocks(); after > before+n/10 {
		t.Errorf("%d Gets in one View looked up %d blocks with a table after their keys in level 0, %d without", n, after, before)
	}
}
