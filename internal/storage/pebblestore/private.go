package pebblestore

import (
	"fmt"
	"io"
	"os"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/mayfly-db/mayfly/internal/uring"
)

// Modes of everything the store creates on disk: the data is the account's,
// so no other local user may read it, whatever the process umask.
const (
	fileMode = 0o600
	dirMode  = 0o700
)

// privateFS is the operating system's filesystem with every file the store
// creates narrowed to fileMode and every directory to dirMode. Pebble
// creates files with mode 0666 less the umask, which on most systems leaves
// them readable by everyone. With a ring, the logs it creates sync their
// data through it (ringFile).
type privateFS struct {
	vfs.FS
	ring *uring.Ring
}

var _ vfs.FS = privateFS{}

// narrow sets name's mode right after it was created, before anything is
// written to it.
func narrow(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	if cerr := os.Chmod(name, fileMode); cerr != nil {
		_ = f.Close()
		return nil, fmt.Errorf("restrict %s: %w", name, cerr)
	}
	return f, nil
}

func (p privateFS) Create(name string) (vfs.File, error) {
	f, err := p.FS.Create(name)
	if f, err = narrow(f, name, err); err != nil {
		return nil, err
	}
	return p.logFile(f, name), nil
}

// logFile wraps f, created as name, in a ringFile when it is a log and the
// filesystem has a ring.
func (p privateFS) logFile(f vfs.File, name string) vfs.File {
	if p.ring == nil || !isLog(name) {
		return f
	}
	return ringFile{File: f, ring: p.ring}
}

func (p privateFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := p.FS.OpenReadWrite(name, opts...)
	return narrow(f, name, err)
}

func (p privateFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := p.FS.ReuseForWrite(oldname, newname)
	if f, err = narrow(f, newname, err); err != nil {
		return nil, err
	}
	return p.logFile(f, newname), nil
}

func (p privateFS) MkdirAll(dir string, _ os.FileMode) error {
	return p.FS.MkdirAll(dir, dirMode)
}

func (p privateFS) Lock(name string) (io.Closer, error) {
	c, err := p.FS.Lock(name)
	if err != nil {
		return nil, err
	}
	if cerr := os.Chmod(name, fileMode); cerr != nil {
		_ = c.Close()
		return nil, fmt.Errorf("restrict %s: %w", name, cerr)
	}
	return c, nil
}
