package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"hash/maphash"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// queryAccess is the access path a page reads, ready to run.
type queryAccess struct {
	plan      *plan.Plan // what the planner weighed; nil on a resumed page
	access    plan.Access
	terms     []int
	composite int // the composite index's ordinal, for CompositeSpan and CompositeWalk
	src       itemSource
	stream    *plan.Ordered // for OrderedStream, which pages itself (streamOrdered)
	vector    *vectorOrder  // for VectorTop, the search the first page found (vectorShape)
	// words, for WordSpan, are the candidates the first page counted.
	words *wordCandidates
	// distances, for VectorTop, are the chosen documents' scores, which
	// the programs that make the page's rows take rather than compute.
	distances *eval.Distances
	// pace, for a scan tried first (plan.ScanFirstBounds), says how many
	// records it may read before the page is planned again, counting the
	// terms on while it reads (scanPace); nil otherwise.
	pace *scanPace
	// collected, for a page whose candidates are collected and sorted
	// before it reads them (locSource), holds them once it has; nil
	// otherwise (scanAfterCollect).
	collected *collection
	// kept, when not nil, holds the candidates the page before kept for
	// this one (keptCandidates), which it reads in place of collecting
	// them.
	kept *keptCandidates
	// filter, for a filtered stream's first page, is where the
	// collection of its filter's locations goes on from the count that
	// weighed the term; nil: from the start.
	filter *filterStart
	// gathered, for an index span's first page, holds the locations its
	// term's count gathered while it read every entry of the term, which
	// the page collects from rather than read them again; nil otherwise.
	gathered *gatheredLocs
	// spanLocs, for the first page of a composite span or of a stream
	// it filters (plan.Ordered.FilterComposite), holds the locations of
	// its span that the planner collected as it counted the span
	// (spanRead entries), which the page reads rather than collect them
	// again; nil otherwise.
	spanLocs [][]byte
	spanRead int64
	// walk, for a stream tried first, paces it by its filter terms'
	// counts (walkPace); nil otherwise (a TOP walk tried first is paced
	// as its source is built).
	walk *walkPace
	// counts are the counts of the filter's terms that weighed the plan;
	// nil on a resumed page or a point read.
	counts *termCounts
	// keys, when set, lists the candidates of src without their records,
	// for a window to count the rows it skips by (skipCounted).
	keys keySource
	// total is the container's items, which the plan was made for.
	total int64
	// byValues, for a filtered stream's later page, says it filters by
	// the locations of the items its value filter passes (valuePlace).
	byValues bool
}

// collection is what a page that collects its candidates collected: the
// locations in its order and the index entries read to find them (none
// for candidates kept by the page before), and how many entries
// collecting them reads (keptCandidates.cost).
type collection struct {
	locs    [][]byte
	entries int
	cost    int
}

// collecting wraps the locs of a collecting source so that the page
// keeps what they were and what they cost (queryAccess.collected).
func (qa *queryAccess) collecting(st *readStats, locs func() ([][]byte, error)) func() ([][]byte, error) {
	return func() ([][]byte, error) {
		if qa.kept != nil {
			qa.collected = &collection{locs: qa.kept.locs, cost: qa.kept.cost}
			return qa.kept.locs, nil
		}
		before := st.entries
		all, err := locs()
		read := st.entries - before
		if qa.gathered != nil {
			read = int(qa.gathered.entries)
		} else if qa.spanLocs != nil {
			read = int(qa.spanRead)
		} else if qa.words != nil {
			read = int(qa.words.entries)
		}
		qa.collected = &collection{locs: all, entries: read, cost: read}
		return all, err
	}
}

// probeLimit is how many entries of a term's spans are worth counting: at
// that many, walking them and reading the records they name in the scope
// already costs more than scanning the scope, so the span cannot win.
func probeLimit(s plan.Scope) int64 {
	frac := 1.0
	if s.Kind != plan.ScopeAll && s.ContainerItems > 0 {
		frac = math.Min(1, float64(s.Items)/float64(s.ContainerItems))
	}
	return int64(float64(s.Items)/(0.15+2.5*frac)) + 16
}

// smallScope is the size up to which a logical partition (or prefix) is
// read whole without counting index entries: reading it costs little, while
// a range's entries belong to the whole container, and the count's first
// seek alone may cost more (a span whose start has seen many deletions
// makes the store step over their tombstones).
const smallScope = 256

