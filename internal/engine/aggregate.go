package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// aggregateByIndex answers SELECT VALUE MIN(c.path) FROM c, or MAX, with
// no WHERE clause (or the SDKs' per-range rewrite, [{"item":
// MAX(c.path)}]), over the whole container, a range or a logical
// partition, from the path's index entries: they sort as MIN and MAX
// compare (null, false, true, numbers, strings), so the answer is the item
// at the first or last entry of a scalar in the scope, skipping the items
// expired and not purged yet, and it reads that item's record for the
// value as written. It reads as many entries as lie outside the scope
// before it, and a record, where evaluating it read every record of the
// scope.
//
// With a WHERE clause of one term on the path itself (pathTerm), in the
// same scopes, the entries read are those of the term's span. With one
// equality on another property, over the whole container or a range,
// they are those of a composite index on the two paths under the
// equality's value (compositeExtreme).
//
// The rewrite the gateway plan gives clients that read a range's extreme
// with its count, {"max": MAX(c.path), "count": COUNT(c.path)}, is
// answered the same way, the count being that of the path's entries of
// live items in the scope: an item with a value there has one entry for
// it, and none holds an array or an object (below). It reads every entry
// of the path in the scope, a few bytes each, where evaluating it read
// every record. Once the path's absence entries are built (absent.go),
// which the query asks for, the count is the scope's from the counters
// (scopeCount) less the items without the path, and it reads those
// items' entries alone.
//
// SUM and AVG (and the rewrite of SUM, or of AVG, with the count) of the
// same shapes are answered from the values the entries hold, when they are
// integers the index keeps exactly (sumByIndex).
//
// It reports false, and the query's evaluation answers, when the index
// cannot tell the answer: an item of the scope holds an array or an object
// there (MIN and MAX are then undefined; the index keeps a marker entry
// for each), none holds a scalar (the query has no value), the value is a
// number of magnitude 2^53 or more (whose double others share), the path
// is a system property or crosses an array, or the index is being rebuilt.
// Of the system properties, _ts is answered once its entries, which the
// query asks for as a filter on it does, are built. In a logical partition
// it reads the path's partition entries (absent.go), the partition's own,
// once they are built (a partition of many items asks for them), and only
// when no other key shares the partition's EPK (partitionAlone), and with
// an equality on another path, its composite entries of each partition
// apart (partComposite) on the same terms. Under a hierarchical prefix,
// a MIN or MAX (alone or filtered on the path) reads the path's own
// entries, the whole container's, from an end to the prefix's first, up
// to a budget of about what evaluating the prefix costs (errPastBudget).
// Otherwise the evaluation scans the scope's own records.
func (e *Engine) aggregateByIndex(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, rangeID string, scope *itemScope, now time.Time, st *readStats, page *FeedPage) (bool, error) {
	if !c.Index.Ready || c.index.none {
		return false, nil
	}
	if call, boxed := aggregateShape(q, "COUNT"); call != nil {
		return e.countPathByIndex(r, c, q, call, boxed, rangeID, scope, now, st, page)
	}
	done, err := e.extremeByIndex(r, c, q, params, rangeID, scope, now, st, page)
	if errors.Is(err, errPastBudget) {
		return false, nil // the evaluation costs less
	}
	return done, err
}

// errPastBudget stops an aggregate read from the index whose entries have
// cost what evaluating its scope would (extremeByIndex, under a
// hierarchical prefix).
var errPastBudget = errors.New("engine: the index read past its budget")

