package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// cutStore lets a set number of Updates through, then fails every one, as
// a crash right after a commit would leave the work that follows it.
type cutStore struct {
	storage.Store
	left atomic.Int64
}

var errCut = errors.New("cut")

func (s *cutStore) Update(ctx context.Context, fn func(storage.Txn) error) error {
	if s.left.Add(-1) < 0 {
		return errCut
	}
	return s.Store.Update(ctx, fn)
}

func countPrefix(t *testing.T, s storage.Store, prefix []byte) int {
	t.Helper()
	n := 0
	err := s.View(context.Background(), func(r storage.Reader) error {
		return scanPrefix(r, prefix, func(_, _ []byte) (bool, error) { n++; return true, nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A container whose drop committed but whose data deletion never ran (a
// crash, a lost connection) has its data deleted by the next background
// pass, of this engine or of another over the same store.
func TestDroppedContainerDataIsCleanedUpAfterAnInterruption(t *testing.T) {
	base := teststore.Open(t)
	st := &cutStore{Store: base}
	st.left.Store(1 << 30)
	// A clock that stands still: the floor is recorded once, at the first
	// write, and no later stamp passes it by a lease, so no record of it
	// can take the one write left below.
	e, err := New(Config{Store: st, Clock: clock.NewManual(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	createDBAndContainer(t, e, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"}}`)
	for _, id := range []string{"a", "b", "c"} {
		if _, err := e.WriteItem(ctx, WriteItemParams{ItemRef: batchRef(`["p"]`), Mode: ModeCreate, Body: []byte(`{"id":"` + id + `","pk":"p"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	var rid []byte
	if err := base.View(ctx, func(r storage.Reader) error {
		c, err := e.loadContainer(r, "db", "c")
		rid = c.Rid
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n := countPrefix(t, base, collPrefix(famItem, rid)); n != 3 {
		t.Fatalf("%d item records, want 3", n)
	}

	e.floorWrites.Wait() // the first write's record of the floor
	st.left.Store(1)     // the drop's metadata commits; nothing after it does
	if err := e.DeleteContainer(ctx, "db", "c", ""); !errors.Is(err, errCut) {
		t.Fatalf("DeleteContainer = %v, want the cut", err)
	}
	if n := countPrefix(t, base, collPrefix(famItem, rid)); n != 3 {
		t.Fatalf("%d item records after the cut, want 3 still there", n)
	}

	other, err := New(Config{Store: base})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.NewIndexer(nil).Pass(ctx); err != nil {
		t.Fatal(err)
	}
	for _, fam := range containerFamilies {
		if n := countPrefix(t, base, collPrefix(fam, rid)); n != 0 {
			t.Errorf("family %q: %d keys of the dropped container left", fam, n)
		}
	}
	if n := countPrefix(t, base, []byte{famCleanup}); n != 0 {
		t.Errorf("%d cleanup records left", n)
	}
}

// A rebuild of the index keeps its cursor beside the container's record,
// which its batches leave alone until the last: every write reads the
// record, and over PostgreSQL a batch that wrote it failed against any
// write into the items it read, so under a steady stream of writes the
// build made no progress. The cursor goes when the build is done.
func TestIndexBuildKeepsItsCursorBesideTheRecord(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"indexingPolicy":{"includedPaths":[{"path":"/x/?"}],"excludedPaths":[{"path":"/*"}]}}`)
	ctx := context.Background()
	for i := range 40 {
		be.seed(t, fmt.Sprintf(`{"id":"d%d","pk":"p%d","x":%d,"n":%d}`, i, i, i, i))
	}
	drainIndexer(t, be.e.NewIndexer(nil))
	if _, err := be.e.ReplaceContainer(ctx, "db", "c", batchJSON(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"indexingPolicy":{"includedPaths":[{"path":"/*"}]}}`), ""); err != nil {
		t.Fatal(err)
	}
	c := be.containerOf(t, "c")
	raw := func() (record, cursor []byte) {
		t.Helper()
		err := be.e.store.View(ctx, func(r storage.Reader) error {
			var err error
			if record, err = r.Get(containerKey(c.DBRid, "c")); err != nil {
				return err
			}
			if cursor, err = r.Get(indexCursorKey(c)); errors.Is(err, storage.ErrNotFound) {
				err = nil
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return record, cursor
	}
	before, _ := raw()
	for i := 0; ; i++ {
		more, err := be.e.buildIndexBatch(ctx, "db", "c", 10)
		if err != nil {
			t.Fatal(err)
		}
		record, cursor := raw()
		if !more {
			if cursor != nil || !be.containerOf(t, "c").Index.Ready {
				t.Fatalf("after the last batch: cursor %x, ready %v; want no cursor and the index ready", cursor, be.containerOf(t, "c").Index.Ready)
			}
			break
		}
		if !bytes.Equal(record, before) || cursor == nil {
			t.Fatalf("batch %d rewrote the container's record (%v) or kept no cursor (%x)", i, !bytes.Equal(record, before), cursor)
		}
	}
	page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, Query: "SELECT VALUE COUNT(1) FROM c WHERE c.n >= 10", RangeID: "0", CrossPartition: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || string(page.Items[0]) != "30" {
		t.Fatalf("count over the rebuilt index: %q, want 30", page.Items)
	}
}
