package engine

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// A value scan (plan.ValueScan) answers a filter the index has no span
// for, CONTAINS(c.name, "x") or LOWER(c.city) = "oslo", from the entries
// of the one path it reads: each entry's value is tested by the filter's
// terms on that path (plan.ValueTerms), and only the records of the items
// whose value passes are read. Every item holding the path costs an entry,
// a short key, where a scan reads every record of the scope.
//
// The test runs on a stand-in document holding the value alone, which
// the terms cannot tell from the item's own: they read nothing else. An
// entry whose value the index does not hold exactly is kept for its
// record to decide: an array's or an object's bare marker, a number of
// magnitude 2^53 or more (the index keeps doubles). A number is tested as
// each value the index does not tell it from: 3 as written 3 and 3.0,
// 0 as 0, 0.0 and -0.0, which functions may tell apart (ToString, 1/x).
// The records read are filtered by the whole WHERE clause, as every
// candidate is.

// valueTest is a value filter ready to test index values.
type valueTest struct {
	f      plan.ValueFilter
	stream *eval.Streamer
	// doc is the stand-in document, whose value at the path is leaf's
	// one field's: it is built once and its value set for each test.
	doc  document.Value
	leaf []document.Field
	// last and the verdict after it remember the test of the value
	// before: entries of one value are adjacent.
	last                  []byte
	lastPasses, lastExact bool
	lastErr               error
}

// newValueTest returns the test of q's value filter, or false when q has
// none, or when a document without the path may pass it (the index names
// no such document): NOT IS_DEFINED(c.x), c.x ?? 1 = 1.
func newValueTest(q *ast.Query, params map[string]document.Value, now time.Time) (*valueTest, bool) {
	f, ok := plan.ValueTerms(q, params)
	if !ok {
		return nil, false
	}
	test := &ast.Query{Select: ast.Select{Value: &ast.Literal{Value: document.BoolValue(true)}}, From: q.From, Where: f.Where}
	prog, err := eval.Compile(test, params, eval.Options{Now: now})
	if err != nil {
		return nil, false
	}
	stream, err := prog.Streamer()
	if err != nil {
		return nil, false
	}
	vt := &valueTest{f: f, stream: stream, leaf: []document.Field{{Name: f.Path[len(f.Path)-1]}}}
	vt.doc = document.Obj(vt.leaf)
	for i := len(f.Path) - 2; i >= 0; i-- {
		vt.doc = document.Obj([]document.Field{{Name: f.Path[i], Value: vt.doc}})
	}
	if passes, err := vt.passes(document.Undef); passes || err != nil {
		return nil, false
	}
	return vt, true
}

// term is the index term of every entry of the filter's path.
func (vt *valueTest) term() plan.Term {
	all := plan.Span{Kind: plan.SpanKinds, Kinds: plan.KindRange{First: document.Null, Last: document.Object}}
	return plan.Term{Path: vt.f.Path, Spans: []plan.Span{all}}
}

// passes evaluates the filter on a document holding v at its path.
func (vt *valueTest) passes(v document.Value) (bool, error) {
	doc := document.Obj(nil)
	if v.IsDefined() {
		vt.leaf[0].Value, doc = v, vt.doc
	}
	rows, err := vt.stream.Rows(doc, eval.DocMeta{})
	return len(rows) > 0, err
}

// keeps reports whether an item whose entry holds the encoded value may
// pass the filter: its value passes, or the index does not hold it
// exactly, or the test fails (the record's evaluation says how).
func (vt *valueTest) keeps(value []byte) bool {
	keeps, exact, err := vt.test(value)
	return keeps || !exact || err != nil
}

// test reports whether an item whose entry holds the encoded value
// passes the filter, when the index holds the value exactly (exact);
// err is the evaluation's, which the item's own would meet too.
func (vt *valueTest) test(value []byte) (passes, exact bool, err error) {
	if vt.last != nil && bytes.Equal(value, vt.last) {
		return vt.lastPasses, vt.lastExact, vt.lastErr
	}
	vals, exact := indexScalars(value)
	for _, v := range vals {
		if passes, err = vt.passes(v); passes || err != nil {
			break
		}
	}
	vt.last, vt.lastPasses, vt.lastExact, vt.lastErr = append(vt.last[:0], value...), passes, exact, err
	return passes, exact, err
}

// indexScalars returns the values a document may hold where its entry
// holds the encoded value, when they are few: false for an array's or an
// object's marker and for a number of magnitude 2^53 or more.
func indexScalars(value []byte) ([]document.Value, bool) {
	switch value[0] {
	case tagNull:
		return []document.Value{document.NullValue()}, true
	case tagFalse, tagTrue:
		return []document.Value{document.BoolValue(value[0] == tagTrue)}, true
	case tagString:
		s, ok := indexString(value)
		return []document.Value{document.Str(s)}, ok
	case tagNumber:
		f, ok := indexNumber(value)
		switch {
		case !ok || math.Abs(f) >= 1<<53:
			return nil, false
		case f == 0:
			return []document.Value{document.Int(0), document.FloatExact(0), document.FloatExact(math.Copysign(0, -1))}, true
		case f == math.Trunc(f):
			return []document.Value{document.Int(int64(f)), document.FloatExact(f)}, true
		}
		return []document.Value{document.FloatExact(f)}, true
	}
	return nil, false
}

