package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

// TestUniqueKeysCompareValues: a unique key compares values as the query
// language's equality and DISTINCT do, whatever their JSON spelling, so a
// double written by one SDK and the same integer written by another
// collide. A container made before values were compared so keeps
// comparing its entries' text, and its entries stay consistent.
func TestUniqueKeysCompareValues(t *testing.T) {
	pairs := []struct{ first, second string }{
		{`1e18`, `1000000000000000000`},
		{`1E+18`, `1000000000000000000`},
		{`4.611686018427387904e18`, `4611686018427387904`},
		{`-9223372036854775808`, `-9.223372036854775808e18`},
		{`[1e18]`, `[1000000000000000000]`},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`},
		{`100`, `100.0`},
		{`0`, `-0`},
	}
	for _, byValue := range []bool{true, false} {
		t.Run(fmt.Sprintf("byValue=%v", byValue), func(t *testing.T) {
			ps, err := pebblestore.Open(pebblestore.Options{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ps.Close() })
			store := storage.WithChecks(ps)
			e, err := New(Config{Store: store, Clock: clock.NewManual(batchT0)})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			createDBAndContainer(t, e, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
				"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/u"]}]}}`)
			if !byValue {
				// A container made before unique keys compared values.
				rewriteContainer(t, e, store, "c", func(c *containerRecord) { c.UniqueByValue = false })
				if e, err = New(Config{Store: store, Clock: clock.NewManual(batchT0)}); err != nil {
					t.Fatal(err)
				}
			}
			for i, p := range pairs {
				pk := fmt.Sprintf("p%d", i)
				write := func(id, u string) error {
					_, err := e.WriteItem(ctx, WriteItemParams{ItemRef: batchRef(fmt.Sprintf(`[%q]`, pk)), Mode: ModeCreate,
						Body: fmt.Appendf(nil, `{"id":%q,"pk":%q,"u":%s}`, id, pk, u)})
					return err
				}
				if err := write("x", p.first); err != nil {
					t.Fatalf("%s: %v", p.first, err)
				}
				err := write("y", p.second)
				// Spellings the text already agreed on collide either way.
				sameText := p.first == "100" || p.first == "0"
				switch {
				case byValue || sameText:
					if ErrorCode(err) != Conflict {
						t.Errorf("%s then %s: %v, want a conflict", p.first, p.second, err)
					}
				case err != nil:
					t.Errorf("%s then %s in a container that compares text: %v", p.first, p.second, err)
				}
			}
			if _, err := e.CheckIndexes(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
