package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
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

// Merged by sequence, the entries of several partitions (base + part +
// value + location, a location being the part and a sequence) come in the
// order of their values and then of their sequences, forwards and
// backwards, and a walk bounded at a value and a sequence (as a page of
// the ordered stream resumes at an item, and backwards at the key past
// it, which cuts a sequence ending in 0xFF bytes short) starts there in
// every partition.
func TestSeqMergedIterOrdersTiesBySequence(t *testing.T) {
	s := teststore.Open(t)
	rnd := rand.New(rand.NewPCG(7, 11))
	base, out := []byte("base/"), []byte("out/")
	var parts [][]byte
	for _, epk := range []string{"05C1D7", "3A", "3A0F", "9E4411", "F0"} {
		parts = append(parts, appendEPK(nil, epk, true))
	}
	slices.SortFunc(parts, bytes.Compare)
	type entry struct {
		value []byte
		seq   uint64
		key   []byte // out + value + location
	}
	var all []entry
	values := [][]byte{}
	for _, v := range []document.Value{document.Int(1), document.Int(2), document.Str("a"), document.Str("b"), document.BoolValue(true)} {
		k, _ := appendIndexValue(nil, v)
		values = append(values, k)
	}
	seqs := []uint64{0xff, 0x1ff, 0x100, 7, 0x2ff, 0xfe, 0x300}
	if err := s.Update(context.Background(), func(tx storage.Txn) error {
		for i, seq := range append(seqs, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18) {
			part, value := parts[rnd.IntN(len(parts))], values[i%len(values)]
			if i < len(seqs) {
				value = values[0] // a group of ties across the parts
			}
			loc := binary.BigEndian.AppendUint64(bytes.Clone(part), seq)
			rest := append(bytes.Clone(value), loc...)
			if err := tx.Set(append(append(bytes.Clone(base), part...), rest...), []byte("v")); err != nil {
				return err
			}
			all = append(all, entry{value: value, seq: seq, key: append(bytes.Clone(out), rest...)})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, func(a, b entry) int { return cmp.Or(bytes.Compare(a.value, b.value), cmp.Compare(a.seq, b.seq)) })
	at := func(e entry) []byte {
		return binary.BigEndian.AppendUint64(append(bytes.Clone(out), e.value...), e.seq)
	}
	if err := s.View(context.Background(), func(r storage.Reader) error {
		for _, reverse := range []bool{false, true} {
			for i, from := range all {
				// Forwards from the item's position; backwards up to the
				// key past it.
				lo, hi := at(from), prefixEnd(out)
				want := slices.Clone(all[i:])
				if reverse {
					lo, hi = out, prefixEnd(at(from))
					want = slices.Clone(all[:i+1])
					slices.Reverse(want)
				}
				it, err := newSeqMergedIter(r, base, parts, out, lo, hi, reverse)
				if err != nil {
					return err
				}
				var got [][]byte
				for ok := it.First(); ok; ok = it.Next() {
					got = append(got, bytes.Clone(it.Key()))
				}
				if err := it.Close(); err != nil {
					return err
				}
				var exp [][]byte
				for _, e := range want {
					exp = append(exp, e.key)
				}
				if !slices.EqualFunc(got, exp, bytes.Equal) {
					t.Fatalf("reverse %v, from the entry of sequence %#x: walked %x, want %x", reverse, from.seq, got, exp)
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
