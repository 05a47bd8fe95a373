package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// itemScope is the part of a container one page may read: the items whose
// location lies in [lo, hi) (hi nil: no upper bound), which is one span of
// item keys, and among them those whose stored partition key match accepts
// (two keys may share an EPK; a prefix is checked on the key itself).
type itemScope struct {
	kind   plan.ScopeKind
	lo, hi []byte
	match  func(pk []byte) bool
	// epk and pk are the EPK and key bytes of the logical partition, for
	// its count and for point reads; pk is a hierarchical prefix's
	// components' key bytes, a prefix of its partitions' (prefixCount),
	// and nil for wider scopes.
	epk string
	pk  []byte
	// parts holds, for a hierarchical prefix, the EPK encodings of its
	// logical partitions once read (prefixParts), or of those an ORDER
	// BY's filter lists (partsListed, listScope); manyParts says they
	// are more than a walk merges.
	parts       [][]byte
	manyParts   bool
	partsListed bool
	// listed holds, for an ORDER BY whose filter lists partition keys
	// across a range or the container, the EPK encodings of the listed
	// logical partitions in the scope, sorted, and listedItems their
	// items: its walks merge their partition entries (listScope).
	listed      [][]byte
	listedItems int64
	// seqLo and seqHi bound the sequences of the scope's items when the
	// container keeps a sequence per range and the scope is narrower than
	// the container: the items of a range have its sequence's LSNs (a
	// range never splits), so a walk in _rid order reads [seqLo, seqHi)
	// and none of the other ranges' entries. seqHi 0: unbounded.
	seqLo, seqHi uint64
	// held are the WHERE clause's terms that pinned the scope (the
	// partition key or a prefix of a hierarchical one), which every item
	// of the scope meets.
	held []ast.Expr
}

// unheld returns q without the terms of its WHERE clause every item of the
// scope meets (held).
func (s *itemScope) unheld(q *ast.Query) *ast.Query {
	if len(s.held) == 0 {
		return q
	}
	return plan.WithoutTerms(q, s.held)
}

// ridSpan is the span of c's _rid-order entries (famByRid) that may hold
// the scope's items.
func (s *itemScope) ridSpan(c *containerRecord) (lo, hi []byte) {
	return s.seqBounds(collPrefix(famByRid, c.Rid))
}

// seqBounds returns the span of the keys under prefix that go on with the
// sequence of an item of the scope: those of its sequences when it bounds
// them (a range's, seqLo and seqHi), all of them otherwise. The _rid-order
// entries, and a value's tie entries and the absence entries in _rid
// order (absent.go), are such keys.
func (s *itemScope) seqBounds(prefix []byte) (lo, hi []byte) {
	if s.seqHi == 0 {
		return prefix, prefixEnd(prefix)
	}
	return binary.BigEndian.AppendUint64(bytes.Clone(prefix), s.seqLo), binary.BigEndian.AppendUint64(bytes.Clone(prefix), s.seqHi)
}

// holds reports whether an item at loc lies in the scope's span.
func (s *itemScope) holds(loc []byte) bool {
	return bytes.Compare(loc, s.lo) >= 0 && (s.hi == nil || bytes.Compare(loc, s.hi) < 0)
}

// inListed reports whether the item at loc is in one of the partitions a
// filter lists (listed), or in the span when there is no list.
func (s *itemScope) inListed(loc []byte) bool {
	if s.listed == nil {
		return s.holds(loc)
	}
	i, found := slices.BinarySearchFunc(s.listed, loc, bytes.Compare)
	return !found && i > 0 && bytes.HasPrefix(loc, s.listed[i-1])
}

// keeps reports whether a record read from the span belongs to the scope.
func (s *itemScope) keeps(rec *itemRecord) bool { return s.match(rec.pk) }

// narrow intersects the scope's span with the locations of EPKs in
// [min, max) ("" max: no bound).
func (s *itemScope) narrow(min, max string) {
	if lo := appendEPK(nil, min, false); bytes.Compare(lo, s.lo) > 0 {
		s.lo = lo
	}
	if max != "" {
		if hi := appendEPK(nil, max, false); s.hi == nil || bytes.Compare(hi, s.hi) < 0 {
			s.hi = hi
		}
	}
}

// narrowToEPKs scopes s to the effective partition keys in [min, max)
// (x-ms-start-epk, x-ms-end-epk: "" for no bound), which an SDK sends with
// a range's id for a feed range inside that range, or for a hierarchical
// key's prefix. The span is read as a prefix's is, partition by partition;
// one that covers the scope already leaves it as it is, and a logical
// partition's scope is narrower than any span that holds it.
func (s *itemScope) narrowToEPKs(min, max string) {
	if s.kind == plan.ScopePartition || min == "" && max == "" {
		return
	}
	min, max = strings.ToUpper(min), strings.ToUpper(max)
	lo := appendEPK(nil, min, false)
	covers := bytes.Compare(lo, s.lo) <= 0
	if max != "" {
		hi := s.hi
		if hi == nil {
			hi = appendEPK(nil, partition.MaxEPK, false)
		}
		covers = covers && bytes.Compare(appendEPK(nil, max, false), hi) >= 0
	}
	if covers {
		return
	}
	s.kind = plan.ScopePrefix
	s.narrow(min, max)
	if s.hi != nil && bytes.Compare(s.lo, s.hi) > 0 {
		s.hi = s.lo // a span outside the range: nothing
	}
}

// wholeContainer is the scope of every item.
func wholeContainer() *itemScope {
	return &itemScope{kind: plan.ScopeAll, lo: []byte{}, match: func([]byte) bool { return true }}
}

// scopeFor decides a page's scope from the partition key (from the header
// or pinned by the WHERE clause; nil when neither gives one) and the
// partition key range header, before any I/O.
func (e *Engine) scopeFor(c *containerRecord, key partition.Key, hasKey bool, rangeID string) (*itemScope, *Error) {
	s := wholeContainer()
	r, whole, derr := e.lookupRange(c, rangeID)
	if derr != nil {
		return nil, derr
	}
	if !whole {
		s.kind = plan.ScopeRange
		s.narrow(r.Min, r.Max)
		if c.SeqPerRange {
			seqs := c.seqsIn(func(min, max string) bool { return min < r.Max && r.Min < max })
			if len(seqs) > 0 {
				s.seqLo, s.seqHi = seqBase(seqs[0]), seqBase(seqs[len(seqs)-1]+1)
			}
		}
	}
	if !hasKey {
		return s, nil
	}
	match, derr := c.keyFilter(ItemRef{PartitionKey: key, HasKey: true})
	if derr != nil {
		return nil, derr
	}
	s.match = match
	if len(c.pk.paths) == 0 {
		return s, nil // one partition holds every item
	}
	if len(key) > 0 && len(key) < len(c.pk.paths) {
		min, max, err := partition.EPKRange(c.hashDefinition(), key)
		if err != nil {
			return nil, errorf(BadRequest, "%v", err)
		}
		s.kind, s.pk = plan.ScopePrefix, partition.AppendKeyBytes(nil, key)
		s.narrow(min, max)
		return s, nil
	}
	if len(key) == 0 {
		key = make(partition.Key, len(c.pk.paths))
		for i := range key {
			key[i] = partition.Undefined()
		}
	}
	s.kind, s.epk = plan.ScopePartition, c.epk(key)
	s.pk = partition.AppendKeyBytes(nil, key)
	lo := appendEPK(nil, s.epk, true)
	hi := prefixEnd(lo)
	if bytes.Compare(lo, s.lo) > 0 {
		s.lo = lo
	}
	if s.hi == nil || bytes.Compare(hi, s.hi) < 0 {
		s.hi = hi
	}
	if bytes.Compare(s.lo, s.hi) > 0 {
		s.hi = s.lo // a partition outside the range: nothing
	}
	return s, nil
}

