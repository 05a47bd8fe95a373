package pebblestore_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

// A View's later Gets go through a kept iterator (pointGet); they must
// answer as Pebble's Get does: keys that are prefixes of other keys,
// empty values, deleted keys and keys never written, on disk and in the
// memtable, before and after iterators of the View's own.
func TestManyGetsInOneView(t *testing.T) {
	dir := t.TempDir()
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := map[string][]byte{}
	write := func(fn func(tx storage.Txn) error) {
		t.Helper()
		if err := s.Update(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	write(func(tx storage.Txn) error {
		for i := range 200 {
			k := fmt.Sprintf("k%03d", i)
			v := []byte("v" + k)
			if i%10 == 0 {
				v = []byte{}
			}
			want[k] = v
			if err := tx.Set([]byte(k), v); err != nil {
				return err
			}
		}
		// "k010x" has "k010" as a prefix; "k011" is written, "k011x" not.
		want["k010x"] = []byte("longer")
		return tx.Set([]byte("k010x"), []byte("longer"))
	})
	// Reopened, the store replays its log into a table: the deletions
	// below are in the memtable, over it.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = pebblestore.Open(pebblestore.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	write(func(tx storage.Txn) error {
		for i := 0; i < 200; i += 3 {
			k := fmt.Sprintf("k%03d", i)
			delete(want, k)
			if err := tx.Delete([]byte(k)); err != nil {
				return err
			}
		}
		return nil
	})
	err = s.View(ctx, func(r storage.Reader) error {
		it, err := r.NewIter(storage.IterParams{Lower: []byte("k1"), Upper: []byte("k2")})
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
		}
		if err := it.Close(); err != nil {
			return err
		}
		keys := []string{"k011x", "k", "k2", "zzz"}
		for i := 199; i >= 0; i-- {
			keys = append(keys, fmt.Sprintf("k%03d", i))
		}
		keys = append(keys, "k010x", "k010", "k0")
		for _, k := range keys {
			v, err := r.Get([]byte(k))
			w, ok := want[k]
			switch {
			case !ok && err != storage.ErrNotFound:
				t.Errorf("Get(%q) = %q, %v; want not found", k, v, err)
			case ok && (err != nil || !bytes.Equal(v, w) || v == nil):
				t.Errorf("Get(%q) = %q, %v; want %q", k, v, err, w)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
