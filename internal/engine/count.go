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
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// Counting a container or one of its ranges. SELECT VALUE COUNT(1) FROM c
// with nothing else counts the documents of its scope, and so does the
// query the SDKs send each range for it across partitions (the gateway
// plan's rewrite, SELECT VALUE [{"item": COUNT(1)}] FROM c). The usage
// counters (usage.go) hold that number already, less the items expired
// by now and not purged yet, which ReadContainer takes away too: the
// count then costs the counters and the purge backlog, where evaluating
// it read every item of the scope (10⁵ records and 6,003 RU at 10⁵
// items).

// countShape reports whether q counts the documents of its scope that
// pass its WHERE clause, if it has one, and whether its value is the
// rewrite's [{"item": count}] rather than the count.
func countShape(q *ast.Query) (ok, boxed bool) {
	call, boxed := aggregateShape(q, "COUNT")
	if call == nil {
		return false, false
	}
	lit, ok := call.Args[0].(*ast.Literal)
	return ok && lit.Value.IsDefined(), boxed
}

// aggregateShape returns the call when q is SELECT VALUE name(x) over the
// documents of its scope (one argument; no JOIN, iteration, GROUP BY,
// ORDER BY, DISTINCT, TOP or OFFSET), or the rewrite the SDKs send each
// range for it, SELECT VALUE [{"item": name(x)}] (boxed), and nil
// otherwise.
func aggregateShape(q *ast.Query, name string) (call *ast.Call, boxed bool) {
	v, boxed := aggregateValue(q)
	if call = aggregateCall(v, name); call == nil {
		return nil, false
	}
	return call, boxed
}

// aggregateValue returns the value of SELECT VALUE v over the documents
// of q's scope (no JOIN, iteration, GROUP BY, ORDER BY, DISTINCT, TOP or
// OFFSET), unboxed from the SDKs' per-range [{"item": v}] (boxed), and nil
// for any other query.
func aggregateValue(q *ast.Query) (v ast.Expr, boxed bool) {
	if q.From == nil || q.From.Iterate || len(q.Joins) > 0 || len(q.GroupBy) > 0 ||
		len(q.OrderBy) > 0 || q.Select.Distinct || q.Select.Top != nil || q.Offset != nil || q.Limit != nil {
		return nil, false
	}
	if _, ok := q.From.Expr.(*ast.Ident); !ok {
		return nil, false // FROM c.children ch reads a property of each document
	}
	v = q.Select.Value
	if arr, ok := v.(*ast.ArrayLit); ok && len(arr.Elems) == 1 {
		if obj, ok := arr.Elems[0].(*ast.ObjectLit); ok && len(obj.Fields) == 1 && obj.Fields[0].Name == "item" {
			v, boxed = obj.Fields[0].Value, true
		}
	}
	return v, boxed
}

// aggregateCall returns v when it is a call of the aggregate name with one
// argument, and nil otherwise.
func aggregateCall(v ast.Expr, name string) *ast.Call {
	call, ok := v.(*ast.Call)
	if !ok || call.UDF || !strings.EqualFold(call.Name, name) || len(call.Args) != 1 {
		return nil
	}
	return call
}

// partialRow is a count's or an aggregate's row: v, or the SDKs'
// rewrite's [{"item": v}].
func partialRow(v document.Value, boxed bool) []byte {
	if boxed {
		v = document.Arr([]document.Value{document.Obj([]document.Field{{Name: "item", Value: v}})})
	}
	return v.JSON()
}

// countFromCounters answers a count (countShape) over the whole container,
// over one of its ranges when the container keeps a sequence per range,
// whose totals are the range's, or over one logical partition
// (countPartition); it reports false for any other scope, which the
// query's evaluation then counts.
func (e *Engine) countFromCounters(r storage.Reader, c *containerRecord, rangeID string, scope *itemScope, now time.Time, boxed bool, st *readStats, page *FeedPage) (bool, error) {
	var n int64
	switch scope.kind {
	case plan.ScopePartition:
		var p plan.Plan
		var err error
		if n, p, err = countPartition(r, c, scope, now, st); err != nil {
			return false, err
		}
		page.Plan = &p
	default:
		var ok bool
		var err error
		if n, ok, err = e.scopeCount(r, c, rangeID, scope, now, st); err != nil || !ok {
			return false, err
		}
	}
	if page.Plan == nil {
		p := plan.CountersPlan(scope.kind)
		page.Plan = &p
	}
	page.Items = append(page.Items, partialRow(document.Int(n), boxed))
	return true, nil
}

