//go:build linux

package uring

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// open returns a ring, or skips where the kernel or a sandbox refuses
// io_uring: there the store syncs the usual way, which other tests cover.
func open(t *testing.T) *Ring {
	t.Helper()
	r, err := Open()
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestDatasync(t *testing.T) {
	r := open(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 3 {
		if _, err := f.Write([]byte("record\n")); err != nil {
			t.Fatal(err)
		}
		if err := r.Datasync(f.Fd()); err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
	}
	if got := r.Synced(); got != 3 {
		t.Errorf("Synced() = %d, want 3", got)
	}
}

// The kernel's own answer comes back: a pipe cannot be synced, and a
// closed descriptor is not a file.
func TestDatasyncErrors(t *testing.T) {
	r := open(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if err := r.Datasync(pw.Fd()); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("sync of a pipe: %v, want EINVAL", err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "closed"))
	if err != nil {
		t.Fatal(err)
	}
	fd := f.Fd()
	f.Close()
	if err := r.Datasync(fd); !errors.Is(err, syscall.EBADF) {
		t.Errorf("sync of a closed descriptor: %v, want EBADF", err)
	}
	if got := r.Synced(); got != 0 {
		t.Errorf("Synced() = %d after two failures, want 0", got)
	}
	// The ring still works after failures.
	g, err := os.Create(filepath.Join(t.TempDir(), "after"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := r.Datasync(g.Fd()); err != nil {
		t.Errorf("sync after failures: %v", err)
	}
}

// Many goroutines syncing many files through one ring each get their own
// answer; a failing sync among them does not take another's result.
func TestDatasyncConcurrent(t *testing.T) {
	r := open(t)
	dir := t.TempDir()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	const workers, syncs = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers*syncs)
	for w := range workers {
		wg.Go(func() {
			f, err := os.Create(filepath.Join(dir, string(rune('a'+w))))
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			for range syncs {
				if _, err := f.Write([]byte("x")); err != nil {
					errs <- err
					return
				}
				if err := r.Datasync(f.Fd()); err != nil {
					errs <- err
				}
				if w == 0 {
					if err := r.Datasync(pw.Fd()); !errors.Is(err, syscall.EINVAL) {
						errs <- errors.New("pipe sync did not fail with EINVAL")
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := r.Synced(); got != workers*syncs {
		t.Errorf("Synced() = %d, want %d", got, workers*syncs)
	}
}

func TestClose(t *testing.T) {
	r, err := Open()
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := r.Datasync(f.Fd()); !errors.Is(err, os.ErrClosed) {
		t.Errorf("sync after Close: %v, want os.ErrClosed", err)
	}
	if err := r.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("second Close: %v, want os.ErrClosed", err)
	}
}