// maxPrefixPartitions bounds how many partition counts a hierarchical
// prefix's size is summed from; beyond it the container's count stands in.
const maxPrefixPartitions = 256

// scopeSize returns the planner's view of a scope in a container holding
// total items: how many items it holds, from the maintained counters
// (usage.go).
func (e *Engine) scopeSize(r storage.Reader, c *containerRecord, s *itemScope, total int64) (plan.Scope, error) {
	var err error
	out := plan.Scope{Kind: s.kind, Items: total, ContainerItems: total}
	switch s.kind {
	case plan.ScopePartition:
		out.Items, err = readCount(r, partitionCountKey(c.Rid, s.epk))
	case plan.ScopeRange:
		out.Items = total / int64(len(e.rangesOf(c)))
	case plan.ScopePrefix:
		prefix := collPrefix(famUsage, c.Rid)
		lo := append(bytes.Clone(prefix), s.lo...)
		hi := prefixEnd(prefix)
		if s.hi != nil {
			hi = append(bytes.Clone(prefix), s.hi...)
		}
		var sum, n int64
		err = scanRange(r, lo, hi, func(_, v []byte) (bool, error) {
			if n++; n > maxPrefixPartitions {
				sum = total
				return false, nil
			}
			sum += decodeCount(v)
			return true, nil
		})
		out.Items = sum
	}
	return out, err
}

// scanRange calls fn for every key in [lo, hi), in order, stopping early
// when fn returns false.
func scanRange(r storage.Reader, lo, hi []byte, fn func(k, v []byte) (bool, error)) error {
	return scanRangeDir(r, lo, hi, false, fn)
}

// scanRangeDir is scanRange, from the last key down when reverse is set.
func scanRangeDir(r storage.Reader, lo, hi []byte, reverse bool, fn func(k, v []byte) (bool, error)) error {
	it, err := r.NewIter(storage.IterParams{Lower: lo, Upper: hi, Reverse: reverse})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		more, err := fn(it.Key(), it.Value())
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	return it.Err()
}

// readStats counts the work a page does: every record and every index
// entry it reads, whether or not it returns them (the request charge and
// the query metrics are made from them).
type readStats struct {
	records int
	entries int
	// bytes is the size of the records read, as stored.
	bytes int
	// budget is the request's evaluation budget. Every record a query
	// visits is charged to it where the query can still end its page
	// there, and every index entry it collects here, so that a scan which
	// filters everything out still stops when the request's time or
	// context runs out. Nil for readers outside a query.
	budget *eval.Budget
	// want, when set, is how many more records the page can use at
	// most: a source whose records lie scattered over the store reads
	// that many ahead, in key order (readAhead). A document gives a
	// streamed page at most one row, so reading as many records as rows
	// are wanted reads none the page does not reach. Nil: one at a time.
	want func() int
}

// ahead is how many records a scattered source reads at once (want).
func (st *readStats) ahead() int {
	if st.want == nil {
		return 1
	}
	return min(max(st.want(), 1), aheadMax)
}

// aheadMax bounds the records a source or walk reads ahead at once.
const aheadMax = 256

// entry counts one index entry and charges it to the budget.
func (st *readStats) entry() error {
	st.entries++
	if st.budget == nil {
		return nil
	}
	return st.budget.Spend(1)
}

// scanItems visits the items of the scope's span from location from
// onwards (nil: the start), in location order.
func scanItems(r storage.Reader, c *containerRecord, s *itemScope, from []byte, st *readStats, fn func(loc []byte, rec *itemRecord) (bool, error)) error {
	return scanItemsDir(r, c, s, from, false, st, fn)
}

// scanItemsDir is scanItems, or with reverse the items of the scope in
// descending location order from from (inclusive; nil: the end).
func scanItemsDir(r storage.Reader, c *containerRecord, s *itemScope, from []byte, reverse bool, st *readStats, fn func(loc []byte, rec *itemRecord) (bool, error)) error {
	prefix := collPrefix(famItem, c.Rid)
	lo, hi := scopeBounds(prefix, s)
	lo, hi = resumeBounds(lo, hi, prefix, from, reverse)
	// One record for the whole scan, not one allocation per item: fn
	// gets it for the call only, as it gets the stored bytes it points
	// into.
	var rec itemRecord
	return scanRangeDir(r, lo, hi, reverse, func(k, v []byte) (bool, error) {
		st.records++
		st.bytes += len(v)
		var err error
		if rec, err = decodeItemRecord(v); err != nil {
			return false, err
		}
		return fn(k[len(prefix):], &rec)
	})
}

// scopeBounds is the span of keys under prefix that end in the locations
// of scope s.
func scopeBounds(prefix []byte, s *itemScope) ([]byte, []byte) {
	lo, hi := append(bytes.Clone(prefix), s.lo...), prefixEnd(prefix)
	if s.hi != nil {
		hi = append(bytes.Clone(prefix), s.hi...)
	}
	return lo, hi
}

// resumeBounds narrows the span [lo, hi) of keys under prefix to where a
// walk resumes at prefix+from (nil: the start): from there on, or with
// reverse from there down, keys that extend it included (an entry may
// hold more after its position).
func resumeBounds(lo, hi, prefix, from []byte, reverse bool) ([]byte, []byte) {
	if from == nil {
		return lo, hi
	}
	k := append(bytes.Clone(prefix), from...)
	if !reverse {
		if bytes.Compare(k, lo) > 0 {
			lo = k
		}
		return lo, hi
	}
	if k = prefixEnd(k); bytes.Compare(k, hi) < 0 {
		hi = k
	}
	return lo, hi
}

// readItemAt reads the record at loc; ok is false when it is gone.
func readItemAt(r storage.Reader, c *containerRecord, loc []byte, st *readStats) (itemRecord, bool, error) {
	st.records++
	raw, err := r.Get(itemKey(c.Rid, loc))
	if errors.Is(err, storage.ErrNotFound) {
		return itemRecord{}, false, nil
	}
	if err != nil {
		return itemRecord{}, false, err
	}
	st.bytes += len(raw)
	rec, err := decodeItemRecord(raw)
	return rec, err == nil, err
}

// readAhead holds records read before their turn, by location. A walk
// that reads a run of items at places spread over the store (an ORDER BY
// page in _rid order, whose records lie wherever their partitions put
// them) reads the run in key order first: each read then goes on from the
// last one's table and blocks instead of seeking the store from its top,
// so a table is opened once for the run rather than at nearly every read.
type readAhead struct {
	recs map[string][]byte // nil: the item is gone
}