// scopeCount returns the number of live items in the whole container, in
// range rangeID, in a logical partition or under a hierarchical prefix
// (scope), from the counters less the purge backlog (in a partition,
// countPartition's; under a prefix, prefixCount's); it reports false for
// a range of a container that keeps no sequence per range, whose counters
// are the container's, and for a prefix whose counts it cannot tell.
func (e *Engine) scopeCount(r storage.Reader, c *containerRecord, rangeID string, scope *itemScope, now time.Time, st *readStats) (int64, bool, error) {
	switch scope.kind {
	case plan.ScopeAll:
		u, err := e.usage(r, c, now, st)
		if err != nil {
			return 0, false, err
		}
		return u.DocumentsCount, true, nil
	case plan.ScopeRange:
		if !c.SeqPerRange {
			return 0, false, nil
		}
		seq := -1
		for i, rg := range splitRanges(c.Ranges, c.RangesV1) {
			if rg.ID == rangeID {
				seq = i
			}
		}
		if seq < 0 {
			return 0, false, nil
		}
		state, err := readState(r, c.Rid, seq)
		if err != nil {
			return 0, false, err
		}
		st.entries++
		n := state.items
		err = eachExpired(r, c, now, func(_ int64, loc []byte) {
			st.entries++
			if scope.holds(loc) {
				n--
			}
		})
		return max(n, 0), err == nil, err
	case plan.ScopePartition:
		n, _, err := countPartition(r, c, scope, now, st)
		return n, err == nil, err
	case plan.ScopePrefix:
		return prefixCount(r, c, scope, now, st)
	}
	return 0, false, nil
}

// prefixCount returns the number of live items under a hierarchical prefix
// from the counts of its logical partitions, whose EPKs begin with the
// prefix's so that their counts lie in one span, less the purge backlog:
// as many reads as the prefix has partitions, where counting its items
// read each one. It reports false when a count may hold items of a key
// not under the prefix (several keys share its EPK, or one of another
// prefix does, which a hash collision allows), and the items are counted
// another way.
func prefixCount(r storage.Reader, c *containerRecord, scope *itemScope, now time.Time, st *readStats) (int64, bool, error) {
	n, ok, err := prefixTotal(r, c, scope, st)
	if err != nil || !ok {
		return 0, false, err
	}
	err = eachExpired(r, c, now, func(_ int64, loc []byte) {
		st.entries++
		if scope.holds(loc) {
			n--
		}
	})
	return max(n, 0), err == nil, err
}

// prefixTotal sums the counts of the logical partitions under the
// hierarchical prefix scope, expired items among them; ok is false when a
// count may hold items of a key not under the prefix.
func prefixTotal(r storage.Reader, c *containerRecord, scope *itemScope, st *readStats) (n int64, ok bool, err error) {
	prefix := collPrefix(famUsage, c.Rid)
	lo, hi := append(bytes.Clone(prefix), scope.lo...), prefixEnd(prefix)
	if scope.hi != nil {
		hi = append(bytes.Clone(prefix), scope.hi...)
	}
	under := true
	err = scanRange(r, lo, hi, func(_, v []byte) (bool, error) {
		owner, one := partitionOwner(v)
		if under = one && bytes.HasPrefix(owner, scope.pk); !under {
			return false, nil
		}
		n += decodeCount(v)
		return true, st.entry()
	})
	return n, err == nil && under, err
}

