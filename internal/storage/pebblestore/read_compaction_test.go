package pebblestore

import (
	"context"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// TestReadsCompactWhatTheyLookThrough checks that reads alone bring a
// level-0 table down into the level below it once writes have stopped:
// without read-triggered compactions every later read of the store looks
// up that table's filter too (Open, readSamplingMultiplier). The reads are
// a page's: a hundred Gets in one View, which after the first few go
// through one iterator, and Pebble samples only an iterator's reads.
func TestReadsCompactWhatTheyLookThrough(t *testing.T) {
	const n = 2000
	s := compactedStore(t, n)
	ctx := context.Background()
	// Every tenth key again, flushed: a level-0 table that spans the
	// others, as a flush after scattered writes does.
	tenth := map[int][]byte{}
	for i := 0; i < n; i += 10 {
		tenth[i] = make([]byte, 500)
	}
	flushKeys(t, s, tenth)
	level0 := func() int64 { return s.db.Metrics().Levels[0].NumFiles }
	if level0() == 0 {
		t.Fatal("no table in level 0 after the flush")
	}
	const passes = 40
	for pass := 1; pass <= passes; pass++ {
		for page := 0; page < n; page += 100 {
			err := s.View(ctx, func(r storage.Reader) error {
				for i := page; i < page+100; i++ {
					if _, err := r.Get(testKey(i)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		// The compaction the samples asked for runs in the background.
		for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline) && level0() > 0; {
			time.Sleep(10 * time.Millisecond)
		}
		if level0() == 0 {
			t.Logf("level 0 empty after %d passes of %d point reads", pass, n)
			return
		}
	}
	t.Errorf("level 0 still holds %d tables after %d passes of %d point reads", level0(), passes, n)
}