// extremeByIndex is aggregateByIndex for MIN, MAX, SUM and AVG.
func (e *Engine) extremeByIndex(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, rangeID string, scope *itemScope, now time.Time, st *readStats, page *FeedPage) (bool, error) {
	call, obj, boxed := indexAggregateShape(q)
	if call == nil {
		return false, nil
	}
	path, ok := plan.DocPath(q, call.Args[0])
	ts := ok && slices.Equal(path, tsPath)
	if ts && !c.index.ts && c.index.tsListable(tsPath) {
		// _ts is indexed once a query on it asks (absent.go).
		e.wantAbsent(c, tsPath, entryKinds{own: true})
	}
	if !ok || crossesArray(path) || systemPath(path) && !ts || !c.index.indexes(path) {
		return false, nil
	}
	// The entries read are base + value (XORed with mask) + location, the
	// scalars' in [lo, hi); the scope's arrays and objects at the path are
	// marked by entries under marks.
	own := appendIndexPath(indexPrefix(c), path)
	var base, lo, hi, marks []byte
	var mask byte
	var err error
	merged := false  // the entries are read through newPartsIter
	var budget int64 // entries past which the index is not read; 0: none
	// pass, when not nil, holds the locations of the items a filter on
	// another path passes (filterPasses), which filterRead entries named.
	var pass map[string]bool
	var filterRead int64
	// A filter of one term on the path itself (MAX(c.ts) WHERE c.ts <
	// @t) bounds the entries read: the items that pass it are those with
	// an entry in its span, and no array or object passes it.
	onPath := pathTerm(q, params, path)
	switch {
	case onPath != nil && (scope.kind == plan.ScopeAll || scope.kind == plan.ScopeRange):
		base = own
	case scope.kind == plan.ScopePrefix && (onPath != nil || q.Where == nil) && (strings.EqualFold(call.Name, "SUM") || strings.EqualFold(call.Name, "AVG")):
		// A SUM or AVG reads every value: under a prefix of a few
		// partitions whose keys are all under it, from their partition
		// entries merged (prefixparts.go), which hold the prefix's alone.
		n, ok, err := prefixTotal(r, c, scope, st)
		if err != nil || !ok {
			return false, err
		}
		if merged, err = mergesParts(r, c, path, scope, st); err != nil || !merged {
			if err == nil && n >= tieWishEntries && !c.partsReady(path) && !storage.IsNetworked(r) {
				// A large prefix asks for them, as a large partition
				// does below.
				e.wantAbsent(c, path, entryKinds{parts: true})
			}
			return false, err
		}
		base = own
		if onPath == nil {
			marks = own
		}
	case scope.kind == plan.ScopePrefix && (onPath != nil || q.Where == nil):
		// Under a hierarchical prefix, MIN and MAX from the path's own
		// entries: the whole container's, among which the prefix's
		// items' lie, read from an end to the first of them. They are
		// read up to about what evaluating the prefix's items costs
		// (an entry costs a small part of a record); past that, the
		// evaluation answers. (A SUM or AVG, above, reads every value.)
		n, ok, err := prefixCount(r, c, scope, now, st)
		if err != nil || !ok {
			return false, err
		}
		base, budget = own, 4*n+64
		if onPath == nil {
			marks = own
		}
	case q.Where != nil && onPath == nil:
		if scope.kind != plan.ScopeAll && scope.kind != plan.ScopeRange && scope.kind != plan.ScopePartition || systemPath(path) {
			return false, nil
		}
		comp, value, ok := compositeExtreme(c, q, params, path)
		if !ok {
			// One exact term on another path: the path's entries are
			// read as without it (in a logical partition its partition
			// entries, as below), those of the items its entries name
			// alone (pass), up to about what reading those items'
			// records costs (groupEntriesPerRecord an item).
			t, exact := loneExactTerm(c, plan.Predicates(q, params), scope)
			if !exact || !plan.Exact(q, params) {
				return false, nil
			}
			base = own
			if scope.kind == plan.ScopePartition {
				if !c.partsReady(path) {
					return false, nil
				}
				if alone, err := partitionAlone(r, c, scope, st); err != nil || !alone {
					return false, err
				}
				base = partsPrefix(c, path, scope.epk)
			}
			if pass, filterRead, err = filterPasses(r, c, t, scope, nil, 1, st); err != nil || len(pass) == 0 {
				return false, err
			}
			marks, budget = base, groupEntriesPerRecord*int64(len(pass))+64
			if name := strings.ToUpper(call.Name); name == "SUM" || name == "AVG" {
				// A SUM reads every entry of the path: past the budget
				// unless the scope holds few more items than pass.
				n, ok, err := e.scopeCount(r, c, rangeID, scope, now, st)
				if err != nil || !ok || n > budget {
					return false, err
				}
			}
			break
		}
		if !ok {
			return false, nil
		}
		if scope.kind == plan.ScopePartition {
			// Within a logical partition, through the composite's
			// entries of each partition apart (absent.go), which a
			// partition of many items asks for as its evaluation reads
			// its records.
			if !partComposite(c, comp, scope) {
				if n, _, err := countPartition(r, c, scope, now, st); err != nil || n < tieWishEntries {
					return false, err
				}
				e.wantAbsent(c, comp.paths[0], entryKinds{parts: true, comps: []string{comp.sig()}})
				return false, nil
			}
			if alone, err := partitionAlone(r, c, scope, st); err != nil || !alone {
				return false, err
			}
		}
		if base, ok = appendCompositeValue(compositeStart(c, comp, scope), value, comp.desc[0]); !ok {
			return false, nil
		}
		lo, hi, marks = base, prefixEnd(base), own
		if comp.desc[1] {
			mask = 0xff
		}
	case scope.kind == plan.ScopeAll || scope.kind == plan.ScopeRange:
		base, marks = own, own
	case scope.kind == plan.ScopePartition:
		if !c.partsReady(path) {
			// A large partition's evaluation reads its many records on
			// every such query: ask for the path's partition entries, as
			// a range filter there does (choose.go).
			if n, _, err := countPartition(r, c, scope, now, st); err != nil || n < tieWishEntries {
				return false, err
			}
			e.wantAbsent(c, path, entryKinds{parts: true})
			return false, nil
		}
		if alone, err := partitionAlone(r, c, scope, st); err != nil || !alone {
			return false, err
		}
		base = partsPrefix(c, path, scope.epk)
		if onPath == nil {
			marks = base
		}
	default:
		return false, nil
	}
	switch {
	case onPath != nil:
		spans := valueSpans(base, *onPath, false, nil)
		if len(spans) != 1 {
			return false, nil
		}
		lo, hi = spans[0].lo, spans[0].hi
	case lo == nil:
		lo, hi = append(bytes.Clone(base), tagNull), append(bytes.Clone(base), tagArray)
	}
	expired, err := expiredIn(r, c, scope, now, st)
	if err != nil {
		return false, err
	}
	read := filterRead
	// each hands fn the value and location of each entry under base of
	// the scope's live items in [lo, hi) (that pass, when pass is set),
	// from the end when reverse, until fn returns false. A value's
	// entries are in the order of their locations, so it seeks past a
	// run of them outside the scope as an ordered walk does
	// (seekOutside): under a prefix, the largest value of a few is most
	// of the container's entries.
	each := func(base []byte, mask byte, lo, hi []byte, reverse bool, fn func(value, loc []byte) bool) error {
		var it storage.Iterator
		var err error
		if merged {
			it, err = newPartsIter(r, c, path, scope, base, lo, hi, reverse)
		} else {
			it, err = r.NewIter(storage.IterParams{Lower: lo, Upper: hi, Reverse: reverse})
		}
		if err != nil {
			return err
		}
		defer it.Close()
		outside := 0
		for ok := it.First(); ok; {
			read++
			if err := st.entry(); err != nil {
				return err
			}
			if budget > 0 && read > budget {
				return errPastBudget
			}
			k := it.Key()
			l, good := maskedEntryLoc(k, len(base), mask)
			if !good {
				return fmt.Errorf("index entry %x: malformed", k)
			}
			if !scope.holds(l) {
				if outside++; outside >= skimOutside {
					ok, outside = it.SeekGE(seekOutside(k[:len(k)-len(l)], nil, l, scope, reverse)), 0
					continue
				}
			} else if outside = 0; !expired[string(l)] && (pass == nil || pass[string(l)]) && !fn(k[len(base):len(k)-len(l)], l) {
				break
			}
			ok = it.Next()
		}
		return it.Err()
	}
	marked := false
	if marks != nil {
		if err := each(marks, 0, append(bytes.Clone(marks), tagArray), prefixEnd(marks), false, func(_, _ []byte) bool { marked = true; return false }); err != nil || marked {
			return false, err
		}
	}
	if name := strings.ToUpper(call.Name); name == "SUM" || name == "AVG" {
		return sumByIndex(call, obj, boxed, path, scope, each, base, mask, lo, hi, &read, page)
	}
	isMax := strings.EqualFold(call.Name, "MAX")
	var value, loc []byte
	var n int64
	keep := func(v, l []byte) {
		value, loc = append(value[:0], v...), append(loc[:0], l...)
		if mask != 0 {
			invert(value)
		}
	}
	// last: the largest value is the last entry (first when descending).
	last := isMax == (mask == 0)
	counted := false
	if obj != nil && q.Where == nil {
		var absentRead int64
		n, _, absentRead, counted, err = e.definedCount(r, c, path, rangeID, scope, now, expired, st)
		read += absentRead
	}
	switch {
	case err != nil:
	case obj == nil || counted:
		err = each(base, mask, lo, hi, last, func(v, l []byte) bool { keep(v, l); return false })
	default:
		err = each(base, mask, lo, hi, false, func(v, l []byte) bool {
			if n == 0 || last {
				keep(v, l)
			}
			n++
			return true
		})
	}
	if err != nil || value == nil || !exactValue(value) {
		return false, err
	}
	rec, ok, err := readItemAt(r, c, loc, st)
	if err != nil || !ok {
		return false, err
	}
	doc, err := document.Parse(rec.json)
	if err != nil {
		return false, err
	}
	v := doc
	for _, name := range path {
		v = v.Get(name)
	}
	if enc, ok := appendIndexValue(nil, v); !ok || !bytes.Equal(enc, value) {
		return false, nil // not what the entry says: let the evaluation answer
	}
	p := plan.IndexExtremePlan(scope.kind, aggregateTerm(path, call, obj), read)
	page.Plan = &p
	page.Items = append(page.Items, partialRow(withCount(v, obj, n), boxed))
	return true, nil
}