// fetch reads the records at locs, in key order, and keeps them for read.
// Each counts as read now.
func (a *readAhead) fetch(r storage.Reader, c *containerRecord, locs [][]byte, st *readStats) error {
	sorted := slices.Clone(locs)
	slices.SortFunc(sorted, bytes.Compare)
	sorted = slices.CompactFunc(sorted, bytes.Equal)
	if a.recs == nil {
		a.recs = make(map[string][]byte, len(sorted))
	}
	sorted = slices.DeleteFunc(sorted, func(loc []byte) bool { _, ok := a.recs[string(loc)]; return ok })
	keys := make([][]byte, len(sorted))
	for i, loc := range sorted {
		keys[i] = itemKey(c.Rid, loc)
	}
	st.records += len(keys)
	// A store over the network reads them all in one round trip.
	return storage.GetMany(r, keys, func(i int, raw []byte) error {
		// A value read is the caller's only until its next call.
		a.recs[string(sorted[i])] = bytes.Clone(raw)
		st.bytes += len(raw)
		return nil
	})
}

// read returns the record at loc, as fetched or from the store now; ok is
// false when it is gone.
func (a *readAhead) read(r storage.Reader, c *containerRecord, loc []byte, st *readStats) (itemRecord, bool, error) {
	raw, ok := a.recs[string(loc)]
	if !ok {
		return readItemAt(r, c, loc, st)
	}
	delete(a.recs, string(loc))
	if raw == nil {
		return itemRecord{}, false, nil
	}
	rec, err := decodeItemRecord(raw)
	return rec, err == nil, err
}

// keySpan is a span [lo, hi) of index keys. When in is set, the keys are
// entries of the whole container under a hierarchical prefix (a path's
// own, or a composite's), read from its partitions' entries, merged
// (prefixRange, prefixComposite): the same keys, less those of every
// other partition.
type keySpan struct {
	lo, hi []byte
	in     *partsView
}

// partsView is the view of the container's entries under out that a
// hierarchical prefix of a few partitions sees through their own entries,
// each partition's under base and its EPK (mergedIter).
type partsView struct {
	base  []byte
	parts [][]byte
	out   []byte
}

// throughParts has spans, keys of the container's entries under out, read
// through the view of the hierarchical prefix s's partitions' entries,
// each partition's under base and its EPK.
func throughParts(spans []keySpan, base, out []byte, s *itemScope) []keySpan {
	v := &partsView{base: base, parts: s.parts, out: out}
	for i := range spans {
		spans[i].in = v
	}
	return spans
}

// iter opens an iterator over the span, through its view when it has one.
func (sp keySpan) iter(r storage.Reader, reverse bool) (storage.Iterator, error) {
	if v := sp.in; v != nil {
		hi := sp.hi
		if hi == nil {
			hi = prefixEnd(v.out) // the merge reads nil as before every key
		}
		return newMergedIter(r, v.base, v.parts, v.out, sp.lo, hi, reverse)
	}
	return r.NewIter(storage.IterParams{Lower: sp.lo, Upper: sp.hi, Reverse: reverse})
}

// termSpans turns a planner term into spans of the container's index
// keys, in key order.
func termSpans(c *containerRecord, t plan.Term) []keySpan {
	return valueSpans(appendIndexPath(indexPrefix(c), t.Path), t, false, nil)
}

// scopedSpans is termSpans for the items of scope s, with the offset in
// their keys where the values begin. When the term is made of single
// values, the span of each is narrowed to the entries whose location lies
// in the scope, for an entry's key is its path, its value, then the item's
// location. A page in one logical partition then counts and reads that
// partition's entries of the value, not every partition's. A range of
// values is not one span of those entries in a scope: in a logical
// partition whose partition entries of the path are built it is one of
// theirs (partRange); otherwise the container's entries are read whole and
// filtered by location.
func scopedSpans(c *containerRecord, t plan.Term, s *itemScope) ([]keySpan, int) {
	if partRange(c, t, s) {
		prefix := partsPrefix(c, t.Path, s.epk)
		return valueSpans(prefix, t, false, nil), len(prefix)
	}
	prefix := appendIndexPath(indexPrefix(c), t.Path)
	if prefixRange(c, t, s) {
		return throughParts(valueSpans(prefix, t, false, nil), absentPrefix(indexPrefix(c), partMarker, t.Path), prefix, s), len(prefix)
	}
	if !scopedTerm(c, t, s) {
		return valueSpans(prefix, t, false, nil), len(prefix)
	}
	return valueSpans(prefix, t, false, s), len(prefix)
}

// scopedTerm reports whether scopedSpans narrows t's spans to s: s is
// narrower than the container and every span of t is one value, or t is
// a partRange or a prefixRange.
func scopedTerm(c *containerRecord, t plan.Term, s *itemScope) bool {
	return s.kind != plan.ScopeAll && singleValues(t) || partRange(c, t, s) || prefixRange(c, t, s)
}

// partRange reports whether t, in the logical partition s, is a range of
// values (or a STARTSWITH prefix) read from the path's partition entries
// (absent.go), which hold the partition's own entries by value, where the
// path's entries hold every partition's.
func partRange(c *containerRecord, t plan.Term, s *itemScope) bool {
	return s.kind == plan.ScopePartition && rangeOnParts(c, t)
}

// prefixRange reports whether t, under the hierarchical prefix s, is a
// range of values (or a STARTSWITH prefix) whose spans scopedSpans reads
// through the view of its partitions' partition entries: the path's own
// entries hold every partition's, so counting or collecting the range
// there read the whole container's entries of it, where the prefix's
// partitions hold theirs apart. The prefix's partitions must have been
// read and be few (prefixParts, readPrefixParts).
func prefixRange(c *containerRecord, t plan.Term, s *itemScope) bool {
	return s.kind == plan.ScopePrefix && s.parts != nil && !s.manyParts && rangeOnParts(c, t)
}

// rangeOnParts reports whether t is a range of values (or a STARTSWITH
// prefix) on a path whose partition entries are complete.
func rangeOnParts(c *containerRecord, t plan.Term) bool {
	return len(t.Spans) > 0 && !singleValues(t) && !crossesArray(t.Path) && c.partsReady(t.Path)
}

// singleValues reports whether every span of t is one value (equality,
// IN).
func singleValues(t plan.Term) bool {
	for _, sp := range t.Spans {
		if sp.Kind != plan.SpanValue {
			return false
		}
	}
	return len(t.Spans) > 0
}

// kindTags are the first and last type tags of the index's entries for
// the values of each kind.
var kindTags = [...][2]byte{
	document.Null:   {tagNull, tagNull},
	document.Bool:   {tagFalse, tagTrue},
	document.Number: {tagNumber, tagNumber},
	document.String: {tagString, tagString},
	document.Array:  {tagArray, tagArray},
	document.Object: {tagObject, tagObject},
}

