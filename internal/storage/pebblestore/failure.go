package pebblestore

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// What a full disk or a failing write does to Pebble v1.1, and what this
// file does about it.
//
// Once a write to the write-ahead log fails, Pebble's log writer keeps the
// error: the commit that met it returns it after its batch was already
// applied to the memtable (so the failed write is visible to readers), and
// the next commit panics inside Pebble's commit pipeline with the pipeline's
// mutex held, so every later commit, and Close, would wait forever. Flushes
// and compactions that run out of space are retried in the background while
// memtables pile up, and writes stall once four are full.
//
// So the store keeps Pebble away from a full disk: before every durable
// write it asks the filesystem how much space is left and refuses the write
// with storage.ErrNoSpace when less than the reserve remains, leaving the
// reserve to the flushes and compactions that turn the write-ahead log and
// memtables into tables. Writes succeed again as soon as space is back above
// the reserve. Deferred writes (the purge, which is how a store under TTL
// frees space) may use all but a quarter of the reserve.
//
// Should a commit fail all the same (space taken by another process between
// the check and the write, an I/O error), the store is failed for good: the
// failing call returns storage.ErrUnavailable (its outcome is unknown),
// Pebble's panic is turned into that error, every later write is refused at
// once with storage.ErrNoSpace or storage.ErrUnavailable as the cause was, reads go on from what Pebble holds, and Close releases the
// directory without waiting on Pebble's broken pipeline. A restart reopens
// the directory from its durable state.

// DefaultReserve is the free space below which durable writes are refused
// when Options.Reserve is 0: room for the memtables in memory (up to four)
// to be flushed, and for a level-0 compaction, which merges about as many
// bytes as four memtables of l0ReferenceMemTable (l0Thresholds). Larger
// compactions keep waiting until the purge or the operator frees space.
const DefaultReserve = 4 * l0ReferenceMemTable

// checkSpace refuses a write when the filesystem holding the store has less
// than the reserve free (a quarter of it for deferred writes).
//
// Reading the free space is a system call, a sixtieth of a small write's
// CPU; while the last reading left far more than the reserve free, the
// next ones within spaceRecheck trust it.
func (s *Store) checkSpace(deferred bool) error {
	if s.reserve <= 0 {
		return nil
	}
	now := s.clock.Now()
	if last := s.spaceOK.Load(); last != nil && now.Sub(*last) < spaceRecheck {
		return nil
	}
	free, err := s.freeSpace()
	if err != nil {
		return fmt.Errorf("%w: read the free space of %s: %w", storage.ErrUnavailable, s.dir, err)
	}
	if free >= uint64(s.reserve)+spaceSlack {
		s.spaceOK.Store(&now)
	} else {
		s.spaceOK.Store(nil)
	}
	need := uint64(s.reserve)
	if deferred {
		need /= 4
	}
	if free < need {
		return fmt.Errorf("%w: %d bytes free on the filesystem of %s, below the reserve of %d kept for flushes and compactions",
			storage.ErrNoSpace, free, s.dir, need)
	}
	return nil
}

// A reading of the free space that leaves spaceSlack beyond the reserve
// holds for spaceRecheck: writes and compactions cannot fill a gigabyte in
// a tenth of a second.
const (
	spaceRecheck = 100 * time.Millisecond
	spaceSlack   = 1 << 30
)

// statfsFree reports the bytes available to unprivileged writers on the
// filesystem holding dir.
func statfsFree(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// failedErr reports why the store refuses writes, or nil.
func (s *Store) failedErr() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// fail marks the store failed with err, classified, and returns the error
// the failing call reports. The first failure is kept.
func (s *Store) fail(op string, err error) error {
	class := storage.ErrUnavailable
	if errors.Is(err, syscall.ENOSPC) {
		class = storage.ErrNoSpace
	}
	// The failing call cannot tell whether its write survives: Pebble
	// may have applied it before the write-ahead log failed.
	wrapped := fmt.Errorf("%w: pebblestore: %s: %w", storage.ErrUnavailable, op, err)
	failed := fmt.Errorf("%w: the store refuses writes since a write failed (%v); restart the server once the cause is fixed", class, err)
	if s.failed.CompareAndSwap(nil, &failed) {
		s.log.Error("a write to the store failed; it refuses writes until the server restarts", "err", err)
	}
	return wrapped
}

// apply commits b through Pebble and turns the panic Pebble raises on a
// failed write-ahead log into an error, after which the store is failed.
func (s *Store) apply(b *pebble.Batch, opts *pebble.WriteOptions, noSyncWait bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			perr, ok := p.(error)
			if !ok {
				perr = fmt.Errorf("%v", p)
			}
			err = s.fail("commit", perr)
		}
	}()
	if noSyncWait {
		err = s.db.ApplyNoSyncWait(b, opts)
	} else {
		err = s.db.Apply(b, opts)
	}
	if err != nil {
		return s.fail("commit", err)
	}
	s.commits.Add(1)
	return nil
}
