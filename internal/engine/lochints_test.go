package engine

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

func TestLocHintsBounded(t *testing.T) {
	h := newLocHints(64)
	for i := range 1000 {
		h.put([]byte("k"+strconv.Itoa(i)), []byte("loc"+strconv.Itoa(i)))
		if n := h.len(); n > 64 {
			t.Fatalf("%d hints after %d puts, bound 64", n, i+1)
		}
	}
	if got := h.get([]byte("k999")); string(got) != "loc999" {
		t.Errorf("the last hint: %q", got)
	}
	h.forget([]byte("k999"))
	if got := h.get([]byte("k999")); got != nil {
		t.Errorf("a forgotten hint: %q", got)
	}
	// A hint handed out is not changed by appending to it.
	h.put([]byte("a"), []byte("xy"))
	_ = append(h.get([]byte("a")), 'z')
	if got := h.get([]byte("a")); string(got) != "xy" {
		t.Errorf("after an append to a copy: %q", got)
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

// hintOf returns the hint kept for the item whose id ends the key.
func hintOf(e *Engine, id string) []byte {
	e.locHints.mu.Lock()
	defer e.locHints.mu.Unlock()
	for k, v := range e.locHints.locs {
		if strings.HasSuffix(k, id) {
			return v
		}
	}
	return nil
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

	locA, locB := bytes.Clone(hintOf(e, "item-a")), bytes.Clone(read2(t, e, "item-b", "p"))
	if locA == nil || locB == nil {
		t.Fatal("no hints kept")
	}
	idKey := func(id string) []byte {
		for k := range e.locHints.locs {
			if strings.HasSuffix(k, id) {
				return []byte(k)
			}
		}
		t.Fatalf("no hint for %s", id)
		return nil
	}
	keyA := idKey("item-a")

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
	e.locHints.put(keyA, bytes.Clone(hintOf(e, "item-c")))
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
	if bytes.Equal(hintOf(e, "item-a"), locA) {
		t.Error("the hint still names the old location after the new one was found")
	}
}

// read2 reads an item so that its hint is kept, and returns the hint.
func read2(t *testing.T, e *Engine, id, pk string) []byte {
	t.Helper()
	if _, err := e.ReadItem(context.Background(), ReadItemParams{ItemRef: batchRef(`["` + pk + `"]`), ID: id}); err != nil {
		t.Fatal(err)
	}
	return hintOf(e, id)
}