// valueLocs collects the locations of the items of scope s whose entry of
// vt's path may pass (valueTest.keeps), in the scope's order and each
// once. It stops, ok false, once over(read, kept) says the entries read
// and the locations kept so far cost more than the scan it would replace.
func valueLocs(r storage.Reader, c *containerRecord, vt *valueTest, s *itemScope, st *readStats, over func(read, kept int64) bool) (locs [][]byte, read int64, ok bool, err error) {
	spans, base := scopedSpans(c, vt.term(), s)
	ok = true
	err = scanSpans(r, spans, func(k, _ []byte) (bool, error) {
		if over != nil && over(read, int64(len(locs))) {
			ok = false
			return false, nil
		}
		read++
		if err := st.entry(); err != nil {
			return false, err
		}
		n := indexValueLen(k[base:])
		loc, isLoc := entryLoc(k, base)
		if !isLoc || !s.holds(loc) {
			return true, nil
		}
		if vt.keeps(k[base : base+n]) {
			locs = append(locs, bytes.Clone(loc))
		}
		return true, nil
	})
	if err != nil || !ok {
		return nil, read, false, err
	}
	slices.SortFunc(locs, s.byIndexPos)
	return slices.CompactFunc(locs, bytes.Equal), read, true, nil
}

// weighValues gives the planner the value scan of q's value filter in
// scope s (plan.Input.Values), for pages of rows rows (scanRows), reading
// its path's entries until a scan is the cheaper way (plan.ValueScanOver):
// the entries and the records of the items they keep cost more than the
// scan of the scope (size), or pass so often that a scan fills the page
// sooner. It returns the locations
// collected, for the page to read should the value scan be chosen; nil
// when none is weighed. The path's entries must be the scope's own, or
// the scope a range or the whole container: a logical partition's page
// would otherwise read every partition's entries of the path; a large
// partition asks for its own (absent.go).
//
// Beside terms (beside; in.Entries holds their counts), it reads no
// further than a value scan could still win against the paths their
// counts settle (plan.ValueWalkBound), and not at all where the path's
// entries cost more than those: the filter `c.kind = 'order' AND
// CONTAINS(c.note, 'late')` reads the notes' entries where most items are
// orders, and the orders' where few are. The records of the items whose
// value passes are read and filtered by the terms.
func (e *Engine) weighValues(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, now time.Time, s *itemScope, size plan.Scope, rows int64, beside bool, st *readStats, in *plan.Input) (*collection, error) {
	vt, ok := newValueTest(s.unheld(q), params, now)
	if !ok || !c.index.indexes(vt.f.Path) {
		return nil, nil
	}
	own := scopedTerm(c, vt.term(), s)
	if s.kind != plan.ScopeAll && s.kind != plan.ScopeRange && !own {
		if s.kind == plan.ScopePartition && size.Items >= tieWishEntries && !crossesArray(vt.f.Path) {
			e.wantAbsent(c, vt.f.Path, entryKinds{parts: true})
		}
		return nil, nil
	}
	over := func(read, kept int64) bool { return plan.ValueScanOver(size, rows, read, kept) }
	if beside {
		entries := size.ContainerItems
		if own || s.kind == plan.ScopeAll {
			entries = size.Items
		}
		most, ok := plan.ValueWalkBound(*in, entries)
		if !ok {
			return nil, nil
		}
		over = func(read, _ int64) bool { return read >= most }
	}
	locs, read, whole, err := valueLocs(r, c, vt, s, st, over)
	if err != nil || !whole {
		return nil, err
	}
	in.Values, in.ValueEntries, in.ValuePassing = &vt.f, read, int64(len(locs))
	return &collection{locs: locs, entries: int(read), cost: int(read)}, nil
}

