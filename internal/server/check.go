package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/mayfly-db/mayfly/internal/engine"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

// ErrCheckFailed is returned by Check when the directory is damaged or
// inconsistent; the report written says where.
var ErrCheckFailed = errors.New("the data directory failed its check")

// Check verifies the data directory dataDir offline, without changing a
// byte of it, and writes a report to w: every write-ahead log and the
// MANIFEST read record by record, every table's blocks against their
// checksums however large, and every container's items against their id,
// expiry, range, unique-key and change-feed indexes (engine.CheckIndexes).
// It takes the directory's lock, so it refuses a directory a server is
// using, naming that process.
func Check(ctx context.Context, dataDir string, w io.Writer) error {
	dir := filepath.Join(dataDir, "store")
	fmt.Fprintf(w, "checking %s\n", dir)
	st, err := pebblestore.Open(pebblestore.Options{Dir: dir, ReadOnly: true, VerifyLimit: -1, Filter: storeFilter})
	if err != nil {
		if errors.Is(err, storage.ErrCorrupt) {
			fmt.Fprintf(w, "DAMAGED: %v\n", err)
			return ErrCheckFailed
		}
		return fmt.Errorf("open store: %w", err)
	}
	defer st.Close()
	used, err := st.DiskUsage()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "logs, MANIFEST and tables (%d bytes): every record and block checksum matches\n", used)
	eng, err := engine.New(engine.Config{Store: st, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("open engine: %w", err)
	}
	counts, cerr := eng.CheckIndexes(ctx)
	switch {
	case cerr != nil && errors.Is(cerr, storage.ErrCorrupt):
		fmt.Fprintf(w, "DAMAGED: %v\n", cerr)
		return ErrCheckFailed
	case cerr != nil && counts == nil:
		return fmt.Errorf("check: %w", cerr)
	}
	links := make([]string, 0, len(counts))
	for l := range counts {
		links = append(links, l)
	}
	slices.Sort(links)
	for _, l := range links {
		c := counts[l]
		fmt.Fprintf(w, "%s: %d items (%d expired, awaiting the purge), %d range-index entries, %d ORDER BY entries, %d expiry entries, %d record images\n",
			l, c.Items, c.Expired, c.IndexEntries, c.OrderEntries, c.DueEntries+c.InheritEntries, c.Images)
	}
	if cerr != nil {
		fmt.Fprintf(w, "INCONSISTENT: %v\n", cerr)
		return ErrCheckFailed
	}
	fmt.Fprintf(w, "%d containers: items and indexes agree\n", len(links))
	return nil
}
