package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// clockedStore is a store that owns the clock, as a database server shared
// by several gateways does.
type clockedStore struct {
	storage.Store
	mu       sync.Mutex
	now      time.Time
	err      error
	deadline time.Time // the last commit deadline of a transaction
	real     bool      // the clock is the process's, not now
}

func (s *clockedStore) Now(context.Context) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.real {
		return time.Now(), nil
	}
	return s.now, s.err
}

// View's readers tell the store's clock as the view began
// (storage.TxClock), as a shared store's do.
func (s *clockedStore) View(ctx context.Context, fn func(r storage.Reader) error) error {
	return s.Store.View(ctx, func(r storage.Reader) error {
		now, err := s.Now(ctx)
		return fn(&clockedReader{Reader: r, now: now, err: err})
	})
}

type clockedReader struct {
	storage.Reader
	now time.Time
	err error
}

func (r *clockedReader) TxNow() (time.Time, bool, error) { return r.now, true, r.err }

// Update honours the commit deadline its transactions are given, as a
// shared store must (storage.Deadliner), and records the last one. Its
// transactions tell the clock as they began, like View's readers.
func (s *clockedStore) Update(ctx context.Context, fn func(tx storage.Txn) error) error {
	return s.Store.Update(ctx, func(tx storage.Txn) error {
		now, err := s.Now(ctx)
		dt := &deadlineTxn{Txn: tx, now: now, err: err}
		if err := fn(dt); err != nil {
			return err
		}
		if dt.at.IsZero() {
			return nil
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.deadline = dt.at
		if !s.now.Before(dt.at) {
			return fmt.Errorf("%w: commit after its deadline", storage.ErrConflict)
		}
		return nil
	})
}

type deadlineTxn struct {
	storage.Txn
	at  time.Time
	now time.Time
	err error
}

func (t *deadlineTxn) TxNow() (time.Time, bool, error) { return t.now, true, t.err }

func (t *deadlineTxn) CommitBefore(at time.Time) { t.at = at }

func (s *clockedStore) set(now time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now, s.err = now, err
}

// skewedGateways opens engines over one store that owns the clock, at t0,
// each on a local clock (set with local) off by its skew.
func skewedGateways(t *testing.T, t0 time.Time, skews ...time.Duration) (*clockedStore, *clock.Manual, []*Engine) {
	t.Helper()
	st := &clockedStore{Store: teststore.Open(t), now: t0}
	local := clock.NewManual(t0)
	var gateways []*Engine
	for _, skew := range skews {
		e, err := New(Config{Store: storage.WithChecks(st), Clock: clock.Skewed{Clock: local, Offset: skew}})
		if err != nil {
			t.Fatal(err)
		}
		gateways = append(gateways, e)
	}
	return st, local, gateways
}

// Two gateways whose own clocks are 7 s ahead and 7 s behind, over one
// store that owns the clock, judge every expiry alike, by the store's
// clock (ttl.md A6, B6).
func TestGatewaysOverAClockedStoreAgreeOnExpiry(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	st, local, gateways := skewedGateways(t, t0, 7*time.Second, -7*time.Second)
	ctx := context.Background()
	a := gateways[0]
	createDBAndContainer(t, a, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":-1}`)
	ref := batchRef(`["p"]`)
	if _, err := a.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(`{"id":"x","pk":"p","ttl":10}`)}); err != nil {
		t.Fatal(err)
	}
	visible := func(e *Engine) bool {
		t.Helper()
		_, err := e.ReadItem(ctx, ReadItemParams{ItemRef: ref, ID: "x"})
		var ee *Error
		switch {
		case err == nil:
			return true
		case errors.As(err, &ee) && ee.Code == NotFound:
			return false
		}
		t.Fatalf("read: %v", err)
		return false
	}
	for _, tc := range []struct {
		after time.Duration
		want  bool
	}{{0, true}, {9 * time.Second, true}, {10 * time.Second, false}, {11 * time.Second, false}} {
		st.set(t0.Add(tc.after), nil)
		local.Set(t0.Add(tc.after))
		for i, e := range gateways {
			if got := visible(e); got != tc.want {
				t.Errorf("%v after the write, gateway %d sees the item: %v, want %v", tc.after, i, got, tc.want)
			}
		}
	}

	// A store clock that cannot be read fails the request; it never
	// falls back to the gateway's own clock.
	st.set(time.Time{}, errors.New("connection refused"))
	_, err := a.ReadItem(ctx, ReadItemParams{ItemRef: ref, ID: "x"})
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("read with the store's clock unreadable: %v, want ErrUnavailable", err)
	}
}

