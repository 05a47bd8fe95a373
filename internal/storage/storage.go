// Package storage is the contract between Mayfly's engine and the key-value
// stores it runs on.
//
// A Store is an ordered map from byte-string keys to byte-string values with
// two kinds of access:
//
//   - View runs a function against a consistent, read-only snapshot. Every
//     read inside one View sees the same committed state.
//   - Update runs a function inside a serializable read-write transaction.
//     Reads inside the function see the committed state plus the
//     transaction's own writes. When Update returns nil, every write of the
//     function is committed atomically and durably (it survives a crash of
//     the process and, where the backend is durable, of the machine). When
//     the function returns an error, nothing it wrote is visible, ever.
//
// The engine keeps an item, its index entries and its TTL bookkeeping in
// several keys and changes them in one Update, so they can never disagree.
//
// Backends may run Update functions one at a time or concurrently; when they
// run concurrently they must detect conflicts and either retry the function
// (it must therefore be free of side effects outside the transaction) or
// return ErrConflict. The Pebble backend serialises writers in process and
// commits with group commit; a PostgreSQL-wire backend uses SERIALIZABLE
// transactions and retries serialization failures.
//
// Keys and values passed in are not retained by the store after the call
// returns, and slices returned by the store are valid only until the next
// call on the same Reader or Iterator: callers copy what they keep.
//
// A Reader, Txn or Iterator belongs to the function it was given to: it is
// for one goroutine at a time and must not be used after the function
// returns. Keys are compared bytewise (bytes.Compare).
//
// Optional capabilities are separate interfaces (see Clocked), in the manner
// of database/sql/driver: the engine checks for them and falls back.
//
// Every backend must pass the conformance suite in package storagetest.
package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNotFound is returned by Get when the key does not exist.
var ErrNotFound = errors.New("storage: key not found")

// ErrConflict is returned by Update when a concurrent transaction conflicted
// and the backend gave up retrying.
var ErrConflict = errors.New("storage: transaction conflict")

// ErrClosed is returned by every method once the store is closed.
var ErrClosed = errors.New("storage: store closed")

// ErrCorrupt is wrapped by the errors of reads and opens that met damaged
// stored data: a checksum that does not match, a file that is missing or
// cut short. The wrapping error names the file where the backend knows it.
// Nothing read from damaged data is returned: the read fails instead.
var ErrCorrupt = errors.New("storage: stored data is damaged")

// ErrNoSpace is wrapped by the errors of Update when the store's disk is
// full, or too nearly full to accept the write safely. Nothing of the
// refused transaction is committed; writes succeed again once space
// returns.
var ErrNoSpace = errors.New("storage: no space left for writes")

// ErrUnavailable is wrapped by the errors of calls the store cannot serve
// for now: a write that failed in the backend for a reason other than
// space, or a backend that stopped accepting writes after such a failure.
// Whether the failed transaction committed is unknown; callers may retry.
var ErrUnavailable = errors.New("storage: store unavailable")

// ErrAmbiguousCommit is wrapped by the errors of Update when the connection
// to a networked store was lost while the commit was on its way: the
// transaction may or may not have committed. It also wraps ErrUnavailable.
var ErrAmbiguousCommit = fmt.Errorf("storage: commit outcome unknown: %w", ErrUnavailable)

// Store is an ordered, transactional key-value store. It is safe for
// concurrent use by multiple goroutines.
type Store interface {
	// View runs fn against a consistent snapshot. The Reader must not be
	// used after fn returns. View returns fn's error unchanged.
	View(ctx context.Context, fn func(r Reader) error) error

	// Update runs fn in a serializable read-write transaction and commits
	// it atomically and durably when fn returns nil. The Txn must not be
	// used after fn returns. fn may be called more than once. When fn
	// returns an error, Update returns it unchanged and commits nothing;
	// when fn panics, nothing is committed and the panic propagates. fn
	// must not call Update on the same store: a backend that serialises
	// writers would deadlock.
	Update(ctx context.Context, fn func(tx Txn) error) error

	// Close releases the store. It waits for in-flight calls to finish;
	// calls that begin after it, including a second Close, return
	// ErrClosed.
	Close() error
}

// Reader reads keys from a snapshot or transaction.
type Reader interface {
	// Get returns the value stored under key, or ErrNotFound.
	Get(key []byte) ([]byte, error)

	// NewIter returns an iterator over the keys in [p.Lower, p.Upper).
	// A nil Upper means no upper bound; Lower >= Upper is an empty range.
	// In a Txn the iterator sees the transaction's writes made before
	// NewIter; whether it sees writes made while it is open is up to the
	// backend. The iterator must be closed.
	NewIter(p IterParams) (Iterator, error)
}

