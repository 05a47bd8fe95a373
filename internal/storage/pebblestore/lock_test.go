package pebblestore

import (
	"fmt"
	"io/fs"
	"syscall"
	"testing"
)

// A lock file the user may not open is a permission to fix, not a lock
// another process holds; the lock call's own EACCES or EAGAIN is one.
func TestLockConflictIsNotAPermission(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&fs.PathError{Op: "open", Path: "LOCK", Err: syscall.EACCES}, false},
		{syscall.EACCES, true},
		{syscall.EAGAIN, true},
		{fmt.Errorf("lock: %w", syscall.EAGAIN), true},
	} {
		if got := isLockConflict(tc.err); got != tc.want {
			t.Errorf("isLockConflict(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