// valueSpans turns the value spans of a term into spans of keys that hold
// an encoded value after base, in key order; desc says the values are
// encoded inverted (a descending path of a composite index), which
// reverses their order, so a range's upper bound is then the span's start.
// within, when not nil, narrows the span of one value to the entries of
// the items it holds, the location following the value.
func valueSpans(base []byte, t plan.Term, desc bool, within *itemScope) []keySpan {
	enc := func(v document.Value) []byte {
		k, _ := appendCompositeValue(bytes.Clone(base), v, desc)
		return k
	}
	mask := byte(0)
	if desc {
		mask = 0xff
	}
	var out []keySpan
	for _, sp := range t.Spans {
		switch sp.Kind {
		case plan.SpanValue:
			k, ok := appendCompositeValue(bytes.Clone(base), sp.Lo, desc)
			if !ok {
				continue
			}
			lo, hi := k, prefixEnd(k)
			if within != nil {
				lo = append(bytes.Clone(k), within.lo...)
				if within.hi != nil {
					hi = append(bytes.Clone(k), within.hi...)
				}
			}
			if bytes.Compare(lo, hi) < 0 {
				out = append(out, keySpan{lo: lo, hi: hi})
			}
		case plan.SpanPrefix:
			k := append(bytes.Clone(base), tagString^mask)
			for i := 0; i < len(sp.Lo.Str()); i++ {
				if b := sp.Lo.Str()[i]; b == 0 {
					k = append(k, 0^mask, 0xff^mask)
				} else {
					k = append(k, b^mask)
				}
			}
			out = append(out, keySpan{lo: k, hi: prefixEnd(k)})
		case plan.SpanKinds:
			// Every entry of the kinds' types: a scalar's value or an
			// array's or object's bare marker (index.go indexEntries).
			first, last := kindTags[sp.Kinds.First][0]^mask, kindTags[sp.Kinds.Last][1]^mask
			if desc {
				first, last = last, first
			}
			lo := append(bytes.Clone(base), first)
			out = append(out, keySpan{lo: lo, hi: prefixEnd(append(bytes.Clone(base), last))})
		case plan.SpanRange:
			v := sp.Lo
			if !sp.HasLo {
				v = sp.Hi
			}
			tag := byte(tagNumber)
			if v.Kind() == document.String {
				tag = tagString
			}
			lo := append(bytes.Clone(base), tag^mask)
			hi := prefixEnd(lo)
			first, last := sp.Lo, sp.Hi
			hasFirst, hasLast := sp.HasLo, sp.HasHi
			exclFirst, exclLast := sp.ExclLo, sp.ExclHi
			if desc {
				first, last, hasFirst, hasLast = sp.Hi, sp.Lo, sp.HasHi, sp.HasLo
				exclFirst, exclLast = sp.ExclHi, sp.ExclLo
			}
			// An excluded bound's entries are left out when they hold
			// that value alone (exactValue): those of a number 2^53 or
			// more hold its neighbours too.
			if hasFirst {
				lo = enc(first)
				if exclFirst && exactScalar(first) {
					lo = prefixEnd(lo)
				}
			}
			if hasLast {
				hi = prefixEnd(enc(last))
				if exclLast && exactScalar(last) {
					hi = enc(last)
				}
			}
			if bytes.Compare(lo, hi) < 0 {
				out = append(out, keySpan{lo: lo, hi: hi})
			}
		}
	}
	slices.SortFunc(out, func(a, b keySpan) int { return bytes.Compare(a.lo, b.lo) })
	return out
}

// exactScalar reports whether the index keeps v as a value no other
// value shares (exactValue).
func exactScalar(v document.Value) bool {
	k, ok := appendIndexValue(nil, v)
	return ok && exactValue(k)
}

// entryLoc is the location at the end of an index entry key k whose path
// ends at offset base; ok is false for a malformed key.
func entryLoc(k []byte, base int) ([]byte, bool) { return maskedEntryLoc(k, base, 0) }

// maskedEntryLoc is entryLoc of an entry whose value was XORed with mask
// (0xFF: the descending last path of a composite index).
func maskedEntryLoc(k []byte, base int, mask byte) ([]byte, bool) {
	n := maskedValueLen(k[base:], mask)
	if n <= 0 || len(k)-base-n < 10 {
		return nil, false
	}
	return k[base+n:], true
}

// indexValueLen is the length of the encoded value (or marker) at the
// start of b, or 0 when it is malformed.
func indexValueLen(b []byte) int { return maskedValueLen(b, 0) }

// maskedValueLen is indexValueLen of a value whose bytes were XORed with
// mask (0xFF: a descending path of a composite index).
func maskedValueLen(b []byte, mask byte) int {
	if len(b) == 0 {
		return 0
	}
	switch b[0] ^ mask {
	case tagNull, tagFalse, tagTrue, tagArray, tagObject:
		return 1
	case tagNumber:
		if len(b) < 9 {
			return 0
		}
		return 9
	case tagString:
		for i := 1; i+1 < len(b); i++ {
			if b[i]^mask == 0 {
				if b[i+1]^mask == 1 {
					return i + 2
				}
				i++ // an escaped 0x00
			}
		}
	}
	return 0
}

// compositeLoc is the location at the end of an entry k of composite
// comp whose values start at offset base; ok is false for a malformed key.
func compositeLoc(k []byte, base int, comp *compositeIndex) ([]byte, bool) {
	off := base
	for _, desc := range comp.desc {
		mask := byte(0)
		if desc {
			mask = 0xff
		}
		n := maskedValueLen(k[off:], mask)
		if n <= 0 {
			return nil, false
		}
		off += n
	}
	if len(k)-off < 10 {
		return nil, false
	}
	return k[off:], true
}

// spanLocs collects the locations of the items in the scope that the
// term's spans name, in _rid order and without repeats.
func spanLocs(r storage.Reader, c *containerRecord, t plan.Term, s *itemScope, st *readStats) ([][]byte, error) {
	spans, base := scopedSpans(c, t, s)
	return collectLocs(r, spans, s, st, func(k []byte) ([]byte, bool) { return entryLoc(k, base) })
}

// collectLocs reads the entries of spans and returns the locations locOf
// finds in them that lie in the scope, in its order (s.byIndexPos) and
// without repeats.
// An entry outside the scope (or one locOf rejects) costs only its key.
func collectLocs(r storage.Reader, spans []keySpan, s *itemScope, st *readStats, locOf func(k []byte) ([]byte, bool)) ([][]byte, error) {
	out, _, err := collectLocsUpTo(r, spans, s, st, locOf, math.MaxInt64, math.MaxInt64)
	return out, err
}

// collectLocsUpTo is collectLocs reading at most limit entries: read is
// how many it read, and once that is limit the locations may not be all.
// Past keep entries it keeps no location and only counts on: locs is then
// nil.
func collectLocsUpTo(r storage.Reader, spans []keySpan, s *itemScope, st *readStats, locOf func(k []byte) ([]byte, bool), limit, keep int64) (locs [][]byte, read int64, err error) {
	err = scanSpans(r, spans, func(k, _ []byte) (bool, error) {
		if read >= limit {
			return false, nil
		}
		read++
		if err := st.entry(); err != nil {
			return false, err
		}
		if read > keep {
			locs = nil
		} else if loc, ok := locOf(k); ok && s.holds(loc) {
			locs = append(locs, bytes.Clone(loc))
		}
		return true, nil
	})
	if err != nil || read > keep {
		return nil, read, err
	}
	slices.SortFunc(locs, s.byIndexPos)
	return slices.CompactFunc(locs, bytes.Equal), read, nil
}