// IterParams bounds an iteration.
type IterParams struct {
	Lower []byte // inclusive; nil means the first key
	Upper []byte // exclusive; nil means past the last key
	// Reverse makes First start at the largest key below Upper and Next
	// move towards Lower.
	Reverse bool
}

// Iterator walks keys in order. Its Key and Value are valid until the next
// call to Next, First, SeekGE or Close.
type Iterator interface {
	// First positions at the first key in the iteration order and reports
	// whether one exists.
	First() bool
	// SeekGE positions at the first key >= key (or, in reverse, the last
	// key <= key) within the bounds and reports whether one exists.
	SeekGE(key []byte) bool
	// Next advances and reports whether a key exists there. Position the
	// iterator with First or SeekGE before calling it.
	Next() bool
	Key() []byte
	Value() []byte
	// Err reports an error that ended the iteration early.
	Err() error
	Close() error
}

// Txn is a read-write transaction. Its reads see its own writes.
type Txn interface {
	Reader
	// Set stores value under key, replacing any value there.
	Set(key, value []byte) error
	// Delete removes key. Deleting a missing key is not an error.
	Delete(key []byte) error
}

// Clocked is implemented by stores that own the authoritative clock for
// every gateway that shares them (ttl.md B6). The engine uses its own clock
// when the store does not implement it; when the store does, an error from
// Now fails the operation (wrapped with ErrUnavailable), and the engine
// never falls back to its own clock, which could judge an expiry
// differently from another gateway's.
type Clocked interface {
	Now(ctx context.Context) (time.Time, error)
}

// Deadliner is implemented by the transactions of a Clocked store that can
// refuse to commit late. After CommitBefore(t), the transaction commits
// only if the store's clock, read as the last step before the commit,
// is before t; otherwise the attempt fails like a serialization failure
// and the store runs the transaction function again (which can then take
// a later t), up to its retry limit, after which Update returns
// ErrConflict. The engine dates a TTL setting change this way, a little
// ahead of the store's clock, so that no gateway judges an expiry at an
// instant the change has already passed (docs/design/ttl.md).
type Deadliner interface {
	CommitBefore(t time.Time)
}

// CommitBefore calls tx's CommitBefore when tx is a Deadliner and reports
// whether it was.
func CommitBefore(tx Txn, t time.Time) bool {
	d, ok := tx.(Deadliner)
	if ok {
		d.CommitBefore(t)
	}
	return ok
}

// Savepointer is implemented by transactions that can take back part of
// their writes. Savepoint marks the transaction's writes so far and reports
// ok false when the transaction cannot (a wrapper over one that lacks the
// capability). RollbackTo undoes every Set and Delete made since the mark,
// so that reads, iterators opened later and the commit see the
// transaction as it was at the mark; marks taken after it are void. It
// returns an error when the transaction can no longer commit at all (a
// statement of it failed in the backend): the caller then returns that
// error from its function, and the store retries or fails the whole
// transaction as it would any other. The engine commits several writes of
// one gateway in one transaction this way, each undone alone when it
// fails (docs/design/storage.md, "Group commit").
type Savepointer interface {
	Savepoint() (savepoint int, ok bool)
	RollbackTo(savepoint int) error
}

// Savepoint returns tx's Savepoint when tx is a Savepointer, and ok false
// otherwise.
func Savepoint(tx Txn) (int, bool) {
	if s, ok := tx.(Savepointer); ok {
		return s.Savepoint()
	}
	return 0, false
}

// Prefetcher is implemented by the readers of a store where every read
// is a round trip to another machine. Prefetch names keys the caller is
// about to Get; the store may fetch them together with its next round
// trip, so that the Gets that follow cost nothing. A Read with Via set
// also names the key Via followed by the value stored under Key: a
// pointer the store can follow in the same round trip. Prefetching never
// changes what a read returns: a transaction's own writes still come
// first, and every read sees the same snapshot.
type Prefetcher interface {
	Prefetch(reads ...Read)
}

// Read is one key named to Prefetch.
type Read struct {
	Key []byte
	// Via, when set, names a second key: Via followed by the value under
	// Key, when Key holds one.
	Via []byte
	// Lock, in a write transaction, says the caller will write Key: a
	// store may lock it as it reads it, so that a transaction that would
	// conflict over it waits there, before doing its work, rather than
	// fail at its commit after all of it.
	Lock bool
}

