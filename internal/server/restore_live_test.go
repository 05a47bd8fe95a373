package server

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

// A restore from a data directory a server is running on is refused: its
// files change under a copy. Nothing is written.
func TestRestoreRefusesALiveStore(t *testing.T) {
	live := fillDataDir(t)
	st, err := pebblestore.Open(pebblestore.Options{Dir: filepath.Join(live, "store"), Filter: storeFilter})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dataDir := filepath.Join(t.TempDir(), "data")
	if err := Restore(live, dataDir); !errors.Is(err, pebblestore.ErrLocked) {
		t.Fatalf("restore from a store in use: %v, want it refused as locked", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "store")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused restore made a store: %v", err)
	}
}