// planQuery chooses the access path of a page of limit rows. A first page
// asks the planner; a later page reads the path its cursor names, so every
// page of a query continues the same walk.
//
// Unless try is noScanFirst, a page whose terms all hold most of the
// container may be answered by a scan tried first, within a budget and
// paced by the terms' counts (queryAccess.pace); a page that runs out of
// either is planned again.
//
// counted, when not nil, holds the counts of the terms a scan tried first
// made before it stopped (queryAccess.pace), or a plan of a query of the
// same filter and no ORDER BY term (queryAccess.counts), which counting
// goes on from.
func (e *Engine) planQuery(r storage.Reader, c *containerRecord, total int64, prog *eval.Program, params map[string]document.Value, s *itemScope, now time.Time, st *readStats, limit int, resumed bool, cur cursor, try scanTry, counted *termCounts) (*queryAccess, error) {
	q := prog.Query()
	terms := plan.Terms(plan.Predicates(q, params))
	if prog.Ranked() {
		// A rank's statistics are those of every document the query
		// reads, so it reads its whole scope whatever the filter.
		terms = nil
	}
	ready := c.Index.Ready && !c.index.none
	if ready && !(resumed && (cur.access == plan.Scan || cur.access == plan.PointRead)) {
		// A page that may count or read its terms' entries.
		if err := readPrefixParts(r, c, terms, s, st); err != nil {
			return nil, err
		}
	}
	if resumed {
		for _, t := range cur.terms {
			if t >= len(terms) && !cur.access.Streams() {
				return nil, errBadContinuation
			}
		}
		if cur.access != plan.Scan && cur.access != plan.PointRead && cur.access != plan.VectorTop && cur.access != plan.WordSpan && (!ready || cur.indexVer != c.Index.Version && !entriesKept(c, q, params, terms, cur)) {
			return nil, errorf(BadRequest, "Invalid Continuation Token: the container's indexing policy changed since the query began; run the query again.")
		}
		qa := &queryAccess{access: cur.access, terms: cur.terms, composite: cur.composite}
		return qa, e.buildSource(r, c, total, prog, params, s, terms, now, st, limit, qa)
	}
	if vo, ok := vectorShape(c, prog, params); ok {
		p := plan.VectorPlan(s.kind, vo.term(), int64(vo.want))
		qa := &queryAccess{plan: &p, access: plan.VectorTop, vector: &vo}
		return qa, e.buildSource(r, c, total, prog, params, s, terms, now, st, limit, qa)
	}
	if ids, ok := pointIDs(terms); ok && s.kind == plan.ScopePartition && s.pk != nil {
		p := plan.PointPlan(s.kind, terms, len(ids))
		qa := &queryAccess{plan: &p, access: plan.PointRead}
		return qa, e.buildSource(r, c, total, prog, params, s, terms, now, st, limit, qa)
	}
	size, err := e.scopeSize(r, c, s, total)
	if err != nil {
		return nil, err
	}
	if wordShape(c, prog) {
		// A page that ends after rows documents, in a scope where a scan
		// tried first may pay (plan.ScanFirstBounds), tries it as it
		// would for the filter alone: a common word fills the page from
		// a few records, where counting its entries would cost many. A
		// page planned again after it reads the words.
		rows := scanRows(prog, params, limit)
		_, _, scanFirst := plan.ScanFirstBounds(size, rows, probeLimit(size))
		found := false
		var locs [][]byte
		var read wordRead
		if !scanFirst || try != scanFirstPaced {
			// Read alone while the term's candidates are few enough
			// (plan.WordBound; after a scan that did not fill the page,
			// as for a page that reads them all) and no index term of
			// the filter names fewer.
			bound := plan.WordBound(size, rows)
			if scanFirst {
				bound = plan.WordBound(size, 0)
			}
			if locs, read, found, err = wordLocs(r, c, s, q, params, bound, st); err != nil {
				return nil, err
			}
		}
		if found {
			_, narrower, err := narrowTermLocs(r, c, s, q, params, read.count, st)
			if err != nil {
				return nil, err
			}
			if !narrower {
				p := plan.WordPlan(s.kind, read.term(), read.entries, read.count)
				qa := &queryAccess{plan: &p, access: plan.WordSpan, words: &wordCandidates{locs: locs, entries: read.entries}}
				return qa, e.buildSource(r, c, total, prog, params, s, terms, now, st, limit, qa)
			}
		}
	}
	in := plan.Input{Scope: size, Terms: terms, Entries: make([]int64, len(terms))}
	if ready && !c.index.ts && c.index.tsListable(tsPath) {
		// _ts is indexed once a query on it asks (absent.go), with the
		// entries an ORDER BY on it will ask for next.
		if filters, orders := asksTs(q, terms); filters || orders {
			want := entryKinds{own: true}
			if orders {
				want.ties = len(q.OrderBy) == 1 && (s.kind == plan.ScopeAll || s.kind == plan.ScopeRange)
				want.parts = s.kind == plan.ScopePartition || s.listed != nil
			}
			e.wantAbsent(c, tsPath, want)
		}
	}
	probe := probeLimit(size)
	small := size.Items <= smallScope && (s.kind == plan.ScopePartition || s.kind == plan.ScopePrefix)
	if !prog.Streaming() {
		if err := e.orderedShapes(r, c, q, params, s, terms, limit, probe, st, &in); err != nil {
			return nil, err
		}
	}
	// The ORDER BY path's own term is counted last, up to what the
	// ordered path's estimate needs (plan.OrderedBound).
	orderTerm := -1
	if o := cmp.Or(in.Ordered, in.Stream); o != nil {
		orderTerm = o.Term
	}
	var weighed []int
	for i, t := range terms {
		if small || !ready || !c.index.indexes(t.Path) || (s.kind != plan.ScopeAll && s.kind != plan.ScopeRange && c.isKeyPath(t.Path)) {
			// A term on the partition key within a partition (or prefix)
			// scope holds for every item of the scope: the scope is the
			// better way to read it.
			in.Entries[i] = -1
			continue
		}
		if i != orderTerm {
			weighed = append(weighed, i)
		}
	}
	in.Composites = compositeUses(c, q, params, terms)
	for i := range in.Composites {
		u := &in.Composites[i]
		if comp, ok := c.policyComposite(u.Index.Ordinal); ok {
			u.Scoped = s.kind == plan.ScopePartition && (len(c.pk.paths) > 0 && pinsKey(c, u, terms) || partComposite(c, comp, s)) || prefixComposite(c, comp, s)
		}
	}
	// A composite walk weighs the terms it does not hold by their counts,
	// so a count stopped early would misjudge it.
	partners := !slices.ContainsFunc(in.Composites, func(u plan.CompositeUse) bool { return u.Ordered })
	// A lone term whose entries may not come in the scan's order (a range
	// may hold too many values to merge): its span, if chosen, collects
	// them, which its count gathers as it reads them (gatherFrom,
	// gatheredLocs). A scan tried first stops the gathering past its
	// first round (scanPace.more): where the scan fills the page, the
	// locations are for nothing, and a page planned after it gathers from
	// where the count has reached.
	lone := len(weighed) == 1 && in.Stream == nil && in.Ordered == nil && len(in.Composites) == 0 && !(singleValues(terms[weighed[0]]) && mayMerge(c, terms[weighed[0]], s))
	tc := counted
	if tc != nil && !slices.Equal(tc.idx, weighed) {
		// Counts of other terms (a plan whose ORDER BY path is a
		// filter's too counts that term last): counted afresh.
		tc = nil
	}
	if tc == nil {
		tc = newTermCounts(c, terms, weighed, s)
		if o := in.Stream; o != nil && len(o.Filter) > 0 {
			// Each term the stream may filter by: the page goes on
			// from the locations the chosen one's count gathered.
			for _, f := range o.Filter {
				tc.collectLocs(c, terms[f], f, s)
			}
		} else if lone {
			tc.gatherFrom(c, terms[weighed[0]], weighed[0], s)
		}
	}
	if s.kind == plan.ScopePartition && size.Items >= tieWishEntries || s.kind == plan.ScopePrefix && !s.manyParts && size.ContainerItems >= tieWishEntries {
		// A range of values in a large logical partition, or under a
		// hierarchical prefix of a few partitions in a large container:
		// the path's entries hold every partition's, so a page reads the
		// whole container's entries of the range, or scans the scope.
		// Its partition entries hold each partition's apart (partRange,
		// prefixRange).
		for _, i := range weighed {
			if t := terms[i]; len(t.Spans) > 0 && !singleValues(t) && !crossesArray(t.Path) && !c.partsReady(t.Path) {
				e.wantAbsent(c, t.Path, entryKinds{parts: true})
			}
		}
	}
	rows := scanRows(prog, params, limit)
	// An OR of terms (plan.UnionTerms) and no other term to count: the
	// union's terms are read whole to weigh it, up to wide entries.
	orOnly := len(weighed) == 0 && !small && ready && !prog.Ranked() && plan.UnionTerms(q, params) != nil
	firstRows := rows
	if len(q.Joins) > 0 && prog.Streaming() && !prog.Ranked() {
		// A JOIN's rows stream too, a document's after the document
		// before it: the span reads the documents the scan would.
		firstRows = int64(max(limit, 0))
	}
	if first, ok, err := e.spanFirst(r, c, q, params, s, weighed, firstRows, orderTerm, !small && ready, &in, st); err != nil || ok {
		return first, err
	}
	// An OR beside the terms: counted first, as far as a page's worth of
	// entries and no further than a term found narrower in a first step
	// of their counts, an OR of few items bounds every other path (past
	// its entries, a term's span reads more), and a scan tried first
	// would read many records for its few.
	var union *collection
	unionTried := int64(-1) // the bound of an OR's count that came short
	fresh := !slices.ContainsFunc(tc.counters, func(sc spanCounter) bool { return sc.n > 0 })
	if len(weighed) > 0 && !small && ready && !prog.Ranked() && plan.UnionTerms(q, params) != nil {
		if err := tc.count(r, size, countStep, partners, st); err != nil {
			return nil, err
		}
		unionTried = min(probe, plan.PaceStart(max(rows, int64(limit))))
		if tc.narrowest >= 0 {
			unionTried = min(unionTried, tc.narrowest)
		}
		if union, err = weighUnion(r, c, q, params, s, unionTried, st, &in); err != nil {
			return nil, err
		}
	}
	// A composite whose span bounds every weighed term holds no more
	// entries than any of them, each an item that passes them all: past
	// its count, no term's span nor intersection of them costs less, so
	// it is counted first, and each term reads as holding more without
	// being counted (with no ordered path, whose estimate takes the
	// terms' shares from their counts). A composite walk reads about its
	// page's rows' entries: past what it costs, no count makes another
	// path cheaper (plan.CompositeWalkBound).
	var walkUse *plan.CompositeUse
	compBound := probe
	if union != nil {
		compBound = int64(union.entries) + 1
	}
	if in.Stream == nil && in.Ordered == nil {
		if i := slices.IndexFunc(in.Composites, func(u plan.CompositeUse) bool { return u.Ordered }); i >= 0 {
			walkUse = &in.Composites[i]
			at := in
			at.Entries, at.Stopped, at.Scoped = slices.Clone(in.Entries), nil, nil
			tc.fill(&at)
			compBound = min(compBound, plan.CompositeWalkBound(at, *walkUse, probe))
		}
	}
	ceiling := probe // the most any count need reach
	covering, covered := -1, int64(0)
	if in.Ordered == nil && (in.Stream == nil || len(in.Stream.Filter) > 0) && len(weighed) > 1 {
		covering = slices.IndexFunc(in.Composites, func(u plan.CompositeUse) bool {
			_, ok := c.policyComposite(u.Index.Ordinal)
			return ok && !slices.ContainsFunc(weighed, func(i int) bool { return !slices.Contains(u.Terms(), i) })
		})
	}
	// The covering composite's span, when no walk may serve the page,
	// is collected as it is counted, while it holds no more than a page
	// keeps: should it be chosen, the page reads the locations its count
	// found.
	var spanLocs [][]byte
	if covering >= 0 && walkUse == nil {
		// Counted as the terms are, outside the page's budget.
		var counting readStats
		spanLocs, covered, err = compositeLocsUpTo(r, c, &in.Composites[covering], terms, s, &counting, compBound, maxFilterLocs)
		if st.entries += counting.entries; err != nil {
			return nil, err
		}
		if covered >= compBound || covered > maxFilterLocs {
			spanLocs = nil // not all of them
		} else if spanLocs == nil {
			spanLocs = [][]byte{}
		}
	} else if covering >= 0 {
		if covered, err = countSpans(r, compositeSpans(c, &in.Composites[covering], terms, s), compBound, st); err != nil {
			return nil, err
		}
	}
	if covering >= 0 {
		compBound = min(compBound, covered+1)
		ceiling = compBound
		tc.atLeast(covered+1, in.Composites[covering].Scoped)
	}
	// A filter the index answers only by testing one path's values
	// (weighValues), and no term: a scan is tried first, as for an OR
	// alone, before the path's entries are read.
	valueOnly := false
	if len(weighed) == 0 && !orOnly && !small && ready && !prog.Ranked() && in.Ordered == nil && in.Stream == nil && len(in.Composites) == 0 {
		_, valueOnly = newValueTest(s.unheld(q), params, now)
	}
	if wide, budget, ok := plan.ScanFirstBounds(size, rows, probe); ok && try != noScanFirst && (len(weighed) > 0 || orOnly || valueOnly) && orderTerm < 0 && !(covering >= 0 && covered < wide) && !(union != nil && int64(union.entries) < wide) {
		// Every term may hold most of the scope: counted to wide, each
		// that reaches it makes a scan the likely cheaper way to the
		// page. Paced, the scan is tried once every term holds enough
		// entries for it to fill the page, and the counting goes on
		// round by round as it reads (scanPace).
		sp := &scanPace{tc: tc, r: r, size: size, partners: partners, st: st, in: in, bound: wide, wide: wide, budget: budget}
		if try == scanFirstPaced {
			sp.bound = min(plan.PaceStart(rows), wide)
		}
		if orOnly || valueOnly {
			// A scan first, for records worth a quarter of the union's
			// most entries (plan.PaceRecords), at least two pages'
			// worth: an OR that holds most of the scope fills the page
			// within them; failing that, the union is weighed. As many
			// for a value filter, which most items may pass as well.
			sp.bound, sp.budget = wide, min(budget, max(plan.PaceRecords(wide), 2*rows))
		}
		if err := tc.count(r, size, sp.bound, partners, st); err != nil {
			return nil, err
		}
		if tc.narrowest < 0 {
			late, err := rowsLieLate(r, c, s, tc, budget, st)
			if err != nil {
				return nil, err
			}
			if !late {
				qa := &queryAccess{access: plan.Scan, pace: sp}
				p := sp.plan()
				qa.plan = &p
				return qa, e.buildSource(r, c, total, prog, params, s, terms, now, st, limit, qa)
			}
		}
	}
	// A stream (or TOP walk) whose walk meets every other term itself
	// reads about its page's rows: past what that costs, no count
	// changes the choice.
	bound := probe
	var walk *walkPace
	several := false // several terms beside the walks, counted until they settle
	meetsAll := func(o *plan.Ordered) bool {
		return o != nil && len(o.Within) > 0 && !slices.ContainsFunc(weighed, func(i int) bool { return !slices.Contains(o.Within, i) })
	}
	if meetsAll(in.Stream) || meetsAll(in.Ordered) {
		for _, o := range []*plan.Ordered{in.Stream, in.Ordered} {
			if meetsAll(o) {
				bound = min(bound, plan.WithinBound(in, o, probe))
			}
		}
	} else if others := walkTerms(in, weighed); len(others) > 0 {
		// Past where each walk costs less than a term's entries, no
		// count of that term changes the choice between the walks and
		// the paths that read it whole (plan.WalkBound).
		settles, ks := make([]int64, len(others)), make([]int, len(others))
		for j, i := range others {
			ks[j] = slices.Index(tc.idx, i)
			for _, o := range []*plan.Ordered{in.Stream, in.Ordered} {
				if o != nil {
					settles[j] = max(settles[j], plan.WalkBound(in, o, i, tc.scoped[ks[j]], probe))
				}
			}
		}
		if len(others) == 1 {
			// One term: no other choice turns on its count. With
			// several, an intersection of them may: they are counted
			// as any other terms.
			bound = settles[0]
		} else {
			several = true
		}
		if try == scanFirstPaced && fresh && slices.Max(settles) > countStep {
			// The walk is tried first, the terms counted a step at a
			// time as it reads (walkPace).
			walk = &walkPace{tc: tc, r: r, size: size, st: st, bound: countStep, settle: slices.Max(settles), probe: probe}
			for j, k := range ks {
				items := size.ContainerItems
				if tc.scoped[k] {
					items = size.Items
				}
				walk.terms = append(walk.terms, walkTerm{k: k, settle: settles[j], items: items})
			}
			bound = countStep
		}
	}
	if lone {
		tc.gatherFrom(c, terms[weighed[0]], weighed[0], s)
	}
	bound = min(bound, compBound)
	top := bound
	if several = several && walk == nil; several {
		// Several terms beside the walks: counted a round at a time
		// until what is left of each count can change no choice
		// (plan.CountSettled), or to the bound.
		bound = min(top, 4*countStep)
	}
	for {
		if err := tc.count(r, size, bound, partners, st); err != nil {
			return nil, err
		}
		tc.fill(&in)
		if several {
			want := min(countsSettled(in, weighed), top)
			if want <= bound {
				break
			}
			bound = want
			continue
		}
		if walkUse == nil || bound >= ceiling {
			break
		}
		// A term whose count ended below the bound makes the walk
		// dearer: the others are counted on to where it costs.
		next := min(plan.CompositeWalkBound(in, *walkUse, probe), ceiling)
		if next <= bound {
			break
		}
		bound = next
	}
	saturate := func(n int64) int64 {
		if n >= bound && bound < probe {
			return probe // as many as can win nothing
		}
		return n
	}
	for _, i := range weighed {
		if in.Stopped[i] {
			in.Entries[i] = saturate(in.Entries[i])
		}
	}
	if orderTerm >= 0 && in.Entries[orderTerm] == 0 {
		// The walks read at least their term's entries up to what their
		// estimate needs: past what the settled paths cost, no count of
		// it makes them, or its span, the cheaper.
		bound := min(plan.OrderedBound(in, cmp.Or(in.Ordered, in.Stream), probe), plan.EntriesCosting(plan.SettledCost(in, orderTerm)))
		n, err := countSpans(r, termSpans(c, terms[orderTerm]), bound, st)
		if err != nil {
			return nil, err
		}
		if n >= bound && bound < probe {
			// More than the ordered path reads: to the other paths, as
			// many as can win nothing.
			n = probe
		}
		in.Entries[orderTerm] = n
	}
	for i := range in.Composites {
		u := &in.Composites[i]
		comp, ok := c.policyComposite(u.Index.Ordinal)
		if !ok {
			u.Entries = -1
			continue
		}
		if i > 0 && u.Index.Ordinal == in.Composites[i-1].Index.Ordinal {
			u.Entries = in.Composites[i-1].Entries // the same span, walked in order
			continue
		}
		if i == covering {
			u.Entries = covered
		} else if u.Entries, err = countSpans(r, compositeSpans(c, u, terms, s), bound, st); err != nil {
			return nil, err
		}
		if !u.Scoped && (s.kind == plan.ScopePartition || s.kind == plan.ScopePrefix && !s.manyParts) && u.Entries > max(size.Items, 8*int64(limit)) && !crossesArray(comp.paths[0]) {
			// The span holds other partitions' entries, more than the
			// partition (or the prefix of a few) has items, read to
			// count it and read again to use it: the partition's own
			// composite entries hold its alone (absent.go).
			e.wantAbsent(c, comp.paths[0], entryKinds{parts: true, comps: []string{comp.sig()}})
		}
		u.Entries = saturate(u.Entries)
	}
	if o := in.Stream; o != nil && len(o.Filter) > 0 && covering >= 0 && spanLocs != nil {
		// The span's locations, read whole, filter the stream as well
		// as the term's would, and hold no more.
		o.FilterComposite = &in.Composites[covering]
	}
	if !small && ready && !prog.Ranked() && union == nil {
		bound := probe
		beside := false // a term counted whole, which the OR's items may be intersected with
		for i, e := range in.Entries {
			// Past the entries of a term counted whole as far as
			// intersecting the OR's items with the term's could pay
			// (as a partner of it is counted), its span reads less.
			if e >= 0 && !(in.Stopped != nil && in.Stopped[i]) {
				bound, beside = min(bound, plan.PartnerBound(in.Scope, probe, e, i < len(in.Scoped) && in.Scoped[i])), true
			}
		}
		if wide, _, ok := plan.ScanFirstBounds(size, rows, probe); ok && !(beside && try == noScanFirst) {
			// A page of rows in scan order: past wide entries a scan
			// fills it for less than the union's entries cost; unless
			// a scan was tried and gave up, and the OR may be
			// intersected with a term.
			bound = min(bound, wide)
		}
		if bound > unionTried { // not counted as far before, and short
			if union, err = weighUnion(r, c, q, params, s, bound, st, &in); err != nil {
				return nil, err
			}
		}
	}
	if !small && ready && !prog.Ranked() {
		if err := e.weighAbsent(r, c, q, s, probe, st, &in); err != nil {
			return nil, err
		}
	}
	// A filter no term of the index answers, on one path: the path's
	// entries are read, each value tested, as far as they cost less than
	// a scan. Where a term, an OR or an ORDER BY's walk applies, they
	// cost less, or would need weighing with the test's share.
	var values *collection
	if valueOnly && union == nil {
		if values, err = e.weighValues(r, c, q, params, now, s, size, rows, false, st, &in); err != nil {
			return nil, err
		}
	} else if len(weighed) > 0 && union == nil && !small && ready && !prog.Ranked() && in.Ordered == nil && in.Stream == nil && len(in.Composites) == 0 {
		// Beside terms whose paths cost more than its entries.
		if values, err = e.weighValues(r, c, q, params, now, s, size, rows, true, st, &in); err != nil {
			return nil, err
		}
	}
	dropWideFilter(&in)
	p := plan.Choose(in)
	if (p.Chosen.Access == plan.IndexSpan || p.Chosen.Access == plan.Intersect) && (s.kind == plan.ScopeAll || s.kind == plan.ScopeRange) {
		// Values of many items in a range or the whole container: each
		// page collects their entries whole (an intersection's, both
		// terms') to sort them in _rid order, which the paths' tie
		// entries hold them in (tieSpans, rangeTieSpans for a range of
		// few values, intersectSource).
		var entries int64
		for _, i := range p.Chosen.Terms {
			entries += in.Entries[i]
		}
		ask := p.Chosen.Terms
		if len(weighed) == 2 && spanFirstShape(q, params, firstRows, orderTerm, &in) {
			// Both terms' tie entries let the next first page step
			// through the two spans together, uncounted (spanFirst).
			ask = weighed
		}
		if entries >= max(tieWishEntries, 8*int64(limit)) {
			for _, i := range ask {
				if t := terms[i]; !c.tiesReady(t.Path) && !holdsStructures(t) {
					e.wantAbsent(c, t.Path, entryKinds{ties: true})
				}
			}
		}
	}
	if p.Chosen.Access == plan.Union && p.Chosen.Beside == nil && (s.kind == plan.ScopeAll || s.kind == plan.ScopeRange) && union.entries >= max(tieWishEntries, 8*limit) {
		// As an index span's: the pages after this one merge the
		// terms' tie entries from their position once they are built.
		for _, t := range in.Union {
			if !c.tiesReady(t.Path) {
				e.wantAbsent(c, t.Path, entryKinds{ties: true})
			}
		}
	}
	if walk != nil && slices.ContainsFunc(walk.terms, func(t walkTerm) bool { return in.Stopped[tc.idx[t.k]] }) {
		if p.Chosen.Access != plan.OrderedStream && p.Chosen.Access != plan.OrderedWalk {
			// Weighed at its first step, the term makes another path
			// the cheaper: it is counted on and weighed again.
			return e.planQuery(r, c, total, prog, params, s, now, st, limit, resumed, cur, noScanFirst, tc)
		}
	} else {
		walk = nil // counted to its end: weighed as it is
	}
	qa := &queryAccess{plan: &p, access: p.Chosen.Access, terms: p.Chosen.Terms, walk: walk, counts: tc}
	if qa.access == plan.IndexSpan {
		qa.gathered = tc.gatheredLocs(qa.terms[0])
	}
	if u := p.Chosen.Composite; u != nil && (qa.access == plan.CompositeSpan || qa.access == plan.FilteredStream) && spanLocs != nil && u.Index.Ordinal == in.Composites[covering].Index.Ordinal {
		qa.spanLocs, qa.spanRead = spanLocs, covered
	}
	if walk != nil {
		walk.in, walk.plan = in, qa.plan
	}
	if o := in.Stream; qa.access == plan.FilteredStream && o != nil && p.Chosen.ByUnion {
		// The OR's items, collected whole while it was weighed.
		qa.spanLocs, qa.spanRead = union.locs, int64(union.entries)
	} else if o != nil && qa.access == plan.FilteredStream && p.Chosen.Composite == nil {
		// The term chosen, the last of the path's: the page goes on
		// from the locations its count gathered.
		qa.filter = tc.filterStart(p.Chosen.Terms[len(p.Chosen.Terms)-1])
	}
	if qa.access == plan.Union {
		// Its terms are the OR's, found again from the query on every
		// page; this one's were collected while they were weighed. The
		// token's terms are the one its items are intersected with, if
		// any.
		qa.terms, qa.collected = p.Chosen.Beside, union
	}
	if qa.access == plan.ValueScan {
		// Its test is found again from the query on every page; this
		// one's items were collected while it was weighed.
		qa.terms, qa.collected = nil, values
	}
	if p.Chosen.Composite != nil {
		qa.composite = p.Chosen.Composite.Index.Ordinal
	}
	logPlan(c, q, &p)
	err = e.buildSource(r, c, total, prog, params, s, terms, now, st, limit, qa)
	if errors.Is(err, errWalkOver) {
		// The TOP walk, tried first as it was built, found its term
		// narrow (walkPace).
		return e.planQuery(r, c, total, prog, params, s, now, st, limit, resumed, cur, noScanFirst, tc)
	}
	if qa.access != plan.OrderedStream {
		qa.walk = nil // the TOP walk read its documents as it was built
	}
	return qa, err
}

