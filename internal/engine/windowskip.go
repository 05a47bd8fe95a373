package engine

import (
	"bytes"
	"slices"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// Skipping an OFFSET's rows by their entries. A page of
// `SELECT * FROM c ORDER BY c.k OFFSET 5000 LIMIT 10` made the 5,000 rows
// before its window to drop them: it read and evaluated 5,010 records.
// When every document the walk names makes exactly one row, whatever it
// holds, the rows before the window are as many as those documents, and
// the walk counts them by their entries instead: the scope's, admitted by
// the filter, less the items expired and not purged yet (the purge
// backlog, as the counts from the index take them away). It passes over
// whole groups of values so, and where a group's entries come in the order
// of its rows (a logical partition or a prefix, for an exact value) over
// its first documents too. It then walks on from the document of the
// window's first row; over a range or the whole container, from the one
// the group's tie order puts first in the window (groups it can sort whole
// in memory), and otherwise from the start of its group, whose rows the
// window then skips one by one as they are made.

// skipState is what a walk that counts its skipped rows needs.
type skipState struct {
	// expired holds the locations of the scope's items expired and not
	// purged yet, which make no row.
	expired map[string]bool
	// undefined says the documents without the property, which the
	// absence entries name, make a row each too (skipUndefined).
	undefined bool
	// bounds are the index values of the exclusive bounds of the term on
	// the ordered path: the walk's span holds their entries (pathBounds),
	// and their documents make no row.
	bounds [][]byte
}

// excludes reports whether v, an index value of the ordered path, is an
// exclusive bound of its term.
func (k *skipState) excludes(v []byte) bool {
	return slices.ContainsFunc(k.bounds, func(b []byte) bool { return bytes.Equal(b, v) })
}

// exclusiveBounds returns the index values of the bounds t's spans leave
// out (a > or a <).
func exclusiveBounds(t plan.Term) [][]byte {
	var out [][]byte
	for _, sp := range t.Spans {
		for _, b := range []struct {
			has, excl bool
			v         document.Value
		}{{sp.HasLo, sp.ExclLo, sp.Lo}, {sp.HasHi, sp.ExclHi, sp.Hi}} {
			if !b.has || !b.excl {
				continue
			}
			if k, ok := appendIndexValue(nil, b.v); ok {
				out = append(out, k)
			}
		}
	}
	return out
}

// maxSkipGroup bounds the locations of one group skipRows collects to put
// them in tie order; past it the walk starts at the group's first entry.
const maxSkipGroup = maxFilterLocs

// countSkips sets the walk up to count the documents of the rows its
// window skips (skipRows) when each document the walk reads makes one row:
// a window still short of its first row, a plain ORDER BY of one key
// (no DISTINCT, grouping or further keys, not paced as a stream tried
// first), rows of one per document (rowEach), and a WHERE clause that the
// walk's entries answer whole: none besides the terms that pinned the
// scope, one exact term on the ordered path whose one span bounds the walk
// (pathBounds), or the exact term the stream filters its entries by. The
// scope's items must be the entries' (countableScope).
func (w *orderStream) countSkips(params map[string]document.Value) error {
	if w.win == nil || w.win.made >= w.win.from || w.pace != nil || w.feed != nil || w.distinct != nil || w.keys != nil {
		return nil
	}
	each := w.s.unheld(w.rows.Query())
	if !rowEach(each, w.o.Path) {
		return nil
	}
	t, ok := whereTerm(w.c, each, params, w.s)
	var filterPath []string
	if w.filter != nil {
		filterPath = w.filterPath()
	}
	if !ok || !answeredWhole(t, w.o.Path, filterPath) {
		return nil
	}
	expired, ok, err := countingScope(w.r, w.c, w.s, w.now, w.st)
	if err != nil || !ok {
		return err
	}
	w.skip = &skipState{expired: expired, undefined: w.o.Absent && rowEach(each, nil)}
	if t != nil && slices.Equal(t.Path, w.o.Path) {
		w.skip.bounds = exclusiveBounds(*t)
	}
	return nil
}

// whereTerm returns what of q's WHERE clause a walk of entries could
// answer whole: nil and true when there is none, its one exact term
// (loneExactTerm) and true, or false when it is anything else.
func whereTerm(c *containerRecord, q *ast.Query, params map[string]document.Value, s *itemScope) (*plan.Term, bool) {
	if q.Where == nil {
		return nil, true
	}
	if !plan.Exact(q, params) {
		return nil, false
	}
	t, ok := loneExactTerm(c, plan.Predicates(q, params), s)
	if !ok {
		return nil, false
	}
	return &t, true
}

// answeredWhole reports whether a walk of path's entries answers a WHERE
// clause of t (whereTerm) whole: t is nil (no WHERE clause), or on path
// with one span that bounds the walk (pathBounds), or on filterPath, the
// path of the term whose entries the stream filters its walk by (nil:
// none).
func answeredWhole(t *plan.Term, path, filterPath []string) bool {
	return t == nil || slices.Equal(t.Path, path) && len(t.Spans) == 1 || filterPath != nil && slices.Equal(t.Path, filterPath)
}

// offsetCounted reports whether the ordered stream would count the rows
// q's OFFSET skips rather than read them (countSkips), as far as the query
// and the scope tell: an ORDER BY of one key, an offset, rows of one per
// document, and a WHERE clause the walk answers whole, by itself or
// filtered by the one exact term the stream would filter by
// (streamFilter; the filtered stream then counts, if the planner chooses
// it). The TOP walk, which serves a window one page holds, reads every
// document before the window: such a window is the stream's.
func offsetCounted(c *containerRecord, q *ast.Query, params map[string]document.Value, s *itemScope) bool {
	if len(q.OrderBy) != 1 || q.Select.Distinct {
		return false
	}
	if _, offset, _ := gatewayplan.Window(q, params); offset == nil || *offset <= 0 {
		return false
	}
	path, ok := plan.DocPath(q, q.OrderBy[0].Expr)
	each := s.unheld(q)
	if !ok || !rowEach(each, path) {
		return false
	}
	t, ok := whereTerm(c, each, params, s)
	if !ok {
		return false
	}
	var filterPath []string
	if t != nil && len(streamFilter(c, q, s, []plan.Term{*t}, &plan.Ordered{Path: path})) > 0 {
		filterPath = t.Path
	}
	return answeredWhole(t, path, filterPath)
}

// filterPath is the path of the term the stream filters its entries by.
func (w *orderStream) filterPath() []string {
	terms := plan.Terms(w.preds)
	if len(w.o.Filter) == 0 || w.o.Filter[0] >= len(terms) {
		return nil
	}
	return terms[w.o.Filter[0]].Path
}

// rowEach reports whether every document that passes q's WHERE clause
// makes one row of q whatever it holds, through no evaluation that could
// fail: SELECT *, or a list of the FROM alias, its property paths and
// constants, or a VALUE of one of them, over the container without JOIN.
// A VALUE of a path makes no row of a document without it, so it counts
// only when it is the ordered path, which every document the walk names
// holds.
func rowEach(q *ast.Query, path []string) bool {
	if q.From == nil || q.From.Iterate || len(q.Joins) > 0 || q.Select.Distinct || len(q.GroupBy) > 0 {
		return false
	}
	if _, ok := q.From.Expr.(*ast.Ident); !ok {
		return false
	}
	plain := func(e ast.Expr) bool {
		switch x := e.(type) {
		case *ast.Ident:
			return x.Name == q.From.Alias
		case *ast.Literal:
			return true
		}
		_, ok := plan.DocPath(q, e)
		return ok
	}
	switch v := q.Select.Value; {
	case q.Select.Star:
		return true
	case v != nil:
		if p, ok := plan.DocPath(q, v); ok {
			return slices.Equal(p, path)
		}
		return plain(v)
	}
	return len(q.Select.Items) > 0 && !slices.ContainsFunc(q.Select.Items, func(it ast.SelectItem) bool { return !plain(it.Expr) })
}

// skipRows passes over the documents of the rows the window skips,
// counting their entries into the window (countSkips), and returns where
// the walk goes on: at the document of the window's first row, or at the
// start of its group. end reports that the window skips every document
// the walk names.
func (w *orderStream) skipRows() (at walkResume, end bool, err error) {
	it, err := w.walkIter(walkResume{})
	if err != nil || it == nil {
		return walkResume{}, err == nil, err
	}
	defer it.Close()
	// byItem: a group's entries come in the order of its rows.
	byItem := w.entriesInTieOrder()
	base := len(w.prefix)
	var value []byte
	var locs [][]byte // over a range or the container, the live items of value
	n, outside := 0, 0
	straddles, over := false, false
	// groupEnd ends value's group: its rows all skipped, or, when the
	// window's first row is among them, where the walk goes on.
	groupEnd := func() (walkResume, bool) {
		if !straddles {
			w.win.made += n
			return walkResume{}, false
		}
		if over || !exactValue(value) {
			return walkResume{value: value}, true
		}
		w.sortTies(locs)
		first := locs[w.win.from-w.win.made]
		w.win.made = w.win.from
		return walkResume{value: value, mode: modeItem, item: bytes.Clone(w.scanPos(first))}, true
	}
	var seek []byte
	step := func() bool {
		if k := seek; k != nil {
			seek = nil
			return it.SeekGE(k)
		}
		return it.Next()
	}
	for ok := it.First(); ok; ok = step() {
		w.st.entries++
		k := it.Key()
		loc, ok := entryLoc(k, base)
		if !ok {
			continue
		}
		v := k[base : len(k)-len(loc)]
		if value != nil && !bytes.Equal(v, value) {
			if at, ok := groupEnd(); ok {
				return at, false, nil
			}
			value = nil
		}
		if value == nil {
			value, n, outside, locs, over = bytes.Clone(v), 0, 0, locs[:0], false
		}
		if !w.s.holds(loc) {
			if outside++; outside >= skimOutside {
				seek, outside = w.pastOutside(value, loc), 0
			}
			continue
		}
		outside = 0
		if !w.admits(loc) || w.skip.expired[string(loc)] || w.skip.excludes(v) {
			continue
		}
		n++
		if !byItem {
			if len(locs) < maxSkipGroup {
				locs = append(locs, bytes.Clone(loc))
			} else {
				over = true
			}
		}
		if w.win.made+n <= w.win.from {
			continue
		}
		straddles = true
		if byItem {
			if !exactValue(value) {
				return walkResume{value: value}, false, nil
			}
			w.win.made += n - 1
			return walkResume{value: value, mode: modeItem, item: bytes.Clone(w.scanPos(loc))}, false, nil
		}
	}
	if err := it.Err(); err != nil {
		return walkResume{}, false, err
	}
	if value != nil {
		if at, ok := groupEnd(); ok {
			return at, false, nil
		}
	}
	return walkResume{}, true, nil
}

// skipUndefined passes over the documents without the property whose rows
// the window skips, counting their absence entries into the window, and
// returns the scan position of the first one left to read; end reports
// that the window skips them all.
func (w *orderStream) skipUndefined() (from []byte, end bool, err error) {
	err = eachAbsent(w.r, w.c, w.s, w.o.Path, w.desc, nil, w.st, func(pos, loc []byte) (bool, error) {
		if !w.admits(loc) || w.skip.expired[string(loc)] {
			return true, nil
		}
		if w.win.made == w.win.from {
			from = bytes.Clone(pos)
			return false, nil
		}
		w.win.made++
		return true, nil
	})
	return from, from == nil && err == nil, err
}

// keySource lists an access path's candidates in its order, each with its
// position and location, without reading their records: a scan's items by
// their keys (eachScanned), an index span's by its entries.
type keySource func(fn func(pos, loc []byte) (bool, error)) error

// countsByKeys reports whether a page of q through a scan (term nil) or
// the span of one term may count the rows its window skips by the
// candidates' keys (keySource, skipCounted): each candidate of the scope
// makes one row (rowEach), and the WHERE clause, besides the terms that
// pinned the scope, is none for a scan, and that exact term alone for a
// span (loneExactTerm: its entries name exactly the items that pass).
func countsByKeys(c *containerRecord, q *ast.Query, params map[string]document.Value, s *itemScope, term *plan.Term) bool {
	each := s.unheld(q)
	if !rowEach(each, nil) {
		return false
	}
	t, ok := whereTerm(c, each, params, s)
	if !ok || (t == nil) != (term == nil) {
		return false
	}
	return t == nil || slices.Equal(t.Path, term.Path)
}

// skipCounted passes over the candidates of keys whose rows the window
// skips, counting them into the window, less the items expired and not
// purged yet, in a scope whose keys are its items' (countableScope); it
// returns the position of the first candidate left to read: the page
// reads on from there. pos is nil when it skips nothing this way, and end
// reports that the window skips every candidate.
func skipCounted(r storage.Reader, c *containerRecord, keys keySource, s *itemScope, win *rowWindow, now time.Time, st *readStats) (pos []byte, end bool, err error) {
	if win == nil || win.made >= win.from {
		return nil, false, nil
	}
	expired, ok, err := countingScope(r, c, s, now, st)
	if err != nil || !ok {
		return nil, false, err
	}
	err = keys(func(p, loc []byte) (bool, error) {
		if expired[string(loc)] {
			return true, nil
		}
		if win.made == win.from {
			pos = bytes.Clone(p)
			return false, nil
		}
		win.made++
		return true, nil
	})
	return pos, pos == nil && err == nil, err
}

// mergeKeys lists the candidates of the merge m in its order
// (spanSource's), by their entries.
func mergeKeys(r storage.Reader, m posMerge) keySource {
	return func(fn func(pos, loc []byte) (bool, error)) error {
		m := m
		defer m.close()
		if err := m.open(r, nil); err != nil {
			return err
		}
		for h := m.first(); h != nil; h = m.first() {
			if more, err := fn(m.s.indexPos(h.loc), h.loc); err != nil || !more {
				return err
			}
			if err := m.pass(h.loc); err != nil {
				return err
			}
		}
		return nil
	}
}

// locKeys lists the collected candidates locs gives in their order
// (locSource's).
func locKeys(s *itemScope, locs func() ([][]byte, error)) keySource {
	return func(fn func(pos, loc []byte) (bool, error)) error {
		all, err := locs()
		if err != nil {
			return err
		}
		for _, loc := range all {
			if more, err := fn(s.indexPos(loc), loc); err != nil || !more {
				return err
			}
		}
		return nil
	}
}

// onceLocs returns locs, collecting at most once a page: the skip and the
// page's source read the same candidates.
func onceLocs(locs func() ([][]byte, error)) func() ([][]byte, error) {
	var all [][]byte
	var err error
	done := false
	return func() ([][]byte, error) {
		if !done {
			all, err = locs()
			done = true
		}
		return all, err
	}
}

// eachScanned calls fn with the scan position and the location of each of
// the scope's items, in scan order (scanSource), reading their keys alone:
// in a logical partition or under a prefix the items' own, over a range or
// the whole container their _rid-order entries. Each key counts as an
// index entry read. The keys fn is given are the iterator's: it clones
// what it keeps.
func eachScanned(r storage.Reader, c *containerRecord, s *itemScope, st *readStats, fn func(pos, loc []byte) (bool, error)) error {
	if s.kind == plan.ScopePartition || s.kind == plan.ScopePrefix {
		prefix := collPrefix(famItem, c.Rid)
		lo, hi := scopeBounds(prefix, s)
		return scanRangeDir(r, lo, hi, false, func(k, _ []byte) (bool, error) {
			st.entries++
			return fn(k[len(prefix):], k[len(prefix):])
		})
	}
	prefix := collPrefix(famByRid, c.Rid)
	lo, hi := s.ridSpan(c)
	return scanRangeDir(r, lo, hi, false, func(k, v []byte) (bool, error) {
		st.entries++
		if !s.holds(v) {
			return true, nil
		}
		return fn(k[len(prefix):], v)
	})
}