// oneTerm reports whether preds make one term of an index whose values are
// exactly those the predicates allow: one predicate the index answers, or
// a lower and an upper bound of one type on one path (BETWEEN, or c.n > 1
// AND c.n < 3), which plan.Terms joins into one range. Bounds of two types
// it does not join, and two bounds on one side it takes one of.
func oneTerm(preds []plan.Predicate) bool {
	switch len(preds) {
	case 1:
		return preds[0].Op != plan.OfKinds
	case 2:
		lo, hi := preds[0], preds[1]
		if lo.Op == plan.Lt || lo.Op == plan.Le {
			lo, hi = hi, lo
		}
		return (lo.Op == plan.Gt || lo.Op == plan.Ge) && (hi.Op == plan.Lt || hi.Op == plan.Le) &&
			slices.Equal(lo.Path, hi.Path) && lo.Value.Kind() == hi.Value.Kind()
	}
	return false
}

// propertyTerms returns the terms of preds, one for each property, when
// each property's predicates make one term (oneTerm) whose values and
// bounds the index keeps exactly, on a path that crosses no array and is
// no system property: the items each term holds are then those of its
// entries.
func propertyTerms(preds []plan.Predicate) ([]plan.Term, bool) {
	byPath := map[string][]plan.Predicate{}
	for _, p := range preds {
		key := strings.Join(p.Path, "\x00")
		byPath[key] = append(byPath[key], p)
	}
	for _, group := range byPath {
		if !oneTerm(group) {
			return nil, false
		}
	}
	terms := plan.Terms(preds)
	if len(terms) != len(byPath) {
		return nil, false
	}
	for _, t := range terms {
		if crossesArray(t.Path) || systemPath(t.Path) || !exactSpans(t) {
			return nil, false
		}
	}
	return terms, true
}

// countableScope reports whether the index may count in scope: the whole
// container, a range, a logical partition whose EPK no other partition
// key shares (partitionAlone; the entries of two such keys share a span),
// or a hierarchical prefix whose partitions' keys are all under it
// (prefixTotal). Under a prefix, the callers count terms of single values
// alone, whose entries of the prefix lie together (scopedSpans); a range's
// are among the whole container's.
func countableScope(r storage.Reader, c *containerRecord, scope *itemScope, st *readStats) (bool, error) {
	switch scope.kind {
	case plan.ScopeAll, plan.ScopeRange:
		return true, nil
	case plan.ScopePartition:
		return partitionAlone(r, c, scope, st)
	case plan.ScopePrefix:
		_, ok, err := prefixTotal(r, c, scope, st)
		return ok, err
	}
	return false, nil
}

// countingScope is countableScope, and then the locations of the scope's
// items expired and not purged yet (expiredIn), which a count from
// entries leaves out; ok is false when the index may not count there.
func countingScope(r storage.Reader, c *containerRecord, scope *itemScope, now time.Time, st *readStats) (expired map[string]bool, ok bool, err error) {
	if ok, err := countableScope(r, c, scope, st); err != nil || !ok {
		return nil, false, err
	}
	expired, err = expiredIn(r, c, scope, now, st)
	return expired, err == nil, err
}

// countByIntersection counts the items two properties' terms both hold
// (`c.status = 'open' AND c.priority > 2` with no composite index of the
// two), each an exact term of one property (as countByIndex's), when the
// entries of both come in the scope's order (mergeSpans): over a range or
// the whole container, once both paths' tie entries are built (a page of
// the query without COUNT asks for them); in a logical partition that no
// other key shares its EPK with, each an equality or IN list, or a range
// of a path whose partition entries are built. It steps through the two
// as an intersection's pages do (intersect), counting the items both name
// that are not expired, and reads no record: the entries between the
// first and the last such item, or fewer where one term skips ahead of
// the other.
func countByIntersection(r storage.Reader, c *containerRecord, preds []plan.Predicate, scope *itemScope, now time.Time, boxed bool, st *readStats, page *FeedPage) (bool, error) {
	terms, ok := propertyTerms(preds)
	if !ok || len(terms) != 2 {
		return false, nil
	}
	for _, t := range terms {
		if !c.index.indexes(t.Path) || !mayMerge(c, t, scope) || scope.kind == plan.ScopePrefix && !singleValues(t) {
			return false, nil
		}
	}
	if ok, err := countableScope(r, c, scope, st); err != nil || !ok {
		return false, err
	}
	var merges [2]posMerge
	for i, t := range terms {
		m, ok, err := mergeSpans(r, c, t, scope, st)
		if err != nil || !ok {
			return false, err
		}
		merges[i] = m
	}
	expired, err := expiredIn(r, c, scope, now, st)
	if err != nil {
		return false, err
	}
	from := st.entries
	a, b := &merges[0], &merges[1]
	defer a.close()
	defer b.close()
	if err := a.open(r, nil); err != nil {
		return false, err
	}
	if err := b.open(r, nil); err != nil {
		return false, err
	}
	var n int64
	err = intersect(a, b, func(_, loc []byte) (bool, error) {
		if !expired[string(loc)] {
			n++
		}
		return true, nil
	})
	if err != nil {
		return false, err
	}
	p := plan.IndexCountPlan(scope.kind, terms, nil, int64(st.entries-from))
	page.Plan = &p
	page.Items = append(page.Items, partialRow(document.Int(n), boxed))
	return true, nil
}