// tieWishEntries is how many entries an index span over a range or the
// whole container must hold before its page asks for the path's tie
// entries: below it, collecting and sorting them costs a page little, and
// each listed path costs every write an entry more.
const tieWishEntries = 1024

// rowsLieLate reports whether a scan tried first over a range or the whole
// container would read its whole budget before the first item all of the
// terms counted so far hold: the entries counted are each term's lowest
// values, and when their items all lie that far into the _rid order (a
// range of recent times, c.ts > @since, whose items were written last),
// the scan would read the records before them, find nothing, and leave
// the page to be planned again. Such a page is planned from the counts at
// once. Entries not yet counted may lie earlier; the page then costs what
// it would without the try.
func rowsLieLate(r storage.Reader, c *containerRecord, s *itemScope, tc *termCounts, budget int64, st *readStats) (bool, error) {
	if s.kind != plan.ScopeAll && s.kind != plan.ScopeRange {
		return false, nil
	}
	late := tc.lateStart()
	if late == 0 {
		return false, nil
	}
	first, ok, err := firstSeq(r, c, s, st)
	if err != nil || !ok || late < first {
		return false, err
	}
	return late-first >= uint64(budget), nil
}

// spanFirst reads a page of rows in scan order through entries that come
// in that order, uncounted (plan.SpanFirst), when nothing else answers
// the filter through the index (an OR of terms, a composite index): the
// index span of the only term the planner weighs, or the intersection of
// the two it weighs (intersectSource), when their values' entries merge
// in the scope's scan order (mergeSpans), of at most a value for every
// two rows between them (4 to maxRangeValues); or, with no term
// weighed, the documents without the path of a NOT IS_DEFINED through
// its absence entries, once they are ready. indexed says the index can
// answer the page, which a small logical partition is read without. ok
// is false otherwise: the page is planned from the counts.
func (e *Engine) spanFirst(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, s *itemScope, weighed []int, rows int64, orderTerm int, indexed bool, in *plan.Input, st *readStats) (qa *queryAccess, ok bool, err error) {
	if !indexed || len(weighed) > 2 || !spanFirstShape(q, params, rows, orderTerm, in) {
		return nil, false, nil
	}
	absent, hasAbsent := notDefinedPath(c, q)
	merges := len(weighed) > 0 && len(plan.AbsentPaths(q)) == 0 && !slices.ContainsFunc(weighed, func(i int) bool { return !mayMerge(c, in.Terms[i], s) })
	switch {
	case merges:
		// Each value costs a page two seeks: past a value for every two
		// rows, they cost more than the page's records.
		values := min(maxRangeValues, max(int(rows)/2, 4))
		ms := make([]posMerge, 0, len(weighed))
		for _, i := range weighed {
			t := in.Terms[i]
			if singleValues(t) && len(t.Spans) > values {
				return nil, false, nil
			}
			m, ok, err := mergeSpansUpTo(r, c, t, s, values, st)
			if err != nil || !ok {
				return nil, false, err
			}
			values -= len(m.spans)
			ms = append(ms, m)
		}
		if len(ms) == 1 {
			p := plan.SpanFirst(*in, plan.IndexSpan, weighed, rows)
			qa = &queryAccess{plan: &p, access: plan.IndexSpan, terms: weighed, src: spanSource(r, c, ms[0], st)}
			break
		}
		p := plan.SpanFirst(*in, plan.Intersect, weighed, rows)
		qa = &queryAccess{plan: &p, access: plan.Intersect, terms: weighed, src: intersectSource(r, c, ms[0], ms[1], st)}
	case len(weighed) == 0 && hasAbsent && c.absentReady(absent):
		in.Absent = absent
		p := plan.SpanFirst(*in, plan.AbsentScan, nil, rows)
		qa = &queryAccess{plan: &p, access: plan.AbsentScan, src: absentSource(r, c, s, absent, false, st)}
	default:
		return nil, false, nil
	}
	logPlan(c, q, qa.plan)
	return qa, true, nil
}

