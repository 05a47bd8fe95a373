package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// seqEnv is a change feed environment with container "c" of four
// partition key ranges, and a partition key value in each range.
type seqEnv struct {
	*cfEnv
	keys [4]string // a partition key value ("k…") whose EPK is in range i
}

func newSeqEnv(t *testing.T) *seqEnv {
	t.Helper()
	se := &seqEnv{cfEnv: newCFEnv(t)}
	if _, err := se.e.CreateContainer(context.Background(), "db", batchJSON(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"changeFeedPolicy":{"retentionDuration":1440}}`), &Throughput{Manual: 4 * ruPerRange}); err != nil {
		t.Fatal(err)
	}
	ranges := partition.Split(4)
	found := 0
	for i := 0; found < 4; i++ {
		k := fmt.Sprintf("k%d", i)
		epk, err := partition.EPK(partition.Definition{Paths: []string{"/pk"}, Kind: "Hash", Version: 2}, partition.Key{partition.String(k)})
		if err != nil {
			t.Fatal(err)
		}
		for r := range ranges {
			if ranges[r].Contains(epk) && se.keys[r] == "" {
				se.keys[r] = k
				found++
			}
		}
	}
	return se
}

// create writes item id into range r and returns its result.
func (se *seqEnv) create(r int, id string) *ItemResult {
	se.t.Helper()
	res, err := se.e.WriteItem(context.Background(), WriteItemParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, Mode: ModeCreate, ID: id, Body: []byte(`{"id":"` + id + `","pk":"` + se.keys[r] + `"}`)})
	if err != nil {
		se.t.Fatalf("create %s in range %d: %v", id, r, err)
	}
	return res
}

// ids drains a change feed and returns the ids it serves, in order, and
// the final position.
func (se *seqEnv) ids(p ChangeFeedParams) ([]string, FeedPosition) {
	se.t.Helper()
	var out []string
	for range 1000 {
		page := se.feed(p)
		if len(page.Items) == 0 {
			return out, page.Position
		}
		for _, it := range page.Items {
			var m struct {
				ID       string
				Metadata struct{ ID string }
				Current  struct{ ID string }
			}
			if err := json.Unmarshal(it, &m); err != nil {
				se.t.Fatal(err)
			}
			out = append(out, m.ID+m.Current.ID+m.Metadata.ID)
		}
		p.Start, p.After = StartAfter, page.Position
	}
	se.t.Fatal("the feed never ran dry")
	return nil, FeedPosition{}
}

// Each range of a new container has a sequence of its own: a write's LSN,
// session token and change-feed entries come from the range of its item,
// and the change feed, usage and invariants come out whole across them.
func TestSequencePerRange(t *testing.T) {
	se := newSeqEnv(t)
	seen := map[uint64]bool{}
	var want []string
	for n := range 3 {
		for r := range 4 {
			id := fmt.Sprintf("r%d-%d", r, n)
			res := se.create(r, id)
			if lsnSeq(res.LSN) != r || res.LSN != seqBase(r)+uint64(n+1) {
				t.Errorf("%s: LSN %d, want %d of sequence %d", id, res.LSN, seqBase(r)+uint64(n+1), r)
			}
			if tok := SessionToken(res.LSN); !strings.HasPrefix(tok, fmt.Sprint(r)+":-1#") {
				t.Errorf("%s: session token %s names another range", id, tok)
			}
			if seen[res.LSN] {
				t.Errorf("%s: LSN %d handed out twice", id, res.LSN)
			}
			seen[res.LSN] = true
		}
	}
	for r := range 4 {
		for n := range 3 {
			want = append(want, fmt.Sprintf("r%d-%d", r, n))
		}
	}

	// The whole feed, two items a page: every item once, in range order,
	// and a position in each sequence.
	all := ChangeFeedParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, MaxItemCount: 2}
	got, pos := se.ids(all)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("whole feed: %v, want %v", got, want)
	}
	if len(pos.LSNs) != 4 || pos.Since != 0 {
		t.Fatalf("position after the whole feed: %s, want an LSN in each of 4 sequences", pos)
	}
	if back, ok := ParseFeedPosition(pos.String()); !ok || back.String() != pos.String() {
		t.Fatalf("position %s reads back as %s (%v)", pos, back, ok)
	}

	// From there, and from "now", exactly what is written next.
	now := all
	now.Start = StartNow
	nowPos := se.feed(now).Position
	se.create(3, "late3")
	se.create(1, "late1")
	for _, from := range []FeedPosition{pos, nowPos} {
		p := all
		p.Start, p.After = StartAfter, from
		if got, _ := se.ids(p); strings.Join(got, " ") != "late1 late3" {
			t.Errorf("after %s: %v, want late1 late3", from, got)
		}
	}

	// One range's feed reads its sequence alone.
	one := ChangeFeedParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, RangeID: "2"}
	page := se.feed(one)
	if len(page.Items) != 3 || page.Examined != 3 || len(page.Position.LSNs) != 1 || lsnSeq(page.Position.LSNs[0]) != 2 {
		t.Errorf("range 2: %d items, %d examined, position %s; want 3, 3, one LSN of sequence 2", len(page.Items), page.Examined, page.Position)
	}
	// So does one logical partition's.
	pk := cfRef("c", `["`+se.keys[1]+`"]`)
	if got, pos := se.ids(ChangeFeedParams{ItemRef: pk}); strings.Join(got, " ") != "r1-0 r1-1 r1-2 late1" || len(pos.LSNs) != 1 {
		t.Errorf("partition of range 1: %v at %s", got, pos)
	}

	// All versions, with a delete, from a time, a page at a time: sequences
	// not reached yet keep the time.
	se.delete("c", `["`+se.keys[0]+`"]`, "r0-0")
	versions := all
	versions.Mode, versions.Start, versions.Since, versions.MaxItemCount = AllVersionsAndDeletes, StartTime, cfT0, 1
	first := se.feed(versions)
	if first.Position.Since == 0 {
		t.Errorf("first page from a time: position %s keeps no time for the sequences not reached", first.Position)
	}
	if got, _ := se.ids(versions); len(got) != 15 {
		t.Errorf("all versions: %d changes %v, want 15", len(got), got)
	}

	_, usage, err := se.e.ReadContainer(context.Background(), "db", "c")
	if err != nil || usage.DocumentsCount != 13 {
		t.Fatalf("usage %+v (%v), want 13 items", usage, err)
	}
	if _, err := se.e.CheckIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// recorder records, per write transaction, the keys it read and wrote.
type recorder struct {
	storage.Store
	mu   sync.Mutex
	txns []*keySets
}

type keySets struct{ read, wrote map[string]bool }

func (r *recorder) Update(ctx context.Context, fn func(tx storage.Txn) error) error {
	return r.Store.Update(ctx, func(tx storage.Txn) error {
		ks := &keySets{read: map[string]bool{}, wrote: map[string]bool{}}
		r.mu.Lock()
		r.txns = append(r.txns, ks)
		r.mu.Unlock()
		return fn(&recordingTxn{Txn: tx, ks: ks})
	})
}

type recordingTxn struct {
	storage.Txn
	ks *keySets
}

func (t *recordingTxn) Get(k []byte) ([]byte, error) {
	t.ks.read[string(k)] = true
	return t.Txn.Get(k)
}

func (t *recordingTxn) Set(k, v []byte) error {
	t.ks.wrote[string(k)] = true
	return t.Txn.Set(k, v)
}

func (t *recordingTxn) Delete(k []byte) error {
	t.ks.wrote[string(k)] = true
	return t.Txn.Delete(k)
}

// Writes into two ranges of a new container share no key that either
// writes, so over a serializable shared store neither can make the other
// fail or wait; in a container of one sequence they share its state.
func TestWritesIntoTwoRangesShareNoWrittenKey(t *testing.T) {
	for _, perRange := range []bool{true, false} {
		t.Run(fmt.Sprintf("perRange=%v", perRange), func(t *testing.T) {
			se := newSeqEnv(t)
			rec := &recorder{Store: se.store}
			e, err := New(Config{Store: rec, Clock: se.clock})
			if err != nil {
				t.Fatal(err)
			}
			if !perRange {
				// A container made before sequences per range.
				rewriteContainer(t, e, se.store, "c", func(c *containerRecord) { c.SeqPerRange = false })
			}
			se.e = e
			se.create(0, "warm0") // the first writes of each range make its records
			se.create(2, "warm2")
			e.floorWrites.Wait() // the clock's floor, recorded in the background
			rec.txns = nil
			se.create(0, "a")
			se.create(2, "b")
			if len(rec.txns) != 2 {
				t.Fatalf("%d write transactions, want 2", len(rec.txns))
			}
			a, b := rec.txns[0], rec.txns[1]
			var shared []string
			for k := range a.wrote {
				if b.wrote[k] || b.read[k] {
					shared = append(shared, fmt.Sprintf("%x", k))
				}
			}
			for k := range b.wrote {
				if a.read[k] && !a.wrote[k] {
					shared = append(shared, fmt.Sprintf("%x", k))
				}
			}
			if perRange && len(shared) > 0 {
				t.Errorf("the two writes share keys %v", shared)
			}
			if !perRange && len(shared) == 0 {
				t.Errorf("in a container of one sequence the writes share no key: the test sees nothing")
			}
		})
	}
}

// rewriteContainer changes the stored record of container db/name of e
// in store, as an earlier Mayfly would have written it. An engine that has
// the record cached still has the old one: open a new one to read it.
func rewriteContainer(t *testing.T, e *Engine, store storage.Store, name string, edit func(c *containerRecord)) {
	t.Helper()
	err := store.Update(context.Background(), func(tx storage.Txn) error {
		c, err := e.loadContainer(tx, "db", name)
		if err != nil {
			return err
		}
		edit(c)
		return setJSON(tx, containerKey(c.DBRid, name), c)
	})
	if err != nil {
		t.Fatal(err)
	}
}
