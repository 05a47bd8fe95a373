package pebblestore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

// damageKeys is how many keys writeStore writes: enough for a
// write-ahead log of many 32 KiB blocks and a table of many data blocks.
const damageKeys = 3000

// writeStore writes damageKeys keys in as many commits to a new store in
// dir and closes it. With flushed set it opens and closes it once more:
// Pebble flushes the replayed write-ahead log into a table on open, so the
// data is then in a table, not a log.
func writeStore(t *testing.T, dir string, flushed bool) {
	t.Helper()
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := range damageKeys {
		err := s.Update(context.Background(), func(tx storage.Txn) error {
			return tx.Set(fmt.Appendf(nil, "key%05d", i), fmt.Appendf(nil, "value %0200d", i))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if flushed {
		s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// only returns the one file in dir matching pattern.
func only(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) == 0 {
		t.Fatalf("no %s in %s (%v)", pattern, dir, err)
	}
	if len(m) > 1 {
		// The last: the write-ahead log with the latest writes.
		return m[len(m)-1]
	}
	return m[0]
}

// middle is an offset flipByte reads as the middle of the file.
const middle = 1 << 62

// flipByte inverts the byte at off (from the end when negative).
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case off == middle:
		off = int64(len(b)) / 2
	case off < 0:
		off += int64(len(b))
	}
	b[off] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// countKeys reads every key of the store in one View.
func countKeys(s *pebblestore.Store) (int, error) {
	n := 0
	err := s.View(context.Background(), func(r storage.Reader) error {
		it, err := r.NewIter(storage.IterParams{})
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		return it.Err()
	})
	return n, err
}

// wantDamage checks that err reports damage and names the file.
func wantDamage(t *testing.T, err error, file string) {
	t.Helper()
	if !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("got %v, want an error wrapping storage.ErrCorrupt", err)
	}
	if !strings.Contains(err.Error(), file) {
		t.Fatalf("the error does not name %s: %v", file, err)
	}
}

// A flipped byte in the middle of a write-ahead log used to end the replay
// there: the store opened with the later writes silently gone.
func TestOpenRefusesLogDamagedInTheMiddle(t *testing.T) {
	dir := t.TempDir()
	writeStore(t, dir, false)
	log := only(t, dir, "*.log")
	flipByte(t, log, 100_000)
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err == nil {
		n, _ := countKeys(s)
		_ = s.Close()
		t.Fatalf("Open accepted a damaged log and serves %d of %d keys", n, damageKeys)
	}
	wantDamage(t, err, log)
	if !strings.Contains(err.Error(), "offset") {
		t.Errorf("the error does not say where: %v", err)
	}
}

// A log cut short, as a crash leaves it, is not damage: the store opens
// with every write before the cut.
func TestOpenAcceptsLogCutShort(t *testing.T) {
	dir := t.TempDir()
	writeStore(t, dir, false)
	log := only(t, dir, "*.log")
	fi, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(log, fi.Size()-100); err != nil {
		t.Fatal(err)
	}
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err != nil {
		t.Fatalf("a log cut short at its end is a crash, not damage: %v", err)
	}
	defer s.Close()
	if n, err := countKeys(s); err != nil || n != damageKeys-1 {
		t.Fatalf("read %d keys (%v), want %d: every write but the cut one", n, err, damageKeys-1)
	}
}

func TestOpenRefusesDamagedTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		off  int64
	}{
		{"data block", middle},
		{"index block", -200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeStore(t, dir, true)
			table := only(t, dir, "*.sst")
			flipByte(t, table, tc.off)
			s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
			if err == nil {
				_ = s.Close()
				t.Fatal("Open accepted a damaged table")
			}
			wantDamage(t, err, table)
		})
	}
}

// A table too large to check at open is checked block by block as it is
// read: the read fails, naming the table, instead of returning less.
func TestReadOfDamagedTableFails(t *testing.T) {
	dir := t.TempDir()
	writeStore(t, dir, true)
	table := only(t, dir, "*.sst")
	flipByte(t, table, middle)
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir, VerifyLimit: 1})
	if err != nil {
		t.Fatalf("with the check at open off, Open should succeed: %v", err)
	}
	defer s.Close()
	n, err := countKeys(s)
	if err == nil {
		t.Fatalf("a scan over a damaged block returned %d of %d keys and no error", n, damageKeys)
	}
	wantDamage(t, err, table)
	wantDamage(t, s.VerifyTables(), table)
}