// spanFirstShape says a first page of rows may be read by spanFirst: rows
// in scan order, with no OR of terms or composite index to answer the
// filter otherwise.
func spanFirstShape(q *ast.Query, params map[string]document.Value, rows int64, orderTerm int, in *plan.Input) bool {
	return rows > 0 && orderTerm < 0 && len(in.Composites) == 0 && plan.UnionTerms(q, params) == nil
}

// logPlan writes the plan chosen for a first page of q to the debug log.
func logPlan(c *containerRecord, q *ast.Query, p *plan.Plan) {
	if slog.Default().Enabled(context.Background(), slog.LevelDebug) {
		slog.Debug("query plan chosen", "container", c.link(), "query", q.String(), "plan", p.Explain())
	}
}

// scanTry is how a first page may try a scan first (plan.ScanFirstBounds),
// or an ordered walk beside filter terms (walkPace).
type scanTry uint8

const (
	noScanFirst scanTry = iota
	// scanFirstPaced: tried once every term holds enough entries for the
	// scan to fill the page, paced by the counts as it reads (scanPace);
	// an ordered walk is tried at once, paced by its terms' counts
	// (walkPace).
	scanFirstPaced
	// scanFirstCounted: tried once every term is counted to wide.
	scanFirstCounted
)

// walkPace paces an ordered walk tried first (the stream, or the TOP walk)
// by the counts of the terms it does not meet itself (walkTerms): the walk
// may read documents worth what the entries counted so far cost
// (plan.WalkPaceDocs), up to a sample, and each time it has, the terms are
// counted a round further (four times as far). It reads on unpaced once
// the terms are counted to settle (the most of their plan.WalkBound), and
// while the documents it read pass at a rate that puts each term at its
// own bound or past it (plan.WalkSettled). Once a term's spans end short
// of that, a lone term is weighed with its exact count: if the planner
// chooses the same walk, the walk goes on unpaced; else, and always with
// several terms (whose intersection may win), it stops (errWalkOver), and
// the page is planned again from the counts. So a page whose filter holds
// most of the scope costs its walk and a round or two of counting, where
// counting the terms to settle first cost √(rows·n) entries each whatever
// the walk read; one whose filter is narrow reads at most the sample.
type walkPace struct {
	tc     *termCounts
	terms  []walkTerm
	r      storage.Reader
	size   plan.Scope
	st     *readStats
	bound  int64 // how far the terms have been counted
	settle int64 // the most of the terms' own
	probe  int64 // the bound on every count (probeLimit)
	// read and hits are the documents the walk read and those of them
	// that passed.
	read, hits int64
	// in is what the planner weighed, and plan its choice, which a
	// count that ends is weighed again with.
	in   plan.Input
	plan *plan.Plan
}

// walkTerm is a term a walk tried first is paced by.
type walkTerm struct {
	k      int   // its counter
	settle int64 // plan.WalkBound
	items  int64 // the items its count is among
}

// errWalkOver ends a walk tried first whose filter proved narrow enough
// to weigh.
var errWalkOver = errors.New("a filter term of the walk tried first is counted to its end")

// admit is asked before the walk reads a document through; it counts the
// terms on as far as the walk's pace needs. Once the walk has read a
// sample of documents that does not settle it, the terms are counted to
// settle at once rather than a round at a time: the documents say the
// filter is narrower than that, and counting costs less than reading
// them.
//
// keep is called before the first count: it copies what the walk holds
// of the reader's last answer (the document it is about to read), which
// the count's reads end (storage.Reader).
func (wp *walkPace) admit(keep func()) error {
	for !wp.free() && wp.read >= wp.allowed() {
		if keep != nil {
			keep()
			keep = nil
		}
		switch {
		case wp.read < plan.WalkSample:
			wp.bound = min(wp.bound*4, wp.settle)
		case len(wp.terms) == 1:
			wp.bound = wp.settle
		default:
			// Several terms: counted on a doubling at a time, so
			// that one that ends ends the walk before the others are
			// counted far past it; the page is then planned with
			// them counted only as far as they may change the choice
			// (countsSettled).
			wp.bound = min(wp.bound*2, wp.settle)
		}
		if err := wp.tc.count(wp.r, wp.size, wp.bound, false, wp.st); err != nil {
			return err
		}
		ended := func() bool {
			return slices.ContainsFunc(wp.terms, func(t walkTerm) bool { return len(wp.tc.counters[t.k].spans) == 0 })
		}
		if !ended() && wp.bound >= wp.settle {
			if err := wp.gather(); err != nil {
				return err
			}
		}
		if !ended() {
			continue
		}
		if len(wp.terms) > 1 {
			// Their intersection may be the cheaper: weighed with
			// every term counted on.
			return errWalkOver
		}
		// Counted to its end: weighed again with the exact count. The
		// same path goes on from where it is, unpaced.
		wp.tc.fill(&wp.in)
		dropWideFilter(&wp.in)
		p := plan.Choose(wp.in)
		if p.Chosen.Access != wp.plan.Chosen.Access {
			return errWalkOver
		}
		*wp.plan, wp.settle = p, wp.bound
	}
	wp.read++
	return nil
}

// gather counts the stream's lone filter term on past settle, as far as a
// count that ends there makes the filtered stream the cheaper
// (plan.GatherBound): the entries read so far, whose locations the count
// gathered, are paid whichever path the page takes, and the filtered
// stream reads a record only for the walked entries they name. Without
// it, a filter of a tenth of 2·10⁵ items counted 19,656 of its 23,529
// entries to WalkBound, and then the plain stream read 851 records a
// page for 100 rows.
func (wp *walkPace) gather() error {
	o := wp.in.Stream
	if o == nil || len(o.Filter) == 0 || len(wp.terms) != 1 || wp.plan.Chosen.Access != plan.OrderedStream {
		return nil
	}
	k := wp.terms[0].k
	i := wp.tc.idx[k]
	read := wp.tc.gathered(i)
	if i != o.Filter[0] || read == 0 {
		return nil
	}
	wp.tc.fill(&wp.in)
	upTo := plan.GatherBound(wp.in, o, i, wp.tc.scoped[k], read, wp.probe)
	if upTo <= wp.bound {
		return nil
	}
	wp.bound = upTo
	return wp.tc.count(wp.r, wp.size, upTo, false, wp.st)
}

// free reports whether the walk reads on unpaced: the terms are counted
// to settle, or the documents read so far pass at a rate that puts each
// term at its own or past it.
func (wp *walkPace) free() bool {
	if wp.bound >= wp.settle {
		return true
	}
	for _, t := range wp.terms {
		if !plan.WalkSettled(wp.hits, wp.read, t.items, t.settle) {
			return false
		}
	}
	return true
}

// allowed is how many documents the walk may have read with the terms
// counted as they are, unless free: what the counts paid for, up to the
// sample.
func (wp *walkPace) allowed() int64 {
	return min(plan.WalkPaceDocs(wp.tc.total()), plan.WalkSample)
}

// left is how many more documents the walk may read ahead (readStats.want).
func (wp *walkPace) left() int {
	if wp.free() {
		return aheadMax
	}
	return int(max(wp.allowed()-wp.read, 1))
}

// scanPace paces a scan tried first (plan.ScanFirstBounds) by the terms'
// counts: the scan may read records worth a share of what the entries
// counted so far cost (plan.PaceRecords), and each time it has, the terms
// are counted a round further (four times as far, up to wide). Once every
// term reaches wide, the scan has the whole budget. It stops, and the
// page is planned again from the counts made, once a term's spans end
// short of wide (the term is narrow), or once the documents the scan has
// passed are too few for the scan to be the cheaper (plan.Thin; thin is
// set, and the terms are then counted to wide before a scan is tried
// again: a sample of the first records can mislead). A page whose terms
// hold most of the scope then costs a round or two of counting beside its
// records, where counting every term to wide first cost √(rows·n)
// entries whatever the page read; one with a narrow term or few passing
// documents reads at most the records its rounds of counting allowed.
type scanPace struct {
	tc       *termCounts
	r        storage.Reader
	size     plan.Scope
	partners bool
	st       *readStats
	in       plan.Input
	bound    int64 // how far every term has been counted
	wide     int64
	budget   int64
	thin     bool
}

// allowed is how many records the scan may have read with the terms
// counted as they are.
func (sp *scanPace) allowed() int64 {
	if sp.bound >= sp.wide {
		return sp.budget
	}
	return min(sp.budget, plan.PaceRecords(sp.tc.total()))
}

// more counts the terms a round further and reports whether the scan may
// read on, given that it has found hits passing documents in read records.
func (sp *scanPace) more(read, hits int64) (bool, error) {
	if sp.bound >= sp.wide {
		return false, nil
	}
	if plan.Thin(hits, read, sp.size.Items, sp.wide) {
		sp.thin = true
		return false, nil
	}
	sp.bound = min(sp.bound*4, sp.wide)
	sp.tc.stopGathering()
	if err := sp.tc.count(sp.r, sp.size, sp.bound, sp.partners, sp.st); err != nil {
		return false, err
	}
	return sp.tc.narrowest < 0, nil
}

// plan is the plan of the scan with the counts made so far.
func (sp *scanPace) plan() plan.Plan {
	sp.tc.fill(&sp.in)
	return plan.ScanFirst(sp.in, sp.budget)
}

// paced is src read by a scan tried first: it stops, setting over, when
// sp lets it read no further before the records run out. hits tells how
// many rows the scan has made so far; left, how many more records the
// pace lets it read before it asks sp again.
func paced(src itemSource, sp *scanPace, hits func() int, over *bool) (paced itemSource, left func() int) {
	var read, allowed int64
	left = func() int { return int(max(allowed-read, 0)) }
	paced = func(from []byte, fn func(pos, loc []byte, rec *itemRecord) (bool, error)) error {
		read, allowed = 0, sp.allowed()
		return src(from, func(pos, loc []byte, rec *itemRecord) (bool, error) {
			for read >= allowed {
				ok, err := sp.more(read, int64(hits()))
				if err != nil {
					return false, err
				}
				if !ok {
					*over = true
					return false, nil
				}
				allowed = sp.allowed()
			}
			read++
			return fn(pos, loc, rec)
		})
	}
	return paced, left
}