// The change log dates a delete and measures its retention by the store's
// clock, not the gateway's: deletes through gateways 7 s ahead and behind
// carry the store's time, and a feed from a time before them has them all.
func TestChangeLogTimesAreTheStores(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	st, local, gateways := skewedGateways(t, t0, 0, 7*time.Second, -7*time.Second)
	ctx := context.Background()
	createDBAndContainer(t, gateways[0], `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"changeFeedPolicy":{"retentionDuration":10}}`)
	ref := batchRef(`["p"]`)
	for i := range gateways {
		if _, err := gateways[0].WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(fmt.Sprintf(`{"id":"d%d","pk":"p"}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	since := t0.Add(time.Second)
	st.set(t0.Add(2*time.Second), nil)
	local.Set(t0.Add(2 * time.Second))
	for i, e := range gateways {
		if _, err := e.DeleteItem(ctx, DeleteItemParams{ItemRef: ref, ID: fmt.Sprintf("d%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := gateways[0].ChangeFeed(ctx, ChangeFeedParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, Mode: AllVersionsAndDeletes, Start: StartTime, Since: since, MaxItemCount: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range page.Items {
		var rec struct {
			Metadata struct {
				OperationType string `json:"operationType"`
				ID            string `json:"id"`
				Crts          int64  `json:"crts"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(it, &rec); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s at %+d", rec.Metadata.OperationType, rec.Metadata.ID, rec.Metadata.Crts-t0.Unix()))
	}
	if want := "delete d0 at +2, delete d1 at +2, delete d2 at +2"; strings.Join(got, ", ") != want {
		t.Errorf("the deletes since +1 s: %s, want %s", strings.Join(got, ", "), want)
	}
}

// A gateway whose own clock runs 20 s ahead, over a store that owns the
// clock, purges by the store's clock: the clock that paces its purger
// (StampClock) raises no judgement, so an item due in 10 s by the store's
// clock is neither purged nor counted as due, and another gateway still
// reads it.
func TestAFastGatewayPurgesByTheStoresClock(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	_, local, gateways := skewedGateways(t, t0, 0, 20*time.Second)
	ctx := context.Background()
	a, fast := gateways[0], gateways[1]
	createDBAndContainer(t, a, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":10}`)
	ref := batchRef(`["p"]`)
	if _, err := a.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(`{"id":"x","pk":"p"}`)}); err != nil {
		t.Fatal(err)
	}
	paced := fast.StampClock(clock.Skewed{Clock: local, Offset: 20 * time.Second})
	due, err := fast.CountDue(ctx, ttl.CountDueParams{Container: "dbs/db/colls/c", Now: paced.Now(), Max: 10})
	if err != nil || due != 0 {
		t.Fatalf("counted due: %d, %v; want 0", due, err)
	}
	res, err := fast.PurgeDue(ctx, ttl.PurgeParams{Container: "dbs/db/colls/c", Now: paced.Now(), Limit: 10})
	if err != nil || len(res.Items) != 0 {
		t.Fatalf("purged %d, %v; want 0", len(res.Items), err)
	}
	if _, err := a.ReadItem(ctx, ReadItemParams{ItemRef: ref, ID: "x"}); err != nil {
		t.Fatalf("read after the fast gateway's purge: %v", err)
	}
}

// Over a store shared by gateways a TTL setting change is dated ahead of
// the store's clock, and its answer waits for that instant: a write sent
// on the answer is judged by the new setting. Before, an item with
// "ttl": 1 written on the answer to turning TTL off, in the last 200 ms of
// a second, was judged under the old setting, expired, and was purged.
func TestASettingChangeIsInForceWhenAnswered(t *testing.T) {
	st := &clockedStore{Store: teststore.Open(t), real: true}
	e, err := New(Config{Store: storage.WithChecks(st), Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	createDBAndContainer(t, e, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":-1}`)
	for i := range 3 {
		if _, err := e.ReplaceContainer(ctx, "db", "c", batchJSON(t, fmt.Sprintf(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":%d}`, i+1)), ""); err != nil {
			t.Fatal(err)
		}
		answered := time.Now()
		var from time.Time
		if err := st.View(ctx, func(r storage.Reader) error {
			c, err := e.loadContainer(r, "db", "c")
			from = c.TTL.Current().From
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if answered.Before(from) {
			t.Fatalf("change %d answered %v before its instant", i, from.Sub(answered))
		}
	}
}
