//go:build invariants

package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"
)

// WithChecks wraps s in a store that checks how the store and its caller
// keep this package's contract, and panics when either breaks it. It exists
// only in builds with the invariants tag; other builds return s unchanged.
//
// The caller's side: a Reader, Txn or Iterator used after its function
// returned, an iterator left open, Next before First or SeekGE, Key or
// Value read at no position. The store's side: keys out of bounds or out
// of order, a seek landing on the wrong side of its key. To catch callers
// that keep a slice past its validity, the wrapper hands out copies and
// overwrites them with garbage when they expire.
//
// The result implements Clocked and Sizer exactly when s does.
func WithChecks(s Store) Store {
	c := &checked{inner: s}
	sizer, isSizer := s.(Sizer)
	clocked, isClocked := s.(Clocked)
	switch {
	case isSizer && isClocked:
		return struct {
			*checked
			Sizer
			Clocked
		}{c, sizer, clocked}
	case isSizer:
		return struct {
			*checked
			Sizer
		}{c, sizer}
	case isClocked:
		return struct {
			*checked
			Clocked
		}{c, clocked}
	}
	return c
}

type checked struct {
	inner Store
}

func (c *checked) View(ctx context.Context, fn func(r Reader) error) error {
	return c.inner.View(ctx, func(r Reader) error {
		cr := &checkedReader{inner: r}
		err := fn(cr)
		cr.finish()
		return err
	})
}

func (c *checked) Update(ctx context.Context, fn func(tx Txn) error) error {
	return c.inner.Update(ctx, checkedFn(fn))
}

// UpdateDeferred checks like Update; a store without the capability
// commits durably, which is stronger.
func (c *checked) UpdateDeferred(ctx context.Context, fn func(tx Txn) error) error {
	return UpdateDeferred(ctx, c.inner, checkedFn(fn))
}

// UpdateOptimistic checks like Update; a store without the capability
// runs fn through Update.
func (c *checked) UpdateOptimistic(ctx context.Context, fn func(tx Txn) error) error {
	return UpdateOptimistic(ctx, c.inner, checkedFn(fn))
}

// checkedFn runs fn on a checking wrapper of the transaction.
func checkedFn(fn func(tx Txn) error) func(tx Txn) error {
	return func(tx Txn) error {
		ct := &checkedTxn{checkedReader: checkedReader{inner: tx}, tx: tx}
		err := fn(ct)
		ct.finish()
		return err
	}
}

func (c *checked) Close() error { return c.inner.Close() }

// DeleteRange forwards to the store's own when it has one, and otherwise
// deletes through the checked Update.
func (c *checked) DeleteRange(ctx context.Context, lower, upper []byte, limit int) (bool, error) {
	if d, ok := c.inner.(RangeDeleter); ok {
		return d.DeleteRange(ctx, lower, upper, limit)
	}
	return deleteRangeByKeys(ctx, c, lower, upper, limit)
}

// Erase forwards to the store's own Eraser. The wrapper has the method
// whatever the store, so CanErase asks it about the store it wraps.
func (c *checked) Erase(ctx context.Context, spans [][2][]byte) error {
	if er, ok := c.inner.(Eraser); ok {
		return er.Erase(ctx, spans)
	}
	return errors.New("storage: the store cannot erase")
}

func (c *checked) canErase() bool { return CanErase(c.inner) }

func violation(format string, args ...any) {
	panic(fmt.Sprintf("storage invariant violated: "+format, args...))
}

// poison overwrites a slice the caller may no longer use.
func poison(b []byte) {
	for i := range b {
		b[i] = 0xa5
	}
}

type checkedReader struct {
	inner   Reader
	done    bool
	lastGet []byte
	open    map[*checkedIter]bool
}

func (r *checkedReader) enter(op string) {
	if r.done {
		violation("%s on a Reader or Txn after its function returned", op)
	}
	poison(r.lastGet)
	r.lastGet = nil
}

func (r *checkedReader) finish() {
	r.done = true
	poison(r.lastGet)
	if n := len(r.open); n > 0 {
		violation("%d iterator(s) left open when the function returned", n)
	}
}

