package pebblestore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

// marker is a random string that no file holds by chance.
func marker(t *testing.T) []byte {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return []byte("mk" + hex.EncodeToString(b))
}

// TestEraseLeavesNoDeletedBytes writes keys and values holding markers over
// several flushes and compactions, deletes half of them, and checks that
// their markers are in the files until Erase and in none after, while every
// live marker stays readable. Half the deleted keys are deleted from a
// span Erase is not given, and must not be affected either way beyond it.
func TestEraseLeavesNoDeletedBytes(t *testing.T) {
	dir := t.TempDir()
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const n = 400
	type entry struct {
		key, val []byte
	}
	var live, dead []entry
	filler := make([]byte, 2000)
	for round := 0; round < 4; round++ {
		err := s.Update(ctx, func(tx storage.Txn) error {
			for i := 0; i < n; i++ {
				// 'b' keys hold the marker in the key, 'a' keys in the value.
				m := marker(t)
				e := entry{key: fmt.Appendf(nil, "a%03d%04d", round, i), val: append(append([]byte{}, m...), filler...)}
				if i%2 == 1 {
					e = entry{key: append([]byte("b"), m...), val: filler}
				}
				if err := tx.Set(e.key, e.val); err != nil {
					return err
				}
				if i%4 < 2 {
					live = append(live, e)
				} else {
					dead = append(dead, e)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Overwrite one live value a few times: its old versions are deleted
	// bytes too.
	old := live[0].val
	for i := 0; i < 3; i++ {
		live[0].val = append(marker(t), filler...)
		if err := s.Update(ctx, func(tx storage.Txn) error { return tx.Set(live[0].key, live[0].val) }); err != nil {
			t.Fatal(err)
		}
	}
	err = s.Update(ctx, func(tx storage.Txn) error {
		for _, e := range dead {
			if err := tx.Delete(e.key); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	markerOf := func(e entry) []byte {
		if e.key[0] == 'b' {
			return e.key[1:]
		}
		return e.val[:len("mk")+24]
	}
	var deadMarkers [][]byte
	for _, e := range dead {
		deadMarkers = append(deadMarkers, markerOf(e))
	}
	deadMarkers = append(deadMarkers, old[:len("mk")+24])
	var liveMarkers [][]byte
	for _, e := range live {
		liveMarkers = append(liveMarkers, markerOf(e))
	}
	eraseAndSearch(t, s, dir, [2][]byte{[]byte("a"), []byte("c")}, deadMarkers, liveMarkers)
	err = s.View(ctx, func(r storage.Reader) error {
		for _, e := range live {
			v, err := r.Get(e.key)
			if err != nil {
				return fmt.Errorf("live key %q: %w", e.key, err)
			}
			if string(v) != string(e.val) {
				return fmt.Errorf("live key %q reads another value", e.key)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A range deletion (DeleteRange) deletes every key of its range in one
// call, whatever the limit, reads back as empty, and Erase then leaves none
// of the deleted bytes in the files, while the keys around it stay.
func TestEraseAfterRangeDeletion(t *testing.T) {
	dir := t.TempDir()
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	filler := make([]byte, 2000)
	var dead, live [][]byte
	for round := 0; round < 4; round++ {
		err := s.Update(ctx, func(tx storage.Txn) error {
			for i := 0; i < 400; i++ {
				m := marker(t)
				// 'd' keys are deleted by the range, the others stay; half
				// hold the marker in the key, half in the value.
				prefix, list := "d", &dead
				if i%3 == 0 {
					prefix, list = []string{"c", "e"}[i%2], &live
				}
				k, v := append([]byte(prefix), m...), filler
				if i%2 == 1 {
					k, v = fmt.Appendf(nil, "%s%d-%d", prefix, round, i), append(append([]byte{}, m...), filler...)
				}
				*list = append(*list, m)
				if err := tx.Set(k, v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	empty, err := s.DeleteRange(ctx, []byte("d"), []byte("e"), 1)
	if err != nil || !empty {
		t.Fatalf("DeleteRange = %v, %v; want the range empty at once", empty, err)
	}
	err = s.View(ctx, func(r storage.Reader) error {
		it, err := r.NewIter(storage.IterParams{Lower: []byte("d"), Upper: []byte("e")})
		if err != nil {
			return err
		}
		defer it.Close()
		if it.First() {
			return fmt.Errorf("key %q left in the deleted range", it.Key())
		}
		return it.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	eraseAndSearch(t, s, dir, [2][]byte{[]byte("d"), []byte("e")}, dead, live)
}

// eraseAndSearch erases span, having checked that at least half of the
// dead markers are in the files in dir before, and checks that none of them
// is left after, while every live marker still is.
func eraseAndSearch(t *testing.T, s *pebblestore.Store, dir string, span [2][]byte, dead, live [][]byte) {
	t.Helper()
	before, err := pebblestore.SearchFiles(dir, dead)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) < len(dead)/2 {
		t.Fatalf("before Erase only %d of %d deleted markers are in the files: the check finds nothing", len(before), len(dead))
	}
	if err := s.Erase(context.Background(), [][2][]byte{span}); err != nil {
		t.Fatalf("Erase: %v", err)
	}
	after, err := pebblestore.SearchFiles(dir, dead)
	if err != nil {
		t.Fatal(err)
	}
	for m, files := range after {
		t.Errorf("deleted marker %s still in %v", m, files)
	}
	still, err := pebblestore.SearchFiles(dir, live)
	if err != nil {
		t.Fatal(err)
	}
	if len(still) != len(live) {
		t.Errorf("%d of %d live markers are in the files", len(still), len(live))
	}
}

// The space a range deletion frees comes back without further writes: the
// store flushes the deletion shortly after (flushSoon), and Pebble then
// drops the tables it covers. (The idle flush, which would also flush it
// after a pause, is off here.)
func TestRangeDeletionGivesSpaceBack(t *testing.T) {
	dir := t.TempDir()
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir, MemTableSize: 1 << 20, IdleFlush: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	value := make([]byte, 4000) // random, so that it does not compress
	for round := 0; round < 8; round++ {
		err := s.Update(ctx, func(tx storage.Txn) error {
			for i := 0; i < 500; i++ {
				if _, err := rand.Read(value); err != nil {
					return err
				}
				if err := tx.Set(fmt.Appendf(nil, "d%02d%04d", round, i), value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Erase compacts the span: the data moves to the last level, below
	// where the deletion's table will be, as a container's data does
	// once it has settled.
	if err := s.Erase(ctx, [][2][]byte{{[]byte("d"), []byte("e")}}); err != nil {
		t.Fatal(err)
	}
	full, err := s.DiskUsage()
	if err != nil {
		t.Fatal(err)
	}
	if full < 10<<20 {
		t.Fatalf("the store holds %d bytes before the deletion, want over 10 MiB", full)
	}
	if empty, err := s.DeleteRange(ctx, []byte("d"), []byte("e"), 1000); err != nil || !empty {
		t.Fatalf("DeleteRange = %v, %v", empty, err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		used, err := s.DiskUsage()
		if err != nil {
			t.Fatal(err)
		}
		if used < full/4 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store still holds %d of %d bytes 20 s after the range was deleted", used, full)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