// definedCount counts the live items of the scope with a value at path
// (defined) and without one (without), once the path's absence entries
// are built (absent.go; it asks for them before): the scope's items from
// the counters (scopeCount), and the absence entries of the live items
// without the path, which it reads (read). ok is false when it cannot
// count.
func (e *Engine) definedCount(r storage.Reader, c *containerRecord, path []string, rangeID string, scope *itemScope, now time.Time, expired map[string]bool, st *readStats) (defined, without, read int64, ok bool, err error) {
	if !c.absentReady(path) {
		e.wantAbsent(c, path, entryKinds{})
		return 0, 0, 0, false, nil
	}
	total, ok, err := e.scopeCount(r, c, rangeID, scope, now, st)
	if err != nil || !ok {
		return 0, 0, 0, false, err
	}
	prefix := absentPrefix(indexPrefix(c), absentLocMarker, path)
	lo, hi := scopeBounds(prefix, scope)
	err = scanRange(r, lo, hi, func(k, _ []byte) (bool, error) {
		read++
		if l := k[len(prefix):]; scope.holds(l) && !expired[string(l)] {
			without++
		}
		return true, st.entry()
	})
	return total - without, without, read, err == nil, err
}

// countPathByIndex answers SELECT VALUE COUNT(c.path) FROM c (or the
// SDKs' per-range rewrite, [{"item": COUNT(c.path)}]), with no WHERE
// clause, over the whole container, a range or a logical partition that no
// other key shares its EPK with, from the counters less the items without
// the path (definedCount): an item counts when it has any value there,
// arrays and objects too. It reads the scope's absence entries of the
// path and no record, where evaluating it read every record.
func (e *Engine) countPathByIndex(r storage.Reader, c *containerRecord, q *ast.Query, call *ast.Call, boxed bool, rangeID string, scope *itemScope, now time.Time, st *readStats, page *FeedPage) (bool, error) {
	path, ok := plan.DocPath(q, call.Args[0])
	if !ok || q.Where != nil {
		return false, nil
	}
	return e.countDefined(r, c, path, true, boxed, rangeID, scope, now, st, page)
}

