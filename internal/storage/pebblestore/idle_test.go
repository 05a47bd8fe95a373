package pebblestore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// TestIdleWatch: a pause is reported once, after idle without a commit,
// and a commit starts a new one.
func TestIdleWatch(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	w := idleWatch{idle: time.Second, since: t0, told: true}
	steps := []struct {
		at      time.Duration
		commits int64
		want    bool
	}{
		{0, 0, false},                                    // nothing written yet
		{5 * time.Second, 0, false},                      // still nothing
		{6 * time.Second, 3, false},                      // writes
		{6*time.Second + 900*time.Millisecond, 3, false}, // paused, not long enough
		{7 * time.Second, 3, true},                       // paused for a second
		{8 * time.Second, 3, false},                      // the same pause
		{9 * time.Second, 4, false},                      // a write
		{9*time.Second + 500*time.Millisecond, 5, false},
		{10*time.Second + 400*time.Millisecond, 5, false},
		{10*time.Second + 500*time.Millisecond, 5, true},
	}
	for _, s := range steps {
		if got := w.quiet(t0.Add(s.at), s.commits); got != s.want {
			t.Errorf("at %v with %d commits: quiet %v, want %v", s.at, s.commits, got, s.want)
		}
	}
}

// TestFlushAfterWritesPause writes less than a memtable holds to a store
// on disk and waits for the flush its pause brings; a store whose idle
// flush is off keeps its memtable.
func TestFlushAfterWritesPause(t *testing.T) {
	for _, idle := range []time.Duration{20 * time.Millisecond, -1} {
		s, err := Open(Options{Dir: t.TempDir(), MemTableSize: 4 << 20, IdleFlush: idle})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Update(context.Background(), func(tx storage.Txn) error {
			for i := range 2000 {
				if err := tx.Set(fmt.Appendf(nil, "k%05d", i), make([]byte, 300)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		flushed := func() bool { return s.db.Metrics().Flush.Count > 0 }
		deadline := time.Now().Add(10 * time.Second)
		for !flushed() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			if idle < 0 && time.Now().After(deadline.Add(-9500*time.Millisecond)) {
				break // half a second is 25 of the other store's pauses
			}
		}
		if got, want := flushed(), idle > 0; got != want {
			t.Errorf("idle flush %v: flushed %v, want %v", idle, got, want)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