// Prefetch passes reads to r's Prefetch when r has one; otherwise reads
// cost what they cost and it does nothing.
func Prefetch(r Reader, reads ...Read) {
	if p, ok := r.(Prefetcher); ok {
		p.Prefetch(reads...)
	}
}

// ManyGetter is implemented by readers that read several keys in one
// round trip (a store over the network). GetMany passes each key's value
// to fn in the order of keys, nil for a key absent; a value is fn's only
// until fn returns. Unlike Get and Prefetch it keeps none of them for
// later reads, so a caller that reads a whole container a run of keys at
// a time holds one run.
type ManyGetter interface {
	GetMany(keys [][]byte, fn func(i int, value []byte) error) error
}

// GetMany reads keys through r's GetMany when it has one, and one Get at
// a time otherwise (ManyGetter).
func GetMany(r Reader, keys [][]byte, fn func(i int, value []byte) error) error {
	if m, ok := r.(ManyGetter); ok {
		return m.GetMany(keys, fn)
	}
	for i, k := range keys {
		v, err := r.Get(k)
		if errors.Is(err, ErrNotFound) {
			v, err = nil, nil
		}
		if err != nil {
			return err
		}
		if err := fn(i, v); err != nil {
			return err
		}
	}
	return nil
}

// Networked is implemented by readers over the network, whose every read
// not batched with others (GetMany, ScanSpans, Prefetch) is a round trip;
// a reader that wraps another forwards it.
type Networked interface {
	Networked() bool
}

// IsNetworked reports whether r reads over the network (Networked).
func IsNetworked(r Reader) bool {
	n, ok := r.(Networked)
	return ok && n.Networked()
}

// Span is a span [Lower, Upper) of keys; a nil Upper has no bound.
type Span struct{ Lower, Upper []byte }

// SpanScanner is implemented by readers that read the keys of several
// spans in one round trip (a store over the network). ScanSpans passes
// the pairs of spans, which are in key order and disjoint, to fn in key
// order until fn returns false; a pair is fn's only until fn returns.
type SpanScanner interface {
	ScanSpans(spans []Span, fn func(k, v []byte) (bool, error)) error
}

// ScanSpans reads spans through r's ScanSpans when it has one, and one
// span at a time otherwise (SpanScanner).
func ScanSpans(r Reader, spans []Span, fn func(k, v []byte) (bool, error)) error {
	if s, ok := r.(SpanScanner); ok {
		return s.ScanSpans(spans, fn)
	}
	return ScanEachSpan(r, spans, fn)
}

