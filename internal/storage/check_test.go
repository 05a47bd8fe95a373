//go:build invariants

package storage_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

func openChecked(t *testing.T) storage.Store {
	t.Helper()
	s, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := storage.WithChecks(s)
	err = c.Update(context.Background(), func(tx storage.Txn) error {
		for _, k := range []string{"a", "b", "c"} {
			if err := tx.Set([]byte(k), []byte("v"+k)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWithChecksKeepsCapabilities(t *testing.T) {
	if _, ok := openChecked(t).(storage.Sizer); !ok {
		t.Error("the checked store lost Sizer")
	}
	if _, ok := openChecked(t).(storage.Clocked); ok {
		t.Error("the checked store gained Clocked")
	}
}

func TestWithChecksCatchesMisuse(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(s storage.Store) error
		want string // in the panic message
	}{
		{"reader after return", func(s storage.Store) error {
			var leaked storage.Reader
			_ = s.View(ctx, func(r storage.Reader) error { leaked = r; return nil })
			_, err := leaked.Get([]byte("a"))
			return err
		}, "after its function returned"},
		{"txn after return", func(s storage.Store) error {
			var leaked storage.Txn
			_ = s.Update(ctx, func(tx storage.Txn) error { leaked = tx; return nil })
			return leaked.Set([]byte("a"), nil)
		}, "after its function returned"},
		{"iterator left open", func(s storage.Store) error {
			return s.View(ctx, func(r storage.Reader) error {
				_, err := r.NewIter(storage.IterParams{})
				return err
			})
		}, "left open"},
		{"Next before positioning", func(s storage.Store) error {
			return s.View(ctx, func(r storage.Reader) error {
				it, _ := r.NewIter(storage.IterParams{})
				defer it.Close()
				it.Next()
				return nil
			})
		}, "Next before First"},
		{"Key past the end", func(s storage.Store) error {
			return s.View(ctx, func(r storage.Reader) error {
				it, _ := r.NewIter(storage.IterParams{Lower: []byte("z")})
				defer it.Close()
				it.First()
				it.Key()
				return nil
			})
		}, "not at a key"},
		{"iterator after Close", func(s storage.Store) error {
			return s.View(ctx, func(r storage.Reader) error {
				it, _ := r.NewIter(storage.IterParams{})
				it.Close()
				it.First()
				return nil
			})
		}, "closed iterator"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openChecked(t)
			defer func() {
				got := fmt.Sprint(recover())
				if !strings.Contains(got, tc.want) {
					t.Errorf("panic = %q, want it to mention %q", got, tc.want)
				}
			}()
			_ = tc.run(s)
		})
	}
}

// A caller that keeps a slice past its validity sees garbage, not the
// value, so the mistake shows up in tests instead of in production on
// another backend.
func TestWithChecksPoisonsExpiredSlices(t *testing.T) {
	s := openChecked(t)
	err := s.View(context.Background(), func(r storage.Reader) error {
		kept, err := r.Get([]byte("a"))
		if err != nil {
			return err
		}
		if _, err := r.Get([]byte("b")); err != nil {
			return err
		}
		if string(kept) == "va" {
			t.Error("a Get value kept past the next call is intact")
		}
		it, err := r.NewIter(storage.IterParams{})
		if err != nil {
			return err
		}
		defer it.Close()
		it.First()
		key := it.Key()
		it.Next()
		if string(key) == "a" {
			t.Error("a key kept past Next is intact")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