// countByKeys answers a count (countShape) whose WHERE clause is an
// equality or IN list of whole partition keys (c.pk IN ('a', 'b'), or an
// OR of equalities), in a container of one key path, over the whole
// container or a range, as the sum of each key's logical partition count
// (countPartition): a counter a key, where the key path's entries are one
// an item. A key outside the range counts none. It reports false for any
// other shape, and for more keys than a prefix's count sums
// (maxPrefixPartitions), which the index counts.
func (e *Engine) countByKeys(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, rangeID string, scope *itemScope, now time.Time, boxed bool, st *readStats, page *FeedPage) (bool, error) {
	if len(c.pk.paths) != 1 || scope.kind != plan.ScopeAll && scope.kind != plan.ScopeRange || !plan.Exact(q, params) {
		return false, nil
	}
	preds := plan.Predicates(q, params)
	terms := plan.Terms(preds)
	if !oneTerm(preds) || len(terms) != 1 || !c.isKeyPath(terms[0].Path) || !singleValues(terms[0]) || len(terms[0].Spans) > maxPrefixPartitions {
		return false, nil
	}
	keys, ok := termKeys(terms[0])
	if !ok {
		return false, nil
	}
	from := st.entries
	var n int64
	for _, key := range keys {
		part, derr := e.scopeFor(c, key, true, rangeID)
		if derr != nil {
			return false, nil
		}
		k, _, err := countPartition(r, c, part, now, st)
		if err != nil {
			return false, err
		}
		n += k
	}
	p := plan.KeyCountersPlan(scope.kind, terms[0], int64(st.entries-from))
	page.Plan = &p
	page.Items = append(page.Items, partialRow(document.Int(n), boxed))
	return true, nil
}

// termKeys returns the partition keys of a single-path key whose values
// term t lists (singleValues), and false when one is not a key (keyOf).
func termKeys(t plan.Term) ([]partition.Key, bool) {
	keys := make([]partition.Key, 0, len(t.Spans))
	for _, sp := range t.Spans {
		k, ok := keyOf(sp.Lo)
		if !ok {
			return nil, false
		}
		keys = append(keys, k)
	}
	return keys, true
}

// keyOf returns the partition key of a single-path key of value v, and
// false when v is not a key's value (an object or an array) or is a
// number of 2^53 or more, which the index does not hold exactly: its
// equal values need not be one partition's.
func keyOf(v document.Value) (partition.Key, bool) {
	comp, ok := componentOf(v)
	if !ok || v.Kind() == document.Number && math.Abs(v.Float()) >= 1<<53 {
		return nil, false
	}
	return partition.Key{comp}, true
}

// keyOfValues returns the partition key of the values of its paths, in
// order, and false when one is not a key's component (keyOf).
func keyOfValues(vs []document.Value) (partition.Key, bool) {
	key := make(partition.Key, 0, len(vs))
	for _, v := range vs {
		k, ok := keyOf(v)
		if !ok {
			return nil, false
		}
		key = append(key, k...)
	}
	return key, true
}

