package engine

import (
	"bytes"
	"slices"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// windowEnd returns the number of rows before the end of q's window: its
// TOP, or its OFFSET and LIMIT together; ok is false without one.
func windowEnd(q *ast.Query, params map[string]document.Value) (end int, ok bool) {
	top, offset, limit := gatewayplan.Window(q, params)
	switch {
	case top != nil:
		return *top, true
	case offset != nil && limit != nil:
		return *offset + *limit, true
	}
	return 0, false
}

// orderedShape recognizes a query of the shape
//
//	SELECT … FROM c [WHERE …] ORDER BY c.path [ASC|DESC] with TOP n or OFFSET/LIMIT
//
// which a walk of the path's index in the query's order can answer,
// stopping as soon as it has as many documents passing the WHERE clause
// as the query can return, so the cost follows the rows returned, not the
// container. It reports false when the query has another shape.
//
// Documents without the property are not in the index. Ascending, they
// sort first, so the walk is used ascending only when the WHERE clause
// filters on the ORDER BY path itself (which makes it defined) or the
// path's absence entries (absent.go) find them.
func orderedShape(c *containerRecord, q *ast.Query, params map[string]document.Value, terms []plan.Term) (*plan.Ordered, bool) {
	if !c.Index.Ready || c.index.none || len(q.OrderBy) != 1 || len(q.GroupBy) > 0 || q.Select.Distinct || gatewayplan.HasAggregates(q) || len(q.Joins) > 0 {
		return nil, false
	}
	path, ok := plan.DocPath(q, q.OrderBy[0].Expr)
	if !ok || !c.index.indexes(path) || crossesArray(path) {
		return nil, false
	}
	want, ok := windowEnd(q, params)
	if !ok {
		return nil, false
	}
	// A term on the ORDER BY path makes the property defined in every row,
	// so every candidate is in the index.
	undefined := !filtersOn(q, params, path) && !everyItemHas(path)
	absent := undefined && c.absentReady(path)
	if !q.OrderBy[0].Desc && undefined && !absent {
		return nil, false
	}
	o := &plan.Ordered{Path: path, Want: int64(want), Term: -1, Undefined: undefined, Absent: absent}
	for i, t := range terms {
		if slices.Equal(t.Path, path) {
			o.Term = i
		}
	}
	return o, true
}

// orderedItems walks the index of the ORDER BY path o.Path in the query's
// order and returns the documents that pass the WHERE clause, until it has
// o.Want of them. The documents without the property come from the
// path's absence entries when o.Absent: first ascending, after the walk
// descending. Without them it reports false when too few documents have
// the property: the rest of the answer is documents without it, which
// only a scan finds.
func orderedItems(r storage.Reader, c *containerRecord, total int64, prog *eval.Program, params map[string]document.Value, o *plan.Ordered, s *itemScope, now time.Time, st *readStats, pace *walkPace) ([]foundItem, bool, error) {
	q := prog.Query()
	filter, err := rowFilter(prog)
	if err != nil {
		return nil, false, queryError(err)
	}
	// The walk's documents need no filter when each makes a row whatever
	// it holds (rowEach): only their being live and in the scope.
	walkFilter := filter
	if each := s.unheld(q); each.Where == nil && rowEach(each, o.Path) {
		walkFilter = nil
	}
	desc := q.OrderBy[0].Desc
	// A value filter on the path passes no document without it.
	vals, err := newValueUse(r, c, q, params, now, s, o.Path, total, true)
	if err != nil {
		return nil, false, err
	}
	onPath := vals != nil && vals.onPath != nil
	defined := filtersOn(q, params, o.Path) || onPath
	prefix := orderPrefix(c, o.Path, s)
	preds := plan.Predicates(q, params)
	lo, hi := pathBounds(prefix, preds, o.Path)
	// Within an IN list's hull, the values between the list's are
	// passed over.
	inValues := inListValues(preds, o.Path)
	// Under a hierarchical prefix of a few partitions, their partition
	// entries merged (prefixparts.go); elsewhere the path's entries, a
	// run of those outside the scope sought past (seekOutside).
	merged, err := mergesParts(r, c, o.Path, s, st)
	if err != nil {
		return nil, false, err
	}
	var it storage.Iterator
	if merged {
		it, err = newPartsIter(r, c, o.Path, s, prefix, lo, hi, desc)
	} else {
		it, err = r.NewIter(storage.IterParams{Lower: lo, Upper: hi, Reverse: desc})
	}
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	var found []foundItem
	// scalars counts the documents taken toward o.Want: those met through
	// scalar entries, after (ascending) those without the property.
	scalars := int64(0)
	if o.Absent && !desc && !onPath {
		if found, err = absentItems(r, c, s, o, filter, now, st, false, o.Want); err != nil {
			return nil, false, err
		}
		if scalars = int64(len(found)); scalars >= o.Want {
			return found, true, nil
		}
	}
	// boundary is the value of the want-th scalar when the index keeps
	// values the evaluator tells apart under it (integers of magnitude
	// 2^53 or more share a double): the walk then reads that value's
	// entries to the end, since the evaluator may order any of them
	// first.
	var boundary []byte
	// The candidates' records are read a run at a time (entryRun), as
	// many as the walk still wants scalars.
	var run entryRun
	judge := func(k, loc []byte, rec *itemRecord) error {
		if pace != nil {
			if err := pace.admit(rec.detach); err != nil {
				return err
			}
		}
		if ok, err := passes(c, s, walkFilter, now, loc, rec); !ok || err != nil {
			if err == nil {
				err = vals.missed(r, c, s, st)
			}
			return err
		}
		if pace != nil {
			pace.hits++
		}
		rec.detach()
		found = append(found, foundItem{loc: loc, rec: *rec})
		// Arrays and objects have bare markers, unordered among
		// themselves: take every one of them, then want scalars.
		if k[len(prefix)] < tagArray {
			scalars++
			if value := k[len(prefix) : len(k)-len(loc)]; scalars == o.Want && !exactValue(value) {
				boundary = bytes.Clone(value)
			}
		}
		return nil
	}
	var seek []byte // where the next step seeks to, past entries outside the scope
	step := func() bool {
		if k := seek; k != nil {
			seek = nil
			return it.SeekGE(k)
		}
		return it.Next()
	}
	outside := 0 // the entries outside the scope read in a row
	for ok := it.First(); ok; ok = step() {
		k := it.Key()
		loc, ok := entryLoc(k, len(prefix))
		var value []byte
		if ok {
			value = k[len(prefix) : len(k)-len(loc)]
		}
		if scalars >= o.Want && (boundary == nil || !bytes.Equal(value, boundary)) {
			break
		}
		st.entries++
		if !ok {
			continue
		}
		if outsideList(inValues, value) {
			seek = pastValue(prefix, value, desc)
			continue
		}
		if skip, past := vals.skips(prefix, value, desc); skip {
			seek = past
			continue
		}
		if !s.holds(loc) {
			if outside++; outside >= skimOutside {
				seek, outside = seekOutside(prefix, value, loc, s, desc), 0
			}
			continue
		}
		outside = 0
		if !vals.admits(loc) {
			continue
		}
		size := max(o.Want-scalars, 1)
		if pace != nil {
			size = min(size, int64(pace.left()))
		}
		if run.add(k, loc) < size {
			continue
		}
		if err := run.read(r, c, st, judge); err != nil {
			return nil, false, err
		}
	}
	if err := it.Err(); err != nil {
		return nil, false, err
	}
	if err := run.read(r, c, st, judge); err != nil {
		return nil, false, err
	}
	if scalars < o.Want && !defined {
		if !o.Absent {
			return nil, false, nil
		}
		if desc {
			last, err := absentItems(r, c, s, o, filter, now, st, true, o.Want-scalars)
			if err != nil {
				return nil, false, err
			}
			found = append(found, last...)
		}
	}
	return found, true, nil
}

// passes reports whether the item at loc, read by an index walk, is live
// at now, in the scope and passes filter (whether it makes a row,
// rowFilter; nil: every document does). A document the filter fails on
// does not pass.
func passes(c *containerRecord, s *itemScope, filter *eval.Program, now time.Time, loc []byte, rec *itemRecord) (bool, error) {
	if c.expired(rec, now) || !s.keeps(rec) {
		return false, nil
	}
	if filter == nil {
		return true, nil
	}
	doc, err := document.Parse(rec.json)
	if err != nil {
		return false, err
	}
	rows, err := filter.Rows(doc, docMeta(loc))
	return err == nil && len(rows) > 0, nil
}

// absentItems reads, through the absence entries of o.Path, up to want
// documents of the scope without the property that pass the WHERE
// clause, in scan order (backwards with reverse: the evaluator orders
// ties backwards for a descending key).
func absentItems(r storage.Reader, c *containerRecord, s *itemScope, o *plan.Ordered, filter *eval.Program, now time.Time, st *readStats, reverse bool, want int64) ([]foundItem, error) {
	var found []foundItem
	err := absentSource(r, c, s, o.Path, reverse, st)(nil, func(_, loc []byte, rec *itemRecord) (bool, error) {
		if c.expired(rec, now) || !s.keeps(rec) {
			return true, nil
		}
		doc, err := document.Parse(rec.json)
		if err != nil {
			return false, err
		}
		if doc.At(o.Path).IsDefined() {
			return true, nil
		}
		if rows, err := filter.Rows(doc, docMeta(loc)); err != nil || len(rows) == 0 {
			return true, nil
		}
		rec.detach()
		found = append(found, foundItem{loc: loc, rec: *rec})
		return int64(len(found)) < want, nil
	})
	return found, err
}

// foundItem is an item an access path has read already.
type foundItem struct {
	loc []byte
	rec itemRecord
}

// pathBounds narrows the walk of path's entries (all under prefix) to what
// the WHERE clause's terms on that path allow, so a filtered ORDER BY reads
// only entries that can match.
func pathBounds(prefix []byte, preds []plan.Predicate, path []string) ([]byte, []byte) {
	lo, hi := prefix, prefixEnd(prefix)
	narrow := func(l, h []byte) {
		if l != nil && bytes.Compare(l, lo) > 0 {
			lo = l
		}
		if h != nil && bytes.Compare(h, hi) < 0 {
			hi = h
		}
	}
	for i := range preds {
		p := &preds[i]
		if !slices.Equal(p.Path, path) {
			continue
		}
		switch p.Op {
		case plan.Eq:
			if k, ok := appendIndexValue(bytes.Clone(prefix), p.Value); ok {
				narrow(k, prefixEnd(k))
			}
		case plan.Gt, plan.Ge:
			if k := p.Value.Kind(); k == document.Number || k == document.String {
				narrow(rangeSpan(prefix, p, nil, k))
			}
		case plan.Lt, plan.Le:
			if k := p.Value.Kind(); k == document.Number || k == document.String {
				narrow(rangeSpan(prefix, nil, p, k))
			}
		case plan.Prefix:
			k := append(bytes.Clone(prefix), tagString)
			for _, b := range []byte(p.Value.Str()) {
				if b == 0 {
					k = append(k, 0, 0xff)
				} else {
					k = append(k, b)
				}
			}
			narrow(k, prefixEnd(k))
		case plan.Ne:
			// Another boolean than one: the other boolean's entries.
			// Another number or string lies on either side of it.
			if p.Value.Kind() == document.Bool {
				k, _ := appendIndexValue(bytes.Clone(prefix), document.BoolValue(!p.Value.Bool()))
				narrow(k, prefixEnd(k))
			}
		case plan.OfKinds:
			lo := append(bytes.Clone(prefix), kindTags[p.Kinds.First][0])
			narrow(lo, prefixEnd(append(bytes.Clone(prefix), kindTags[p.Kinds.Last][1])))
		case plan.In:
			// The hull of the values' entries, when every value is a
			// scalar (no other value can be equal to one).
			var first, last []byte
			for _, v := range p.Values {
				k, ok := appendIndexValue(bytes.Clone(prefix), v)
				if !ok {
					first = nil
					break
				}
				if first == nil || bytes.Compare(k, first) < 0 {
					first = k
				}
				if last == nil || bytes.Compare(k, last) > 0 {
					last = k
				}
			}
			if first != nil {
				narrow(first, prefixEnd(last))
			}
		}
	}
	if bytes.Compare(lo, hi) >= 0 {
		return lo, lo // nothing can match
	}
	return lo, hi
}

// filtersOn reports whether the WHERE clause has a term on path.
func filtersOn(q *ast.Query, params map[string]document.Value, path []string) bool {
	for _, p := range plan.Predicates(q, params) {
		if slices.Equal(p.Path, path) {
			return true
		}
	}
	return false
}

// rowFilter compiles "SELECT * FROM … WHERE …" of prog's query, judged
// like the query it comes from: whether a document makes a row of it.
// For SELECT VALUE e that is also e being defined: a document whose value
// is undefined makes none, and a walk that counted it toward the rows it
// wants would stop short of them.
func rowFilter(prog *eval.Program) (*eval.Program, error) {
	f := *prog.Query()
	if v := f.Select.Value; v != nil {
		defined := &ast.Call{Name: "IS_DEFINED", Args: []ast.Expr{v}}
		if f.Where == nil {
			f.Where = defined
		} else {
			f.Where = &ast.Binary{Op: ast.OpAnd, L: f.Where, R: defined}
		}
	}
	f.Select = ast.Select{Star: true}
	f.OrderBy, f.GroupBy, f.Offset, f.Limit = nil, nil, nil, nil
	return prog.Derive(&f)
}