// termCounts counts the entries of the spans of the terms the planner
// weighs, a step at a time, round by round, so that the narrowest is known
// early; with partners, a wider term is then counted only as far as it
// could still change the choice (plan.PartnerBound). A count stopped at a
// bound reads as what it reached; a later call with a higher bound goes
// on from there.
type termCounts struct {
	idx       []int // into the query's terms
	counters  []spanCounter
	scoped    []bool // the count is of the scope's entries (plan.Input.Scoped)
	narrowest int64  // the smallest count of a term counted to its end; -1: none yet
	// narrowScoped is the scoped flag of the narrowest count.
	narrowScoped bool
}

// newTermCounts counts the entries of the counted terms in scope s: a
// term of single values counts the scope's own (scopedSpans), any other
// the container's.
func newTermCounts(c *containerRecord, terms []plan.Term, counted []int, s *itemScope) *termCounts {
	tc := &termCounts{idx: counted, counters: make([]spanCounter, len(counted)), scoped: make([]bool, len(counted)), narrowest: -1}
	for k, i := range counted {
		tc.counters[k].spans, _ = scopedSpans(c, terms[i], s)
		tc.scoped[k] = scopedTerm(c, terms[i], s)
	}
	return tc
}

// count counts each term up to probe.
func (tc *termCounts) count(r storage.Reader, size plan.Scope, probe int64, partners bool, st *readStats) error {
	done := make([]bool, len(tc.counters))
	for step, open := int64(countStep), len(tc.counters) > 0; open; step *= 4 {
		open = false
		for k := range tc.counters {
			sc := &tc.counters[k]
			if done[k] {
				continue
			}
			bound := probe
			if partners && tc.narrowest >= 0 {
				bound = plan.PartnerBound(size, probe, tc.narrowest, tc.narrowScoped)
			}
			if sc.least < bound {
				if err := sc.count(r, min(step, bound), st); err != nil {
					return err
				}
			}
			switch {
			case len(sc.spans) == 0:
				done[k] = true
				if tc.narrowest < 0 || sc.n < tc.narrowest {
					tc.narrowest, tc.narrowScoped = sc.n, tc.scoped[k]
				}
			case max(sc.n, sc.least) >= bound:
				done[k] = true
			default:
				open = true
			}
		}
	}
	return nil
}

// atLeast records that each term not counted to its end holds at least n
// entries, known without reading them: its count reads as that many, and
// is counted on only past them. A term counted among the scope's items
// alone (Input.Scoped) takes it only from a count of the scope's own
// entries (scoped).
func (tc *termCounts) atLeast(n int64, scoped bool) {
	for k := range tc.counters {
		if sc := &tc.counters[k]; len(sc.spans) > 0 && (scoped || !tc.scoped[k]) {
			sc.least = max(sc.least, n)
		}
	}
}

// lateStart is the smallest sequence an item every term holds may have,
// as far as the entries counted so far tell: the latest of the terms'
// smallest. Counted entries are the lowest values of each term, so this
// may lie past the true one; 0 when some term has none counted.
func (tc *termCounts) lateStart() uint64 {
	var late uint64
	for i := range tc.counters {
		f := tc.counters[i].first
		if f == 0 {
			return 0
		}
		late = max(late, f)
	}
	return late
}

// total is how many entries have been counted, over all terms.
func (tc *termCounts) total() int64 {
	var n int64
	for i := range tc.counters {
		n += tc.counters[i].n
	}
	return n
}

// fill puts the counts into in's entries, indexed as the query's terms,
// and marks those that stopped before their spans' end.
func (tc *termCounts) fill(in *plan.Input) {
	if in.Stopped == nil {
		in.Stopped = make([]bool, len(in.Entries))
	}
	if in.Scoped == nil {
		in.Scoped = make([]bool, len(in.Entries))
	}
	for k, i := range tc.idx {
		sc := &tc.counters[k]
		in.Entries[i] = sc.n
		if in.Stopped[i] = len(sc.spans) > 0; in.Stopped[i] {
			in.Entries[i] = max(sc.n, sc.least)
		}
		in.Scoped[i] = tc.scoped[k]
	}
	in.FilterRead = nil
	if o := in.Stream; o != nil && len(o.Filter) > 0 {
		in.FilterRead = make([]int64, len(in.Entries))
		for _, f := range o.Filter {
			in.FilterRead[f] = tc.gathered(f)
		}
	}
}

// gathered is how many entries of term i the count read while gathering
// the locations they name, which a filtered stream's first page goes on
// from (filterStart); 0 when it gathered none, or more than a page
// collects.
func (tc *termCounts) gathered(i int) int64 {
	k := slices.Index(tc.idx, i)
	if k < 0 || tc.counters[k].locs == nil || len(tc.counters[k].locs.ends) > maxFilterLocs {
		return 0
	}
	return tc.counters[k].n
}

// dropWideFilter leaves out of the stream's filters (and so the filtered
// stream out of in, when none is left) those whose count holds more
// locations than a page collects (filterLocs). A count stopped short is
// not weighed for the filter anyway, and a walk tried first weighs it
// again once it ends (walkPace).
func dropWideFilter(in *plan.Input) {
	o := in.Stream
	if o == nil || len(o.Filter) == 0 {
		return
	}
	o.Filter = slices.DeleteFunc(slices.Clone(o.Filter), func(f int) bool { return in.Entries[f] > maxFilterLocs && !in.Stopped[f] })
}

// chooseAsWeighed is the plan the page would take from in as it stands,
// weighed as the page weighs it (dropWideFilter), and that input.
func chooseAsWeighed(in plan.Input) (plan.Input, plan.Plan) {
	if in.Stream != nil {
		o := *in.Stream
		in.Stream = &o
	}
	dropWideFilter(&in)
	return in, plan.Choose(in)
}

// countsSettled returns how far the weighed terms whose counts stopped
// are worth counting on, 0 when counting on can change no choice
// (plan.CountSettled), weighed as the page will weigh them
// (dropWideFilter): where their entries cost what the chosen path does,
// when that alone is short; else twice as far as the furthest has gone.
func countsSettled(in plan.Input, weighed []int) int64 {
	at, p := chooseAsWeighed(in)
	var want, furthest int64
	for _, i := range weighed {
		furthest = max(furthest, at.Entries[i])
		if settled, worth := plan.CountSettled(at, i, p.Chosen); !settled {
			want = max(want, worth, 1)
		}
	}
	if want == 1 {
		want = 2 * furthest
	}
	return want
}

// walkTerms returns the weighed terms the walks that may serve the page
// (the stream, the TOP walk) do not meet themselves, when no composite
// index is weighed beside them (whose walk weighs the terms by their
// counts too).
func walkTerms(in plan.Input, weighed []int) []int {
	if in.Stream == nil && in.Ordered == nil || in.WalkEntries < 0 || len(in.Composites) > 0 {
		return nil
	}
	var others []int
	for _, i := range weighed {
		if !(in.Stream != nil && slices.Contains(in.Stream.Within, i)) && !(in.Ordered != nil && slices.Contains(in.Ordered.Within, i)) {
			others = append(others, i)
		}
	}
	return others
}

// countStep is how many entries of each term the first round of
// countTerms counts; each round after counts four times as far.
const countStep = 64

// spanCounter counts the entries of spans a step at a time, each step
// going on from where the last stopped.
type spanCounter struct {
	spans []keySpan // those not yet counted to their end
	from  []byte    // where spans[0] goes on; nil: its start
	n     int64
	// least is how many entries the spans are known to hold at least,
	// counted or not (termCounts.atLeast).
	least int64
	// first is the smallest sequence among the locations of the entries
	// counted (every entry ends with one); 0 before any is.
	first uint64
	// locs, when not nil, gathers the locations the counted entries name
	// (collectLocs), those counted before it began to gather aside
	// (gatherFrom): before holds their spans.
	locs   *locCollector
	before []keySpan
	// spanGather says locs gathers for the term's own span, not for a
	// filtered stream.
	spanGather bool
}

// locCollector gathers, while a term is counted, the locations of the
// scope's items its entries name, as filterLocs does: a filtered stream's
// first page goes on from them (filterStart) rather than reading the
// entries the count read again. They are kept one after another, and put
// in a set only for the page that takes them (set): the planner may
// choose another path, and an insert into a map for each counted entry
// cost such a page several times what counting did.
type locCollector struct {
	s    *itemScope
	base int
	buf  []byte
	ends []int // where each location ends in buf
}

// add adds the location the entry k names, if its item is in the scope,
// and reports whether the collector holds at most maxFilterLocs (an item
// two entries name counts twice).
func (lc *locCollector) add(k []byte) bool {
	if loc, ok := entryLoc(k, lc.base); ok && lc.s.holds(loc) {
		lc.buf = append(lc.buf, loc...)
		lc.ends = append(lc.ends, len(lc.buf))
	}
	return len(lc.ends) <= maxFilterLocs
}

// set returns the locations gathered, as a set.
func (lc *locCollector) set() locSet {
	set := make(locSet, len(lc.ends))
	start := 0
	for _, end := range lc.ends {
		set.add(lc.buf[start:end])
		start = end
	}
	return set
}

// locSet is a set of locations, each held as a 64-bit hash of it: a
// filtered stream's page asks it whether a walked entry's item may pass
// its filter, and reads the record only if so. A hash shared by two
// locations makes a record read that the evaluator then drops, never a
// row lost; keys of eight bytes cost no allocation each, where the
// locations as strings took a third of a first page that gathered 23,529
// of them.
type locSet map[uint64]struct{}

// locSeed hashes the locations of every locSet.
var locSeed = maphash.MakeSeed()

// locSetOf is the set of locs.
func locSetOf(locs [][]byte) locSet {
	set := make(locSet, len(locs))
	for _, loc := range locs {
		set.add(loc)
	}
	return set
}

func (ls locSet) add(loc []byte) { ls[maphash.Bytes(locSeed, loc)] = struct{}{} }

func (ls locSet) has(loc []byte) bool {
	_, ok := ls[maphash.Bytes(locSeed, loc)]
	return ok
}

// filterStart is where a filtered stream's first page goes on collecting
// its filter's locations (filterLocs): what the count gathered, and the
// spans, from from in the first, it had not counted yet.
type filterStart struct {
	locs  *locCollector
	spans []keySpan
	from  []byte
}

// collectLocs makes the count of term i gather the locations its entries
// name, if the term is counted and not yet begun.
func (tc *termCounts) collectLocs(c *containerRecord, t plan.Term, i int, s *itemScope) {
	k := slices.Index(tc.idx, i)
	if k < 0 || tc.counters[k].n > 0 {
		return
	}
	_, base := scopedSpans(c, t, s)
	tc.counters[k].locs = &locCollector{s: s, base: base}
}

// gatheredLocs are the locations a term's count gathered (gatherFrom),
// from all its entries but those of before, which it had counted before
// it began to gather; entries is how many the term holds.
type gatheredLocs struct {
	locs    *locCollector
	before  []keySpan
	entries int64
}

