package pebblestore

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// tidy compacts the tables a store's last writes left above its bottom
// level, once enough was flushed since it last did, and the store reads
// the same afterwards.
func TestTidyAfterWritesStop(t *testing.T) {
	const n = 2000
	s, err := Open(Options{Dir: t.TempDir(), MemTableSize: 1 << 20, IdleFlush: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	setKeys(t, s, 0, n, make([]byte, 500))
	if err := s.db.Compact([]byte("a"), []byte("z"), false); err != nil {
		t.Fatal(err)
	}
	// The least is in bytes of tables flushed, which the values' zeros
	// shrink to about 100 KB here.
	s.tidyMin = 64 << 10
	upper := func() (tables int64) {
		for _, l := range s.db.Metrics().Levels[:6] {
			tables += l.NumFiles
		}
		return tables
	}
	compacted := s.CompactedBytes()
	if err := s.tidy(); err != nil || s.CompactedBytes() != compacted {
		t.Fatalf("tidy of a store with every table in level 6: %v, compacted %d bytes", err, s.CompactedBytes()-compacted)
	}

	// Four flushes of random keys, each a level-0 table over most of the
	// key space.
	want := map[int][]byte{}
	rnd := rand.New(rand.NewPCG(1, 2))
	for round := range 4 {
		vals := map[int][]byte{}
		for range 300 {
			i := rnd.IntN(n)
			vals[i] = fmt.Appendf(bytes.Repeat([]byte{'v'}, 400), "%d.%d", round, i)
			want[i] = vals[i]
		}
		flushKeys(t, s, vals)
	}
	if upper() != 4 {
		t.Fatalf("%d tables above level 6, want the 4 flushed", upper())
	}
	// blocks reads every key in one View, checks its value, and returns
	// the blocks looked up.
	blocks := func() int64 {
		before := s.BlockReads()
		err := s.View(ctx, func(r storage.Reader) error {
			for i := range n {
				v, err := r.Get(testKey(i))
				if err != nil {
					return err
				}
				w, ok := want[i]
				if !ok {
					w = make([]byte, 500)
				}
				if !bytes.Equal(v, w) {
					return fmt.Errorf("key %d = %q, want %q", i, v, w)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return s.BlockReads() - before
	}
	untidy := blocks()

	s.tidyMin = 1 << 20
	if err := s.tidy(); err != nil || upper() != 4 {
		t.Fatalf("tidy with less flushed than its least: %v, %d tables above level 6, want 4", err, upper())
	}
	s.tidyMin = 64 << 10
	free := s.freeSpace
	s.freeSpace = func() (uint64, error) { return 64 << 10, nil }
	if err := s.tidy(); err != nil || upper() != 4 {
		t.Fatalf("tidy with less space free than the store: %v, %d tables above level 6, want 4", err, upper())
	}
	s.freeSpace = free
	if err := s.tidy(); err != nil || upper() != 0 {
		t.Fatalf("tidy: %v, %d tables above level 6, want none", err, upper())
	}
	if tidy := blocks(); tidy >= untidy {
		t.Errorf("reading every key looked up %d blocks after the tidy, %d before", tidy, untidy)
	}
	compacted = s.CompactedBytes()
	small := map[int][]byte{}
	for i := range 10 {
		small[i] = make([]byte, 500)
	}
	flushKeys(t, s, small)
	if err := s.tidy(); err != nil || upper() != 1 || s.CompactedBytes() != compacted {
		t.Fatalf("tidy after a small flush: %v, %d tables above level 6 (want 1), compacted %d bytes", err, upper(), s.CompactedBytes()-compacted)
	}
}
