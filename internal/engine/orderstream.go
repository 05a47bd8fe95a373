package engine

import (
	"bytes"
	"encoding/binary"
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

// The ordered stream serves
//
//	SELECT … FROM c [WHERE …] ORDER BY c.path [ASC|DESC] [, c.path2 …]
//
// (the first key on an indexed path that crosses no array, the others
// document paths (orderkeys.go); no GROUP BY or aggregate; a TOP or
// OFFSET/LIMIT a window the stream keeps; DISTINCT and JOIN as below) page
// by page: a page walks the
// path's index in the query's order from where the last page stopped and
// evaluates the query without its ORDER BY on each document, so page k
// costs what page 1 costs and holds one page of rows. The rows come out
// exactly as Program.Run's stable sort gives them:
//
//   - Documents without the property sort first (last descending) and are
//     in no index entry. Unless the WHERE clause has a term on the path
//     (which only a defined value passes), or the path is id or _ts
//     (everyItemHas), a scan of the scope in its
//     order finds them, before the walk ascending and after it
//     descending. That phase reads every record of the scope once over
//     the whole drain, like a filter query.
//   - Entries with equal values sort by location (EPK, then sequence),
//     but the evaluator orders equal keys by the order it read them in:
//     the scan order of the scope (scanSource: _rid order for a range or
//     the whole container, location order within a partition or prefix),
//     backwards when descending, as the service's backward index walk
//     gives them and the SDKs expect when they resume inside a tie. So
//     the entries of each value (a group) are collected, keys only, and
//     read in that order; the documents without the property are read
//     by a scan in that direction too. Over a range or the whole
//     container, once the path's tie entries are built (absent.go), a
//     group of an exact value is read through them instead, already in
//     _rid order and from where the last page stopped (tieGroup).
//   - A group may hold values the evaluator tells apart: numbers the
//     index keeps as one double but document.Compare orders exactly
//     (beyond 2^53), and arrays and objects, which have one bare marker
//     each, unordered among themselves. Such a group is read whole and
//     sorted by document.Compare, then scan order.
//
// Each document is emitted only from the group its own value encodes to,
// so an entry that does not match the record is passed over.
//
// A position (cursor.pos) is one of
//
//	phaseUndefined + scan position               (skip: rows of that item)
//	phaseWalk + value + modeItem + scan position (skip: rows of that item)
//	phaseWalk + value + modeGroup                (skip: rows of the group)
const (
	phaseUndefined = 0
	phaseWalk      = 1
	modeItem       = 0
	modeGroup      = 1
)

// streamShape recognizes a query the ordered stream serves; want is the
// rows of one page.
func streamShape(c *containerRecord, q *ast.Query, params map[string]document.Value, terms []plan.Term, want int) (*plan.Ordered, bool) {
	// A window (TOP, OFFSET and LIMIT) is the stream's to keep
	// (rowWindow), over the query without it that windowed gives, so
	// that a page of a window goes on from where the last one ended.
	elemPath, elems := distinctElems(q)
	if !c.Index.Ready || c.index.none || len(q.OrderBy) == 0 || (orderKeys(q) == nil && !elems) || len(q.GroupBy) > 0 || (q.Select.Distinct && !distinctKeyed(q) && !elems) ||
		gatewayplan.HasAggregates(q) {
		return nil, false
	}
	if end, ok := windowEnd(q, params); ok {
		want = min(want, end)
	}
	path, ok := plan.DocPath(q, q.OrderBy[0].Expr)
	if elems {
		path, ok = elemPath, true
	}
	if !ok || !c.index.indexes(path) || (crossesArray(path) && !elems) {
		return nil, false
	}
	// A DISTINCT VALUE makes no row of a document without the property,
	// nor does a JOIN of a document without the array; and every item has
	// an id and a _ts.
	o := &plan.Ordered{Path: path, Want: int64(want), Term: -1, Undefined: !(q.Select.Distinct && bareValue(q)) && !elems && !filtersOn(q, params, path) && !everyItemHas(path)}
	o.Absent = o.Undefined && c.absentReady(path)
	for i, t := range terms {
		// A term on the elements' path may be on another alias's
		// elements, or bound the documents (EXISTS, ARRAY_CONTAINS):
		// not the rows' values.
		if slices.Equal(t.Path, path) && !elems {
			o.Term = i
		}
	}
	return o, true
}

// maxFilterLocs bounds the locations a page of a filtered stream
// collects (plan.FilteredStream): past it the page walks unfiltered,
// reading the record of every walked entry, as the plain stream does. It
// bounds too what a page collects to hand on to the pages after it
// (collectPays, filterAfterWalk).
const maxFilterLocs = 1 << 16

// streamFilter returns the terms the stream o may filter its walk's
// entries by (plan.Ordered.Filter), for an ORDER BY without DISTINCT (of
// several keys, the first key's walk and the groups it reads, or walks
// through their composite, are filtered): each a term on another path the
// index keeps, those of single values (equality, IN) first, which are
// likely the narrower, then the others (a range, STARTSWITH, a type
// check), each in the query's order. Every document that passes the
// filter is among the items any one's entries name, whatever its spans;
// the planner weighs each, and a page filters by one (filterPick). A term
// on the partition key within a logical partition or a prefix holds for
// every item of the scope, and a system property's entries are not kept.
// Over the partitions a filter lists (listScope) the walk reads theirs
// alone, and a term's entries are the container's: none filters it. It
// depends on the query and the scope alone, so every page of a filtered
// stream finds the same terms.
func streamFilter(c *containerRecord, q *ast.Query, s *itemScope, terms []plan.Term, o *plan.Ordered) []int {
	if q.Select.Distinct && !distinctByKey(q) || s.listed != nil {
		return nil
	}
	var single, other []int
	for i, t := range terms {
		if slices.Equal(t.Path, o.Path) || systemPath(t.Path) || !c.index.indexes(t.Path) ||
			s.kind != plan.ScopeAll && s.kind != plan.ScopeRange && c.isKeyPath(t.Path) {
			continue
		}
		if singleValues(t) {
			single = append(single, i)
		} else {
			other = append(other, i)
		}
	}
	return append(single, other...)
}

// unionPlace is the place a filtered stream's token keeps for a filter by
// the OR's items (plan.Ordered.FilterUnion), past any term's.
const unionPlace = 255

// unionFilter reports whether the stream of q may filter its walk's
// entries by the locations of the items of its OR (plan.UnionTerms), as
// by a term's (streamFilter): for an ORDER BY without DISTINCT, each of
// the OR's terms on a path the index keeps and no system property.
func unionFilter(c *containerRecord, q *ast.Query, params map[string]document.Value) bool {
	union := plan.UnionTerms(q, params)
	if q.Select.Distinct && !distinctByKey(q) || len(union) == 0 {
		return false
	}
	return !slices.ContainsFunc(union, func(t plan.Term) bool { return systemPath(t.Path) || !c.index.indexes(t.Path) })
}

// unionFilterLocs collects the locations of the scope's items that the
// entries of q's OR name, for a filtered stream's page (unionFilter); nil
// when there are more than maxFilterLocs.
func unionFilterLocs(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, s *itemScope, st *readStats) (locSet, error) {
	locs, _, ok, err := unionLocs(r, c, plan.UnionTerms(q, params), s, st, maxFilterLocs+1)
	if err != nil || !ok {
		return nil, err
	}
	return locSetOf(locs), nil
}

// filterPick is the place among filters (streamFilter) of the term a
// filtered stream's page filters by: on a first page, the term the plan
// chose (the last of its terms past the walk's own, none when a composite
// filters it), and on a later one the place its token kept (the terms of
// a filtered stream's token). A place out of range, as in a token of
// another version, is the first: any of them filters rightly.
func filterPick(filters []int, p *plan.Plan, walkTerms int, kept []int) int {
	if p != nil {
		if t := p.Chosen.Terms; p.Chosen.Composite == nil && len(t) > walkTerms {
			return max(slices.Index(filters, t[len(t)-1]), 0)
		}
		return 0
	}
	if len(kept) == 1 && kept[0] < len(filters) {
		return kept[0]
	}
	return 0
}

// filterComposite returns a composite span whose items are among those
// of the stream o's filter term (plan.Ordered.Filter), so its locations
// filter the walk as well and are no more; nil when there is none.
func filterComposite(c *containerRecord, q *ast.Query, params map[string]document.Value, terms []plan.Term, o *plan.Ordered) *plan.CompositeUse {
	uses := compositeUses(c, q, params, terms)
	for i := range uses {
		if u := &uses[i]; !u.Ordered && slices.Contains(u.Terms(), o.Filter[0]) {
			if _, ok := c.policyComposite(u.Index.Ordinal); ok {
				return u
			}
		}
	}
	return nil
}

// compositeFilterLocs collects the locations of the scope's items that the
// composite span u names, as filterLocs does a term's; nil when there are
// more than maxFilterLocs.
func compositeFilterLocs(r storage.Reader, c *containerRecord, u *plan.CompositeUse, terms []plan.Term, s *itemScope, st *readStats) (locSet, error) {
	locs, read, err := compositeLocsUpTo(r, c, u, terms, s, st, maxFilterLocs+1, maxFilterLocs)
	if err != nil || read > maxFilterLocs {
		return nil, err
	}
	return locSetOf(locs), nil
}

// filterLocs collects the locations of the scope's items that t's entries
// name, for a filtered stream's page to read only the records of the
// walked entries among them; nil when there are more than maxFilterLocs.
// It goes on from what the count that weighed t gathered, when given.
func filterLocs(r storage.Reader, c *containerRecord, t plan.Term, s *itemScope, from *filterStart, st *readStats) (locSet, error) {
	set, _, err := filterLocsUpTo(r, c, t, s, from, st, math.MaxInt64)
	return set, err
}

// filterLocsUpTo is filterLocs reading at most limit entries: nil past
// them. read is how many it read.
func filterLocsUpTo(r storage.Reader, c *containerRecord, t plan.Term, s *itemScope, from *filterStart, st *readStats, limit int64) (set locSet, read int64, err error) {
	spans, base := scopedSpans(c, t, s)
	lc := &locCollector{s: s, base: base}
	var at []byte
	if from != nil {
		spans, lc, at = from.spans, from.locs, from.from
	}
	if at != nil && len(spans) > 0 {
		spans = append([]keySpan{{lo: at, hi: spans[0].hi, in: spans[0].in}}, spans[1:]...)
	}
	err = scanSpans(r, spans, func(k, _ []byte) (bool, error) {
		if read >= limit {
			return false, nil
		}
		read++
		st.entries++
		return lc.add(k), nil
	})
	if err != nil || len(lc.ends) > maxFilterLocs || read >= limit {
		return nil, read, err
	}
	return lc.set(), read, nil
}

// filterAfterWalk has the next page of a plain stream whose filter holds
// a term the filtered stream could take (t, streamFilter) walk filtered by
// the locations t's entries name, once the records the drain read past
// its rows, each by its location, have cost what collecting them does
// (plan.FilterPays), as collectAfterScan has a thin scan collect: a page
// of such a stream, when the term holds a good part of the scope, costs
// less than collecting them, so the first page walks plain, and every
// page after it read as many records for nothing. spent is what the
// pages before this one read so; the page keeps its sum for the next
// (keptCandidates.spent), or, once the term's entries are estimated
// (passingEntries) and then read, as far as would still pay, within what
// a page collects, the locations they name (filterLocs), under the token
// it hands on.
func (w *orderStream) filterAfterWalk(kept candidateKeeper, t plan.Term, spent int64) {
	if w.page.Continuation == "" || w.vals != nil && w.vals.set != nil {
		// None, or the page handed on the value filter's items
		// (keepValues).
		return
	}
	spent += int64(max(w.st.records-len(w.page.Items), 0))
	next := w.next
	next.kept = newKeptID()
	k := &keptCandidates{spent: spent}
	if estimate := passingEntries(kept.items, w.page, w.st); estimate <= maxFilterLocs && plan.FilterPays(spent, estimate) {
		set, read, err := filterLocsUpTo(w.r, w.c, t, w.s, nil, w.st, min(plan.FilterWorth(spent), maxFilterLocs)+1)
		if err == nil && set != nil && plan.FilterPays(spent, read) {
			// The first of the filter terms (filterPick).
			next.access, next.terms, k = plan.FilteredStream, []int{0}, &keptCandidates{set: set}
		}
	}
	kept.keep(next, k)
	w.page.Continuation = next.String()
}

// admits reports whether the walk may read the item at loc: the page
// filters by no term, or the filter's entries name it (filterLocs), and
// the value filter's items, once collected, hold it (valueUse).
func (w *orderStream) admits(loc []byte) bool {
	if w.filter == nil {
		return w.vals.admits(loc)
	}
	return w.filter.has(loc)
}

// everyItemHas reports whether every item has a value at path: its id,
// and its _ts, which a write sets.
func everyItemHas(path []string) bool {
	return len(path) == 1 && (path[0] == "id" || path[0] == "_ts")
}

// distinctByKey reports whether q is SELECT DISTINCT [VALUE] e [AS a] …
// ORDER BY e on one key, without JOIN: every row of a group of equal values
// is then the same, so the group makes one row (distinctWalk), and so do
// the documents without the property together ({}; none under VALUE).
func distinctByKey(q *ast.Query) bool {
	if !q.Select.Distinct || len(q.OrderBy) != 1 || len(q.Joins) > 0 {
		return false
	}
	e, ok := distinctItem(q)
	return ok && ast.Equal(e, q.OrderBy[0].Expr)
}

// groupedDistinct reports whether the rows of a DISTINCT the stream serves
// may hold more than its key, so that a group of one value may make
// several (groupDistinct).
func groupedDistinct(q *ast.Query) bool {
	_, elems := distinctElems(q)
	return q.Select.Distinct && !distinctByKey(q) && !elems
}

// distinctKeyed reports whether q is SELECT DISTINCT … ORDER BY e on one
// key, without JOIN, whose VALUE is e or one of whose select items is e:
// every row of a group of equal values of e then holds that value, so the
// rows of two groups differ and a group's repeats are its own
// (distinctWalk). distinctByKey's queries are among them.
func distinctKeyed(q *ast.Query) bool {
	if !q.Select.Distinct || len(q.OrderBy) != 1 || len(q.Joins) > 0 {
		return false
	}
	return slices.ContainsFunc(distinctItems(q), func(e ast.Expr) bool { return ast.Equal(e, q.OrderBy[0].Expr) })
}

// distinctElems reports whether q is SELECT DISTINCT VALUE e FROM c JOIN t
// IN c.array …, e being t or a path under t, ordered by e or not at all,
// and returns e's path through the array's elements (plan.ElemPath, under
// the index's segment "[]"). The index keeps an entry of each element's
// value there, so a group of a value holds the documents with such an
// element, and makes that value's row when one of them does: the distinct
// walk serves it from those entries (orderStream.elems).
func distinctElems(q *ast.Query) ([]string, bool) {
	if !q.Select.Distinct || q.Select.Value == nil || len(q.Joins) == 0 || len(q.GroupBy) > 0 || gatewayplan.HasAggregates(q) ||
		len(q.OrderBy) > 1 || len(q.OrderBy) == 1 && !ast.Equal(q.OrderBy[0].Expr, q.Select.Value) {
		return nil, false
	}
	path, ok := plan.ElemPath(q, q.Select.Value)
	if !ok || !crossesArray(path) {
		return nil, false
	}
	return path, true
}

// distinctItem returns the one expression a DISTINCT's rows are made of:
// its VALUE, the only property of its VALUE object, or its only select
// item (distinctItems).
func distinctItem(q *ast.Query) (ast.Expr, bool) {
	if items := distinctItems(q); len(items) == 1 {
		return items[0], true
	}
	return nil, false
}

// distinctItems returns the expressions a DISTINCT's rows are made of: its
// VALUE, the properties of a VALUE that is an object literal (of distinct
// names, each then a property of every row), or its select items (none for
// SELECT *).
func distinctItems(q *ast.Query) []ast.Expr {
	var items []ast.Expr
	if obj, ok := q.Select.Value.(*ast.ObjectLit); ok {
		names := map[string]bool{}
		for _, f := range obj.Fields {
			if names[f.Name] {
				return nil
			}
			names[f.Name] = true
			items = append(items, f.Value)
		}
		return items
	}
	if q.Select.Value != nil {
		return []ast.Expr{q.Select.Value}
	}
	for _, it := range q.Select.Items {
		items = append(items, it.Expr)
	}
	return items
}

// bareValue reports whether q selects VALUE e, e no object literal: a
// document whose e is undefined makes no row.
func bareValue(q *ast.Query) bool {
	_, obj := q.Select.Value.(*ast.ObjectLit)
	return q.Select.Value != nil && !obj
}

// distinctInOrder returns SELECT DISTINCT … without ORDER BY ordered by
// its VALUE or by the first of its select items that is a path the policy
// indexes (descending without VALUE). The service promises such a query
// no order; in the value's order its pages go on from their position in
// the path's index (distinctWalk), where in the order of the documents
// each page would have to read every document before it to know which
// rows it already returned.
func distinctInOrder(c *containerRecord, q *ast.Query, params map[string]document.Value, allowScan bool) (*ast.Query, bool) {
	// With TOP or OFFSET the query stops once it has made its rows, in
	// the documents' order; the ordered stream serves no window.
	if !q.Select.Distinct || len(q.OrderBy) > 0 || len(q.GroupBy) > 0 ||
		q.Select.Top != nil || q.Offset != nil || gatewayplan.HasAggregates(q) || c.index.none {
		return nil, false
	}
	var e ast.Expr
	if path, ok := distinctElems(q); ok {
		if !c.index.indexes(path) {
			return nil, false
		}
		e = q.Select.Value
	} else {
		i := slices.IndexFunc(distinctItems(q), func(e ast.Expr) bool {
			path, ok := plan.DocPath(q, e)
			return ok && c.index.indexes(path) && !crossesArray(path)
		})
		if i < 0 || len(q.Joins) > 0 {
			return nil, false
		}
		e = distinctItems(q)[i]
	}
	f := *q
	// Descending when documents without the path make a row ({}): they
	// come last, so only the drain's last page looks for them (a scan
	// of the scope until their absence entries are built).
	f.OrderBy = []ast.OrderItem{{Expr: e, Desc: !bareValue(q)}}
	if checkIndexNeeds(c, &f, params, allowScan) != nil {
		return nil, false
	}
	return &f, true
}

// withoutOrder compiles q without its ORDER BY (and DISTINCT, which the
// walk applies itself): the per-document rows of the stream.
func withoutOrder(prog *eval.Program) (*eval.Program, error) {
	f := *prog.Query()
	f.OrderBy = nil
	f.Select.Distinct = false
	return prog.Derive(&f)
}

// orderStream is one page of an ordered stream.
type orderStream struct {
	r    storage.Reader
	c    *containerRecord
	s    *itemScope
	now  time.Time
	st   *readStats
	rows *eval.Program
	o    *plan.Ordered
	desc bool
	// win, when set, is the DISTINCT's TOP or OFFSET and LIMIT: the rows
	// of the stream the page returns.
	win *rowWindow
	// keys are the ORDER BY keys when there are several (orderkeys.go);
	// tiesDesc orders equal keys backwards, when any key is descending.
	keys     []plan.OrderKey
	tiesDesc bool
	// distinct, for SELECT DISTINCT … ORDER BY e (distinctKeyed), is the
	// whole query, which sorts a group of values the index does not tell
	// apart and drops its repeats (distinctWalk). grouped is set when its
	// rows hold more than e, so that a group of one value may make
	// several (groupDistinct).
	distinct *eval.Program
	grouped  bool
	// elems is set for a DISTINCT of a JOIN's array elements
	// (distinctElems): a document of a group makes the group's row when
	// one of its rows is the group's value.
	elems bool
	// ties is set when the groups of exact values are read through the
	// path's tie entries (absent.go) rather than collected and sorted.
	ties bool
	// groupComp, when set, is the composite index that may order the
	// groups by the other keys (groupComposite, coveredGroup), walked
	// backwards when groupReverse: the walk then counts a group's entries
	// in the scope, and sortedGroup collects their locations only when the
	// composite does not cover the group.
	groupComp    *compositeIndex
	groupReverse bool
	prefix       []byte // the path's entries
	lo, hi       []byte // the walk's bounds, narrowed by the WHERE clause's terms
	// inValues, when not nil, holds the encoded values of an IN list on
	// the path (inListValues): the walk passes over the groups of the
	// other values between its bounds, the hull of the list's.
	inValues map[string]struct{}
	preds    []plan.Predicate // the WHERE clause's, which narrow a composite's walk too (groupSpan)
	next     cursor
	limit    int
	page     *FeedPage
	size     int
	// visited is set once the page has read a document through: from
	// then on, a budget that runs out ends the page early at the document
	// it is reading (cutShort) rather than failing it.
	visited bool
	// ahead holds the records read before their turn (fetch).
	ahead readAhead
	// feed, when set, takes the rows in place of the page (keyOrderGroups).
	feed *streamFeed
	// sets keeps, for a grouped DISTINCT's page that ends inside a group
	// or the documents without the key, the rows they made up to its end
	// (seenSets); from is what the page before kept for this one. A page
	// given them goes on from its position rather than reading the
	// documents before it again to know which rows they made.
	sets seenSets
	from *seenSet
	// gset holds the rows the group of gvalue made so far, across the
	// batches the walk reads it in; gseeded says it began with from.
	gset    *rowSet
	gvalue  []byte
	gseeded bool
	// groupDocs counts the documents groupDistinct read on this page
	// (groupBatch).
	groupDocs int
	// filter, when not nil, holds the locations of the items the
	// filter term's entries name (plan.FilteredStream): the walk reads
	// the record of no other entry's item, as no other passes.
	filter locSet
	// groupKept is set once the page has kept a group it ends inside
	// for the next (keepWithFilter), with the filter's locations.
	groupKept bool
	// kept takes and keeps what pages keep of their candidates; group0
	// is the sorted group the page before kept for this one (keptGroup).
	kept   candidateKeeper
	group0 *keptCandidates
	// pace, for a stream tried first, may stop it before a document
	// (walkPace).
	pace *walkPace
	// merged is set when the walk reads the path's entries under a
	// hierarchical prefix merged from its partitions' (prefixparts.go).
	merged bool
	// parse decodes a document: only the top-level properties the query
	// reads (docParser). stored says each row is the document itself
	// (wholeDocument): docRows then gives it as its stored bytes, a
	// string value put returns as it is, not the decoded value encoded
	// again.
	parse  func([]byte) (document.Value, error)
	stored bool
	// skip, when set, lets the walk count the documents of the rows its
	// window skips rather than read them (windowskip.go).
	skip *skipState
	// vals is the walk's use of a value filter (valuestream.go).
	vals *valueUse
}

// streamFeed takes the rows of the ordered stream in place of a page, for
// a GROUP BY that groups the documents as they come (keyOrderGroups).
type streamFeed struct {
	// take takes a row, and returns false to end the stream before it,
	// at the first document of a group.
	take func(document.Value) bool
	// parse reads a document: only what the grouping reads of it.
	parse func([]byte) (document.Value, error)
}

// fetch reads ahead, in key order, the records of the first n of locs
// (at least one, at most aheadMax), the items the walk reads next, unless
// the first was read ahead already.
func (w *orderStream) fetch(locs [][]byte, n int) error {
	if len(locs) == 0 {
		return nil
	}
	if _, ok := w.ahead.recs[string(locs[0])]; ok {
		return nil
	}
	return w.ahead.fetch(w.r, w.c, locs[:min(len(locs), max(n, 1), aheadMax)], w.st)
}

// room is how many records the walk reads ahead at once: as many as the
// page takes rows, less under a JOIN, whose documents may make several
// (readStats.want, set by the page).
func (w *orderStream) room() int {
	if w.st.want != nil {
		return w.st.ahead()
	}
	return w.limit - len(w.page.Items)
}

// streamOrdered runs one page of the ordered stream o from cur; prog is
// the query without its window, when it has one (win). feed, when not
// nil, takes the rows in place of the page, which then gets only the
// continuation: at the start of the group whose first row feed refused,
// or where the page's time or work ran out.
func streamOrdered(r storage.Reader, c *containerRecord, prog *eval.Program, params map[string]document.Value, qa *queryAccess, s *itemScope, now time.Time, st *readStats, cur, next cursor, limit int, win *rowWindow, feed *streamFeed, sets seenSets, kept candidateKeeper, page *FeedPage) error {
	q, o := prog.Query(), qa.stream
	rows, err := withoutOrder(prog)
	if err != nil {
		return queryError(err)
	}
	if !rows.Streaming() {
		return errBadContinuation
	}
	prefix := orderPrefix(c, o.Path, s)
	preds := plan.Predicates(q, params)
	lo, hi := pathBounds(prefix, preds, o.Path)
	if _, elems := distinctElems(q); elems {
		// The terms on the elements' path need not bound the rows'
		// values (streamShape): the walk reads them all.
		lo, hi = prefix, prefixEnd(prefix)
	}
	w := &orderStream{r: r, c: c, s: s, now: now, st: st, rows: rows, o: o, desc: q.OrderBy[0].Desc,
		prefix: prefix, lo: lo, hi: hi, next: next, limit: limit, page: page, win: win, feed: feed, preds: preds, pace: qa.walk}
	if _, elems := distinctElems(q); !elems {
		w.inValues = inListValues(preds, o.Path)
	}
	// A DISTINCT compares its rows, and a GROUP BY's feed groups them:
	// those take decoded documents.
	w.stored = wholeDocument(q) && !q.Select.Distinct && feed == nil
	w.parse = docParser(q, w.stored)
	if w.win.done() {
		return nil
	}
	if w.merged, err = mergesParts(r, c, o.Path, s, st); err != nil {
		return err
	}
	if q.Select.Distinct {
		_, w.elems = distinctElems(q)
		w.distinct, w.grouped = prog, groupedDistinct(q)
		if w.grouped && sets.keeper != nil {
			w.sets, w.from = sets, sets.take(cur)
			defer func() { w.gset.release() }()
		}
	}
	if len(q.OrderBy) > 1 {
		w.keys = orderKeys(q)
		w.tiesDesc = slices.ContainsFunc(w.keys, func(k plan.OrderKey) bool { return k.Desc })
		w.groupComp, w.groupReverse, _ = groupComposite(c, s, w.keys)
	}
	w.kept = kept
	var took *keptCandidates // what the page before kept, taken once
	if w.keys != nil && w.distinct == nil && kept.k != nil {
		// A page that ends inside a group it sorted keeps the group's
		// members from there for the next (keepGroup), and a filtered
		// stream's locations with them.
		k, err := kept.take(cur, next.access, s, st)
		if err != nil {
			return err
		}
		took = k
		if k != nil && k.group != nil {
			w.group0 = k
		}
		w.next.kept = newKeptID()
	}
	var missed int64 // the records the pages before read for nothing, kept (valueUse)
	if (len(o.Filter) > 0 || o.FilterUnion || qa.byValues) && (w.distinct == nil || distinctByKey(q)) {
		k := took
		if w.keys == nil {
			var err error
			if k, err = kept.take(cur, next.access, s, st); err != nil {
				return err
			}
		}
		if k != nil {
			w.filter, missed = k.set, k.spent
		}
		if w.filter == nil && qa.spanLocs != nil {
			w.filter = locSetOf(qa.spanLocs)
		}
		if w.filter == nil && o.FilterUnion {
			if w.filter, err = unionFilterLocs(r, c, q, params, s, st); err != nil {
				return err
			}
		}
		if w.filter == nil && qa.byValues {
			if w.filter, err = valueFilterLocs(r, c, q, params, now, s, st); err != nil {
				return err
			}
		}
		if terms := plan.Terms(preds); w.filter == nil && len(o.Filter) > 0 && o.Filter[0] < len(terms) {
			if u := filterComposite(c, q, params, terms, o); u != nil && qa.plan == nil {
				// A later page that finds no locations kept: a
				// composite span within the term's holds no more.
				if w.filter, err = compositeFilterLocs(r, c, u, terms, s, st); err != nil {
					return err
				}
			}
			if w.filter == nil {
				if w.filter, err = filterLocs(r, c, terms[o.Filter[0]], s, qa.filter, st); err != nil {
					return err
				}
			}
		}
		if w.filter != nil && kept.k != nil {
			w.next.kept = newKeptID()
			defer func() {
				if page.Continuation != "" && !w.groupKept {
					k := &keptCandidates{set: w.filter}
					if w.vals != nil {
						k.spent = w.vals.misses
					}
					kept.keep(w.next, k)
				}
			}()
		}
	}
	if qa.access == plan.OrderedStream && w.keys == nil && w.distinct == nil && feed == nil && kept.k != nil {
		terms := plan.Terms(preds)
		if f := streamFilter(c, q, s, terms, o); len(f) > 0 {
			k, err := kept.take(cur, next.access, s, st)
			if err != nil {
				return err
			}
			var spent int64
			if k != nil {
				spent = k.spent
			}
			defer w.filterAfterWalk(kept, terms[f[0]], spent)
		}
	}
	if qa.access == plan.OrderedStream && !o.FilterUnion {
		// The group a page ends inside is handed on under the page's
		// token: a walk of several keys tests values on its path only.
		// A term's filter after the walk (filterAfterWalk) keeps its own
		// count of the records read for nothing.
		if w.distinct == nil && !w.elems && feed == nil && w.filter == nil {
			if w.vals, err = newValueUse(r, c, q, params, now, s, o.Path, qa.total, w.keys == nil); err != nil {
				return err
			}
			if w.vals != nil {
				w.vals.carry = len(streamFilter(c, q, s, plan.Terms(preds), o)) == 0
			}
			if w.vals != nil && w.vals.values != nil && w.vals.carry {
				// The records the pages before read for nothing.
				k, err := kept.take(cur, next.access, s, st)
				if err != nil {
					return err
				}
				if k != nil {
					w.vals.misses = k.spent
				}
			}
			defer w.keepValues(kept)
		}
	} else if qa.access == plan.FilteredStream && w.filter != nil && !qa.byValues && w.distinct == nil && !w.elems && feed == nil {
		// A stream filtered by a term's items, or an OR's: the value
		// filter's items, once collected, narrow them (groupRows), and
		// the page hands on what is left.
		if w.vals, err = newValueUse(r, c, q, params, now, s, o.Path, qa.total, w.keys == nil); err != nil {
			return err
		}
		if w.vals != nil {
			w.vals.misses = missed
		}
	}
	if err := w.countSkips(params); err != nil {
		return err
	}
	// Within a partition or a prefix, equal values come in location
	// order, the order of the path's own entries. A value's tie entries
	// are the range's: over the partitions a filter lists, whose entries
	// the walk merges by sequence, a group comes in _rid order from
	// those instead (entriesInTieOrder), a batch at a time.
	w.ties = w.keys == nil && (w.distinct == nil || w.grouped) && (s.kind == plan.ScopeAll || s.kind == plan.ScopeRange) && c.tiesReady(o.Path) &&
		!(w.merged && s.listed != nil)
	phases := []byte{phaseUndefined, phaseWalk}
	if w.desc {
		phases = []byte{phaseWalk, phaseUndefined}
	}
	pos, err := w.resolveWalkPos(cur.pos)
	if err != nil {
		return err
	}
	if pos != nil {
		i := slices.Index(phases, pos[0])
		if i < 0 {
			return errBadContinuation
		}
		phases = phases[i:]
	}
	if !o.Undefined || w.vals != nil && w.vals.onPath != nil {
		// A token may come from the query with another resume filter
		// (see fingerprintText), under which the phase was needed. A
		// value filter on the path passes no document without it.
		if pos != nil && pos[0] == phaseUndefined {
			pos = nil
		}
		phases = slices.DeleteFunc(phases, func(p byte) bool { return p == phaseUndefined })
	}
	for _, ph := range phases {
		var more bool
		switch {
		case ph == phaseUndefined && w.keys != nil:
			more, err = w.undefinedSorted(pos, cur.skip)
		case ph == phaseUndefined:
			var from []byte
			if pos != nil {
				from = pos[1:]
			}
			more, err = w.undefined(from, cur.skip)
		default:
			more, err = w.walk(pos, cur.skip)
		}
		if err != nil || !more {
			return err
		}
		pos = nil
	}
	return nil
}

// put returns row on the page, unless the window skips it, and reports
// false, taking nothing, when the page is full: it holds its rows, its
// window is done, or the row would take it past maxPageBytes, as the
// service bounds a response (a row is at most eval.MaxRowBytes, which is
// that bound, so a page of one row is within it).
func (w *orderStream) put(row document.Value) bool {
	if w.feed != nil {
		return w.feed.take(row)
	}
	if len(w.page.Items) == w.limit || w.win.done() {
		return false
	}
	if !w.win.take() {
		return true
	}
	var b []byte
	if w.stored {
		b = []byte(row.Str()) // the document's stored bytes (docRows)
	} else {
		b = row.JSON()
	}
	if len(w.page.Items) > 0 && w.size+len(b) > maxPageBytes {
		w.win.untake()
		return false
	}
	w.page.Items = append(w.page.Items, b)
	w.size += len(b)
	return true
}

// stop ends the page with a continuation at pos, skip, unless the window
// has made all its rows.
func (w *orderStream) stop(pos []byte, skip int) {
	if w.win.done() {
		return
	}
	if w.win != nil {
		w.next.made = w.win.made
	}
	if w.feed != nil {
		pos, skip = w.groupStart(pos), 0
	}
	w.next.pos, w.next.skip = compactWalkPos(w.withoutFirstKey(pos)), skip
	w.page.Continuation = w.next.String()
}

// docRows returns the document of the record at loc and its rows, or ok
// false when the item is expired, outside the scope, or its document is
// not one keep takes (checked before the query is evaluated on it). Its
// evaluation errors are the evaluator's own (see cutShort).
func (w *orderStream) docRows(loc []byte, rec *itemRecord, keep func(document.Value) bool) (document.Value, []document.Value, bool, error) {
	if err := w.rows.Budget().Spend(1); err != nil {
		return document.Undef, nil, false, err
	}
	if w.pace != nil {
		if err := w.pace.admit(rec.detach); err != nil {
			return document.Undef, nil, false, err
		}
	}
	if w.c.expired(rec, w.now) || !w.s.keeps(rec) {
		return document.Undef, nil, false, nil
	}
	parse := w.parse
	if w.feed != nil {
		parse = w.feed.parse
	}
	doc, err := parse(rec.json)
	if err != nil || !keep(doc) {
		return document.Undef, nil, false, err
	}
	rows, err := w.rows.Rows(doc, docMeta(loc))
	if err != nil {
		return document.Undef, nil, false, err
	}
	if w.stored && len(rows) == 1 {
		// The row is the document, decoded only in part (parse): its
		// stored bytes stand for it.
		rows[0] = document.Str(string(rec.json))
	}
	if w.pace != nil && len(rows) > 0 {
		w.pace.hits++
	}
	return doc, rows, true, nil
}

// cutShort reports whether err, met reading a document, ends the page
// early at that document: the budget ran out of time or work, and the
// page has read a document through, so its continuation moves on.
func (w *orderStream) cutShort(err error) bool {
	return w.visited && eval.Exhausted(err)
}

// undefined streams the rows of the scope's documents without the
// property, in scan order (backwards when descending), from scan position
// from (nil: the start). It reports false when the page filled.
func (w *orderStream) undefined(from []byte, skip int) (bool, error) {
	if w.grouped {
		return w.undefinedDistinct(from, skip)
	}
	if from == nil && w.skip != nil && w.skip.undefined && w.win.made < w.win.from {
		at, end, err := w.skipUndefined()
		if err != nil || end {
			return err == nil, err
		}
		from, skip = at, 0
	}
	filled := false
	err := w.undefinedSource(w.desc)(from, func(pos, loc []byte, rec *itemRecord) (bool, error) {
		first := 0
		if from != nil && bytes.Equal(pos, from) {
			first = skip
		}
		_, rows, ok, err := w.docRows(loc, rec, w.undefinedKey)
		if w.cutShort(err) {
			w.stop(append([]byte{phaseUndefined}, pos...), first)
			filled = true
			return false, nil
		}
		w.visited = true
		if err != nil || !ok {
			return err == nil, queryError(err)
		}
		for i := first; i < len(rows); i++ {
			if !w.put(rows[i]) {
				w.stop(append([]byte{phaseUndefined}, pos...), i)
				filled = true
				return false, nil
			}
			if w.distinct != nil {
				// Every document without the property makes this row
				// (grouped distincts go through undefinedDistinct).
				return false, nil
			}
		}
		return true, nil
	})
	return !filled, err
}

// walkResume is where a walk resumes within its first group.
type walkResume struct {
	value []byte // nil: from the start of the walk
	mode  byte
	item  []byte // modeItem: the scan position of the item
	skip  int
	// past says the walk goes on after value's entries: the page read
	// the rest of its group from what the page before kept (keptGroup).
	past bool
}

func parseWalkPos(pos []byte, skip int) (walkResume, bool) {
	if pos == nil {
		return walkResume{}, true
	}
	n := indexValueLen(pos[1:])
	if n <= 0 || len(pos) < 2+n {
		return walkResume{}, false
	}
	wr := walkResume{value: pos[1 : 1+n], mode: pos[1+n], skip: skip}
	switch {
	case (wr.mode == modeItem || wr.mode == modeKeys) && len(pos) > 2+n:
		wr.item = pos[2+n:]
	case wr.mode == modeGroup && len(pos) == 2+n:
	default:
		return walkResume{}, false
	}
	return wr, true
}

// walk streams the rows of the documents the path's entries name, a group
// of equal values at a time, from the position pos. It reports false when
// the page filled.
func (w *orderStream) walk(pos []byte, skip int) (bool, error) {
	wr, ok := parseWalkPos(pos, skip)
	if !ok {
		return false, errBadContinuation
	}
	if w.distinct != nil {
		return w.distinctWalk(wr)
	}
	if pos == nil && w.skip != nil && w.win.made < w.win.from {
		at, end, err := w.skipRows()
		if err != nil || end {
			return err == nil, err
		}
		wr = at
	}
	if w.keys != nil && wr.value != nil && wr.mode == modeKeys && w.group0 != nil {
		from, err := w.groupFrom(wr)
		if err != nil {
			return false, err
		}
		if from != nil {
			more, kept, err := w.keptGroup(append([]byte{phaseWalk}, wr.value...), from, wr.skip)
			if err != nil || kept && !more {
				return more, err
			}
			if kept {
				wr = walkResume{value: wr.value, past: true}
			}
		}
	}
	it, err := w.walkIter(wr)
	if err != nil || it == nil {
		return it == nil && err == nil, err
	}
	defer it.Close()
	var value []byte
	var locs [][]byte
	resume := func() walkResume {
		if wr.value != nil && bytes.Equal(value, wr.value) {
			return wr
		}
		return walkResume{}
	}
	// stream streams a group: sorted by the further keys, or as it is.
	stream := func(value []byte, locs [][]byte, at walkResume) (bool, error) {
		if w.keys != nil {
			return w.sortedGroup(value, locs, at)
		}
		return w.group(value, locs, at)
	}
	// queued holds the groups of exact values the walk has passed and not
	// yet streamed, up to as many items as the page has room for, so that
	// their records are read together (drain): a store across the network
	// then reads a page of values each held by one item in one round trip,
	// not one a row.
	type queuedGroup struct {
		value []byte
		locs  [][]byte
		at    walkResume
	}
	var queued []queuedGroup
	var queuedLocs [][]byte
	drain := func() (bool, error) {
		if len(queued) == 0 {
			return true, nil
		}
		if err := w.fetch(queuedLocs, w.room()); err != nil {
			return false, err
		}
		for _, g := range queued {
			if more, err := stream(g.value, g.locs, g.at); err != nil || !more {
				return more, err
			}
		}
		queued, queuedLocs = queued[:0], queuedLocs[:0]
		return true, nil
	}
	flush := func() (bool, error) {
		if w.queues(value) {
			g := queuedGroup{value: value, locs: slices.Clone(locs), at: resume()}
			first := 0
			if w.keys == nil {
				// The records are read in the order group reads them.
				w.sortTies(g.locs)
				first = w.resumeIndex(g.locs, g.at)
			}
			queued = append(queued, g)
			if queuedLocs = append(queuedLocs, g.locs[first:]...); len(queuedLocs) < min(max(w.room(), 1), aheadMax) {
				return true, nil
			}
			return drain()
		}
		if more, err := drain(); err != nil || !more {
			return more, err
		}
		return stream(value, locs, resume())
	}
	base := len(w.prefix)
	var seek []byte // where the next step seeks to, past a value read through its ties
	step := func() bool {
		if k := seek; k != nil {
			seek = nil
			return it.SeekGE(k)
		}
		return it.Next()
	}
	read := 0    // the entries of the group read so far
	outside := 0 // the entries outside the scope read in a row
	for ok := it.First(); ok; ok = step() {
		w.st.entries++
		k := it.Key()
		loc, ok := entryLoc(k, base)
		if !ok {
			continue
		}
		v := k[base : len(k)-len(loc)]
		if value != nil && !bytes.Equal(v, value) {
			if more, err := flush(); err != nil || !more {
				return more, err
			}
			value, locs = nil, locs[:0]
		}
		if value == nil {
			if outsideList(w.inValues, v) {
				// A value between an IN list's: past its entries.
				seek = w.pastGroup(v)
				continue
			}
			if skip, past := w.vals.skips(w.prefix, v, w.desc); skip {
				seek = past
				continue
			}
			value, read, outside = bytes.Clone(v), 0, 0
		}
		if !w.s.holds(loc) {
			if outside++; outside >= skimOutside {
				seek, outside = w.pastOutside(value, loc), 0
			}
		} else {
			outside = 0
		}
		if w.s.holds(loc) && w.admits(loc) {
			if len(locs) == 1 && w.groupComp != nil {
				// A group of several items the composite orders whole:
				// walked through it from the position, then on past the
				// value's entries. A group of one needs no order, and is
				// read with the groups around it (drain).
				if more, err := drain(); err != nil || !more {
					return more, err
				}
				more, covered, err := w.coveredGroup(value, resume())
				if err != nil || covered && !more {
					return false, err
				}
				if covered {
					seek, value, locs = w.pastGroup(value), nil, locs[:0]
					continue
				}
			}
			locs = append(locs, bytes.Clone(loc))
			if w.inBatches() && exactValue(value) && len(queuedLocs)+len(locs) >= min(max(w.room(), 1), aheadMax) {
				if more, err := drain(); err != nil || !more {
					return more, err
				}
				if more, err := w.group(value, locs, resume()); err != nil || !more {
					return more, err
				}
				locs = locs[:0]
			}
		}
		if read++; read > tieGroupMin && w.ties && exactValue(value) {
			// A large group: its documents in _rid order through its tie
			// entries, then on past the value's entries to the next value
			// (backwards: the last key before the value's, as no entry is
			// the bare value).
			at := walkResume{}
			if wr.value != nil && bytes.Equal(value, wr.value) {
				at = wr
			}
			if more, err := drain(); err != nil || !more {
				return more, err
			}
			if more, err := w.tieGroup(value, at); err != nil || !more {
				return more, err
			}
			seek, value, locs = w.pastGroup(value), nil, locs[:0]
		}
	}
	if err := it.Err(); err != nil {
		return false, err
	}
	if value != nil {
		if more, err := flush(); err != nil || !more {
			return more, err
		}
	}
	return drain()
}

// queues reports whether the walk may hold back the group of an exact
// value to read its records with the next groups' (walk), on a walk not
// paced as a stream tried first, whose page may stop before a document.
func (w *orderStream) queues(value []byte) bool {
	return exactValue(value) && w.pace == nil
}

// walkIter opens the walk's iterator at the group it resumes in (nil when
// the walk's bounds leave nothing from there).
func (w *orderStream) walkIter(wr walkResume) (storage.Iterator, error) {
	lo, hi := w.lo, w.hi
	if wr.value != nil {
		k := append(bytes.Clone(w.prefix), wr.value...)
		switch {
		case wr.past && !w.desc:
			k = prefixEnd(k)
		case w.fromItem(wr):
			k = append(k, wr.item...)
		}
		if w.desc && wr.past {
			if bytes.Compare(k, hi) < 0 {
				hi = k
			}
		} else if w.desc {
			if e := prefixEnd(k); bytes.Compare(e, hi) < 0 {
				hi = e
			}
		} else if bytes.Compare(k, lo) > 0 {
			lo = k
		}
		if bytes.Compare(lo, hi) >= 0 {
			return nil, nil
		}
	}
	if w.merged {
		return newPartsIter(w.r, w.c, w.o.Path, w.s, w.prefix, lo, hi, w.desc)
	}
	return w.r.NewIter(storage.IterParams{Lower: lo, Upper: hi, Reverse: w.desc})
}

// fromItem reports whether the walk resumes at the position's item rather
// than at its group's first entry: when the group's entries come in the
// evaluator's order of ties (entriesInTieOrder; the item is its scan
// position, scanPos), and the page needs nothing of the
// documents before the item: an ORDER BY of one key, or a grouped
// DISTINCT whose page before kept the rows the group made before it
// (from).
func (w *orderStream) fromItem(wr walkResume) bool {
	if wr.mode != modeItem || wr.item == nil || !exactValue(wr.value) || !w.entriesInTieOrder() {
		return false
	}
	if w.grouped {
		return w.from != nil
	}
	return w.inBatches()
}

// inBatches reports whether the walk of an ORDER BY of one key may stream
// a group of an exact value a batch at a time, its entries coming in the
// evaluator's order of ties (entriesInTieOrder), so that a page reads no
// further into a large group than its rows take it.
func (w *orderStream) inBatches() bool {
	return w.keys == nil && w.distinct == nil && w.feed == nil && w.entriesInTieOrder()
}

// entriesInTieOrder reports whether the entries of a value come in the
// evaluator's order of ties, so that a group may be read a batch at a time:
// in location order within a partition or a prefix, and in _rid order from
// the listed partitions' entries merged by sequence (listScope).
func (w *orderStream) entriesInTieOrder() bool {
	return w.s.kind == plan.ScopePartition || w.s.kind == plan.ScopePrefix || w.merged && w.s.listed != nil
}

// pastGroup is the key the walk seeks to after the entries of value
// (backwards: the bare value, which sorts before them and is no entry).
// pastOutside returns where the walk seeks to from the entry of value at
// loc, outside the scope (seekOutside).
func (w *orderStream) pastOutside(value, loc []byte) []byte {
	return seekOutside(w.prefix, value, loc, w.s, w.desc)
}

// seekOutside returns where a walk of the entries under prefix (backwards
// when desc) seeks to from the entry of value at loc, outside scope s: a
// value's entries are in the order of their locations, and the scope's
// locations are one span of them, so the entries from there on (in the
// walk's direction) outside the scope lie either before the span, whose
// start it seeks to, or past it, when it seeks past the value. Only
// entries outside the scope are passed over.
func seekOutside(prefix, value, loc []byte, s *itemScope, desc bool) []byte {
	k := append(bytes.Clone(prefix), value...)
	before := bytes.Compare(loc, s.lo) < 0
	switch {
	case before && !desc:
		return append(k, s.lo...)
	case !before && desc && s.hi != nil:
		// Backwards, the last key at or before it.
		return append(k, s.hi...)
	case desc:
		return k // backwards, the last key before the value's
	}
	return prefixEnd(k)
}

// valueInScope returns the span of the walk's entries of value whose
// locations the scope holds.
func (w *orderStream) valueInScope(value []byte) (lo, hi []byte) {
	k := append(bytes.Clone(w.prefix), value...)
	lo, hi = append(bytes.Clone(k), w.s.lo...), prefixEnd(k)
	if w.s.hi != nil {
		hi = append(k, w.s.hi...)
	}
	return lo, hi
}

// skimOutside is how many entries outside the scope in a row the walk
// steps through before it seeks past them (pastOutside): a step costs a
// small part of a seek, and a scope that is a small part of the
// container (a hierarchical prefix, one range of many) would have each
// value's entries read whole.
const skimOutside = 16

// inListValues returns the encoded values of an IN list of preds on
// path, when each is a value the index keeps alone (exactValue); nil
// when there is none, or a value another may share.
func inListValues(preds []plan.Predicate, path []string) map[string]struct{} {
	for _, p := range preds {
		if p.Op != plan.In || !slices.Equal(p.Path, path) {
			continue
		}
		set := make(map[string]struct{}, len(p.Values))
		for _, v := range p.Values {
			k, ok := appendIndexValue(nil, v)
			if !ok || !exactValue(k) {
				return nil
			}
			set[string(k)] = struct{}{}
		}
		return set
	}
	return nil
}

// outsideList reports whether the encoded value is none of an IN list's
// (inListValues; a nil set holds every value): no document of its group
// can pass the filter.
func outsideList(set map[string]struct{}, value []byte) bool {
	if set == nil || !exactValue(value) {
		return false
	}
	_, ok := set[string(value)]
	return !ok
}

func (w *orderStream) pastGroup(value []byte) []byte { return pastValue(w.prefix, value, w.desc) }

// pastValue is where a walk of the entries under prefix seeks to go on
// past those of the encoded value: the first key after them, or
// backwards (desc) the bare value, which sorts before them all.
func pastValue(prefix, value []byte, desc bool) []byte {
	k := append(bytes.Clone(prefix), value...)
	if !desc {
		k = prefixEnd(k)
	}
	return k
}

// distinctWalk streams the rows of SELECT DISTINCT … ORDER BY e
// (distinctKeyed) from wr. When the rows are e alone (distinctByKey),
// every row of a group of an exact value is the same, so the group makes
// one row, of the first of its documents in the scope that passes the
// filter. The walk steps through a group's entries up to distinctSkim of
// them and seeks past the rest; it gathers as many groups as the page
// still has room for and reads the first document of each in one batch
// (distinctRows). A page then reads about an entry or a few and a
// document per row, wherever it starts. A position is the group's value
// with modeGroup and, in skip, how many of the group's rows went out
// before it. When the rows hold more than e, a group is read document by
// document, a group at a time (groupDistinct), and a position within it
// is that of a document (modeItem). A group of values the index does not
// tell apart is read whole, and the query run over it sorts its rows and
// drops their repeats.
func (w *orderStream) distinctWalk(wr walkResume) (bool, error) {
	if wr.value != nil && wr.mode != modeGroup && !(w.grouped && wr.mode == modeItem) {
		return false, errBadContinuation
	}
	it, err := w.walkIter(wr)
	if err != nil || it == nil {
		return it == nil && err == nil, err
	}
	defer it.Close()
	base := len(w.prefix)
	var groups []distinctGroup
	var value []byte // the value of the entries being read
	read := 0        // the entries of value read
	ok := it.First()
	for ok {
		w.st.entries++
		k := it.Key()
		loc, good := entryLoc(k, base)
		if !good {
			ok = it.Next()
			continue
		}
		if v := k[base : len(k)-len(loc)]; value == nil || !bytes.Equal(v, value) {
			value, read = bytes.Clone(v), 0
			var at walkResume
			if wr.value != nil && bytes.Equal(value, wr.value) {
				at = wr
			}
			if at.mode == modeGroup && at.skip > 0 && w.oneRow(value) {
				// Its row went out on an earlier page.
				ok = it.SeekGE(w.pastGroup(value))
				continue
			}
			// As many groups as the page has rows still to make, and
			// the one that tells whether more follow; when a group may
			// make many rows, as many groups as the page has room for
			// their documents (each makes one row at most), so that
			// their records are read together.
			gather := min(max(w.room(), 0)+1, aheadMax)
			if w.grouped {
				gather = len(groups)
				if w.holdsGroups(groups) {
					gather++
				}
			}
			if len(groups) >= gather {
				if more, err := w.distinctRows(groups); err != nil || !more {
					return more, err
				}
				groups = groups[:0]
			}
			groups = append(groups, distinctGroup{value: value, at: at})
		}
		g := &groups[len(groups)-1]
		if w.s.holds(loc) && w.admits(loc) {
			g.locs = append(g.locs, bytes.Clone(loc))
			if w.grouped && w.entriesInTieOrder() && exactValue(value) && len(g.locs) >= w.groupBatch() {
				// A batch of a group whose entries come in order: the
				// page reads no further into the group than its rows
				// take it.
				if more, err := w.distinctRows(groups[:len(groups)-1]); err != nil || !more {
					return more, err
				}
				groups = append(groups[:0], *g)
				g = &groups[0]
				if more, err := w.groupDistinct(g); err != nil || !more {
					return more, err
				}
				g.locs = g.locs[:0]
			}
		}
		if read++; read >= distinctSkim && w.oneRow(value) {
			g.rest = bytes.Clone(k)
			ok = it.SeekGE(w.pastGroup(value))
			continue
		}
		if read > tieGroupMin && w.grouped && w.ties && exactValue(value) {
			// A large group: its documents in _rid order through its
			// tie entries, then on past the value's entries.
			if more, err := w.distinctRows(groups[:len(groups)-1]); err != nil || !more {
				return more, err
			}
			if more, err := w.tieDistinct(g); err != nil || !more {
				return more, err
			}
			groups = groups[:0]
			ok = it.SeekGE(w.pastGroup(value))
			continue
		}
		ok = it.Next()
	}
	if err := it.Err(); err != nil {
		return false, err
	}
	return w.distinctRows(groups)
}

// distinctSkim is how many entries of a group of an exact value the
// distinct walk steps through before it seeks past the rest: a step costs
// a small part of a seek, which over PostgreSQL may be a round trip.
const distinctSkim = 16

// oneRow reports whether every document of the group of value makes the
// same row, so that the distinct walk reads one of them.
func (w *orderStream) oneRow(value []byte) bool { return !w.grouped && exactValue(value) }

// distinctGroup is a group of equal values the distinct walk gathered.
type distinctGroup struct {
	value []byte
	at    walkResume // where the page resumes in the group, if it does
	locs  [][]byte   // the locations in the scope of the entries read
	// rest, when set, is the last entry read of a group the walk sought
	// past: its further entries may hold the document that makes its
	// row.
	rest []byte
}

// groupBatch is how many documents of one group of equal values the walk
// reads at once: as many as the page has room for rows, and for a grouped
// DISTINCT that many times the documents the page read for each of its
// rows so far (groupDocs), as its documents make few rows each and the
// room counts rows. Near the end of a page the room is a few rows, and a
// batch of a few documents is a round trip over PostgreSQL.
func (w *orderStream) groupBatch() int {
	n := max(w.room(), 1)
	if w.grouped && w.groupDocs > 0 {
		n *= max(w.groupDocs/max(len(w.page.Items), 1), 1)
	}
	return min(n, aheadMax)
}

// holdsGroups reports whether a grouped DISTINCT's walk may hold groups,
// those gathered and one more, to read their records together: when they
// are groups of exact values from their start, as many documents as the
// page has room for rows at most.
func (w *orderStream) holdsGroups(groups []distinctGroup) bool {
	n := 0
	for _, g := range groups {
		if !exactValue(g.value) || g.at.value != nil {
			return false
		}
		n += len(g.locs)
	}
	return n < min(max(w.room(), 1), aheadMax)
}

// distinctRows returns the rows of groups, in order, reading the first
// document of each group of an exact value in one batch (for a grouped
// DISTINCT, the groups' documents, as many as the page has room for rows).
// It reports false when the page filled.
func (w *orderStream) distinctRows(groups []distinctGroup) (bool, error) {
	stop := func(g *distinctGroup, skip int) (bool, error) {
		w.stop(append(append([]byte{phaseWalk}, g.value...), modeGroup), skip)
		return false, nil
	}
	var firsts [][]byte
	for i, g := range groups {
		switch {
		case w.oneRow(g.value) && len(g.locs) > 0:
			firsts = append(firsts, g.locs[0])
		case w.grouped && exactValue(g.value) && g.at.value == nil:
			// Read whole, in the order groupDistinct reads them.
			w.sortTies(groups[i].locs)
			firsts = append(firsts, g.locs...)
		}
	}
	n := len(firsts)
	if w.grouped {
		n = w.room()
	}
	if err := w.fetch(firsts, n); err != nil {
		return false, err
	}
	for i := range groups {
		g := &groups[i]
		if g.at.value != nil && g.at.mode == modeItem && (!w.grouped || !exactValue(g.value)) {
			return false, errBadContinuation
		}
		if !exactValue(g.value) {
			rows, err := w.inexactDistinct(g.value, g.locs)
			if err != nil {
				return false, queryError(err)
			}
			for j := g.at.skip; j < len(rows); j++ {
				if !w.put(rows[j]) {
					return stop(g, j)
				}
			}
			continue
		}
		if w.grouped {
			if more, err := w.groupDistinct(g); err != nil || !more {
				return more, err
			}
			continue
		}
		row, found, err := w.exactDistinct(g)
		if w.cutShort(err) {
			return stop(g, 0)
		}
		if err != nil {
			return false, queryError(err)
		}
		if !found {
			continue
		}
		if !w.put(row) {
			return stop(g, 0)
		}
	}
	return true, nil
}

// exactDistinct returns the row of the group of an exact value: that of
// its first document in the scope that passes the filter, among the
// locations the walk gathered and then, for a group it sought past, the
// group's further entries.
func (w *orderStream) exactDistinct(g *distinctGroup) (document.Value, bool, error) {
	try := func(loc []byte) (document.Value, bool, error) {
		_, rows, kept, err := w.groupRows(g.value, loc)
		if err != nil {
			return document.Undef, false, err
		}
		w.visited = true
		if !kept || len(rows) == 0 {
			return document.Undef, false, nil
		}
		return rows[0], true, nil
	}
	for j, loc := range g.locs {
		// The first was read with the other groups' firsts, unless an
		// earlier group read it first (a JOIN's document holds
		// elements of several groups): it alone is read again. Past
		// it, the rest come in one batch.
		n := len(g.locs) - j
		if j == 0 {
			n = 1
		}
		if err := w.fetch(g.locs[j:], n); err != nil {
			return document.Undef, false, err
		}
		if row, found, err := try(loc); err != nil || found {
			return row, found, err
		}
	}
	if g.rest == nil {
		return document.Undef, false, nil
	}
	lo, hi := append(bytes.Clone(g.rest), 0), prefixEnd(append(bytes.Clone(w.prefix), g.value...))
	if w.desc {
		lo, hi = append(bytes.Clone(w.prefix), g.value...), g.rest
	}
	// The value's entries of the scope lie together, in the order of
	// their locations: the rest is read there alone.
	inLo, inHi := w.valueInScope(g.value)
	if bytes.Compare(inLo, lo) > 0 {
		lo = inLo
	}
	if bytes.Compare(inHi, hi) < 0 {
		hi = inHi
	}
	if bytes.Compare(lo, hi) >= 0 {
		return document.Undef, false, nil
	}
	it, err := w.r.NewIter(storage.IterParams{Lower: lo, Upper: hi, Reverse: w.desc})
	if err != nil {
		return document.Undef, false, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		w.st.entries++
		loc, good := entryLoc(it.Key(), len(w.prefix))
		if !good || !w.s.holds(loc) || !w.admits(loc) {
			continue
		}
		if row, found, err := try(bytes.Clone(loc)); err != nil || found {
			return row, found, err
		}
	}
	return document.Undef, false, it.Err()
}

// inexactDistinct returns the distinct rows, sorted, of the scope's
// documents at locs, whose entries hold value, one the index does not
// tell apart from others (exactValue).
func (w *orderStream) inexactDistinct(value []byte, locs [][]byte) ([]document.Value, error) {
	// In scan order: the evaluator orders ties by the order it is given
	// the documents in, backwards itself when descending.
	slices.SortFunc(locs, func(a, b []byte) int { return bytes.Compare(w.scanPos(a), w.scanPos(b)) })
	each := func(yield func(document.Value, eval.DocMeta) error) error {
		for j, loc := range locs {
			if err := w.fetch(locs[j:], len(locs)); err != nil {
				return err
			}
			// The query run over the group filters again; a document
			// the filter drops here need not reach it.
			doc, rows, kept, err := w.groupRows(value, loc)
			if err != nil {
				return err
			}
			if kept && len(rows) > 0 {
				if err := yield(doc, docMeta(loc)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	rows, err := w.distinct.RunEach(each, 0, nil)
	return w.groupValues(rows, value), err
}

// groupDistinct streams the distinct rows of the group of an exact value
// of a DISTINCT whose rows hold more than the key (orderStream.grouped),
// or of the batch of its documents at g.locs: the rows of its documents in
// the evaluator's order of ties, each that no document of the group made
// before it, as the evaluator keeps the first of equal rows. A page that
// resumes inside the group goes on from its position with the rows the
// page before kept (from), or, when they are not kept, reads the group's
// documents before its position again, to know which rows they made. It
// reports false when the page filled.
func (w *orderStream) groupDistinct(g *distinctGroup) (bool, error) {
	w.sortTies(g.locs)
	start := w.resumeIndex(g.locs, g.at)
	d, err := w.groupSet(g.value, g.at)
	if err != nil {
		return false, err
	}
	j0 := 0
	if w.gseeded {
		j0 = start
	}
	for j := j0; j < len(g.locs); j++ {
		loc := g.locs[j]
		ahead := w.groupBatch()
		if j < start {
			ahead = start - j
		}
		if err := w.fetch(g.locs[j:], ahead); err != nil {
			return false, err
		}
		pos := w.scanPos(loc)
		first := 0
		if j == start && g.at.item != nil && bytes.Equal(pos, g.at.item) {
			first = g.at.skip
		}
		stop := func(skip int) (bool, error) {
			w.stopKeeping(append(append(append([]byte{phaseWalk}, g.value...), modeItem), pos...), skip, d)
			return false, nil
		}
		_, rows, ok, err := w.groupRows(g.value, loc)
		if j >= start && w.cutShort(err) {
			return stop(first)
		}
		if err != nil {
			return false, queryError(err)
		}
		if j >= start {
			w.visited = true
			w.groupDocs++
		}
		if !ok {
			continue
		}
		if j < start {
			first = len(rows)
		}
		if more, err := d.emit(w, rows, first, stop); err != nil || !more {
			return more, err
		}
	}
	return true, nil
}

// undefinedDistinct streams the distinct rows of the documents without the
// key, for a DISTINCT whose rows hold more than the key, as groupDistinct
// does for a group: from the position from with the rows the page before
// kept, or else reading those before it again. It reports false when the
// page filled.
func (w *orderStream) undefinedDistinct(from []byte, skip int) (bool, error) {
	d := newRowSet(w.rows.Budget())
	defer d.release()
	var start []byte
	if from != nil {
		seeded, err := d.seed(&w.from)
		if err != nil {
			return false, err
		}
		if seeded {
			start = from
		}
	}
	filled := false
	err := w.undefinedSource(w.desc)(start, func(pos, loc []byte, rec *itemRecord) (bool, error) {
		before := from != nil && w.tieOrder(pos, from) < 0
		first := 0
		if from != nil && bytes.Equal(pos, from) {
			first = skip
		}
		stop := func(skip int) (bool, error) {
			w.stopKeeping(append([]byte{phaseUndefined}, pos...), skip, d)
			filled = true
			return false, nil
		}
		_, rows, ok, err := w.docRows(loc, rec, w.undefinedKey)
		if !before && w.cutShort(err) {
			return stop(first)
		}
		if err != nil {
			return false, queryError(err)
		}
		if !before {
			w.visited = true
		}
		if !ok {
			return true, nil
		}
		if before {
			first = len(rows)
		}
		return d.emit(w, rows, first, stop)
	})
	return !filled, err
}

// rowSet holds the rows a DISTINCT made within one group, its memory
// counted against the query's budget.
type rowSet struct {
	budget *eval.Budget
	seen   map[string]struct{}
	held   int
}

func newRowSet(b *eval.Budget) *rowSet { return &rowSet{budget: b, seen: map[string]struct{}{}} }

// seed makes the empty set d the rows *from holds, when it holds any,
// taking them (*from becomes nil), and reports whether it did.
func (d *rowSet) seed(from **seenSet) (bool, error) {
	set := *from
	if set == nil {
		return false, nil
	}
	*from = nil
	if err := d.budget.Hold(set.bytes); err != nil {
		return false, queryError(err)
	}
	d.seen, d.held = set.keys, set.bytes
	return true, nil
}

// groupSet returns the set of the rows the group of value made before the
// documents the walk gives it now: that of the batch before, of the same
// group; in the group the page resumes in (at), the rows the page before
// kept, when it kept them (w.gseeded then holds); else a new one.
func (w *orderStream) groupSet(value []byte, at walkResume) (*rowSet, error) {
	if w.gset != nil && bytes.Equal(w.gvalue, value) {
		return w.gset, nil
	}
	w.gset.release()
	w.gset, w.gvalue, w.gseeded = newRowSet(w.rows.Budget()), value, false
	if at.item == nil {
		return w.gset, nil
	}
	seeded, err := w.gset.seed(&w.from)
	w.gseeded = seeded
	return w.gset, err
}

// stopKeeping ends the page at pos and skip, inside a group or the
// documents without the key, as stop does, and keeps the rows made there
// before the position (d) for the page that resumes at it.
func (w *orderStream) stopKeeping(pos []byte, skip int, d *rowSet) {
	if w.sets.keeper == nil {
		w.stop(pos, skip)
		return
	}
	w.next.kept = newKeptID()
	w.stop(pos, skip)
	if w.page.Continuation == "" {
		return
	}
	w.sets.keep(&seenSet{id: w.next.kept, fp: w.next.fingerprint, pos: w.next.pos, skip: w.next.skip, keys: d.seen, bytes: d.held}, w.now)
}

// emit adds rows[first:] to the page, each that the set does not hold yet,
// and all of rows to the set; at a full page it returns stop of the row's
// index.
func (d *rowSet) emit(w *orderStream, rows []document.Value, first int, stop func(int) (bool, error)) (bool, error) {
	for i, row := range rows {
		k := string(eval.CanonicalKey(nil, row))
		if _, ok := d.seen[k]; ok {
			continue
		}
		if i >= first {
			if !w.put(row) {
				return stop(i)
			}
		}
		if err := d.budget.Hold(len(k) + seenKeyOverhead); err != nil {
			return false, queryError(err)
		}
		d.held += len(k) + seenKeyOverhead
		d.seen[k] = struct{}{}
	}
	return true, nil
}

func (d *rowSet) release() {
	if d != nil {
		d.budget.Release(d.held)
	}
}

// tieGroupMin is how many entries of a group the walk reads before it
// reads the group through its tie entries instead (when it may): a small
// group costs less read whole than a seek to its tie entries and a second
// entry per document.
const tieGroupMin = 64

// scanPos is the position of the item at loc in the scan order of the
// scope, which is the order the evaluator keeps equal keys in.
func (w *orderStream) scanPos(loc []byte) []byte { return w.s.scanPos(loc) }

// tieOrder compares two scan positions in the order the evaluator keeps
// equal keys in: scan order, backwards when descending (eval's sortRows).
func (w *orderStream) tieOrder(a, b []byte) int {
	if w.desc {
		a, b = b, a
	}
	return bytes.Compare(a, b)
}

// sortTies sorts the locations of a group's items in the order the
// evaluator keeps equal keys in.
func (w *orderStream) sortTies(locs [][]byte) {
	slices.SortFunc(locs, func(a, b []byte) int { return w.tieOrder(w.scanPos(a), w.scanPos(b)) })
}

// resumeIndex returns the index in locs, sorted by sortTies, of the first
// item at or after the position at within the group (0 without one).
func (w *orderStream) resumeIndex(locs [][]byte, at walkResume) int {
	if at.mode != modeItem || at.item == nil {
		return 0
	}
	i, _ := slices.BinarySearchFunc(locs, at.item, func(loc, item []byte) int { return w.tieOrder(w.scanPos(loc), item) })
	return i
}

// group streams the rows of the items at locs, whose entries hold the
// encoded value, in the evaluator's order, resuming at at.
func (w *orderStream) group(value []byte, locs [][]byte, at walkResume) (bool, error) {
	if at.mode == modeKeys && exactValue(value) {
		return false, errBadContinuation
	}
	w.sortTies(locs)
	if exactValue(value) {
		i := w.resumeIndex(locs, at)
		for j := i; j < len(locs); j++ {
			if err := w.fetch(locs[j:], w.room()); err != nil {
				return false, err
			}
			if more, err := w.exactMember(value, locs[j], at); err != nil || !more {
				return more, err
			}
		}
		return true, nil
	}
	// Values the index does not tell apart: read them all and sort them
	// as the evaluator does (the locations are in scan order already).
	type member struct {
		key  document.Value
		rows []document.Value
	}
	var ms []member
	for j, loc := range locs {
		if err := w.fetch(locs[j:], len(locs)); err != nil {
			return false, err
		}
		doc, rows, ok, err := w.groupRows(value, loc)
		if err != nil {
			return false, queryError(err)
		}
		if ok && len(rows) > 0 {
			ms = append(ms, member{key: doc.At(w.o.Path), rows: rows})
		}
	}
	slices.SortStableFunc(ms, func(a, b member) int {
		d := document.Compare(a.key, b.key)
		if w.desc {
			d = -d
		}
		return d
	})
	first := 0
	// from, for a GROUP BY fed the rows (streamFeed), is the key of the
	// group its last page ended before: a count of the rows before it
	// would shift with a write between the pages.
	var from *sortKey
	switch at.mode {
	case modeGroup:
		first = at.skip
	case modeKeys:
		k, ok := parseSortKey(at.item, 1)
		if !ok {
			return false, errBadContinuation
		}
		from = &k
	}
	n := 0
	for _, m := range ms {
		if from != nil {
			d := document.Compare(m.key, from.keys[0])
			if w.desc {
				d = -d
			}
			if d < 0 {
				continue
			}
		}
		for _, row := range m.rows {
			if n >= first {
				if !w.put(row) {
					pos := append(append([]byte{phaseWalk}, value...), modeGroup)
					if w.feed != nil {
						pos = appendSortKey(append(pos[:len(pos)-1], modeKeys), sortKey{keys: []document.Value{m.key}, pos: []byte{0}})
					}
					w.stop(pos, n)
					return false, nil
				}
			}
			n++
		}
	}
	return true, nil
}

// exactMember streams the rows of the item at loc in the group of the exact
// value, resuming at at. It reports false when the page filled.
func (w *orderStream) exactMember(value, loc []byte, at walkResume) (bool, error) {
	first := 0
	if at.item != nil && bytes.Equal(w.scanPos(loc), at.item) {
		first = at.skip
	}
	_, rows, ok, err := w.groupRows(value, loc)
	if w.cutShort(err) {
		p := append(append([]byte{phaseWalk}, value...), modeItem)
		w.stop(append(p, w.scanPos(loc)...), first)
		return false, nil
	}
	w.visited = true
	if err != nil {
		return false, queryError(err)
	}
	if !ok {
		return true, nil
	}
	for j := first; j < len(rows); j++ {
		if !w.put(rows[j]) {
			p := append(append([]byte{phaseWalk}, value...), modeItem)
			w.stop(append(p, w.scanPos(loc)...), j)
			return false, nil
		}
	}
	return true, nil
}

// tieGroup streams the rows of the scope's items with the exact value in
// _rid order (backwards when descending), through the path's tie entries,
// resuming at at: what group does for a range or the whole container
// without collecting the value's entries. It reports false when the page
// filled.
func (w *orderStream) tieGroup(value []byte, at walkResume) (bool, error) {
	if at.mode != modeItem {
		return false, errBadContinuation
	}
	return w.tieBatches(value, at.item, func(batch [][]byte) (bool, error) {
		if err := w.fetch(batch, len(batch)); err != nil {
			return false, err
		}
		for _, loc := range batch {
			if more, err := w.exactMember(value, loc, at); err != nil || !more {
				return more, err
			}
		}
		return true, nil
	})
}

// tieDistinct streams the distinct rows of the group g of an exact value,
// for a DISTINCT whose rows hold more than the key, through the path's tie
// entries (as tieGroup does for an ORDER BY), a batch at a time
// (groupDistinct): from the position when the page before kept the rows
// the group made before it (groupSet), else from the group's start.
func (w *orderStream) tieDistinct(g *distinctGroup) (bool, error) {
	var from []byte
	if g.at.item != nil && w.from != nil {
		from = g.at.item
	}
	return w.tieBatches(g.value, from, func(batch [][]byte) (bool, error) {
		g.locs = batch
		return w.groupDistinct(g)
	})
}

// tieBatches gives each the locations of the scope's items of value
// through the path's tie entries, in _rid order (backwards when
// descending) from the scan position from (nil: the start), as many at a
// time as the page has room for; each reports false to stop.
func (w *orderStream) tieBatches(value, from []byte, each func([][]byte) (bool, error)) (bool, error) {
	prefix := append(absentPrefix(indexPrefix(w.c), tieMarker, w.o.Path), value...)
	lo, hi := w.s.seqBounds(prefix)
	lo, hi = resumeBounds(lo, hi, prefix, from, w.desc)
	// The documents are read a page's worth at a time (fetch), their
	// entries collected first.
	var batch [][]byte
	emit := func() (bool, error) {
		more, err := each(batch)
		batch = batch[:0]
		return more, err
	}
	more := true
	err := scanRangeDir(w.r, lo, hi, w.desc, func(k, _ []byte) (bool, error) {
		w.st.entries++
		rest := k[len(prefix):]
		if len(rest) < 8 || !w.s.holds(rest[8:]) || !w.s.inListed(rest[8:]) || !w.admits(rest[8:]) {
			return true, nil
		}
		if batch = append(batch, bytes.Clone(rest[8:])); len(batch) < w.groupBatch() {
			return true, nil
		}
		var err error
		more, err = emit()
		return more && err == nil, err
	})
	if err == nil && more && len(batch) > 0 {
		more, err = emit()
	}
	return more, err
}

// groupRows reads the item at loc of the group of value and returns its
// document and rows; ok is false when it is gone, out of the scope, or its
// value is not the group's.
func (w *orderStream) groupRows(value, loc []byte) (document.Value, []document.Value, bool, error) {
	rec, ok, err := w.ahead.read(w.r, w.c, loc, w.st)
	if err != nil || !ok {
		return document.Undef, nil, false, err
	}
	if w.elems {
		// The rows the group's value makes: a document may hold
		// elements of other groups too.
		doc, rows, ok, err := w.docRows(loc, &rec, func(document.Value) bool { return true })
		return doc, w.groupValues(rows, value), ok, err
	}
	doc, rows, ok, err := w.docRows(loc, &rec, func(doc document.Value) bool { return encodes(doc.At(w.o.Path), value) })
	if err == nil && ok && len(rows) == 0 {
		if err = w.vals.missed(w.r, w.c, w.s, w.st); w.filter != nil && w.vals != nil && w.vals.set != nil {
			w.filter, w.vals.set = w.filter.within(w.vals.set), nil
		}
	}
	return doc, rows, ok, err
}

// groupValues returns rows, keeping under elems only those the index
// keeps as value.
func (w *orderStream) groupValues(rows []document.Value, value []byte) []document.Value {
	if !w.elems {
		return rows
	}
	var kept []document.Value
	for _, r := range rows {
		if encodes(r, value) {
			kept = append(kept, r)
		}
	}
	return kept
}

// undefinedSource reads the scope's documents that may lack the first
// ORDER BY property, in scan order (backwards with reverse): through the
// path's absence entries when they are complete, the whole scope
// otherwise.
func (w *orderStream) undefinedSource(reverse bool) itemSource {
	if w.o.Absent {
		return absentSource(w.r, w.c, w.s, w.o.Path, reverse, w.st)
	}
	return scanSourceDir(w.r, w.c, w.s, reverse, w.st)
}

// undefinedKey reports whether doc lacks the first ORDER BY property: the
// documents the scan phase streams.
func (w *orderStream) undefinedKey(doc document.Value) bool { return !doc.At(w.o.Path).IsDefined() }

// encodes reports whether the index keeps v under the encoded value.
func encodes(v document.Value, value []byte) bool {
	switch v.Kind() {
	case document.Array:
		return value[0] == tagArray
	case document.Object:
		return value[0] == tagObject
	}
	k, ok := appendIndexValue(nil, v)
	return ok && bytes.Equal(k, value)
}

// exactValue reports whether every value the index keeps as the encoded
// value is equal under document.Compare: true for scalars except numbers
// of magnitude 2^53 or more (the index keeps doubles, and distinct
// integers there share one).
func exactValue(value []byte) bool {
	switch value[0] {
	case tagNull, tagFalse, tagTrue, tagString:
		return true
	case tagNumber:
		f, _ := indexNumber(value)
		return math.Abs(f) < 1<<53
	}
	return false
}

// indexNumber is the number an encoded value holds (the inverse of
// orderedFloat), and false when it holds another type.
func indexNumber(value []byte) (float64, bool) {
	if len(value) < 9 || value[0] != tagNumber {
		return 0, false
	}
	u := binary.BigEndian.Uint64(value[1:9])
	if u>>63 == 1 {
		u &^= 1 << 63
	} else {
		u = ^u
	}
	return math.Float64frombits(u), true
}

// groupStart returns pos, the position of the first document of a GROUP
// BY's group (streamFeed), made the position of the group's start: the
// same keys with the least scan position. The next page then reads every
// document of the group, also one written between the pages before that
// document in the scan's order, which the document's own position would
// pass over.
func (w *orderStream) groupStart(pos []byte) []byte {
	least := []byte{0}
	at := -1
	switch {
	case len(pos) > 2 && pos[0] == phaseUndefined && pos[1] == modeKeys:
		at = 2
	case len(pos) > 1 && pos[0] == phaseWalk:
		n := indexValueLen(pos[1:])
		if n <= 0 || len(pos) < 2+n {
			return pos
		}
		switch pos[1+n] {
		case modeItem:
			return append(bytes.Clone(pos[:2+n]), least...)
		case modeKeys:
			at = 2 + n
		}
	}
	if at < 0 {
		return pos
	}
	k, ok := parseSortKey(pos[at:], max(len(w.keys), 1))
	if !ok {
		return pos
	}
	k.pos = least
	return appendSortKey(bytes.Clone(pos[:at]), k)
}