// gatherFrom makes the count of term i gather the locations its entries
// name from where it has counted to, keeping the spans counted before,
// if the term is counted, not yet to its end, and gathers nothing yet.
func (tc *termCounts) gatherFrom(c *containerRecord, t plan.Term, i int, s *itemScope) {
	k := slices.Index(tc.idx, i)
	if k < 0 {
		return
	}
	sc := &tc.counters[k]
	if sc.locs != nil || len(sc.spans) == 0 {
		return
	}
	all, base := scopedSpans(c, t, s)
	done := len(all) - len(sc.spans)
	sc.before = slices.Clone(all[:done])
	if sc.from != nil {
		sc.before = append(sc.before, keySpan{all[done].lo, sc.from, all[done].in})
	}
	sc.locs, sc.spanGather = &locCollector{s: s, base: base}, true
}

// stopGathering drops what the counts gathered for a lone term's span
// (gatherFrom) and gathers no more.
func (tc *termCounts) stopGathering() {
	for k := range tc.counters {
		if sc := &tc.counters[k]; sc.spanGather {
			sc.locs, sc.before, sc.spanGather = nil, nil, false
		}
	}
}

// gatheredLocs returns the locations term i's count gathered, when it
// gathered them up to the end of the term's spans; nil otherwise.
func (tc *termCounts) gatheredLocs(i int) *gatheredLocs {
	k := slices.Index(tc.idx, i)
	if k < 0 || tc.counters[k].locs == nil || len(tc.counters[k].spans) > 0 {
		return nil
	}
	sc := &tc.counters[k]
	return &gatheredLocs{locs: sc.locs, before: sc.before, entries: sc.n}
}

// sorted returns the locations of the term's entries in the scope's
// index order without repeats, as spanLocs collects them: those gathered,
// and those of the entries counted before, read again.
func (g *gatheredLocs) sorted(r storage.Reader, st *readStats) ([][]byte, error) {
	lc := g.locs
	locs, err := collectLocs(r, g.before, lc.s, st, func(k []byte) ([]byte, bool) { return entryLoc(k, lc.base) })
	if err != nil {
		return nil, err
	}
	start := 0
	for _, end := range lc.ends {
		locs = append(locs, lc.buf[start:end:end])
		start = end
	}
	slices.SortFunc(locs, lc.s.byIndexPos)
	return slices.CompactFunc(locs, bytes.Equal), nil
}

// filterStart returns where the collection of term i's locations goes on
// from its count; nil when the count gathered none, or more than a page
// collects.
func (tc *termCounts) filterStart(i int) *filterStart {
	k := slices.Index(tc.idx, i)
	if k < 0 || tc.counters[k].locs == nil {
		return nil
	}
	sc := &tc.counters[k]
	return &filterStart{locs: sc.locs, spans: sc.spans, from: sc.from}
}

// count counts on until n reaches upTo or the spans end (spans is then
// empty).
func (sc *spanCounter) count(r storage.Reader, upTo int64, st *readStats) error {
	if len(sc.spans) == 0 || sc.n >= upTo {
		return nil
	}
	spans := sc.spans
	if sc.from != nil {
		spans = append([]keySpan{{lo: sc.from, hi: spans[0].hi, in: spans[0].in}}, spans[1:]...)
	}
	stopped := false
	err := scanSpans(r, spans, func(k, _ []byte) (bool, error) {
		st.entries++
		sc.n++
		if sc.locs != nil && !sc.locs.add(k) {
			sc.locs = nil
		}
		if len(k) >= 8 {
			if seq := binary.BigEndian.Uint64(k[len(k)-8:]); sc.first == 0 || seq < sc.first {
				sc.first = seq
			}
		}
		if sc.n < upTo {
			return true, nil
		}
		// The next step starts at the first key after k.
		sc.from = append(append([]byte(nil), k...), 0)
		stopped = true
		return false, nil
	})
	if err != nil {
		return err
	}
	if !stopped {
		sc.spans, sc.from = nil, nil
		return nil
	}
	// The spans counted to their end are done.
	i := slices.IndexFunc(sc.spans, func(sp keySpan) bool { return sp.hi == nil || bytes.Compare(sc.from, sp.hi) < 0 })
	if i < 0 {
		sc.spans, sc.from = nil, nil
		return nil
	}
	sc.spans = sc.spans[i:]
	return nil
}

// scanRows is how many documents passing the filter end a first page read
// in scan order: its size for a query whose rows stream, its TOP (or one
// more than its size) for a TOP without ORDER BY; 0 for a page that reads
// every candidate (ORDER BY, aggregates, GROUP BY, DISTINCT, JOIN,
// OFFSET, ranking).
func scanRows(prog *eval.Program, params map[string]document.Value, limit int) int64 {
	q := prog.Query()
	if limit <= 0 || prog.Ranked() || len(q.Joins) > 0 {
		return 0
	}
	if prog.Streaming() {
		return int64(limit)
	}
	if len(q.OrderBy) > 0 || len(q.GroupBy) > 0 || q.Select.Distinct || q.Offset != nil || gatewayplan.HasAggregates(q) {
		return 0
	}
	if top, _, _ := gatewayplan.Window(q, params); top != nil {
		return int64(min(*top, limit+1))
	}
	return 0
}

// asksTs reports whether q filters on _ts, and whether it orders by it
// first.
func asksTs(q *ast.Query, terms []plan.Term) (filters, orders bool) {
	filters = slices.ContainsFunc(terms, func(t plan.Term) bool { return slices.Equal(t.Path, tsPath) })
	if len(q.OrderBy) > 0 {
		path, ok := plan.DocPath(q, q.OrderBy[0].Expr)
		orders = ok && slices.Equal(path, tsPath)
	}
	return filters, orders
}

// orderedShapes fills in the ordered path that may serve q (the TOP walk
// or the stream), and asks for the absence, tie and partition entries it
// would read.
func (e *Engine) orderedShapes(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, s *itemScope, terms []plan.Term, limit int, probe int64, st *readStats, in *plan.Input) error {
	if path, ok := undefinedPath(c, q, params); ok && !c.absentReady(path) {
		// Until the path's absence entries are complete, the
		// documents without it are found by a scan.
		e.wantAbsent(c, path, entryKinds{})
	}
	// scoped: within a logical partition, the walk reads the partition's
	// own entries of the path once they are built (absent.go).
	// Under a hierarchical prefix of a few partitions, or over the
	// partitions a filter lists (listScope), the stream and the TOP walk
	// merge their partition entries (prefixparts.go); every entry they
	// read then meets the list.
	scoped := func(o *plan.Ordered) error {
		in.WalkEntries = in.Scope.ContainerItems
		items := in.Scope.Items
		switch {
		case s.listed != nil && !crossesArray(o.Path):
		case s.kind == plan.ScopePrefix && !crossesArray(o.Path):
			if _, few, err := prefixParts(r, c, s, st); err != nil || !few {
				return err
			}
		case s.kind != plan.ScopePartition:
			return nil
		}
		if !c.partsReady(o.Path) {
			e.wantAbsent(c, o.Path, entryKinds{parts: true})
			return nil
		}
		if s.listed != nil || s.partsListed {
			var err error
			if items, err = listedItems(r, c, s, st); err != nil {
				return err
			}
		}
		o.Scoped, in.WalkEntries = true, items
		return nil
	}
	// The terms every entry of the listed partitions meets.
	defer func() {
		for _, o := range []*plan.Ordered{in.Ordered, in.Stream} {
			if o == nil || !o.Scoped || s.listed == nil && !s.partsListed {
				continue
			}
			for i, t := range terms {
				if c.isKeyPath(t.Path) && singleValues(t) && !slices.Contains(o.Within, i) {
					o.Within = append(o.Within, i)
				}
			}
		}
	}()
	// The walk for a TOP or OFFSET and LIMIT reads the whole window's
	// documents and sorts them, on every page: it serves a window one
	// page holds, and the stream, whose pages go on from their position,
	// a longer one. A window one page holds is not the stream's (but for
	// a DISTINCT's, and one of several keys a ready composite orders
	// that the composite walk cannot serve, its terms not bounding every
	// path), so that its page is planned as it was before the stream kept
	// windows.
	end, windowed := windowEnd(q, params)
	// But a window after an offset the stream counts (offsetCounted).
	counted := offsetCounted(c, q, params, s)
	o, ok := streamShape(c, q, params, terms, limit)
	if ok && counted {
		// The rows the offset skips are counted by their entries: the
		// page reads the records of the rows after them.
		_, offset, _ := gatewayplan.Window(q, params)
		o.Skip, o.Want = int64(*offset), int64(max(min(limit, end-*offset), 0))
	}
	// And beside a term the stream may filter its entries by, the TOP
	// walk, which reads the record of each entry it walks, is weighed
	// against the filtered stream, which reads the records of the
	// entries the term names.
	filters := ok && len(streamFilter(c, q, s, terms, o)) > 0
	if w, ok := orderedShape(c, q, params, terms); ok && w.Want <= int64(limit) && !counted {
		in.Ordered = w
		if err := scoped(w); err != nil || !filters {
			return err
		}
	}
	if !ok {
		return nil
	}
	if len(q.OrderBy) > 1 {
		if _, _, covered := groupComposite(c, s, orderKeys(q)); !covered {
			if comp, _, ok := keysComposite(c, orderKeys(q)); ok && comp.kept && s.kind != plan.ScopePrefix {
				// The composite's gap entries, and within a logical
				// partition its entries of each partition apart
				// (absent.go).
				e.wantAbsent(c, o.Path, entryKinds{parts: s.kind == plan.ScopePartition, comps: []string{comp.sig()}})
			}
		}
	}
	walks := slices.ContainsFunc(compositeUses(c, q, params, terms), func(u plan.CompositeUse) bool { return u.Ordered })
	// A window over several keys that a composite walks is the walk's:
	// the stream's filter is for the pages of a drain.
	if windowed && end <= limit && !q.Select.Distinct && !counted && (!filters || len(q.OrderBy) > 1 && walks) && (walks || !composed(c, q, s)) {
		return nil
	}
	in.Stream = o
	o.Filter = streamFilter(c, q, s, terms, o)
	o.FilterUnion = unionFilter(c, q, params)
	if crossesArray(o.Path) {
		// A JOIN's elements (distinctElems) have no entries of their
		// own per partition: the walk reads the container's.
		in.WalkEntries = in.Scope.ContainerItems
	} else if err := scoped(o); err != nil {
		return err
	}
	if len(q.OrderBy) == 1 && (!q.Select.Distinct || groupedDistinct(q)) && (s.kind == plan.ScopeAll || s.kind == plan.ScopeRange) && !c.tiesReady(o.Path) {
		// Equal values in _rid order: the path's tie entries
		// (absent.go).
		e.wantAbsent(c, o.Path, entryKinds{ties: true})
	}
	if len(q.OrderBy) > 1 {
		if comp, _, ok := groupComposite(c, s, orderKeys(q)); ok {
			// o.Group 0: the composite orders the groups.
			o.Within = walkedTerms(comp, terms, o.Term)
			return nil
		}
		var err error
		if o.Group, err = firstGroup(r, c, q, params, o, s, probe, st); err != nil {
			return err
		}
	}
	return nil
}

