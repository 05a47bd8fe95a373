package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
	"github.com/mayfly-db/mayfly/internal/storage/pgstore"
	"github.com/mayfly-db/mayfly/internal/storage/pgtest"
)

// queued waits until c holds n writes in its queue.
func queued(t *testing.T, c *committer, n int) {
	t.Helper()
	deadline := (clock.Real{}).Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		got := len(c.queue)
		c.mu.Unlock()
		if got == n {
			return
		}
		if (clock.Real{}).Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// The writes that queue while a group runs go together in the next one,
// led by the first of them; a write whose context ends while it waits
// leaves the queue and never runs.
func TestCommitterGroupsTheWritesThatQueue(t *testing.T) {
	var c committer
	var mu sync.Mutex
	var sizes []int
	release := make(chan struct{})
	run := func(group []*groupWrite) {
		mu.Lock()
		first := len(sizes) == 0
		sizes = append(sizes, len(group))
		mu.Unlock()
		if first {
			<-release
		}
		for _, w := range group {
			w.err = w.fn(nil)
		}
	}
	ran := make([]bool, 12)
	write := func(i int) func(storage.Txn) error {
		return func(storage.Txn) error {
			ran[i] = true
			if i == 5 {
				return fmt.Errorf("write %d fails", i)
			}
			return nil
		}
	}
	errs := make([]error, 12)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); errs[0] = c.do(context.Background(), write(0), run) }()
	for {
		mu.Lock()
		n := len(sizes)
		mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	for i := 1; i < 12; i++ {
		ctx := context.Background()
		if i == 3 {
			ctx = cancelled
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = c.do(ctx, write(i), run) }()
		queued(t, &c, i)
	}
	cancel()
	queued(t, &c, 10)
	close(release)
	wg.Wait()
	if want := []int{1, 10}; fmt.Sprint(sizes) != fmt.Sprint(want) {
		t.Errorf("groups of %v, want %v", sizes, want)
	}
	for i, err := range errs {
		switch i {
		case 3:
			if !errors.Is(err, context.Canceled) || ran[i] {
				t.Errorf("write 3, cancelled while queued: %v (ran %v), want context.Canceled, not run", err, ran[i])
			}
		case 5:
			if err == nil || !ran[i] {
				t.Errorf("write 5: %v (ran %v), want its own error", err, ran[i])
			}
		default:
			if err != nil || !ran[i] {
				t.Errorf("write %d: %v (ran %v), want nil", i, err, ran[i])
			}
		}
	}
	if c.leading || len(c.queue) != 0 {
		t.Errorf("after the last group: leading %v, %d queued", c.leading, len(c.queue))
	}
}

// A write that panics takes its group down, not the committer: the
// panic goes on in the leader's goroutine, the other writes of the group
// are told to retry, and the writes queued behind it still run.
func TestCommitterSurvivesAPanic(t *testing.T) {
	var c committer
	release := make(chan struct{})
	first := true
	run := func(group []*groupWrite) {
		if first {
			first = false
			<-release
		}
		for _, w := range group {
			w.err = w.fn(nil)
		}
	}
	ok := func(storage.Txn) error { return nil }
	var wg sync.WaitGroup
	errs := make([]error, 5)
	var leaderPanic any
	start := func(i int, fn func(storage.Txn) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					leaderPanic = p
				}
			}()
			errs[i] = c.do(context.Background(), fn, run)
		}()
	}
	start(0, ok)
	for {
		c.mu.Lock()
		taken := c.leading && len(c.queue) == 0
		c.mu.Unlock()
		if taken {
			break
		}
		time.Sleep(time.Millisecond)
	}
	start(1, ok)
	queued(t, &c, 1)
	start(2, func(storage.Txn) error { panic("boom") })
	queued(t, &c, 2)
	start(3, ok)
	queued(t, &c, 3)
	close(release)
	wg.Wait()
	if fmt.Sprint(leaderPanic) != "boom" {
		t.Errorf("the leader's goroutine panicked with %v, want boom", leaderPanic)
	}
	for _, i := range []int{2, 3} {
		if !errors.Is(errs[i], storage.ErrConflict) {
			t.Errorf("write %d of the group that panicked: %v, want a conflict to retry", i, errs[i])
		}
	}
	if errs[0] != nil {
		t.Errorf("write 0, in the group before: %v", errs[0])
	}
	if c.leading || len(c.queue) != 0 {
		t.Fatalf("after the panic: leading %v, %d queued", c.leading, len(c.queue))
	}
	if err := c.do(context.Background(), ok, run); err != nil {
		t.Errorf("a write after the panic: %v", err)
	}
}

