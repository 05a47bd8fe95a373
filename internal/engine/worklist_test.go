package engine

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// recordCounter is a store that counts the container records iterated
// through View: the work of listing containers. (A point read of one
// container's record belongs to the call that names the container.)
type recordCounter struct {
	storage.Store
	records int
}

func (s *recordCounter) View(ctx context.Context, fn func(r storage.Reader) error) error {
	return s.Store.View(ctx, func(r storage.Reader) error { return fn(countingReader{r, s}) })
}

type countingReader struct {
	storage.Reader
	s *recordCounter
}

func (r countingReader) NewIter(p storage.IterParams) (storage.Iterator, error) {
	it, err := r.Reader.NewIter(p)
	return countingIter{it, r.s}, err
}

type countingIter struct {
	storage.Iterator
	s *recordCounter
}

func (it countingIter) count(ok bool) bool {
	if ok {
		if k := it.Key(); len(k) > 0 && k[0] == famContainer {
			it.s.records++
		}
	}
	return ok
}

func (it countingIter) First() bool          { return it.count(it.Iterator.First()) }
func (it countingIter) Next() bool           { return it.count(it.Iterator.Next()) }
func (it countingIter) SeekGE(k []byte) bool { return it.count(it.Iterator.SeekGE(k)) }

// callCounter is the engine as the purger's Target, counting the calls
// that touch the store, per container.
type callCounter struct {
	*Engine
	calls  map[string]int
	purged map[string]int
}

func (c *callCounter) PurgeDue(ctx context.Context, p ttl.PurgeParams) (ttl.PurgeResult, error) {
	c.calls[p.Container]++
	res, err := c.Engine.PurgeDue(ctx, p)
	c.purged[p.Container] += len(res.Items)
	return res, err
}

func (c *callCounter) FirstEntries(ctx context.Context, p ttl.FirstEntriesParams) (ttl.Keys, error) {
	c.calls[p.Container]++
	return c.Engine.FirstEntries(ctx, p)
}

func (c *callCounter) CountDue(ctx context.Context, p ttl.CountDueParams) (int, error) {
	c.calls[p.Container]++
	return c.Engine.CountDue(ctx, p)
}

func (c *callCounter) SweepHistory(ctx context.Context, p ttl.SweepParams) error {
	c.calls[p.Container]++
	return c.Engine.SweepHistory(ctx, p)
}

