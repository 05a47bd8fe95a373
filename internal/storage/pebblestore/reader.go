package pebblestore

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// errFinished is returned when a Reader, Txn or Iterator is used after the
// function it was given to has returned.
var errFinished = errors.New("pebblestore: transaction used after its function returned")

// source is what a reader reads: a snapshot (View) or an indexed batch,
// which overlays its own writes on the database (Update).
type source interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// reader implements storage.Reader. Like the Pebble objects under it, it is
// for one goroutine at a time.
type reader struct {
	src      source
	dir      string // names damaged tables in errors
	finished bool
	iters    []*iterator // every iterator opened, closed by finish

	// points, over a snapshot, serves Get once gets have been made: see
	// pointGet.
	snapshot bool
	gets     int
	points   *pebble.Iterator

	// hot keeps the values of the store's hot keys (hot.go); nil when it
	// has none. A snapshot's reader took hotStamp before its snapshot,
	// and hotOK is false when a hot commit was in flight then.
	hot      *hotKeys
	hotStamp uint64
	hotOK    bool

	// reads, in an optimistic transaction, records what it read
	// (optimistic.go); nil elsewhere.
	reads *readSet
}

// pointGets is the number of Gets of a snapshot reader after which the
// next ones go through pointGet.
const pointGets = 4

var _ storage.Reader = (*reader)(nil)

// Get returns a copy of the value, so it stays valid whatever the caller
// does next.
func (r *reader) Get(key []byte) ([]byte, error) {
	if r.finished {
		return nil, errFinished
	}
	if r.hot != nil && r.hot.match(key) {
		return r.hotGet(key)
	}
	return r.get(key)
}

// hotGet reads a hot key from the values kept, or from the store and
// keeps it. A snapshot's reader uses the stamp taken before its snapshot;
// a transaction's reads see the latest commits, and take it now. A
// transaction that wrote a hot key reads its own writes from its batch.
func (r *reader) hotGet(key []byte) ([]byte, error) {
	stamp, ok := r.hotStamp, r.hotOK
	if !r.snapshot {
		stamp, ok = r.hot.now()
	}
	if !ok {
		return r.get(key)
	}
	if v, ok := r.hot.get(key, stamp); ok {
		return v, nil
	}
	v, err := r.get(key)
	if err == nil {
		r.hot.put(key, v, stamp)
	}
	return v, err
}

func (r *reader) get(key []byte) ([]byte, error) {
	if r.snapshot {
		if r.gets++; r.gets > pointGets {
			return r.pointGet(key)
		}
	}
	v, closer, err := r.src.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, storage.ErrNotFound
	}
	if err != nil {
		return nil, corrupt(r.dir, err)
	}
	out := make([]byte, len(v))
	copy(out, v)
	return out, closer.Close()
}

// pointGet reads key through one iterator kept for the reader's point
// reads. Pebble's Get builds an iterator over every level for each key and
// opens a table in each level the key may be in; a seek of a kept
// iterator (SeekPrefixGE, which consults the same bloom filters) reuses
// the tables its levels have open, so a request that reads many records
// near each other (a page's, in _rid order) opens each table once: a
// drain page of 100 records cost 45% less. Making the iterator costs about
// what a few Gets do, so a request's first pointGets Gets are Pebble's
// (a point read makes three). Only over a snapshot: a transaction's
// iterator would not see its later writes.
func (r *reader) pointGet(key []byte) ([]byte, error) {
	if r.points == nil {
		it, err := r.src.NewIter(nil)
		if err != nil {
			return nil, corrupt(r.dir, err)
		}
		r.points = it
	}
	it := r.points
	if !it.SeekPrefixGE(key) || !bytes.Equal(it.Key(), key) {
		if err := it.Error(); err != nil {
			return nil, corrupt(r.dir, err)
		}
		return nil, storage.ErrNotFound
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return nil, corrupt(r.dir, err)
	}
	out := make([]byte, len(v))
	copy(out, v)
	return out, nil
}