// openSavepointStore opens a PostgreSQL store of the test's own: a shared
// store whose transactions have savepoints.
func openSavepointStore(t *testing.T) *pgstore.Store {
	t.Helper()
	ps, err := pgstore.Open(context.Background(), pgstore.Options{URL: pgtest.URL(t), PoolSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close() })
	return ps
}

// Over a shared store, concurrent writes to one container commit in groups
// and come out exactly as if each had committed alone: a duplicate id and
// a unique-key clash each fail alone, every other write is kept once, and
// the totals, the LSNs and the change feed agree. Over a shared store
// whose transactions have no savepoints every write commits alone.
func TestGroupCommitOverASharedStore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		open    func(t *testing.T) storage.Store
		grouped bool
	}{
		{"postgres", func(t *testing.T) storage.Store { return openSavepointStore(t) }, true},
		{"without savepoints", func(t *testing.T) storage.Store {
			ps, err := pebblestore.Open(pebblestore.Options{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ps.Close() })
			return &clockedStore{Store: ps, now: batchT0}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(Config{Store: storage.WithChecks(tc.open(t)), Clock: clock.NewManual(batchT0)})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			createDBAndContainer(t, e, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
				"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/u"]}]}}`)
			const n = 24
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				id, u := fmt.Sprintf("i%d", i), i
				switch i {
				case n - 1:
					id = "i0" // a duplicate id
				case n - 2:
					u = 1 // a unique key i1 holds
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, errs[i] = e.WriteItem(ctx, WriteItemParams{ItemRef: batchRef(`["p"]`), Mode: ModeCreate,
						Body: fmt.Appendf(nil, `{"id":%q,"pk":"p","u":%d}`, id, u)})
				}()
			}
			// Atomic batches whose second operation fails once the first
			// has written: a group must take back the first write alone.
			const batches = 2
			batchErrs := make([]error, batches)
			for i := range batches {
				ops, err := ParseBatch(fmt.Appendf(nil, `[{"operationType":"Create","resourceBody":{"id":"b%[1]d","pk":"p","u":%[2]d}},
					{"operationType":"Create","resourceBody":{"id":"b%[1]d","pk":"p","u":%[3]d}}]`, i, 1000+i, 2000+i))
				if err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					var res *BatchResult
					res, batchErrs[i] = e.Batch(ctx, BatchParams{ItemRef: batchRef(`["p"]`), Ops: ops, Atomic: true})
					if batchErrs[i] == nil && res.Committed {
						batchErrs[i] = errors.New("committed")
					}
				}()
			}
			close(start)
			wg.Wait()
			for i, err := range batchErrs {
				if err != nil {
					t.Errorf("batch %d: %v, want rolled back", i, err)
				}
			}
			ok, conflicts := 0, 0
			for i, err := range errs {
				switch {
				case err == nil:
					ok++
				case ErrorCode(err) == Conflict:
					conflicts++
				default:
					t.Errorf("write %d: %v", i, err)
				}
			}
			if ok != n-2 || conflicts != 2 {
				t.Fatalf("%d writes kept and %d conflicts, want %d and 2", ok, conflicts, n-2)
			}
			_, usage, err := e.ReadContainer(ctx, "db", "c")
			if err != nil {
				t.Fatal(err)
			}
			if usage.DocumentsCount != n-2 {
				t.Errorf("documentsCount %d, want %d", usage.DocumentsCount, n-2)
			}
			page, err := e.ChangeFeed(ctx, ChangeFeedParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, MaxItemCount: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) != n-2 || page.CurrentLSN != n-2 {
				t.Errorf("the change feed holds %d changes up to LSN %d, want %d up to %d", len(page.Items), page.CurrentLSN, n-2, n-2)
			}
			groups, writes := e.WriteGroups()
			if writes != n+batches {
				t.Errorf("%d writes went through groups, want %d", writes, n+batches)
			}
			if tc.grouped && groups >= writes {
				t.Errorf("%d groups for %d writes: none was committed with another", groups, writes)
			}
		})
	}
}
