package pebblestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// TestHotKeysConsistent: writers change a hot key and a cold key together,
// to the same value, in one transaction; readers, in views and in
// transactions, read both and must always find them equal. A hot value
// kept across a commit it should not have outlived would show an older
// value beside a newer one. Range deletions take both keys away together.
func TestHotKeysConsistent(t *testing.T) {
	hot := []byte("h/key")
	cold := []byte("c/key")
	s, err := Open(Options{Dir: t.TempDir(), Hot: func(k []byte) bool { return k[0] == 'h' }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	put := func(n uint64) error {
		return s.UpdateDeferred(ctx, func(tx storage.Txn) error {
			v := binary.BigEndian.AppendUint64(nil, n)
			if err := tx.Set(hot, v); err != nil {
				return err
			}
			return tx.Set(cold, v)
		})
	}
	if err := put(0); err != nil {
		t.Fatal(err)
	}
	same := func(r storage.Reader) error {
		h, err1 := r.Get(hot)
		c, err2 := r.Get(cold)
		if errors.Is(err1, storage.ErrNotFound) && errors.Is(err2, storage.ErrNotFound) {
			return nil
		}
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if !bytes.Equal(h, c) {
			t.Errorf("hot key %x beside cold key %x", h, c)
		}
		return nil
	}
	var stop atomic.Bool
	var writers, readers sync.WaitGroup
	var hits atomic.Int64
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for n := uint64(1); n <= 300; n++ {
				var err error
				if n%50 == 0 && w == 0 {
					_, err = s.DeleteRange(ctx, []byte("c"), []byte("i"), 0)
				} else {
					err = put(n*2 + uint64(w))
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := 0; !stop.Load(); i++ {
				var err error
				if i%4 == 0 {
					err = s.Update(ctx, func(tx storage.Txn) error { return same(tx) })
				} else {
					err = s.View(ctx, func(r storage.Reader) error { return same(r) })
				}
				if err != nil {
					t.Error(err)
					return
				}
				hits.Add(1)
			}
		}()
	}
	writers.Wait()
	stop.Store(true)
	readers.Wait()
	if hits.Load() == 0 {
		t.Fatal("no reads")
	}
}

// TestHotKeysServed: a hot key read again with no write between comes from
// the kept values; a write of it, committed or refused, and a transaction
// that wrote it read what they should.
func TestHotKeysServed(t *testing.T) {
	s, err := Open(Options{InMemory: true, Hot: func(k []byte) bool { return k[0] == 'h' }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	key := []byte("h1")
	set := func(v string) {
		t.Helper()
		if err := s.Update(ctx, func(tx storage.Txn) error { return tx.Set(key, []byte(v)) }); err != nil {
			t.Fatal(err)
		}
	}
	read := func() string {
		t.Helper()
		var got []byte
		if err := s.View(ctx, func(r storage.Reader) error {
			var err error
			got, err = r.Get(key)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return string(got)
	}
	set("a")
	if got := read(); got != "a" {
		t.Fatalf("read %q, want a", got)
	}
	if _, ok := s.hot.get(key, s.hot.stamp.Load()); !ok {
		t.Fatal("the value read was not kept")
	}
	set("b")
	if _, ok := s.hot.get(key, s.hot.stamp.Load()); ok {
		t.Fatal("a value was kept across a write of its key")
	}
	if got := read(); got != "b" {
		t.Fatalf("read %q, want b", got)
	}
	refused := errors.New("refused")
	if err := s.Update(ctx, func(tx storage.Txn) error {
		if err := tx.Set(key, []byte("c")); err != nil {
			return err
		}
		if got, err := tx.Get(key); err != nil || string(got) != "c" {
			t.Errorf("the transaction read %q, %v, want its own write c", got, err)
		}
		return refused
	}); !errors.Is(err, refused) {
		t.Fatal(err)
	}
	if got := read(); got != "b" {
		t.Fatalf("read %q after a refused write, want b", got)
	}
	if v, ok := s.hot.get(key, s.hot.stamp.Load()); !ok || string(v) != "b" {
		t.Fatalf("kept %q, %v after the read, want b", v, ok)
	}
}
