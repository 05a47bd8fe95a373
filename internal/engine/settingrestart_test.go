package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// TestB1_ChangeAfterRestartAtTheSameInstant: an engine started on a store
// whose container setting changed at the clock's current reading judges
// items by that setting from that instant, so a change it makes next must
// not be dated into the same instant, where it would replace the setting
// as one that was never in force and bring back an item it had answered
// 404 for. (The metamorphic test found it: restarts and setting changes
// with a manual clock that had not moved.)
func TestB1_ChangeAfterRestartAtTheSameInstant(t *testing.T) {
	s, err := pebblestore.Open(pebblestore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	clk := clock.NewManual(batchT0.Add(600 * time.Millisecond))
	ctx := context.Background()
	open := func() *Engine {
		e, err := New(Config{Store: s, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := open()
	container := func(defaultTTL string) string {
		return `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":` + defaultTTL + `}`
	}
	ref := oneItem(t, e, container("90"))
	clk.Advance(30 * time.Second)
	// A read at this instant dates the change that follows a nanosecond
	// after it.
	if _, err := e.ReadItem(ctx, ReadItemParams{ItemRef: ref, ID: "x"}); err != nil {
		t.Fatal(err)
	}
	// A default of 3 s expires x at once (ttl.md A5).
	if _, err := e.ReplaceContainer(ctx, "db", "c", batchJSON(t, container("3")), ""); err != nil {
		t.Fatal(err)
	}

	e = open() // a restart: the clock has not moved
	if _, err := e.ReadItem(ctx, ReadItemParams{ItemRef: ref, ID: "x"}); ErrorCode(err) != NotFound {
		t.Fatalf("read x after the restart: %v, want NotFound (expired under a default of 3 s)", err)
	}
	if _, err := e.ReplaceContainer(ctx, "db", "c", batchJSON(t, container("-1")), ""); err != nil {
		t.Fatal(err)
	}
	for _, when := range []string{"at the same instant", "later"} {
		if res, err := e.ReadItem(ctx, ReadItemParams{ItemRef: ref, ID: "x"}); ErrorCode(err) != NotFound {
			t.Fatalf("read x %s, after defaultTtl -1: %v %s, want NotFound (expiry is final, ttl.md B1)", when, err, resBody(res))
		}
		clk.Advance(time.Second)
	}
}

func resBody(res *ItemResult) string {
	if res == nil {
		return ""
	}
	return string(res.Body)
}

// TestB1_ChangeAfterAPurgeAtTheSameInstant: a purge judges items expired
// at its instant, so a setting change after it is dated after that instant
// too (docs/design/ttl.md, "The instant of a change"): two items due at
// the same second share a fate, whether the purge's batch took one or
// both. Without that, a change at the purge's very instant took effect
// from it, and the item the batch left behind came back under the new
// setting while the other was purged as expired.
func TestB1_ChangeAfterAPurgeAtTheSameInstant(t *testing.T) {
	be := newBatchEnv(t, "-1")
	ctx := context.Background()
	ref := batchRef(`["p"]`)
	for _, id := range []string{"a", "b"} {
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(`{"id":"` + id + `","pk":"p","ttl":3}`)}); err != nil {
			t.Fatal(err)
		}
	}
	be.clock.Advance(3 * time.Second) // both due at this very instant
	res, err := be.e.PurgeDue(ctx, ttl.PurgeParams{Container: "dbs/db/colls/c", Now: be.clock.Now(), Limit: 1})
	if err != nil || len(res.Items) != 1 {
		t.Fatalf("purge one: %+v, %v", res, err)
	}
	if _, err := be.e.ReplaceContainer(ctx, "db", "c", batchJSON(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`), ""); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if res, err := be.e.ReadItem(ctx, ReadItemParams{ItemRef: ref, ID: id}); ErrorCode(err) != NotFound {
			t.Errorf("read %s after TTL was turned off: %v %s, want NotFound (expired at the purge's instant, ttl.md B1)", id, err, resBody(res))
		}
	}
}

// TestB1_RestartWithTheClockSetBack: an item answered 404 as expired stays
// expired after a restart whose clock reads earlier than that answer, as
// after a time server set it back, while the purge has not yet deleted
// it: the restarted engine judges from the floor the first recorded.
func TestB1_RestartWithTheClockSetBack(t *testing.T) {
	s, err := pebblestore.Open(pebblestore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	open := func(clk clock.Clock) *Engine {
		e, err := New(Config{Store: s, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	clk := clock.NewManual(batchT0)
	e := open(clk)
	ref := oneItem(t, e, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":2}`)
	att := AttachmentRef{ItemRef: ref, ItemID: "x"}
	if _, _, err := e.CreateAttachment(ctx, att, batchJSON(t, `{"id":"a1","contentType":"text/plain","media":"m"}`), false); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second)
	if _, err := e.ReadItem(ctx, ReadItemParams{ItemRef: ref, ID: "x"}); ErrorCode(err) != NotFound {
		t.Fatalf("read x 3 s after its write: %v, want NotFound", err)
	}

	e.floorWrites.Wait() // the floor is recorded in the background
	back := clock.NewManual(batchT0.Add(-5 * time.Minute))
	e = open(back)
	if res, err := e.ReadItem(ctx, ReadItemParams{ItemRef: ref, ID: "x"}); ErrorCode(err) != NotFound {
		t.Fatalf("read x after a restart with the clock 5 min back: %v %s, want NotFound (ttl.md B1)", err, resBody(res))
	}
	// Its attachments went with it.
	if _, err := e.ReadAttachment(ctx, att, "a1"); ErrorCode(err) != NotFound {
		t.Errorf("read x's attachment after the restart: %v, want NotFound", err)
	}
	if _, _, err := e.ListAttachments(ctx, att); ErrorCode(err) != NotFound {
		t.Errorf("list x's attachments after the restart: %v, want NotFound", err)
	}
	if _, _, err := e.CreateAttachment(ctx, att, batchJSON(t, `{"id":"a2","contentType":"text/plain","media":"m"}`), false); ErrorCode(err) != NotFound {
		t.Errorf("attach to x after the restart: %v, want NotFound", err)
	}
	// The purger, on the clock set back, counts and purges it: it judges
	// as the requests do.
	if n, err := e.CountDue(ctx, ttl.CountDueParams{Container: "dbs/db/colls/c", Now: back.Now(), Max: 10}); err != nil || n != 1 {
		t.Errorf("expired items awaiting the purge after the restart: %d %v, want 1", n, err)
	}
	if got := e.StampClock(back).Now(); got.Before(batchT0.Add(3 * time.Second)) {
		t.Errorf("the purger's clock after the restart reads %v, before the answer's %v", got, batchT0.Add(3*time.Second))
	}
	if res, err := e.PurgeDue(ctx, ttl.PurgeParams{Container: "dbs/db/colls/c", Now: back.Now(), Limit: 10}); err != nil || len(res.Items) != 1 {
		t.Errorf("purge after the restart: %d items %v, want x", len(res.Items), err)
	}
	// Writes wait at the floor too: an item written now is not dated
	// before the answer above.
	res, err := e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(`{"id":"y","pk":"p"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var y struct {
		Ts int64 `json:"_ts"`
	}
	if err := json.Unmarshal(res.Body, &y); err != nil || y.Ts < batchT0.Add(3*time.Second).Unix() {
		t.Fatalf("y's _ts %d (%v), want at least the judgement's %d", y.Ts, err, batchT0.Add(3*time.Second).Unix())
	}
}

// refusingStore refuses every write while refuse is set, counting them.
type refusingStore struct {
	storage.Store
	refuse atomic.Bool
	tries  atomic.Int64
}

func (s *refusingStore) Update(ctx context.Context, fn func(storage.Txn) error) error {
	if s.refuse.Load() {
		s.tries.Add(1)
		return storage.ErrNoSpace
	}
	return s.Store.Update(ctx, fn)
}

// A store that refuses writes (a full disk) fails no read for the clock's
// floor, and is asked to record it once a lease, not by every read.
func TestClockFloorOnAStoreThatRefusesWrites(t *testing.T) {
	s := &refusingStore{Store: teststore.Open(t)}
	clk := clock.NewManual(batchT0)
	e, err := New(Config{Store: s, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref := oneItem(t, e, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	e.floorWrites.Wait()
	s.refuse.Store(true)
	for _, step := range []struct {
		advance time.Duration
		tries   int64
	}{{2 * time.Second, 1}, {500 * time.Millisecond, 1}, {time.Second, 2}} {
		clk.Advance(step.advance)
		for range 50 {
			if _, err := e.ReadItem(ctx, ReadItemParams{ItemRef: ref, ID: "x"}); err != nil {
				t.Fatalf("a read while the store refuses writes: %v", err)
			}
			e.floorWrites.Wait()
		}
		if got := s.tries.Load(); got != step.tries {
			t.Fatalf("after %v more: %d refused records of the floor, want %d", step.advance, got, step.tries)
		}
	}
}

// oneItem creates database db, in it the container container describes
// (its id c, partitioned by /pk), and in it item x of partition key p,
// and returns x's reference.
func oneItem(t *testing.T, e *Engine, container string) ItemRef {
	t.Helper()
	ctx := context.Background()
	if _, err := e.CreateDatabase(ctx, batchJSON(t, `{"id":"db"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer(ctx, "db", batchJSON(t, container), nil); err != nil {
		t.Fatal(err)
	}
	ref := batchRef(`["p"]`)
	ref.Coll = "c"
	if _, err := e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(`{"id":"x","pk":"p"}`)}); err != nil {
		t.Fatal(err)
	}
	return ref
}

// slowStore takes its time over every write, as a busy disk does.
type slowStore struct {
	storage.Store
	delay time.Duration
}

func (s *slowStore) Update(ctx context.Context, fn func(storage.Txn) error) error {
	time.Sleep(s.delay)
	return s.Store.Update(ctx, fn)
}

// The first stamp after a quiet spell is recorded before its request is
// answered: answered first, a crash then and a restart with the clock set
// back would judge by an instant before the answer's, and an item the
// answer found expired would come back (ttl.md B1).
func TestFloorRecordedBeforeTheFirstAnswerAfterAQuietSpell(t *testing.T) {
	base := teststore.Open(t)
	if teststore.Backend() == "postgres" {
		t.Skip("PostgreSQL's clock orders the stamps; no floor is kept")
	}
	clk := clock.NewManual(batchT0)
	e, err := New(Config{Store: &slowStore{Store: base, delay: 20 * time.Millisecond}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref := oneItem(t, e, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":5}`)
	e.floorWrites.Wait()
	clk.Advance(10 * time.Second) // x expired 5 s ago; nothing ran since
	if _, err := e.ReadItem(ctx, ReadItemParams{ItemRef: ref, ID: "x"}); ErrorCode(err) != NotFound {
		t.Fatalf("read x: %v, want NotFound", err)
	}
	// The read has been answered: its instant is on record.
	if err := base.View(ctx, func(r storage.Reader) error {
		v, err := r.Get(floorKey)
		if err != nil {
			return err
		}
		if got, want := time.Unix(0, int64(binary.BigEndian.Uint64(v))), clk.Now(); got.Before(want) {
			t.Errorf("the floor on record is %v, before the read's instant %v", got, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.floorWrites.Wait()
}
