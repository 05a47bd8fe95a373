package pebblestore

import (
	"strings"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/mayfly-db/mayfly/internal/uring"
)

// ringFile is a write-ahead log file whose data syncs go through an
// io_uring ring: the log writer's goroutine then waits for the disk parked
// on the runtime's poller rather than in a blocking system call, which the
// scheduler may answer by handing its processor to another thread (package
// uring). Commits wait for these syncs, so they are on every durable
// write's path; a full Sync, and every other file's, stays the usual
// blocking call.
type ringFile struct {
	vfs.File
	ring *uring.Ring
}

func (f ringFile) SyncData() error {
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		return f.File.SyncData()
	}
	return f.ring.Datasync(fd)
}

// isLog reports whether name is a write-ahead log file of Pebble v1's
// naming (000123.log).
func isLog(name string) bool { return strings.HasSuffix(name, ".log") }