// The background jobs' work per tick grows with the containers that have
// work for them, not with the containers of the store: hundreds of
// containers with TTL off, or on but holding nothing that expires, cost the
// purger and the index builder no store read once they are known, while
// items that fall due are still purged within a pass of their expiry, and
// a write, a setting change or a policy change brings a container back.
func TestBackgroundWorkScalesWithContainersThatHaveWork(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Unix(1_800_000_000, 0))
	ps, err := pebblestore.Open(pebblestore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close() })
	store := &recordCounter{Store: ps}
	budget := ttl.NewBudget(clk, 0)
	e, err := New(Config{Store: store, Clock: clk, Charges: budget})
	if err != nil {
		t.Fatal(err)
	}
	target := &callCounter{Engine: e, calls: map[string]int{}, purged: map[string]int{}}
	purger := ttl.New(ttl.Config{Target: target, Clock: clk, Budget: budget})
	indexer := e.NewIndexer(nil)

	if _, err := e.CreateDatabase(ctx, benchParse(t, `{"id":"db"}`), nil); err != nil {
		t.Fatal(err)
	}
	const perKind = 150
	create := func(id, ttlJSON string) {
		t.Helper()
		body := `{"id":"` + id + `","partitionKey":{"paths":["/pk"]}`
		if ttlJSON != "" {
			body += `,"defaultTtl":` + ttlJSON
		}
		if _, err := e.CreateContainer(ctx, "db", benchParse(t, body+"}"), nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range perKind {
		create(fmt.Sprintf("off%d", i), "")   // TTL off
		create(fmt.Sprintf("on%d", i), "60")  // TTL on, empty
		create(fmt.Sprintf("own%d", i), "-1") // TTL on, items that never expire
	}
	create("busy", "-1")
	write := func(coll, id, ttlJSON string) {
		t.Helper()
		body := `{"id":"` + id + `","pk":"p"`
		if ttlJSON != "" {
			body += `,"ttl":` + ttlJSON
		}
		if _, err := e.WriteItem(ctx, WriteItemParams{ItemRef: ItemRef{DB: "db", Coll: coll}, Mode: ModeUpsert, Body: []byte(body + "}")}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range perKind {
		write(fmt.Sprintf("own%d", i), "keep", "")
		write(fmt.Sprintf("off%d", i), "plain", "")
	}
	for i := range 10 {
		write("busy", fmt.Sprintf("i%d", i), "5") // due in 5 s
	}
	link := func(coll string) string { return "dbs/db/colls/" + coll }

	// tick runs one round of background work at the next instant and
	// returns the store work it did: container records read and Target
	// calls, in total and outside the named containers.
	tick := func(busy ...string) (total, others int) {
		t.Helper()
		clk.Advance(ttl.DefaultInterval)
		store.records = 0
		clear(target.calls)
		if _, err := purger.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := indexer.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		total = store.records
		others = store.records
		for id, n := range target.calls {
			total += n
			isBusy := false
			for _, b := range busy {
				isBusy = isBusy || id == link(b)
			}
			if !isBusy {
				others += n
			}
		}
		return total, others
	}

	// The first round learns every container.
	tick()
	// Then, for twenty seconds, only "busy" has work: its items fall due
	// after five and are purged in the pass at which they do.
	for i := 1; i <= 100; i++ {
		total, others := tick("busy")
		if others != 0 || total > 6 {
			t.Fatalf("round %d: %d store reads and calls in all, %d outside the busy container; want at most 6 and 0", i, total, others)
		}
		if clk.Now().Before(time.Unix(1_800_000_005, 0)) && target.purged[link("busy")] != 0 {
			t.Fatalf("round %d: purged before the items were due", i)
		}
		if !clk.Now().Before(time.Unix(1_800_000_005, 0)) && target.purged[link("busy")] != 10 {
			t.Fatalf("round %d at %v: %d items purged, want 10 once due", i, clk.Now(), target.purged[link("busy")])
		}
	}

	// A write of an item that expires soon brings its container back.
	write("on7", "soon", "1")
	if _, others := tick("on7", "busy"); others != 0 {
		t.Fatalf("after a write: %d store reads and calls outside the written container", others)
	}
	for range 7 {
		tick("on7", "busy")
	}
	if target.purged[link("on7")] != 1 {
		t.Fatalf("the item written in on7 was not purged at its expiry: %d purged", target.purged[link("on7")])
	}
	// So does a setting change: TTL turned on over an existing item.
	if _, err := e.ReplaceContainer(ctx, "db", "off3", benchParse(t, `{"id":"off3","partitionKey":{"paths":["/pk"]},"defaultTtl":1}`), ""); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		tick("off3", "busy", "on7")
	}
	if target.purged[link("off3")] != 1 {
		t.Fatalf("the item of off3 was not purged after TTL was turned on: %d purged", target.purged[link("off3")])
	}
	// And an indexing policy change: the index is rebuilt, then the
	// container is left alone again.
	if _, err := e.ReplaceContainer(ctx, "db", "off4", benchParse(t, `{"id":"off4","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"indexingMode":"consistent","includedPaths":[{"path":"/pk/?"}],"excludedPaths":[{"path":"/*"}]}}`), ""); err != nil {
		t.Fatal(err)
	}
	tick("off4", "busy", "on7", "off3")
	var c *containerRecord
	if err := ps.View(ctx, func(r storage.Reader) error {
		var err error
		c, err = e.loadContainer(r, "db", "off4")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !c.Index.Ready {
		t.Fatal("the index of off4 was not rebuilt")
	}
	for i := range 5 {
		if total, _ := tick("busy", "on7", "off3"); total > 6 {
			t.Fatalf("round %d after the rebuild: %d store reads and calls", i, total)
		}
	}
	// Dropping a container removes it from the lists.
	if err := e.DeleteContainer(ctx, "db", "busy", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := purger.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	cs, err := e.Containers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.ID == link("busy") || bytes.HasPrefix([]byte(c.ID), []byte(link("off"))) && c.ID != link("off3") {
			t.Fatalf("listed for purging: %s", c.ID)
		}
	}
}