// walkedTerms returns the terms that the walk of comp, which orders the
// groups of the first ORDER BY key (whose term is first), meets by its
// entries' place alone (groupSpan): the equalities on its paths after the
// first, one after another, and a term of one span on the path after
// them. It returns none unless an equality fixes the first key, so that
// the walk reads one group.
func walkedTerms(comp *compositeIndex, terms []plan.Term, first int) []int {
	oneValue := func(t plan.Term) bool { return len(t.Spans) == 1 && t.Spans[0].Kind == plan.SpanValue }
	if first < 0 || !oneValue(terms[first]) {
		return nil
	}
	var out []int
	for _, path := range comp.paths[1:] {
		t := slices.IndexFunc(terms, func(t plan.Term) bool { return slices.Equal(t.Path, path) })
		if t < 0 || len(terms[t].Spans) != 1 {
			break
		}
		out = append(out, t)
		if !oneValue(terms[t]) {
			break
		}
	}
	return out
}

// pinsKey reports whether the equalities of a composite use pin every
// path of the partition key.
func pinsKey(c *containerRecord, u *plan.CompositeUse, terms []plan.Term) bool {
	for _, p := range c.pk.paths {
		if !slices.ContainsFunc(u.Eq, func(t int) bool { return slices.Equal(terms[t].Path, p) && len(terms[t].Spans) == 1 }) {
			return false
		}
	}
	return true
}

// entriesKept reports whether a token taken under an earlier indexing
// policy may go on under the container's index, built for the current
// one: its access path reads the entries of paths the current policy
// indexes as well, and a path's entries are the same under every policy
// that indexes it, so its position (a value, a location or a sequence,
// never an index key) is the same place in them. The index is rebuilt
// under each policy's version, so a policy change that left the query's
// paths alone (a composite, an excluded path elsewhere) need not end its
// pages. A composite's walk is not taken on: its position is in the
// entries of a composite the policy names by its place in the list.
// buildSource checks the ORDER BY path of the ordered ways again, and
// finds the stream's terms anew.
func entriesKept(c *containerRecord, q *ast.Query, params map[string]document.Value, terms []plan.Term, cur cursor) bool {
	if cur.access.Composite() {
		return false
	}
	for _, t := range cur.terms {
		if !cur.access.Streams() && (t >= len(terms) || !c.index.indexes(terms[t].Path)) {
			return false
		}
	}
	if cur.access == plan.Union {
		for _, t := range plan.UnionTerms(q, params) {
			if !c.index.indexes(t.Path) {
				return false
			}
		}
	}
	return true
}

// maxPointIDs is the most ids of an IN list that a page in a logical
// partition reads one by one, by their id entries: the shape the SDKs'
// ReadMany sends for the ids of one partition key (c.id IN (…) with the
// key), which otherwise read the partition's scan (of up to smallScope
// items) or the id path's entries.
const maxPointIDs = 256

// pointIDs returns the ids a term of terms names, an equality or an IN on
// id of at most maxPointIDs strings: in a logical partition, each names at
// most one item.
func pointIDs(terms []plan.Term) ([]string, bool) {
	for _, t := range terms {
		if len(t.Path) != 1 || t.Path[0] != "id" || len(t.Spans) == 0 || len(t.Spans) > maxPointIDs {
			continue
		}
		ids := make([]string, 0, len(t.Spans))
		for _, sp := range t.Spans {
			if sp.Kind != plan.SpanValue || sp.Lo.Kind() != document.String {
				ids = nil
				break
			}
			ids = append(ids, sp.Lo.Str())
		}
		if ids != nil {
			return ids, true
		}
	}
	return nil, false
}

// composed reports whether q orders by several keys whose groups a
// composite index, complete for scope s, orders (groupComposite): the
// stream then reads about the rows it returns.
func composed(c *containerRecord, q *ast.Query, s *itemScope) bool {
	if len(q.OrderBy) < 2 {
		return false
	}
	_, _, ok := groupComposite(c, s, orderKeys(q))
	return ok
}

// buildSource makes the item source of the access path qa names (for
// OrderedStream, the shape streamOrdered runs), in a container of total
// items.
func (e *Engine) buildSource(r storage.Reader, c *containerRecord, total int64, prog *eval.Program, params map[string]document.Value, s *itemScope, terms []plan.Term, now time.Time, st *readStats, limit int, qa *queryAccess) error {
	qa.total = total
	q := prog.Query()
	switch qa.access {
	case plan.OrderedStream, plan.FilteredStream:
		o, ok := streamShape(c, q, params, terms, limit)
		if !ok {
			return errBadContinuation
		}
		// The terms are the query's: a resumed ORDER BY of an SDK may
		// come with a filter the first page did not have, on the ORDER
		// BY path, which no filter term is on.
		chosen := qa.terms
		qa.stream, qa.terms = o, orderedTerms(o)
		if qa.access == plan.FilteredStream {
			// The page filters by one of the terms, the one the first
			// page's plan chose; its token keeps the term's place among
			// them, which an SDK's filter on the ORDER BY path does not
			// change where it shifts the term's index. Or it filters by
			// the OR's items, whose place is past every term's.
			if qa.plan != nil && qa.plan.Chosen.ByUnion || qa.plan == nil && slices.Equal(chosen, []int{unionPlace}) {
				if !unionFilter(c, q, params) {
					return errBadContinuation
				}
				o.FilterUnion, qa.terms = true, []int{unionPlace}
			} else if qa.plan == nil && slices.Equal(chosen, []int{valuePlace}) {
				qa.terms, qa.byValues = []int{valuePlace}, true
			} else if filters := streamFilter(c, q, s, terms, o); len(filters) > 0 {
				k := filterPick(filters, qa.plan, len(qa.terms), chosen)
				o.Filter, qa.terms = filters[k:k+1], []int{k}
			}
		}
	case plan.AbsentScan:
		// Positions of the scan's order: until the path's absence
		// entries are ready again (a policy change), the scan reads
		// on from the same place.
		qa.src = scanSource(r, c, s, st)
		if path, ok := notDefinedPath(c, q); ok && c.absentReady(path) {
			qa.src = absentSource(r, c, s, path, false, st)
		}
	case plan.VectorTop:
		if qa.vector == nil {
			vo, ok := vectorShape(c, prog, params)
			if !ok {
				return errBadContinuation
			}
			qa.vector = &vo
		}
		// A term of the filter is worth reading alone while it holds
		// under a quarter of the scope: past that, scanning the scope's
		// vectors in key order costs less than reading them one by one.
		size, err := e.scopeSize(r, c, s, total)
		if err != nil {
			return err
		}
		vo := qa.vector
		found, scores, err := e.vectorCandidates(r, c, s, vo, prog, params, now, max(size.Items/4, 16), st)
		if err != nil {
			return err
		}
		// The records read to choose them are the page's documents, and
		// the scores that chose them their scores: the evaluator neither
		// decodes their vectors nor scores them again.
		qa.src = foundSource(inScanOrder(s, found))
		qa.distances = &eval.Distances{Path: vo.path, Vector: vo.vec, Function: vo.fn,
			Of: func(m eval.DocMeta) (float64, bool) { d, ok := scores[m.DocumentID]; return d, ok }}
	case plan.WordSpan:
		// The candidates are collected as an index span's are, and kept
		// for the next page alike (keptCandidates); a page after the
		// first that finds none kept reads them again however many.
		first := qa.words
		qa.src = locSource(r, c, s, qa.collecting(st, func() ([][]byte, error) {
			if first != nil {
				return first.locs, nil
			}
			locs, _, ok, err := wordLocs(r, c, s, prog.Query(), params, math.MaxInt64, st)
			if err == nil && !ok {
				err = errBadContinuation
			}
			return locs, err
		}), st)
	case plan.PointRead:
		ids, ok := pointIDs(terms)
		if !ok || s.kind != plan.ScopePartition || s.pk == nil {
			return errBadContinuation
		}
		qa.src = locSource(r, c, s, func() ([][]byte, error) {
			// The records the id entries point at come in the same round
			// trip, where the store can follow the pointers.
			reads := make([]storage.Read, len(ids))
			for i, id := range ids {
				reads[i] = storage.Read{Key: itemIDKey(c.Rid, s.pk, id), Via: collPrefix(famItem, c.Rid)}
			}
			storage.Prefetch(r, reads...)
			locs := make([][]byte, 0, len(ids))
			for _, rd := range reads {
				st.entries++
				loc, err := r.Get(rd.Key)
				if errors.Is(err, storage.ErrNotFound) {
					continue
				}
				if err != nil {
					return nil, err
				}
				if !s.holds(loc) {
					// The WHERE clause named a partition outside the
					// page's partition key range: the item is another
					// range's.
					continue
				}
				locs = append(locs, bytes.Clone(loc))
			}
			// In the partition's scan order, each once, so that a page
			// resumes from its position (locSource).
			slices.SortFunc(locs, func(a, b []byte) int { return bytes.Compare(s.indexPos(a), s.indexPos(b)) })
			return slices.CompactFunc(locs, bytes.Equal), nil
		}, st)
	case plan.IndexSpan:
		if len(qa.terms) != 1 {
			return errBadContinuation
		}
		t := terms[qa.terms[0]]
		m, ok, err := mergeSpans(r, c, t, s, st)
		if err != nil {
			return err
		}
		counts := countsByKeys(c, q, params, s, &t)
		if ok {
			qa.src = spanSource(r, c, m, st)
			if counts {
				qa.keys = mergeKeys(r, m)
			}
			return nil
		}
		collect := func() ([][]byte, error) { return spanLocs(r, c, t, s, st) }
		if g := qa.gathered; g != nil {
			collect = func() ([][]byte, error) { return g.sorted(r, st) }
		}
		locs := qa.collecting(st, collect)
		if counts {
			locs = onceLocs(locs)
			qa.keys = locKeys(s, locs)
		}
		qa.src = locSource(r, c, s, locs, st)
	case plan.Intersect:
		if len(qa.terms) != 2 {
			return errBadContinuation
		}
		ta, tb := terms[qa.terms[0]], terms[qa.terms[1]]
		if mayMerge(c, ta, s) && mayMerge(c, tb, s) {
			a, okA, err := mergeSpans(r, c, ta, s, st)
			if err != nil {
				return err
			}
			b, okB, err := mergeSpans(r, c, tb, s, st)
			if err != nil {
				return err
			}
			if okA && okB {
				qa.src = intersectSource(r, c, a, b, st)
				return nil
			}
		}
		qa.src = locSource(r, c, s, qa.collecting(st, func() ([][]byte, error) {
			a, err := spanLocs(r, c, ta, s, st)
			if err != nil {
				return nil, err
			}
			b, err := spanLocs(r, c, tb, s, st)
			if err != nil {
				return nil, err
			}
			return intersectLocs(a, b, s.byIndexPos), nil
		}), st)
	case plan.Union:
		union := plan.UnionTerms(q, params)
		if len(union) == 0 || len(qa.terms) > 1 {
			return errBadContinuation
		}
		if len(qa.terms) == 1 {
			// The OR's items that the term beside it names too, each
			// list in the scope's order: collected (on the first page
			// the OR's as weighed) and kept for the pages after.
			if qa.terms[0] >= len(terms) {
				return errBadContinuation
			}
			t, weighed := terms[qa.terms[0]], qa.collected
			qa.collected = nil
			qa.src = locSource(r, c, s, qa.collecting(st, func() ([][]byte, error) {
				var a [][]byte
				if weighed != nil {
					a = weighed.locs
				} else {
					var err error
					if a, _, _, err = unionLocs(r, c, union, s, st, math.MaxInt64); err != nil {
						return nil, err
					}
				}
				b, err := spanLocs(r, c, t, s, st)
				if err != nil {
					return nil, err
				}
				return intersectLocs(a, b, s.byIndexPos), nil
			}), st)
			return nil
		}
		if weighed := qa.collected; weighed != nil {
			qa.src = locSource(r, c, s, func() ([][]byte, error) { return weighed.locs, nil }, st)
			return nil
		}
		// Terms whose entries come in the scope's order, value by
		// value (mergeSpans), are merged from the page's position.
		ms := make([]posMerge, 0, len(union))
		for _, t := range union {
			if !mayMerge(c, t, s) {
				break
			}
			m, ok, err := mergeSpans(r, c, t, s, st)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			ms = append(ms, m)
		}
		if len(ms) == len(union) {
			qa.src = unionSource(r, c, ms, st)
			return nil
		}
		qa.src = locSource(r, c, s, qa.collecting(st, func() ([][]byte, error) {
			locs, _, _, err := unionLocs(r, c, union, s, st, math.MaxInt64)
			return locs, err
		}), st)
	case plan.ValueScan:
		if len(qa.terms) > 0 {
			return errBadContinuation
		}
		if weighed := qa.collected; weighed != nil {
			qa.src = locSource(r, c, s, func() ([][]byte, error) { return weighed.locs, nil }, st)
			return nil
		}
		vt, ok := newValueTest(s.unheld(q), params, now)
		if !ok || !c.index.indexes(vt.f.Path) {
			return errBadContinuation
		}
		qa.src = locSource(r, c, s, qa.collecting(st, func() ([][]byte, error) {
			locs, _, _, err := valueLocs(r, c, vt, s, st, nil)
			return locs, err
		}), st)
	case plan.OrderedWalk:
		o, ok := orderedShape(c, q, params, terms)
		if !ok {
			return errBadContinuation
		}
		found, ok, err := orderedItems(r, c, total, prog, params, o, s, now, st, qa.walk)
		if err != nil {
			return err
		}
		if !ok {
			// Too few documents have the property for the walk to
			// answer alone: the scope is scanned after all.
			qa.src = scanSource(r, c, s, st)
			return nil
		}
		qa.src = foundSource(inScanOrder(s, found))
	case plan.CompositeSpan, plan.CompositeWalk:
		u, ok := findCompositeUse(c, q, params, terms, qa)
		if !ok {
			return errBadContinuation
		}
		if qa.access == plan.CompositeSpan {
			qa.src = locSource(r, c, s, qa.collecting(st, func() ([][]byte, error) {
				if qa.spanLocs != nil {
					return qa.spanLocs, nil
				}
				return compositeLocs(r, c, u, terms, s, st)
			}), st)
			return nil
		}
		found, err := compositeItems(r, c, prog, params, u, terms, s, now, st)
		if err != nil {
			return err
		}
		qa.src = foundSource(inScanOrder(s, found))
	default:
		qa.src = scanSource(r, c, s, st)
		if countsByKeys(c, q, params, s, nil) {
			qa.keys = func(fn func(pos, loc []byte) (bool, error)) error { return eachScanned(r, c, s, st, fn) }
		}
	}
	return nil
}

