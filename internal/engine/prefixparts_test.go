package engine

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// mergedIter yields the keys of its spaces as one space in the order of
// their rests, forwards and backwards, from First and from a seek to any
// key (inside the space, before it and past it), as a walk of those keys
// sorted does; for one space, a few and many.
func TestMergedIterIsTheSortedUnion(t *testing.T) {
	s := teststore.Open(t)
	rnd := rand.New(rand.NewPCG(3, 5))
	out := []byte("out/")
	for _, spaces := range []int{1, 3, 40} {
		var pres [][]byte
		var want [][]byte // out + rest, sorted
		if err := s.Update(context.Background(), func(tx storage.Txn) error {
			for sp := range spaces {
				pre := []byte(fmt.Sprintf("in%02d-%03d/", spaces, sp))
				pres = append(pres, pre)
				for range rnd.IntN(30) {
					// A rest: a value, then a location unique to the
					// space.
					rest := fmt.Appendf(nil, "%03d|%03d.%03d", rnd.IntN(50), sp, rnd.IntN(1000))
					if err := tx.Set(append(bytes.Clone(pre), rest...), []byte("v")); err != nil {
						return err
					}
					want = append(want, append(bytes.Clone(out), rest...))
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(want, bytes.Compare)
		want = slices.CompactFunc(want, bytes.Equal)
		if err := s.View(context.Background(), func(r storage.Reader) error {
			for _, reverse := range []bool{false, true} {
				m := &mergedIter{out: out, reverse: reverse}
				for _, pre := range pres {
					it, err := r.NewIter(storage.IterParams{Lower: pre, Upper: prefixEnd(pre), Reverse: reverse})
					if err != nil {
						return err
					}
					m.subs = append(m.subs, mergedSub{it: it, pre: pre})
				}
				order := slices.Clone(want)
				if reverse {
					slices.Reverse(order)
				}
				// from returns the keys at or past seek in the order.
				from := func(seek []byte) [][]byte {
					i := slices.IndexFunc(order, func(k []byte) bool {
						c := bytes.Compare(k, seek)
						return c >= 0 && !reverse || c <= 0 && reverse
					})
					if i < 0 {
						return nil
					}
					return order[i:]
				}
				walk := func(ok bool) [][]byte {
					var got [][]byte
					for ; ok; ok = m.Next() {
						got = append(got, bytes.Clone(m.Key()))
					}
					return got
				}
				if got := walk(m.First()); !slices.EqualFunc(got, order, bytes.Equal) {
					t.Fatalf("%d spaces, reverse %v: First walks %q, want %q", spaces, reverse, got, order)
				}
				seeks := [][]byte{[]byte("a"), []byte("z"), out, prefixEnd(out)}
				for range 20 {
					seeks = append(seeks, fmt.Appendf(bytes.Clone(out), "%03d|%03d", rnd.IntN(52), rnd.IntN(spaces)))
				}
				for _, seek := range seeks {
					if got, exp := walk(m.SeekGE(seek)), from(seek); !slices.EqualFunc(got, exp, bytes.Equal) {
						t.Fatalf("%d spaces, reverse %v: a seek to %q walks %q, want %q", spaces, reverse, seek, got, exp)
					}
				}
				if err := m.Err(); err != nil {
					return err
				}
				if err := m.Close(); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
