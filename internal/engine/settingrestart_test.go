package engine

import (
	"context"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
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
	if _, err := e.CreateDatabase(ctx, batchJSON(t, `{"id":"db"}`), nil); err != nil {
		t.Fatal(err)
	}
	container := func(defaultTTL string) string {
		return `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":` + defaultTTL + `}`
	}
	if _, err := e.CreateContainer(ctx, "db", batchJSON(t, container("90")), nil); err != nil {
		t.Fatal(err)
	}
	ref := batchRef(`["p"]`)
	ref.Coll = "c"
	if _, err := e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(`{"id":"x","pk":"p"}`)}); err != nil {
		t.Fatal(err)
	}
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