// weighUnion gives the planner the terms of an OR the index answers
// (plan.UnionTerms) with their entries in the scope, read together up to
// bound (past it another path costs less: a scan, a term's span). A term
// on a path the index does not keep, or entries past the bound, leave
// the OR out. It collects the locations the entries name as it reads
// them, in scan order and each once, and returns them for the page,
// should the union be chosen.
func weighUnion(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, s *itemScope, bound int64, st *readStats, in *plan.Input) (*collection, error) {
	union := plan.UnionTerms(q, params)
	if len(union) == 0 {
		return nil, nil
	}
	for _, t := range union {
		if !c.index.indexes(t.Path) {
			return nil, nil
		}
	}
	locs, entries, ok, err := unionLocs(r, c, union, s, st, bound)
	if err != nil || !ok {
		return nil, err
	}
	var sum int64
	scoped := make([]bool, len(union))
	for i, t := range union {
		sum, scoped[i] = sum+entries[i], scopedTerm(c, t, s)
	}
	in.Union, in.UnionEntries, in.UnionScoped = union, entries, scoped
	return &collection{locs: locs, entries: int(sum)}, nil
}

// unionLocs collects the locations of the items in scope s that any of
// terms' spans names, in scope order and each once, reading fewer than
// limit entries in all: entries holds how many it read of each term's,
// and ok is false (the locations are not all) once that is limit.
func unionLocs(r storage.Reader, c *containerRecord, terms []plan.Term, s *itemScope, st *readStats, limit int64) (locs [][]byte, entries []int64, ok bool, err error) {
	entries = make([]int64, len(terms))
	// Every term's spans, in key order: read together when disjoint (a
	// query on many ids, one equality each, in a few round trips over
	// the network rather than one a term).
	type termSpan struct {
		keySpan
		term, base int
	}
	var all []termSpan
	bySpan := make([][]keySpan, len(terms))
	bases := make([]int, len(terms))
	for i, t := range terms {
		bySpan[i], bases[i] = scopedSpans(c, t, s)
		for _, sp := range bySpan[i] {
			all = append(all, termSpan{keySpan: sp, term: i, base: bases[i]})
		}
	}
	slices.SortStableFunc(all, func(a, b termSpan) int { return bytes.Compare(a.lo, b.lo) })
	disjoint := true
	for i := 1; i < len(all) && disjoint; i++ {
		disjoint = all[i-1].hi != nil && bytes.Compare(all[i-1].hi, all[i].lo) <= 0
	}
	if !disjoint {
		var sum int64
		for i := range terms {
			base := bases[i]
			found, n, err := collectLocsUpTo(r, bySpan[i], s, st, func(k []byte) ([]byte, bool) { return entryLoc(k, base) }, limit-sum, limit-sum)
			if err != nil {
				return nil, nil, false, err
			}
			if sum += n; sum >= limit {
				return nil, nil, false, nil
			}
			entries[i], locs = n, append(locs, found...)
		}
	} else {
		spans := make([]keySpan, len(all))
		for i, ts := range all {
			spans[i] = ts.keySpan
		}
		var sum int64
		j := 0 // the span of the key read
		err := scanSpans(r, spans, func(k, _ []byte) (bool, error) {
			if sum >= limit {
				return false, nil
			}
			sum++
			if err := st.entry(); err != nil {
				return false, err
			}
			for all[j].hi != nil && bytes.Compare(k, all[j].hi) >= 0 {
				j++
			}
			entries[all[j].term]++
			if loc, ok := entryLoc(k, all[j].base); ok && s.holds(loc) {
				locs = append(locs, bytes.Clone(loc))
			}
			return true, nil
		})
		if err != nil {
			return nil, nil, false, err
		}
		if sum >= limit {
			return nil, nil, false, nil
		}
	}
	slices.SortFunc(locs, s.byIndexPos)
	return slices.CompactFunc(locs, bytes.Equal), entries, true, nil
}

func orderedTerms(o *plan.Ordered) []int {
	if o.Term >= 0 {
		return []int{o.Term}
	}
	return nil
}

// findCompositeUse finds the composite use qa names among those the query
// allows: the planner's choice on a first page, the cursor's on a later
// one (the query and the policy version being the same, it is there).
func findCompositeUse(c *containerRecord, q *ast.Query, params map[string]document.Value, terms []plan.Term, qa *queryAccess) (*plan.CompositeUse, bool) {
	uses := compositeUses(c, q, params, terms)
	for i := range uses {
		u := &uses[i]
		if u.Index.Ordinal == qa.composite && u.Ordered == (qa.access == plan.CompositeWalk) && slices.Equal(u.Terms(), qa.terms) {
			return u, true
		}
	}
	return nil, false
}

// inScanOrder sorts items a walk found into the scan order of scope s,
// the order the evaluator breaks ties between them by (sortRows).
func inScanOrder(s *itemScope, found []foundItem) []foundItem {
	slices.SortFunc(found, func(a, b foundItem) int { return bytes.Compare(s.scanPos(a.loc), s.scanPos(b.loc)) })
	return found
}

// foundSource yields items an access path has read already, in order.
func foundSource(found []foundItem) itemSource {
	return func(_ []byte, fn func(pos, loc []byte, rec *itemRecord) (bool, error)) error {
		for i := range found {
			if more, err := fn(found[i].loc, found[i].loc, &found[i].rec); err != nil || !more {
				return err
			}
		}
		return nil
	}
}

// intersectLocs returns the locations both lists, sorted by order, hold.
func intersectLocs(a, b [][]byte, order func(a, b []byte) int) [][]byte {
	var out [][]byte
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch d := order(a[i], b[j]); {
		case d < 0:
			i++
		case d > 0:
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	return slices.Clip(out)
}

// isKeyPath reports whether path is one of the partition key's paths.
func (c *containerRecord) isKeyPath(path []string) bool {
	return slices.ContainsFunc(c.pk.paths, func(p []string) bool { return slices.Equal(p, path) })
}

// notDefinedPath returns the first path q's WHERE clause says its rows'
// documents lack (plan.AbsentPaths) that may keep absence entries: an
// indexed path of the document, through no array, not a system property.
func notDefinedPath(c *containerRecord, q *ast.Query) ([]string, bool) {
	for _, p := range plan.AbsentPaths(q) {
		if !crossesArray(p) && !systemPath(p) && c.index.indexes(p) {
			return p, true
		}
	}
	return nil, false
}

// weighAbsent gives the planner the scope's documents without the path
// of a NOT IS_DEFINED (plan.AbsentScan), counted up to bound through the
// path's absence entries, once they are ready; until then the first such
// query asks the builder for them, as an ORDER BY does. Within a logical
// partition or a prefix the entries in location order are the scope's
// own; over a range or the whole container, those in _rid order, the
// container's.
func (e *Engine) weighAbsent(r storage.Reader, c *containerRecord, q *ast.Query, s *itemScope, bound int64, st *readStats, in *plan.Input) error {
	path, ok := notDefinedPath(c, q)
	if !ok {
		return nil
	}
	if !c.absentReady(path) {
		e.wantAbsent(c, path, entryKinds{})
		return nil
	}
	// The absence entries' path reads every one of them: past what the
	// cheapest path weighed so far costs, its count changes no choice.
	// Without it, c.u = 'hot' AND NOT IS_DEFINED(c.x), 200 items beside
	// 10⁵ without x, counted the absence entries to the probe.
	_, best := chooseAsWeighed(*in)
	bound = min(bound, plan.EntriesCosting(best.Chosen.Cost))
	var span keySpan
	scoped := s.kind == plan.ScopePartition || s.kind == plan.ScopePrefix
	if scoped {
		span.lo, span.hi = scopeBounds(absentPrefix(indexPrefix(c), absentLocMarker, path), s)
	} else {
		prefix := absentPrefix(indexPrefix(c), absentSeqMarker, path)
		span = keySpan{lo: prefix, hi: prefixEnd(prefix)}
	}
	n, err := countSpans(r, []keySpan{span}, bound, st)
	if err != nil {
		return err
	}
	in.Absent, in.AbsentEntries, in.AbsentScoped = path, n, scoped
	return nil
}
