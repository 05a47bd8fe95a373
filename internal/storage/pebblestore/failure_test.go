package pebblestore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

// smallDisk mounts a tmpfs of size bytes on a new directory and returns it:
// a real filesystem that fills up. It takes root, which the test machines
// and CI have; elsewhere the test is skipped.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem takes root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount: %v: %s", err, out)
		}
	})
	return dir
}

// filler takes n bytes of the filesystem at dir and returns a function
// that gives them back.
func filler(t *testing.T, dir string, n int) func() {
	t.Helper()
	path := filepath.Join(dir, "filler")
	if err := os.WriteFile(path, make([]byte, n), 0o600); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}

// within runs f and fails the test if it does not return in time: a full
// disk must never wedge a call.
func within[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not return: the store is wedged", what)
		panic("unreachable")
	}
}

func putBig(s storage.Store, i int) error {
	v := make([]byte, 64<<10)
	_, _ = rand.Read(v)
	return s.Update(context.Background(), func(tx storage.Txn) error {
		return tx.Set(fmt.Appendf(nil, "k%05d", i), v)
	})
}

func has(t *testing.T, s storage.Store, i int) bool {
	t.Helper()
	var found bool
	err := s.View(context.Background(), func(r storage.Reader) error {
		_, err := r.Get(fmt.Appendf(nil, "k%05d", i))
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil {
		t.Fatalf("read k%05d: %v", i, err)
	}
	return found
}

// A disk that fills up refuses writes with ErrNoSpace before Pebble meets
// it, commits nothing of the refused write, keeps reads going, and takes
// writes again once space is back; nothing acknowledged is lost.
func TestFullDiskRefusesWritesAndResumes(t *testing.T) {
	disk := smallDisk(t, 64<<20)
	free := filler(t, disk, 24<<20)
	dir := filepath.Join(disk, "store")
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir, MemTableSize: 4 << 20, Reserve: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	acked := 0
	var refused error
	for i := 0; i < 2000 && refused == nil; i++ {
		err := within(t, "a write", func() error { return putBig(s, i) })
		switch {
		case err == nil:
			acked++
		case errors.Is(err, storage.ErrNoSpace):
			refused = err
		default:
			t.Fatalf("write %d: %v, want success or ErrNoSpace", i, err)
		}
	}
	if refused == nil {
		t.Fatal("the disk never filled")
	}
	t.Logf("%d writes acknowledged, then: %v", acked, refused)
	if has(t, s, acked) {
		t.Fatal("the refused write is visible")
	}
	for i := range acked {
		if !has(t, s, i) {
			t.Fatalf("acknowledged k%05d is missing", i)
		}
	}
	// Refused again while the disk stays full, without waiting. Pebble
	// deletes obsolete logs and tables in the background (it keeps none
	// for reuse), which can free space since the refusal: take it back.
	avail := func() int {
		var st syscall.Statfs_t
		if err := syscall.Statfs(disk, &st); err != nil {
			t.Fatal(err)
		}
		return int(st.Bavail) * int(st.Bsize)
	}
	// Wait until the free space has not changed for 200 ms.
	for last, stable := avail(), 0; stable < 20; stable++ {
		time.Sleep(10 * time.Millisecond)
		if now := avail(); now != last {
			last, stable = now, 0
		}
	}
	refill := func() {}
	if avail := avail(); avail > 8<<20 {
		path := filepath.Join(disk, "refill")
		if err := os.WriteFile(path, make([]byte, avail-8<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		refill = func() { _ = os.Remove(path) }
	}
	if err := within(t, "a write", func() error { return putBig(s, acked) }); !errors.Is(err, storage.ErrNoSpace) {
		t.Fatalf("second write on a full disk: %v, want ErrNoSpace", err)
	}

	refill()
	free()
	for i := acked; i < acked+10; i++ {
		if err := within(t, "a write", func() error { return putBig(s, i) }); err != nil {
			t.Fatalf("write after space came back: %v", err)
		}
	}
	acked += 10
	if err := within(t, "Close", s.Close); err != nil {
		t.Fatal(err)
	}
	s, err = pebblestore.Open(pebblestore.Options{Dir: dir, MemTableSize: 4 << 20, Reserve: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range acked {
		if !has(t, s, i) {
			t.Fatalf("after reopening, acknowledged k%05d is missing", i)
		}
	}
}

// failingEnv names the directory TestFailedCommitChild fills.
const failingEnv = "MAYFLY_FAILING_CHILD"

// TestFailedCommitChild is the process of TestFailedCommitDoesNotWedgeTheStore
// that meets the full disk: it opens the store with the reserve off, so
// Pebble itself meets the full disk, checks what the calls do, and prints
// how many writes were acknowledged. The failed Pebble cannot be closed, so
// only a new process can open the directory again, as after a restart.
func TestFailedCommitChild(t *testing.T) {
	dir := os.Getenv(failingEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestFailedCommitDoesNotWedgeTheStore")
	}
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir, MemTableSize: 4 << 20, Reserve: -1})
	if err != nil {
		t.Fatal(err)
	}
	acked, failures := 0, 0
	for i := 0; i < 2000 && failures < 20; i++ {
		err := within(t, "a write", func() error { return putBig(s, i) })
		switch {
		case err == nil:
			if failures > 0 {
				t.Fatalf("write %d succeeded after a failed one", i)
			}
			acked++
		case errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrNoSpace):
			failures++
		default:
			t.Fatalf("write %d: %v, want ErrUnavailable or ErrNoSpace", i, err)
		}
	}
	if failures == 0 {
		t.Fatal("the disk never filled")
	}
	if err := within(t, "a write", func() error { return putBig(s, 99999) }); !errors.Is(err, storage.ErrNoSpace) {
		t.Fatalf("write after the failure: %v, want ErrNoSpace", err)
	}
	for i := range acked {
		if !has(t, s, i) {
			t.Fatalf("acknowledged k%05d is not readable", i)
		}
	}
	if err := within(t, "Close", s.Close); err == nil {
		t.Fatal("Close after a failed write reported nothing")
	}
	fmt.Printf("acked %d\n", acked)
}

// When a commit fails all the same, the failing calls return errors, later
// writes are refused at once instead of panicking inside Pebble or hanging,
// reads go on, and Close returns (in a child process); after a restart with
// space back, every acknowledged write is there and writes succeed.
func TestFailedCommitDoesNotWedgeTheStore(t *testing.T) {
	disk := smallDisk(t, 48<<20)
	free := filler(t, disk, 24<<20)
	dir := filepath.Join(disk, "store")
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailedCommitChild$", "-test.v")
	cmd.Env = append(os.Environ(), failingEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var acked int
	for line := range strings.Lines(string(out)) {
		if _, err := fmt.Sscanf(line, "acked %d", &acked); err == nil {
			break
		}
	}
	if acked == 0 {
		t.Fatalf("child acknowledged nothing:\n%s", out)
	}
	free()
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir, MemTableSize: 4 << 20, Reserve: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range acked {
		if !has(t, s, i) {
			t.Fatalf("after the restart, acknowledged k%05d is missing", i)
		}
	}
	if err := putBig(s, 99999); err != nil {
		t.Fatalf("write after the restart: %v", err)
	}
}
