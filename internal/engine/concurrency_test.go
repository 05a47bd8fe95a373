package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// Concurrent writers that increment counters every way the API allows
// (a patch's incr, an atomic batch of two, a read then a replace under
// If-Match) and create and delete items of their own lose no write and
// apply none twice: a success is applied exactly once, a refusal (412, or
// a storage conflict, which the API answers 449) not at all. Over
// PostgreSQL (MAYFLY_TEST_STORE=postgres) the writers go through two
// engines over one database, as two gateways do, and a read through one
// sees every write the other has answered.
func TestConcurrentWritersLoseNoWrite(t *testing.T) {
	s, reopen := teststore.OpenDurable(t)
	t.Cleanup(func() { s.Close() })
	stores := []storage.Store{s}
	if teststore.Backend() == "postgres" {
		s2, err := reopen()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s2.Close() })
		stores = append(stores, s2)
	}
	var engines []*Engine
	for _, st := range stores {
		e, err := New(Config{Store: storage.WithChecks(st), Clock: clock.Real{}})
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, e)
	}
	ctx := context.Background()
	e0 := engines[0]
	createDBAndContainer(t, e0, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	// Four counters, two in each of two logical partitions.
	type counter struct{ id, pk string }
	counters := []counter{{"a", "p"}, {"b", "p"}, {"c", "q"}, {"d", "q"}}
	ref := func(pk string) ItemRef {
		return ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: partition.Key{partition.String(pk)}}
	}
	for _, c := range counters {
		if _, err := e0.WriteItem(ctx, WriteItemParams{ItemRef: ref(c.pk), Mode: ModeCreate,
			Body: fmt.Appendf(nil, `{"id":%q,"pk":%q,"n":0}`, c.id, c.pk)}); err != nil {
			t.Fatal(err)
		}
	}
	nOf := func(body []byte) int64 {
		var v struct{ N int64 }
		if err := json.Unmarshal(body, &v); err != nil {
			t.Errorf("item %s: %v", body, err)
		}
		return v.N
	}
	// refused reports whether err is a refusal that applied nothing; any
	// other error fails the test.
	var mu sync.Mutex
	refusals := map[string]int{}
	refused := func(what string, err error) {
		switch {
		case errors.Is(err, storage.ErrConflict):
			what += ": conflict"
		case ErrorCode(err) == PreconditionFailed:
			what += ": precondition failed"
		default:
			t.Errorf("%s: %v", what, err)
			return
		}
		mu.Lock()
		refusals[what]++
		mu.Unlock()
	}

	const workers, opsEach = 8, 60
	type tally struct {
		incs    [4]int64 // increments applied, per counter
		created int64    // own items created less those deleted
	}
	tallies := make([]tally, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			tl := &tallies[w]
			var own []counter // items this worker created and has not deleted
			for i := range opsEach {
				e := engines[rng.IntN(len(engines))]
				other := engines[rng.IntN(len(engines))]
				k := rng.IntN(len(counters))
				c := counters[k]
				switch op := rng.IntN(5); op {
				case 0: // patch incr
					ops, _, err := ParsePatch([]byte(`{"operations":[{"op":"incr","path":"/n","value":1}]}`))
					if err != nil {
						t.Error(err)
						return
					}
					res, err := e.PatchItem(ctx, PatchItemParams{ItemRef: ref(c.pk), ID: c.id, Ops: ops})
					if err != nil {
						refused("patch", err)
						continue
					}
					tl.incs[k]++
					// The write is answered: a read through any
					// gateway sees it or a later one.
					got, err := other.ReadItem(ctx, ReadItemParams{ItemRef: ref(c.pk), ID: c.id})
					if err != nil {
						t.Errorf("read after patch: %v", err)
					} else if nOf(got.Body) < nOf(res.Body) {
						t.Errorf("%s: read n = %d after a patch answered n = %d", c.id, nOf(got.Body), nOf(res.Body))
					}
				case 1: // an atomic batch incrementing both counters of a partition
					pair := []int{k &^ 1, k | 1}
					ops, err := ParseBatch(fmt.Appendf(nil, `[
						{"operationType":"Patch","id":%q,"resourceBody":{"operations":[{"op":"incr","path":"/n","value":1}]}},
						{"operationType":"Patch","id":%q,"resourceBody":{"operations":[{"op":"incr","path":"/n","value":1}]}}]`,
						counters[pair[0]].id, counters[pair[1]].id))
					if err != nil {
						t.Error(err)
						return
					}
					res, err := e.Batch(ctx, BatchParams{ItemRef: ref(c.pk), Ops: ops, Atomic: true})
					if err != nil {
						refused("batch", err)
						continue
					}
					if !res.Committed {
						t.Errorf("batch of two increments rolled back: %+v", res.Ops)
						continue
					}
					tl.incs[pair[0]]++
					tl.incs[pair[1]]++
				case 2: // read, then replace under If-Match
					got, err := e.ReadItem(ctx, ReadItemParams{ItemRef: ref(c.pk), ID: c.id})
					if err != nil {
						t.Errorf("read: %v", err)
						continue
					}
					_, err = other.WriteItem(ctx, WriteItemParams{ItemRef: ref(c.pk), Mode: ModeReplace, ID: c.id, IfMatch: got.Etag,
						Body: fmt.Appendf(nil, `{"id":%q,"pk":%q,"n":%d}`, c.id, c.pk, nOf(got.Body)+1)})
					if err != nil {
						refused("replace", err)
						continue
					}
					tl.incs[k]++
				case 3: // create an item of its own
					it := counter{fmt.Sprintf("w%d-%d", w, i), c.pk}
					if _, err := e.WriteItem(ctx, WriteItemParams{ItemRef: ref(it.pk), Mode: ModeCreate,
						Body: fmt.Appendf(nil, `{"id":%q,"pk":%q}`, it.id, it.pk)}); err != nil {
						refused("create", err)
						continue
					}
					own = append(own, it)
					tl.created++
				case 4: // delete one of its own
					if len(own) == 0 {
						continue
					}
					j := rng.IntN(len(own))
					it := own[j]
					if _, err := e.DeleteItem(ctx, DeleteItemParams{ItemRef: ref(it.pk), ID: it.id}); err != nil {
						if ErrorCode(err) == NotFound {
							t.Errorf("delete %s: not found after its create was answered", it.id)
						} else {
							refused("delete", err)
						}
						continue
					}
					own = append(own[:j], own[j+1:]...)
					tl.created--
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var created int64
	for _, tl := range tallies {
		created += tl.created
	}
	for _, e := range engines {
		for k, c := range counters {
			var want int64
			for _, tl := range tallies {
				want += tl.incs[k]
			}
			got, err := e.ReadItem(ctx, ReadItemParams{ItemRef: ref(c.pk), ID: c.id})
			if err != nil {
				t.Fatal(err)
			}
			if n := nOf(got.Body); n != want {
				t.Errorf("counter %s: n = %d, want the %d increments answered", c.id, n, want)
			}
		}
		_, usage, err := e.ReadContainer(ctx, "db", "c")
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(len(counters)) + created; usage.DocumentsCount != want {
			t.Errorf("documentsCount %d, want %d", usage.DocumentsCount, want)
		}
	}
	if _, err := e0.CheckIndexes(ctx); err != nil {
		t.Error(err)
	}
	t.Logf("%d engines, %d writers of %d operations; refused: %v", len(engines), workers, opsEach, refusals)
}

// A query or read feed drained page by page while other writers upsert,
// create and delete items returns every item that lives through the whole
// drain exactly once, and no item twice (an id deleted and created again
// is a new item): a continuation is a position in
// the access path, which writes elsewhere in it do not move. An ORDER BY
// on a property no write changes stays in order across its pages.
func TestDrainsUnderConcurrentWrites(t *testing.T) {
	e, err := New(Config{Store: storage.WithChecks(teststore.Open(t)), Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	createDBAndContainer(t, e, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	const stable, volatile, parts = 600, 200, 12
	ref := func(pk string) ItemRef {
		return ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: partition.Key{partition.String(pk)}}
	}
	pkOf := func(i int) string { return fmt.Sprintf("p%d", i%parts) }
	write := func(id string, i, v int, mode WriteMode) error {
		// k never changes; v and the payload's length do, so records
		// are rewritten at other sizes.
		_, err := e.WriteItem(ctx, WriteItemParams{ItemRef: ref(pkOf(i)), Mode: mode,
			Body: fmt.Appendf(nil, `{"id":%q,"pk":%q,"k":%d,"v":%d,"pad":%q}`, id, pkOf(i), i, v, strings.Repeat("x", v%50))})
		return err
	}
	for i := range stable + volatile {
		id := fmt.Sprintf("s%d", i)
		if i >= stable {
			id = fmt.Sprintf("v%d", i)
		}
		if err := write(id, i, 0, ModeCreate); err != nil {
			t.Fatal(err)
		}
	}

	stop := make(chan struct{})
	var writers sync.WaitGroup
	var writes atomic.Int64
	for w := range 3 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch rng.IntN(3) {
				case 0: // upsert a stable item
					i := rng.IntN(stable)
					err = write(fmt.Sprintf("s%d", i), i, n, ModeUpsert)
				case 1: // create a new item
					i := stable + volatile + w*1_000_000 + n
					err = write(fmt.Sprintf("n%d", i), i, n, ModeCreate)
				case 2: // delete or recreate a volatile item
					i := stable + rng.IntN(volatile)
					id := fmt.Sprintf("v%d", i)
					_, err = e.DeleteItem(ctx, DeleteItemParams{ItemRef: ref(pkOf(i)), ID: id})
					if ErrorCode(err) == NotFound {
						err = write(id, i, n, ModeCreate)
						if ErrorCode(err) == Conflict {
							err = nil
						}
					}
				}
				if err != nil && !errors.Is(err, storage.ErrConflict) {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				writes.Add(1)
			}
		}()
	}

	type item struct {
		ID string
		K  int
	}
	whole := ItemRef{DB: "db", Coll: "c"}
	drains := []struct {
		name    string
		page    func(cont string) (*FeedPage, error)
		order   int              // 1 ascending by k, -1 descending, 0 any order
		wantAll func(i int) bool // the stable items the drain must return
	}{
		{"select all", func(cont string) (*FeedPage, error) {
			return e.QueryItems(ctx, QueryParams{ItemRef: whole, Query: "SELECT * FROM c", RangeID: "0", CrossPartition: true, MaxItemCount: 37, Continuation: cont})
		}, 0, func(int) bool { return true }},
		{"order by k", func(cont string) (*FeedPage, error) {
			return e.QueryItems(ctx, QueryParams{ItemRef: whole, Query: "SELECT * FROM c ORDER BY c.k", RangeID: "0", CrossPartition: true, MaxItemCount: 37, Continuation: cont})
		}, 1, func(int) bool { return true }},
		{"order by k descending, filtered", func(cont string) (*FeedPage, error) {
			return e.QueryItems(ctx, QueryParams{ItemRef: whole, Query: "SELECT * FROM c WHERE c.k < 500 ORDER BY c.k DESC", RangeID: "0", CrossPartition: true, MaxItemCount: 29, Continuation: cont})
		}, -1, func(i int) bool { return i < 500 }},
		{"range filter", func(cont string) (*FeedPage, error) {
			return e.QueryItems(ctx, QueryParams{ItemRef: whole, Query: "SELECT * FROM c WHERE c.k >= 100", RangeID: "0", CrossPartition: true, MaxItemCount: 50, Continuation: cont})
		}, 0, func(i int) bool { return i >= 100 }},
		{"one partition", func(cont string) (*FeedPage, error) {
			return e.QueryItems(ctx, QueryParams{ItemRef: ref(pkOf(5)), Query: "SELECT * FROM c", MaxItemCount: 7, Continuation: cont})
		}, 0, func(i int) bool { return pkOf(i) == pkOf(5) }},
		{"read feed", func(cont string) (*FeedPage, error) {
			return e.ReadFeed(ctx, FeedParams{ItemRef: whole, MaxItemCount: 41, Continuation: cont})
		}, 0, func(int) bool { return true }},
	}
	for round := range 3 {
		for _, d := range drains {
			seen := map[string]int{}
			first, last := true, 0
			cont := ""
			for pages := 0; ; pages++ {
				if pages > 10_000 {
					t.Fatalf("%s: no end after %d pages", d.name, pages)
				}
				page, err := d.page(cont)
				if err != nil {
					t.Fatalf("%s, round %d, page %d: %v", d.name, round, pages, err)
				}
				for _, raw := range page.Items {
					var it item
					if err := json.Unmarshal(raw, &it); err != nil {
						t.Fatal(err)
					}
					seen[it.ID]++
					if d.order != 0 && !first && (it.K-last)*d.order < 0 {
						t.Errorf("%s, round %d: k %d after %d", d.name, round, it.K, last)
					}
					first, last = false, it.K
				}
				if cont = page.Continuation; cont == "" {
					break
				}
			}
			for id, n := range seen {
				// A volatile item deleted and created again is a new
				// item with a new _rid, which a drain may meet again.
				if n > 1 && !strings.HasPrefix(id, "v") {
					t.Errorf("%s, round %d: %s returned %d times", d.name, round, id, n)
				}
			}
			for i := range stable {
				if id := fmt.Sprintf("s%d", i); d.wantAll(i) && seen[id] == 0 {
					t.Errorf("%s, round %d: %s, there throughout, not returned", d.name, round, id)
				}
			}
			if t.Failed() {
				break
			}
		}
	}
	close(stop)
	writers.Wait()
	t.Logf("%d writes during the drains", writes.Load())
}