func (r *checkedReader) Get(key []byte) ([]byte, error) {
	r.enter("Get")
	v, err := r.inner.Get(key)
	if err != nil {
		if v != nil {
			violation("Get(%q) returned a value with error %v", key, err)
		}
		return nil, err
	}
	r.lastGet = bytes.Clone(v)
	if r.lastGet == nil {
		r.lastGet = []byte{}
	}
	return r.lastGet, nil
}

func (r *checkedReader) NewIter(p IterParams) (Iterator, error) {
	r.enter("NewIter")
	inner, err := r.inner.NewIter(p)
	if err != nil {
		return nil, err
	}
	it := &checkedIter{
		inner:   inner,
		r:       r,
		lower:   bytes.Clone(p.Lower),
		upper:   bytes.Clone(p.Upper),
		hasUp:   p.Upper != nil,
		reverse: p.Reverse,
	}
	if r.open == nil {
		r.open = map[*checkedIter]bool{}
	}
	r.open[it] = true
	return it, nil
}

type checkedTxn struct {
	checkedReader
	tx Txn
}

func (t *checkedTxn) Set(key, value []byte) error {
	t.enter("Set")
	return t.tx.Set(key, value)
}

func (t *checkedTxn) Delete(key []byte) error {
	t.enter("Delete")
	return t.tx.Delete(key)
}

// checkedTxn is a Deadliner whatever its store; a transaction of a store
// without deadlines ignores the call, as such a store is not Clocked.
func (t *checkedTxn) CommitBefore(at time.Time) {
	t.enter("CommitBefore")
	CommitBefore(t.tx, at)
}

// Savepoint forwards to the store's transaction, which may not have
// savepoints.
func (t *checkedTxn) Savepoint() (int, bool) {
	t.enter("Savepoint")
	return Savepoint(t.tx)
}

// RollbackTo forwards to the store's transaction; Savepoint gave out no
// mark when it has no savepoints.
func (t *checkedTxn) RollbackTo(sp int) error {
	t.enter("RollbackTo")
	s, ok := t.tx.(Savepointer)
	if !ok {
		panic("storage: RollbackTo on a transaction without savepoints")
	}
	return s.RollbackTo(sp)
}

// Prefetch forwards to the store's reader: prefetching changes no result.
func (r *checkedReader) Prefetch(reads ...Read) {
	r.enter("Prefetch")
	Prefetch(r.inner, reads...)
}