// countPartition counts the items of the logical partition scope alive at
// now. Its EPK's counter holds that number, less the items expired and not
// purged, when it counts that partition's items alone (partitionOwner):
// two keys share an EPK on a hash collision. Otherwise the partition's id
// entries are counted, which are the key's own; they are small (a key and
// a location each), a block or two for a few hundred items.
func countPartition(r storage.Reader, c *containerRecord, scope *itemScope, now time.Time, st *readStats) (int64, plan.Plan, error) {
	lo := appendEPK(nil, scope.epk, true)
	if bytes.Compare(scope.lo, scope.hi) >= 0 {
		return 0, plan.CountersPlan(plan.ScopePartition), nil // outside the range given
	}
	expired, err := expiredIn(r, c, scope, now, st)
	if err != nil {
		return 0, plan.Plan{}, err
	}
	if bytes.Equal(scope.lo, lo) && bytes.Equal(scope.hi, prefixEnd(lo)) {
		// The whole partition is in scope.
		v, err := r.Get(partitionCountKey(c.Rid, scope.epk))
		st.entries++
		switch {
		case errors.Is(err, storage.ErrNotFound):
			return 0, plan.CountersPlan(plan.ScopePartition), nil
		case err != nil:
			return 0, plan.Plan{}, err
		}
		if owner, ok := partitionOwner(v); ok && bytes.Equal(owner, scope.pk) {
			return max(decodeCount(v)-int64(len(expired)), 0), plan.CountersPlan(plan.ScopePartition), nil
		}
	}
	var n, read int64
	err = scanPrefix(r, itemIDPrefix(c.Rid, scope.pk), func(_, loc []byte) (bool, error) {
		read++
		if scope.holds(loc) && !expired[string(loc)] {
			n++
		}
		return true, st.entry()
	})
	return n, plan.IDEntriesPlan(read), err
}

// countByIndex answers a count (countShape) whose WHERE clause is one
// term on a property the index keeps (an equality or IN list of scalars,
// a comparison with a number or a string, a STARTSWITH), over the whole
// container, a range or a logical partition, by counting the property's
// entries of those values in the scope: an item has one entry for its
// value of the property, the entries of a value in a scope are one span
// (the value, then the item's location), and a range of values is one
// span of the property's entries (or, in a logical partition, of its
// partition entries), so the count reads no record, where evaluating it
// read every candidate's. The items expired and not purged yet keep their
// entries, and are left out by their locations in the purge backlog, as
// countPartition does. An item's number of magnitude 2^53 or more is kept
// as its double, which lies on the same side of any bound of smaller
// magnitude as the number, so a range with exact bounds counts it right.
// It reports false, and the query's evaluation
// counts, for any other shape: a WHERE clause of more terms, or of terms
// the index does not answer exactly (array elements, whose segment a
// property named "[]" shares; a number of magnitude 2^53 or more, whose
// double others share, as a value or a bound; a system property), an
// index being rebuilt, a range in a logical partition whose partition
// entries of the property are not built (the container's entries of the
// range would cost more than the partition's records), a range under a
// hierarchical prefix not read through its partitions' partition entries
// (prefixRange), a prefix whose partitions' counters name a key not under
// it (prefixTotal), or a logical partition whose EPK another partition
// key shares (its entries are in the same span).
func countByIndex(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, scope *itemScope, now time.Time, boxed bool, st *readStats, page *FeedPage) (bool, error) {
	if !c.Index.Ready || c.index.none {
		return false, nil
	}
	if ops := plan.Operands(q); ops != nil {
		if done, err := countByUnion(r, c, ops, params, scope, now, boxed, st, page); done || err != nil {
			return done, err
		}
	}
	if !plan.Exact(q, params) {
		return false, nil
	}
	preds := plan.Predicates(q, params)
	if err := readPrefixParts(r, c, plan.Terms(preds), scope, st); err != nil {
		return false, err
	}
	if !oneTerm(preds) {
		done, err := countByComposite(r, c, q, params, preds, scope, now, boxed, st, page)
		if done || err != nil {
			return done, err
		}
		return countByIntersection(r, c, preds, scope, now, boxed, st, page)
	}
	t, ok := loneExactTerm(c, preds, scope)
	if !ok {
		return false, nil
	}
	expired, ok, err := countingScope(r, c, scope, now, st)
	if err != nil || !ok {
		return false, err
	}
	// plan.Terms has dropped an IN list's repeated values (1 and 1.0
	// among them), so no entry is read twice.
	spans, base := scopedSpans(c, t, scope)
	n, read, err := countLive(r, spans, func(k []byte) ([]byte, bool) { return entryLoc(k, base) }, scope, expired, st)
	if err != nil {
		return false, err
	}
	p := plan.IndexCountPlan(scope.kind, []plan.Term{t}, nil, read)
	page.Plan = &p
	page.Items = append(page.Items, partialRow(document.Int(n), boxed))
	return true, nil
}