// countDefinedByIndex answers a count (countShape) whose WHERE clause is
// IS_DEFINED(c.path) or NOT IS_DEFINED(c.path), as countPathByIndex
// answers COUNT(c.path): the first counts what COUNT(c.path) counts, the
// second the rest of the scope's items.
func (e *Engine) countDefinedByIndex(r storage.Reader, c *containerRecord, q *ast.Query, boxed bool, rangeID string, scope *itemScope, now time.Time, st *readStats, page *FeedPage) (bool, error) {
	where, defined := plan.Truth(q.Where), true
	if u, ok := where.(*ast.Unary); ok && u.Op == ast.OpNot {
		where, defined = u.X, false
	}
	call, ok := where.(*ast.Call)
	if !ok || call.UDF || len(call.Args) != 1 || !strings.EqualFold(call.Name, "IS_DEFINED") {
		return false, nil
	}
	path, ok := plan.DocPath(q, call.Args[0])
	if !ok {
		return false, nil
	}
	return e.countDefined(r, c, path, defined, boxed, rangeID, scope, now, st, page)
}

// countDefined answers the count of the scope's live items with a value
// at path (defined) or without one, from definedCount.
func (e *Engine) countDefined(r storage.Reader, c *containerRecord, path []string, defined, boxed bool, rangeID string, scope *itemScope, now time.Time, st *readStats, page *FeedPage) (bool, error) {
	if len(path) == 0 || crossesArray(path) || systemPath(path) || !c.index.indexes(path) {
		return false, nil
	}
	// Under a hierarchical prefix the absence entries in location order
	// are the prefix's own span, and its count comes from its
	// partitions' (prefixCount), which says when it cannot tell.
	if scope.kind != plan.ScopePrefix {
		if ok, err := countableScope(r, c, scope, st); err != nil || !ok {
			return false, err
		}
	}
	expired, err := expiredIn(r, c, scope, now, st)
	if err != nil {
		return false, err
	}
	n, without, read, ok, err := e.definedCount(r, c, path, rangeID, scope, now, expired, st)
	if err != nil || !ok {
		return false, err
	}
	label := "IS_DEFINED(/" + strings.Join(path, "/") + ")"
	if !defined {
		n, label = without, "NOT "+label
	}
	p := plan.IndexCountPlan(scope.kind, []plan.Term{{Path: path, Label: label}}, nil, read)
	page.Plan = &p
	page.Items = append(page.Items, partialRow(document.Int(n), boxed))
	return true, nil
}

