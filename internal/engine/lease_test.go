package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// sharedEnv is n gateways (engines) over one store that owns the clock.
type sharedEnv struct {
	t        *testing.T
	st       *clockedStore
	gateways []*Engine
	now      time.Time
}

func newSharedEnv(t *testing.T, n int) *sharedEnv {
	t.Helper()
	base := teststore.Open(t)
	env := &sharedEnv{t: t, now: cfT0}
	env.st = &clockedStore{Store: base, now: cfT0}
	for range n {
		e, err := New(Config{Store: storage.WithChecks(env.st), Clock: clock.NewManual(cfT0)})
		if err != nil {
			t.Fatal(err)
		}
		env.gateways = append(env.gateways, e)
	}
	return env
}

// advance moves the store's clock.
func (env *sharedEnv) advance(d time.Duration) {
	env.now = env.now.Add(d)
	env.st.set(env.now, nil)
}

// purge runs one batch of gateway g's purge of container c.
func (env *sharedEnv) purge(g int, limit int) ttl.PurgeResult {
	env.t.Helper()
	res, err := env.gateways[g].PurgeDue(context.Background(), ttl.PurgeParams{Container: "dbs/db/colls/c", Now: env.now, Limit: limit})
	if err != nil {
		env.t.Fatalf("gateway %d purge: %v", g, err)
	}
	return res
}

// The purge of a container has one owner among the gateways: the holder of
// its lease, renewed while it works. Another gateway takes over once the
// holder stops renewing for one term, with a new fencing token, and the old
// holder is refused from then on. Every expired item is deleted once and
// reported once in the all-versions change feed.
func TestPurgeLeaseOneOwner(t *testing.T) {
	env := newSharedEnv(t, 2)
	ctx := context.Background()
	a := env.gateways[0]
	createDBAndContainer(t, a, `{"id":"c",`+pkDef+`,"defaultTtl":-1,"changeFeedPolicy":{"retentionDuration":10}}`)
	const n = 60
	for i := range n {
		body := fmt.Sprintf(`{"id":"i%d","pk":"p%d","ttl":1}`, i, i%5)
		if _, err := env.gateways[i%2].WriteItem(ctx, WriteItemParams{ItemRef: batchRef(fmt.Sprintf(`["p%d"]`, i%5)), Mode: ModeCreate, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	env.advance(2 * time.Second)

	purged := 0
	take := func(g, want int) {
		t.Helper()
		res := env.purge(g, 10)
		if res.Elsewhere != 0 {
			t.Fatalf("gateway %d was refused (another holds it for %v); want it to purge", g, res.Elsewhere)
		}
		if len(res.Items) != want {
			t.Fatalf("gateway %d purged %d, want %d", g, len(res.Items), want)
		}
		purged += len(res.Items)
	}
	refused := func(g int) {
		t.Helper()
		res := env.purge(g, 10)
		if res.Elsewhere <= 0 || res.Elsewhere > DefaultLeaseTerm || len(res.Items) != 0 {
			t.Fatalf("gateway %d: purged %d, elsewhere %v; want it refused", g, len(res.Items), res.Elsewhere)
		}
	}

	take(0, 10) // a takes the lease
	refused(1)
	env.advance(2 * time.Second)
	take(0, 10) // renewed: less than half the term was left
	env.advance(2 * time.Second)
	refused(1) // the renewal holds past the first term
	// a stops; after one term b takes over.
	env.advance(DefaultLeaseTerm)
	take(1, 10)
	refused(0) // a's token is fenced off
	take(1, 10)
	env.advance(DefaultLeaseTerm + time.Millisecond)
	take(0, 10) // b lapsed in turn: a takes a new token
	refused(1)
	take(0, 10)
	if res := env.purge(0, 10); len(res.Items) != 0 || res.More {
		t.Fatalf("a last purge found %d items, more %v", len(res.Items), res.More)
	}
	if purged != n {
		t.Fatalf("purged %d items, want %d", purged, n)
	}

	ce := &cfEnv{t: t, e: env.gateways[1]}
	items, _ := ce.drain(all("c"))
	seen := map[string]int{}
	for _, m := range items {
		md := m["metadata"].(map[string]any)
		if md["timeToLiveExpired"] == true {
			seen[md["id"].(string)]++
		}
	}
	if len(seen) != n {
		t.Errorf("%d items have expiry records, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("%s: %d expiry records", id, c)
		}
	}
}

// A store of one process needs no lease: its purge writes none, so a
// restart purges at once instead of waiting out a lease of its last run.
func TestNoLeaseOverAStoreOfOneProcess(t *testing.T) {
	ce := newCFEnv(t)
	ce.coll("c", pkDef+`,"defaultTtl":1`)
	ce.write("c", ModeCreate, `{"id":"x","pk":"p"}`)
	ce.clock.Advance(2 * time.Second)
	if n := ce.purge("c"); n != 1 {
		t.Fatalf("purged %d, want 1", n)
	}
	if n := countPrefix(t, ce.store, []byte{famLease}); n != 0 {
		t.Fatalf("%d lease records over a store of one process", n)
	}
}

// A TTL setting change through one gateway of a shared store is dated a
// little ahead of the store's clock and committed before that instant, so
// an expiry another gateway judged before the commit stays final (ttl.md
// B1): here item x, expired at t0+10 under defaultTtl 10, is judged so at
// t0+10.05 by one gateway, while the other lengthens the TTL to 100 with a
// transaction that read the clock at t0+9.99. Every later read agrees.
func TestSettingChangeAcrossGatewaysKeepsExpiryFinal(t *testing.T) {
	env := newSharedEnv(t, 2)
	ctx := context.Background()
	a, b := env.gateways[0], env.gateways[1]
	createDBAndContainer(t, a, `{"id":"c",`+pkDef+`,"defaultTtl":10}`)
	ref := batchRef(`["p"]`)
	write := func(id string) {
		t.Helper()
		if _, err := a.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(`{"id":"` + id + `","pk":"p"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	visible := func(e *Engine, id string) bool {
		t.Helper()
		_, err := e.ReadItem(ctx, ReadItemParams{ItemRef: ref, ID: id})
		var ee *Error
		switch {
		case err == nil:
			return true
		case errors.As(err, &ee) && ee.Code == NotFound:
			return false
		}
		t.Fatalf("read %s: %v", id, err)
		return false
	}
	write("x")
	env.advance(5 * time.Second)
	write("y")
	env.advance(4990 * time.Millisecond) // t0+9.99: b's transaction reads the clock
	if _, err := b.ReplaceContainer(ctx, "db", "c", batchJSON(t, `{"id":"c",`+pkDef+`,"defaultTtl":100}`), ""); err != nil {
		t.Fatal(err)
	}
	at := env.st.deadline
	if want := env.now.Add(settingLead - settingMargin); !at.Equal(want) {
		t.Fatalf("the change's commit deadline is %v, want the store's clock plus %v less %v, %v", at, settingLead, settingMargin, want)
	}
	env.advance(60 * time.Millisecond) // t0+10.05, before the change's instant
	if visible(a, "x") || visible(b, "x") {
		t.Fatal("x, due at t0+10 under the setting in force until the change's instant, is visible at t0+10.05")
	}
	env.advance(time.Second)
	for _, e := range env.gateways {
		if visible(e, "x") {
			t.Fatal("x came back after the TTL was lengthened")
		}
		if !visible(e, "y") {
			t.Fatal("y, due at t0+105 under the new setting, is not visible")
		}
	}
}
