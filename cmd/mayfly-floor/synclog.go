package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// syncLog is the synced floor's only storage: every write's body is
// appended to one file and answered once an fdatasync(2) that began after
// the append has returned. Syncs run one at a time and each covers every
// append made before it began, so writes that arrive while one runs share
// the next: the group commit a database's write-ahead log makes (Pebble's
// log writer syncs the same way). The file is never read.
//
// With it the floor costs what durability alone costs on the machine with
// a log that grows as it is written: the disk's sync, and the wait for a
// sync already under way.
type syncLog struct {
	mu       sync.Mutex
	synced   *sync.Cond // signalled whenever a sync ends
	f        *os.File
	size     int64  // the file's length
	appended uint64 // appends so far
	durable  uint64 // appends covered by a sync that has returned
	syncing  bool
	err      error // the first sync's failure; the log refuses writes after it

	syncs    int64         // syncs done
	syncTime time.Duration // their time, summed
}

// maxLogSize is where the file starts over, so that a long benchmark does
// not fill the disk. Truncating is a write like any other: the syncs after
// it cover it.
const maxLogSize = 256 << 20

func openSyncLog(dir string) (*syncLog, error) {
	f, err := os.OpenFile(filepath.Join(dir, "floor.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	l := &syncLog{f: f}
	l.synced = sync.NewCond(&l.mu)
	return l, nil
}

// append writes body to the log and returns once it is on disk.
func (l *syncLog) append(body []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	if l.size > maxLogSize {
		if err := l.f.Truncate(0); err != nil {
			return fmt.Errorf("truncate the log: %w", err)
		}
		l.size = 0
	}
	n, err := l.f.Write(body)
	l.size += int64(n)
	if err != nil {
		return fmt.Errorf("append to the log: %w", err)
	}
	l.appended++
	mine := l.appended
	for l.durable < mine && l.err == nil {
		if l.syncing {
			l.synced.Wait()
			continue
		}
		// Lead a sync for everything appended so far, without the lock,
		// so that writes arriving meanwhile append and wait for the next.
		l.syncing = true
		upTo := l.appended
		l.mu.Unlock()
		start := time.Now()
		err := datasync(l.f)
		took := time.Since(start)
		l.mu.Lock()
		l.syncs++
		l.syncTime += took
		l.syncing = false
		if err != nil {
			l.err = fmt.Errorf("sync the log: %w", err)
		} else {
			l.durable = upTo
		}
		l.synced.Broadcast()
	}
	return l.err
}

// stats reports the syncs done, the appends they covered and their mean
// time.
func (l *syncLog) stats() (syncs int64, durable uint64, mean time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.syncs > 0 {
		mean = l.syncTime / time.Duration(l.syncs)
	}
	return l.syncs, l.durable, mean
}

func (l *syncLog) Close() error { return l.f.Close() }
