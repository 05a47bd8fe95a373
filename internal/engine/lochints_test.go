package engine

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

func TestLocHintsTable(t *testing.T) {
	h := newLocHints(64)
	key := func(i int) []byte { return []byte("k" + strconv.Itoa(i)) }
	for i := range 1000 {
		h.put(key(i), uint64(i))
		if got, ok := h.get(key(i)); !ok || got != uint64(i) {
			t.Fatalf("hint %d just put: %d, %t", i, got, ok)
		}
	}
	kept := 0
	for i := range 1000 {
		if got, ok := h.get(key(i)); ok {
			kept++
			if got != uint64(i) {
				t.Errorf("hint %d: %d", i, got)
			}
		}
	}
	if kept == 0 || kept > 64 {
		t.Errorf("%d hints kept in 64 slots", kept)
	}
	// A set keeps its four keys, the last used first: keys used in turn
	// all stay, and a fifth key pushes out the one used longest ago.
	h = newLocHints(hintWays)
	for i := 1; i <= 4; i++ {
		h.put(key(i), uint64(i))
	}
	for range 2 {
		for i := 1; i <= 4; i++ {
			if got, ok := h.get(key(i)); !ok || got != uint64(i) {
				t.Errorf("key %d of a full set: %d, %t", i, got, ok)
			}
		}
	}
	h.get(key(1))
	h.put(key(5), 5)
	for i, want := range []bool{1: true, 2: false, 3: true, 4: true, 5: true} {
		if i == 0 {
			continue
		}
		if _, ok := h.get(key(i)); ok != want {
			t.Errorf("after using 1 and putting 5: key %d kept %t, want %t", i, ok, want)
		}
	}
	h.put(key(1), 9)
	if got, _ := h.get(key(1)); got != 9 {
		t.Errorf("a hint replaced: %d", got)
	}
	h.forget(key(1))
	if _, ok := h.get(key(1)); ok {
		t.Error("a forgotten hint was kept")
	}
}

// getCounter counts the Gets of every View and Update.
type getCounter struct {
	storage.Store
	gets atomic.Int64
}

func (s *getCounter) View(ctx context.Context, fn func(r storage.Reader) error) error {
	return s.Store.View(ctx, func(r storage.Reader) error { return fn(getCounting{r, s}) })
}

type getCounting struct {
	storage.Reader
	s *getCounter
}

func (r getCounting) Get(k []byte) ([]byte, error) {
	r.s.gets.Add(1)
	return r.Reader.Get(k)
}

