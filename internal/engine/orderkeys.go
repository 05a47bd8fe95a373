package engine

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// The ordered stream over several ORDER BY keys walks the first key's index
// as the one-key stream does, a group of equal first values at a time, and
// reads each group whole: its documents sorted by every key (then by scan
// order, backwards when a key is descending, as eval's sortRows breaks
// ties) are the rows of that stretch of the answer. The documents without
// the first property are one more group, found by a scan of the scope.
// So a page costs the groups it touches, not the scope: a first key of few
// distinct values makes large groups, and each page starting in one reads
// it again. A group larger than the in-memory sort bound is refused, as
// the sort of the whole scope would be. A group that a composite index on
// the keys covers is walked through it from the position instead, reading
// the records of the page's rows only (coveredGroup).
//
// A position inside a group is a document's sort key (sortKey): its key
// values and scan position. A page resumes at the first document that
// sorts at or after it, whatever the filter: an SDK resuming a
// cross-partition ORDER BY sends the range's token with a filter on the
// keys, which leaves out documents before the position but never moves it.
//
//	phaseUndefined                            (the group's start)
//	phaseUndefined + modeKeys + sort key      (skip: rows of that item)
//	phaseWalk + value + modeGroup             (the group's start)
//	phaseWalk + value + modeKeys + sort key   (skip: rows of that item)
const modeKeys = 2

// sortKey is where a document sorts under several ORDER BY keys: its key
// values, then its position in the scope's scan order.
type sortKey struct {
	keys []document.Value
	pos  []byte
}

// appendSortKey encodes k: each key as uvarint(length of its JSON + 1) and
// the JSON (0 alone for undefined), then the scan position.
func appendSortKey(b []byte, k sortKey) []byte {
	for _, v := range k.keys {
		if !v.IsDefined() {
			b = binary.AppendUvarint(b, 0)
			continue
		}
		j := v.JSON()
		b = binary.AppendUvarint(b, uint64(len(j))+1)
		b = append(b, j...)
	}
	return append(b, k.pos...)
}

// parseSortKey decodes a sort key of n keys.
func parseSortKey(b []byte, n int) (sortKey, bool) {
	k := sortKey{keys: make([]document.Value, n)}
	for i := range k.keys {
		l, w := binary.Uvarint(b)
		if w <= 0 || l > uint64(len(b)-w) {
			return sortKey{}, false
		}
		b = b[w:]
		if l == 0 {
			continue // document.Undef
		}
		v, err := document.Parse(bytes.Clone(b[:l-1]))
		if err != nil {
			return sortKey{}, false
		}
		k.keys[i], b = v, b[l-1:]
	}
	if len(b) == 0 {
		return sortKey{}, false
	}
	k.pos = bytes.Clone(b)
	return k, true
}

// compareSort orders two documents as eval's sortRows does.
func (w *orderStream) compareSort(a, b sortKey) int {
	for i, o := range w.keys {
		d := document.Compare(a.keys[i], b.keys[i])
		if o.Desc {
			d = -d
		}
		if d != 0 {
			return d
		}
	}
	d := bytes.Compare(a.pos, b.pos)
	if w.tiesDesc {
		d = -d
	}
	return d
}

// sortMember is a document of a group: where it sorts, where it is
// stored, and its rows.
type sortMember struct {
	sortKey
	loc  []byte
	rows []document.Value
}

// member returns the group member doc at loc makes.
func (w *orderStream) member(doc document.Value, loc []byte, rows []document.Value) sortMember {
	m := sortMember{loc: bytes.Clone(loc), rows: rows}
	m.pos = bytes.Clone(w.scanPos(loc))
	for _, o := range w.keys {
		m.keys = append(m.keys, doc.At(o.Path))
	}
	return m
}

// keysFrom parses the position inside a group that follows its prefix
// (phase, and value in the walk): nil at the group's start.
func (w *orderStream) keysFrom(rest []byte) (*sortKey, bool) {
	if len(rest) == 0 || (len(rest) == 1 && rest[0] == modeGroup) {
		return nil, true
	}
	if rest[0] != modeKeys {
		return nil, false
	}
	k, ok := parseSortKey(rest[1:], len(w.keys))
	return &k, ok
}

