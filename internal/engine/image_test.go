package engine

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// deleteCounter is a store whose transactions count the deletions of keys
// of one family.
type deleteCounter struct {
	storage.Store
	family  byte
	deletes *int
}

func (s deleteCounter) Update(ctx context.Context, fn func(tx storage.Txn) error) error {
	return s.Store.Update(ctx, func(tx storage.Txn) error { return fn(deleteCounterTxn{tx, s}) })
}

type deleteCounterTxn struct {
	storage.Txn
	s deleteCounter
}

func (t deleteCounterTxn) Delete(k []byte) error {
	if len(k) > 0 && k[0] == t.s.family {
		*t.s.deletes++
	}
	return t.Txn.Delete(k)
}

// TestImageDeletedOnlyWhereKept: replacing or deleting an item deletes its
// record image only when the version had one. With TTL off no version has
// one, and a write used to delete the image key anyway: one tombstone per
// write for the store to log, flush and compact. Under a defaultTtl the
// image is still replaced and deleted, and the indexes match throughout.
func TestImageDeletedOnlyWhereKept(t *testing.T) {
	for _, tc := range []struct {
		ttl     string
		images  int // after loading 10 items
		deletes int // image deletions by 10 upserts and 10 deletes
	}{
		{ttl: "null", images: 0, deletes: 0},
		{ttl: "-1", images: 0, deletes: 0},
		{ttl: "3600", images: 10, deletes: 20},
	} {
		t.Run("defaultTtl="+tc.ttl, func(t *testing.T) {
			clk := clock.NewManual(purgeT0)
			s := openBenchEngine(t, clk, nil, tc.ttl)
			var deletes int
			e, err := New(Config{Store: deleteCounter{Store: s.store, family: famImage, deletes: &deletes}, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			ref := ItemRef{DB: benchDB, Coll: benchColl}
			write := func(i int) {
				t.Helper()
				if _, err := e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeUpsert, Body: benchItem("n", i, "")}); err != nil {
					t.Fatal(err)
				}
			}
			check := func(step string, images int) { t.Helper(); wantImages(t, e, step, images) }
			for i := range 10 {
				write(i)
			}
			check("loaded", tc.images)
			clk.Advance(time.Second)
			for i := range 10 {
				write(i)
			}
			check("upserted", tc.images)
			for i := range 10 {
				del := ItemRef{DB: benchDB, Coll: benchColl, HasKey: true, PartitionKey: partition.Key{partition.String(benchPK(i))}}
				if _, err := e.DeleteItem(ctx, DeleteItemParams{ItemRef: del, ID: "n" + strconv.Itoa(i)}); err != nil {
					t.Fatal(err)
				}
			}
			check("deleted", 0)
			if deletes != tc.deletes {
				t.Errorf("%d deletions of image keys, want %d", deletes, tc.deletes)
			}
		})
	}
}

// wantImages checks the bench container's indexes and that it holds
// images record images.
func wantImages(t *testing.T, e *Engine, step string, images int) {
	t.Helper()
	counts, err := e.CheckIndexes(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	if got := counts[benchLink].Images; got != images {
		t.Fatalf("%s: %d record images, want %d", step, got, images)
	}
}
