package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// cfEnv is an engine on in-memory Pebble and a manual clock with database
// "db"; containers are made by coll.
type cfEnv struct {
	t     *testing.T
	e     *Engine
	clock *clock.Manual
	store storage.Store
}

var cfT0 = time.Unix(1_700_000_000, 0).Add(500 * time.Millisecond)

func newCFEnv(t *testing.T) *cfEnv {
	t.Helper()
	s := teststore.Open(t)
	clk := clock.NewManual(cfT0)
	e, err := New(Config{Store: storage.WithChecks(s), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase(context.Background(), batchJSON(t, `{"id":"db"}`), nil); err != nil {
		t.Fatal(err)
	}
	return &cfEnv{t: t, e: e, clock: clk, store: s}
}

// coll creates container id from the JSON properties that follow its id,
// with a change feed policy (which all-versions mode needs) unless they
// set one.
func (ce *cfEnv) coll(id, props string) {
	ce.t.Helper()
	body := `{"id":"` + id + `"`
	if props != "" {
		body += "," + props
	}
	if !strings.Contains(props, "changeFeedPolicy") {
		body += `,"changeFeedPolicy":{"retentionDuration":1440}`
	}
	if _, err := ce.e.CreateContainer(context.Background(), "db", batchJSON(ce.t, body+"}"), nil); err != nil {
		ce.t.Fatal(err)
	}
}

func (ce *cfEnv) write(coll string, mode WriteMode, body string) {
	ce.t.Helper()
	var id struct{ ID string }
	_ = json.Unmarshal([]byte(body), &id)
	if _, err := ce.e.WriteItem(context.Background(), WriteItemParams{ItemRef: ItemRef{DB: "db", Coll: coll}, Mode: mode, ID: id.ID, Body: []byte(body)}); err != nil {
		ce.t.Fatalf("write %s: %v", body, err)
	}
}

func (ce *cfEnv) delete(coll, key, id string) {
	ce.t.Helper()
	if _, err := ce.e.DeleteItem(context.Background(), DeleteItemParams{ItemRef: cfRef(coll, key), ID: id}); err != nil {
		ce.t.Fatalf("delete %s: %v", id, err)
	}
}

func cfRef(coll, key string) ItemRef {
	ref := batchRef(key)
	ref.Coll = coll
	return ref
}

// purge runs PurgeDue on coll until it has nothing left.
func (ce *cfEnv) purge(coll string) int {
	ce.t.Helper()
	n := 0
	for {
		res, err := ce.e.PurgeDue(context.Background(), ttl.PurgeParams{Container: "dbs/db/colls/" + coll, Now: ce.clock.Now(), Limit: 100})
		if err != nil {
			ce.t.Fatal(err)
		}
		n += len(res.Items)
		if !res.More {
			return n
		}
	}
}

func (ce *cfEnv) feed(p ChangeFeedParams) *ChangeFeedPage {
	ce.t.Helper()
	page, err := ce.e.ChangeFeed(context.Background(), p)
	if err != nil {
		ce.t.Fatalf("change feed %+v: %v", p, err)
	}
	return page
}

// position is the position of a reader of one sequence at lsn.
func position(lsn uint64) FeedPosition { return FeedPosition{LSNs: []uint64{lsn}} }

// lsn is the one LSN of a page's position, or 0 when it has none or
// several.
func (p *ChangeFeedPage) lsn() uint64 {
	if len(p.Position.LSNs) != 1 || p.Position.Since != 0 {
		return 0
	}
	return p.Position.LSNs[0]
}

// drain reads a feed from p's start to the end, page by page, and
// returns every item.
func (ce *cfEnv) drain(p ChangeFeedParams) ([]map[string]any, uint64) {
	ce.t.Helper()
	var out []map[string]any
	for range 10_000 {
		page := ce.feed(p)
		if len(page.Items) == 0 {
			return out, page.lsn()
		}
		for _, it := range page.Items {
			var m map[string]any
			if err := json.Unmarshal(it, &m); err != nil {
				ce.t.Fatalf("feed item %s: %v", it, err)
			}
			out = append(out, m)
		}
		p.Start, p.After = StartAfter, page.Position
	}
	ce.t.Fatal("the feed never ran dry")
	return nil, 0
}

// latest summarises a latest-version feed as "id@lsn" in order.
func latest(items []map[string]any) string {
	var s []string
	for _, m := range items {
		s = append(s, fmt.Sprintf("%v@%v", m["id"], m["_lsn"]))
	}
	return strings.Join(s, " ")
}

// versions summarises an all-versions feed: operation, id, LSN, and the
// previous image's LSN, with "ttl" for expiries.
func versions(items []map[string]any) string {
	var s []string
	for _, m := range items {
		md := m["metadata"].(map[string]any)
		id := md["id"]
		if c, ok := m["current"].(map[string]any); ok {
			id = c["id"]
		}
		e := fmt.Sprintf("%v:%v@%v", md["operationType"], id, md["lsn"])
		if p, ok := md["previousImageLSN"]; ok {
			e += fmt.Sprintf("<%v", p)
		}
		if md["timeToLiveExpired"] == true {
			e += "(ttl)"
		}
		s = append(s, e)
	}
	return strings.Join(s, " ")
}

func all(coll string) ChangeFeedParams {
	return ChangeFeedParams{ItemRef: ItemRef{DB: "db", Coll: coll}, Mode: AllVersionsAndDeletes}
}

func lv(coll string) ChangeFeedParams {
	return ChangeFeedParams{ItemRef: ItemRef{DB: "db", Coll: coll}, Mode: LatestVersion}
}

const pkDef = `"partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}`

func TestChangeFeedLatestVersion(t *testing.T) {
	ce := newCFEnv(t)
	ce.coll("c", pkDef)
	ce.write("c", ModeCreate, `{"id":"a","pk":"x"}`)        // 1
	ce.write("c", ModeCreate, `{"id":"b","pk":"y"}`)        // 2
	ce.write("c", ModeCreate, `{"id":"c","pk":"x"}`)        // 3
	ce.write("c", ModeReplace, `{"id":"a","pk":"x","n":1}`) // 4
	ce.write("c", ModeUpsert, `{"id":"b","pk":"y","n":1}`)  // 5
	ce.delete("c", `["x"]`, "c")                            // 6
	ce.write("c", ModeUpsert, `{"id":"d","pk":"z"}`)        // 7
	ce.write("c", ModeReplace, `{"id":"a","pk":"x","n":2}`) // 8

	items, etag := ce.drain(lv("c"))
	if got, want := latest(items), "b@5 d@7 a@8"; got != want {
		t.Fatalf("from the beginning: %s, want %s", got, want)
	}
	if etag != 8 {
		t.Errorf("caught-up etag %d, want 8", etag)
	}
	if items[2]["n"] != 2.0 || items[2]["_lsn"] != 8.0 || items[2]["_rid"] == nil {
		t.Errorf("latest version of a: %v", items[2])
	}

	// Paging by etag: each page ends on its last item's LSN.
	p := lv("c")
	p.MaxItemCount = 2
	page := ce.feed(p)
	if len(page.Items) != 2 || page.lsn() != 7 {
		t.Fatalf("first page of 2: %d items, etag %d", len(page.Items), page.lsn())
	}
	p.Start, p.After = StartAfter, page.Position
	if page = ce.feed(p); len(page.Items) != 1 || page.lsn() != 8 {
		t.Fatalf("second page: %d items, etag %d", len(page.Items), page.lsn())
	}
	p.After = page.Position
	if page = ce.feed(p); len(page.Items) != 0 || page.lsn() != 8 {
		t.Fatalf("caught up: %d items, etag %d; want 304 with 8", len(page.Items), page.lsn())
	}

	// From now: nothing, and the etag is the current LSN.
	now := lv("c")
	now.Start = StartNow
	if page = ce.feed(now); len(page.Items) != 0 || page.lsn() != 8 {
		t.Fatalf("from now: %d items, etag %d", len(page.Items), page.lsn())
	}
	ce.write("c", ModeReplace, `{"id":"b","pk":"y","n":2}`) // 9
	now.Start, now.After = StartAfter, page.Position
	if items, _ := ce.drain(now); latest(items) != "b@9" {
		t.Errorf("after now: %s", latest(items))
	}

	// A delete after the etag only advances it.
	ce.delete("c", `["z"]`, "d") // 10
	p.After = position(9)
	if page = ce.feed(p); len(page.Items) != 0 || page.lsn() != 10 {
		t.Errorf("after a delete: %d items, etag %d; want none and 10", len(page.Items), page.lsn())
	}
}

func TestChangeFeedScopes(t *testing.T) {
	ce := newCFEnv(t)
	ce.coll("h", `"partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2}`)
	ce.write("h", ModeCreate, `{"id":"1","t":"a","u":"x"}`)
	ce.write("h", ModeCreate, `{"id":"2","t":"b","u":"x"}`)
	ce.write("h", ModeCreate, `{"id":"3","t":"a","u":"y"}`)
	ce.write("h", ModeCreate, `{"id":"4","t":"a"}`)

	key := func(h string) ChangeFeedParams {
		p := lv("h")
		p.ItemRef = cfRef("h", h)
		return p
	}
	def := partition.Definition{Paths: []string{"/t", "/u"}, Kind: partition.MultiHash, Version: 2}
	epkRange := func(k partition.Key) ChangeFeedParams {
		lo, hi, err := partition.EPKRange(def, k)
		if err != nil {
			t.Fatal(err)
		}
		p := lv("h")
		p.MinEPK, p.MaxEPK = lo, hi
		return p
	}
	for _, c := range []struct {
		name string
		p    ChangeFeedParams
		want string
	}{
		{"full key", key(`["a","x"]`), "1@1"},
		{"prefix", key(`["a"]`), "1@1 3@3 4@4"},
		{"undefined second level", key(`["a",{}]`), "4@4"},
		{"EPK prefix range", epkRange(partition.Key{partition.String("a")}), "1@1 3@3 4@4"},
		{"EPK of a full key", epkRange(partition.Key{partition.String("b"), partition.String("x")}), "2@2"},
		{"range 0", ChangeFeedParams{ItemRef: ItemRef{DB: "db", Coll: "h"}, RangeID: "0"}, "1@1 2@2 3@3 4@4"},
	} {
		items, _ := ce.drain(c.p)
		if got := latest(items); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
		ap := c.p
		ap.Mode = AllVersionsAndDeletes
		if items, _ := ce.drain(ap); strings.Count(versions(items), "create") != strings.Count(c.want, "@") {
			t.Errorf("%s, all versions: %s, want the creates of %s", c.name, versions(items), c.want)
		}
	}

	p := lv("h")
	p.RangeID = "1"
	_, err := ce.e.ChangeFeed(context.Background(), p)
	if e, ok := err.(*Error); !ok || e.Code != Gone || e.SubStatus != SubPartitionKeyRangeGone {
		t.Errorf("range 1: %v, want 410/1002", err)
	}
}

func TestChangeFeedStartTime(t *testing.T) {
	ce := newCFEnv(t)
	ce.coll("c", pkDef)
	for i := range 10 {
		ce.write("c", ModeCreate, fmt.Sprintf(`{"id":"%d","pk":"p"}`, i))
		ce.clock.Advance(time.Second)
	}
	// Far older history than the slack, which the start must skip.
	ce.clock.Advance(time.Hour)
	since := ce.clock.Now()
	ce.write("c", ModeCreate, `{"id":"late1","pk":"p"}`)
	ce.write("c", ModeReplace, `{"id":"3","pk":"p","n":1}`)
	for _, mode := range []ChangeFeedMode{LatestVersion, AllVersionsAndDeletes} {
		p := ChangeFeedParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, Mode: mode, Start: StartTime, Since: since}
		page := ce.feed(p)
		if len(page.Items) != 2 {
			t.Fatalf("mode %d from %v: %d items, want 2", mode, since, len(page.Items))
		}
		if page.Examined > 3 {
			t.Errorf("mode %d: examined %d entries for 2 items: the start did not seek", mode, page.Examined)
		}
		p.Since = since.Add(time.Hour)
		if page := ce.feed(p); len(page.Items) != 0 || page.lsn() != 12 {
			t.Errorf("mode %d from the future: %d items, etag %d", mode, len(page.Items), page.lsn())
		}
		p.Since = cfT0.Add(-time.Hour)
		if page := ce.feed(p); len(page.Items) != 11+int(mode) {
			t.Errorf("mode %d from the past: %d items", mode, len(page.Items))
		}
	}
}

// TestChangeFeedStartTimeReadsFromIt: a start from a time reads the log
// from the first change that reached it, not from minutes before: a
// container busy in the minutes before the time costs the first page no
// more than one that was idle.
func TestChangeFeedStartTimeReadsFromIt(t *testing.T) {
	ce := newCFEnv(t)
	ce.coll("c", pkDef)
	// 400 changes in the 4 minutes before the time.
	for i := range 400 {
		ce.write("c", ModeUpsert, fmt.Sprintf(`{"id":"%d","pk":"p%d"}`, i%50, i%7))
		ce.clock.Advance(600 * time.Millisecond)
	}
	since := ce.clock.Now().Add(time.Second).Truncate(time.Second)
	ce.clock.Set(since)
	for i := range 3 {
		ce.write("c", ModeCreate, fmt.Sprintf(`{"id":"late%d","pk":"p"}`, i))
	}
	for _, mode := range []ChangeFeedMode{LatestVersion, AllVersionsAndDeletes} {
		page := ce.feed(ChangeFeedParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, Mode: mode, Start: StartTime, Since: since})
		if len(page.Items) != 3 {
			t.Fatalf("mode %d: %d items, want 3", mode, len(page.Items))
		}
		if page.Examined > 3 {
			t.Errorf("mode %d: examined %d log entries for 3 changes", mode, page.Examined)
		}
	}
}

