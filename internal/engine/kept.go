package engine

import (
	"bytes"
	"container/list"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// keeper holds what a page of a query leaves for the page after it, by
// an id the page's token carries, within a bound on the bytes of all it
// holds; the least recently kept goes first. What it holds is a cache: a
// page that finds nothing under its token's id (a restart, another
// gateway, dropped for room, or for age) does the work again.
type keeper[T any] struct {
	mu    sync.Mutex
	max   int
	bytes int
	sets  map[uint64]*list.Element // of *keptValue[T]
	order list.List                // least recently kept first
}

type keptValue[T any] struct {
	id    uint64
	bytes int
	at    time.Time // when it was kept
	v     T
}

func newKeeper[T any](max int) *keeper[T] {
	return &keeper[T]{max: max, sets: map[uint64]*list.Element{}}
}

// keptIdleMax is how long what a page kept waits for the page after it.
// Most queries whose next page is not asked for soon never see it asked
// for (a client that read what it needed, a user who left the page), and
// what they kept would otherwise stay until others needed the room: up to
// the bounds of all keepers, held by a server that has gone idle.
const keptIdleMax = 5 * time.Minute

// take removes and returns what is kept under id. It is taken once: a
// page given the same token twice does the work the second time.
func (k *keeper[T]) take(id uint64) (T, bool) {
	var zero T
	if id == 0 {
		return zero, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	el, ok := k.sets[id]
	if !ok {
		return zero, false
	}
	kv := el.Value.(*keptValue[T])
	k.order.Remove(el)
	delete(k.sets, id)
	k.bytes -= kv.bytes
	return kv.v, true
}

// keep keeps v, of the given size, under id, kept at now, dropping the
// least recently kept for room; a value larger than all the room is not
// kept.
func (k *keeper[T]) keep(id uint64, v T, bytes int, now time.Time) {
	if bytes > k.max {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for k.bytes+bytes > k.max {
		k.dropFront()
	}
	k.sets[id] = k.order.PushBack(&keptValue[T]{id: id, bytes: bytes, at: now, v: v})
	k.bytes += bytes
}

// forget drops what was kept before before. The order of keeping is that
// of the times given to keep, but for a clock set back, which leaves what
// was kept after the step for a later call.
func (k *keeper[T]) forget(before time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for el := k.order.Front(); el != nil && el.Value.(*keptValue[T]).at.Before(before); el = k.order.Front() {
		k.dropFront()
	}
}

// dropFront drops the least recently kept; k.mu is held.
func (k *keeper[T]) dropFront() {
	el := k.order.Front()
	old := el.Value.(*keptValue[T])
	k.order.Remove(el)
	delete(k.sets, old.id)
	k.bytes -= old.bytes
}

// newKeptID is the id of what a page keeps: random, so that a token
// names its own query's alone (the taker checks the fingerprint and the
// position too); never 0, which names none.
func newKeptID() uint64 {
	return max(rand.Uint64(), 1)
}

// forgetIdleKept drops what pages kept for pages after them that were
// not asked for within keptIdleMax.
func (e *Engine) forgetIdleKept() {
	before := e.clock.Now().Add(-keptIdleMax)
	e.seen.forget(before)
	e.held.forget(before)
	e.kept.forget(before)
}

// keptCandidates is what a page kept of its access path's candidates for
// the page after it, under the id its token carries, in one keeper for
// all queries (keptCandidatesMax, keptIdleMax):
//
//   - a page that collected its candidates and sorted them (an index span
//     of many values, an intersection, a union, a composite span; see
//     queryAccess.collecting): locs, the candidates from its position on;
//   - a filtered stream's page (plan.FilteredStream): set, the locations
//     its term's entries name (filterLocs);
//   - an ordered stream's page over several keys that ended inside a
//     group it sorted (sortedGroup): group, the group's encoded first
//     value, and locs and keys, its members from the page's end on, in
//     their order, with their encoded sort keys (with gone and extra
//     after writes, keptgroup.go); and set, for a filtered stream.
//
// The next page reads them in place of reading the entries (and for a
// group, the records) again while the container is as it was
// (heldRows.servesAt). A write may add a candidate, while an item deleted
// or expired since is one the page reads and drops, as it drops any
// candidate the filter refuses; so after writes, each takes in the
// locations of the items written since (catchUp), read from the
// latest-version log, which holds each live item under the LSN of its
// last write (a sorted group reads those items to place them anew,
// keptGroup).
type keptCandidates struct {
	fp        uint64
	access    plan.Access
	terms     []int
	composite int
	etag      string
	writes    uint64
	// lsns is each sequence's last LSN when the candidates were kept:
	// the items written since are those of the latest-version entries
	// past them.
	lsns []uint64
	// cost is how many index entries reading the candidates again reads
	// at least: catching up with more writes than that costs more than
	// it saves.
	cost  int
	locs  [][]byte
	set   locSet
	group []byte
	keys  [][]byte
	// gone and extra, for a sorted group, are the members written since
	// it was first kept, passed over where they were, and the written
	// items placed anew, in their order (keptgroup.go).
	gone  map[string]struct{}
	extra []keptMember
	// written, for a sorted group, holds the locations of the items in
	// the scope written since it was kept (catchUp), which the page
	// reads to place them anew (keptGroup).
	written [][]byte
	// spent, kept alone by a plain stream's page, is how many records
	// its drain read past its rows (filterAfterWalk); beside a filtered
	// stream's set, how many the walk read that made no row (valueUse).
	spent int64
}

// keptCandidatesMax bounds the bytes of the candidates kept for all
// queries.
const keptCandidatesMax = 16 << 20

// candidateKeeper takes and keeps what pages keep of their candidates
// for a container as it is in r: etag and writes are its state when the
// page began. k is nil where nothing is kept (a script's query, which
// reads its transaction's writes, which a rollback may take back).
type candidateKeeper struct {
	k      *keeper[*keptCandidates]
	r      storage.Reader
	c      *containerRecord
	etag   string
	writes uint64
	items  int64 // the items of the page's sequence (all of them with one)
	now    time.Time
}

// take returns what the page before cur kept for a page that reads by
// access in scope s, if it is still the query's, brought up to the
// container's writes since (catchUp); the entries that reads are counted
// in st.
func (ck candidateKeeper) take(cur cursor, access plan.Access, s *itemScope, st *readStats) (*keptCandidates, error) {
	if ck.k == nil {
		return nil, nil
	}
	k, ok := ck.k.take(cur.kept)
	if !ok || k.fp != cur.fingerprint || k.access != access || k.etag != ck.etag {
		return nil, nil
	}
	if k.writes == ck.writes || k.tally() {
		return k, nil
	}
	if ok, err := ck.catchUp(k, cur, s, st); !ok || err != nil {
		return nil, err
	}
	return k, nil
}

// catchUp adds to k's locations, or to its set, those of the items in
// scope s written since k was kept, from the latest-version log: one
// entry each, counted in st. An item written since may have come to
// pass the filter; one that no longer does is a candidate more that the
// page reads and drops. A sorted group gets them as written, as a
// written member may have left the group or moved in its order. It
// reports false, and leaves k to be dropped, when more was written than
// reading the candidates again would cost, or when the set would outgrow
// what a page collects.
func (ck candidateKeeper) catchUp(k *keptCandidates, cur cursor, s *itemScope, st *readStats) (bool, error) {
	if ck.writes < k.writes || ck.writes-k.writes > uint64(max(k.cost, countStep)) || len(k.lsns) != ck.c.sequences() {
		return false, nil
	}
	lsns, err := ck.lsns()
	if err != nil {
		return false, err
	}
	var added [][]byte
	for i, from := range k.lsns {
		if lsns[i] <= from {
			continue
		}
		err = scanRange(ck.r, latestKey(ck.c.Rid, from+1, 0), latestKey(ck.c.Rid, lsns[i]+1, 0), func(key, v []byte) (bool, error) {
			st.entries++
			_, _, epk, pk, err := decodeLatestEntry(v)
			if err != nil {
				return false, err
			}
			loc := itemLoc(string(epk), binary.BigEndian.Uint64(key[len(key)-8:]))
			// A collection's locations are those from the page's
			// position on; a stream's position is in its own order.
			if s.holds(loc) && s.match(pk) && (k.set != nil || k.group != nil || cur.pos == nil || bytes.Compare(s.indexPos(loc), cur.pos) >= 0) {
				added = append(added, loc)
			}
			return true, nil
		})
		if err != nil {
			return false, err
		}
	}
	if k.group != nil {
		k.written = added
	}
	if k.set != nil {
		for _, loc := range added {
			k.set.add(loc)
		}
		return len(k.set) <= maxFilterLocs, nil
	}
	if k.group != nil {
		return true, nil
	}
	slices.SortFunc(added, s.byIndexPos)
	k.locs = mergeLocs(k.locs, added, s.byIndexPos)
	return true, nil
}

// tally reports whether k holds no candidates, only what its drain spent
// (which writes since leave as it is).
func (k *keptCandidates) tally() bool {
	return k.spent > 0 && k.set == nil && k.locs == nil && k.group == nil && k.keys == nil && k.written == nil
}

// mergeLocs merges two lists of locations in the order by, each in it,
// into one that holds each location once.
func mergeLocs(a, b [][]byte, by func(x, y []byte) int) [][]byte {
	if len(b) == 0 {
		return a
	}
	out := make([][]byte, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		var loc []byte
		switch {
		case len(b) == 0 || len(a) > 0 && by(a[0], b[0]) <= 0:
			loc, a = a[0], a[1:]
		default:
			loc, b = b[0], b[1:]
		}
		if n := len(out); n == 0 || !bytes.Equal(out[n-1], loc) {
			out = append(out, loc)
		}
	}
	return out
}

// keep keeps k for the page of token next; cost is what reading its
// candidates again reads at least (keptCandidates.cost).
func (ck candidateKeeper) keep(next cursor, k *keptCandidates) {
	if ck.k == nil {
		return
	}
	lsns, err := ck.lsns()
	if err != nil {
		return // kept for nothing: the next page reads them again
	}
	k.fp, k.access, k.etag, k.writes, k.lsns = next.fingerprint, next.access, ck.etag, ck.writes, lsns
	k.cost = max(k.cost, len(k.set), len(k.locs))
	n := len(k.group) + locsBytes(k.locs)
	n += len(k.set) * (8 + heldRowOverhead)
	for _, key := range k.keys {
		n += len(key)
	}
	for loc := range k.gone {
		n += len(loc) + heldRowOverhead
	}
	for _, m := range k.extra {
		n += len(m.loc) + len(m.key) + heldRowOverhead
	}
	ck.k.keep(next.kept, k, n, ck.now)
}

// locsBytes is what keeping locs holds.
func locsBytes(locs [][]byte) int {
	n := 0
	for _, loc := range locs {
		n += len(loc) + heldRowOverhead
	}
	return n
}

// keepsLocs reports whether ck keeps candidates locs for the next page:
// it keeps, and they fit in its bound.
func (ck candidateKeeper) keepsLocs(locs [][]byte) bool {
	return ck.k != nil && locsBytes(locs) <= keptCandidatesMax
}

// lsns returns the last LSN of each of the container's sequences: of one,
// its write count, read when the page began.
func (ck candidateKeeper) lsns() ([]uint64, error) {
	n := ck.c.sequences()
	if n == 1 {
		return []uint64{ck.writes}, nil
	}
	lsns := make([]uint64, n)
	for i := range lsns {
		st, err := readState(ck.r, ck.c.Rid, i)
		if err != nil {
			return nil, err
		}
		lsns[i] = st.lsn
	}
	return lsns, nil
}

// takeCollection returns what the page before cur kept of its candidates
// for the page that reads by qa in scope s (keptCandidates.locs), if they
// are still the query's.
func (ck candidateKeeper) takeCollection(cur cursor, qa *queryAccess, s *itemScope, st *readStats) (*keptCandidates, error) {
	k, err := ck.take(cur, qa.access, s, st)
	if k == nil || err != nil || !slices.Equal(k.terms, qa.terms) || k.composite != qa.composite {
		return nil, err
	}
	return k, nil
}

// keepCollection keeps the candidates of qa from the position of the
// page's token next on, for the page after it, in scope s.
func (ck candidateKeeper) keepCollection(next cursor, qa *queryAccess, s *itemScope) {
	locs := qa.collected.locs
	if next.pos != nil {
		i, _ := slices.BinarySearchFunc(locs, next.pos, func(loc, from []byte) int { return bytes.Compare(s.indexPos(loc), from) })
		locs = locs[i:]
	}
	ck.keep(next, &keptCandidates{terms: slices.Clone(qa.terms), composite: qa.composite, locs: locs, cost: qa.collected.cost})
}