// loneExactTerm returns the term of preds, a WHERE clause of one term whose
// predicates are exact (oneTerm, plan.Exact), when its entries in scope
// name exactly the items that pass it: a property the index holds, not
// within an array nor a system property, of exact values and bounds, and
// in a logical partition a range only through the property's partition
// entries, and under a hierarchical prefix only through its partitions'
// (prefixRange; else the container's entries of the range would be read).
func loneExactTerm(c *containerRecord, preds []plan.Predicate, scope *itemScope) (plan.Term, bool) {
	// plan.Terms keeps one of several predicates on a path that do not
	// join into one term (two IN lists): that term is not the clause.
	if !oneTerm(preds) {
		return plan.Term{}, false
	}
	terms := plan.Terms(preds)
	if len(terms) != 1 {
		return plan.Term{}, false
	}
	t := terms[0]
	if crossesArray(t.Path) || systemPath(t.Path) || !c.index.indexes(t.Path) || !exactSpans(t) {
		return plan.Term{}, false
	}
	if !singleValues(t) && (scope.kind == plan.ScopePartition && !partRange(c, t, scope) || scope.kind == plan.ScopePrefix && !prefixRange(c, t, scope)) {
		return plan.Term{}, false
	}
	return t, true
}

// countByUnion answers a count (countShape) whose WHERE clause is an OR
// each of whose operands, ops, is a term countByIndex would count alone
// (exact values and bounds, no array element, no system property, in a
// logical partition a range only through its partition entries): the
// items any of them holds are the locations their entries in the scope
// name, each counted once, less the items expired and not purged yet. It
// reads the terms' entries and no record. An OR of equalities on one
// path is an IN, which plan.Operands does not see here: countByIndex took
// it before as one term.
func countByUnion(r storage.Reader, c *containerRecord, ops []*ast.Query, params map[string]document.Value, scope *itemScope, now time.Time, boxed bool, st *readStats, page *FeedPage) (bool, error) {
	terms := make([]plan.Term, 0, len(ops))
	labels := make([]string, 0, len(ops))
	for _, op := range ops {
		preds := plan.Predicates(op, params)
		if !plan.Exact(op, params) || !oneTerm(preds) {
			return false, nil
		}
		t, ok := loneExactTerm(c, preds, scope)
		if !ok {
			return false, nil
		}
		terms, labels = append(terms, t), append(labels, t.Label)
	}
	expired, ok, err := countingScope(r, c, scope, now, st)
	if err != nil || !ok {
		return false, err
	}
	locs, entries, _, err := unionLocs(r, c, terms, scope, st, math.MaxInt64)
	if err != nil {
		return false, err
	}
	var n, read int64
	for _, loc := range locs {
		if !expired[string(loc)] {
			n++
		}
	}
	for _, e := range entries {
		read += e
	}
	union := plan.Term{Label: strings.Join(labels, " OR ")}
	p := plan.IndexCountPlan(scope.kind, []plan.Term{union}, nil, read)
	page.Plan = &p
	page.Items = append(page.Items, partialRow(document.Int(n), boxed))
	return true, nil
}