// undefinedSorted streams the rows of the scope's documents without the
// first ORDER BY property, sorted by the other keys, from pos (nil or
// [phaseUndefined]: the start). It reports false when the page filled.
func (w *orderStream) undefinedSorted(pos []byte, skip int) (bool, error) {
	var at *sortKey
	if pos != nil {
		var ok bool
		if at, ok = w.keysFrom(pos[1:]); !ok {
			return false, errBadContinuation
		}
	}
	if at != nil {
		if more, ok, err := w.keptGroup([]byte{phaseUndefined}, at, skip); ok || err != nil {
			return more, err
		}
	}
	g := w.newGather()
	cut := false
	err := w.undefinedSource(false)(nil, func(_, loc []byte, rec *itemRecord) (bool, error) {
		doc, rows, ok, err := w.docRows(loc, rec, w.undefinedKey)
		var more bool
		more, cut, err = g.add(doc, loc, rows, ok, err)
		return more, err
	})
	if err != nil {
		return false, err
	}
	if cut {
		w.stop([]byte{phaseUndefined}, 0)
		return false, nil
	}
	return w.sorted(g.members, at, skip, []byte{phaseUndefined})
}

// gather collects the members of a group to sort, one document read at a
// time.
type gather struct {
	w *orderStream
	// before is whether the page had read something before the group:
	// only then may the budget cut the page at the group's start.
	before  bool
	members []sortMember
}

func (w *orderStream) newGather() *gather { return &gather{w: w, before: w.visited} }

// add takes the result of reading one document: whether to read on,
// whether the budget ran out and the page ends before the group, or an
// error (the group outgrew the sort bound, or the query failed).
func (g *gather) add(doc document.Value, loc []byte, rows []document.Value, ok bool, err error) (more, cut bool, _ error) {
	if g.before && eval.Exhausted(err) {
		return false, true, nil
	}
	if err != nil {
		return false, false, queryError(err)
	}
	g.w.visited = true
	if ok && len(rows) > 0 {
		g.members = append(g.members, g.w.member(doc, loc, rows))
	}
	return true, false, g.w.sortBound(len(g.members))
}

// sortedGroup streams the rows of the group of the encoded value, whose
// items in the scope are at locs, sorted by every key, from at.
func (w *orderStream) sortedGroup(value []byte, locs [][]byte, at walkResume) (bool, error) {
	prefix := append([]byte{phaseWalk}, value...)
	from, err := w.groupFrom(at)
	if err != nil {
		return false, err
	}
	g := w.newGather()
	for j, loc := range locs {
		if err := w.fetch(locs[j:], len(locs)); err != nil {
			return false, err
		}
		doc, rows, ok, err := w.groupRows(value, loc)
		_, cut, err := g.add(doc, loc, rows, ok, err)
		if err != nil {
			return false, err
		}
		if cut {
			w.stop(append(prefix, modeGroup), 0)
			return false, nil
		}
	}
	return w.sorted(g.members, from, at.skip, prefix)
}

// groupFrom is the sort key a page resumes a group at (nil: the group's
// start).
func (w *orderStream) groupFrom(at walkResume) (*sortKey, error) {
	if at.value == nil {
		return nil, nil
	}
	from, ok := w.keysFrom(append([]byte{at.mode}, at.item...))
	if !ok {
		return nil, errBadContinuation
	}
	if from != nil && !from.keys[0].IsDefined() {
		// Left out for the walk's value (withoutFirstKey).
		str, ok := indexString(at.value)
		if !ok {
			return nil, errBadContinuation
		}
		from.keys[0] = document.Str(str)
	}
	return from, nil
}

// groupComposite returns the composite index that orders the documents of
// a group of equal first values in scope s by the other ORDER BY keys
// (keysComposite), once its gap entries are complete (absent.go): over a
// range or the whole container through its own entries, within a logical
// partition through its partition composite entries, which the first
// path's partition entries come with; within a prefix none,
// as a composite's entries are the container's and would cost the group's
// entries in every other partition.
func groupComposite(c *containerRecord, s *itemScope, keys []plan.OrderKey) (comp *compositeIndex, reverse, ok bool) {
	if s.kind != plan.ScopeAll && s.kind != plan.ScopeRange && s.kind != plan.ScopePartition {
		return nil, false, false
	}
	comp, reverse, ok = keysComposite(c, keys)
	if !ok || !c.compReady(comp) || s.kind == plan.ScopePartition && !partComposite(c, comp, s) {
		return nil, false, false
	}
	return comp, reverse, true
}

