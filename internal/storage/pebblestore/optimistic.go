package pebblestore

import (
	"bytes"
	"context"
	"sync"

	"github.com/cockroachdb/pebble"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// Optimistic transactions (storage.Optimist). Update runs its function
// while no other writer runs, which is what makes it serializable here; a
// function that runs for seconds (a stored procedure's script) would hold
// every writer of the store back for as long. UpdateOptimistic runs the
// function without the write lock: its reads see the latest commits (an
// indexed batch over the database, as in Update) and are recorded, the
// keys it got and the spans its iterators passed over. It then takes the
// write lock and commits only if no commit since it began wrote a key it
// read or one within a span it passed over. The reads then all saw the
// state as it was when the function began, so the transaction is as if
// it had run whole at its commit.
//
// While an optimistic transaction runs, every commit keeps the keys it
// wrote (conflicts.record) until no transaction that began before it is
// running; with none running, commits keep nothing.

// maxLoggedKeys bounds the keys commits keep for running optimistic
// transactions. Past it the keys are dropped, and every transaction that
// began before that conflicts.
const maxLoggedKeys = 1 << 18

// conflicts is what the store keeps for its optimistic transactions.
type conflicts struct {
	mu     sync.Mutex
	seq    uint64         // commits made; changed under the write lock
	starts map[uint64]int // the commit each running transaction began after, and how many began there
	log    []commitKeys   // commits made since the oldest running transaction began
	keys   int            // keys held in log
	lost   uint64         // commits up to this one were dropped from log
}

// commitKeys is what one commit wrote: keys, and the spans [lo, hi) of its
// range deletions.
type commitKeys struct {
	seq   uint64
	keys  [][]byte
	spans [][2][]byte
}

// record counts a commit of b and, while optimistic transactions run,
// keeps the keys it writes. It runs under the write lock, before b is
// applied.
func (c *conflicts) record(b *pebble.Batch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	if len(c.starts) == 0 {
		return
	}
	if c.keys > maxLoggedKeys {
		c.lost = c.seq
		c.log, c.keys = nil, 0
		return
	}
	ck := commitKeys{seq: c.seq}
	r := b.Reader()
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil || !ok {
			if err != nil {
				// A batch this store built cannot be malformed; should it
				// be, every running transaction conflicts.
				c.lost = c.seq
			}
			break
		}
		if kind == pebble.InternalKeyKindRangeDelete {
			ck.spans = append(ck.spans, [2][]byte{bytes.Clone(key), bytes.Clone(value)})
			continue
		}
		ck.keys = append(ck.keys, bytes.Clone(key))
	}
	c.keys += len(ck.keys) + len(ck.spans)
	c.log = append(c.log, ck)
}

// begin registers a transaction and returns the commit it begins after.
// It runs under the write lock, so no commit is half recorded.
func (c *conflicts) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.starts == nil {
		c.starts = map[uint64]int{}
	}
	c.starts[c.seq]++
	return c.seq
}

// end forgets a transaction that began after commit start, and the commits
// no running transaction needs any more.
func (c *conflicts) end(start uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.starts[start]--; c.starts[start] == 0 {
		delete(c.starts, start)
	}
	if len(c.starts) == 0 {
		c.log, c.keys = nil, 0
		return
	}
	oldest := start
	for s := range c.starts {
		oldest = min(oldest, s)
	}
	i := 0
	for i < len(c.log) && c.log[i].seq <= oldest {
		c.keys -= len(c.log[i].keys) + len(c.log[i].spans)
		i++
	}
	c.log = c.log[i:]
}

// conflict reports whether a commit after start wrote what rs read. It
// runs under the write lock.
func (c *conflicts) conflict(start uint64, rs *readSet) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lost > start {
		return true
	}
	for _, ck := range c.log {
		if ck.seq <= start {
			continue
		}
		for _, k := range ck.keys {
			if rs.covers(k) {
				return true
			}
		}
		for _, sp := range ck.spans {
			if rs.overlaps(sp[0], sp[1]) {
				return true
			}
		}
	}
	return false
}

// readSet is what an optimistic transaction read: the keys it got and the
// spans [lo, hi) its iterators passed over (nil lo: from the first key;
// nil hi: to past the last).
type readSet struct {
	keys  map[string]struct{}
	spans [][2][]byte
}

func (rs *readSet) get(key []byte) {
	if rs.keys == nil {
		rs.keys = map[string]struct{}{}
	}
	rs.keys[string(key)] = struct{}{}
}

func (rs *readSet) span(lo, hi []byte) {
	if lo != nil && hi != nil && bytes.Compare(lo, hi) >= 0 {
		return
	}
	rs.spans = append(rs.spans, [2][]byte{lo, hi})
}

// covers reports whether key was read, or lies in a span passed over.
func (rs *readSet) covers(key []byte) bool {
	if _, ok := rs.keys[string(key)]; ok {
		return true
	}
	for _, sp := range rs.spans {
		if (sp[0] == nil || bytes.Compare(key, sp[0]) >= 0) && (sp[1] == nil || bytes.Compare(key, sp[1]) < 0) {
			return true
		}
	}
	return false
}

// overlaps reports whether [lo, hi) holds a key read or meets a span.
func (rs *readSet) overlaps(lo, hi []byte) bool {
	for k := range rs.keys {
		if bytes.Compare([]byte(k), lo) >= 0 && bytes.Compare([]byte(k), hi) < 0 {
			return true
		}
	}
	for _, sp := range rs.spans {
		if (sp[0] == nil || bytes.Compare(sp[0], hi) < 0) && (sp[1] == nil || bytes.Compare(lo, sp[1]) < 0) {
			return true
		}
	}
	return false
}

// after is the smallest key greater than k.
func after(k []byte) []byte { return append(bytes.Clone(k), 0) }

// UpdateOptimistic runs fn without holding other writers back, and
// commits its writes durably only if nothing it read changed meanwhile;
// otherwise it commits nothing and returns storage.ErrConflict. fn runs
// once. A function that only reads is checked the same way.
func (s *Store) UpdateOptimistic(ctx context.Context, fn func(tx storage.Txn) error) error {
	if err := s.enterWrite(ctx, true); err != nil {
		return err
	}
	defer s.inflight.Done()
	unlock, err := s.lockWrites(ctx)
	if err != nil {
		return err
	}
	start := s.conflicts.begin()
	unlock()
	defer s.conflicts.end(start)

	b := s.db.NewIndexedBatch()
	defer b.Close()
	rs := &readSet{}
	tx := &txn{reader: reader{src: b, dir: s.dir, hot: s.hot, reads: rs}, b: b}
	err = func() error {
		defer tx.finish()
		return fn(tx)
	}()
	if err != nil {
		return err
	}
	unlock, err = s.lockWrites(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if s.conflicts.conflict(start, rs) {
		return storage.ErrConflict
	}
	if b.Empty() {
		return nil
	}
	return s.commit(tx, b, true, unlock)
}