// NewIter opens an iterator. Over a transaction it sees the transaction's
// writes made before it was opened.
func (r *reader) NewIter(p storage.IterParams) (storage.Iterator, error) {
	if r.finished {
		return nil, errFinished
	}
	it := &iterator{reverse: p.Reverse, reads: r.reads}
	if p.Upper != nil && bytes.Compare(p.Lower, p.Upper) >= 0 {
		// An empty range. Pebble requires lower < upper.
		return it, nil
	}
	// Pebble keeps the bounds for the iterator's life; the caller may not.
	o := &pebble.IterOptions{
		LowerBound: clone(p.Lower),
		UpperBound: clone(p.Upper),
	}
	pit, err := r.src.NewIter(o)
	if err != nil {
		return nil, corrupt(r.dir, err)
	}
	it.it = pit
	it.dir = r.dir
	it.lower, it.upper = o.LowerBound, o.UpperBound
	r.iters = append(r.iters, it)
	return it, nil
}

// finish closes the iterators the function left open and makes later use
// of the reader fail. It must run before the snapshot or batch is closed.
func (r *reader) finish() {
	r.finished = true
	for _, it := range r.iters {
		_ = it.Close()
	}
	r.iters = nil
	if r.points != nil {
		_ = r.points.Close()
		r.points = nil
	}
}

// txn implements storage.Txn on an indexed batch.
type txn struct {
	reader
	b *pebble.Batch
	// wroteHot: the transaction wrote or deleted a hot key, so its commit
	// is bracketed (hotKeys) and its own reads of hot keys go to its
	// batch.
	wroteHot bool
	// db makes the batch that replaces b when a rollback takes writes
	// back (RollbackTo); nil in an optimistic transaction, which has no
	// savepoints. retired holds the batches replaced, closed with b.
	db      *pebble.DB
	retired []*pebble.Batch
}

// Savepoint marks the writes so far: the batch's count of records.
func (t *txn) Savepoint() (int, bool) {
	if t.db == nil {
		return 0, false
	}
	return int(t.b.Count()), true
}

// RollbackTo takes back the writes made since savepoint sp. An indexed
// batch cannot drop records, so a new one is made with the records before
// the mark, copied in order, and takes the old one's place for every
// read, iterator and the commit that follow. That costs the writes before
// the mark once per rollback and nothing while no write fails: reading
// back what each write replaced, to write it again on a rollback, took a
// third of a bulk batch's time (docs/benchmarks.md, "A bulk batch in one
// transaction").
func (t *txn) RollbackTo(sp int) error {
	if t.finished {
		return errFinished
	}
	n := int(t.b.Count())
	if t.db == nil || sp < 0 || sp > n {
		return fmt.Errorf("pebblestore: no savepoint %d", sp)
	}
	if sp == n {
		return nil
	}
	nb := t.db.NewIndexedBatch()
	r := t.b.Reader()
	for range sp {
		kind, k, v, ok, err := r.Next()
		switch {
		case err != nil:
		case !ok:
			err = errors.New("the batch ended before its savepoint")
		case kind == pebble.InternalKeyKindSet:
			err = nb.Set(k, v, nil)
		case kind == pebble.InternalKeyKindDelete:
			err = nb.Delete(k, nil)
		case kind == pebble.InternalKeyKindRangeDelete:
			err = nb.DeleteRange(k, v, nil)
		default:
			err = fmt.Errorf("a record of kind %v", kind)
		}
		if err != nil {
			_ = nb.Close()
			return fmt.Errorf("pebblestore: roll back to %d of %d writes: %w", sp, n, err)
		}
	}
	t.retired = append(t.retired, t.b)
	t.b, t.src = nb, nb
	return nil
}

// close closes the transaction's batches.
func (t *txn) close() {
	_ = t.b.Close()
	for _, b := range t.retired {
		_ = b.Close()
	}
}

// Get reads the transaction's own writes over the latest commits.
func (t *txn) Get(key []byte) ([]byte, error) {
	if t.reads != nil && !t.finished {
		t.reads.get(key)
	}
	if t.wroteHot && !t.finished {
		return t.get(key)
	}
	return t.reader.Get(key)
}

// markHot notes a write of key when it is hot.
func (t *txn) markHot(key []byte) {
	if t.hot != nil && !t.wroteHot && t.hot.match(key) {
		t.wroteHot = true
	}
}

var (
	_ storage.Txn         = (*txn)(nil)
	_ storage.Savepointer = (*txn)(nil)
)

// Set stores value under key. The batch copies both.
func (t *txn) Set(key, value []byte) error {
	if t.finished {
		return errFinished
	}
	t.markHot(key)
	return t.b.Set(key, value, nil)
}

// Delete removes key. Deleting a missing key is not an error.
func (t *txn) Delete(key []byte) error {
	if t.finished {
		return errFinished
	}
	t.markHot(key)
	return t.b.Delete(key, nil)
}

