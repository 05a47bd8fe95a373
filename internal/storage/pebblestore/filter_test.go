package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// skipX keeps keys that start with 'x' out of the filters.
var skipX = &KeyFilter{Name: "skip-x", Skip: func(k []byte) bool { return len(k) > 0 && k[0] == 'x' }}

func TestSkipFilterLeavesOutSkippedKeys(t *testing.T) {
	policy, _ := filterPolicies(skipX)
	w := policy.NewWriter(pebble.TableFilter)
	for i := range 100 {
		w.AddKey(fmt.Appendf(nil, "k%d", i))
		w.AddKey(fmt.Appendf(nil, "x%d", i))
	}
	f := w.Finish(nil)
	for i := range 100 {
		if k := fmt.Appendf(nil, "k%d", i); !policy.MayContain(pebble.TableFilter, f, k) {
			t.Fatalf("filter rules out %s, which it holds", k)
		}
		// Skipped keys are always possible, present or not.
		if k := fmt.Appendf(nil, "x%d", 1000+i); !policy.MayContain(pebble.TableFilter, f, k) {
			t.Fatalf("filter rules out skipped key %s", k)
		}
	}
	misses := 0
	for i := range 1000 {
		if !policy.MayContain(pebble.TableFilter, f, fmt.Appendf(nil, "k%d", 1000+i)) {
			misses++
		}
	}
	if misses < 900 {
		t.Errorf("filter ruled out %d of 1000 absent keys, want most", misses)
	}
	// The skipped keys are not in the filter: it is no bigger than a
	// filter of the other keys alone.
	plain, _ := filterPolicies(nil)
	pw := plain.NewWriter(pebble.TableFilter)
	for i := range 100 {
		pw.AddKey(fmt.Appendf(nil, "k%d", i))
	}
	if got, want := len(f), len(pw.Finish(nil)); got != want {
		t.Errorf("filter is %d bytes, want %d (the unskipped keys' alone)", got, want)
	}
}

// TestFilterChangesKeepReadsRight reopens one store under different filter
// rules, flushing tables under each: every Get still finds what is there
// and nothing else, because a table's filter is used only under the rule
// it was built with.
func TestFilterChangesKeepReadsRight(t *testing.T) {
	dir := t.TempDir()
	skipK := &KeyFilter{Name: "skip-k", Skip: func(k []byte) bool { return len(k) > 0 && k[0] == 'k' }}
	ctx := context.Background()
	var written []string
	for round, kf := range []*KeyFilter{skipX, nil, skipK, skipX} {
		s, err := Open(Options{Dir: dir, Filter: kf})
		if err != nil {
			t.Fatalf("round %d: open: %v", round, err)
		}
		err = s.Update(ctx, func(tx storage.Txn) error {
			for _, p := range []string{"k", "x"} {
				k := fmt.Sprintf("%s%d", p, round)
				written = append(written, k)
				if err := tx.Set([]byte(k), []byte(k)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: write: %v", round, err)
		}
		if err := s.db.Flush(); err != nil {
			t.Fatalf("round %d: flush: %v", round, err)
		}
		err = s.View(ctx, func(r storage.Reader) error {
			for _, k := range written {
				if v, err := r.Get([]byte(k)); err != nil || string(v) != k {
					t.Errorf("round %d: Get(%s) = %q, %v", round, k, v, err)
				}
			}
			for _, k := range []string{"k9", "x9", "a"} {
				if _, err := r.Get([]byte(k)); !errors.Is(err, storage.ErrNotFound) {
					t.Errorf("round %d: Get(%s) of an absent key: %v, want ErrNotFound", round, k, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: read: %v", round, err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("round %d: close: %v", round, err)
		}
	}
}
