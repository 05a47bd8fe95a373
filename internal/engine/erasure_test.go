package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// erasureEnv is an engine on Pebble in a directory, with a manual clock,
// its purger and its erasure loop.
type erasureEnv struct {
	t      *testing.T
	dir    string
	store  *pebblestore.Store
	e      *Engine
	clock  *clock.Manual
	purger *ttl.Purger
	erase  *ttl.Erasure
}

func newErasureEnv(t *testing.T, dir string, clk *clock.Manual) *erasureEnv {
	t.Helper()
	st, err := pebblestore.Open(pebblestore.Options{Dir: dir, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Store: st, Clock: clk, EraseDeadline: time.Hour})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return &erasureEnv{t: t, dir: dir, store: st, e: e, clock: clk,
		purger: ttl.New(ttl.Config{Target: e, Clock: clk}),
		erase:  ttl.NewErasure(ttl.ErasureConfig{Target: e, Clock: clk})}
}

func (env *erasureEnv) close() {
	if err := env.store.Close(); err != nil {
		env.t.Fatal(err)
	}
}

// purgeAll runs purge passes until nothing expired is left.
func (env *erasureEnv) purgeAll(ctx context.Context) {
	env.t.Helper()
	for i := 0; i < 10000; i++ {
		res, err := env.purger.Pass(ctx)
		if err != nil {
			env.t.Fatal(err)
		}
		if !res.More {
			return
		}
	}
	env.t.Fatal("the purge does not finish")
}

// search returns the markers found in some file of the data directory.
func (env *erasureEnv) search(markers []string) map[string][]string {
	env.t.Helper()
	needles := make([][]byte, len(markers))
	for i, m := range markers {
		needles[i] = []byte(m)
	}
	found, err := pebblestore.SearchFiles(env.dir, needles)
	if err != nil {
		env.t.Fatal(err)
	}
	return found
}

func newMarker(t *testing.T) string {
	t.Helper()
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "mk" + hex.EncodeToString(b)
}