func TestOpenRefusesMissingTable(t *testing.T) {
	dir := t.TempDir()
	writeStore(t, dir, true)
	if err := os.Remove(only(t, dir, "*.sst")); err != nil {
		t.Fatal(err)
	}
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err == nil {
		_ = s.Close()
		t.Fatal("Open accepted a store missing a table")
	}
	wantDamage(t, err, "MANIFEST-")
}

// A store whose marker naming its MANIFEST is lost is refused, for
// writing and for reading alike, and keeps its tables and logs: Pebble
// would take the directory for a new store, and delete them.
func TestOpenRefusesStoreWithoutManifestMarker(t *testing.T) {
	dir := t.TempDir()
	writeStore(t, dir, true)
	marker := only(t, dir, "marker.manifest.*")
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	for _, readOnly := range []bool{false, true, false} {
		s, err := pebblestore.Open(pebblestore.Options{Dir: dir, ReadOnly: readOnly})
		if err == nil {
			_ = s.Close()
			t.Fatalf("Open (read-only %v) accepted a store without its MANIFEST marker", readOnly)
		}
		wantDamage(t, err, "marker")
	}
	only(t, dir, "*.sst")
}

// A damaged MANIFEST record loses the edits after it; here they include
// the flush that made the table, so the MANIFEST that is left names
// tables long deleted.
func TestOpenRefusesDamagedManifest(t *testing.T) {
	dir := t.TempDir()
	writeStore(t, dir, true)
	manifest := only(t, dir, "MANIFEST-*")
	flipByte(t, manifest, -100)
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err == nil {
		_ = s.Close()
		t.Fatal("Open accepted a damaged MANIFEST")
	}
	wantDamage(t, err, manifest)
}

// A MANIFEST whose last record was cut short by a crash is not damage:
// the store opens.
func TestOpenAcceptsManifestCutShort(t *testing.T) {
	dir := t.TempDir()
	writeStore(t, dir, true)
	manifest := only(t, dir, "MANIFEST-*")
	fi, err := os.Stat(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(manifest, fi.Size()-3); err != nil {
		t.Fatal(err)
	}
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err != nil {
		t.Fatalf("a MANIFEST cut short at its end is a crash, not damage: %v", err)
	}
	_ = s.Close()
}

// holderEnv names the directory TestHoldLockChild opens.
const holderEnv = "MAYFLY_LOCK_CHILD"

// TestHoldLockChild is the other process of TestSecondOpenNamesHolder:
// it opens the store and holds it until its standard input closes.
func TestHoldLockChild(t *testing.T) {
	dir := os.Getenv(holderEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestSecondOpenNamesHolder")
	}
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	_, _ = os.Stdin.Read(make([]byte, 1))
	_ = s.Close()
}

// A second process opening a directory in use is told which process
// holds it, by pid and command line.
func TestSecondOpenNamesHolder(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldLockChild$")
	cmd.Env = append(os.Environ(), holderEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("child: %q %v", line, err)
	}

	s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err == nil {
		_ = s.Close()
		t.Fatal("a second process opened a locked directory")
	}
	if !errors.Is(err, pebblestore.ErrLocked) {
		t.Fatalf("got %v, want ErrLocked", err)
	}
	for _, want := range []string{fmt.Sprintf("process %d ", cmd.Process.Pid), "TestHoldLockChild"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not name the holder (%q): %v", want, err)
		}
	}
}

// A second Store on the same directory in one process is refused too.
func TestSecondOpenInProcess(t *testing.T) {
	dir := t.TempDir()
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s2, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err == nil {
		_ = s2.Close()
		t.Fatal("a second Store opened the same directory")
	}
	if !errors.Is(err, pebblestore.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("got %v, want ErrLocked naming this process", err)
	}
}
