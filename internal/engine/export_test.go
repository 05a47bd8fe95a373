package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// ForgetDistinctSets drops the rows every DISTINCT's pages returned, as a
// restart or another gateway would: the next page of each rebuilds them.
func ForgetDistinctSets(e *Engine) { e.seen = newSeenSets(seenSetsMax) }

// WantPartEntries asks the indexer for the partition entries of paths in
// container coll of db (absent.go), as a range query in a large logical
// partition or under a hierarchical prefix would, with the partition
// composite entries of the composites each leads: a pass of the indexer
// builds them.
func WantPartEntries(t testing.TB, e *Engine, db, coll string, paths ...[]string) {
	t.Helper()
	err := e.store.View(context.Background(), func(r storage.Reader) error {
		c, err := e.loadContainer(r, db, coll)
		if err != nil {
			return err
		}
		for _, p := range paths {
			// With the partition composite entries of the composites
			// that lead with the path.
			var comps []string
			for _, comp := range c.index.composites {
				if slices.Equal(comp.paths[0], p) {
					comps = append(comps, comp.sig())
				}
			}
			e.wantAbsent(c, p, entryKinds{parts: true, comps: comps})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