// TestChangeFeedStartTimeClockSteppedBack: with the clock stepped back by
// an hour across a restart that finds no floor (within a process, and
// from a recorded floor, stamps never go back), a
// start from a time still serves every change made at or after it,
// whichever side of the step.
func TestChangeFeedStartTimeClockSteppedBack(t *testing.T) {
	ce := newCFEnv(t)
	ce.coll("c", pkDef)
	// Old changes, then changes at T, then, the clock an hour back,
	// changes earlier than T.
	for i := range 20 {
		ce.write("c", ModeCreate, fmt.Sprintf(`{"id":"old%d","pk":"p"}`, i))
	}
	ce.clock.Advance(2 * time.Hour)
	at := ce.clock.Now().Truncate(time.Second)
	for i := range 5 {
		ce.write("c", ModeCreate, fmt.Sprintf(`{"id":"at%d","pk":"p"}`, i))
	}
	ce.clock = clock.NewManual(ce.clock.Now().Add(-time.Hour))
	// Without its clock's floor (a store that refused the floor's last
	// write, or one written before there was a floor), the engine stamps
	// by the clock as it finds it.
	ce.e.floorWrites.Wait()
	if err := ce.store.Update(context.Background(), func(tx storage.Txn) error { return tx.Delete(floorKey) }); err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Store: storage.WithChecks(ce.store), Clock: ce.clock})
	if err != nil {
		t.Fatal(err)
	}
	ce.e = e
	for i := range 40 {
		ce.write("c", ModeCreate, fmt.Sprintf(`{"id":"back%d","pk":"p"}`, i))
	}
	ids := func(items [][]byte) string {
		var out []string
		for _, it := range items {
			var v struct {
				ID      string
				Current struct{ ID string } // all versions and deletes
			}
			if err := json.Unmarshal(it, &v); err != nil {
				t.Fatal(err)
			}
			out = append(out, v.ID+v.Current.ID)
		}
		return strings.Join(out, " ")
	}
	for _, mode := range []ChangeFeedMode{LatestVersion, AllVersionsAndDeletes} {
		for _, c := range []struct {
			since time.Time
			want  int
			first string
		}{
			{at.Add(-30 * time.Minute), 5, "at0"},
			{at.Add(-90 * time.Minute), 45, "at0"},
		} {
			p := ChangeFeedParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, Mode: mode, Start: StartTime, Since: c.since, MaxItemCount: 100}
			got := ids(ce.feed(p).Items)
			if n := len(strings.Fields(got)); n != c.want || !strings.HasPrefix(got, c.first) {
				t.Errorf("mode %d from %v: %d changes (%s), want %d from %s", mode, c.since, n, got, c.want, c.first)
			}
		}
	}
	if _, err := ce.e.CheckIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The check finds an entry whose high-water went back.
	prefix := collPrefix(famFeedLatest, nil)
	err = ce.store.Update(context.Background(), func(tx storage.Txn) error {
		it, err := tx.NewIter(storage.IterParams{Lower: prefix, Upper: []byte{famFeedLatest + 1}})
		if err != nil {
			return err
		}
		var k, v []byte
		for ok := it.First(); ok; ok = it.Next() {
			k, v = bytes.Clone(it.Key()), bytes.Clone(it.Value())
		}
		if err := errors.Join(it.Err(), it.Close()); err != nil || k == nil {
			return fmt.Errorf("the last entry: %v", err)
		}
		ts, hw, epk, pk, err := decodeLatestEntry(v)
		if err != nil {
			return err
		}
		return tx.Set(k, encodeLatestEntry(ts, hw-7200, string(epk), pk))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ce.e.CheckIndexes(context.Background()); err == nil || !strings.Contains(err.Error(), "high-water") {
		t.Errorf("the check of a high-water gone back: %v", err)
	}
}

func TestSeekTime(t *testing.T) {
	ce := newCFEnv(t)
	prefix := []byte{'z'}
	// Entries at LSNs 10, 20, …, 100 with times 1…10, one pair inverted.
	times := map[uint64]int64{10: 1, 20: 2, 30: 3, 40: 5, 50: 4, 60: 6, 70: 7, 80: 8, 90: 9, 100: 10}
	err := ce.store.Update(context.Background(), func(tx storage.Txn) error {
		for lsn, ts := range times {
			k := append(bytes.Clone(prefix), make([]byte, 8)...)
			k[1], k[8] = 0, byte(lsn)
			v := make([]byte, 8)
			v[7] = byte(ts)
			if err := tx.Set(k, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lo     uint64
		target int64
		want   uint64
	}{
		{0, 0, 0}, {0, 1, 0}, {0, 2, 11}, {0, 3, 21}, {0, 6, 51}, {0, 10, 91}, {0, 11, 101}, {35, 2, 35}, {95, 11, 101},
	} {
		var got uint64
		err := ce.store.View(context.Background(), func(r storage.Reader) error {
			var err error
			got, err = seekTime(r, prefix, c.lo, seqBase(1), func(v []byte) (bool, error) { return int64(v[7]) >= c.target, nil })
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		// The answer is one past the last entry before the target: the
		// inverted pair (5 then 4) sits wholly on one side of every
		// target asked.
		if got != c.want {
			t.Errorf("seekTime(lo %d, target %d) = %d, want %d", c.lo, c.target, got, c.want)
		}
	}
}

// TestChangeFeedVersionsNeedAPolicy: the version log is kept only while
// the container's changeFeedPolicy sets a retention, as the service keeps
// intermediate versions and deletes only then. Without one a write logs
// no version and all-versions mode has nothing to show; records kept
// under a policy that is then removed are hidden at once and trimmed as
// later writes come.
func TestChangeFeedVersionsNeedAPolicy(t *testing.T) {
	ce := newCFEnv(t)
	ce.coll("c", pkDef+`,"changeFeedPolicy":{}`)
	versionKeys := func() int {
		t.Helper()
		n := 0
		err := ce.store.View(context.Background(), func(r storage.Reader) error {
			it, err := r.NewIter(storage.IterParams{Lower: []byte{famFeedVersion}, Upper: []byte{famFeedVersion + 1}})
			if err != nil {
				return err
			}
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			if err := it.Err(); err != nil {
				return err
			}
			return it.Close()
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	ce.write("c", ModeCreate, `{"id":"a","pk":"x"}`)       // 1
	ce.write("c", ModeUpsert, `{"id":"a","pk":"x","n":1}`) // 2
	ce.delete("c", `["x"]`, "a")                           // 3
	if items, _ := ce.drain(all("c")); len(items) != 0 || versionKeys() != 0 {
		t.Fatalf("without a policy: %d versions shown, %d kept", len(items), versionKeys())
	}
	withPolicy := `{"id":"c",` + pkDef + `,"changeFeedPolicy":{"retentionDuration":10}}`
	if _, err := ce.e.ReplaceContainer(context.Background(), "db", "c", batchJSON(t, withPolicy), ""); err != nil {
		t.Fatal(err)
	}
	ce.write("c", ModeCreate, `{"id":"b","pk":"x"}`) // 4
	if items, _ := ce.drain(all("c")); versions(items) != "create:b@4" || versionKeys() != 1 {
		t.Fatalf("with a policy: %s, %d kept", versions(items), versionKeys())
	}
	if _, err := ce.e.ReplaceContainer(context.Background(), "db", "c", batchJSON(t, `{"id":"c",`+pkDef+`}`), ""); err != nil {
		t.Fatal(err)
	}
	if items, _ := ce.drain(all("c")); len(items) != 0 {
		t.Fatalf("after the policy was removed: %s", versions(items))
	}
	for i := 5; i <= trimEvery; i++ {
		ce.write("c", ModeUpsert, `{"id":"b","pk":"x","n":`+strconv.Itoa(i)+`}`)
	}
	if n := versionKeys(); n != 0 {
		t.Errorf("%d version records left after %d more writes without a policy", n, trimEvery-4)
	}
}

func TestChangeFeedAllVersions(t *testing.T) {
	ce := newCFEnv(t)
	ce.coll("c", pkDef+`,"defaultTtl":-1`)
	ce.write("c", ModeCreate, `{"id":"a","pk":"x"}`)          // 1
	ce.write("c", ModeUpsert, `{"id":"a","pk":"x","n":1}`)    // 2
	ce.write("c", ModeCreate, `{"id":"b","pk":"y","ttl":5}`)  // 3
	ce.write("c", ModeCreate, `{"id":"c","pk":"y","ttl":10}`) // 4
	ce.delete("c", `["x"]`, "a")                              // 5
	// c's expiry is pushed back before it comes due: no expiry record.
	ce.clock.Advance(9 * time.Second)
	ce.write("c", ModeReplace, `{"id":"c","pk":"y","ttl":10}`) // 6
	if n := ce.purge("c"); n != 1 {                            // 7: b
		t.Fatalf("purged %d items, want b alone", n)
	}
	ce.clock.Advance(10 * time.Second)
	// c has expired; a create over its id removes it and logs the expiry
	// at the create's LSN, before the create.
	ce.write("c", ModeCreate, `{"id":"c","pk":"y"}`) // 8 (expiry of c, then the create)
	if n := ce.purge("c"); n != 0 {
		t.Fatalf("purged %d items after the create took c's place", n)
	}

	items, etag := ce.drain(all("c"))
	want := "create:a@1 replace:a@2<1 create:b@3 create:c@4 delete:a@5<2 replace:c@6<4 delete:b@7<3(ttl) delete:c@8<6(ttl) create:c@8"
	if got := versions(items); got != want {
		t.Fatalf("all versions:\n got %s\nwant %s", got, want)
	}
	if etag != 8 {
		t.Errorf("etag %d, want 8", etag)
	}

	// Shapes: a create has current and no previous; a delete has metadata
	// with the id, the partition key and the previous LSN, and no image.
	create, del, expiry := items[0], items[4], items[6]
	if _, ok := create["previous"]; ok || create["current"].(map[string]any)["_lsn"] != 1.0 {
		t.Errorf("create: %v", create)
	}
	md := del["metadata"].(map[string]any)
	if _, ok := del["current"]; ok || md["id"] != "a" || fmt.Sprint(md["partitionKey"]) != "map[pk:x]" ||
		md["timeToLiveExpired"] != false || md["previousImageLSN"] != 2.0 || del["previous"] != nil {
		t.Errorf("delete: %v", del)
	}
	md = expiry["metadata"].(map[string]any)
	if md["crts"].(float64) < float64(cfT0.Unix()+5) || fmt.Sprint(md["partitionKey"]) != "map[pk:y]" || expiry["previous"] != nil {
		t.Errorf("expiry of b (written at %d with ttl 5): %v", cfT0.Unix(), expiry)
	}

	// A page never splits an LSN: with one item per page, LSN 8 comes
	// whole.
	p := all("c")
	p.Start, p.After, p.MaxItemCount = StartAfter, position(7), 1
	if page := ce.feed(p); len(page.Items) != 2 || page.lsn() != 8 {
		t.Errorf("page at LSN 8 of one item: %d items, etag %d", len(page.Items), page.lsn())
	}

	// The latest-version feed holds c's new version alone.
	if items, _ := ce.drain(lv("c")); latest(items) != "c@8" {
		t.Errorf("latest version: %s", latest(items))
	}
}

func TestChangeFeedExpiredItemsNeverAppear(t *testing.T) {
	ce := newCFEnv(t)
	ce.coll("c", pkDef+`,"defaultTtl":3`)
	ce.write("c", ModeCreate, `{"id":"a","pk":"x"}`)
	ce.write("c", ModeCreate, `{"id":"b","pk":"x","ttl":-1}`)
	ce.clock.Advance(3 * time.Second)
	// Expired, not yet purged: absent from the latest-version feed.
	if items, _ := ce.drain(lv("c")); latest(items) != "b@2" {
		t.Fatalf("before the purge: %s", latest(items))
	}
	// B1: turning TTL off does not bring it back.
	if _, err := ce.e.ReplaceContainer(context.Background(), "db", "c", batchJSON(t, `{"id":"c",`+pkDef+`,"changeFeedPolicy":{"retentionDuration":1440}}`), ""); err != nil {
		t.Fatal(err)
	}
	if items, _ := ce.drain(lv("c")); latest(items) != "b@2" {
		t.Fatalf("after TTL was turned off: %s", latest(items))
	}
	ce.purge("c")
	if items, _ := ce.drain(all("c")); versions(items) != "create:a@1 create:b@2 delete:a@3<1(ttl)" {
		t.Fatalf("all versions: %s", versions(items))
	}
}

// TestChangeFeedExpiryOncePerItem: every expired item yields exactly one
// expiry record, never before it is due, whatever mix of purges and creates
// over expired ids removes them.
func TestChangeFeedExpiryOncePerItem(t *testing.T) {
	ce := newCFEnv(t)
	ce.coll("c", pkDef+`,"defaultTtl":-1`)
	const n = 300
	due := map[string]int64{}
	for i := range n {
		id := fmt.Sprintf("i%d", i)
		ttl := 1 + i%3
		ce.write("c", ModeCreate, fmt.Sprintf(`{"id":%q,"pk":"p%d","ttl":%d}`, id, i%7, ttl))
		due[id] = ce.clock.Now().Unix() + int64(ttl)
		if i%50 == 49 {
			ce.clock.Advance(700 * time.Millisecond)
			ce.purge("c")
		}
	}
	// Some expired ids are taken over by creates, which remove them.
	ce.clock.Advance(4 * time.Second)
	for i := 0; i < n; i += 10 {
		ce.write("c", ModeUpsert, fmt.Sprintf(`{"id":"i%d","pk":"p%d","ttl":-1}`, i, i%7))
	}
	ce.purge("c")
	items, _ := ce.drain(all("c"))
	seen := map[string]int{}
	for _, m := range items {
		md := m["metadata"].(map[string]any)
		if md["timeToLiveExpired"] != true {
			continue
		}
		id := md["id"].(string)
		seen[id]++
		if crts := int64(md["crts"].(float64)); crts < due[id] {
			t.Errorf("%s: expiry record at %d, before it was due at %d", id, crts, due[id])
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
	checkLatestIndex(t, ce, "c")
}

func TestChangeFeedRetention(t *testing.T) {
	ce := newCFEnv(t)
	ce.coll("c", pkDef+`,"changeFeedPolicy":{"retentionDuration":10}`)
	// A reader from now, one that read the first two, and one that read
	// all five.
	now := ce.feed(ChangeFeedParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, Mode: AllVersionsAndDeletes, Start: StartNow}).Position
	for i := range 5 {
		ce.write("c", ModeCreate, fmt.Sprintf(`{"id":"old%d","pk":"p"}`, i))
	}
	ce.clock.Advance(10*time.Minute + time.Second)
	// Hidden at once, before any trimming.
	if items, _ := ce.drain(all("c")); len(items) != 0 {
		t.Fatalf("records past retention: %s", versions(items))
	}
	// A reader whose next change is past retention has missed it: 400.
	resume := func(at FeedPosition) error {
		p := all("c")
		p.Start, p.After = StartAfter, at
		_, err := ce.e.ChangeFeed(context.Background(), p)
		return err
	}
	for _, at := range []FeedPosition{now, position(2)} {
		if err := resume(at); !isCode(err, BadRequest) {
			t.Errorf("resumed at %v with the changes after it past retention: %v, want 400", at, err)
		}
	}
	if err := resume(position(5)); err != nil {
		t.Errorf("resumed after the last change: %v", err)
	}
	ce.write("c", ModeCreate, `{"id":"new0","pk":"p"}`)
	ce.write("c", ModeCreate, `{"id":"new1","pk":"p"}`)
	ce.write("c", ModeCreate, `{"id":"new2","pk":"p"}`)
	if items, _ := ce.drain(all("c")); versions(items) != "create:new0@6 create:new1@7 create:new2@8" {
		t.Fatalf("after retention: %s", versions(items))
	}
	// Trimming runs at LSN trimEvery: write up to it.
	for i := 3; i < trimEvery-5; i++ {
		ce.write("c", ModeCreate, fmt.Sprintf(`{"id":"new%d","pk":"p"}`, i))
	}
	// The trim removed the five old records from the store, and the
	// low-water mark is past them.
	var left int
	var floor uint64
	err := ce.store.View(context.Background(), func(r storage.Reader) error {
		c, err := ce.e.loadContainer(r, "db", "c")
		if err != nil {
			return err
		}
		if floor, err = versionFloor(r, c.Rid, 0); err != nil {
			return err
		}
		return scanPrefix(r, collPrefix(famFeedVersion, c.Rid), func(_, _ []byte) (bool, error) {
			left++
			return true, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if left != trimEvery-5 || floor != 5 {
		t.Errorf("%d records left with floor %d; want the %d new ones, floor 5", left, floor, trimEvery-5)
	}
	// Trimmed past a reader's position: 400 too; at the floor, the next
	// change is kept.
	if err := resume(position(4)); !isCode(err, BadRequest) {
		t.Errorf("resumed before the trimmed records: %v, want 400", err)
	}
	if err := resume(position(5)); err != nil {
		t.Errorf("resumed at the last trimmed change: %v", err)
	}
	// The latest-version feed keeps every live item whatever the retention.
	if items, _ := ce.drain(lv("c")); len(items) != trimEvery {
		t.Errorf("latest version: %s", latest(items))
	}
}

// TestChangeFeedPageCostIsBounded: a page costs what it returns, not the
// history behind it.
func TestChangeFeedPageCostIsBounded(t *testing.T) {
	ce := newCFEnv(t)
	ce.coll("c", pkDef)
	for round := range 20 {
		for i := range 50 {
			ce.write("c", ModeUpsert, fmt.Sprintf(`{"id":"i%d","pk":"p","r":%d}`, i, round))
		}
	}
	p := lv("c")
	p.MaxItemCount = 10
	page := ce.feed(p)
	if len(page.Items) != 10 || page.Examined > 11 {
		t.Errorf("first page after 1000 writes to 50 items: %d items, %d examined", len(page.Items), page.Examined)
	}
	p.Start, p.After = StartAfter, page.Position
	ce.write("c", ModeUpsert, `{"id":"i7","pk":"p","r":99}`)
	p.After = position(1000)
	if page := ce.feed(p); len(page.Items) != 1 || page.Examined != 1 {
		t.Errorf("one new change: %d items, %d examined", len(page.Items), page.Examined)
	}
}

func TestChangeFeedDroppedWithContainer(t *testing.T) {
	ce := newCFEnv(t)
	ce.coll("c", pkDef)
	ce.write("c", ModeCreate, `{"id":"a","pk":"p"}`)
	if err := ce.e.DeleteContainer(context.Background(), "db", "c", ""); err != nil {
		t.Fatal(err)
	}
	ce.coll("c", pkDef)
	if items, _ := ce.drain(all("c")); len(items) != 0 {
		t.Errorf("a recreated container inherits records: %s", versions(items))
	}
	err := ce.store.View(context.Background(), func(r storage.Reader) error {
		for _, fam := range []byte{famFeedLatest, famFeedVersion, famFeedFloor} {
			n := 0
			if err := scanPrefix(r, []byte{fam}, func(_, _ []byte) (bool, error) { n++; return true, nil }); err != nil {
				return err
			}
			if n != 0 {
				t.Errorf("family %c holds %d keys after the drop", fam, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkLatestIndex verifies that the latest-version index holds exactly
// one entry per item, at the item's LSN and seq.
func checkLatestIndex(t *testing.T, ce *cfEnv, coll string) {
	t.Helper()
	err := ce.store.View(context.Background(), func(r storage.Reader) error {
		c, err := ce.e.loadContainer(r, "db", coll)
		if err != nil {
			return err
		}
		want := map[string]bool{}
		if err := scanItems(r, c, wholeContainer(), nil, &readStats{}, func(loc []byte, rec *itemRecord) (bool, error) {
			want[string(latestKey(c.Rid, rec.lsn, locSeq(loc)))] = true
			return true, nil
		}); err != nil {
			return err
		}
		got := map[string]bool{}
		if err := scanPrefix(r, collPrefix(famFeedLatest, c.Rid), func(k, _ []byte) (bool, error) {
			got[string(k)] = true
			return true, nil
		}); err != nil {
			return err
		}
		if len(got) != len(want) {
			t.Errorf("latest-version index has %d entries for %d items", len(got), len(want))
		}
		for k := range want {
			if !got[k] {
				t.Errorf("no latest-version entry %x", k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestKeyBytesRoundTrip(t *testing.T) {
	keys := []partition.Key{
		nil,
		{partition.Undefined()},
		{partition.Null()},
		{partition.Bool(false), partition.Bool(true)},
		{partition.Number(0), partition.Number(-1.5), partition.Number(math.MaxFloat64), partition.Number(-math.SmallestNonzeroFloat64)},
		{partition.String(""), partition.String("a\x00b\x00"), partition.String("\xff\x01")},
	}
	for _, k := range keys {
		got, err := decodeKeyBytes(partition.AppendKeyBytes(nil, k))
		if err != nil || !got.Equal(k) {
			t.Errorf("round trip of %v: %v, %v", k, got, err)
		}
	}
}

func FuzzKeyBytes(f *testing.F) {
	f.Add(partition.AppendKeyBytes(nil, partition.Key{partition.String("a\x00"), partition.Number(2)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := decodeKeyBytes(b)
		if err != nil {
			return
		}
		if again := partition.AppendKeyBytes(nil, k); !bytes.Equal(again, b) {
			// Only non-canonical numbers (-0, NaN payloads) may differ.
			k2, err := decodeKeyBytes(again)
			if err != nil || !k2.Equal(k) {
				t.Fatalf("%x decodes to %v, which encodes to %x", b, k, again)
			}
		}
	})
}

func TestVersionRecordRoundTrip(t *testing.T) {
	for _, v := range []versionRecord{
		{kind: changeCreate, crts: 1_700_000_000, hw: 1_700_000_002, epk: "ABC", pk: []byte{0x50, 'a', 0, 1}, id: "x", cur: []byte(`{"id":"x"}`)},
		{kind: changeExpire, crts: -1, prevLSN: math.MaxUint64, id: "", prev: []byte(`{}`)},
	} {
		got, err := decodeVersionRecord(v.encode())
		if err != nil || got.kind != v.kind || got.crts != v.crts || got.hw != v.hw || got.prevLSN != v.prevLSN || got.epk != v.epk ||
			!bytes.Equal(got.pk, v.pk) || got.id != v.id || !bytes.Equal(got.cur, v.cur) || !bytes.Equal(got.prev, v.prev) {
			t.Errorf("round trip of %+v: %+v, %v", v, got, err)
		}
		if crts, hw, err := versionTimes(v.encode()); err != nil || crts != v.crts || hw != v.hw {
			t.Errorf("versionTimes: %d, %d, %v", crts, hw, err)
		}
	}
	// A record of version 1, written before records kept a high-water,
	// reads with none.
	old := []byte{1, byte(changeReplace)}
	old = binary.BigEndian.AppendUint64(old, 1_700_000_000)
	old = binary.BigEndian.AppendUint64(old, 7)
	for _, f := range []string{"EPK", "pk", "x", `{"id":"x","n":2}`, `{"id":"x"}`} {
		old = appendBytes(old, []byte(f))
	}
	v, err := decodeVersionRecord(old)
	if err != nil || v.kind != changeReplace || v.crts != 1_700_000_000 || v.hw != 0 || v.prevLSN != 7 || v.id != "x" || string(v.prev) != `{"id":"x"}` {
		t.Errorf("a version 1 record: %+v, %v", v, err)
	}
	if crts, hw, err := versionTimes(old); err != nil || crts != 1_700_000_000 || hw != 0 {
		t.Errorf("versionTimes of a version 1 record: %d, %d, %v", crts, hw, err)
	}
}

func FuzzVersionRecord(f *testing.F) {
	f.Add((&versionRecord{kind: changeReplace, id: "i", cur: []byte("{}"), prev: []byte("{}")}).encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeVersionRecord(b)
		if err != nil {
			return
		}
		again, err := decodeVersionRecord(v.encode())
		if err != nil || again.id != v.id || !bytes.Equal(again.cur, v.cur) || !bytes.Equal(again.prev, v.prev) {
			t.Fatalf("re-encoding changed the record")
		}
		c := &containerRecord{}
		if _, err := c.renderVersion(1, &v); err == nil && !slices.Contains([]changeKind{changeCreate, changeReplace, changeDelete, changeExpire}, v.kind) {
			t.Fatalf("rendered a record of kind %d", v.kind)
		}
	})
}

func TestLatestEntryRoundTrip(t *testing.T) {
	b := encodeLatestEntry(-5, 9, "EPK", []byte{1, 2})
	ts, hw, epk, pk, err := decodeLatestEntry(b)
	if err != nil || ts != -5 || hw != 9 || string(epk) != "EPK" || !bytes.Equal(pk, []byte{1, 2}) {
		t.Fatalf("%d %d %q %v %v", ts, hw, epk, pk, err)
	}
	for i := range len(b) {
		_, hw, _, _, err := decodeLatestEntry(b[:i])
		switch {
		case i == len(b)-8:
			// An entry written before entries kept a high-water.
			if err != nil || hw != 0 {
				t.Errorf("an entry without a high-water: %d, %v", hw, err)
			}
		case err == nil:
			t.Errorf("a truncated entry of %d bytes decoded", i)
		}
	}
}

// A reader of one logical partition is refused only when its own next
// change is past retention: another partition's change past retention in
// the same sequence is none of its business.
func TestChangeFeedRetentionFollowsTheScope(t *testing.T) {
	ce := newCFEnv(t)
	ce.coll("c", pkDef+`,"changeFeedPolicy":{"retentionDuration":10}`)
	p := all("c")
	p.ItemRef, p.Start = cfRef("c", `["x"]`), StartNow
	at := ce.feed(p).Position
	ce.write("c", ModeCreate, `{"id":"other","pk":"y"}`)
	ce.clock.Advance(10*time.Minute + time.Second)
	ce.write("c", ModeCreate, `{"id":"mine","pk":"x"}`)
	p.Start, p.After = StartAfter, at
	page, err := ce.e.ChangeFeed(context.Background(), p)
	if err != nil {
		t.Fatalf("the partition's reader: %v", err)
	}
	if len(page.Items) != 1 {
		t.Errorf("the partition's reader read %d changes, want its one", len(page.Items))
	}
	p.ItemRef = cfRef("c", "")
	p.RangeID = "0"
	if _, err := ce.e.ChangeFeed(context.Background(), p); !isCode(err, BadRequest) {
		t.Errorf("the container's reader from the same place: %v, want 400", err)
	}
}
