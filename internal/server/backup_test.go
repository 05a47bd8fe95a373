package server

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

// A restore that fails half way through its copy leaves no store in the
// data directory, which a server would start on, or a later restore
// refuse; run again, it restores.
func TestRestoreLeavesNoHalfCopiedStore(t *testing.T) {
	backup := fillDataDir(t)
	// A file that cannot be read, copied last.
	broken := filepath.Join(backup, "store", "zzz")
	if err := os.Symlink(filepath.Join(backup, "nowhere"), broken); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	if err := Restore(backup, dataDir); err == nil {
		t.Fatal("a restore whose copy failed succeeded")
	}
	for _, name := range []string{"store", "store.restoring"} {
		if _, err := os.Stat(filepath.Join(dataDir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after the failed restore, %s: %v, want it absent", name, err)
		}
	}
	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	if err := Restore(backup, dataDir); err != nil {
		t.Fatalf("the restore run again: %v", err)
	}
	st, err := pebblestore.Open(pebblestore.Options{Dir: filepath.Join(dataDir, "store"), Filter: storeFilter})
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
}
