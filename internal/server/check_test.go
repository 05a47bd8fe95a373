package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/engine"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

// fillDataDir writes a database, a container with a TTL and items into a
// new data directory and closes it.
func fillDataDir(t *testing.T) string {
	t.Helper()
	dataDir := t.TempDir()
	st, err := pebblestore.Open(pebblestore.Options{Dir: filepath.Join(dataDir, "store"), Filter: storeFilter})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	parse := func(s string) document.Value {
		v, err := document.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if _, err := eng.CreateDatabase(ctx, parse(`{"id":"db"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.CreateContainer(ctx, "db", parse(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":3600}`), nil); err != nil {
		t.Fatal(err)
	}
	key, err := partition.ParseHeader(`["p"]`)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		ref := engine.ItemRef{DB: "db", Coll: "c", PartitionKey: key, HasKey: true}
		body := fmt.Sprintf(`{"id":"i%d","pk":"p","n":%d,"marker":"check-marker-%d"}`, i, i, i)
		if _, err := eng.WriteItem(ctx, engine.WriteItemParams{ItemRef: ref, Mode: engine.ModeCreate, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return dataDir
}

func TestCheckPassesAConsistentDirectory(t *testing.T) {
	dataDir := fillDataDir(t)
	var out bytes.Buffer
	if err := Check(context.Background(), dataDir, &out); err != nil {
		t.Fatalf("Check: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "dbs/db/colls/c: 50 items") {
		t.Fatalf("report does not count the items:\n%s", out.String())
	}
}

// An item whose record is gone while its index entries stay is reported,
// and Check fails.
func TestCheckFindsAnInconsistentDirectory(t *testing.T) {
	dataDir := fillDataDir(t)
	st, err := pebblestore.Open(pebblestore.Options{Dir: filepath.Join(dataDir, "store")})
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	err = st.Update(context.Background(), func(tx storage.Txn) error {
		it, err := tx.NewIter(storage.IterParams{})
		if err != nil {
			return err
		}
		var doomed [][]byte
		for ok := it.First(); ok; ok = it.Next() {
			if bytes.Contains(it.Value(), []byte(`"check-marker-7"`)) {
				doomed = append(doomed, bytes.Clone(it.Key()))
			}
		}
		if err := it.Close(); err != nil {
			return err
		}
		for _, k := range doomed {
			if err := tx.Delete(k); err != nil {
				return err
			}
			removed++
		}
		return nil
	})
	if err != nil || removed == 0 {
		t.Fatalf("remove a record: %v (%d removed)", err, removed)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = Check(context.Background(), dataDir, &out)
	if !errors.Is(err, ErrCheckFailed) || !strings.Contains(out.String(), "INCONSISTENT") {
		t.Fatalf("Check = %v, want ErrCheckFailed with INCONSISTENT in the report:\n%s", err, out.String())
	}
}

// A flipped byte in the middle of the write-ahead log is found, naming
// the file (the items are still in the log: the store is too small to
// have been flushed to tables).
func TestCheckFindsADamagedLog(t *testing.T) {
	dataDir := fillDataDir(t)
	tables, _ := filepath.Glob(filepath.Join(dataDir, "store", "*.log"))
	if len(tables) == 0 {
		t.Fatal("no log written")
	}
	b, err := os.ReadFile(tables[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/3] ^= 0x40
	if err := os.WriteFile(tables[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = Check(context.Background(), dataDir, &out)
	if !errors.Is(err, ErrCheckFailed) || !strings.Contains(out.String(), "DAMAGED") || !strings.Contains(out.String(), filepath.Base(tables[0])) {
		t.Fatalf("Check = %v, want ErrCheckFailed naming %s:\n%s", err, filepath.Base(tables[0]), out.String())
	}
}
