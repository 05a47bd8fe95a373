package engine

import (
	"bytes"
	"math"
	"slices"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// compositeUses returns the ways the container's composite indexes can
// answer q (plan.CompositeUses), without their counts. None while the
// index is being rebuilt.
func compositeUses(c *containerRecord, q *ast.Query, params map[string]document.Value, terms []plan.Term) []plan.CompositeUse {
	if !c.Index.Ready || c.index.none || len(c.index.composites) == 0 {
		return nil
	}
	var comps []plan.CompositeIndex
	for _, ci := range c.index.composites {
		if ci.kept {
			comps = append(comps, plan.CompositeIndex{Ordinal: ci.ordinal, Paths: ci.paths, Desc: ci.desc})
		}
	}
	order, want := walkableOrder(q, params)
	return plan.CompositeUses(comps, terms, order, want)
}

// walkableOrder returns the ORDER BY keys of a query an ordered walk can
// answer, and how many rows it needs: one per ORDER BY item, each a
// document path, with TOP or OFFSET/LIMIT and without grouping,
// aggregates, DISTINCT or JOINs (whose rows are not the documents). want
// is -1 otherwise.
func walkableOrder(q *ast.Query, params map[string]document.Value) ([]plan.OrderKey, int64) {
	if len(q.OrderBy) == 0 || len(q.GroupBy) > 0 || q.Select.Distinct || gatewayplan.HasAggregates(q) || len(q.Joins) > 0 {
		return nil, -1
	}
	keys := orderKeys(q)
	if keys == nil {
		return nil, -1
	}
	if end, ok := windowEnd(q, params); ok {
		return keys, int64(end)
	}
	return nil, -1
}

// orderKeys returns the ORDER BY items of q as document paths, or nil
// when one is not a path.
func orderKeys(q *ast.Query) []plan.OrderKey {
	keys := make([]plan.OrderKey, 0, len(q.OrderBy))
	for _, o := range q.OrderBy {
		path, ok := plan.DocPath(q, o.Expr)
		if !ok {
			return nil
		}
		keys = append(keys, plan.OrderKey{Path: path, Desc: o.Desc})
	}
	return keys
}

// compositeSpans turns a composite use into spans of index keys in scope
// s, in key order: each combination of the fixed paths' values (an
// equality's, or each of an IN list's) after the prefix of the
// composite's entries the scope reads (compositeStart), then each value
// span of the next path's term.
func compositeSpans(c *containerRecord, u *plan.CompositeUse, terms []plan.Term, s *itemScope) []keySpan {
	comp, ok := c.policyComposite(u.Index.Ordinal)
	if !ok {
		return nil
	}
	bases := [][]byte{compositeStart(c, comp, s)}
	for i, t := range u.Eq {
		var next [][]byte
		for _, base := range bases {
			for _, sp := range terms[t].Spans {
				if k, ok := appendCompositeValue(bytes.Clone(base), sp.Lo, u.Index.Desc[i]); ok {
					next = append(next, k)
				}
			}
		}
		bases = next
	}
	var spans []keySpan
	for _, base := range bases {
		if u.Next < 0 {
			spans = append(spans, keySpan{lo: base, hi: prefixEnd(base)})
		} else {
			spans = append(spans, valueSpans(base, terms[u.Next], u.Index.Desc[len(u.Eq)], nil)...)
		}
	}
	// In key order, each once: values the index keeps alike (numbers of
	// 2^53 or more) give one span.
	slices.SortFunc(spans, func(a, b keySpan) int { return bytes.Compare(a.lo, b.lo) })
	spans = slices.CompactFunc(spans, func(a, b keySpan) bool { return bytes.Equal(a.lo, b.lo) && bytes.Equal(a.hi, b.hi) })
	if prefixComposite(c, comp, s) {
		return throughParts(spans, partCompBase(indexPrefix(c), comp), compositePrefix(indexPrefix(c), comp.ordinal), s)
	}
	return spans
}

// entryCheck tells, from an entry's key alone, whether its item can pass
// the terms on the composite's paths that its span does not already bound
// (paths after the span's), so the walk reads only those items' records.
// Terms are implied by the WHERE clause, so a skipped item cannot pass it.
type entryCheck struct {
	comp  *compositeIndex
	base  int
	spans [][]keySpan // per path of the composite; nil: not checked
}

func newEntryCheck(c *containerRecord, comp *compositeIndex, u *plan.CompositeUse, terms []plan.Term, s *itemScope) *entryCheck {
	ch := &entryCheck{comp: comp, base: len(compositeStart(c, comp, s)), spans: make([][]keySpan, len(comp.paths))}
	for i := len(u.Terms()); i < len(comp.paths); i++ {
		if t := slices.IndexFunc(terms, func(t plan.Term) bool { return slices.Equal(t.Path, comp.paths[i]) }); t >= 0 {
			ch.spans[i] = valueSpans(nil, terms[t], comp.desc[i], nil)
		}
	}
	return ch
}

// loc returns the location of entry k; ok is false when the key is
// malformed or the item cannot pass the terms.
func (ch *entryCheck) loc(k []byte) ([]byte, bool) {
	off, ok := ch.values(k, func(i, off, _ int, _ byte) bool {
		return ch.spans[i] == nil || slices.ContainsFunc(ch.spans[i], func(sp keySpan) bool {
			return bytes.Compare(k[off:], sp.lo) >= 0 && (sp.hi == nil || bytes.Compare(k[off:], sp.hi) < 0)
		})
	})
	if !ok || len(k)-off < 10 {
		return nil, false
	}
	return k[off:], true
}

// inexactPrefix returns entry k up to the end of its first value that
// values the evaluator tells apart share (exactValue: integers of
// magnitude 2^53 or more share a double), and false when there is none.
// The first pinned values are skipped: their equalities keep only the
// items with the one exact value asked for.
func (ch *entryCheck) inexactPrefix(k []byte, pinned int) ([]byte, bool) {
	end := -1
	ch.values(k, func(i, off, n int, mask byte) bool {
		if i < pinned {
			return true
		}
		v := slices.Clone(k[off : off+n])
		for j := range v {
			v[j] ^= mask
		}
		if !exactValue(v) {
			end = off + n
			return false
		}
		return true
	})
	if end < 0 {
		return nil, false
	}
	return k[:end], true
}

// values calls fn with the offset and length of each value of entry k, and
// the mask its path's direction stores it under, while fn returns true. It
// returns the offset past the values, and false when k is malformed or fn
// returned false.
func (ch *entryCheck) values(k []byte, fn func(i, off, n int, mask byte) bool) (int, bool) {
	off := ch.base
	for i, desc := range ch.comp.desc {
		mask := byte(0)
		if desc {
			mask = 0xff
		}
		n := maskedValueLen(k[off:], mask)
		if n <= 0 || !fn(i, off, n, mask) {
			return 0, false
		}
		off += n
	}
	return off, true
}

// compositeStart is where the entries of comp that a read over scope s
// takes begin: within a logical partition, the partition's own composite
// entries once they are complete (partComposite); the composite's entries
// otherwise, which hold every partition's. Both hold the scope's items
// under the same values, in the same order.
func compositeStart(c *containerRecord, comp *compositeIndex, s *itemScope) []byte {
	if partComposite(c, comp, s) {
		return partCompPrefix(c, comp, s.epk)
	}
	return compositePrefix(indexPrefix(c), comp.ordinal)
}

// partComposite reports whether s is a logical partition whose composite
// entries of comp are complete (absent.go): comp's gap entries and its
// first path's partition entries, which the partition composite entries
// come with.
func partComposite(c *containerRecord, comp *compositeIndex, s *itemScope) bool {
	return s.kind == plan.ScopePartition && c.compReady(comp) && c.partsReady(comp.paths[0])
}

// prefixComposite reports whether comp's spans under the hierarchical
// prefix s are read through the view of its partitions' composite
// entries (keySpan.in): the composite's entries hold every partition's,
// so a span under the prefix holds the whole container's entries of its
// values, where each partition's composite entries hold its own apart.
// The prefix's partitions must have been read and be few (prefixParts,
// readPrefixParts), and the partition composite entries complete.
func prefixComposite(c *containerRecord, comp *compositeIndex, s *itemScope) bool {
	return s.kind == plan.ScopePrefix && s.parts != nil && !s.manyParts && c.compReady(comp) && c.partsReady(comp.paths[0])
}

// policyComposite is the container's composite index with the ordinal.
func (c *containerRecord) policyComposite(ordinal int) (*compositeIndex, bool) {
	for i := range c.index.composites {
		if c.index.composites[i].ordinal == ordinal {
			return &c.index.composites[i], true
		}
	}
	return nil, false
}

// compositeLocs collects the locations of the items in the scope that the
// use's span names, in _rid order. An entry outside the scope costs only
// its key.
func compositeLocs(r storage.Reader, c *containerRecord, u *plan.CompositeUse, terms []plan.Term, s *itemScope, st *readStats) ([][]byte, error) {
	locs, _, err := compositeLocsUpTo(r, c, u, terms, s, st, math.MaxInt64, math.MaxInt64)
	return locs, err
}

// compositeLocsUpTo is compositeLocs reading at most limit entries and
// keeping locations while it has read no more than keep
// (collectLocsUpTo).
func compositeLocsUpTo(r storage.Reader, c *containerRecord, u *plan.CompositeUse, terms []plan.Term, s *itemScope, st *readStats, limit, keep int64) (locs [][]byte, read int64, err error) {
	comp, ok := c.policyComposite(u.Index.Ordinal)
	if !ok {
		return nil, 0, nil
	}
	check := newEntryCheck(c, comp, u, terms, s)
	return collectLocsUpTo(r, compositeSpans(c, u, terms, s), s, st, check.loc, limit, keep)
}

// compositeItems walks the use's span in key order (backwards when
// u.Reverse), which is the ORDER BY's order, and returns the documents
// that pass the WHERE clause until it has u.Want of them. Every document
// the query can return is in the span (plan.CompositeUses), so what it
// returns holds the query's first u.Want rows.
func compositeItems(r storage.Reader, c *containerRecord, prog *eval.Program, params map[string]document.Value, u *plan.CompositeUse, terms []plan.Term, s *itemScope, now time.Time, st *readStats) ([]foundItem, error) {
	comp, ok := c.policyComposite(u.Index.Ordinal)
	if !ok {
		return nil, errBadContinuation
	}
	filter, err := rowFilter(prog)
	if err != nil {
		return nil, queryError(err)
	}
	spans := compositeSpans(c, u, terms, s)
	if u.Reverse {
		slices.Reverse(spans)
	}
	check := newEntryCheck(c, comp, u, terms, s)
	var found []foundItem
	// boundary is the want-th item's entry up to its first value that the
	// index keeps for several values the evaluator tells apart
	// (orderedItems). The evaluator may order any item of that group
	// first, whatever the values after it, which order the walk within
	// the group: so the walk reads the whole group.
	var boundary []byte
	done := func(k []byte) bool {
		if int64(len(found)) < u.Want {
			return false
		}
		return boundary == nil || !bytes.HasPrefix(k, boundary)
	}
	// The candidates' records are read a run at a time (entryRun), as
	// many as the walk still wants.
	var run entryRun
	judge := func(k, loc []byte, rec *itemRecord) error {
		if ok, err := passes(c, s, filter, now, loc, rec); !ok || err != nil {
			return err
		}
		rec.detach()
		found = append(found, foundItem{loc: loc, rec: *rec})
		if int64(len(found)) == u.Want {
			if p, inexact := check.inexactPrefix(k, len(u.Eq)); inexact {
				boundary = bytes.Clone(p)
			}
		}
		return nil
	}
	for _, sp := range spans {
		if int64(len(found)) >= u.Want && boundary == nil {
			break
		}
		if err := walkSpan(r, sp, u.Reverse, done, func(k []byte) error {
			st.entries++
			loc, ok := check.loc(k)
			if !ok || !s.holds(loc) || run.add(k, loc) < max(u.Want-int64(len(found)), 1) {
				return nil
			}
			return run.read(r, c, st, judge)
		}); err != nil {
			return nil, err
		}
		if err := run.read(r, c, st, judge); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// walkSpan calls fn with the keys of sp in order (backwards with reverse)
// until done says the walk is over.
func walkSpan(r storage.Reader, sp keySpan, reverse bool, done func(k []byte) bool, fn func(k []byte) error) error {
	it, err := sp.iter(r, reverse)
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok && !done(it.Key()); ok = it.Next() {
		if err := fn(it.Key()); err != nil {
			return err
		}
	}
	return it.Err()
}

// compositeLed returns q with its ORDER BY led by a path its filter fixes,
// when a composite index of the policy names that path and then q's ORDER
// BY keys (in their directions, or all reversed): SELECT … WHERE c.status =
// 'open' ORDER BY c.created DESC under the composite (/status, /created
// DESC) becomes … ORDER BY c.status, c.created DESC. Every row has the
// same value at the fixed path, so the rows come in the same order, ties
// too (the key added is ascending, which leaves the ties' direction as
// it was); and the ordered stream walks that composite from its position
// (coveredGroup), where a page of q read every document the filter
// passes, or the documents in the order of its first key until it had
// its rows. So do several fixed paths before the keys, under the
// composite (/tenant, /status, /created DESC): … WHERE c.tenant = 't1' AND
// c.status = 'open' ORDER BY c.created DESC becomes … ORDER BY c.tenant,
// c.status, c.created DESC, the paths after the first in the composite's
// directions (or all reversed, with the keys), and the walk of the first
// path's group reads only the entries of the others' values
// (groupSpan). value is the first fixed path's.
func compositeLed(c *containerRecord, q *ast.Query, params map[string]document.Value) (led *ast.Query, comp *compositeIndex, value []byte, ok bool) {
	keys := orderKeys(q)
	alias, ok := itemAlias(q)
	if !ok || len(keys) == 0 || len(q.GroupBy) > 0 || len(q.Joins) > 0 || q.Select.Distinct || gatewayplan.HasAggregates(q) || c.index.none {
		return nil, nil, nil, false
	}
	// fixed returns the encoded value the filter fixes path to, when the
	// index tells it apart from every other.
	fixed := func(path []string) ([]byte, bool) {
		for _, p := range plan.Predicates(q, params) {
			if p.Op == plan.Eq && slices.Equal(p.Path, path) {
				v, ok := appendIndexValue(nil, p.Value)
				return v, ok && exactValue(v)
			}
		}
		return nil, false
	}
	for i := range c.index.composites {
		ci := &c.index.composites[i]
		lead := len(ci.paths) - len(keys) // the fixed paths before the keys
		if !ci.kept || lead < 1 || !c.index.indexes(ci.paths[0]) {
			continue
		}
		same, opposite := true, true
		for j, k := range keys {
			if !slices.Equal(ci.paths[lead+j], k.Path) {
				same, opposite = false, false
				break
			}
			same = same && ci.desc[lead+j] == k.Desc
			opposite = opposite && ci.desc[lead+j] != k.Desc
		}
		if !same && !opposite || slices.ContainsFunc(keys, func(k plan.OrderKey) bool {
			return slices.ContainsFunc(ci.paths[:lead], func(p []string) bool { return slices.Equal(k.Path, p) })
		}) {
			continue
		}
		v, ok := fixed(ci.paths[0])
		for _, p := range ci.paths[1:lead] {
			_, fx := fixed(p)
			ok = ok && fx
		}
		if !ok {
			continue
		}
		if comp != nil && len(comp.paths) >= len(ci.paths) {
			continue // the composite of the most fixed paths reads least
		}
		f := *q
		f.OrderBy = []ast.OrderItem{{Expr: pathExpr(alias, ci.paths[0])}}
		for j := 1; j < lead; j++ {
			f.OrderBy = append(f.OrderBy, ast.OrderItem{Expr: pathExpr(alias, ci.paths[j]), Desc: ci.desc[j] != opposite})
		}
		f.OrderBy = append(f.OrderBy, q.OrderBy...)
		led, comp, value = &f, ci, v
	}
	return led, comp, value, comp != nil
}

// ledWay marks the fingerprints of the pages of a query led through a
// composite (compositeLed), so that a drain goes on the way it began.
const ledWay = "ordered through a composite "

// ledByComposite returns q led through a composite (compositeLed) when
// its page is to be read that way: a later page when its token is of that
// way (ledFp, the fingerprint of that way, reads it); a first page once
// the composite's entries for scope s are complete, unless a document the
// equality passes lacks a later path (a gap entry), which would make the
// stream read the value's documents whole. Until the entries are complete
// it asks for them, and q pages as written.
func (e *Engine) ledByComposite(r storage.Reader, c *containerRecord, q *ast.Query, p QueryParams, s *itemScope, st *readStats, ledFp uint64) (*ast.Query, bool, error) {
	led, comp, value, ok := compositeLed(c, q, p.Params)
	if !ok || s.kind == plan.ScopePrefix {
		return nil, false, nil
	}
	if p.Continuation != "" {
		_, derr := parseCursor(p.Continuation, ledFp)
		return led, derr == nil, nil
	}
	if _, _, ready := groupComposite(c, s, orderKeys(led)); !ready {
		e.wantAbsent(c, comp.paths[0], entryKinds{parts: s.kind == plan.ScopePartition, comps: []string{comp.sig()}})
		return nil, false, nil
	}
	gapped, err := gappedIn(r, c, comp, value, s, st)
	return led, !gapped, err
}

// pathExpr is the expression that reads path from the item alias.
func pathExpr(alias string, path []string) ast.Expr {
	var e ast.Expr = &ast.Ident{Name: alias}
	for _, name := range path {
		e = &ast.Member{X: e, Name: name}
	}
	return e
}
