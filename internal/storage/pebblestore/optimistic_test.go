package pebblestore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

// TestOptimisticConflicts runs an optimistic transaction that reads, lets
// another transaction commit while it runs, then writes "w": it commits
// only when the other wrote nothing it read.
func TestOptimisticConflicts(t *testing.T) {
	scanAll := func(lower, upper string, reverse bool) func(tx storage.Txn) error {
		return func(tx storage.Txn) error {
			it, err := tx.NewIter(storage.IterParams{Lower: bytesOrNil(lower), Upper: bytesOrNil(upper), Reverse: reverse})
			if err != nil {
				return err
			}
			for ok := it.First(); ok; ok = it.Next() {
			}
			return errors.Join(it.Err(), it.Close())
		}
	}
	firstOnly := func(lower, upper string, reverse bool) func(tx storage.Txn) error {
		return func(tx storage.Txn) error {
			it, err := tx.NewIter(storage.IterParams{Lower: bytesOrNil(lower), Upper: bytesOrNil(upper), Reverse: reverse})
			if err != nil {
				return err
			}
			it.First()
			return errors.Join(it.Err(), it.Close())
		}
	}
	seekOne := func(key string, reverse bool) func(tx storage.Txn) error {
		return func(tx storage.Txn) error {
			it, err := tx.NewIter(storage.IterParams{Reverse: reverse})
			if err != nil {
				return err
			}
			it.SeekGE([]byte(key))
			return errors.Join(it.Err(), it.Close())
		}
	}
	get := func(key string) func(tx storage.Txn) error {
		return func(tx storage.Txn) error {
			_, err := tx.Get([]byte(key))
			if errors.Is(err, storage.ErrNotFound) {
				return nil
			}
			return err
		}
	}
	set := func(key string) func(tx storage.Txn) error {
		return func(tx storage.Txn) error { return tx.Set([]byte(key), []byte("new")) }
	}
	// The store holds b, e and h.
	cases := []struct {
		name     string
		read     func(tx storage.Txn) error
		other    func(tx storage.Txn) error // nil: a range deletion of [c, f)
		conflict bool
	}{
		{"a key read, written", get("b"), set("b"), true},
		{"another key written", get("b"), set("c"), false},
		{"an absent key read, then written", get("x"), set("x"), true},
		{"a scan, a key made inside it", scanAll("a", "g", false), set("c"), true},
		{"a scan, a key made past its bound", scanAll("a", "g", false), set("g"), false},
		{"an unbounded scan, any key", scanAll("", "", false), set("zz"), true},
		{"the first key only, a key made after it", firstOnly("a", "", false), set("c"), false},
		{"the first key only, a key made before it", firstOnly("a", "", false), set("ab"), true},
		{"a reverse scan's first key, a key made below it", firstOnly("", "g", true), set("c"), false},
		{"a reverse scan's first key, a key made above it", firstOnly("", "g", true), set("f"), true},
		{"a seek, a key made between it and the key found", seekOne("c", false), set("d"), true},
		{"a seek, a key made before it", seekOne("c", false), set("bb"), false},
		{"a reverse seek, a key made between", seekOne("g", true), set("f"), true},
		{"a reverse seek, a key made above", seekOne("g", true), set("ga"), false},
		{"a scan past its last key, a key made there", scanAll("f", "", false), set("i"), true},
		{"a range deletion over a key read", get("e"), nil, true},
		{"a range deletion over a key read absent", get("d"), nil, true},
		{"a range deletion away from the reads", get("b"), nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := pebblestore.Open(pebblestore.Options{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Update(ctx, func(tx storage.Txn) error {
				for _, k := range []string{"b", "e", "h"} {
					if err := tx.Set([]byte(k), []byte("old")); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			err = s.UpdateOptimistic(ctx, func(tx storage.Txn) error {
				if err := tc.read(tx); err != nil {
					return err
				}
				// Another writer commits while this one runs: from
				// another goroutine, as a writer that waited for this
				// one would deadlock here.
				done := make(chan error, 1)
				go func() {
					if tc.other == nil {
						_, err := s.DeleteRange(ctx, []byte("c"), []byte("f"), 0)
						done <- err
						return
					}
					done <- s.Update(ctx, tc.other)
				}()
				select {
				case err := <-done:
					if err != nil {
						return err
					}
				case <-time.After(10 * time.Second):
					t.Fatal("an Update waited for an optimistic transaction's function")
				}
				return tx.Set([]byte("w"), []byte("mine"))
			})
			if tc.conflict != errors.Is(err, storage.ErrConflict) || (err != nil && !errors.Is(err, storage.ErrConflict)) {
				t.Fatalf("UpdateOptimistic = %v, want a conflict: %v", err, tc.conflict)
			}
			_, err = read(t, s, "w")
			if tc.conflict != errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("after it, w: %v; want it committed: %v", err, !tc.conflict)
			}
		})
	}
}

// TestOptimisticCommitsWhatItRead: with nothing committed meanwhile, an
// optimistic transaction reads its own writes and commits them; its
// function's error commits nothing.
func TestOptimisticCommitsWhatItRead(t *testing.T) {
	ctx := context.Background()
	st := openDisk(t)
	defer st.Close()
	s := st.(*pebblestore.Store)
	err := s.UpdateOptimistic(ctx, func(tx storage.Txn) error {
		if err := tx.Set([]byte("k"), []byte("v")); err != nil {
			return err
		}
		v, err := tx.Get([]byte("k"))
		if err != nil || string(v) != "v" {
			t.Errorf("its own write read %q, %v", v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := read(t, s, "k"); err != nil || string(v) != "v" {
		t.Fatalf("after the commit: %q, %v", v, err)
	}
	failed := errors.New("no")
	if err := s.UpdateOptimistic(ctx, func(tx storage.Txn) error {
		_ = tx.Set([]byte("j"), []byte("v"))
		return failed
	}); err != failed {
		t.Fatalf("UpdateOptimistic = %v, want its function's error", err)
	}
	if _, err := read(t, s, "j"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a failed function's write: %v", err)
	}
}

// read returns the committed value of key.
func read(t *testing.T, s storage.Store, key string) ([]byte, error) {
	t.Helper()
	var v []byte
	err := s.View(context.Background(), func(r storage.Reader) error {
		var err error
		v, err = r.Get([]byte(key))
		return err
	})
	return v, err
}

func bytesOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}