// TestB4_ExpiredBytesAreErased is ttl.md B4 end to end on Pebble files:
// items whose bodies and indexed values hold random markers expire with a
// mix of TTLs (some replaced before, so older versions and the change
// feed's copies exist too), others are deleted by users from a container
// that asks for erasure on delete, and a third container is dropped; live
// items hold markers of their own. Until the erasure's time the expired
// markers are still in the files (so the search can fail); past it none
// is in any file, every live marker still is and reads back, and the same
// holds after a restart.
func TestB4_ExpiredBytesAreErased(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewManual(batchT0)
	env := newErasureEnv(t, dir, clk)
	e := env.e
	if _, err := e.CreateDatabase(ctx, batchJSON(t, `{"id":"db"}`), nil); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`{"id":"ttl","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1,"changeFeedPolicy":{"retentionDuration":1440}}`,
		`{"id":"del","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"mayflyErasure":{"deadlineSeconds":120,"onDelete":true},"changeFeedPolicy":{"retentionDuration":1440}}`,
		`{"id":"drop","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"changeFeedPolicy":{"retentionDuration":1440}}`,
	} {
		if _, err := e.CreateContainer(ctx, "db", batchJSON(t, body), nil); err != nil {
			t.Fatal(err)
		}
	}
	var gone, live []string
	write := func(coll, id, pk string, ttlSecs int, mode WriteMode) (string, string) {
		t.Helper()
		body, indexed := newMarker(t), newMarker(t)
		doc := fmt.Sprintf(`{"id":%q,"pk":%q,"body":"the body holds %s here","tag":%q,"n":%d`, id, pk, body, indexed, len(gone))
		if ttlSecs != 0 {
			doc += fmt.Sprintf(`,"ttl":%d`, ttlSecs)
		}
		doc += "}"
		ref := ItemRef{DB: "db", Coll: coll}
		ref.PartitionKey, ref.HasKey = batchRef(`["`+pk+`"]`).PartitionKey, true
		if _, err := e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: mode, ID: id, Body: []byte(doc)}); err != nil {
			t.Fatalf("write %s/%s: %v", coll, id, err)
		}
		return body, indexed
	}
	const n = 240
	for i := 0; i < n; i++ {
		pk := fmt.Sprintf("p%d", i%7)
		id := fmt.Sprintf("item%d", i)
		switch i % 4 {
		case 0: // expires after a minute
			b, x := write("ttl", id, pk, 60, ModeCreate)
			gone = append(gone, b, x)
		case 1: // replaced, then expires after ten minutes: both versions go
			b, x := write("ttl", id, pk, 600, ModeCreate)
			gone = append(gone, b, x)
			b, x = write("ttl", id, pk, 600, ModeReplace)
			gone = append(gone, b, x)
		case 2: // never expires
			b, x := write("ttl", id, pk, 0, ModeCreate)
			live = append(live, b, x)
		case 3: // deleted by its user: half of them
			b, x := write("del", id, pk, 0, ModeCreate)
			if i%8 == 3 {
				gone = append(gone, b, x)
			} else {
				live = append(live, b, x)
			}
			b, x = write("drop", id, pk, 0, ModeCreate)
			gone = append(gone, b, x)
		}
	}
	for i := 3; i < n; i += 8 {
		ref := ItemRef{DB: "db", Coll: "del"}
		ref.PartitionKey, ref.HasKey = batchRef(fmt.Sprintf(`["p%d"]`, i%7)).PartitionKey, true
		if _, err := e.DeleteItem(ctx, DeleteItemParams{ItemRef: ref, ID: fmt.Sprintf("item%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.DeleteContainer(ctx, "db", "drop", ""); err != nil {
		t.Fatal(err)
	}
	clk.Advance(11 * time.Minute)
	env.purgeAll(ctx)

	backlog, err := e.ErasureBacklog(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	queued := map[string]int{}
	for _, b := range backlog {
		queued[b.Label] = b.Items
	}
	if queued["dbs/db/colls/ttl"] != n/2 || queued["dbs/db/colls/del"] != n/8 || len(queued) != 3 {
		t.Fatalf("erasure queues %v, want %d for ttl, %d for del and the dropped container", queued, n/2, n/8)
	}

	// Eleven minutes on, the deleted items (a deadline of two minutes)
	// are erased; the expired ones and the dropped container (an hour)
	// are not yet, and their bytes are there to be found.
	if err := env.erase.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if found := env.search(gone); len(found) < len(gone)/2 {
		t.Fatalf("before erasure %d of %d expired markers are in the files: the search finds nothing", len(found), len(gone))
	}
	if backlog, err = e.ErasureBacklog(ctx, 1000); err != nil || len(backlog) != 2 {
		t.Fatalf("erasure queues after the first pass: %+v, %v; want the expired items' and the dropped container's", backlog, err)
	}

	// Past half of the hour: everything queued is erased.
	clk.Advance(31 * time.Minute)
	if err := env.erase.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for m, files := range env.search(gone) {
			t.Errorf("%s: expired or deleted marker %s is in %v", when, m, files)
		}
		if found := env.search(live); len(found) != len(live) {
			t.Errorf("%s: %d of %d live markers are in the files", when, len(found), len(live))
		}
		for i := 2; i < n; i += 4 {
			ref := ItemRef{DB: "db", Coll: "ttl"}
			ref.PartitionKey, ref.HasKey = batchRef(fmt.Sprintf(`["p%d"]`, i%7)).PartitionKey, true
			if _, err := env.e.ReadItem(ctx, ReadItemParams{ItemRef: ref, ID: fmt.Sprintf("item%d", i)}); err != nil {
				t.Errorf("%s: live item%d: %v", when, i, err)
			}
		}
	}
	check("after erasure")
	if backlog, err := e.ErasureBacklog(ctx, 1000); err != nil || len(backlog) != 0 {
		t.Errorf("erasure queues after erasure: %+v, %v", backlog, err)
	}
	// The feed keeps the expiry records, with ids and no body.
	feed, err := e.ChangeFeed(ctx, ChangeFeedParams{ItemRef: ItemRef{DB: "db", Coll: "ttl"}, Mode: AllVersionsAndDeletes, Start: StartBeginning, MaxItemCount: 10000})
	if err != nil {
		t.Fatal(err)
	}
	expiries := 0
	for _, it := range feed.Items {
		if strings.Contains(string(it), `"timeToLiveExpired":true`) {
			expiries++
		}
	}
	if expiries != n/2 {
		t.Errorf("the change feed holds %d expiry records after erasure, want %d", expiries, n/2)
	}

	env.close()
	env = newErasureEnv(t, dir, clk)
	defer env.close()
	check("after a restart")
}
