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