// indexAggregateShape returns the MIN, MAX, SUM or AVG call of q when q is one
// (aggregateShape), or when q is the object the gateway plan rewrites it
// into for clients that read a range's partial result with its count (MIN,
// MAX or SUM of x, then COUNT of x, under two names; AVG's rewrite is SUM
// with the count), returned as obj.
func indexAggregateShape(q *ast.Query) (call *ast.Call, obj *ast.ObjectLit, boxed bool) {
	v, boxed := aggregateValue(q)
	extreme := func(v ast.Expr, names ...string) *ast.Call {
		for _, name := range names {
			if call := aggregateCall(v, name); call != nil {
				return call
			}
		}
		return nil
	}
	if o, ok := v.(*ast.ObjectLit); ok {
		if len(o.Fields) != 2 || o.Fields[0].Name == o.Fields[1].Name {
			return nil, nil, false
		}
		call, n := extreme(o.Fields[0].Value, "MIN", "MAX", "SUM"), aggregateCall(o.Fields[1].Value, "COUNT")
		if call == nil || n == nil || !ast.Equal(call.Args[0], n.Args[0]) {
			return nil, nil, false
		}
		return call, o, boxed
	}
	if call = extreme(v, "MIN", "MAX", "SUM", "AVG"); call == nil {
		return nil, nil, false
	}
	return call, nil, boxed
}

// pathTerm returns the term of q's WHERE clause when it is one exact term
// on path (an equality, a comparison or two, a STARTSWITH) of one span,
// and nil otherwise.
func pathTerm(q *ast.Query, params map[string]document.Value, path []string) *plan.Term {
	if q.Where == nil || !plan.Exact(q, params) {
		return nil
	}
	preds := plan.Predicates(q, params)
	if !oneTerm(preds) {
		return nil
	}
	terms := plan.Terms(preds)
	if len(terms) != 1 || len(terms[0].Spans) != 1 || !slices.Equal(terms[0].Path, path) || !exactSpans(terms[0]) {
		return nil
	}
	return &terms[0]
}