// ScanEachSpan reads spans one iterator at a time: what ScanSpans does
// over a reader that reads no faster together.
func ScanEachSpan(r Reader, spans []Span, fn func(k, v []byte) (bool, error)) error {
	for _, sp := range spans {
		more, err := scanSpan(r, sp, fn)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

func scanSpan(r Reader, sp Span, fn func(k, v []byte) (bool, error)) (bool, error) {
	it, err := r.NewIter(IterParams{Lower: sp.Lower, Upper: sp.Upper})
	if err != nil {
		return false, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		more, err := fn(it.Key(), it.Value())
		if err != nil || !more {
			return false, err
		}
	}
	return true, it.Err()
}

// TxClock is implemented by the readers of a Clocked store that read the
// store's clock as the transaction begins, in the same round trip, at an
// instant no later than the transaction's snapshot. TxNow returns that
// instant, and ok false when the store behind a wrapper cannot tell it.
// An operation that takes its "now" this way saves the round trip of
// Clocked.Now and still judges with a "now" no later than what it reads.
type TxClock interface {
	TxNow() (t time.Time, ok bool, err error)
}

// TxNow returns r's TxNow when r is a TxClock, and ok false otherwise.
func TxNow(r Reader) (time.Time, bool, error) {
	if c, ok := r.(TxClock); ok {
		return c.TxNow()
	}
	return time.Time{}, false, nil
}

// Deferrer is implemented by stores that can commit a transaction without
// waiting for it to become durable. UpdateDeferred is Update except that
// when it returns nil the commit is visible but may still be lost in a
// crash, together with every commit after it that is not yet durable:
// commits become durable in commit order, so a later Update makes it
// durable too. It is for work that is safe to lose and redo, like purging
// items that are already invisible. Update is the fallback.
type Deferrer interface {
	UpdateDeferred(ctx context.Context, fn func(tx Txn) error) error
}

// UpdateDeferred runs fn through s's UpdateDeferred when s has one, and
// through Update otherwise.
func UpdateDeferred(ctx context.Context, s Store, fn func(tx Txn) error) error {
	if d, ok := s.(Deferrer); ok {
		return d.UpdateDeferred(ctx, fn)
	}
	return s.Update(ctx, fn)
}

// Optimist is implemented by stores whose Update holds every other writer
// back while its function runs (the Pebble backend serialises writers).
// UpdateOptimistic runs fn without doing so, for a function that may run
// long (a stored procedure's script): it commits fn's writes atomically
// and durably only if no transaction that committed while fn ran wrote
// what fn read; otherwise it commits nothing and returns ErrConflict, and
// the caller may run it again, or through Update. fn runs once per call.
type Optimist interface {
	UpdateOptimistic(ctx context.Context, fn func(tx Txn) error) error
}

// UpdateOptimistic runs fn through s's UpdateOptimistic when s has one,
// and through Update otherwise.
func UpdateOptimistic(ctx context.Context, s Store, fn func(tx Txn) error) error {
	if o, ok := s.(Optimist); ok {
		return o.UpdateOptimistic(ctx, fn)
	}
	return s.Update(ctx, fn)
}

// RangeDeleter is implemented by stores that can delete the keys of a
// range without reading them first. DeleteRange deletes keys of
// [lower, upper) in one transaction of its own: at most limit of them, the
// smallest first, or, where the store can drop a range whole (a Pebble
// range deletion), all of them. It reports whether the range is empty
// afterwards. It is for ranges no one writes any more (the data of a
// dropped container), so a caller deletes a large range in bounded steps
// until it is empty.
type RangeDeleter interface {
	DeleteRange(ctx context.Context, lower, upper []byte, limit int) (empty bool, err error)
}

// DeleteRange runs s's DeleteRange when s has one, and otherwise reads up
// to limit keys of the range in an Update and deletes them.
func DeleteRange(ctx context.Context, s Store, lower, upper []byte, limit int) (empty bool, err error) {
	if d, ok := s.(RangeDeleter); ok {
		return d.DeleteRange(ctx, lower, upper, limit)
	}
	return deleteRangeByKeys(ctx, s, lower, upper, limit)
}

// deleteRangeByKeys is DeleteRange through s's Update.
func deleteRangeByKeys(ctx context.Context, s Store, lower, upper []byte, limit int) (empty bool, err error) {
	err = s.Update(ctx, func(tx Txn) error {
		it, err := tx.NewIter(IterParams{Lower: lower, Upper: upper})
		if err != nil {
			return err
		}
		var keys [][]byte
		for ok := it.First(); ok && len(keys) < limit; ok = it.Next() {
			keys = append(keys, bytes.Clone(it.Key()))
		}
		if err := errors.Join(it.Err(), it.Close()); err != nil {
			return err
		}
		for _, k := range keys {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		empty = len(keys) < limit
		return nil
	})
	return empty && err == nil, err
}

// Checkpointer is implemented by stores that can copy themselves, while
// serving, into a new directory: a consistent copy of every committed
// write, which a store opened on that directory serves as it was.
type Checkpointer interface {
	Checkpoint(dir string) error
}

// Sizer is implemented by stores that can report the bytes they occupy.
type Sizer interface {
	DiskUsage() (uint64, error)
}

// Eraser is implemented by stores that can make deleted data unrecoverable
// from their files on request. Erase returns once no file of the store
// holds the bytes of any key of spans ([lo, hi) ranges) deleted, or
// overwritten, before the call began: not its tables, its write-ahead
// logs, its manifests or files it no longer uses. What the store cannot
// reach (the device's remapped blocks, a filesystem journal, copies taken
// outside it) is beyond it. A store without it keeps deleted bytes until
// its own housekeeping drops them: ttl.md B4 is not met there.
type Eraser interface {
	Erase(ctx context.Context, spans [][2][]byte) error
}

// CanErase reports whether s erases deleted bytes: it is an Eraser, and,
// if it wraps another store (WithChecks), that one is.
func CanErase(s Store) bool {
	if w, ok := s.(interface{ canErase() bool }); ok {
		return w.canErase()
	}
	_, ok := s.(Eraser)
	return ok
}
