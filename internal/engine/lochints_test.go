package engine

import (
	"bytes"
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
	loc := func(i int) []byte { return []byte("loc" + strconv.Itoa(i)) }
	for i := range 1000 {
		h.put(key(i), loc(i))
		if got := h.get(key(i)); !bytes.Equal(got, loc(i)) {
			t.Fatalf("hint %d just put: %q", i, got)
		}
	}
	kept := 0
	for i := range 1000 {
		if got := h.get(key(i)); got != nil {
			kept++
			if !bytes.Equal(got, loc(i)) {
				t.Errorf("hint %d: %q", i, got)
			}
		}
	}
	if kept == 0 || kept > 64 {
		t.Errorf("%d hints kept in 64 slots", kept)
	}
	// A pair keeps its two keys, the last used first: a key used again
	// survives a third key put into its pair.
	h = newLocHints(2)
	h.put(key(1), loc(1))
	h.put(key(2), loc(2))
	h.get(key(1))
	h.put(key(3), loc(3))
	if h.get(key(1)) == nil || h.get(key(3)) == nil || h.get(key(2)) != nil {
		t.Errorf("pair after using 1 and putting 3: 1 %q, 2 %q, 3 %q", h.get(key(1)), h.get(key(2)), h.get(key(3)))
	}
	h.put(key(1), loc(9))
	if got := h.get(key(1)); !bytes.Equal(got, loc(9)) {
		t.Errorf("a hint replaced: %q", got)
	}
	h.forget(key(1))
	if got := h.get(key(1)); got != nil {
		t.Errorf("a forgotten hint: %q", got)
	}
	// Locations too long to keep are not kept.
	h.put(key(4), make([]byte, maxHintedLoc+1))
	if got := h.get(key(4)); got != nil {
		t.Errorf("a location of %d bytes was kept", len(got))
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
	locA, locB, locC := e.locHints.get(keyA), e.locHints.get(idKeyOf(t, e, "p", "item-b")), e.locHints.get(idKeyOf(t, e, "q", "item-c"))
	if locA == nil || locB == nil || locC == nil {
		t.Fatal("no hints kept")
	}

	// Another item's location: the record there is item-b's.
	e.locHints.put(keyA, locB)
	if got := v(read("item-a", "p")); got != "1" {
		t.Errorf("with item-b's location as item-a's hint: v=%s, want 1", got)
	}
	// A location with no record.
	e.locHints.put(keyA, append(bytes.Clone(locA[:len(locA)-1]), locA[len(locA)-1]+100))
	if got := v(read("item-a", "p")); got != "1" {
		t.Errorf("with an empty location as the hint: v=%s, want 1", got)
	}
	// An upsert through a wrong hint replaces item-a, not item-b.
	e.locHints.put(keyA, locB)
	if _, err := e.WriteItem(ctx, WriteItemParams{ItemRef: batchRef(`["p"]`), Mode: ModeUpsert, Body: []byte(`{"id":"item-a","pk":"p","v":4}`)}); err != nil {
		t.Fatal(err)
	}
	if a, b := v(read("item-a", "p")), v(read("item-b", "p")); a != "4" || b != "2" {
		t.Errorf("after an upsert of item-a through item-b's location: a v=%s, b v=%s; want 4, 2", a, b)
	}
	// The same id in another partition is another item.
	e.locHints.put(keyA, locC)
	if got := v(read("item-a", "p")); got != "4" {
		t.Errorf("with item-c's location (another partition): v=%s, want 4", got)
	}
	if got := read("item-a", "q"); got != "404" {
		t.Errorf("item-a in partition q: %s, want 404", got)
	}

	// Deleted, then created again elsewhere, with the old hint put back.
	if _, err := e.DeleteItem(ctx, DeleteItemParams{ItemRef: batchRef(`["p"]`), ID: "item-a"}); err != nil {
		t.Fatal(err)
	}
	e.locHints.put(keyA, locA)
	if got := read("item-a", "p"); got != "404" {
		t.Errorf("a deleted item read through its old hint: %s", got)
	}
	be.seed(t, `{"id":"item-a","pk":"p","v":5}`)
	e.locHints.put(keyA, locA)
	if got := v(read("item-a", "p")); got != "5" {
		t.Errorf("an item created again, read through its old location: v=%s, want 5", got)
	}
	if bytes.Equal(e.locHints.get(keyA), locA) {
		t.Error("the hint still names the old location after the new one was found")
	}
}