// compositeExtreme returns a composite index on the path of q's WHERE
// clause and then on path, and the value the clause asks for, when q's
// WHERE clause is one equality with an exact scalar on a property
// (c.type = 'order') and the policy has such a composite of two paths.
// Under the value, each item with that value and a scalar at path has one
// entry, by its value at path; an item with an array or an object or
// nothing there has none (a composite of more paths would leave out the
// items without a later path too).
func compositeExtreme(c *containerRecord, q *ast.Query, params map[string]document.Value, path []string) (*compositeIndex, document.Value, bool) {
	if !plan.Exact(q, params) {
		return nil, document.Value{}, false
	}
	// One predicate (oneTerm refuses a type check such as IS_DEFINED,
	// which the composite's entries do not answer for another path).
	preds := plan.Predicates(q, params)
	if !oneTerm(preds) {
		return nil, document.Value{}, false
	}
	terms := plan.Terms(preds)
	if len(terms) != 1 || len(terms[0].Spans) != 1 {
		return nil, document.Value{}, false
	}
	t, sp := terms[0], terms[0].Spans[0]
	if sp.Kind != plan.SpanValue || !exactScalar(sp.Lo) || crossesArray(t.Path) || systemPath(t.Path) {
		return nil, document.Value{}, false
	}
	for i := range c.index.composites {
		ci := &c.index.composites[i]
		if ci.kept && len(ci.paths) == 2 && slices.Equal(ci.paths[0], t.Path) && slices.Equal(ci.paths[1], path) {
			return ci, sp.Lo, true
		}
	}
	return nil, document.Value{}, false
}

// sumByIndex answers a SUM or AVG of path (or the rewrite with its count)
// from the values of its entries in the scope, which each hands on (as in
// aggregateByIndex: base + value XORed with mask + location, in [lo, hi)),
// reading no record, when every value is an integer and their magnitudes
// add up to less than 2^53: the evaluation then sums them exactly in any
// order (eval's aggState sums integers as int64, and a float sum of such
// integers is exact too), and divides the same sum for AVG. Any other
// value (a fraction, whose sum depends on the order of the additions, a
// number the index keeps as a double, a value of another type, for which
// SUM is undefined) leaves the query to the evaluation, as does an AVG of
// no value. The caller has looked for arrays and objects.
func sumByIndex(call *ast.Call, obj *ast.ObjectLit, boxed bool, path []string, scope *itemScope,
	each func(base []byte, mask byte, lo, hi []byte, reverse bool, fn func(value, loc []byte) bool) error,
	base []byte, mask byte, lo, hi []byte, read *int64, page *FeedPage) (bool, error) {
	var sum, n int64
	var magnitude float64
	exact := true
	var buf []byte
	err := each(base, mask, lo, hi, false, func(v, _ []byte) bool {
		if mask != 0 {
			buf = append(buf[:0], v...)
			invert(buf)
			v = buf
		}
		f, ok := indexNumber(v)
		if magnitude += math.Abs(f); !ok || f != math.Trunc(f) || magnitude >= 1<<53 {
			exact = false
			return false
		}
		sum += int64(f)
		n++
		return true
	})
	if err != nil || !exact {
		return false, err
	}
	result := document.Int(sum)
	if strings.EqualFold(call.Name, "AVG") {
		if n == 0 {
			return false, nil
		}
		result = document.Float(float64(sum) / float64(n))
	}
	p := plan.IndexSumPlan(scope.kind, aggregateTerm(path, call, obj), *read)
	page.Plan = &p
	page.Items = append(page.Items, partialRow(withCount(result, obj, n), boxed))
	return true, nil
}

// withCount is an aggregate's value v, or the rewrite's object obj of it
// and the count n.
func withCount(v document.Value, obj *ast.ObjectLit, n int64) document.Value {
	if obj == nil {
		return v
	}
	return document.Obj([]document.Field{{Name: obj.Fields[0].Name, Value: v}, {Name: obj.Fields[1].Name, Value: document.Int(n)}})
}

// aggregateTerm names the path and the aggregate in a plan: "/n MAX", or
// "/n MAX, COUNT" for the rewrite with the count.
func aggregateTerm(path []string, call *ast.Call, obj *ast.ObjectLit) plan.Term {
	label := "/" + strings.Join(path, "/") + " " + strings.ToUpper(call.Name)
	if obj != nil {
		label += ", COUNT"
	}
	return plan.Term{Path: path, Label: label}
}