// ScanSpans forwards to the store's reader and checks that the spans are
// in order and disjoint, and that it passes on what an iterator over each
// span reads, in order.
func (r *checkedReader) ScanSpans(spans []Span, fn func(k, v []byte) (bool, error)) error {
	r.enter("ScanSpans")
	for i := 1; i < len(spans); i++ {
		if spans[i-1].Upper == nil || bytes.Compare(spans[i-1].Upper, spans[i].Lower) > 0 {
			violation("ScanSpans: span %d [%q, %q) is not after span %d", i, spans[i].Lower, spans[i].Upper, i-1)
		}
	}
	var want [][2][]byte
	stopped := false
	if err := ScanEachSpan(r.inner, spans, func(k, v []byte) (bool, error) {
		want = append(want, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
		return true, nil
	}); err != nil {
		return err
	}
	n := 0
	err := ScanSpans(r.inner, spans, func(k, v []byte) (bool, error) {
		if n >= len(want) || !bytes.Equal(k, want[n][0]) || !bytes.Equal(v, want[n][1]) {
			violation("ScanSpans passed %q=%q as pair %d, where the spans' iterators read %d pairs", k, v, n, len(want))
		}
		n++
		more, err := fn(k, v)
		stopped = !more
		return more, err
	})
	if err == nil && !stopped && n != len(want) {
		violation("ScanSpans passed %d pairs, where the spans' iterators read %d", n, len(want))
	}
	return err
}

// Networked forwards to the store's reader.
func (r *checkedReader) Networked() bool { return IsNetworked(r.inner) }

// GetMany forwards to the store's reader and checks that each value is
// the one Get reads.
func (r *checkedReader) GetMany(keys [][]byte, fn func(i int, value []byte) error) error {
	r.enter("GetMany")
	return GetMany(r.inner, keys, func(i int, v []byte) error {
		want, err := r.inner.Get(keys[i])
		switch {
		case errors.Is(err, ErrNotFound):
			if v != nil {
				violation("GetMany(%q) returned %q where Get finds nothing", keys[i], v)
			}
		case err != nil:
			return err
		case v == nil || !bytes.Equal(v, want):
			violation("GetMany(%q) returned %q where Get returns %q", keys[i], v, want)
		}
		return fn(i, v)
	})
}

// TxNow forwards to the store's reader.
func (r *checkedReader) TxNow() (time.Time, bool, error) {
	r.enter("TxNow")
	return TxNow(r.inner)
}

type checkedIter struct {
	inner        Iterator
	r            *checkedReader
	lower, upper []byte
	hasUp        bool
	reverse      bool

	positioned bool // First or SeekGE has been called
	valid      bool // the last move landed on a key
	closed     bool
	last       []byte // the key at the current position
	key, value []byte // copies handed out at this position
}

func (it *checkedIter) move(op string) {
	if it.closed {
		violation("%s on a closed iterator", op)
	}
	if it.r.done {
		violation("%s on an iterator after its function returned", op)
	}
	poison(it.key)
	poison(it.value)
	it.key, it.value = nil, nil
}

// landed checks the key a move landed on and makes it the current one.
func (it *checkedIter) landed(op string, ok bool) bool {
	it.valid = ok
	if !ok {
		return false
	}
	k := it.inner.Key()
	if bytes.Compare(k, it.lower) < 0 || it.hasUp && bytes.Compare(k, it.upper) >= 0 {
		violation("%s landed on %q, outside [%q, %q)", op, k, it.lower, it.upper)
	}
	it.last = append(it.last[:0], k...)
	return true
}

func (it *checkedIter) First() bool {
	it.move("First")
	it.positioned = true
	return it.landed("First", it.inner.First())
}

func (it *checkedIter) SeekGE(key []byte) bool {
	it.move("SeekGE")
	it.positioned = true
	if !it.landed("SeekGE", it.inner.SeekGE(key)) {
		return false
	}
	c := bytes.Compare(it.last, key)
	if !it.reverse && c < 0 || it.reverse && c > 0 {
		violation("SeekGE(%q) landed on %q, on the wrong side (reverse %v)", key, it.last, it.reverse)
	}
	return true
}

func (it *checkedIter) Next() bool {
	it.move("Next")
	if !it.positioned {
		violation("Next before First or SeekGE")
	}
	wasValid := it.valid
	prev := bytes.Clone(it.last)
	if !it.landed("Next", it.inner.Next()) {
		return false
	}
	if wasValid {
		c := bytes.Compare(it.last, prev)
		if !it.reverse && c <= 0 || it.reverse && c >= 0 {
			violation("Next went from %q to %q (reverse %v)", prev, it.last, it.reverse)
		}
	}
	return true
}

func (it *checkedIter) Key() []byte {
	it.at("Key")
	if it.key == nil {
		it.key = bytes.Clone(it.last)
	}
	return it.key
}

func (it *checkedIter) Value() []byte {
	it.at("Value")
	if it.value == nil {
		it.value = bytes.Clone(it.inner.Value())
		if it.value == nil {
			it.value = []byte{}
		}
	}
	return it.value
}

func (it *checkedIter) at(op string) {
	if it.closed {
		violation("%s on a closed iterator", op)
	}
	if it.r.done {
		violation("%s on an iterator after its function returned", op)
	}
	if !it.valid {
		violation("%s while the iterator is not at a key", op)
	}
}

func (it *checkedIter) Err() error { return it.inner.Err() }

func (it *checkedIter) Close() error {
	if it.closed {
		return nil
	}
	it.closed = true
	poison(it.key)
	poison(it.value)
	delete(it.r.open, it)
	return it.inner.Close()
}