// iterator implements storage.Iterator. In reverse it maps First to Last,
// Next to Prev and SeekGE to "seek to the last key <= k".
type iterator struct {
	it      *pebble.Iterator // nil for an empty range
	reverse bool
	dir     string
	closed  bool
	err     error
	seekBuf []byte

	// reads, in an optimistic transaction, records the spans the
	// iterator passed over: from where it was positioned to the key it
	// stands on, or to its bound once it ran out (optimistic.go).
	reads          *readSet
	spanning       bool
	lower, upper   []byte // the iterator's bounds
	spanLo, spanHi []byte // [lo, hi); nil for no bound
	last           []byte // the key it stands on, while spanning
}

var _ storage.Iterator = (*iterator)(nil)

func (it *iterator) First() bool {
	if it.closed {
		it.err = errFinished
		return false
	}
	if it.it == nil {
		return false
	}
	if it.reverse {
		it.startSpan(nil)
		return it.moved(it.it.Last())
	}
	it.startSpan(nil)
	return it.moved(it.it.First())
}

// startSpan begins a span of reads at key (nil: at the iterator's
// bound), after ending the one before.
func (it *iterator) startSpan(key []byte) {
	if it.reads == nil {
		return
	}
	it.endSpan()
	it.spanning = true
	lower, upper := it.lower, it.upper
	if it.reverse {
		it.spanLo, it.spanHi = nil, clone(upper)
		if key != nil && (upper == nil || bytes.Compare(key, upper) < 0) {
			it.spanHi = after(key)
		}
		return
	}
	it.spanLo, it.spanHi = clone(lower), nil
	if key != nil && (lower == nil || bytes.Compare(key, lower) > 0) {
		it.spanLo = clone(key)
	}
}

// moved notes where a positioning or a step left the iterator: on a key,
// which the span reaches, or past its last, when the span reaches the
// bound.
func (it *iterator) moved(valid bool) bool {
	if !it.spanning {
		return valid
	}
	if valid {
		it.last = append(it.last[:0], it.it.Key()...)
		return true
	}
	it.last = nil
	it.endSpan()
	return false
}

// endSpan records the span in progress.
func (it *iterator) endSpan() {
	if !it.spanning {
		return
	}
	it.spanning = false
	lo, hi := it.spanLo, it.spanHi
	if it.last != nil {
		if it.reverse {
			lo = clone(it.last)
		} else {
			hi = after(it.last)
		}
	} else if it.reverse {
		lo = clone(it.lower)
	} else {
		hi = clone(it.upper)
	}
	it.last = nil
	it.reads.span(lo, hi)
}

func (it *iterator) SeekGE(key []byte) bool {
	if it.closed {
		it.err = errFinished
		return false
	}
	if it.it == nil {
		return false
	}
	it.startSpan(key)
	if !it.reverse {
		return it.moved(it.it.SeekGE(key))
	}
	// Pebble has no SeekLE. key+"\x00" is the smallest key greater than
	// key, so the last key below it is the last key <= key.
	it.seekBuf = append(append(it.seekBuf[:0], key...), 0)
	return it.moved(it.it.SeekLT(it.seekBuf))
}

func (it *iterator) Next() bool {
	if it.closed {
		it.err = errFinished
		return false
	}
	if it.it == nil {
		return false
	}
	if it.reverse {
		return it.moved(it.it.Prev())
	}
	return it.moved(it.it.Next())
}

func (it *iterator) Key() []byte {
	if it.closed || it.it == nil || !it.it.Valid() {
		return nil
	}
	return it.it.Key()
}

func (it *iterator) Value() []byte {
	if it.closed || it.it == nil || !it.it.Valid() {
		return nil
	}
	v, err := it.it.ValueAndErr()
	if err != nil {
		it.err = corrupt(it.dir, err)
		return nil
	}
	return v
}

func (it *iterator) Err() error {
	if it.err != nil {
		return it.err
	}
	if it.closed || it.it == nil {
		return nil
	}
	return corrupt(it.dir, it.it.Error())
}

// Close releases the iterator. Closing twice is harmless.
func (it *iterator) Close() error {
	if it.closed {
		return nil
	}
	if it.it == nil {
		it.closed = true
		return nil
	}
	it.endSpan()
	it.closed = true
	err := it.it.Close()
	it.it = nil
	return err
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}