// countByValues answers a COUNT whose WHERE clause is a value filter
// (plan.ValueTerms), alone or beside one exact term the index counts
// (loneExactTerm: c.status = 'open' AND CONTAINS(c.name, 'x')), from
// their entries in scope: the term's, whose items it keeps, then the
// path's: an entry whose value passes counts its item (one the term
// names, if any), one whose value the index does not hold exactly has
// its record read and the filter evaluated on it, and an expired item not
// purged yet is left out, as countByIndex leaves it. The entries must be
// the scope's own, or the scope a range or the whole container, as
// weighValues has them, and the filter of no other term the index reads
// (ARRAY_CONTAINS(c.tags, 1) reads the elements' entries, where the
// path's hold only the arrays' markers). Alone, it stops, reporting
// false, once the entries and the records read cost more than a scan of
// the scope of total items would (plan.ValueScanOver); beside a term, it
// reads the path's entries only where they cost less than the records of
// the term's items (plan.FilterPays), of which it keeps at most
// maxFilterLocs. It reports false for any other shape, which the
// evaluation counts.
func (e *Engine) countByValues(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, scope *itemScope, now time.Time, total int64, boxed bool, st *readStats, page *FeedPage) (bool, error) {
	if !c.Index.Ready || c.index.none {
		return false, nil
	}
	vt, ok := newValueTest(q, params, now)
	if !ok || !c.index.indexes(vt.f.Path) {
		return false, nil
	}
	var beside *plan.Term
	if vt.f.Whole {
		if len(plan.Predicates(q, params)) > 0 {
			return false, nil
		}
	} else {
		rest := *q
		rest.Where = vt.f.Rest
		if !plan.Exact(&rest, params) {
			return false, nil
		}
		t, ok := loneExactTerm(c, plan.Predicates(&rest, params), scope)
		if !ok {
			return false, nil
		}
		beside = &t
	}
	size, err := e.scopeSize(r, c, scope, total)
	if err != nil {
		return false, err
	}
	t := vt.term()
	if scope.kind != plan.ScopeAll && scope.kind != plan.ScopeRange && !scopedTerm(c, t, scope) {
		return false, nil
	}
	expired, ok, err := countingScope(r, c, scope, now, st)
	if err != nil || !ok {
		return false, err
	}
	from := st.entries
	var in locSet
	over := func(read, unsure int64) bool { return plan.ValueScanOver(size, 0, read, unsure) }
	if beside != nil {
		// The path's entries a count reads: the scope's items', or in a
		// range the container's.
		entries := size.Items
		if scope.kind == plan.ScopeRange {
			entries = size.ContainerItems
		}
		var termRead int64
		if in, termRead, err = besideLocs(r, c, *beside, scope, expired, entries, st); err != nil || in == nil {
			return false, err
		}
		over = func(read, _ int64) bool { return !plan.FilterPays(int64(len(in)), termRead+read) }
	}
	spans, base := scopedSpans(c, t, scope)
	var n, read int64
	var unsure [][]byte
	failed := false
	err = scanSpans(r, spans, func(k, _ []byte) (bool, error) {
		if over(read, int64(len(unsure))) {
			failed = true
			return false, nil
		}
		read++
		if err := st.entry(); err != nil {
			return false, err
		}
		loc, ok := entryLoc(k, base)
		if !ok {
			return false, fmt.Errorf("index entry %x: malformed", k)
		}
		if !scope.holds(loc) || expired[string(loc)] || in != nil && !in.has(loc) {
			return true, nil
		}
		passes, exact, err := vt.test(k[base : base+indexValueLen(k[base:])])
		switch {
		case err != nil:
			// The evaluation says what is wrong with the filter.
			failed = true
			return false, nil
		case !exact:
			unsure = append(unsure, bytes.Clone(loc))
		case passes:
			n++
		}
		return true, nil
	})
	if err != nil || failed {
		return false, err
	}
	for _, loc := range unsure {
		rec, ok, err := readItemAt(r, c, loc, st)
		if err != nil {
			return false, err
		}
		if !ok {
			continue
		}
		doc, err := document.Parse(rec.json)
		if err != nil {
			return false, err
		}
		if passes, err := vt.stream.Rows(doc, eval.DocMeta{}); err != nil {
			return false, queryError(err)
		} else if len(passes) > 0 {
			n++
		}
	}
	p := plan.ValueCountPlan(scope.kind, &vt.f, beside, int64(st.entries-from), int64(len(unsure)))
	page.Plan = &p
	page.Items = append(page.Items, partialRow(document.Int(n), boxed))
	return true, nil
}

// besideLocs returns the locations of the live items of scope that the
// exact term t names, for a count beside it (countByValues), and how many
// entries it read; nil when they are more than maxFilterLocs, or when
// their records cost less than their entries and the path's entries
// (at most pathEntries) together (plan.FilterPays).
func besideLocs(r storage.Reader, c *containerRecord, t plan.Term, scope *itemScope, expired map[string]bool, pathEntries int64, st *readStats) (set locSet, read int64, err error) {
	spans, base := scopedSpans(c, t, scope)
	set = locSet{}
	many := false
	err = scanSpans(r, spans, func(k, _ []byte) (bool, error) {
		if read++; read > maxFilterLocs {
			many = true
			return false, nil
		}
		loc, good := entryLoc(k, base)
		if !good {
			return false, fmt.Errorf("index entry %x: malformed", k)
		}
		if scope.holds(loc) && !expired[string(loc)] {
			set.add(loc)
		}
		return true, st.entry()
	})
	if err != nil || many || !plan.FilterPays(int64(len(set)), read+pathEntries) {
		return nil, read, err
	}
	return set, read, nil
}
