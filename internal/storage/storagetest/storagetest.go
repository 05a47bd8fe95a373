// Package storagetest is the conformance suite for storage backends. Every
// backend's tests call Run; a backend that passes it can carry the engine.
//
// The suite tests the contract in package storage, not an implementation:
// it never assumes that Update functions run one at a time, and it counts an
// Update function that runs more than once (a backend retrying a conflict)
// as correct.
package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// Run runs the suite. open must return a new, empty store each time it is
// called; Run closes every store it opens. Run with -tags invariants, the
// suite also checks every result through storage.WithChecks.
func Run(t *testing.T, open func(t *testing.T) storage.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s storage.Store)
	}{
		{"GetSetDelete", testGetSetDelete},
		{"NotFound", testNotFound},
		{"Iterate", testIterate},
		{"IterateEmptyStore", testIterateEmptyStore},
		{"SeekGE", testSeekGE},
		{"IteratorReposition", testIteratorReposition},
		{"ReadYourWrites", testReadYourWrites},
		{"IteratorSeesOwnWrites", testIteratorSeesOwnWrites},
		{"SeeksAmongSteps", testSeeksAmongSteps},
		{"Atomicity", testAtomicity},
		{"DeferredUpdate", testDeferredUpdate},
		{"PanicRollsBack", testPanicRollsBack},
		{"ErrorsPassThrough", testErrorsPassThrough},
		{"SnapshotIsolation", testSnapshotIsolation},
		{"ConsistentViewsUnderWrites", testConsistentViewsUnderWrites},
		{"ConcurrentCounter", func(t *testing.T, s storage.Store) { testConcurrentCounter(t, s, false) }},
		{"ConcurrentCounterLockedAhead", func(t *testing.T, s storage.Store) { testConcurrentCounter(t, s, true) }},
		{"NoWriteSkew", testNoWriteSkew},
		{"NoPhantoms", testNoPhantoms},
		{"RerunSeesNothingOfTheFirstRun", testRerunSeesNothingOfTheFirstRun},
		{"Copies", testCopies},
		{"PrefetchChangesNoResult", testPrefetch},
		{"GetMany", testGetMany},
		{"ScanSpans", testScanSpans},
		{"TxClock", testTxClock},
		{"DeleteRange", testDeleteRange},
		{"Savepoints", testSavepoints},
		{"LargeValues", testLargeValues},
		{"LongKeys", testLongKeys},
		{"CancelledContext", testCancelledContext},
		{"Closed", testClosed},
		{"CloseWaits", testCloseWaits},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Under -tags invariants this checks every call the suite
			// makes; otherwise it returns the store itself.
			s := storage.WithChecks(open(t))
			t.Cleanup(func() {
				if err := s.Close(); err != nil && !errors.Is(err, storage.ErrClosed) {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}

// op is one write in a test table.
type op struct {
	del   bool
	key   string
	value string
}

func set(k, v string) op { return op{key: k, value: v} }
func del(k string) op    { return op{del: true, key: k} }

func apply(tx storage.Txn, ops []op) error {
	for _, o := range ops {
		var err error
		if o.del {
			err = tx.Delete([]byte(o.key))
		} else {
			err = tx.Set([]byte(o.key), []byte(o.value))
		}
		if err != nil {
			return fmt.Errorf("apply %+v: %w", o, err)
		}
	}
	return nil
}

// write commits ops in one Update.
func write(t *testing.T, s storage.Store, ops ...op) {
	t.Helper()
	err := s.Update(context.Background(), func(tx storage.Txn) error { return apply(tx, ops) })
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
}

// get reads key in its own View; found is false for ErrNotFound.
func get(t *testing.T, s storage.Store, key string) (value string, found bool) {
	t.Helper()
	err := s.View(context.Background(), func(r storage.Reader) error {
		var err error
		value, found, err = getFrom(r, key)
		return err
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	return value, found
}

func getFrom(r storage.Reader, key string) (string, bool, error) {
	v, err := r.Get([]byte(key))
	if errors.Is(err, storage.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("Get(%q): %w", key, err)
	}
	return string(v), true, nil
}

// scan lists "key=value" for every key in the range, in iteration order.
func scan(r storage.Reader, p storage.IterParams) ([]string, error) {
	it, err := r.NewIter(p)
	if err != nil {
		return nil, fmt.Errorf("NewIter: %w", err)
	}
	return drain(it, it.First())
}

// drain lists the iterator's pairs from its current position and closes it.
func drain(it storage.Iterator, ok bool) ([]string, error) {
	got := []string{}
	for ; ok; ok = it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Err(); err != nil {
		it.Close()
		return nil, fmt.Errorf("iterate: %w", err)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("close iterator: %w", err)
	}
	return got, nil
}

func viewScan(t *testing.T, s storage.Store, p storage.IterParams) []string {
	t.Helper()
	var got []string
	err := s.View(context.Background(), func(r storage.Reader) error {
		var err error
		got, err = scan(r, p)
		return err
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	return got
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func b(s string) []byte { return []byte(s) }

func testGetSetDelete(t *testing.T, s storage.Store) {
	tests := []struct {
		name      string
		updates   [][]op // each committed in its own Update
		key       string
		want      string
		wantFound bool
	}{
		{"missing", nil, "a", "", false},
		{"set", [][]op{{set("a", "1")}}, "a", "1", true},
		{"overwrite in one txn", [][]op{{set("a", "1"), set("a", "2")}}, "a", "2", true},
		{"overwrite in two txns", [][]op{{set("a", "1")}, {set("a", "2")}}, "a", "2", true},
		{"delete", [][]op{{set("a", "1")}, {del("a")}}, "a", "", false},
		{"delete missing key", [][]op{{del("a")}}, "a", "", false},
		{"set after delete", [][]op{{set("a", "1")}, {del("a")}, {set("a", "3")}}, "a", "3", true},
		{"set and delete in one txn", [][]op{{set("a", "1"), del("a")}}, "a", "", false},
		{"empty value", [][]op{{set("a", "")}}, "a", "", true},
		{"binary key", [][]op{{set("\x00\xff\x00", "bin")}}, "\x00\xff\x00", "bin", true},
		{"prefix is another key", [][]op{{set("ab", "long")}}, "a", "", false},
		{"longer key is another key", [][]op{{set("a", "short")}}, "a\x00", "", false},
		{"neighbours untouched", [][]op{{set("a", "1"), set("a\x00", "2"), set("b", "3")}, {del("a\x00")}}, "a", "1", true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Each case gets its own key space inside the one store.
			prefix := fmt.Sprintf("case%02d/", i)
			for _, ops := range tc.updates {
				prefixed := make([]op, len(ops))
				for j, o := range ops {
					prefixed[j] = op{del: o.del, key: prefix + o.key, value: o.value}
				}
				write(t, s, prefixed...)
			}
			got, found := get(t, s, prefix+tc.key)
			if found != tc.wantFound || got != tc.want {
				t.Errorf("Get(%q) = %q, found %v; want %q, found %v", tc.key, got, found, tc.want, tc.wantFound)
			}
		})
	}
}

func testNotFound(t *testing.T, s storage.Store) {
	write(t, s, set("present", "1"))
	check := func(where string, r storage.Reader) {
		v, err := r.Get(b("absent"))
		if !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s: Get(absent) = %q, %v; want ErrNotFound", where, v, err)
		}
	}
	if err := s.View(context.Background(), func(r storage.Reader) error {
		check("View", r)
		return nil
	}); err != nil {
		t.Fatalf("View: %v", err)
	}
	if err := s.Update(context.Background(), func(tx storage.Txn) error {
		check("Update", tx)
		if err := tx.Delete(b("present")); err != nil {
			return err
		}
		if v, err := tx.Get(b("present")); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Update: Get after own Delete = %q, %v; want ErrNotFound", v, err)
		}
		return nil
	}); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

// iterKeys is the data set for the iteration tests: bytewise order, with
// keys that are prefixes of others and keys at both ends of the byte range.
var iterKeys = []string{"\x00", "a", "b", "ba", "bb", "c", "d\x00", "e", "\xff", "\xff\xff"}

func loadIterKeys(t *testing.T, s storage.Store) []string {
	t.Helper()
	ops := make([]op, len(iterKeys))
	all := make([]string, len(iterKeys))
	for i, k := range iterKeys {
		ops[i] = set(k, "v"+strconv.Itoa(i))
		all[i] = k + "=v" + strconv.Itoa(i)
	}
	write(t, s, ops...)
	return all
}

func testIterate(t *testing.T, s storage.Store) {
	all := loadIterKeys(t, s)
	pairs := func(keys ...string) []string {
		var out []string
		for _, k := range keys {
			i := slices.Index(iterKeys, k)
			out = append(out, k+"=v"+strconv.Itoa(i))
		}
		return out
	}
	tests := []struct {
		name         string
		lower, upper []byte
		want         []string // forward order
	}{
		{"unbounded", nil, nil, all},
		{"lower only", b("b"), nil, pairs("b", "ba", "bb", "c", "d\x00", "e", "\xff", "\xff\xff")},
		{"upper only", nil, b("b"), pairs("\x00", "a")},
		{"both bounds on keys", b("b"), b("c"), pairs("b", "ba", "bb")},
		{"bounds between keys", b("a\x00"), b("bz"), pairs("b", "ba", "bb")},
		{"upper is exclusive", b("a"), b("ba"), pairs("a", "b")},
		{"lower is inclusive", b("bb"), b("c\x00"), pairs("bb", "c")},
		{"empty lower is the first key", b(""), b("a\x00"), pairs("\x00", "a")},
		{"top of the byte range", b("\xff"), nil, pairs("\xff", "\xff\xff")},
		{"one key", b("e"), b("e\x00"), pairs("e")},
		{"no keys in range", b("bc"), b("bz"), nil},
		{"lower equals upper", b("b"), b("b"), nil},
		{"lower above upper", b("c"), b("b"), nil},
		{"empty upper", nil, b(""), nil},
		{"range past the last key", b("\xff\xff\x00"), nil, nil},
	}
	for _, tc := range tests {
		for _, reverse := range []bool{false, true} {
			name := tc.name + "/forward"
			want := tc.want
			if reverse {
				name = tc.name + "/reverse"
				want = reversed(tc.want)
			}
			t.Run(name, func(t *testing.T) {
				got := viewScan(t, s, storage.IterParams{Lower: tc.lower, Upper: tc.upper, Reverse: reverse})
				if !slices.Equal(got, want) {
					t.Errorf("got %q\nwant %q", got, want)
				}
			})
		}
	}
}

func testIterateEmptyStore(t *testing.T, s storage.Store) {
	for _, reverse := range []bool{false, true} {
		err := s.View(context.Background(), func(r storage.Reader) error {
			it, err := r.NewIter(storage.IterParams{Reverse: reverse})
			if err != nil {
				return err
			}
			defer it.Close()
			if it.First() {
				t.Errorf("reverse=%v: First on an empty store found %q", reverse, it.Key())
			}
			if it.SeekGE(b("a")) {
				t.Errorf("reverse=%v: SeekGE on an empty store found %q", reverse, it.Key())
			}
			return it.Err()
		})
		if err != nil {
			t.Fatalf("View: %v", err)
		}
	}
}

func testSeekGE(t *testing.T, s storage.Store) {
	loadIterKeys(t, s)
	tests := []struct {
		name         string
		lower, upper []byte
		reverse      bool
		seek         string
		want         []string // keys from the seek position to the end
	}{
		{"exact key", nil, nil, false, "bb", []string{"bb", "c", "d\x00", "e", "\xff", "\xff\xff"}},
		{"between keys", nil, nil, false, "bc", []string{"c", "d\x00", "e", "\xff", "\xff\xff"}},
		{"before the first key", nil, nil, false, "", iterKeys},
		{"past the last key", nil, nil, false, "\xff\xff\xff", nil},
		{"below lower bound", b("b"), b("c"), false, "a", []string{"b", "ba", "bb"}},
		{"at upper bound", b("b"), b("c"), false, "c", nil},
		{"above upper bound", b("b"), b("c"), false, "d", nil},
		{"inside bounds", b("b"), b("c"), false, "ba", []string{"ba", "bb"}},
		{"reverse exact key", nil, nil, true, "bb", []string{"bb", "ba", "b", "a", "\x00"}},
		{"reverse between keys", nil, nil, true, "bc", []string{"bb", "ba", "b", "a", "\x00"}},
		{"reverse prefix of a key", nil, nil, true, "d", []string{"c", "bb", "ba", "b", "a", "\x00"}},
		{"reverse key with successor", nil, nil, true, "d\x00", []string{"d\x00", "c", "bb", "ba", "b", "a", "\x00"}},
		{"reverse before the first key", nil, nil, true, "", nil},
		{"reverse past the last key", nil, nil, true, "\xff\xff\xff", reversed(iterKeys)},
		{"reverse above upper bound", b("b"), b("c"), true, "z", []string{"bb", "ba", "b"}},
		{"reverse at upper bound", b("b"), b("c"), true, "c", []string{"bb", "ba", "b"}},
		{"reverse below lower bound", b("b"), b("c"), true, "a", nil},
		{"reverse at lower bound", b("b"), b("c"), true, "b", []string{"b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			err := s.View(context.Background(), func(r storage.Reader) error {
				it, err := r.NewIter(storage.IterParams{Lower: tc.lower, Upper: tc.upper, Reverse: tc.reverse})
				if err != nil {
					return err
				}
				for ok := it.SeekGE(b(tc.seek)); ok; ok = it.Next() {
					got = append(got, string(it.Key()))
				}
				if err := it.Err(); err != nil {
					return err
				}
				return it.Close()
			})
			if err != nil {
				t.Fatalf("View: %v", err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// testIteratorReposition checks that an iterator can be positioned again
// after it has run off the end.
func testIteratorReposition(t *testing.T, s storage.Store) {
	loadIterKeys(t, s)
	for _, reverse := range []bool{false, true} {
		err := s.View(context.Background(), func(r storage.Reader) error {
			it, err := r.NewIter(storage.IterParams{Lower: b("b"), Upper: b("c"), Reverse: reverse})
			if err != nil {
				return err
			}
			defer it.Close()
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			if n != 3 {
				t.Errorf("reverse=%v: first pass saw %d keys, want 3", reverse, n)
			}
			if !it.SeekGE(b("ba")) || string(it.Key()) != "ba" {
				t.Errorf("reverse=%v: SeekGE(ba) after the end did not land on ba", reverse)
			}
			if !it.First() {
				t.Errorf("reverse=%v: First after SeekGE found nothing", reverse)
			}
			want := "b"
			if reverse {
				want = "bb"
			}
			if got := string(it.Key()); got != want {
				t.Errorf("reverse=%v: First = %q, want %q", reverse, got, want)
			}
			return it.Err()
		})
		if err != nil {
			t.Fatalf("View: %v", err)
		}
	}
}

func testReadYourWrites(t *testing.T, s storage.Store) {
	write(t, s, set("a", "1"), set("b", "2"))
	err := s.Update(context.Background(), func(tx storage.Txn) error {
		if err := apply(tx, []op{set("b", "20"), set("c", "3"), del("a")}); err != nil {
			return err
		}
		for _, want := range []struct {
			key, value string
			found      bool
		}{
			{"a", "", false},
			{"b", "20", true},
			{"c", "3", true},
		} {
			v, found, err := getFrom(tx, want.key)
			if err != nil {
				return err
			}
			if v != want.value || found != want.found {
				t.Errorf("inside Update: Get(%q) = %q, found %v; want %q, found %v", want.key, v, found, want.value, want.found)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	got := viewScan(t, s, storage.IterParams{})
	if want := []string{"b=20", "c=3"}; !slices.Equal(got, want) {
		t.Errorf("after commit: %q, want %q", got, want)
	}
}

func testIteratorSeesOwnWrites(t *testing.T, s storage.Store) {
	write(t, s, set("a", "1"), set("b", "2"), set("c", "3"), set("d", "4"))
	tx := []op{
		set("b", "20"), // overwrite a committed key
		del("c"),       // delete a committed key
		set("bb", "x"), // a new key between committed ones
		set("e", "5"),  // a new key past the last committed one
		set("0", "0"),  // a new key before the first
		set("f", "6"),  // a new key...
		del("f"),       // ...deleted in the same transaction
		del("zz"),      // deleting a key that never existed
	}
	merged := []string{"0=0", "a=1", "b=20", "bb=x", "d=4", "e=5"}
	tests := []struct {
		name string
		p    storage.IterParams
		seek string // empty: First
		want []string
	}{
		{"all", storage.IterParams{}, "", merged},
		{"all reverse", storage.IterParams{Reverse: true}, "", reversed(merged)},
		{"bounded", storage.IterParams{Lower: b("b"), Upper: b("d")}, "", []string{"b=20", "bb=x"}},
		{"bounded reverse", storage.IterParams{Lower: b("b"), Upper: b("d"), Reverse: true}, "", []string{"bb=x", "b=20"}},
		{"seek onto a deleted key", storage.IterParams{}, "c", []string{"d=4", "e=5"}},
		{"reverse seek onto a deleted key", storage.IterParams{Reverse: true}, "c", []string{"bb=x", "b=20", "a=1", "0=0"}},
		{"only deleted keys in range", storage.IterParams{Lower: b("c"), Upper: b("d")}, "", nil},
	}
	err := s.Update(context.Background(), func(txn storage.Txn) error {
		if err := apply(txn, tx); err != nil {
			return err
		}
		for _, tc := range tests {
			it, err := txn.NewIter(tc.p)
			if err != nil {
				return err
			}
			var ok bool
			if tc.seek == "" {
				ok = it.First()
			} else {
				ok = it.SeekGE(b(tc.seek))
			}
			got, err := drain(it, ok)
			if err != nil {
				return err
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: got %q\nwant %q", tc.name, got, tc.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if got := viewScan(t, s, storage.IterParams{}); !slices.Equal(got, merged) {
		t.Errorf("after commit: %q\nwant %q", got, merged)
	}
}

// testSeeksAmongSteps moves iterators by Next and by seeks ahead of and
// behind their position, near and far, forwards and in reverse, over
// committed keys and a transaction's own writes and deletions, and checks
// every position against a model. A store may serve a short seek ahead
// from keys it has already fetched.
func testSeeksAmongSteps(t *testing.T, s storage.Store) {
	rng := rand.New(rand.NewPCG(7, 11))
	key := func(i int) string { return fmt.Sprintf("k%04d", i) }
	var committed []op
	live := map[string]string{}
	for i := 0; i < 3000; i += 3 {
		committed = append(committed, set(key(i), "c"+strconv.Itoa(i)))
		live[key(i)] = "c" + strconv.Itoa(i)
	}
	write(t, s, committed...)
	var own []op
	for range 200 {
		k := key(rng.IntN(3000))
		if rng.IntN(3) == 0 {
			own = append(own, del(k))
			delete(live, k)
		} else {
			own = append(own, set(k, "o"+k))
			live[k] = "o" + k
		}
	}
	check := func(t *testing.T, r storage.Reader, model map[string]string) {
		keys := make([]string, 0, len(model))
		for k := range model {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, reverse := range []bool{false, true} {
			order := slices.Clone(keys)
			if reverse {
				slices.Reverse(order)
			}
			it, err := r.NewIter(storage.IterParams{Lower: b(key(100)), Upper: b(key(2900)), Reverse: reverse})
			if err != nil {
				t.Fatal(err)
			}
			// at is the model's position: the index in order of the
			// iterator's key, len(order) when it is exhausted.
			inRange := func(k string) bool { return k >= key(100) && k < key(2900) }
			order = slices.DeleteFunc(order, func(k string) bool { return !inRange(k) })
			seek := func(k string) int {
				return sort.Search(len(order), func(i int) bool {
					if reverse {
						return order[i] <= k
					}
					return order[i] >= k
				})
			}
			at := 0
			ok := it.First()
			for step := 0; step < 400; step++ {
				if ok != (at < len(order)) || ok && (string(it.Key()) != order[at] || string(it.Value()) != model[order[at]]) {
					got := "(none)"
					if ok {
						got = string(it.Key()) + "=" + string(it.Value())
					}
					want := "(none)"
					if at < len(order) {
						want = order[at] + "=" + model[order[at]]
					}
					t.Fatalf("reverse=%v, step %d: at %s, want %s", reverse, step, got, want)
				}
				if !ok {
					at = 0
					ok = it.First()
					continue
				}
				cur, _ := strconv.Atoi(order[at][1:])
				switch rng.IntN(4) {
				case 0:
					at++
					ok = it.Next()
				default:
					d := []int{1, 2, 4, 10, 40, 400}[rng.IntN(6)]
					if rng.IntN(5) == 0 {
						d = -d
					}
					if reverse {
						d = -d
					}
					k := key(min(max(cur+d, 0), 2999))
					if rng.IntN(2) == 0 {
						k += "\x00"
					}
					at = seek(k)
					ok = it.SeekGE(b(k))
				}
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	base := map[string]string{}
	for _, o := range committed {
		base[o.key] = o.value
	}
	t.Run("committed", func(t *testing.T) {
		if err := s.View(context.Background(), func(r storage.Reader) error { check(t, r, base); return nil }); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("own writes", func(t *testing.T) {
		err := s.Update(context.Background(), func(txn storage.Txn) error {
			if err := apply(txn, own); err != nil {
				return err
			}
			check(t, txn, live)
			return errAbort
		})
		if !errors.Is(err, errAbort) {
			t.Fatal(err)
		}
	})
}

var errAbort = errors.New("abort on purpose")

func testAtomicity(t *testing.T, s storage.Store) {
	write(t, s, set("a", "1"), set("b", "2"))
	before := viewScan(t, s, storage.IterParams{})
	err := s.Update(context.Background(), func(tx storage.Txn) error {
		if err := apply(tx, []op{set("a", "changed"), del("b"), set("c", "new")}); err != nil {
			return err
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("Update = %v, want the function's error", err)
	}
	if got := viewScan(t, s, storage.IterParams{}); !slices.Equal(got, before) {
		t.Errorf("after a failed Update: %q, want %q", got, before)
	}
}

// testDeferredUpdate: a deferred commit is visible when UpdateDeferred
// returns, atomic, and a failed one leaves nothing; a later Update sees it.
func testDeferredUpdate(t *testing.T, s storage.Store) {
	ctx := context.Background()
	err := storage.UpdateDeferred(ctx, s, func(tx storage.Txn) error {
		return apply(tx, []op{set("a", "1"), set("b", "2")})
	})
	if err != nil {
		t.Fatalf("UpdateDeferred: %v", err)
	}
	if got, want := viewScan(t, s, storage.IterParams{}), []string{"a=1", "b=2"}; !slices.Equal(got, want) {
		t.Fatalf("after UpdateDeferred: %q, want %q", got, want)
	}
	err = storage.UpdateDeferred(ctx, s, func(tx storage.Txn) error {
		if err := apply(tx, []op{del("a"), set("c", "3")}); err != nil {
			return err
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("UpdateDeferred = %v, want the function's error", err)
	}
	err = s.Update(ctx, func(tx storage.Txn) error {
		v, found, err := getFrom(tx, "b")
		if err != nil || !found || v != "2" {
			return fmt.Errorf("b = %q, %v, %v in a later Update, want 2", v, found, err)
		}
		return apply(tx, []op{set("d", "4")})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := viewScan(t, s, storage.IterParams{}), []string{"a=1", "b=2", "d=4"}; !slices.Equal(got, want) {
		t.Errorf("after a failed UpdateDeferred and an Update: %q, want %q", got, want)
	}
}

func testPanicRollsBack(t *testing.T, s storage.Store) {
	write(t, s, set("a", "1"))
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("the panic did not propagate out of Update")
			}
		}()
		_ = s.Update(context.Background(), func(tx storage.Txn) error {
			if err := tx.Set(b("a"), b("changed")); err != nil {
				return err
			}
			panic("on purpose")
		})
	}()
	if v, _ := get(t, s, "a"); v != "1" {
		t.Errorf("after a panicking Update: a = %q, want 1", v)
	}
	// The store must still take writes: nothing may be left locked.
	done := make(chan struct{})
	go func() {
		defer close(done)
		write(t, s, set("a", "2"))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Update after a panicking Update did not finish")
	}
	if v, _ := get(t, s, "a"); v != "2" {
		t.Errorf("a = %q, want 2", v)
	}
}

func testErrorsPassThrough(t *testing.T, s storage.Store) {
	wrapped := fmt.Errorf("context: %w", errAbort)
	if err := s.View(context.Background(), func(storage.Reader) error { return wrapped }); !errors.Is(err, errAbort) {
		t.Errorf("View = %v, want the function's error", err)
	}
	if err := s.Update(context.Background(), func(storage.Txn) error { return wrapped }); !errors.Is(err, errAbort) {
		t.Errorf("Update = %v, want the function's error", err)
	}
	// A read-only Update commits nothing and succeeds.
	if err := s.Update(context.Background(), func(tx storage.Txn) error {
		_, err := tx.Get(b("nothing"))
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return err
	}); err != nil {
		t.Errorf("read-only Update = %v", err)
	}
}

func testSnapshotIsolation(t *testing.T, s storage.Store) {
	write(t, s, set("k", "old"), set("gone", "here"), set("m", "1"))
	before := []string{"gone=here", "k=old", "m=1"}
	after := []string{"k=new", "m=1", "n=added"}

	err := s.View(context.Background(), func(r storage.Reader) error {
		// Read something first: some backends take the snapshot lazily.
		if v, _, err := getFrom(r, "k"); err != nil || v != "old" {
			return fmt.Errorf("first read: %q, %v", v, err)
		}
		early, err := r.NewIter(storage.IterParams{})
		if err != nil {
			return err
		}

		// Commit from another goroutine while the View is open.
		done := make(chan error)
		go func() {
			done <- s.Update(context.Background(), func(tx storage.Txn) error {
				return apply(tx, []op{set("k", "new"), del("gone"), set("n", "added")})
			})
		}()
		if err := <-done; err != nil {
			return fmt.Errorf("concurrent Update: %w", err)
		}

		for _, want := range []struct {
			key, value string
			found      bool
		}{{"k", "old", true}, {"gone", "here", true}, {"n", "", false}} {
			v, found, err := getFrom(r, want.key)
			if err != nil {
				return err
			}
			if v != want.value || found != want.found {
				t.Errorf("View after a concurrent commit: Get(%q) = %q, found %v; want %q, found %v", want.key, v, found, want.value, want.found)
			}
		}
		got, err := drain(early, early.First())
		if err != nil {
			return err
		}
		if !slices.Equal(got, before) {
			t.Errorf("iterator opened before the commit: %q, want %q", got, before)
		}
		got, err = scan(r, storage.IterParams{})
		if err != nil {
			return err
		}
		if !slices.Equal(got, before) {
			t.Errorf("iterator opened after the commit: %q, want %q", got, before)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	if got := viewScan(t, s, storage.IterParams{}); !slices.Equal(got, after) {
		t.Errorf("new View: %q, want %q", got, after)
	}
}

// testConsistentViewsUnderWrites has writers keep two keys equal, and
// readers check that no View ever sees them differ or sees the pair move
// while it reads.
func testConsistentViewsUnderWrites(t *testing.T, s storage.Store) {
	write(t, s, set("x", "0"), set("y", "0"))
	ctx := context.Background()
	const writes = 100
	var wg sync.WaitGroup
	stop := make(chan struct{})
	writerErr := make(chan error, 1)
	go func() {
		defer close(stop)
		for i := 1; i <= writes; i++ {
			v := b(strconv.Itoa(i))
			err := s.Update(ctx, func(tx storage.Txn) error {
				if err := tx.Set(b("x"), v); err != nil {
					return err
				}
				return tx.Set(b("y"), v)
			})
			if err != nil {
				writerErr <- err
				return
			}
		}
	}()
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := s.View(ctx, func(r storage.Reader) error {
					x1, _, err := getFrom(r, "x")
					if err != nil {
						return err
					}
					got, err := scan(r, storage.IterParams{})
					if err != nil {
						return err
					}
					x2, _, err := getFrom(r, "x")
					if err != nil {
						return err
					}
					want := []string{"x=" + x1, "y=" + x1}
					if !slices.Equal(got, want) || x2 != x1 {
						return fmt.Errorf("inconsistent View: x=%s, then %q, then x=%s", x1, got, x2)
					}
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-writerErr:
		t.Fatalf("Update: %v", err)
	default:
	}
	if v, _ := get(t, s, "y"); v != strconv.Itoa(writes) {
		t.Errorf("y = %s, want %d", v, writes)
	}
}

// testConcurrentCounter has writers increment one counter; with lock, each
// names the counter to Prefetch with Lock first, which may change how
// they wait for one another but never the result.
func testConcurrentCounter(t *testing.T, s storage.Store, lock bool) {
	const (
		writers = 16
		each    = 25
	)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				err := s.Update(ctx, func(tx storage.Txn) error {
					if lock {
						storage.Prefetch(tx, storage.Read{Key: b("counter"), Lock: true})
					}
					n := 0
					v, err := tx.Get(b("counter"))
					switch {
					case errors.Is(err, storage.ErrNotFound):
					case err != nil:
						return err
					default:
						if n, err = strconv.Atoi(string(v)); err != nil {
							return err
						}
					}
					if err := tx.Set(b("counter"), b(strconv.Itoa(n+1))); err != nil {
						return err
					}
					// Record who took each value: a lost update shows up
					// as two writers holding the same one.
					return tx.Set(b(fmt.Sprintf("taken/%06d", n+1)), b(fmt.Sprintf("%d/%d", w, i)))
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Update: %v", err)
	}
	if v, _ := get(t, s, "counter"); v != strconv.Itoa(writers*each) {
		t.Errorf("counter = %s, want %d", v, writers*each)
	}
	taken := viewScan(t, s, storage.IterParams{Lower: b("taken/"), Upper: b("taken0")})
	if len(taken) != writers*each {
		t.Errorf("%d values taken, want %d", len(taken), writers*each)
	}
	owners := map[string]bool{}
	for _, kv := range taken {
		_, owner, _ := strings.Cut(kv, "=")
		if owners[owner] {
			t.Errorf("increment %s counted twice", owner)
		}
		owners[owner] = true
	}
}

// meet lets two transactions wait for each other's reads, so a backend
// that runs them concurrently really overlaps them; one that runs writers
// one at a time makes the first wait out the timeout alone.
type meet struct {
	arrived chan struct{}
}

func (m meet) wait() {
	m.arrived <- struct{}{}
	select {
	case <-m.arrived:
	case <-time.After(200 * time.Millisecond):
	}
}

// Two transactions each read both of two keys and, seeing both set, clear
// one of them: run one after the other, the second sees a cleared key and
// leaves the other. Snapshot isolation alone would let both clear
// (write skew); a serializable store never ends with both cleared.
func testNoWriteSkew(t *testing.T, s storage.Store) {
	ctx := context.Background()
	for round := range 5 {
		write(t, s, set("on/a", "1"), set("on/b", "1"))
		m := meet{arrived: make(chan struct{}, 2)}
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for _, mine := range []string{"on/a", "on/b"} {
			wg.Go(func() {
				first := true
				errs <- s.Update(ctx, func(tx storage.Txn) error {
					on := 0
					for _, k := range []string{"on/a", "on/b"} {
						v, err := tx.Get(b(k))
						if err != nil && !errors.Is(err, storage.ErrNotFound) {
							return err
						}
						if string(v) == "1" {
							on++
						}
					}
					if first {
						first = false
						m.wait()
					}
					if on == 2 {
						return tx.Set(b(mine), b("0"))
					}
					return nil
				})
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, storage.ErrConflict) {
				t.Fatalf("round %d: Update: %v", round, err)
			}
		}
		a, _ := get(t, s, "on/a")
		bv, _ := get(t, s, "on/b")
		if a == "0" && bv == "0" {
			t.Fatalf("round %d: both keys cleared: write skew", round)
		}
	}
}

// One transaction counts the keys of a range and stores the count; another
// reads that count and inserts a key into the range. In any serial order,
// either the insert saw no count and the count includes the new key, or the
// insert saw the count; a count that missed the key while the insert also
// missed the count is a phantom.
func testNoPhantoms(t *testing.T, s storage.Store) {
	ctx := context.Background()
	for round := range 5 {
		prefix := fmt.Sprintf("ph%d/", round)
		sum := fmt.Sprintf("sum%d", round)
		write(t, s, set(prefix+"1", "x"), set(prefix+"2", "x"))
		m := meet{arrived: make(chan struct{}, 2)}
		var wg sync.WaitGroup
		var sawSum bool
		errs := make(chan error, 2)
		wg.Go(func() {
			first := true
			errs <- s.Update(ctx, func(tx storage.Txn) error {
				it, err := tx.NewIter(storage.IterParams{Lower: b(prefix), Upper: b(prefix + "\xff")})
				if err != nil {
					return err
				}
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					n++
				}
				if err := it.Close(); err != nil {
					return err
				}
				if first {
					first = false
					m.wait()
				}
				return tx.Set(b(sum), b(strconv.Itoa(n)))
			})
		})
		wg.Go(func() {
			first := true
			errs <- s.Update(ctx, func(tx storage.Txn) error {
				_, err := tx.Get(b(sum))
				switch {
				case errors.Is(err, storage.ErrNotFound):
					sawSum = false
				case err != nil:
					return err
				default:
					sawSum = true
				}
				if first {
					first = false
					m.wait()
				}
				return tx.Set(b(prefix+"3"), b("x"))
			})
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, storage.ErrConflict) {
				t.Fatalf("round %d: Update: %v", round, err)
			}
		}
		count, ok := get(t, s, sum)
		_, inserted := get(t, s, prefix+"3")
		if ok && inserted && !sawSum && count == "2" {
			t.Fatalf("round %d: the count missed the insert and the insert missed the count: a phantom", round)
		}
	}
}

// A transaction function that runs again (after a conflict, in a backend
// that retries) starts from the committed state: nothing of an earlier run
// is visible to it, and only the last run's writes commit. Forced here by
// making two writers collide on one key while each also writes a key of its
// own on every run, named by the run.
func testRerunSeesNothingOfTheFirstRun(t *testing.T, s storage.Store) {
	ctx := context.Background()
	write(t, s, set("hot", "0"))
	var wg sync.WaitGroup
	runs := make([]int, 8)
	errs := make(chan error, len(runs))
	for w := range runs {
		wg.Go(func() {
			errs <- s.Update(ctx, func(tx storage.Txn) error {
				runs[w]++
				for r := 1; r < runs[w]; r++ {
					if _, err := tx.Get(b(fmt.Sprintf("run/%d/%d", w, r))); !errors.Is(err, storage.ErrNotFound) {
						return fmt.Errorf("run %d of writer %d sees run %d's write (%v)", runs[w], w, r, err)
					}
				}
				v, err := tx.Get(b("hot"))
				if err != nil {
					return err
				}
				n, _ := strconv.Atoi(string(v))
				if err := tx.Set(b(fmt.Sprintf("run/%d/%d", w, runs[w])), b("x")); err != nil {
					return err
				}
				time.Sleep(time.Millisecond) // widen the window for a collision
				return tx.Set(b("hot"), b(strconv.Itoa(n+1)))
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
	}
	if v, _ := get(t, s, "hot"); v != strconv.Itoa(len(runs)) {
		t.Fatalf("hot = %s, want %d", v, len(runs))
	}
	for w, n := range runs {
		for r := 1; r <= n; r++ {
			_, found := get(t, s, fmt.Sprintf("run/%d/%d", w, r))
			if found != (r == n) {
				t.Errorf("writer %d: run %d's own key present: %v, want only the last run's (%d)", w, r, found, n)
			}
		}
	}
}

func testCopies(t *testing.T, s storage.Store) {
	key, value := b("key"), b("value")
	lower, upper := b("k"), b("l")
	err := s.Update(context.Background(), func(tx storage.Txn) error {
		if err := tx.Set(key, value); err != nil {
			return err
		}
		// Scribble over both slices while the transaction is open.
		copy(key, "XXX")
		copy(value, "XXXXX")
		v, found, err := getFrom(tx, "key")
		if err != nil {
			return err
		}
		if !found || v != "value" {
			t.Errorf("inside Update after mutating the arguments: Get(key) = %q, found %v", v, found)
		}
		// Bounds too: the iterator keeps to the range it was given.
		it, err := tx.NewIter(storage.IterParams{Lower: lower, Upper: upper})
		if err != nil {
			return err
		}
		copy(lower, "a")
		copy(upper, "z")
		got, err := drain(it, it.First())
		if err != nil {
			return err
		}
		if want := []string{"key=value"}; !slices.Equal(got, want) {
			t.Errorf("iterator after mutating its bounds: %q, want %q", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	key2, value2 := b("key2"), b("value2")
	write(t, s) // an empty Update in between does no harm
	err = s.Update(context.Background(), func(tx storage.Txn) error { return tx.Set(key2, value2) })
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	copy(key2, "XXXX")
	copy(value2, "XXXXXX")
	got := viewScan(t, s, storage.IterParams{})
	if want := []string{"key=value", "key2=value2"}; !slices.Equal(got, want) {
		t.Errorf("after mutating the arguments: %q, want %q", got, want)
	}
	// A value returned by Get belongs to the caller once it is copied; the
	// store must not hand out the same memory to the next reader.
	err = s.View(context.Background(), func(r storage.Reader) error {
		v, err := r.Get(b("key"))
		if err != nil {
			return err
		}
		kept := slices.Clone(v)
		if _, err := r.Get(b("key2")); err != nil {
			return err
		}
		if string(kept) != "value" {
			t.Errorf("copied value changed to %q", kept)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
}

func testLargeValues(t *testing.T, s storage.Store) {
	big := bytes.Repeat(b("0123456789abcdef"), 1<<18) // 4 MiB
	const many = 2000
	err := s.Update(context.Background(), func(tx storage.Txn) error {
		if err := tx.Set(b("big"), big); err != nil {
			return err
		}
		for i := range many {
			if err := tx.Set(b(fmt.Sprintf("many/%05d", i)), b(strconv.Itoa(i))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	err = s.View(context.Background(), func(r storage.Reader) error {
		v, err := r.Get(b("big"))
		if err != nil {
			return err
		}
		if !bytes.Equal(v, big) {
			t.Errorf("big value: got %d bytes, not the %d written", len(v), len(big))
		}
		got, err := scan(r, storage.IterParams{Lower: b("many/"), Upper: b("many0")})
		if err != nil {
			return err
		}
		if len(got) != many {
			t.Errorf("scanned %d keys, want %d", len(got), many)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
}

// testLongKeys checks keys of up to 12 KB, well past what a B-tree index
// entry holds (a third of a PostgreSQL page), of bytes that do not
// compress, many sharing their first few kilobytes: every operation
// treats them as it treats short keys, in byte order.
func testLongKeys(t *testing.T, s storage.Store) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, 12_000)
	for i := range noise {
		noise[i] = byte(rng.IntN(256))
	}
	head := string(noise[:2600])
	var keys []string
	for _, n := range []int{1, 100, 1999, 2000, 2001, 2047, 2048, 2100, 2599, 2600, 2601, 3000, 12_000} {
		keys = append(keys, string(noise[:n]))
	}
	for _, tail := range []string{"\x00", "\x00\x00", "\x01", "a", "ab", "b", "\xff", "\xff\xff", string(noise[5000:9000])} {
		keys = append(keys, head+tail)
	}
	keys = append(keys, head[:2599]+"\xff", "\xff")
	slices.Sort(keys)
	keys = slices.Compact(keys)
	val := func(k string) string { return "v" + strconv.Itoa(len(k)) + "-" + strconv.Itoa(int(k[len(k)-1])) }
	var ops []op
	for i, k := range keys {
		if i%2 == 0 { // half now, half in a second transaction
			ops = append(ops, set(k, val(k)))
		}
	}
	write(t, s, ops...)
	ops = ops[:0]
	for i, k := range keys {
		if i%2 == 1 {
			ops = append(ops, set(k, val(k)))
		}
	}
	write(t, s, ops...)
	pairs := func(ks []string) []string {
		out := []string{}
		for _, k := range ks {
			out = append(out, k+"="+val(k))
		}
		return out
	}
	short := func(kvs []string) []string { // for messages
		out := make([]string, len(kvs))
		for i, kv := range kvs {
			k, _, _ := strings.Cut(kv, "=")
			out[i] = fmt.Sprintf("#%d(len %d)", slices.Index(keys, k), len(k))
		}
		return out
	}
	for _, k := range keys {
		if v, found := get(t, s, k); !found || v != val(k) {
			t.Errorf("Get(key of %d bytes) = %q, %v", len(k), v, found)
		}
	}
	if got := viewScan(t, s, storage.IterParams{}); !slices.Equal(got, pairs(keys)) {
		t.Fatalf("scan: %v, want %v", short(got), short(pairs(keys)))
	}
	if got := viewScan(t, s, storage.IterParams{Reverse: true}); !slices.Equal(got, reversed(pairs(keys))) {
		t.Fatalf("reverse scan: %v", short(got))
	}
	// Bounds and seeks at every key and just past it.
	err := s.View(ctx, func(r storage.Reader) error {
		for i, lo := range keys {
			for _, j := range []int{i, i + 1, i + 3, len(keys)} {
				var hi []byte
				want := keys[i:]
				if j < len(keys) {
					hi, want = b(keys[j]), keys[i:j]
				}
				for _, rev := range []bool{false, true} {
					got, err := scan(r, storage.IterParams{Lower: b(lo), Upper: hi, Reverse: rev})
					if err != nil {
						return err
					}
					w := pairs(want)
					if rev {
						w = reversed(w)
					}
					if !slices.Equal(got, w) {
						t.Errorf("scan [#%d, #%d) reverse %v: %v, want %v", i, j, rev, short(got), short(w))
					}
				}
			}
			it, err := r.NewIter(storage.IterParams{})
			if err != nil {
				return err
			}
			got, err := drain(it, it.SeekGE(b(lo+"\x00")))
			if err != nil {
				return err
			}
			if w := pairs(keys[i+1:]); !slices.Equal(got, w) {
				t.Errorf("SeekGE(#%d + 0x00): %v, want %v", i, short(got), short(w))
			}
			it, err = r.NewIter(storage.IterParams{Reverse: true})
			if err != nil {
				return err
			}
			got, err = drain(it, it.SeekGE(b(lo)))
			if err != nil {
				return err
			}
			if w := reversed(pairs(keys[:i+1])); !slices.Equal(got, w) {
				t.Errorf("reverse SeekGE(#%d): %v, want %v", i, short(got), short(w))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	// A pointer whose target's key is long.
	write(t, s, set("ptr", "ab"))
	err = s.View(ctx, func(r storage.Reader) error {
		storage.Prefetch(r, storage.Read{Key: b("ptr"), Via: b(head)})
		v, found, err := getFrom(r, head+"ab")
		if err == nil && (!found || v != val(head+"ab")) {
			t.Errorf("Get(target) after Prefetch = %q (found %v), want %q", v, found, val(head+"ab"))
		}
		return err
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	write(t, s, del("ptr"))
	// In a transaction: its own long keys merge in order, deleted ones go.
	extra := []string{head + "aa", head + "\x00\x01", string(noise[:2600-1]) + "\x00"}
	gone := []string{head + "a", string(noise[:12_000])}
	err = s.Update(ctx, func(tx storage.Txn) error {
		for _, k := range extra {
			if err := tx.Set(b(k), b(val(k))); err != nil {
				return err
			}
		}
		for _, k := range gone {
			if err := tx.Delete(b(k)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	for _, k := range gone {
		keys = slices.DeleteFunc(keys, func(x string) bool { return x == k })
	}
	keys = append(keys, extra...)
	slices.Sort(keys)
	if got := viewScan(t, s, storage.IterParams{}); !slices.Equal(got, pairs(keys)) {
		t.Fatalf("scan after the update: %v, want %v", short(got), short(pairs(keys)))
	}
	// A range whose bounds fall among keys sharing their head.
	lo, hi := head+"\x00\x00", head+"b"
	empty, err := storage.DeleteRange(ctx, s, b(lo), b(hi), 1000)
	if err != nil || !empty {
		t.Fatalf("DeleteRange: %v, %v", empty, err)
	}
	keys = slices.DeleteFunc(keys, func(k string) bool { return k >= lo && k < hi })
	if got := viewScan(t, s, storage.IterParams{}); !slices.Equal(got, pairs(keys)) {
		t.Fatalf("scan after DeleteRange: %v, want %v", short(got), short(pairs(keys)))
	}
}

func testCancelledContext(t *testing.T, s storage.Store) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"deadline passed", expired, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			err := s.View(tc.ctx, func(storage.Reader) error { called = true; return nil })
			if !errors.Is(err, tc.want) || called {
				t.Errorf("View = %v, function called %v; want %v and no call", err, called, tc.want)
			}
			err = s.Update(tc.ctx, func(tx storage.Txn) error {
				called = true
				return tx.Set(b("written"), b("1"))
			})
			if !errors.Is(err, tc.want) || called {
				t.Errorf("Update = %v, function called %v; want %v and no call", err, called, tc.want)
			}
			if _, found := get(t, s, "written"); found {
				t.Errorf("a cancelled Update wrote")
			}
		})
	}
}

func testClosed(t *testing.T, s storage.Store) {
	write(t, s, set("a", "1"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	called := false
	if err := s.View(context.Background(), func(storage.Reader) error { called = true; return nil }); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("View after Close = %v, want ErrClosed", err)
	}
	if err := s.Update(context.Background(), func(storage.Txn) error { called = true; return nil }); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Update after Close = %v, want ErrClosed", err)
	}
	if called {
		t.Errorf("a function ran after Close")
	}
	if sz, ok := s.(storage.Sizer); ok {
		if _, err := sz.DiskUsage(); !errors.Is(err, storage.ErrClosed) {
			t.Errorf("DiskUsage after Close = %v, want ErrClosed", err)
		}
	}
	if err := s.Close(); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
}

// testCloseWaits closes the store while a View and an Update are running:
// Close must wait for both, and the Update must commit.
func testCloseWaits(t *testing.T, s storage.Store) {
	ctx := context.Background()
	release := make(chan struct{})
	var running sync.WaitGroup
	running.Add(2)
	viewErr, updateErr := make(chan error, 1), make(chan error, 1)
	go func() {
		viewErr <- s.View(ctx, func(r storage.Reader) error {
			running.Done()
			<-release
			_, err := r.Get(b("anything"))
			if errors.Is(err, storage.ErrNotFound) {
				return nil
			}
			return err
		})
	}()
	var once sync.Once
	go func() {
		updateErr <- s.Update(ctx, func(tx storage.Txn) error {
			once.Do(running.Done)
			<-release
			return tx.Set(b("late"), b("write"))
		})
	}()
	running.Wait()

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while calls were running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-viewErr; err != nil {
		t.Errorf("View running during Close = %v", err)
	}
	if err := <-updateErr; err != nil {
		t.Errorf("Update running during Close = %v", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := s.View(ctx, func(storage.Reader) error { return nil }); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("View after Close = %v, want ErrClosed", err)
	}
}

// Prefetching (storage.Prefetch) changes no read's result: not for keys
// present or absent, not for a pointer followed or one that leads nowhere,
// and not over a transaction's own writes, made before or after.
func testPrefetch(t *testing.T, s storage.Store) {
	write(t, s, set("ptr", "x1"), set("to/x1", "target"), set("plain", "v"), set("dangling", "x9"))
	prefetchAll := func(r storage.Reader) {
		storage.Prefetch(r,
			storage.Read{Key: b("ptr"), Via: b("to/")},
			storage.Read{Key: b("plain")},
			storage.Read{Key: b("missing"), Via: b("to/")},
			storage.Read{Key: b("dangling"), Via: b("to/")})
	}
	check := func(r storage.Reader, want map[string]string) error {
		for _, k := range []string{"ptr", "to/x1", "plain", "missing", "dangling", "to/x9", "to/"} {
			v, found, err := getFrom(r, k)
			if err != nil {
				return err
			}
			w, ok := want[k]
			if found != ok || v != w {
				t.Errorf("Get(%q) after Prefetch = %q (found %v), want %q (found %v)", k, v, found, w, ok)
			}
		}
		return nil
	}
	stored := map[string]string{"ptr": "x1", "to/x1": "target", "plain": "v", "dangling": "x9"}
	if err := s.View(context.Background(), func(r storage.Reader) error {
		prefetchAll(r)
		if err := check(r, stored); err != nil {
			return err
		}
		// Named again, and read twice: the same.
		prefetchAll(r)
		return check(r, stored)
	}); err != nil {
		t.Fatalf("View: %v", err)
	}
	err := s.Update(context.Background(), func(tx storage.Txn) error {
		if err := tx.Set(b("plain"), b("w")); err != nil {
			return err
		}
		if err := tx.Delete(b("ptr")); err != nil {
			return err
		}
		prefetchAll(tx)
		want := map[string]string{"to/x1": "target", "plain": "w", "dangling": "x9"}
		if err := check(tx, want); err != nil {
			return err
		}
		// Written after the prefetch: the write wins.
		if err := tx.Set(b("missing"), b("now")); err != nil {
			return err
		}
		if err := tx.Delete(b("to/x1")); err != nil {
			return err
		}
		want["missing"] = "now"
		delete(want, "to/x1")
		return check(tx, want)
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if err := s.View(context.Background(), func(r storage.Reader) error {
		prefetchAll(r)
		return check(r, map[string]string{"plain": "w", "dangling": "x9", "missing": "now"})
	}); err != nil {
		t.Fatalf("View after the Update: %v", err)
	}
}

// A store that owns the clock and tells it to transactions
// (storage.TxClock) tells an instant between the readings of its clock
// before and after the transaction.
func testTxClock(t *testing.T, s storage.Store) {
	clocked, ok := s.(storage.Clocked)
	if !ok {
		t.Skip("the store does not own a clock")
	}
	ctx := context.Background()
	for _, update := range []bool{false, true} {
		before, err := clocked.Now(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var in time.Time
		var told bool
		fn := func(r storage.Reader) error {
			storage.Prefetch(r, storage.Read{Key: b("k")})
			var err error
			in, told, err = storage.TxNow(r)
			if err != nil {
				return err
			}
			_, _, err = getFrom(r, "k")
			return err
		}
		if update {
			err = s.Update(ctx, func(tx storage.Txn) error { return fn(tx) })
		} else {
			err = s.View(ctx, fn)
		}
		if err != nil {
			t.Fatal(err)
		}
		after, err := clocked.Now(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !told {
			continue
		}
		if in.Before(before) || in.After(after) {
			t.Errorf("TxNow (update %v) = %v, not between %v and %v", update, in, before, after)
		}
	}
}

// DeleteRange (storage.DeleteRange, whether the store has its own or
// not) deletes the smallest keys of its range, at least limit of them or
// all, and nothing outside it, and reports the range empty exactly when
// nothing of it is left.
func testDeleteRange(t *testing.T, s storage.Store) {
	ctx := context.Background()
	var ops []op
	for _, k := range []string{"a", "b", "b\x00", "b1", "b2", "b3", "b4", "b\xff", "c"} {
		ops = append(ops, set(k, "v"+k))
	}
	write(t, s, ops...)
	inRange := []string{"b=vb", "b\x00=vb\x00", "b1=vb1", "b2=vb2", "b3=vb3", "b4=vb4", "b\xff=vb\xff"}
	steps := []struct {
		lower, upper string
		limit        int
		// outside are the keys outside the range; in, those in it.
		outside, in []string
	}{
		{"b", "c", 3, []string{"a=va", "c=vc"}, inRange},
		{"c", "", 5, []string{"a=va"}, []string{"c=vc"}},
	}
	for _, st := range steps {
		var upper []byte
		if st.upper != "" {
			upper = b(st.upper)
		}
		left := st.in
		for calls := 0; ; calls++ {
			if calls > len(st.in) {
				t.Fatalf("DeleteRange(%q, %q, %d) still not empty after %d calls", st.lower, st.upper, st.limit, calls)
			}
			empty, err := storage.DeleteRange(ctx, s, b(st.lower), upper, st.limit)
			if err != nil {
				t.Fatalf("DeleteRange(%q, %q, %d): %v", st.lower, st.upper, st.limit, err)
			}
			got := viewScan(t, s, storage.IterParams{})
			var out, in []string
			for _, kv := range got {
				k, _, _ := strings.Cut(kv, "=")
				if k >= st.lower && (upper == nil || k < st.upper) {
					in = append(in, kv)
				} else {
					out = append(out, kv)
				}
			}
			if !slices.Equal(out, st.outside) {
				t.Fatalf("DeleteRange(%q, %q, %d) left %q outside its range, want %q", st.lower, st.upper, st.limit, out, st.outside)
			}
			// The smallest first, at least limit of them (or all).
			if deleted := len(left) - len(in); deleted < min(st.limit, len(left)) || !slices.Equal(in, left[deleted:]) {
				t.Fatalf("DeleteRange(%q, %q, %d) left %q of %q", st.lower, st.upper, st.limit, in, left)
			}
			// Not empty with nothing left only where it deleted exactly
			// limit keys and could not tell.
			if empty && len(in) > 0 || !empty && len(in) == 0 && len(left) != st.limit {
				t.Fatalf("DeleteRange(%q, %q, %d) reported empty=%v with %q left", st.lower, st.upper, st.limit, empty, in)
			}
			left = in
			if empty {
				break
			}
		}
	}
}

// testSavepoints checks storage.Savepointer where the store has it: a
// rollback takes back exactly the writes since its mark, for reads,
// iterators and the commit, and nested marks unwind in order.
func testSavepoints(t *testing.T, s storage.Store) {
	write(t, s, set("a", "1"), set("b", "1"), set("c", "1"))
	has := false
	err := s.Update(context.Background(), func(tx storage.Txn) error {
		outer, ok := storage.Savepoint(tx)
		if has = ok; !ok {
			return nil
		}
		if err := apply(tx, []op{set("a", "2"), del("b"), set("d", "2")}); err != nil {
			return err
		}
		inner, _ := storage.Savepoint(tx)
		if err := apply(tx, []op{set("a", "3"), set("e", "3"), del("c")}); err != nil {
			return err
		}
		if err := tx.(storage.Savepointer).RollbackTo(inner); err != nil {
			return fmt.Errorf("RollbackTo(inner): %w", err)
		}
		got, err := scan(tx, storage.IterParams{})
		if err != nil {
			return err
		}
		if want := []string{"a=2", "c=1", "d=2"}; !slices.Equal(got, want) {
			t.Errorf("after the inner rollback the transaction sees %v, want %v", got, want)
		}
		if err := tx.(storage.Savepointer).RollbackTo(outer); err != nil {
			return fmt.Errorf("RollbackTo(outer): %w", err)
		}
		if v, found, err := getFrom(tx, "b"); err != nil || !found || v != "1" {
			t.Errorf("after the outer rollback Get(b) = %q, %v, %v; want 1", v, found, err)
		}
		// Writes after a rollback are kept.
		if err := apply(tx, []op{set("f", "4")}); err != nil {
			return err
		}
		keep, _ := storage.Savepoint(tx)
		if err := apply(tx, []op{set("a", "5")}); err != nil {
			return err
		}
		return tx.(storage.Savepointer).RollbackTo(keep)
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if !has {
		t.Skip("the store's transactions have no savepoints")
	}
	got := viewScan(t, s, storage.IterParams{})
	if want := []string{"a=1", "b=1", "c=1", "f=4"}; !slices.Equal(got, want) {
		t.Errorf("committed %v, want %v", got, want)
	}
}

// ScanSpans reads the pairs of its spans in key order, over a snapshot
// and inside a transaction with its own writes; spans without keys, a
// span without an upper bound, long keys, spans that fill several pages,
// more spans than one statement names, and a stop midway all read what
// an iterator a span reads.
func testScanSpans(t *testing.T, s storage.Store) {
	long := strings.Repeat("k", 2500)
	var ops []op
	for i := range 300 {
		ops = append(ops, set(fmt.Sprintf("a%03d", i), fmt.Sprint(i)))
	}
	ops = append(ops, set("b1", "x"), set(long+"1", "L1"), set(long+"2", "L2"), set("z", "end"))
	write(t, s, ops...)
	sp := func(lo, hi string) storage.Span {
		if hi == "" {
			return storage.Span{Lower: b(lo)}
		}
		return storage.Span{Lower: b(lo), Upper: b(hi)}
	}
	var many []storage.Span
	for i := 0; i < 300; i += 7 {
		many = append(many, sp(fmt.Sprintf("a%03d", i), fmt.Sprintf("a%03d\xff", i)))
	}
	cases := [][]storage.Span{
		{sp("a000", "a100"), sp("a150", "a299")},
		{sp("a", "b"), sp("b", "b2"), sp("c", "d"), sp("y", "")},
		{sp("a290", "a295"), sp("b", "c"), sp(long, long+"3")},
		many,
		{},
	}
	read := func(r storage.Reader, spans []storage.Span, stop int) ([]string, error) {
		var out []string
		err := storage.ScanSpans(r, spans, func(k, v []byte) (bool, error) {
			out = append(out, string(k[:min(len(k), 8)])+"="+string(v))
			return len(out) != stop, nil
		})
		return out, err
	}
	check := func(r storage.Reader, where string) {
		for n, spans := range cases {
			for _, stop := range []int{-1, 1, 70} {
				want, err := read(struct{ storage.Reader }{r}, spans, stop) // one iterator a span
				if err != nil {
					t.Fatal(err)
				}
				got, err := read(r, spans, stop)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s, case %d, stop at %d: %q, want %q", where, n, stop, got, want)
				}
			}
		}
	}
	if err := s.View(context.Background(), func(r storage.Reader) error {
		check(r, "in a View")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(context.Background(), func(tx storage.Txn) error {
		if err := apply(tx, []op{set("a005", "new"), del("a150"), set("b1x", "y")}); err != nil {
			return err
		}
		check(tx, "in an Update after its writes")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// GetMany reads what Get reads, absent keys as nil, in the order asked,
// over a snapshot and inside a transaction with its own writes.
func testGetMany(t *testing.T, s storage.Store) {
	long := strings.Repeat("k", 2500)
	write(t, s, set("a", "1"), set("b", ""), set(long+"x", "L"), set("d", "4"))
	keys := [][]byte{b("d"), b("nope"), b("a"), b(long + "x"), b("b"), b(long + "y")}
	many := func(r storage.Reader) ([]string, error) {
		var out []string
		err := storage.GetMany(r, keys, func(i int, v []byte) error {
			if v == nil {
				out = append(out, string(keys[i][:1])+":absent")
			} else {
				out = append(out, string(keys[i][:1])+"="+string(v))
			}
			return nil
		})
		return out, err
	}
	var got []string
	if err := s.View(context.Background(), func(r storage.Reader) (err error) {
		got, err = many(r)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"d=4", "n:absent", "a=1", "k=L", "b=", "k:absent"}; !slices.Equal(got, want) {
		t.Errorf("in a View: %q, want %q", got, want)
	}
	if err := s.Update(context.Background(), func(tx storage.Txn) error {
		if err := apply(tx, []op{set("nope", "5"), del("a"), set("d", "40")}); err != nil {
			return err
		}
		var err error
		got, err = many(tx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"d=40", "n=5", "a:absent", "k=L", "b=", "k:absent"}; !slices.Equal(got, want) {
		t.Errorf("in an Update after its writes: %q, want %q", got, want)
	}
}