// idKeyOf is the key of the id entry of item id in partition pk of
// container db/c.
func idKeyOf(t *testing.T, e *Engine, pk, id string) []byte {
	t.Helper()
	var key []byte
	err := e.store.View(context.Background(), func(r storage.Reader) error {
		c, err := e.loadContainer(r, "db", "c")
		if err != nil {
			return err
		}
		key = itemIDKey(c.Rid, partition.AppendKeyBytes(nil, partition.Key{partition.String(pk)}), id)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// A point read with a hint reads the record only; hints that are stale or
// wrong (another item's location, a location with no record) give the
// same answers as no hint.
func TestLocHints(t *testing.T) {
	st := &getCounter{Store: teststore.Open(t)}
	be := newBatchEnvOn(t, st, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	e := be.e
	ctx := context.Background()
	be.seed(t, `{"id":"item-a","pk":"p","v":1}`, `{"id":"item-b","pk":"p","v":2}`, `{"id":"item-c","pk":"q","v":3}`)
	read := func(id, pk string) string {
		t.Helper()
		res, err := e.ReadItem(ctx, ReadItemParams{ItemRef: batchRef(`["` + pk + `"]`), ID: id})
		if isCode(err, NotFound) {
			return "404"
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Body)
	}
	v := func(body string) string {
		i := strings.Index(body, `"v":`)
		if i < 0 {
			return body
		}
		return body[i+4 : i+5]
	}

	// Lookups with and without the hint.
	e.locHints = newLocHints(defaultLocHints)
	before := st.gets.Load()
	if got := v(read("item-a", "p")); got != "1" {
		t.Fatalf("read without a hint: %s", got)
	}
	cold := st.gets.Load() - before
	before = st.gets.Load()
	if got := v(read("item-a", "p")); got != "1" {
		t.Fatalf("read with a hint: %s", got)
	}
	if warm := st.gets.Load() - before; warm != cold-1 {
		t.Errorf("a hinted read made %d Gets, an unhinted one %d: want one fewer", warm, cold)
	}

	keyA := idKeyOf(t, e, "p", "item-a")
	read("item-b", "p")
	read("item-c", "q")
	seqA, okA := e.locHints.get(keyA)
	seqB, okB := e.locHints.get(idKeyOf(t, e, "p", "item-b"))
	seqC, okC := e.locHints.get(idKeyOf(t, e, "q", "item-c"))
	if !okA || !okB || !okC {
		t.Fatal("no hints kept")
	}

	// Another item's location: the record there is item-b's.
	e.locHints.put(keyA, seqB)
	if got := v(read("item-a", "p")); got != "1" {
		t.Errorf("with item-b's location as item-a's hint: v=%s, want 1", got)
	}
	// A location with no record.
	e.locHints.put(keyA, seqA+100)
	if got := v(read("item-a", "p")); got != "1" {
		t.Errorf("with an empty location as the hint: v=%s, want 1", got)
	}
	// An upsert through a wrong hint replaces item-a, not item-b.
	e.locHints.put(keyA, seqB)
	if _, err := e.WriteItem(ctx, WriteItemParams{ItemRef: batchRef(`["p"]`), Mode: ModeUpsert, Body: []byte(`{"id":"item-a","pk":"p","v":4}`)}); err != nil {
		t.Fatal(err)
	}
	if a, b := v(read("item-a", "p")), v(read("item-b", "p")); a != "4" || b != "2" {
		t.Errorf("after an upsert of item-a through item-b's location: a v=%s, b v=%s; want 4, 2", a, b)
	}
	// Item-c's sequence number, in another partition: no record at
	// that number in this one.
	e.locHints.put(keyA, seqC)
	if got := v(read("item-a", "p")); got != "4" {
		t.Errorf("with item-c's sequence number (another partition): v=%s, want 4", got)
	}
	if got := read("item-a", "q"); got != "404" {
		t.Errorf("item-a in partition q: %s, want 404", got)
	}

	// Deleted, then created again elsewhere, with the old hint put back.
	if _, err := e.DeleteItem(ctx, DeleteItemParams{ItemRef: batchRef(`["p"]`), ID: "item-a"}); err != nil {
		t.Fatal(err)
	}
	e.locHints.put(keyA, seqA)
	if got := read("item-a", "p"); got != "404" {
		t.Errorf("a deleted item read through its old hint: %s", got)
	}
	be.seed(t, `{"id":"item-a","pk":"p","v":5}`)
	e.locHints.put(keyA, seqA)
	if got := v(read("item-a", "p")); got != "5" {
		t.Errorf("an item created again, read through its old location: v=%s, want 5", got)
	}
	if seq, _ := e.locHints.get(keyA); seq == seqA {
		t.Error("the hint still names the old location after the new one was found")
	}
}

// A hint names a location by its sequence number; the rest of it comes
// from the partition key asked for. For every kind of partition key, a
// read with a hint finds the record there and makes one Get fewer.
func TestLocHintsKeyKinds(t *testing.T) {
	for _, tc := range []struct {
		name, def, item, header string
	}{
		{"string", `{"paths":["/pk"],"kind":"Hash","version":2}`, `{"id":"x","pk":"p"}`, `["p"]`},
		{"number", `{"paths":["/pk"],"kind":"Hash","version":2}`, `{"id":"x","pk":12.5}`, `[12.5]`},
		{"bool", `{"paths":["/pk"],"kind":"Hash","version":2}`, `{"id":"x","pk":true}`, `[true]`},
		{"null", `{"paths":["/pk"],"kind":"Hash","version":2}`, `{"id":"x","pk":null}`, `[null]`},
		{"absent", `{"paths":["/pk"],"kind":"Hash","version":2}`, `{"id":"x"}`, `[{}]`},
		{"hash v1", `{"paths":["/pk"],"kind":"Hash"}`, `{"id":"x","pk":"p"}`, `["p"]`},
		{"hierarchical", `{"paths":["/a","/b"],"kind":"MultiHash","version":2}`, `{"id":"x","a":"p","b":3}`, `["p",3]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &getCounter{Store: teststore.Open(t)}
			be := newBatchEnvOn(t, st, `{"id":"c","partitionKey":`+tc.def+`}`)
			be.seed(t, tc.item)
			be.e.locHints = newLocHints(defaultLocHints)
			gets := func() int64 {
				t.Helper()
				before := st.gets.Load()
				if _, err := be.e.ReadItem(context.Background(), ReadItemParams{ItemRef: batchRef(tc.header), ID: "x"}); err != nil {
					t.Fatal(err)
				}
				return st.gets.Load() - before
			}
			if cold, warm := gets(), gets(); warm != cold-1 {
				t.Errorf("a hinted read made %d Gets, an unhinted one %d: want one fewer", warm, cold)
			}
		})
	}
}
