package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// Strings of kilobytes, which do not compress, sharing their first few
// kilobytes, as indexed values, unique key values, partition key values
// and ids: every key the engine derives from them is long. Writes, point
// reads, queries served by the index (equality, range, ORDER BY either
// way, page by page) and unique key checks behave as with short values,
// on every backend (a PostgreSQL B-tree entry holds at most 2,704 bytes).
func TestLongValues(t *testing.T) {
	e, err := New(Config{Store: storage.WithChecks(teststore.Open(t)), Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	createDBAndContainer(t, e, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
		"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/u"]}]}}`)
	rng := rand.New(rand.NewPCG(3, 4))
	noise := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[rng.IntN(36)]
		}
		return string(b)
	}
	shared := noise(3000)
	pk := noise(2000)
	ref := ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: partition.Key{partition.String(pk)}}
	var values []string
	for i := range 12 {
		s := shared + noise(1+i*300) // a group: one head, several tails
		if i%4 == 3 {
			s = noise(5000) // and some strings of their own
		}
		values = append(values, s)
		id := fmt.Sprintf("%04d", i) + noise(1000)
		body := fmt.Sprintf(`{"id":%q,"pk":%q,"s":%q,"u":%q}`, id, pk, s, s+"u")
		if _, err := e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(body)}); err != nil {
			t.Fatalf("create item %d: %v", i, err)
		}
		if _, err := e.ReadItem(ctx, ReadItemParams{ItemRef: ref, ID: id}); err != nil {
			t.Fatalf("read item %d: %v", i, err)
		}
	}
	// Two items with one value: their entries differ only in location.
	twin := fmt.Sprintf(`{"id":"twin","pk":%q,"s":%q,"u":"t"}`, pk, values[0])
	if _, err := e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(twin)}); err != nil {
		t.Fatalf("create the twin: %v", err)
	}
	// A unique key value already held.
	dup := fmt.Sprintf(`{"id":"dup","pk":%q,"u":%q}`, pk, values[5]+"u")
	if _, err := e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(dup)}); ErrorCode(err) != Conflict {
		t.Fatalf("create with a held unique key value: %v, want a conflict", err)
	}

	sorted := append(slices.Clone(values), values[0])
	slices.Sort(sorted)
	query := func(q string, params map[string]string) []string {
		t.Helper()
		var out []string
		p := QueryParams{ItemRef: ref, Query: q, MaxItemCount: 3}
		if params != nil {
			p.Params = map[string]document.Value{}
			for k, v := range params {
				p.Params[k] = document.Str(v)
			}
		}
		for pages := 0; ; pages++ {
			page, err := e.QueryItems(ctx, p)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			for _, raw := range page.Items {
				var s string
				if err := json.Unmarshal(raw, &s); err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
			if p.Continuation = page.Continuation; p.Continuation == "" || pages > 100 {
				return out
			}
		}
	}
	same := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d strings, want %d (in order: %v)", what, len(got), len(want), len(got) == len(want))
		}
	}
	same("ORDER BY", query("SELECT VALUE c.s FROM c WHERE IS_DEFINED(c.s) ORDER BY c.s", nil), sorted)
	same("ORDER BY DESC", query("SELECT VALUE c.s FROM c WHERE IS_DEFINED(c.s) ORDER BY c.s DESC", nil), reversedStrings(sorted))
	same("equality", query("SELECT VALUE c.s FROM c WHERE c.s = @v", map[string]string{"@v": values[0]}), []string{values[0], values[0]})
	mid := sorted[6]
	var above []string
	for _, s := range sorted {
		if s > mid {
			above = append(above, s)
		}
	}
	same("range", query("SELECT VALUE c.s FROM c WHERE c.s > @v ORDER BY c.s", map[string]string{"@v": mid}), above)
	same("prefix", query("SELECT VALUE c.s FROM c WHERE STARTSWITH(c.s, @v) ORDER BY c.s", map[string]string{"@v": shared}),
		slices.DeleteFunc(slices.Clone(sorted), func(s string) bool { return !strings.HasPrefix(s, shared) }))
	if _, err := e.CheckIndexes(ctx); err != nil {
		t.Error(err)
	}
}

func reversedStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}