// keysComposite returns the composite index whose paths are the ORDER BY
// keys', with the directions after the first the keys' (reverse false) or
// all the opposite (reverse true).
func keysComposite(c *containerRecord, keys []plan.OrderKey) (comp *compositeIndex, reverse, ok bool) {
	for i := range c.index.composites {
		ci := &c.index.composites[i]
		if !ci.kept || len(ci.paths) != len(keys) {
			continue
		}
		same, opposite := true, true
		for j, k := range keys {
			if !slices.Equal(ci.paths[j], k.Path) {
				same, opposite = false, false
				break
			}
			if j > 0 {
				same = same && ci.desc[j] == k.Desc
				opposite = opposite && ci.desc[j] != k.Desc
			}
		}
		if same || opposite {
			return ci, !same, true
		}
	}
	return nil, false, false
}

// coveredGroup streams the rows of the group of the encoded value through
// the composite index on the ORDER BY keys (w.groupComp), from at, when
// the value is exact and no document of the group in the scope has a gap
// entry (absent.go): every one of them then has an entry there with exact
// values (otherwise covered is false, and the caller reads the group
// whole). The entries are in the order of the keys; a run of entries with
// equal values holds documents equal under every key, which are read and
// sorted by scan order, so a page reads its own rows' entries and records,
// not the group's.
func (w *orderStream) coveredGroup(value []byte, at walkResume) (more, covered bool, err error) {
	comp, reverse := w.groupComp, w.groupReverse
	if comp == nil || !exactValue(value) {
		return false, false, nil
	}
	if gapped, err := w.gapped(value); err != nil || gapped {
		return false, false, err
	}
	from, err := w.groupFrom(at)
	if err != nil {
		return false, true, err
	}
	skip := at.skip
	prefix := append([]byte{phaseWalk}, value...)
	base := compositeStart(w.c, comp, w.s)
	ch := &entryCheck{comp: comp, base: len(base)}
	start := len(base)
	base = append(base, value...)
	if comp.desc[0] {
		invert(base[start:])
	}
	// rest returns entry k's values after the first and its location, and
	// ok false for a malformed key.
	rest := func(k []byte) (vals, loc []byte, ok bool) {
		end, ok := ch.values(k, func(int, int, int, byte) bool { return true })
		if !ok || len(k)-end < 10 {
			return nil, nil, false
		}
		return k[len(base):end], k[end:], true
	}
	lo, hi := w.groupSpan(comp, ch, base)
	if from != nil {
		k := bytes.Clone(base)
		for i := 1; i < len(comp.paths); i++ {
			var ok bool
			if k, ok = appendCompositeValue(k, from.keys[i], comp.desc[i]); !ok {
				return false, false, nil
			}
		}
		if reverse {
			if e := prefixEnd(k); bytes.Compare(e, hi) < 0 {
				hi = e
			}
		} else if bytes.Compare(k, lo) > 0 {
			lo = k
		}
	}
	// last is the position after the last member whose rows all went
	// into the page: where a page the budget cuts short resumes.
	var last []byte
	lastSkip := 0
	if from != nil {
		last, lastSkip = appendSortKey(append(bytes.Clone(prefix), modeKeys), *from), skip
	}
	var run []sortMember
	var runVals []byte
	emit := func() bool {
		slices.SortFunc(run, func(a, b sortMember) int { return w.compareSort(a.sortKey, b.sortKey) })
		for _, m := range run {
			first := 0
			if from != nil {
				d := w.compareSort(m.sortKey, *from)
				if d < 0 {
					continue
				}
				if d == 0 {
					first = skip
				}
			}
			pos := appendSortKey(append(bytes.Clone(prefix), modeKeys), m.sortKey)
			for j := first; j < len(m.rows); j++ {
				if !w.put(m.rows[j]) {
					w.stop(pos, j)
					return false
				}
			}
			last, lastSkip = pos, len(m.rows)
		}
		run = run[:0]
		return true
	}
	// visit takes one entry whose item is in the scope and may pass the
	// filter, and reports whether to go on.
	visit := func(vals, loc []byte) (bool, error) {
		if runVals != nil && !bytes.Equal(vals, runVals) {
			if more = emit(); !more {
				return false, nil
			}
		}
		runVals = vals
		doc, rows, ok, err := w.groupRows(value, loc)
		if w.cutShort(err) {
			if last == nil {
				last, lastSkip = append(bytes.Clone(prefix), modeGroup), 0
			}
			w.stop(last, lastSkip)
			more = false
			return false, nil
		}
		if err != nil {
			return false, queryError(err)
		}
		w.visited = true
		if ok && len(rows) > 0 {
			run = append(run, w.member(doc, loc, rows))
		}
		return true, w.sortBound(len(run))
	}
	// The entries are taken a batch at a time, as many as the page has
	// room for rows after the run's, and their records read together
	// (fetch): one round trip a batch over the network, not one a
	// document.
	var batch [][2][]byte
	visitBatch := func() (bool, error) {
		locs := make([][]byte, len(batch))
		for i, e := range batch {
			locs[i] = e[1]
		}
		if err := w.fetch(locs, len(locs)); err != nil {
			return false, err
		}
		for _, e := range batch {
			if goOn, err := visit(e[0], e[1]); err != nil || !goOn {
				return false, err
			}
		}
		batch = batch[:0]
		return true, nil
	}
	more = true
	err = scanRangeDir(w.r, lo, hi, reverse, func(k, _ []byte) (bool, error) {
		w.st.entries++
		vals, loc, ok := rest(k)
		if !ok || !w.s.holds(loc) || !w.admits(loc) {
			return true, nil
		}
		if _, pass := ch.loc(k); !pass {
			return true, nil // its item cannot pass the filter
		}
		// The run's members each make a row before the batch's do.
		n := min(w.room()-len(run), aheadMax)
		if n <= 1 {
			// One record at a time, read after the run ahead of it is
			// streamed, so that none is read past a full page.
			return visit(bytes.Clone(vals), bytes.Clone(loc))
		}
		if batch = append(batch, [2][]byte{bytes.Clone(vals), bytes.Clone(loc)}); len(batch) < n {
			return true, nil
		}
		return visitBatch()
	})
	if err == nil && more && len(batch) > 0 {
		_, err = visitBatch()
	}
	if err != nil {
		return false, true, err
	}
	if more {
		more = emit()
	}
	return more, true, nil
}

