package engine

import (
	"bytes"
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
	// last and lastKeeps remember the verdict on the value before:
	// entries of one value are adjacent.
	last      []byte
	lastKeeps bool
}

// newValueTest returns the test of q's value filter, or false when q has
// none, or when a document without the path may pass it (the index names
// no such document): NOT IS_DEFINED(c.x), c.x ?? 1 = 1.
func newValueTest(q *ast.Query, params map[string]document.Value, now time.Time) (*valueTest, bool) {
	f, ok := plan.ValueTerms(q)
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
	if vt.last != nil && bytes.Equal(value, vt.last) {
		return vt.lastKeeps
	}
	keeps := true
	if vals, ok := indexScalars(value); ok {
		keeps = false
		for _, v := range vals {
			if passes, err := vt.passes(v); passes || err != nil {
				keeps = true
				break
			}
		}
	}
	vt.last, vt.lastKeeps = append(vt.last[:0], value...), keeps
	return keeps
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
func (e *Engine) weighValues(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, now time.Time, s *itemScope, size plan.Scope, rows int64, st *readStats, in *plan.Input) (*collection, error) {
	vt, ok := newValueTest(s.unheld(q), params, now)
	if !ok || !c.index.indexes(vt.f.Path) {
		return nil, nil
	}
	if s.kind != plan.ScopeAll && s.kind != plan.ScopeRange && !scopedTerm(c, vt.term(), s) {
		if s.kind == plan.ScopePartition && size.Items >= tieWishEntries && !crossesArray(vt.f.Path) {
			e.wantAbsent(c, vt.f.Path, entryKinds{parts: true})
		}
		return nil, nil
	}
	locs, read, whole, err := valueLocs(r, c, vt, s, st, func(read, kept int64) bool {
		return plan.ValueScanOver(size, rows, read, kept)
	})
	if err != nil || !whole {
		return nil, err
	}
	in.Values, in.ValueEntries, in.ValuePassing = &vt.f, read, int64(len(locs))
	return &collection{locs: locs, entries: int(read), cost: int(read)}, nil
}
