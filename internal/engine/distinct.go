package engine

import (
	"bytes"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/eval"
)

// A DISTINCT without ORDER BY whose rows no index gives in their order
// (distinctInOrder) drops every row it returned on an earlier page,
// however far back. Its pages stream the query without DISTINCT by
// position, as a filter's pages do, and drop the rows whose canonical
// keys (eval.CanonicalKey) the pages before returned or passed over. The
// engine keeps those keys between pages (seenSets), under an id the token
// carries, so page k reads from where page k-1 ended and the token stays
// the size of any other. Tokens that carried the keys themselves grew
// with every page, past the 16 KB of headers a Node.js client accepts.
//
// A page whose keys are not kept (the process restarted, another gateway
// served the page before, the keys were dropped for room, or the token
// was given before) rebuilds them: it reads from the start of its access
// path to its position, as every page of such a query once did, and goes
// on from there. The keys are those of the rows the data now makes before
// the position, which are the rows returned unless the data changed.

// seenSetsMax bounds the bytes of the keys kept for all queries; the
// least recently kept go first.
const seenSetsMax = 32 << 20

// seenSets keeps the keys of the rows the pages of DISTINCT queries
// returned, by the id their next page's token carries.
type seenSets struct{ *keeper[*seenSet] }

// seenSet is what a DISTINCT query's pages returned up to a position: a
// page whose token names the set has the same fingerprint, position and
// skip, or it rebuilds the set.
type seenSet struct {
	id    uint64
	fp    uint64
	pos   []byte
	skip  int
	keys  map[string]struct{}
	bytes int
}

func newSeenSets(max int) seenSets {
	return seenSets{newKeeper[*seenSet](max)}
}

// take removes and returns the set the token k names, if it is kept and
// is the token's.
func (s seenSets) take(k cursor) *seenSet {
	set, ok := s.keeper.take(k.kept)
	if !ok || set.fp != k.fingerprint || set.skip != k.skip || !bytes.Equal(set.pos, k.pos) {
		return nil
	}
	return set
}

// keep keeps set, at now, for the page its id will be given with.
func (s seenSets) keep(set *seenSet, now time.Time) { s.keeper.keep(set.id, set, set.bytes, now) }

// distinctRows drops the rows of one page of a DISTINCT that earlier
// pages, or this one, returned. The page's own keys are held apart from
// the set it was given (from), so a page that is set aside and read again
// (a scan tried first) starts over from the same set; they join it only
// when the page is kept (seen).
type distinctRows struct {
	from   *seenSet // nil: page 1, or a page that rebuilds
	added  map[string]struct{}
	bytes  int
	budget *eval.Budget
	// rebuild says the page's position is not in from: the page reads
	// from the start and adds the rows before its position to added.
	rebuild bool
}

// newDistinctRows returns the filter of a page given the token cur. The
// set it is given counts against the page's memory, as the DISTINCT set
// of a page that read from the start would.
func newDistinctRows(sets seenSets, cur cursor, budget *eval.Budget) (*distinctRows, error) {
	d := &distinctRows{added: map[string]struct{}{}, budget: budget}
	if cur.pos == nil && cur.skip == 0 {
		return d, nil
	}
	d.from = sets.take(cur)
	d.rebuild = d.from == nil
	if d.from != nil {
		if err := budget.Hold(d.from.bytes); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// repeat reports whether the row v was returned before, and returns its
// key.
func (d *distinctRows) repeat(v document.Value) (string, bool) {
	k := string(eval.CanonicalKey(nil, v))
	if d.from != nil {
		if _, ok := d.from.keys[k]; ok {
			return k, true
		}
	}
	_, ok := d.added[k]
	return k, ok
}

// add counts the row of key k as returned.
func (d *distinctRows) add(k string) error {
	if _, ok := d.added[k]; ok {
		return nil
	}
	size := len(k) + seenKeyOverhead
	if err := d.budget.Hold(size); err != nil {
		return err
	}
	d.added[k] = struct{}{}
	d.bytes += size
	return nil
}

// seenKeyOverhead is what a key costs beyond its bytes in a map.
const seenKeyOverhead = 48

// reset drops the page's own keys, for a page read again.
func (d *distinctRows) reset() {
	if d == nil {
		return
	}
	d.budget.Release(d.bytes)
	clear(d.added)
	d.bytes = 0
}

// seen returns the set of the rows returned up to the page's end, for the
// page that follows it at k (the token's cursor).
func (d *distinctRows) seen(k cursor) *seenSet {
	set := d.from
	if set == nil {
		set = &seenSet{keys: d.added}
	} else {
		for key := range d.added {
			set.keys[key] = struct{}{}
		}
	}
	set.id, set.fp, set.pos, set.skip = k.kept, k.fingerprint, k.pos, k.skip
	set.bytes += d.bytes
	return set
}