// groupSpan returns the bounds of the walk of a group's entries in comp,
// which begin with base, and sets ch to skip the entries whose items
// cannot pass the filter's terms on the paths after the first. The paths
// from the second that the filter fixes with an equality, one after
// another, narrow the walk to the entries of their values (every row has
// those values), and the terms on the path after them to the hull of
// their spans: WHERE c.a = 1 AND c.b = 2 AND c.t < 100 ORDER BY c.a, c.b,
// c.t DESC walks only the entries of b = 2 with t below 100.
func (w *orderStream) groupSpan(comp *compositeIndex, ch *entryCheck, base []byte) (lo, hi []byte) {
	terms := plan.Terms(w.preds)
	ch.spans = make([][]keySpan, len(comp.paths))
	for i := 1; i < len(comp.paths); i++ {
		if t := slices.IndexFunc(terms, func(t plan.Term) bool { return slices.Equal(t.Path, comp.paths[i]) }); t >= 0 {
			ch.spans[i] = valueSpans(nil, terms[t], comp.desc[i], nil)
		}
	}
	span := bytes.Clone(base)
	i := 1
	for ; i < len(comp.paths); i++ {
		j := slices.IndexFunc(w.preds, func(p plan.Predicate) bool { return p.Op == plan.Eq && slices.Equal(p.Path, comp.paths[i]) })
		if j < 0 {
			break
		}
		next, ok := appendCompositeValue(span, w.preds[j].Value, comp.desc[i])
		if !ok {
			break
		}
		span = next
	}
	lo, hi = span, prefixEnd(span)
	if i < len(comp.paths) && len(ch.spans[i]) > 0 {
		sps := ch.spans[i]
		if k := append(bytes.Clone(span), sps[0].lo...); bytes.Compare(k, lo) > 0 {
			lo = k
		}
		if last := sps[len(sps)-1]; last.hi != nil {
			if k := append(bytes.Clone(span), last.hi...); bytes.Compare(k, hi) < 0 {
				hi = k
			}
		}
	}
	return lo, hi
}

// gapped reports whether a document of the group of the encoded value in
// the scope has a gap entry in the stream's composite: one without an
// entry there with exact values.
func (w *orderStream) gapped(value []byte) (bool, error) {
	return gappedIn(w.r, w.c, w.groupComp, value, w.s, w.st)
}

// gappedIn reports whether a document in scope s whose first path in
// comp has the encoded value has a gap entry there.
func gappedIn(r storage.Reader, c *containerRecord, comp *compositeIndex, value []byte, s *itemScope, st *readStats) (bool, error) {
	k := append(gapBase(indexPrefix(c), comp), value...)
	found := false
	err := scanRange(r, k, prefixEnd(k), func(key, _ []byte) (bool, error) {
		st.entries++
		found = s.holds(key[len(k):])
		return !found, nil
	})
	return found, err
}

// sortBound refuses a group of more documents than the page may sort.
func (w *orderStream) sortBound(n int) error {
	if n > w.rows.Budget().SortRows() {
		return queryError(eval.ErrSort)
	}
	return nil
}