// scanSpans reads the pairs of spans in key order: through the store's
// ScanSpans, in one round trip for many spans over the network, when they
// are in key order and disjoint, as termSpans makes them; one span at a
// time otherwise.
func scanSpans(r storage.Reader, spans []keySpan, fn func(k, v []byte) (bool, error)) error {
	if slices.ContainsFunc(spans, func(sp keySpan) bool { return sp.in != nil }) {
		return scanViewSpans(r, spans, fn)
	}
	ss := make([]storage.Span, len(spans))
	ordered := true
	for i, sp := range spans {
		ss[i] = storage.Span{Lower: sp.lo, Upper: sp.hi}
		if i > 0 && (spans[i-1].hi == nil || bytes.Compare(spans[i-1].hi, sp.lo) > 0) {
			ordered = false
		}
	}
	if !ordered {
		return storage.ScanEachSpan(r, ss, fn)
	}
	return storage.ScanSpans(r, ss, fn)
}

// scanViewSpans is scanSpans for spans some of which are read through a
// view (keySpan.in): one span at a time.
func scanViewSpans(r storage.Reader, spans []keySpan, fn func(k, v []byte) (bool, error)) error {
	for _, sp := range spans {
		it, err := sp.iter(r, false)
		if err != nil {
			return err
		}
		more := true
		for ok := it.First(); ok && more; ok = it.Next() {
			if more, err = fn(it.Key(), it.Value()); err != nil {
				break
			}
		}
		if err == nil {
			err = it.Err()
		}
		if cerr := it.Close(); err == nil {
			err = cerr
		}
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// countSpans counts the entries of spans, stopping at limit.
func countSpans(r storage.Reader, spans []keySpan, limit int64, st *readStats) (int64, error) {
	sc := spanCounter{spans: spans}
	err := sc.count(r, limit, st)
	return sc.n, err
}

// itemSource yields the candidates of an access path in its order, from
// position from (inclusive; nil: the start). pos is the item's position in
// the path, where a continuation resumes; loc is where the item is stored.
// Records are re-filtered by the caller: a source may yield items the
// query does not want, never omit one it does. rec, like the bytes it
// holds, is valid only during the call: a caller that keeps a record
// copies it and detaches it.
type itemSource func(from []byte, fn func(pos, loc []byte, rec *itemRecord) (bool, error)) error

// scanSource reads every item of the scope. A logical partition or a
// hierarchical prefix is one span of item keys, read in location order
// (which within a partition is _rid order); the position is the location.
// A wider scope walks the _rid-order entries, skipping by key those whose
// location lies outside the scope, and reads each item: the service
// returns a physical partition's documents in _rid order, and clients
// depend on it. The position is then the sequence.
func scanSource(r storage.Reader, c *containerRecord, s *itemScope, st *readStats) itemSource {
	return scanSourceDir(r, c, s, false, st)
}

// scanSourceDir is scanSource, or with reverse the scan order backwards:
// from the position from (inclusive; nil: the end) down.
func scanSourceDir(r storage.Reader, c *containerRecord, s *itemScope, reverse bool, st *readStats) itemSource {
	if s.kind == plan.ScopePartition || s.kind == plan.ScopePrefix {
		return func(from []byte, fn func(pos, loc []byte, rec *itemRecord) (bool, error)) error {
			return scanItemsDir(r, c, s, from, reverse, st, func(loc []byte, rec *itemRecord) (bool, error) {
				return fn(loc, loc, rec)
			})
		}
	}
	return func(from []byte, fn func(pos, loc []byte, rec *itemRecord) (bool, error)) error {
		prefix := collPrefix(famByRid, c.Rid)
		lo, hi := s.ridSpan(c)
		lo, hi = resumeBounds(lo, hi, prefix, from, reverse)
		// The _rid order crosses partitions, so the records are read a
		// run at a time (st.ahead), their entries collected first.
		var poss, locs [][]byte
		more := true
		emit := func() (bool, error) {
			more, err := readRun(r, c, locs, st, func(i int, rec *itemRecord) (bool, error) { return fn(poss[i], locs[i], rec) })
			poss, locs = poss[:0], locs[:0]
			return more, err
		}
		err := scanRangeDir(r, lo, hi, reverse, func(k, v []byte) (bool, error) {
			st.entries++
			if !s.holds(v) {
				return true, nil
			}
			poss, locs = append(poss, bytes.Clone(k[len(prefix):])), append(locs, bytes.Clone(v))
			if len(locs) < st.ahead() {
				return true, nil
			}
			var err error
			more, err = emit()
			return more && err == nil, err
		})
		if err == nil && more && len(locs) > 0 {
			_, err = emit()
		}
		return err
	}
}

// readRun reads the records at locs, ahead in key order when there are
// several, and calls fn with the index of each in locs, in that order,
// until it returns false; items gone are passed over.
func readRun(r storage.Reader, c *containerRecord, locs [][]byte, st *readStats, fn func(i int, rec *itemRecord) (bool, error)) (bool, error) {
	var ra readAhead
	if len(locs) > 1 {
		if err := ra.fetch(r, c, locs, st); err != nil {
			return false, err
		}
	}
	for i, loc := range locs {
		rec, ok, err := ra.read(r, c, loc, st)
		if err != nil {
			return false, err
		}
		if !ok {
			continue
		}
		if more, err := fn(i, &rec); err != nil || !more {
			return false, err
		}
	}
	return true, nil
}

// entryRun holds the candidates an index walk met, with the entries they
// came from, until it reads their records together (readRun). A walk that
// stops once it has as many passing documents as it wants collects at
// most as many as it still wants, so it reads no record that reading them
// one at a time would not have.
type entryRun struct {
	keys, locs [][]byte
}

// add keeps a candidate and returns how many the run holds.
func (er *entryRun) add(key, loc []byte) int64 {
	er.keys, er.locs = append(er.keys, bytes.Clone(key)), append(er.locs, bytes.Clone(loc))
	return int64(len(er.locs))
}

// read reads the run's records and calls fn with each, in the walk's
// order (an item gone is passed over), then empties the run.
func (er *entryRun) read(r storage.Reader, c *containerRecord, st *readStats, fn func(key, loc []byte, rec *itemRecord) error) error {
	_, err := readRun(r, c, er.locs, st, func(i int, rec *itemRecord) (bool, error) { return true, fn(er.keys[i], er.locs[i], rec) })
	er.keys, er.locs = er.keys[:0], er.locs[:0]
	return err
}

// scanPos is the position of the item at loc in the scan order of the
// scope (scanSource): its location within a partition or a prefix, its
// sequence (_rid order) otherwise.
func (s *itemScope) scanPos(loc []byte) []byte {
	if s.kind == plan.ScopePartition || s.kind == plan.ScopePrefix {
		return loc
	}
	return seqPos(loc)
}

// indexPos is the position of the item at loc on a page an index path
// reads: its location within a hierarchical prefix, whose scan goes
// partition by partition (scanPos), its sequence otherwise (_rid order;
// within a logical partition the locations go in the same order).
func (s *itemScope) indexPos(loc []byte) []byte {
	if s.kind == plan.ScopePrefix {
		return loc
	}
	return seqPos(loc)
}

// byIndexPos orders locations by indexPos, then by location.
func (s *itemScope) byIndexPos(a, b []byte) int {
	if s.kind == plan.ScopePrefix {
		return bytes.Compare(a, b)
	}
	return bySeqLoc(a, b)
}

// badIndexPos reports whether from cannot be a position of s's index
// paths: a location is longer than a sequence (and its zero byte).
func (s *itemScope) badIndexPos(from []byte) bool {
	return s.kind == plan.ScopePrefix && from != nil && len(from) < 10
}

// seqPos is the position of a location in _rid order.
func seqPos(loc []byte) []byte { return loc[len(loc)-8:] }

func bySeq(a, b []byte) int { return bytes.Compare(seqPos(a), seqPos(b)) }

// locSource reads the items at the locations locs returns, in that order,
// starting at the first whose position (s.indexPos) is at or after from;
// a page that resumes needs them sorted by it (_rid order, as the service
// returns a filtered query's documents, or a prefix's scan order).
func locSource(r storage.Reader, c *containerRecord, s *itemScope, locs func() ([][]byte, error), st *readStats) itemSource {
	return func(from []byte, fn func(pos, loc []byte, rec *itemRecord) (bool, error)) error {
		if s.badIndexPos(from) {
			return errBadContinuation
		}
		all, err := locs()
		if err != nil {
			return err
		}
		i := 0
		if from != nil {
			i, _ = slices.BinarySearchFunc(all, from, func(loc, from []byte) int { return bytes.Compare(s.indexPos(loc), from) })
		}
		for rest := all[i:]; len(rest) > 0; {
			run := rest[:min(len(rest), st.ahead())]
			rest = rest[len(run):]
			more, err := readRun(r, c, run, st, func(i int, rec *itemRecord) (bool, error) { return fn(s.indexPos(run[i]), run[i], rec) })
			if err != nil || !more {
				return err
			}
		}
		return nil
	}
}

// mergeSpans returns the merge of t's entries in scope s when they come in
// the order of its index paths (s.indexPos) value by value: in a logical
// partition or a hierarchical prefix a value's own entries follow it with
// the item's location, the partition's EPK then the sequence, and so do
// its partition entries in a logical partition (partRange); in a range or
// the whole container its tie entries (absent.go, tieSpans,
// rangeTieSpans) follow it with the sequence, then the location (skip is
// the 8 bytes of that sequence). ok is false otherwise: the entries must
// be collected and sorted.
func mergeSpans(r storage.Reader, c *containerRecord, t plan.Term, s *itemScope, st *readStats) (posMerge, bool, error) {
	return mergeSpansUpTo(r, c, t, s, maxRangeValues, st)
}

// mergeSpansUpTo is mergeSpans for at most values values of t's ranges:
// ok is false past them.
func mergeSpansUpTo(r storage.Reader, c *containerRecord, t plan.Term, s *itemScope, values int, st *readStats) (posMerge, bool, error) {
	m := posMerge{s: s, st: st}
	switch {
	case (s.kind == plan.ScopePartition || s.kind == plan.ScopePrefix) && singleValues(t):
		m.spans, m.base = scopedSpans(c, t, s)
		return m, true, nil
	case s.kind == plan.ScopePrefix && len(t.Spans) > 0:
		// The prefix's entries of each value of the ranges, in
		// location order as a value's are.
		prefix := appendIndexPath(indexPrefix(c), t.Path)
		runs, ok, err := valueRuns(r, valueSpans(prefix, t, false, nil), len(prefix), s, values, st)
		m.spans, m.base = runs, len(prefix)
		return m, ok, err
	case partRange(c, t, s):
		// The partition's values of the range, merged as an IN list's
		// when they are few.
		spans, base := scopedSpans(c, t, s)
		runs, ok, err := valueRuns(r, spans, base, s, values, st)
		m.spans, m.base = runs, base
		return m, ok, err
	case s.kind == plan.ScopeAll || s.kind == plan.ScopeRange:
		spans, base, ok := tieSpans(c, t)
		if !ok {
			var err error
			if spans, base, ok, err = rangeTieSpans(r, c, t, values, st); err != nil {
				return m, false, err
			}
		}
		for i := range spans {
			// A value's tie entries of the range's items alone.
			spans[i].lo, spans[i].hi = s.seqBounds(spans[i].lo)
		}
		m.spans, m.base, m.skip = spans, base, 8
		return m, ok, nil
	}
	return m, false, nil
}

// mayMerge reports whether mergeSpans may find t's entries in scope s in
// the order of its index paths value by value, without reading any.
func mayMerge(c *containerRecord, t plan.Term, s *itemScope) bool {
	switch {
	case s.kind == plan.ScopePartition:
		return singleValues(t) || partRange(c, t, s)
	case s.kind == plan.ScopePrefix:
		return len(t.Spans) > 0
	case s.kind == plan.ScopeAll || s.kind == plan.ScopeRange:
		return len(t.Spans) > 0 && !holdsStructures(t) && c.tiesReady(t.Path)
	}
	return false
}

// holdsStructures reports whether a span of t holds arrays or objects
// (IS_DEFINED, IS_ARRAY): the path's tie entries leave them out
// (absent.go tieEntry), so they cannot stand for its entries.
func holdsStructures(t plan.Term) bool {
	return slices.ContainsFunc(t.Spans, func(sp plan.Span) bool { return !sp.Scalars() })
}

// spanSource reads the items the entries of m's spans name (mergeSpans).
// Several values' spans (an IN list) are merged by sequence, an item two
// of them name (through array elements) read once; an entry whose
// location the scope does not hold costs only its key. A page seeks to
// its position (a sequence, as locSource's) in each span and reads the
// entries from there, a run at a time, rather than every entry of the
// spans before it; locSource collects and sorts them all first, as it
// must when they come in another order.
func spanSource(r storage.Reader, c *containerRecord, m posMerge, st *readStats) itemSource {
	return func(from []byte, fn func(pos, loc []byte, rec *itemRecord) (bool, error)) error {
		m := m
		defer m.close()
		if err := m.open(r, from); err != nil {
			return err
		}
		rr := runReader{r: r, c: c, s: m.s, st: st, fn: fn}
		for !rr.done {
			h := m.first()
			if h == nil {
				break
			}
			if err := rr.add(h.key, h.loc); err != nil {
				return err
			}
			if err := m.pass(h.loc); err != nil {
				return err
			}
		}
		return rr.flush()
	}
}

// runReader reads the records of the candidates a merge adds, in its
// order, a run at a time (entryRun), and hands each to fn with its
// position (s.indexPos) until fn wants no more (done).
type runReader struct {
	r    storage.Reader
	c    *containerRecord
	s    *itemScope
	st   *readStats
	fn   func(pos, loc []byte, rec *itemRecord) (bool, error)
	run  entryRun
	done bool
}

// add keeps a candidate, reading the run once it holds as many as the
// page may read ahead.
func (rr *runReader) add(key, loc []byte) error {
	if rr.run.add(key, loc) >= int64(rr.st.ahead()) {
		return rr.flush()
	}
	return nil
}

// flush reads the run's records.
func (rr *runReader) flush() error {
	return rr.run.read(rr.r, rr.c, rr.st, func(_, loc []byte, rec *itemRecord) error {
		if rr.done {
			return nil
		}
		more, err := rr.fn(rr.s.indexPos(loc), loc, rec)
		rr.done = !more
		return err
	})
}

// intersectSource reads the items both a's and b's spans name (each as
// spanSource's), in the scope's order (s.indexPos): each merge skips
// ahead to the other's item, by a few steps or by seeking each of its
// spans, so a page reads the entries between its position and its last
// row rather than every entry of the two terms.
func intersectSource(r storage.Reader, c *containerRecord, a, b posMerge, st *readStats) itemSource {
	return func(from []byte, fn func(pos, loc []byte, rec *itemRecord) (bool, error)) error {
		a, b := a, b
		defer a.close()
		defer b.close()
		if err := a.open(r, from); err != nil {
			return err
		}
		if err := b.open(r, from); err != nil {
			return err
		}
		rr := runReader{r: r, c: c, s: a.s, st: st, fn: fn}
		err := intersect(&a, &b, func(key, loc []byte) (bool, error) {
			err := rr.add(key, loc)
			return !rr.done, err
		})
		if err != nil {
			return err
		}
		return rr.flush()
	}
}

// unionSource reads the items any of ms's spans name (each merge as
// spanSource's), in the scope's order: the item that comes first among
// the merges' next ones is handed on, and every merge at it passes it, so
// an item two terms name is read once. A page seeks to its position in
// each span and reads the entries from there, rather than collecting
// every term's entries.
func unionSource(r storage.Reader, c *containerRecord, ms []posMerge, st *readStats) itemSource {
	return func(from []byte, fn func(pos, loc []byte, rec *itemRecord) (bool, error)) error {
		ms := slices.Clone(ms)
		defer func() {
			for i := range ms {
				ms[i].close()
			}
		}()
		for i := range ms {
			if err := ms[i].open(r, from); err != nil {
				return err
			}
		}
		s := ms[0].s
		rr := runReader{r: r, c: c, s: s, st: st, fn: fn}
		for !rr.done {
			var head *spanHead
			for i := range ms {
				if h := ms[i].first(); h != nil && (head == nil || s.byIndexPos(h.loc, head.loc) < 0) {
					head = h
				}
			}
			if head == nil {
				break
			}
			loc := bytes.Clone(head.loc)
			if err := rr.add(head.key, loc); err != nil {
				return err
			}
			for i := range ms {
				if err := ms[i].pass(loc); err != nil {
					return err
				}
			}
		}
		return rr.flush()
	}
}

// intersect steps the opened merges a and b together and hands fn each
// item both name, by its entry key in a and its location, in the scope's
// order, until fn wants no more: the one behind moves to the other's
// position, by a few steps or by seeking each of its spans.
func intersect(a, b *posMerge, fn func(key, loc []byte) (bool, error)) error {
	for {
		ha, hb := a.first(), b.first()
		if ha == nil || hb == nil {
			return nil
		}
		var err error
		switch d := a.s.byIndexPos(ha.loc, hb.loc); {
		case d < 0:
			err = a.skipTo(a.s.indexPos(hb.loc))
		case d > 0:
			err = b.skipTo(a.s.indexPos(ha.loc))
		default:
			loc := bytes.Clone(ha.loc)
			more, ferr := fn(ha.key, loc)
			if ferr != nil || !more {
				return ferr
			}
			if err = a.pass(loc); err == nil {
				err = b.pass(loc)
			}
		}
		if err != nil {
			return err
		}
	}
}

// posMerge merges the entries of spans by the position of the location
// each names in scope s (s.byIndexPos: by sequence, or by location in a
// hierarchical prefix), each span's entries coming in that order: the
// location follows the value, after skip bytes (a tie entry's sequence),
// and the value begins at offset base. Entries whose location the scope
// does not hold are passed over, each costing its key.
type posMerge struct {
	spans      []keySpan
	base, skip int
	s          *itemScope
	st         *readStats
	heads      []spanHead
	every      func(k []byte) ([]byte, bool) // locOf(nil)
}

// open opens an iterator on each span, at the first entry whose position
// is at or past from (nil: the span's start). A position past a sequence
// (the sequence and a zero byte) seeks to that sequence's own entries,
// which the location follows in tie entries: they are passed over.
func (m *posMerge) open(r storage.Reader, from []byte) error {
	if m.s.badIndexPos(from) {
		return errBadContinuation
	}
	m.heads = make([]spanHead, 0, len(m.spans))
	m.every = m.locOf(nil)
	for _, sp := range m.spans {
		it, err := sp.iter(r, false)
		if err != nil {
			return err
		}
		at := sp.lo
		if m.s.kind == plan.ScopePrefix {
			// A location follows the value itself.
			at = sp.lo[:m.base+max(indexValueLen(sp.lo[m.base:]), 0)]
		}
		m.heads = append(m.heads, spanHead{it: it, lo: sp.lo, at: at})
		h := &m.heads[len(m.heads)-1]
		if from == nil {
			err = h.take(it.First(), m.every, m.st)
		} else {
			err = h.seek(from, m.locOf(from), m.st)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// locOf returns the location an entry names, when the scope holds it and
// its position is at or past min (nil: any).
func (m *posMerge) locOf(min []byte) func(k []byte) ([]byte, bool) {
	return func(k []byte) ([]byte, bool) {
		loc, ok := entryLoc(k, m.base)
		if !ok || len(loc) < m.skip+10 || !m.s.holds(loc[m.skip:]) {
			return nil, false
		}
		loc = loc[m.skip:]
		return loc, min == nil || bytes.Compare(m.s.indexPos(loc), min) >= 0
	}
}

// first returns the head whose item comes first, or nil when every span
// has ended.
func (m *posMerge) first() *spanHead {
	var first *spanHead
	for i := range m.heads {
		if h := &m.heads[i]; h.loc != nil && (first == nil || m.s.byIndexPos(h.loc, first.loc) < 0) {
			first = h
		}
	}
	return first
}

// pass moves every head at loc (an item two spans name) to its next
// entry.
func (m *posMerge) pass(loc []byte) error {
	loc = bytes.Clone(loc)
	for i := range m.heads {
		if h := &m.heads[i]; h.loc != nil && bytes.Equal(h.loc, loc) {
			if err := h.take(h.it.Next(), m.every, m.st); err != nil {
				return err
			}
		}
	}
	return nil
}

// skipSteps is how many entries a head steps through before it seeks to
// a sequence it must reach: a seek costs several steps, and the item
// sought is often near.
const skipSteps = 4

// skipTo moves every head behind the position pos to its first entry at
// or past it.
func (m *posMerge) skipTo(pos []byte) error {
	at := m.locOf(pos)
	for i := range m.heads {
		h := &m.heads[i]
		if h.loc == nil || bytes.Compare(m.s.indexPos(h.loc), pos) >= 0 {
			continue
		}
		stepped := false
		for range skipSteps {
			if err := h.take(h.it.Next(), m.every, m.st); err != nil {
				return err
			}
			if h.loc == nil || bytes.Compare(m.s.indexPos(h.loc), pos) >= 0 {
				stepped = true
				break
			}
		}
		if !stepped {
			if err := h.seek(pos, at, m.st); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *posMerge) close() {
	for _, h := range m.heads {
		h.it.Close()
	}
	m.heads = nil
}

// bySeqLoc orders locations by sequence (_rid order), then by location.
func bySeqLoc(a, b []byte) int {
	if d := bySeq(a, b); d != 0 {
		return d
	}
	return bytes.Compare(a, b)
}

// tieSpans returns the spans of t's values among the path's tie entries
// (absent.go), which hold each value's items in _rid order, the scan
// order of a range or the whole container: when every span of t is a
// value the index keeps exactly and the tie entries are built.
func tieSpans(c *containerRecord, t plan.Term) ([]keySpan, int, bool) {
	if !singleValues(t) || !c.tiesReady(t.Path) {
		return nil, 0, false
	}
	prefix := absentPrefix(indexPrefix(c), tieMarker, t.Path)
	var out []keySpan
	for _, sp := range t.Spans {
		k, ok := appendCompositeValue(bytes.Clone(prefix), sp.Lo, false)
		if !ok {
			continue // no entry holds it, as valueSpans
		}
		if !exactValue(k[len(prefix):]) {
			return nil, 0, false
		}
		out = append(out, keySpan{lo: k, hi: prefixEnd(k)})
	}
	return out, len(prefix), true
}

// maxRangeValues is how many values the ranges of a term may hold for its
// pages to merge the values' tie entries (rangeTieSpans). Each value costs
// a page two seeks, to find it and to read from the page's position in it;
// past this many, collecting the ranges' entries and sorting them costs
// about as much.
const maxRangeValues = 64

// rangeTieSpans is tieSpans for a term with ranges of values (or a
// STARTSWITH prefix) over a range or the whole container. The tie entries
// hold each value's items in _rid order, so a page can merge the spans of
// the values the ranges hold (valueRuns), rather than collect every entry
// of the ranges and sort them (locSource), which costs every page all the
// rows of the query. ok is false, and the page collects, when the ranges
// hold more than values values (maxRangeValues for a page), or a number the tie entries leave
// out (of magnitude 2^53 or more; exactValue).
func rangeTieSpans(r storage.Reader, c *containerRecord, t plan.Term, values int, st *readStats) ([]keySpan, int, bool, error) {
	if singleValues(t) || len(t.Spans) == 0 || holdsStructures(t) || !c.tiesReady(t.Path) {
		return nil, 0, false, nil
	}
	if inexact, err := holdsInexactNumbers(r, c, t, st); err != nil || inexact {
		return nil, 0, false, err
	}
	prefix := absentPrefix(indexPrefix(c), tieMarker, t.Path)
	spans, ok, err := valueRuns(r, valueSpans(prefix, t, false, nil), len(prefix), nil, values, st)
	return spans, len(prefix), ok, err
}

// valueRuns splits spans of index entries, whose values begin at offset
// base in their keys, into a span for each value they hold, found by
// seeking from each value to the next; within, when not nil, narrows each
// to the entries whose location (which follows the value) lies in that
// scope. ok is false when the spans hold more than values values.
func valueRuns(r storage.Reader, spans []keySpan, base int, within *itemScope, values int, st *readStats) ([]keySpan, bool, error) {
	var out []keySpan
	seen := make(map[string]bool)
	for _, sp := range spans {
		more, err := eachValue(r, sp, base, st, func(v []byte) bool {
			if seen[string(v)] {
				return true
			}
			seen[string(v)] = true
			run := keySpan{v, prefixEnd(v), sp.in}
			if within != nil {
				run.lo = append(bytes.Clone(v), within.lo...)
				if within.hi != nil {
					run.hi = append(bytes.Clone(v), within.hi...)
				}
			}
			out = append(out, run)
			return len(out) <= values
		})
		if err != nil || !more {
			return nil, false, err
		}
	}
	return out, true, nil
}

// eachValue calls fn with every value (its key up to the end of the
// encoded value) of the entries in sp, whose values begin at offset base,
// seeking past each value's entries; it reports false when fn does, or
// when an entry is malformed.
func eachValue(r storage.Reader, sp keySpan, base int, st *readStats, fn func(v []byte) bool) (bool, error) {
	it, err := sp.iter(r, false)
	if err != nil {
		return false, err
	}
	defer it.Close()
	for ok := it.First(); ok; {
		if err := st.entry(); err != nil {
			return false, err
		}
		k := it.Key()
		n := indexValueLen(k[base:])
		if n <= 0 {
			return false, nil
		}
		v := bytes.Clone(k[:base+n])
		if !fn(v) {
			return false, nil
		}
		next := prefixEnd(v)
		if next == nil {
			break
		}
		ok = it.SeekGE(next)
	}
	return true, it.Err()
}

// holdsInexactNumbers reports whether some item has a number of magnitude
// 2^53 or more in t's ranges: the path's own entries keep it, its tie
// entries do not. Such numbers sort at the two ends of the numbers, so
// this is a seek at each end of each range that reaches there.
func holdsInexactNumbers(r storage.Reader, c *containerRecord, t plan.Term, st *readStats) (bool, error) {
	base := appendIndexPath(indexPrefix(c), t.Path)
	enc := func(f float64) []byte {
		k, _ := appendIndexValue(bytes.Clone(base), document.Float(f))
		return k
	}
	numbers := append(bytes.Clone(base), tagNumber)
	ends := []keySpan{
		{lo: numbers, hi: prefixEnd(enc(-1 << 53))},
		{lo: enc(1 << 53), hi: prefixEnd(numbers)},
	}
	for _, sp := range valueSpans(base, t, false, nil) {
		for _, e := range ends {
			lo, hi := sp.lo, sp.hi
			if bytes.Compare(e.lo, lo) > 0 {
				lo = e.lo
			}
			if bytes.Compare(e.hi, hi) < 0 {
				hi = e.hi
			}
			if bytes.Compare(lo, hi) >= 0 {
				continue
			}
			if n, err := countSpans(r, []keySpan{{lo: lo, hi: hi}}, 1, st); err != nil || n > 0 {
				return n > 0, err
			}
		}
	}
	return false, nil
}

// spanHead is where a posMerge is in one span: the entry its iterator is
// at and the location it names, nil at the span's end; lo is the span's
// start, and at the key a position follows in the keys it seeks (the
// span's start before a sequence, the value before a location).
type spanHead struct {
	it               storage.Iterator
	lo, at, key, loc []byte
}

// seek moves the head to the first entry at or past the key of the
// position pos in its span (a position and a zero byte: past it).
func (h *spanHead) seek(pos []byte, locOf func(k []byte) ([]byte, bool), st *readStats) error {
	k := append(bytes.Clone(h.at), pos...)
	if bytes.Compare(k, h.lo) < 0 {
		k = h.lo
	}
	return h.take(h.it.SeekGE(k), locOf, st)
}

// take counts and keeps the entry the iterator is at (ok: there is one),
// passing over one locOf refuses.
func (h *spanHead) take(ok bool, locOf func(k []byte) ([]byte, bool), st *readStats) error {
	for ; ok; ok = h.it.Next() {
		if err := st.entry(); err != nil {
			return err
		}
		if loc, good := locOf(h.it.Key()); good {
			h.key = bytes.Clone(h.it.Key())
			h.loc = h.key[len(h.key)-len(loc):]
			return nil
		}
	}
	h.key, h.loc = nil, nil
	return h.it.Err()
}

// crossesArray reports whether a path goes through array elements.
func crossesArray(path []string) bool { return slices.Contains(path, "[]") }
