package pebblestore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// TestBlockCacheBesideMemtables writes enough to grow the memtables to
// their full size, then reads flushed keys twice each: the second read of
// each must find its block in the cache, though the cache asked for is
// smaller than the memtables Pebble charges to it.
func TestBlockCacheBesideMemtables(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), CacheSize: 1 << 20, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	key := testKey
	const n = 12000 // 12 MB: several memtables, the last ones of full size
	for i := 0; i < n; i += 1000 {
		setKeys(t, s, i, i+1000, make([]byte, 1000))
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	before, blocksBefore := s.db.Metrics().BlockCache, s.BlockReads()
	const reads = 100
	err = s.View(ctx, func(r storage.Reader) error {
		for i := 0; i < reads; i++ {
			for range 2 {
				if _, err := r.Get(key(i * (n / reads))); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	after := s.db.Metrics().BlockCache
	if hits := after.Hits - before.Hits; hits < reads {
		t.Errorf("%d block cache hits for %d keys read twice (misses %d, %d bytes cached), want at least one a key",
			hits, reads, after.Misses-before.Misses, after.Size)
	}
	// Every Get looked up at least its data block, and BlockReads counts
	// the lookups that found it and those that did not.
	if blocks := s.BlockReads() - blocksBefore; blocks < 2*reads || blocks != after.Hits+after.Misses-before.Hits-before.Misses {
		t.Errorf("BlockReads grew by %d for %d Gets (hits %d, misses %d)", blocks, 2*reads, after.Hits-before.Hits, after.Misses-before.Misses)
	}
}

// TestReleaseSoonOncePerBurst checks that a burst of calls releases once,
// after the delay, and that a call after the release starts a new one.
func TestReleaseSoonOncePerBurst(t *testing.T) {
	c := clock.NewManual(time.Unix(0, 0))
	released := make(chan struct{}, 10)
	kick := callSoon(c, time.Second, func() { released <- struct{}{} })
	for round := 1; round <= 2; round++ {
		for range 50 {
			kick()
		}
		c.Advance(999 * time.Millisecond)
		select {
		case <-released:
			t.Fatalf("round %d: released before the delay", round)
		case <-time.After(20 * time.Millisecond):
		}
		c.Advance(time.Millisecond)
		select {
		case <-released:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: not released after the delay", round)
		}
		select {
		case <-released:
			t.Fatalf("round %d: released twice for one burst", round)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// compactedStore opens a store with 1 MiB memtables on a temporary
// directory, sets testKey(i) for every i below n to 500 bytes, and
// compacts them all into the bottom level; it is closed with the test.
func compactedStore(t *testing.T, n int) *Store {
	t.Helper()
	s, err := Open(Options{Dir: t.TempDir(), MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	setKeys(t, s, 0, n, make([]byte, 500))
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Compact([]byte("a"), []byte("z"), false); err != nil {
		t.Fatal(err)
	}
	return s
}

// testKey is the i'th key setKeys writes.
func testKey(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }

// flushKeys sets testKey(i) to v for every i, v of vals in one
// transaction, and flushes them into a level-0 table.
func flushKeys(t *testing.T, s *Store, vals map[int][]byte) {
	t.Helper()
	err := s.Update(context.Background(), func(tx storage.Txn) error {
		for i, v := range vals {
			if err := tx.Set(testKey(i), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
}

// setKeys sets testKey(i) to val for every i in [from, to), in one
// transaction.
func setKeys(t *testing.T, s *Store, from, to int, val []byte) {
	t.Helper()
	err := s.Update(context.Background(), func(tx storage.Txn) error {
		for i := from; i < to; i++ {
			if err := tx.Set(testKey(i), val); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