// sorted sorts the members of a group and streams their rows from the
// first that sorts at or after at (nil: the start), skipping skip rows of
// a member at it; prefix begins the positions it stops at.
func (w *orderStream) sorted(members []sortMember, at *sortKey, skip int, prefix []byte) (bool, error) {
	slices.SortFunc(members, func(a, b sortMember) int { return w.compareSort(a.sortKey, b.sortKey) })
	i := 0
	if at != nil {
		i, _ = slices.BinarySearchFunc(members, *at, func(m sortMember, k sortKey) int { return w.compareSort(m.sortKey, k) })
	}
	stop := func(m sortMember, skip int) {
		p := append(bytes.Clone(prefix), modeKeys)
		w.stop(appendSortKey(p, m.sortKey), skip)
	}
	for k, m := range members[i:] {
		first := 0
		if at != nil && w.compareSort(m.sortKey, *at) == 0 {
			first = skip
		}
		for j := first; j < len(m.rows); j++ {
			if !w.put(m.rows[j]) {
				stop(m, j)
				w.keepGroup(prefix, members[i+k:])
				return false, nil
			}
		}
	}
	return true, nil
}

// memberRows reads the document at loc, a member of the group of the
// encoded value (nil: of the documents without the first key), and
// returns it and its rows; found is false when it is gone or no longer
// the group's.
func (w *orderStream) memberRows(value, loc []byte) (document.Value, []document.Value, bool, error) {
	if value != nil {
		return w.groupRows(value, loc)
	}
	rec, ok, err := w.ahead.read(w.r, w.c, loc, w.st)
	if err != nil || !ok {
		return document.Undef, nil, false, err
	}
	return w.docRows(loc, &rec, w.undefinedKey)
}

// firstGroup counts, up to limit, the entries of the first group the
// stream o over several keys walks: the planner's measure of what a page
// reads besides its rows.
func firstGroup(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, o *plan.Ordered, s *itemScope, limit int64, st *readStats) (int64, error) {
	n, _, err := leadEntries(r, c, q, params, o, s, 1, limit, st)
	return n, err
}

// leadEntries counts, up to limit, the entries of the first groups (at
// most values) of equal values the stream o walks, in the order of q's
// first ORDER BY key, within the bounds the WHERE clause sets on its
// path: every entry it steps through, in the scope or not, as the planner
// weighs the walk (plan.Ordered), seeking past a value's entries outside
// the scope as the walk does (skimOutside). seen is how many groups they
// begin.
func leadEntries(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, o *plan.Ordered, s *itemScope, values int, limit int64, st *readStats) (n int64, seen int, err error) {
	prefix := orderPrefix(c, o.Path, s)
	lo, hi := pathBounds(prefix, plan.Predicates(q, params), o.Path)
	desc := q.OrderBy[0].Desc
	it, err := r.NewIter(storage.IterParams{Lower: lo, Upper: hi, Reverse: desc})
	if err != nil {
		return 0, 0, err
	}
	defer it.Close()
	var value []byte
	outside := 0
	for ok := it.First(); ok && n < limit; {
		st.entries++
		k := it.Key()
		loc, good := entryLoc(k, len(prefix))
		if !good {
			ok = it.Next()
			continue
		}
		if v := k[len(prefix) : len(k)-len(loc)]; seen == 0 || !bytes.Equal(v, value) {
			if seen == values {
				break
			}
			value, seen, outside = append(value[:0], v...), seen+1, 0
		}
		n++
		if s.holds(loc) {
			outside = 0
		} else if outside++; outside >= skimOutside {
			ok, outside = it.SeekGE(seekOutside(prefix, value, loc, s, desc)), 0
			continue
		}
		ok = it.Next()
	}
	return n, seen, it.Err()
}

var errOrderByJoined = errorf(BadRequest, `Message: {"Errors":["Order-by over correlated collections is not supported."]}`)

// orderByJoined reports whether q, as a client wrote it, orders by a value
// of one of its JOINs (ORDER BY t, t.name after JOIN t IN c.tags), which
// the service refuses: its ORDER BY keys are paths of the document. The
// engine's own rewrites may order by them (a DISTINCT of a JOIN's
// elements walks their index in order), so the parser and evaluator take
// them and the engine refuses them here, before it plans.
func orderByJoined(q *ast.Query) bool {
	for _, o := range q.OrderBy {
		root, ok := ast.PathRoot(o.Expr)
		if !ok || o.Rank {
			continue
		}
		for _, j := range q.Joins {
			if j.Alias == root.Name {
				return true
			}
		}
	}
	return false
}