// countByComposite answers a count (countShape) whose WHERE clause is
// terms on several properties, each one term the index answers exactly
// (oneTerm), over the whole container, a range, a logical partition
// whose own composite entries are complete (partComposite) and whose EPK
// no other key shares (countableScope), or a hierarchical prefix of a few
// partitions read through their composite entries (prefixComposite)
// whose partitions' counters name only keys under it, when a composite index of the
// policy has exactly those paths and its span for the terms is exact
// (plan.CompositeUses: equalities on its leading paths, and any term on
// the last): an item passes the terms if and only if it has an
// entry in the span, since every term holds only for scalars and the
// composite keeps an entry for each item with scalars at all its paths.
// It counts the span's entries of live items in the scope, as
// countByIndex counts one path's. A composite of more paths leaves out
// the items without a later path, and a term the span does not bound is
// told from the entry's key by a check that lets some pass, so neither
// counts.
func countByComposite(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, preds []plan.Predicate, scope *itemScope, now time.Time, boxed bool, st *readStats, page *FeedPage) (bool, error) {
	terms, ok := propertyTerms(preds)
	if !ok {
		return false, nil
	}
	for _, u := range compositeUses(c, q, params, terms) {
		// Every path of a composite it uses has a term (plan.CompositeUses):
		// the span bounds them all when it reads every term.
		comp, ok := c.policyComposite(u.Index.Ordinal)
		if !ok || len(u.Terms()) != len(terms) || scope.kind == plan.ScopePartition && !partComposite(c, comp, scope) || scope.kind == plan.ScopePrefix && !prefixComposite(c, comp, scope) {
			continue
		}
		expired, ok, err := countingScope(r, c, scope, now, st)
		if err != nil || !ok {
			return false, err
		}
		base := len(compositeStart(c, comp, scope))
		n, read, err := countLive(r, compositeSpans(c, &u, terms, scope), func(k []byte) ([]byte, bool) { return compositeLoc(k, base, comp) }, scope, expired, st)
		if err != nil {
			return false, err
		}
		ordered := make([]plan.Term, 0, len(terms))
		for _, i := range u.Terms() {
			ordered = append(ordered, terms[i])
		}
		p := plan.IndexCountPlan(scope.kind, ordered, &u, read)
		page.Plan = &p
		page.Items = append(page.Items, partialRow(document.Int(n), boxed))
		return true, nil
	}
	return false, nil
}

// exactSpans reports whether every value and bound of t's spans is one
// the index keeps exactly (exactScalar), so that its entries are the items
// the term holds for.
func exactSpans(t plan.Term) bool {
	for _, sp := range t.Spans {
		if (sp.Kind == plan.SpanValue || sp.HasLo) && !exactScalar(sp.Lo) || sp.HasHi && !exactScalar(sp.Hi) {
			return false
		}
	}
	return true
}

// countLive counts the entries in spans of the scope's items that are not
// expired (locOf gives an entry's location), and returns that count and
// how many entries it read.
func countLive(r storage.Reader, spans []keySpan, locOf func(k []byte) ([]byte, bool), scope *itemScope, expired map[string]bool, st *readStats) (n, read int64, err error) {
	err = scanSpans(r, spans, func(k, _ []byte) (bool, error) {
		read++
		loc, ok := locOf(k)
		if !ok {
			return false, fmt.Errorf("index entry %x: malformed", k)
		}
		if scope.holds(loc) && !expired[string(loc)] {
			n++
		}
		return true, st.entry()
	})
	if err != nil {
		return 0, 0, err
	}
	return n, read, nil
}

// partitionAlone reports whether the logical partition scope is the only
// one with items at its EPK, by its EPK's counter (partitionOwner): two
// keys share an EPK on a hash collision, and then their entries share a
// span.
func partitionAlone(r storage.Reader, c *containerRecord, scope *itemScope, st *readStats) (bool, error) {
	v, err := r.Get(partitionCountKey(c.Rid, scope.epk))
	st.entries++
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return true, nil
	case err != nil:
		return false, err
	}
	owner, ok := partitionOwner(v)
	return ok && bytes.Equal(owner, scope.pk), nil
}

// expiredIn returns the locations of scope's items that are expired at
// now and not purged yet (the purge backlog), each entry read counted:
// they keep their records and index entries until the purge removes them,
// and a count or an index answer leaves them out.
func expiredIn(r storage.Reader, c *containerRecord, scope *itemScope, now time.Time, st *readStats) (map[string]bool, error) {
	expired := map[string]bool{}
	err := eachExpired(r, c, now, func(_ int64, loc []byte) {
		st.entries++
		if scope.holds(loc) {
			expired[string(loc)] = true
		}
	})
	return expired, err
}
