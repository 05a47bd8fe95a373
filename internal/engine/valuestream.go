package engine

import (
	"slices"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// An ORDER BY walk over a filter no index span answers (CONTAINS(c.name,
// "x") ORDER BY c._ts) reads the record of every walked entry, and the
// planner cannot tell how many of them the filter passes. A value filter
// (valuescan.go) tells it from its path's entries, so the walks (the
// stream's pages and a TOP's) use it two ways:
//
//   - On the walk's own path (CONTAINS(c.name, "x") ORDER BY c.name), the
//     value of each walked entry is tested before its record is read: the
//     entries of a value the filter fails are passed over, by a seek once
//     they are many.
//   - On another path, the walk reads as before until the records it read
//     that made no row cost what collecting the locations of the items
//     whose value passes does (every entry of the path in the scope, at
//     most its items), then collects them and reads only those records
//     from there on, and a stream's later pages too (a filtered stream
//     whose token names valuePlace). A stream filtered by a term's
//     items narrows them so, and hands on what is left. Had the filter
//     passed most items,
//     the walk would have ended before then, so a wide filter costs what
//     it did, and a narrow one at most twice what it does filtered.

// valuePlace is the place a filtered stream's token keeps for a filter by
// the value filter's items, past any term's and unionPlace's.
const valuePlace = 254

// valueUse is a walk's use of its query's value filter.
type valueUse struct {
	// onPath is the filter on the walk's own path; values the filter on
	// another, until the walk collects its items (set), and entries what
	// that reads.
	onPath, values *valueTest
	entries        int64
	// misses counts the records the walk read that made no row; carry
	// says a stream's page hands their count on (keepValues).
	misses int64
	carry  bool
	set    locSet
	// failed is the last value onPath failed, and failing how many of its
	// entries the walk passed over in a row.
	failed  []byte
	failing int
}

// newValueUse returns the use a walk of path makes of q's value filter in
// scope s of a container of total items; the filter on another path only
// when other allows, and when its entries are the scope's own or the
// scope is a range or the whole container. nil: none.
func newValueUse(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, now time.Time, s *itemScope, path []string, total int64, other bool) (*valueUse, error) {
	vt, ok := newValueTest(s.unheld(q), params, now)
	if !ok || !c.index.indexes(vt.f.Path) || systemPath(vt.f.Path) {
		return nil, nil
	}
	if slices.Equal(vt.f.Path, path) {
		return &valueUse{onPath: vt}, nil
	}
	if !other || s.kind != plan.ScopeAll && s.kind != plan.ScopeRange && !scopedTerm(c, vt.term(), s) {
		return nil, nil
	}
	// A range reads the container's entries of the path.
	entries := total
	if s.kind == plan.ScopePartition {
		var err error
		if entries, err = readCount(r, partitionCountKey(c.Rid, s.epk)); err != nil {
			return nil, err
		}
	}
	return &valueUse{values: vt, entries: entries}, nil
}

// skips reports whether the walk passes over an entry of the encoded
// value without reading its record: the filter on the walk's path fails
// it, and the index holds it exactly. seek is set once the value's
// entries passed over are many: where the walk seeks to go on past them.
func (u *valueUse) skips(prefix, value []byte, desc bool) (skip bool, seek []byte) {
	if u == nil || u.onPath == nil || u.onPath.keeps(value) {
		return false, nil
	}
	if !slices.Equal(value, u.failed) {
		u.failed, u.failing = append(u.failed[:0], value...), 0
	}
	if u.failing++; u.failing >= skimOutside {
		u.failing = 0
		return true, pastValue(prefix, value, desc)
	}
	return true, nil
}

// admits reports whether the walk may read the item at loc: the items
// the filter passes are not collected, or it is among them.
func (u *valueUse) admits(loc []byte) bool {
	return u == nil || u.set == nil || u.set.has(loc)
}

// missed counts a record the walk read that made no row, and collects the
// items the filter on another path passes (set) once such records have
// cost what collecting them does (plan.FilterPays). A collection of more
// than maxFilterLocs is given up, and not tried again.
func (u *valueUse) missed(r storage.Reader, c *containerRecord, s *itemScope, st *readStats) error {
	if u == nil {
		return nil
	}
	u.misses++
	if u.values == nil || !plan.FilterPays(u.misses, u.entries) {
		return nil
	}
	vt := u.values
	u.values = nil
	var err error
	u.set, err = passingSet(r, c, vt, s, st)
	return err
}

// passingSet collects the locations of the items of scope s whose value
// vt's filter may pass (valueLocs); nil when they are more than
// maxFilterLocs.
func passingSet(r storage.Reader, c *containerRecord, vt *valueTest, s *itemScope, st *readStats) (locSet, error) {
	locs, _, ok, err := valueLocs(r, c, vt, s, st, func(_, kept int64) bool { return kept > maxFilterLocs })
	if err != nil || !ok {
		return nil, err
	}
	return locSetOf(locs), nil
}

// keepValues hands on to the page after the stream's what its value
// filter on another path came to: the items the page collected
// (valueUse.set), under a token of the filtered stream by valuePlace, or,
// until it has, the records the pages so far read for nothing.
func (w *orderStream) keepValues(kept candidateKeeper) {
	u := w.vals
	if u == nil || u.set == nil && (u.values == nil || !u.carry) || w.page.Continuation == "" || kept.k == nil {
		return
	}
	next := w.next
	next.kept = newKeptID()
	k := &keptCandidates{spent: u.misses}
	if u.set != nil {
		next.access, next.terms, k = plan.FilteredStream, []int{valuePlace}, &keptCandidates{set: u.set}
	}
	kept.keep(next, k)
	w.page.Continuation = next.String()
}

// valueFilterLocs collects the items q's value filter passes, for a later
// page of a stream filtered by them that finds none kept; nil when there
// are more than maxFilterLocs, or the filter cannot be read so (the page
// then walks unfiltered).
func valueFilterLocs(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, now time.Time, s *itemScope, st *readStats) (locSet, error) {
	u, err := newValueUse(r, c, q, params, now, s, nil, 0, true)
	if err != nil || u == nil {
		return nil, err
	}
	return passingSet(r, c, u.values, s, st)
}

// within returns the locations of s that t holds too.
func (s locSet) within(t locSet) locSet {
	if len(t) < len(s) {
		s, t = t, s
	}
	out := make(locSet, len(s))
	for h := range s {
		if _, ok := t[h]; ok {
			out[h] = struct{}{}
		}
	}
	return out
}
