package pebblestore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/mayfly-db/mayfly/internal/storage"
)

var _ storage.Eraser = (*Store)(nil)

// Where a deleted value's bytes stay in Pebble, and how Erase reaches each
// copy (docs/design/ttl.md §7):
//
//   - The memtable and its write-ahead log: a flush writes the memtable to
//     a table and makes the log obsolete. Pebble keeps obsolete logs for
//     reuse, with their old contents, unless its Cleaner needs file
//     contents; eraseCleaner says it does, so they are deleted instead.
//   - Tables: a manual compaction of the span moves the deletion down to
//     the lowest level holding the span, where it meets and drops every
//     older value, unless a snapshot older than the deletion still needs
//     it: Erase first waits for such snapshots to close.
//   - Obsolete and zombie tables: deleted once no iterator holds them;
//     Erase waits for that.
//   - The MANIFEST: it records each table's first and last key, and index
//     keys hold property values. It is rewritten from the current state
//     whenever its edits outgrow that state (MaxManifestFileSize is tiny,
//     so size never holds it back), and Pebble keeps one previous one
//     (NumPrevManifest 1): Erase waits for two rewrites after its
//     compactions, making edits if need be (rotateManifest).

// eraseCleaner deletes obsolete files, as Pebble's default cleaner does,
// and also declares that it needs the contents of the files it cleans,
// which makes Pebble stop recycling write-ahead logs: a recycled log keeps
// its old contents until they are overwritten. The declaration is
// ArchiveCleaner's (an unexported method, promoted from one level deeper
// than DeleteCleaner's Clean, which therefore wins).
type eraseCleaner struct {
	pebble.DeleteCleaner
	needsContents
}

type needsContents struct {
	pebble.ArchiveCleaner
}

// snapshots tracks the store's open snapshots by the order they were
// taken, so that Erase can wait for those older than its deletions.
type snapshots struct {
	mu   sync.Mutex
	next uint64
	open map[uint64]struct{}
}

// take registers a snapshot about to be taken and returns its number.
func (s *snapshots) take() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	if s.open == nil {
		s.open = map[uint64]struct{}{}
	}
	s.open[s.next] = struct{}{}
	return s.next
}

func (s *snapshots) release(n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, n)
}

// mark returns the number of the latest snapshot taken: every snapshot
// taken later sees every commit made before the call.
func (s *snapshots) mark() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// olderOpen reports whether a snapshot numbered at most n is open.
func (s *snapshots) olderOpen(n uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.open {
		if k <= n {
			return true
		}
	}
	return false
}

// erasePoll is how often Erase looks again at what it waits for.
const erasePoll = 10 * time.Millisecond

// eraseFlushKey is the key Erase deletes, in a memtable of its own, to
// make the MANIFEST rotate (rotateManifest). No one writes it: the
// engine's keys start with a letter. Deleting it changes nothing.
//
// It sorts before every engine key. Each of those flushes leaves a table
// in level 0 until a compaction takes it, and a point read or forward seek
// consults every level-0 table whose largest key is at or above the key
// it seeks (its bloom filter at least). After every engine key, as it was,
// those tables cost each read after an erasure a lookup of each one's
// filter: a drain page of 100 records then looked up 131 blocks rather
// than 24 (docs/benchmarks.md).
var eraseFlushKey = []byte("\x00\x00pebblestore.erase")

// Erase makes the bytes of every key of spans deleted before the call
// unrecoverable from the store's files (storage.Eraser). It compacts the
// spans one after another; each compaction is Pebble's work on its own
// goroutines, and after each Erase pauses as long as it took, so that
// erasure never takes more than half of the time.
func (s *Store) Erase(ctx context.Context, spans [][2][]byte) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.inflight.Done()
	if err := s.failedErr(); err != nil {
		return err
	}
	mark := s.snaps.mark()
	if err := s.waitFor(ctx, func() bool { return !s.snaps.olderOpen(mark) }); err != nil {
		return err
	}
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("pebblestore: erase: flush: %w", err)
	}
	for _, sp := range mergeSpans(spans) {
		start := s.clock.Now()
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.db.Compact(sp[0], sp[1], false); err != nil {
			return fmt.Errorf("pebblestore: erase: compact %x..%x: %w", sp[0], sp[1], err)
		}
		if err := s.pause(ctx, s.clock.Now().Sub(start)); err != nil {
			return err
		}
	}
	if err := s.rotateManifest(ctx); err != nil {
		return err
	}
	return s.waitFor(ctx, func() bool {
		m := s.db.Metrics()
		return m.Table.ObsoleteCount == 0 && m.Table.ZombieCount == 0 && m.WAL.ObsoleteFiles == 0
	})
}

// rotateManifest returns once the MANIFEST has been rewritten from the
// current state twice since the call, so that neither it nor the previous
// one Pebble keeps names a table that is gone. Pebble rewrites it when the
// files its edits since the last rewrite added and removed outnumber the
// files of the state; a flush of a memtable holding one deletion is an edit
// that adds a file, so at most that many flushes (and the compactions they
// start, which add more) do it.
func (s *Store) rotateManifest(ctx context.Context) error {
	if s.dir == "" {
		return nil
	}
	target := s.manifests.Load() + 2
	for s.manifests.Load() < target {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.db.Delete(eraseFlushKey, pebble.NoSync); err != nil {
			return fmt.Errorf("pebblestore: erase: %w", err)
		}
		if err := s.db.Flush(); err != nil {
			return fmt.Errorf("pebblestore: erase: flush: %w", err)
		}
	}
	return nil
}

// waitFor returns once done reports true, looking every erasePoll.
func (s *Store) waitFor(ctx context.Context, done func() bool) error {
	for !done() {
		if err := s.pause(ctx, erasePoll); err != nil {
			return err
		}
	}
	return nil
}

// pause waits for d, or until ctx ends or the store closes.
func (s *Store) pause(ctx context.Context, d time.Duration) error {
	select {
	case <-s.clock.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closing:
		return storage.ErrClosed
	}
}

// mergeSpans sorts spans and merges those that overlap or touch.
func mergeSpans(spans [][2][]byte) [][2][]byte {
	out := slices.Clone(spans)
	slices.SortFunc(out, func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) })
	merged := out[:0]
	for _, sp := range out {
		if bytes.Compare(sp[0], sp[1]) >= 0 {
			continue
		}
		if n := len(merged); n > 0 && bytes.Compare(sp[0], merged[n-1][1]) <= 0 {
			if bytes.Compare(sp[1], merged[n-1][1]) > 0 {
				merged[n-1][1] = sp[1]
			}
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

// CompactedBytes is the total Pebble's compactions have written so far,
// for measuring what erasure costs in write amplification.
func (s *Store) CompactedBytes() uint64 {
	var n uint64
	for _, l := range s.db.Metrics().Levels {
		n += l.BytesCompacted
	}
	return n
}

// BlockReads is how many blocks the store's reads have asked its block
// cache for so far, found there or not: a read's cost in blocks, which
// grows with the levels a point read looks through.
func (s *Store) BlockReads() int64 {
	c := s.db.Metrics().BlockCache
	return c.Hits + c.Misses
}

// Dir is the directory holding the store's files; "" in memory.
func (s *Store) Dir() string { return s.dir }

// LSM describes the store's levels as Pebble reports them: tables and
// bytes in each, and the compactions done.
func (s *Store) LSM() string { return s.db.Metrics().String() }
