package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"github.com/mayfly-db/mayfly/internal/query/parser"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/script"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// QueryParams is one page of an item query.
type QueryParams struct {
	ItemRef
	Query        string
	Params       map[string]document.Value
	MaxItemCount int
	Continuation string
	// RangeID is x-ms-documentdb-partitionkeyrangeid: the client scopes the
	// query to one range and merges ranges itself.
	RangeID string
	// CrossPartition is x-ms-documentdb-query-enablecrosspartition.
	CrossPartition bool
	// AllowScan lets range filters run on paths the index does not keep
	// (x-ms-documentdb-force-query-scan, x-ms-documentdb-query-enable-scan).
	AllowScan bool
	// Features is x-ms-cosmos-supported-query-features, which shapes the
	// plan a refusal to serve the query across partitions carries.
	Features string
	// MinEPK and MaxEPK (x-ms-start-epk, x-ms-end-epk) narrow the scope
	// to effective partition keys in [MinEPK, MaxEPK) (itemScope.narrowToEPKs).
	MinEPK, MaxEPK string
	// Resume is the query body's resumeFilter (the .NET SDK's): the rows
	// after it in the ORDER BY's order, nil for all.
	Resume *ResumeFilter
	// Whole (x-ms-mayfly-query-whole) serves a query across partitions
	// whole, as over a single range, where the gateway would refuse it
	// for the client to run range by range and merge: Mayfly's Data
	// Explorer has no SDK to merge with.
	Whole bool
	// inScript marks a stored procedure's query, which reads its
	// transaction's writes: its pages keep no rows (heldRows).
	inScript bool
	// countOnly asks a count for what the counters or the index answer,
	// and an empty page where only the documents would (partRows).
	countOnly bool
}

// compileQuery parses and compiles a query, turning its errors into 400s
// (the parser checks the text's size and depth). Its evaluation draws on
// budget b.
func compileQuery(text string, params map[string]document.Value, now time.Time, b *eval.Budget) (*eval.Program, error) {
	return compileQueryWith(text, params, now, b, nil)
}

// compileQueryWith is compileQuery for a query over items, whose
// user-defined functions u calls.
func compileQueryWith(text string, params map[string]document.Value, now time.Time, b *eval.Budget, u *udfs) (*eval.Program, error) {
	q, err := parser.Parse(text)
	if err != nil {
		return nil, queryError(err)
	}
	opts := eval.Options{Now: now, Budget: b, MaxSortRows: b.SortRows()}
	if u != nil {
		opts.UDF = u.call
		opts.Vectors = &u.vectors
		opts.Planar = &u.planar
	}
	prog, err := eval.Compile(q, params, opts)
	if err != nil {
		return nil, queryError(err)
	}
	return prog, nil
}

// errPageTime answers a query whose time for the request ran out where
// the page could not end early.
var errPageTime = errorf(RequestTimeout, "The query could not complete within the time allowed for one request. Narrow it with a filter or an index, or ask for fewer results per page.")

// queryError turns an evaluation error into the engine's: the query's own
// faults into 400s with the service's body, a budget's time running out
// into RequestTimeout. Storage errors and the request's cancellation pass
// unchanged.
func queryError(err error) error {
	if errors.Is(err, eval.ErrTime) {
		return errPageTime
	}
	if errors.Is(err, script.ErrTimeout) {
		// As the service answers a UDF that runs out of time: 408.
		var qe *ast.Error
		if errors.As(err, &qe) {
			return errorf(RequestTimeout, "%s", qe.Message)
		}
		return errorf(RequestTimeout, "A user-defined function ran past its time limit.")
	}
	var qe *ast.Error
	if errors.As(err, &qe) {
		loc := ""
		if qe.Pos >= 0 && qe.End >= qe.Pos {
			loc = fmt.Sprintf(`"location":{"start":%d,"end":%d},`, qe.Pos, qe.End)
		}
		return &Error{Code: BadRequest, Message: `Message: {"errors":[{"severity":"Error",` + loc + `"code":"` + qe.Code + `","message":` + string(document.AppendString(nil, qe.Error())) + `}]}`}
	}
	return err
}

// QueryItems runs one page of a query over a container's items. Expired
// items never take part (ttl.md A3).
func (e *Engine) QueryItems(ctx context.Context, p QueryParams) (*FeedPage, error) {
	now, done, err := e.judgingIn(ctx, p.DB, p.Coll)
	if err != nil {
		return nil, err
	}
	defer done()
	st := readStats{budget: e.budget(ctx)}
	fns := &udfs{}
	defer fns.close()
	var prog *eval.Program
	if !now.IsZero() {
		// Compiled before any read, so a query that does not parse costs
		// none; over a shared store, "now" comes with the first read.
		if prog, err = compileQueryWith(p.Query, p.Params, now, st.budget, fns); err != nil {
			return nil, err
		}
	}
	page := &FeedPage{}
	var coll *containerRecord
	err = e.store.View(ctx, func(r storage.Reader) error {
		if dbRid, c := e.cachedContainer(p.DB, p.Coll); c != nil {
			storage.Prefetch(r, storage.Read{Key: containerKey(dbRid, p.Coll)}, storage.Read{Key: stateKey(c.Rid, c.seqOfScope(p.ItemRef, p.RangeID))})
		}
		now, err := e.nowIn(ctx, r, now)
		if err != nil {
			return err
		}
		prog := prog
		if prog == nil {
			if prog, err = compileQueryWith(p.Query, p.Params, now, st.budget, fns); err != nil {
				return err
			}
		}
		c, err := e.loadContainer(r, p.DB, p.Coll)
		if err != nil {
			return err
		}
		fns.bind(r, c)
		coll = c
		return e.queryIn(r, c, p, prog, now, &st, page)
	})
	if err != nil {
		return nil, err
	}
	n := 0
	for _, it := range page.Items {
		n += len(it)
	}
	page.Examined, page.ExaminedBytes, page.IndexEntries = st.records, st.bytes, st.entries
	page.Charge = queryCharge(st.records, st.entries, n)
	e.charge(coll, page.Charge)
	return page, nil
}

// queryIn runs one page of query p over container c in the reader r (a
// request's view, or a stored procedure's transaction), with its compiled
// program and its "now", into page.
func (e *Engine) queryIn(r storage.Reader, c *containerRecord, p QueryParams, prog *eval.Program, now time.Time, st *readStats, page *FeedPage) (rerr error) {
	page.CollRid = c.ridString()
	if kp := e.listedParts(c, p, prog); kp != nil {
		run := e.queryParts
		if kp.fold != nil {
			run = e.foldParts
		}
		if done, err := run(r, c, p, now, st, page, kp); done || err != nil {
			return err
		}
	}
	state, err := readTotals(r, c, c.seqOfScope(p.ItemRef, p.RangeID))
	if err != nil {
		return err
	}
	// What pages keep of their candidates for the next; nothing for a
	// script's query (heldRows).
	kept := candidateKeeper{r: r, c: c, etag: c.Etag, writes: state.writes, items: state.items, now: e.clock.Now()}
	if !p.inScript {
		kept.k = e.kept
	}
	page.LSN = state.lsn
	if p.Resume != nil {
		q, derr := withResumeFilter(prog.Query(), p.Resume, c.Rid, e.ridTies(r, c, prog.Query(), p))
		if derr != nil {
			return derr
		}
		if prog, err = prog.Derive(q); err != nil {
			return queryError(err)
		}
	}
	if orderByJoined(prog.Query()) {
		return errOrderByJoined
	}
	// The index checks judge the query as written: a computed property's
	// path is its own, whatever stored paths its definition reads.
	if derr := checkIndexNeeds(c, prog.Query(), p.Params, p.AllowScan); derr != nil {
		return derr
	}
	if derr := checkComputedReads(c, prog.Query()); derr != nil {
		return derr
	}
	if prog, err = withComputedProgram(prog, c.computed); err != nil {
		return err
	}
	key, hasKey := p.PartitionKey, p.HasKey
	single := hasKey || p.RangeID != "" || len(c.pk.paths) == 0
	var pinnedBy []ast.Expr
	if len(c.pk.paths) > 0 {
		// A WHERE clause that pins the partition key (or a prefix of a
		// hierarchical one) scopes the query to it, as the gateway
		// routes it. Its terms hold for every item of the scope, and so
		// do they when they pin the key the header names.
		if pinned, terms, ok := pinnedKey(c, prog.Query(), p.Params); ok && (!hasKey || pinned.Equal(key)) {
			key, hasKey, single, pinnedBy = pinned, true, true, terms
		}
	}
	if !hasKey && gatewayplan.ServedWhole(prog.Query()) {
		// A rank needs the statistics of every document it ranks, and a
		// value made of aggregates all of their input: such a query is
		// served here whole, across partitions, and only then. Split by
		// range, each range would answer for itself alone.
		if p.RangeID != "" && len(e.rangesOf(c)) > 1 {
			if prog.Ranked() {
				return errorf(BadRequest, "ORDER BY RANK over a container of several partition key ranges is served whole: send the query without a partition key range, or with a partition key.")
			}
			return errorf(BadRequest, "Cross partition query only supports 'VALUE <AggregateFunc>' for aggregates.")
		}
		single = single || p.CrossPartition
	}
	single = single || p.Whole
	if !single && !prog.Streaming() {
		return crossPartitionRefusal(c, p.Query, p.Params, p.Features)
	}
	if !single && !p.CrossPartition {
		return errorf(BadRequest, "Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception.")
	}
	// A DISTINCT of one property's values comes in their order, which its
	// index gives a page at a time (distinctInOrder); the tokens of the
	// two orders are told apart by their fingerprints.
	asked, fpText := prog.Query(), p.Query
	if byValue, ok := distinctInOrder(c, prog.Query(), p.Params, p.AllowScan); ok {
		if prog, err = prog.Derive(byValue); err != nil {
			return queryError(err)
		}
		fpText = "distinct in value order " + p.Query
	}
	if q := prog.Query(); q.Select.Distinct && rowsOwnRid(q) {
		// Rows that differ by _rid are distinct already: the query
		// without DISTINCT is the same query, and may stream.
		f := *q
		f.Select.Distinct = false
		if prog, err = prog.Derive(&f); err != nil {
			return queryError(err)
		}
	}
	// Any other DISTINCT without ORDER BY whose rows would stream without
	// it pages as that query, dropping the rows earlier pages returned
	// (distinct.go).
	// A TOP, or an OFFSET and LIMIT, is then a window on those rows.
	distinct := false
	// (Those rows stream when the query has a FROM clause and no ORDER BY,
	// GROUP BY or aggregate: eval.Program.Streaming.)
	if q := prog.Query(); q.Select.Distinct && q.From != nil && len(q.OrderBy) == 0 && len(q.GroupBy) == 0 && !gatewayplan.HasAggregates(q) {
		f := *q
		f.Select.Distinct = false
		if prog, err = prog.Derive(&f); err != nil {
			return queryError(err)
		}
		distinct = true
	}
	scope, derr := e.scopeFor(c, key, hasKey, p.RangeID)
	if derr != nil {
		return derr
	}
	scope.narrowToEPKs(p.MinEPK, p.MaxEPK)
	scope.held = pinnedBy
	if err := e.listScope(r, c, prog.Query(), p, pinnedBy != nil, scope, st); err != nil {
		return err
	}
	// The aggregates the counters or the index answer see the query
	// without the terms that pinned its scope: every item of the scope
	// meets them.
	short := scope.unheld(prog.Query())
	if count, boxed := countShape(short); count && p.Continuation == "" {
		// The counters, then the index, then the values of a path, each
		// where it can count the clause.
		var done bool
		var err error
		if short.Where == nil {
			done, err = e.countFromCounters(r, c, p.RangeID, scope, now, boxed, st, page)
		} else {
			done, err = e.countDefinedByIndex(r, c, short, boxed, p.RangeID, scope, now, st, page)
			if !done && err == nil {
				done, err = e.countByKeys(r, c, short, p.Params, p.RangeID, scope, now, boxed, st, page)
			}
			if !done && err == nil {
				done, err = countByIndex(r, c, short, p.Params, scope, now, boxed, st, page)
			}
			if !done && err == nil {
				done, err = countByWords(r, c, short, p.Params, scope, now, boxed, st, page)
			}
			if !done && err == nil {
				done, err = e.countByValues(r, c, short, p.Params, scope, now, state.items, boxed, st, page)
			}
		}
		if done || err != nil || p.countOnly {
			return err
		}
	}
	fpOf := func(text string) uint64 {
		return fingerprint(p.Params, "query", string(c.Rid), text, string(partition.AppendKeyBytes(nil, key)),
			strconv.FormatBool(hasKey), p.RangeID, string(scope.lo), string(scope.hi))
	}
	if p.Continuation == "" {
		if done, err := e.aggregateByIndex(r, c, short, p.Params, p.RangeID, scope, now, st, page); done || err != nil {
			return err
		}
	}
	// A GROUP BY counted by the index pages through the groups' values
	// under tokens of its own (groupCountByIndex).
	groupFP := fpOf("groups counted by the index " + p.Query)
	var groupCur *cursor
	if p.Continuation != "" {
		if k, derr := parseCursor(p.Continuation, groupFP); derr == nil && k.access == plan.IndexCount {
			groupCur = &k
		}
	}
	if p.Continuation == "" || groupCur != nil {
		next := cursor{fingerprint: groupFP, text: textHash(p.Query), indexVer: c.Index.Version}
		if done, err := e.groupCountByIndex(r, c, short, p.Params, p.RangeID, scope, now, pageSize(p.MaxItemCount), groupCur, next, kept, st, page); done || err != nil || groupCur != nil {
			if err == nil && !done {
				err = errBadContinuation
			}
			return err
		}
	}
	// An ORDER BY whose filter fixes the path a composite index names
	// before its keys may page through that composite (ledByComposite).
	way := ""
	if led, ok, err := e.ledByComposite(r, c, prog.Query(), p, scope, st, fpOf(ledWay+fingerprintText(asked, fpText))); err != nil {
		return err
	} else if ok {
		if prog, err = prog.Derive(led); err != nil {
			return queryError(err)
		}
		way = ledWay
	}
	fp := fpOf(way + fingerprintText(asked, fpText))
	var planned *queryAccess
	var counted *termCounts
	if q, skipped, ok := keyOrderShape(prog, p, fixedKeyPaths(c, key, hasKey)); ok {
		// A GROUP BY of whole groups, read in the order of its key
		// (keyedgroups.go). Ordered by its varying keys alone, its
		// positions are not those of all its keys.
		way := "groups in key order "
		if skipped {
			way = "groups in the order of their varying keys "
		}
		// Its order may be led through a composite too.
		if led, ok, err := e.ledByComposite(r, c, q, p, scope, st, fpOf(ledWay+way+p.Query)); err != nil {
			return err
		} else if ok {
			q, way = led, ledWay+way
		}
		ordered, err := prog.Derive(q)
		if err != nil {
			return queryError(err)
		}
		done, qa, counts, err := e.keyOrderGroups(r, c, prog, ordered, p, scope, now, st, state.items, kept, fpOf(way+p.Query), page)
		if done || err != nil {
			return err
		}
		planned, counted = qa, counts
	}
	var cur cursor
	resumed := p.Continuation != ""
	if resumed {
		if cur, derr = parseCursor(p.Continuation, fp); derr != nil {
			return derr
		}
		if cur.text != textUnknown && cur.text != textHash(p.Query) && !cur.access.Streams() {
			// The resume filter of an SDK's ORDER BY changed: an
			// offset into the old filter's rows means nothing in the
			// new one's. The new filter leaves out the values before
			// the resume point; the rows at it already returned come
			// again, and the SDK drops them by _rid and skip count.
			cur, resumed = cursor{}, false
		}
	}
	var seen *distinctRows
	var seenID uint64
	if distinct {
		if seen, err = newDistinctRows(e.seen, cur, prog.Budget()); err != nil {
			return queryError(err)
		}
		seenID = newKeptID()
		defer func() {
			if rerr != nil || page.Continuation == "" {
				return
			}
			next, derr := parseCursor(page.Continuation, fp)
			if derr != nil {
				rerr = derr
				return
			}
			e.seen.keep(seen.seen(next), e.clock.Now())
		}()
	}
	limit := pageSize(p.MaxItemCount)
	// A whole result's rows after the page before, if it kept them and
	// they are still the query's (heldrows.go).
	var held *heldRows
	if !distinct && p.Resume == nil && !p.inScript && holdsRows(prog.Query()) {
		if h, ok := e.held.take(cur.kept); ok && resumed && h.servesAt(cur, c, state, now) {
			if h.marks != nil {
				e.sortedHeldPage(h, limit, page)
			} else {
				e.heldPage(h, limit, page)
			}
			return nil
		}
		held = &heldRows{etag: c.Etag, writes: state.writes}
		defer func() {
			if rerr == nil && held.holds() && page.Continuation == held.next.String() {
				e.held.keep(held.next.kept, held, held.size(), e.clock.Now())
			}
		}()
	}
	// A page of a TOP, or of an OFFSET and LIMIT, streams the rows of
	// the query without them, within their window, from where the last
	// page ended. A token from before windows (an offset with no
	// position) still reads from the start.
	if prog.Ranked() && !distinct && p.Resume == nil && !p.inScript {
		// A rank by one FullTextScore may be made from the items holding
		// its terms (rankwords.go). Its pages are placed by their offset
		// in the ranked rows, as a scan's.
		next := cursor{fingerprint: fp, text: textHash(p.Query), access: plan.Scan, indexVer: c.Index.Version}
		if done, err := rankedPage(r, c, prog, scope, now, st, cur, next, limit, page, held); done || err != nil {
			return err
		}
	}
	rows, window, err := windowed(prog, p.Params)
	if err != nil {
		return err
	}
	if rows != nil && cur.pos == nil && cur.skip > 0 && !distinct {
		rows = nil
	}
	streamed := rows != nil && rows.Streaming()
	qp := planned
	if qp == nil {
		if qp, err = e.planQuery(r, c, state.items, prog, p.Params, scope, now, st, limit, resumed, cur, scanFirstPaced, counted); err != nil {
			return err
		}
	}
	// A page that collects its candidates keeps them for the next
	// (keptCandidates), when its token names nothing else kept and its
	// rows stream in the candidates' order.
	var collectedID uint64
	if !distinct && p.Resume == nil && !p.inScript && (prog.Streaming() || streamed) {
		if resumed {
			if qp.kept, err = kept.takeCollection(cur, qp, scope, st); err != nil {
				return err
			}
		}
		collectedID = newKeptID()
	}
	// keeping keeps what a page collects for the next; its k is nil
	// where nothing is kept.
	keeping := candidateKeeper{items: state.items}
	if collectedID != 0 {
		keeping = kept
	}
	// run reads the page by qp; passed counts the rows of a page that
	// makes them at its end (runQuery) as its records are read, and left,
	// when not nil, how many more records a paced scan may read.
	run := func(qp *queryAccess, page *FeedPage, passed *int, left func() int) error {
		page.Plan = qp.plan
		if qp.distances != nil {
			prog.UseDistances(qp.distances)
			if rows != nil {
				rows.UseDistances(qp.distances)
			}
		}
		next := cursor{fingerprint: fp, text: textHash(p.Query), access: qp.access, terms: qp.terms, composite: qp.composite, indexVer: c.Index.Version, kept: seenID}
		if collectedID != 0 && qp.stream == nil {
			next.kept = collectedID
		}
		var win *rowWindow
		if rows != nil {
			w := window
			w.made = cur.made
			win = &w
		}
		// The page reads its scattered records a run at a time: as
		// many as it may at once when it reads every document anyway,
		// else as many as it has rows still to make, for a document
		// makes one row at most, so it reads none the page does not
		// reach. Under a JOIN, where a document may make several, it
		// reads one, then as many as its rows so far say the rest
		// need (the rows a resumed page's first document made before
		// the page counted with it). A paced scan reads no more than
		// its pace lets it.
		var need, made func() int
		partial, groups := partialGroups(prog, p, resumed, cur), 0
		switch stop := prog.Stop(cur.skip + limit + 1); {
		case partial:
			// A document makes one group at most, without a JOIN.
			need = func() int { return limit - groups }
		case qp.stream != nil && win != nil:
			need = func() int { return win.need(limit - len(page.Items)) }
		case qp.stream != nil || prog.Streaming():
			need = func() int { return limit - len(page.Items) }
			made = func() int { return cur.skip + len(page.Items) }
		case stop < 0:
			need = func() int { return aheadMax }
		case win != nil:
			need = func() int { return win.need(limit - len(page.Items)) }
			made = func() int { return cur.skip + win.made - cur.made }
		default:
			need = func() int { return stop - *passed }
			made = func() int { return *passed }
		}
		st.want = need
		if made != nil && len(prog.Query().Joins) > 0 {
			base := st.records
			st.want = func() int {
				n, rows := need(), made()
				if rows == 0 {
					return 1
				}
				return min(n, (n*(st.records-base)+rows-1)/rows)
			}
		}
		if left != nil {
			rows := st.want
			st.want = func() int { return min(rows(), left()) }
		}
		defer func() { st.want = nil }()
		if qp.stream != nil && win != nil {
			return streamOrdered(r, c, rows, p.Params, qp, scope, now, st, cur, next, limit, win, nil, e.seen, kept, page)
		}
		if qp.stream != nil {
			return streamOrdered(r, c, prog, p.Params, qp, scope, now, st, cur, next, limit, nil, nil, e.seen, kept, page)
		}
		if prog.Streaming() {
			seen.reset()
			return streamQuery(qp.src, c, prog, scope, now, cur, next, limit, !single, nil, seen, page)
		}
		if streamed {
			seen.reset()
			from := cur
			if qp.keys != nil && qp.pace == nil && left == nil && seen == nil && cur.pos == nil {
				// The rows before the window, counted by their keys.
				pos, end, err := skipCounted(r, c, qp.keys, scope, win, now, st)
				if err != nil || end {
					return err
				}
				if pos != nil {
					from.pos, from.skip = pos, 0
				}
			}
			return streamQuery(qp.src, c, rows, scope, now, from, next, limit, !single, win, seen, page)
		}
		if win != nil {
			resolve := func(m *eval.Mark, refs []markRef) error { return resolveMarkRefs(r, c, rows, scope, now, st, m, refs) }
			return sortedPage(qp.src, c, rows, scope, now, cur, next, limit, *win, resolve, page, passed, held)
		}
		if partial {
			return partialGroupsPage(qp.src, c, prog, scope, now, cur, next, limit, &groups, page)
		}
		return runQuery(qp.src, c, prog, scope, now, cur, next, limit, page, passed, held)
	}
	for qp.pace != nil {
		// A scan tried first (plan.ScanFirstBounds), on a page of its
		// own, paced by the terms' counts: kept if it filled before its
		// pace or its budget stopped it, else set aside, its reads still
		// counted, and the page planned again from the counts it made.
		sp := qp.pace
		tried := &FeedPage{CollRid: page.CollRid, LSN: page.LSN}
		passed := 0
		hits := func() int { return passed }
		if prog.Streaming() || streamed {
			hits = func() int { return len(tried.Items) }
		}
		over := false
		var left func() int
		qp.src, left = paced(qp.src, sp, hits, &over)
		err := run(qp, tried, &passed, left)
		if err != nil || !over {
			final := sp.plan()
			tried.Plan = &final
			*page = *tried
			if err == nil && qp.stream == nil && (prog.Streaming() || streamed) {
				err = e.mergeAfterScan(r, c, prog, p.Params, scope, st, page, fp, keeping)
			}
			return err
		}
		try := noScanFirst
		if sp.thin {
			try = scanFirstCounted
		}
		if qp, err = e.planQuery(r, c, state.items, prog, p.Params, scope, now, st, limit, resumed, cur, try, sp.tc); err != nil {
			return err
		}
	}
	for qp.walk != nil {
		// A stream tried first (walkPace), on a page of its own: kept
		// unless its filter proved narrow enough for another path, else
		// set aside, its reads still counted, and the page planned again
		// from the terms' counts.
		tried := &FeedPage{CollRid: page.CollRid, LSN: page.LSN}
		passed := 0
		err := run(qp, tried, &passed, qp.walk.left)
		if !errors.Is(err, errWalkOver) {
			*page = *tried
			return err
		}
		if qp, err = e.planQuery(r, c, state.items, prog, p.Params, scope, now, st, limit, resumed, cur, noScanFirst, qp.walk.tc); err != nil {
			return err
		}
	}
	passed := 0
	if err := run(qp, page, &passed, nil); err != nil {
		return err
	}
	if qp.access == plan.Scan && qp.stream == nil && (prog.Streaming() || streamed) {
		return e.mergeAfterScan(r, c, prog, p.Params, scope, st, page, fp, keeping)
	}
	if qp.collected != nil && qp.stream == nil && (prog.Streaming() || streamed) {
		if err := scanAfterCollect(r, c, scope, st, qp.collected, limit, page, fp, keeping.keepsLocs(qp.collected.locs)); err != nil || collectedID == 0 || page.Continuation == "" {
			return err
		}
		next, derr := parseCursor(page.Continuation, fp)
		if derr != nil {
			return derr
		}
		if next.access == qp.access && next.kept == collectedID {
			kept.keepCollection(next, qp, scope)
		}
	}
	return nil
}

// scanAfterCollect has the pages after one that collected its candidates
// (an index span of a range of many values, an intersection, a composite
// span) scan from its position instead, when a scan would reach the rows
// of every page ahead for less than collecting again costs
// (plan.ScanBeatsCollect). A collecting page reads all the candidates'
// entries, and would on every page; but it knows where each candidate lies
// in _rid order, so how far a scan must read for each page to come. Rows
// that lie together in that order are common: items a range of times or
// of counters holds were mostly written together (c.ts > @since). Over a
// range or the whole container only, where the page positions of both
// are sequences, so a window is a difference of two; a scan then reads a
// record for each sequence at most (fewer where items are gone).
//
// A page that keeps its candidates for the next (keptCandidates) weighs
// the pages ahead at their records alone, as they read no entry again
// while the engine keeps them.
//
// Every page ahead, not only the next: a scan does not switch back when
// the rows thin out past the first pages (mergeAfterScan hands on only to
// terms whose entries merge, or collects them once the scan has cost as
// much, collectAfterScan). Writes made after the switch may still spread
// the rows ahead; the scan reads through them.
func scanAfterCollect(r storage.Reader, c *containerRecord, s *itemScope, st *readStats, col *collection, limit int, page *FeedPage, fp uint64, keeps bool) error {
	if page.Continuation == "" || (s.kind != plan.ScopeAll && s.kind != plan.ScopeRange) {
		return nil
	}
	next, derr := parseCursor(page.Continuation, fp)
	if derr != nil {
		return derr
	}
	if len(next.pos) != 8 || next.access == plan.Scan {
		return nil
	}
	locs := col.locs
	seq := func(loc []byte) uint64 { return binary.BigEndian.Uint64(seqPos(loc)) }
	from := binary.BigEndian.Uint64(next.pos)
	i, _ := slices.BinarySearchFunc(locs, from, func(loc []byte, from uint64) int { return cmp.Compare(seq(loc), from) })
	// Candidates the page keeps for the next are not collected again:
	// such a page reads its rows' records alone.
	entries := int64(col.entries)
	if keeps {
		entries = 0
	}
	beats := func(end uint64) bool {
		return end < from || plan.ScanBeatsCollect(entries, int64(limit), int64(end-from+1))
	}
	for ; i+limit < len(locs); i += limit {
		end := seq(locs[i+limit-1])
		if !beats(end) {
			return nil
		}
		from = end + 1
	}
	// The last page's scan reads on to the end of the scope's entries.
	last, ok, err := lastSeq(r, c, s, st)
	if err != nil || !ok || !beats(last) {
		return err
	}
	next.access, next.terms, next.composite = plan.Scan, nil, 0
	page.Continuation = next.String()
	return nil
}

// lastSeq is the highest sequence of the items a scan of scope s may
// read, from c's _rid-order entries; ok is false when there is none.
func lastSeq(r storage.Reader, c *containerRecord, s *itemScope, st *readStats) (uint64, bool, error) {
	return endSeq(r, c, s, true, st)
}

// firstSeq is the lowest sequence of the items a scan of s may read, as
// lastSeq.
func firstSeq(r storage.Reader, c *containerRecord, s *itemScope, st *readStats) (uint64, bool, error) {
	return endSeq(r, c, s, false, st)
}

func endSeq(r storage.Reader, c *containerRecord, s *itemScope, last bool, st *readStats) (uint64, bool, error) {
	prefix := collPrefix(famByRid, c.Rid)
	lo, hi := s.ridSpan(c)
	var seq uint64
	found := false
	err := scanRangeDir(r, lo, hi, last, func(k, _ []byte) (bool, error) {
		st.entries++
		if len(k) == len(prefix)+8 {
			seq, found = binary.BigEndian.Uint64(k[len(prefix):]), true
		}
		return false, nil
	})
	return seq, found, err
}

// mergeSwitchShare is the share of the records a scan reads that pass,
// below which the pages after it step through two terms' entries instead
// (mergeAfterScan); mergeSwitchShareOne is the share below which they
// read one term's entries, when the query has one term the index serves.
// A row through one term costs an entry and a record read by its location
// (plan.Choose: 0.15 and 2.5, a scanned record 1), so the entries cost
// less whenever fewer than 0.38 of the records scanned pass; measured
// (BenchmarkDeepPage array-contains), a scanned record took 3.6 µs and a
// row through the entries 8.5 µs.
const (
	mergeSwitchShare    = 0.2
	mergeSwitchShareOne = 0.3
)

// unionAfterScan has the next page of a scan over a range or the whole
// container read the union of an OR's terms (plan.UnionTerms) from where
// the scan stopped, when the scan found few of its records passing (the
// caller's check) and the WHERE clause is that OR alone. Terms whose
// entries merge from the position (their tie entries built, unionSource)
// cost a union page about its rows' entries and records, fewer than the
// scan's records. Others are collected, which pays once the drain has
// scanned as many records as the terms' entries cost and would scan as
// many again (collectPays), as the collection is kept for the pages
// after it; where nothing is kept, once a page's scan costs more than
// collecting them on every page. A first page whose scan filled it
// early (the OR's items lay first in _rid order) then stops scanning
// where they thin out. Positions there are sequences in both. Terms of
// many entries ask for their tie entries, for the union's pages to
// merge.
//
// The union's entries were counted on every page, up to what its scan
// had cost: over 2·10⁵ items, `c.m = 5 OR c.h = 7` (a ninth of them,
// spread through _rid order) read 925 records and 7,091 entries a page,
// and never switched.
func (e *Engine) unionAfterScan(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, s *itemScope, st *readStats, page *FeedPage, fp uint64, kept candidateKeeper) (bool, error) {
	if (s.kind != plan.ScopeAll && s.kind != plan.ScopeRange) || plan.Operands(q) == nil {
		return false, nil
	}
	union := plan.UnionTerms(q, params)
	if union == nil {
		return false, nil
	}
	next, derr := parseCursor(page.Continuation, fp)
	if derr != nil {
		return false, derr
	}
	if next.access != plan.Scan || len(next.pos) != 8 {
		return false, nil
	}
	merges := true
	for _, t := range union {
		if !c.index.indexes(t.Path) {
			return false, nil
		}
		if merges = merges && mayMerge(c, t, s); merges {
			_, ok, err := mergeSpans(r, c, t, s, st)
			if err != nil {
				return false, err
			}
			merges = ok
		}
	}
	if !merges {
		if passingEntries(kept.items, page, st) >= tieWishEntries {
			for _, t := range union {
				if !c.tiesReady(t.Path) {
					e.wantAbsent(c, t.Path, entryKinds{ties: true})
				}
			}
		}
		// Collected: once, and kept for the pages after it, when the
		// scan has cost as much (collectPays); else on every page, when
		// that costs less than this page's scan.
		scanned, left := int64(st.records), int64(st.records)
		if kept.k != nil {
			var err error
			if scanned, left, err = e.scanSoFar(r, c, s, st, next.pos, kept.items); err != nil {
				return false, err
			}
		}
		col, err := collectPays(r, c, union, s, st, page, kept.items, scanned, left)
		if col == nil || err != nil {
			return false, err
		}
		next.access, next.terms, next.composite = plan.Union, nil, 0
		keepAfterScan(kept, next, nil, col, s, page)
		return true, nil
	}
	next.access, next.terms, next.composite = plan.Union, nil, 0
	page.Continuation = next.String()
	return true, nil
}

// mergeAfterScan has the next page of a scan over a range, the whole
// container, a hierarchical prefix or a logical partition step through
// two of the query's terms (intersectSource), or read its one term the
// index serves (spanSource), from where the scan stopped, when the scan found few of
// its records passing and its filter is those terms alone. Stepping reads
// an entry of each term for an item either holds and a record for each
// item both hold, where the scan reads a record for every item: with the
// planner's costs (plan.Choose: a record scanned 1, read by its location
// 2.5, an entry 0.15), the steps cost less whenever fewer than 0.28 of
// the records scanned pass, whatever the terms hold. A first page whose every term holds many
// entries tries a scan (plan.ScanFirstBounds) and its token goes on
// scanning, though two such terms may hold few items together: with terms
// on 14% and 33% of 10⁵ items holding 4.8% together, every page read
// 2,100 records for 100 rows; with one term on a fifth of the items,
// every page read 500. Over a range or the whole container the terms' tie
// entries (absent.go) must be built, so that the steps go in _rid order,
// the scan's, from its position; until then the page asks for them. In a
// prefix or a partition the terms' own entries go in its scan order (in a
// partition, a range's partition entries: partRange). A partition's scan
// positions are locations and its index paths' sequences, the last eight
// bytes of a location there, in the same order. A term on the partition
// key holds for every item of a partition, which it leaves out. The terms
// are equalities before ranges, in the query's order.
func (e *Engine) mergeAfterScan(r storage.Reader, c *containerRecord, prog *eval.Program, params map[string]document.Value, s *itemScope, st *readStats, page *FeedPage, fp uint64, kept candidateKeeper) error {
	if page.Continuation == "" || !c.Index.Ready || c.index.none || prog.Ranked() || st.records == 0 ||
		float64(len(page.Items)) >= mergeSwitchShareOne*float64(st.records) {
		// Most scan pages find many rows: no share switches those, and
		// their terms need not be derived again.
		return nil
	}
	if done, err := e.unionAfterScan(r, c, prog.Query(), params, s, st, page, fp, kept); done || err != nil {
		return err
	}
	terms := plan.Terms(plan.Predicates(prog.Query(), params))
	// held counts the terms on the partition key in a partition, which
	// hold for every item of the scope.
	held := 0
	for _, t := range terms {
		if s.kind == plan.ScopePartition && c.isKeyPath(t.Path) {
			held++
		}
	}
	var pick []int
	for _, values := range []bool{true, false} {
		for i, t := range terms {
			if len(pick) < 2 && singleValues(t) == values && c.index.indexes(t.Path) &&
				!(s.kind == plan.ScopePartition && c.isKeyPath(t.Path)) {
				pick = append(pick, i)
			}
		}
	}
	access, share := plan.Intersect, mergeSwitchShare
	if len(pick) == 1 {
		access, share = plan.IndexSpan, mergeSwitchShareOne
	}
	// The few rows must be the picked terms' doing: a filter they do not
	// say all of (c.f = 2 AND c.n % 7 = 3) may pass few records of many
	// the terms hold, which the steps would each read by location.
	if len(pick) == 0 || len(pick)+held < len(terms) || !plan.Exact(prog.Query(), params) ||
		float64(len(page.Items)) >= share*float64(st.records) {
		return nil
	}
	ready, many := true, false
	for _, i := range pick {
		// A hierarchical prefix's terms read their own entries, in its
		// scan order, and so do a partition's equalities; its ranges
		// read their partition entries (mergeSpans).
		t := terms[i]
		want := entryKinds{ties: true}
		switch {
		case s.kind == plan.ScopePrefix:
			continue
		case s.kind == plan.ScopePartition:
			if singleValues(t) || c.partsReady(t.Path) {
				continue
			}
			if crossesArray(t.Path) {
				return nil // an element path keeps no partition entries
			}
			want = entryKinds{parts: true}
		case c.tiesReady(t.Path):
			continue
		}
		if !singleValues(t) {
			// Tie entries would not serve a range of many values: its
			// own entries say how many it holds.
			prefix := appendIndexPath(indexPrefix(c), t.Path)
			_, few, err := valueRuns(r, valueSpans(prefix, t, false, nil), len(prefix), nil, maxRangeValues, st)
			if err != nil {
				return err
			}
			if !few {
				many = true
				continue
			}
		}
		ready = false
		e.wantAbsent(c, t.Path, want)
	}
	if !ready {
		return nil
	}
	for _, i := range pick {
		if many {
			break
		}
		_, ok, err := mergeSpans(r, c, terms[i], s, st)
		if err != nil {
			return err
		}
		many = !ok
	}
	next, derr := parseCursor(page.Continuation, fp)
	if derr != nil {
		return derr
	}
	if many && len(pick) > 1 && singleValues(terms[pick[0]]) && (s.kind == plan.ScopeAll || s.kind == plan.ScopeRange) {
		// A range of too many values beside an equality (c.h = 1 AND
		// c.n < 500): the equality's entries alone are stepped
		// through, the range met on the records, where the scan went on
		// to the scope's end.
		ok, err := e.equalityStepsPay(r, c, s, st, next.pos, terms[pick[0]], kept.items)
		if err != nil {
			return err
		}
		if ok {
			pick, access, many = pick[:1], plan.IndexSpan, false
		}
	}
	if many {
		// A range of too many values would be collected: once, kept
		// for the pages after it, when the scan has cost enough.
		if len(pick) > 1 || kept.k == nil {
			return nil
		}
		return e.collectAfterScan(r, c, s, st, page, fp, terms[pick[0]], pick[0], kept)
	}
	if s.kind == plan.ScopePartition && len(next.pos) > 8 {
		next.pos = bytes.Clone(seqPos(next.pos))
	}
	next.access, next.terms = access, pick
	page.Continuation = next.String()
	return nil
}

// equalityStepsPay reports whether the pages of a scan over a range or
// the whole container, at position pos, should step through equality t's
// entries from there: when t holds few enough of the scope's items that
// reading each by its location costs less than scanning
// (mergeSwitchShareOne), and its entries merge in scan order. They are
// counted up to that share once the drain has scanned as much as the
// count costs, and has as much left (plan.CollectPays): a client that
// reads one page pays nothing for it.
func (e *Engine) equalityStepsPay(r storage.Reader, c *containerRecord, s *itemScope, st *readStats, pos []byte, t plan.Term, items int64) (bool, error) {
	scanned, left, err := e.scanSoFar(r, c, s, st, pos, items)
	if err != nil {
		return false, err
	}
	bound := int64(mergeSwitchShareOne * float64(scanned+left))
	if !plan.CollectPays(scanned, left, bound) {
		return false, nil
	}
	spans, _ := scopedSpans(c, t, s)
	n, err := countSpans(r, spans, bound, st)
	if err != nil || n >= bound {
		return false, err
	}
	_, ok, err := mergeSpans(r, c, t, s, st)
	return ok, err
}

// collectAfterScan has the pages after a scan over a range or the whole
// container collect the candidates of the query's one term (an index span
// of many values, whose entries must be sorted by sequence) and keep them
// from then on (keptCandidates), once the scan has read as many records as
// collecting costs, and has as many still to read (plan.CollectPays). A
// first page whose term holds many items tries a scan (plan.ScanFirstBounds),
// which fills it in few records; every page after it scanned on, so
// draining the query read every record of the scope, where the term's
// entries, collected once, name only the rows'. The entries are
// estimated from the scan's share of passing records, and what the drain
// has scanned from the page's position in the scope's sequences (with a
// sequence per range, the scope's first and last hold them all, so a
// position in an early one reads as little scanned). The pages after the
// collection step through the kept candidates, or scan on where their rows
// lie close together in scan order (scanAfterCollect).
func (e *Engine) collectAfterScan(r storage.Reader, c *containerRecord, s *itemScope, st *readStats, page *FeedPage, fp uint64, t plan.Term, i int, kept candidateKeeper) error {
	if s.kind != plan.ScopeAll && s.kind != plan.ScopeRange {
		return nil
	}
	next, derr := parseCursor(page.Continuation, fp)
	if derr != nil {
		return derr
	}
	if len(next.pos) != 8 {
		return nil
	}
	scanned, left, err := e.scanSoFar(r, c, s, st, next.pos, kept.items)
	if err != nil {
		return err
	}
	col, err := collectPays(r, c, []plan.Term{t}, s, st, page, kept.items, scanned, left)
	if col == nil || err != nil {
		return err
	}
	next.access, next.terms = plan.IndexSpan, []int{i}
	keepAfterScan(kept, next, next.terms, col, s, page)
	return nil
}

// keepAfterScan hands the next page of a scan the collecting access path
// next names, with the candidates col that deciding it collected, kept
// for that page (keptCandidates) when kept keeps them: the page reads
// them in place of collecting them again.
func keepAfterScan(kept candidateKeeper, next cursor, terms []int, col *collection, s *itemScope, page *FeedPage) {
	if kept.k != nil {
		next.kept = newKeptID()
		kept.keepCollection(next, &queryAccess{terms: terms, collected: col}, s)
	}
	page.Continuation = next.String()
}

// scanSoFar estimates how many records a drain that scans scope s (a
// range or the whole container) in _rid order has read up to position
// pos (a sequence), and how many it has left: the scope's items, shared
// as pos divides the span from its first sequence to its last.
func (e *Engine) scanSoFar(r storage.Reader, c *containerRecord, s *itemScope, st *readStats, pos []byte, total int64) (scanned, left int64, err error) {
	first, ok, err := firstSeq(r, c, s, st)
	if err != nil || !ok {
		return 0, 0, err
	}
	last, ok, err := lastSeq(r, c, s, st)
	if err != nil || !ok || last < first {
		return 0, 0, err
	}
	size, err := e.scopeSize(r, c, s, total)
	if err != nil {
		return 0, 0, err
	}
	at := min(max(binary.BigEndian.Uint64(pos), first), last+1)
	scanned = int64(float64(size.Items) * float64(at-first) / float64(last-first+1))
	return scanned, size.Items - scanned, nil
}

// collectPays returns the candidates of terms in scope s, when the pages
// of a scan should collect them instead (plan.CollectPays), with scanned
// and left the records the drain has scanned and has still to scan; nil
// when they should scan on. The entries are first estimated
// (passingEntries); only when that says it pays are they read, as far as
// would still pay, so a page that goes on scanning reads no entry for it,
// and one that hands on a collection has collected it. Past what a page
// collects for the pages after it (maxFilterLocs) the scan goes on: a
// collection the keeper could not hold would be read again on every page.
func collectPays(r storage.Reader, c *containerRecord, terms []plan.Term, s *itemScope, st *readStats, page *FeedPage, items, scanned, left int64) (*collection, error) {
	if estimate := passingEntries(items, page, st); estimate > maxFilterLocs || !plan.CollectPays(scanned, left, estimate) {
		return nil, nil
	}
	locs, entries, ok, err := unionLocs(r, c, terms, s, st, min(plan.EntriesWorth(min(scanned, left)), maxFilterLocs)+1)
	if !ok || err != nil {
		return nil, err
	}
	sum := 0
	for _, n := range entries {
		sum += int(n)
	}
	if !plan.CollectPays(scanned, left, int64(sum)) {
		return nil, nil
	}
	return &collection{locs: locs, entries: sum, cost: sum}, nil
}

// passingEntries estimates the index entries of the terms of a page's
// filter in a container of items items from the share of the records the
// page read that passed, as if the container held the scope's share of
// them.
func passingEntries(items int64, page *FeedPage, st *readStats) int64 {
	return int64(float64(items) * float64(len(page.Items)) / float64(max(st.records, 1)))
}

// fingerprintText is the text a query's continuation tokens are bound to:
// the query's own, except for an ORDER BY query an SDK rewrote from the
// gateway plan (SELECT c._rid, [...] AS orderByItems, ... AS payload ...),
// whose WHERE clause is left out. The SDK puts "true" where the plan had
// {documentdb-formattableorderbyquery-filter}, and to resume from a
// user's continuation a filter on the ORDER BY values (c.n >= 5), with the
// range's token taken under "true"; the text alone cannot tell that
// filter from the query's own WHERE clause, which the rewrite ANDs in
// front of it. Such a token is a position in the ORDER BY (the ordered
// stream), which holds under any filter; an offset token starts over
// (QueryItems).
func fingerprintText(q *ast.Query, text string) string {
	if !orderByRewrite(q) {
		return text
	}
	f := *q
	f.Where = nil
	return "order by rewrite " + f.String()
}

// orderByRewrite reports whether q has the shape of the query the gateway
// plan of an ORDER BY has the SDKs send to each range.
func orderByRewrite(q *ast.Query) bool {
	if len(q.OrderBy) == 0 || len(q.Select.Items) != 3 || q.Select.Items[1].Alias != "orderByItems" || q.Select.Items[2].Alias != "payload" {
		return false
	}
	m, ok := q.Select.Items[0].Expr.(*ast.Member)
	return ok && m.Name == "_rid"
}

// rowsOwnRid reports whether each row of q is an object that holds its
// document's _rid (as the per-range query of an SDK's ORDER BY does) and
// each document makes one row: no two rows are then equal.
func rowsOwnRid(q *ast.Query) bool {
	if q.Select.Star || q.Select.Value != nil || len(q.Joins) > 0 || len(q.GroupBy) > 0 || gatewayplan.HasAggregates(q) ||
		q.From == nil || q.From.Iterate {
		return false
	}
	if _, root := q.From.Expr.(*ast.Ident); !root {
		return false
	}
	return slices.ContainsFunc(q.Select.Items, func(it ast.SelectItem) bool {
		m, ok := it.Expr.(*ast.Member)
		if !ok || m.Name != "_rid" {
			return false
		}
		id, ok := m.X.(*ast.Ident)
		return ok && id.Name == q.From.Alias
	})
}

// pinnedKey returns the partition key (or hierarchical prefix) the WHERE
// clause pins, if it pins one, and the top-level terms that pin it.
func pinnedKey(c *containerRecord, q *ast.Query, params map[string]document.Value) (partition.Key, []ast.Expr, bool) {
	vals, terms, _ := plan.PartitionKeyTerms(q, params, c.pk.paths)
	if len(vals) == 0 {
		return nil, nil, false
	}
	key := make(partition.Key, 0, len(vals))
	for _, v := range vals {
		comp, ok := componentOf(v)
		if !ok {
			return nil, nil, false
		}
		key = append(key, comp)
	}
	if _, derr := c.keyFilter(ItemRef{PartitionKey: key, HasKey: true}); derr != nil {
		return nil, nil, false
	}
	return key, terms, true
}

// wholeDocument reports whether each row of q is the document itself:
// SELECT * over the container, without JOIN. A page then returns the
// stored bytes rather than serializing the parsed document again (a tenth
// of a single-partition range query's CPU went to that).
func wholeDocument(q *ast.Query) bool {
	if !q.Select.Star || len(q.Joins) > 0 || q.From == nil || q.From.Iterate {
		return false
	}
	_, root := q.From.Expr.(*ast.Ident)
	return root
}

// docParser returns how a query decodes its documents: only the top-level
// properties it reads (ast.RootFields), unless it reads them whole. A
// query that filters on one property of large items then skips the rest of
// each item instead of copying it: decoding was three fifths of a range
// query in one partition (BenchmarkPartitionRangeQuery). stored says that
// a SELECT * row is answered with the stored bytes, not the decoded value.
func docParser(q *ast.Query, stored bool) func([]byte) (document.Value, error) {
	names, all := ast.RootFields(q)
	return fieldParser(names, all || (q.Select.Star && !stored))
}

// progParser is docParser of prog's query for the document of meta, which
// leaves out what only the vector scores the program knows of that
// document read (eval.Distances).
func progParser(prog *eval.Program, stored bool) func(b []byte, meta eval.DocMeta) (document.Value, error) {
	star := prog.Query().Select.Star && !stored
	names, all := prog.RootFields(false)
	full := fieldParser(names, all || star)
	if !prog.UsesDistances() {
		return func(b []byte, _ eval.DocMeta) (document.Value, error) { return full(b) }
	}
	names, all = prog.RootFields(true)
	lean := fieldParser(names, all || star)
	return func(b []byte, meta eval.DocMeta) (document.Value, error) {
		if prog.KnowsDistance(meta) {
			return lean(b)
		}
		return full(b)
	}
}

func fieldParser(names map[string]bool, all bool) func([]byte) (document.Value, error) {
	if all {
		return document.Parse
	}
	return func(b []byte) (document.Value, error) { return document.ParseTop(b, names) }
}

func docMeta(loc []byte) eval.DocMeta {
	return eval.DocMeta{DocumentID: int64(locSeq(loc))}
}

// streamQuery pages a filter-and-projection query by position in its
// access path. On the single-partition path a continuation is returned
// only when more rows exist; on the cross-partition path whenever a page
// is full, as the gateway does (the SDKs' page counts depend on it).
// seen, when not nil, drops the rows of a DISTINCT returned before
// (distinct.go).
func streamQuery(src itemSource, c *containerRecord, prog *eval.Program, s *itemScope, now time.Time, cur, next cursor, limit int, cross bool, win *rowWindow, seen *distinctRows, page *FeedPage) error {
	if win.done() {
		return nil
	}
	// The page's bytes so far: a page of several logical partitions
	// (queryParts) comes here once for each.
	size := 0
	for _, b := range page.Items {
		size += len(b)
	}
	whole := wholeDocument(prog.Query())
	parse := progParser(prog, whole)
	rowsOf, err := prog.Streamer()
	if err != nil {
		return queryError(err)
	}
	resume := func(pos []byte, skip int) {
		next.pos, next.skip = bytes.Clone(pos), skip
		if win != nil {
			next.made = win.made
		}
		page.Continuation = next.String()
	}
	// A page whose time or work runs out ends before the document it
	// was reading, with a continuation there, as the service's pages end
	// early; only when it has not got past the document it started at
	// would that make no progress, and then it fails.
	started := false
	stopped := false
	if page.Items == nil {
		// Room for a page of the usual size up front, rather than the
		// doublings that would get there.
		page.Items = make([][]byte, 0, min(max(limit, 0), 256))
	}
	// A DISTINCT page whose set is not kept reads from the start and
	// adds the rows before its position to the set; one given a token
	// from before the sets, which has no position, passes over the rows
	// its skip says were returned instead.
	from, rebuild, returned := cur.pos, seen != nil && seen.rebuild, 0
	if rebuild {
		from = nil
		if cur.pos == nil {
			returned = cur.skip
		}
	}
	err = src(from, func(pos, loc []byte, rec *itemRecord) (bool, error) {
		first := 0
		if cur.pos != nil && bytes.Equal(pos, cur.pos) {
			first = cur.skip
		}
		before := rebuild && cur.pos != nil && bytes.Compare(pos, cur.pos) < 0
		progressed := started
		started = started || !before
		rows, err := func() ([]document.Value, error) {
			// Every record visited counts, passed over or not.
			if err := prog.Budget().Spend(1); err != nil {
				return nil, err
			}
			if c.expired(rec, now) || !s.keeps(rec) {
				return nil, nil
			}
			meta := docMeta(loc)
			doc, err := parse(rec.json, meta)
			if err != nil {
				return nil, err
			}
			return rowsOf.Rows(doc, meta)
		}()
		if err != nil {
			// A DISTINCT page still rebuilding its set cannot end here:
			// its token would name a set without the rows before it.
			if progressed && !before && returned == 0 && eval.Exhausted(err) {
				resume(pos, first)
				stopped = true
				return false, nil
			}
			return false, queryError(err)
		}
		if rebuild {
			// The rows before the position were returned, or were
			// repeats of rows that were.
			end := first
			if before {
				end = len(rows)
			}
			for _, row := range rows[:min(end, len(rows))] {
				if k, repeat := seen.repeat(row); !repeat {
					if err := seen.add(k); err != nil {
						return false, queryError(err)
					}
				}
			}
			if before {
				return true, nil
			}
		}
		for i := first; i < len(rows); i++ {
			// A DISTINCT's repeats are passed over before the page can
			// end, so it ends only when a row to return is left.
			var key string
			if seen != nil {
				k, repeat := seen.repeat(rows[i])
				if repeat {
					continue
				}
				key = k
			}
			// The row's bytes, when the page is to return it: a row that
			// would take the page past maxPageBytes starts the next one,
			// as the service bounds a response (a row is at most
			// eval.MaxRowBytes, which is that bound).
			var b []byte
			n, asStored := 0, whole && len(rows) == 1 // the row is the document as stored
			if (win == nil || win.made >= win.from) && returned == 0 {
				if n = len(rec.json); !asStored {
					b = rows[i].JSON()
					n = len(b)
				}
			}
			if len(page.Items) == limit || (size+n > maxPageBytes && len(page.Items) > 0) {
				resume(pos, i)
				return false, nil
			}
			if seen != nil {
				if err := seen.add(key); err != nil {
					return false, queryError(err)
				}
			}
			if win.done() {
				// A window of no rows (OFFSET n LIMIT 0) is done once
				// its skipped rows are made.
				return false, nil
			}
			if !win.take() {
				continue
			}
			if returned > 0 {
				returned--
				continue
			}
			if asStored {
				b = page.keep(rec.json)
			}
			page.Items = append(page.Items, b)
			size += len(b)
			if win.done() {
				return false, nil
			}
			if cross && len(page.Items) == limit {
				if i+1 < len(rows) {
					resume(pos, i+1)
				} else {
					// The next item's position is not known yet; one
					// past this one's is where it starts.
					resume(append(bytes.Clone(pos), 0), 0)
				}
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil && !stopped {
		return queryError(err)
	}
	return nil
}

// rowWindow is the part of a query's row stream its TOP, or its OFFSET
// and LIMIT, return: rows [from, to) of the stream the query makes without
// them (to < 0: to its end). made counts the stream's rows so far,
// carried from page to page in the cursor, so that a page goes on from
// its position in the access path rather than evaluating the query from
// the start again. A nil window returns every row.
type rowWindow struct {
	from, to, made int
}

// windowed returns the program of q's rows without its TOP, OFFSET and
// LIMIT, and their window, when that program's rows stream (no ORDER BY,
// DISTINCT, GROUP BY or aggregate) or come in the order of its ORDER BY
// alone (eval.Program.Resumable: a DISTINCT's too, when its repeats tie);
// nil otherwise.
func windowed(prog *eval.Program, params map[string]document.Value) (*eval.Program, rowWindow, error) {
	q := prog.Query()
	if q.From == nil || prog.Streaming() || len(q.GroupBy) > 0 || gatewayplan.HasAggregates(q) || (q.Select.Distinct && len(q.OrderBy) == 0) {
		// Such rows are never a window's: no program need be derived.
		return nil, rowWindow{}, nil
	}
	w := rowWindow{to: -1}
	rows := prog
	if q.Select.Top != nil || q.Offset != nil {
		top, offset, limit := gatewayplan.Window(q, params)
		if top != nil {
			w.to = *top
		}
		if offset != nil && limit != nil {
			w.from = *offset
			if end := *offset + *limit; w.to < 0 || end < w.to {
				w.to = end
			}
		}
		f := *q
		f.Select.Top, f.Offset, f.Limit = nil, nil, nil
		var err error
		if rows, err = prog.Derive(&f); err != nil {
			return nil, rowWindow{}, queryError(err)
		}
	}
	if !rows.Streaming() && !rows.Resumable() {
		return nil, rowWindow{}, nil
	}
	return rows, w, nil
}

// take counts the stream's next row and reports whether it is in the
// window.
func (w *rowWindow) take() bool {
	if w == nil {
		return true
	}
	w.made++
	return w.made > w.from
}

// untake gives back the row take counted last, which the page did not
// return after all.
func (w *rowWindow) untake() {
	if w != nil {
		w.made--
	}
}

// done reports whether the window's rows are all made.
func (w *rowWindow) done() bool { return w != nil && w.to >= 0 && w.made >= w.to }

// need is how many documents a page with room for rows more must read
// at least: the rows still to skip, and those it can return.
func (w *rowWindow) need(rows int) int {
	if w.to >= 0 {
		rows = min(rows, w.to-max(w.made, w.from))
	}
	return rows + max(w.from-w.made, 0)
}

// runQuery evaluates a query whose rows do not stream (ORDER BY,
// aggregates, DISTINCT, GROUP BY, and a TOP or OFFSET/LIMIT with one of
// them) and returns the page of its results that starts at the cursor's
// offset.
//
// Documents go to the evaluator as they are read, so none is held unless
// a row holds it, and an ORDER BY keeps only the rows up to the end of
// this page (and one more, to know whether a continuation is needed).
//
// passed, when not nil, counts the rows made while the records are read.
// held, when not nil, is where the page leaves the rows after its own
// when it makes them all (heldRows).
func runQuery(src itemSource, c *containerRecord, prog *eval.Program, s *itemScope, now time.Time, cur, next cursor, limit int, page *FeedPage, passed *int, held *heldRows) error {
	if held != nil {
		src = held.watchExpiry(src, c, s, now)
	}
	rows, err := prog.RunEach(documents(src, c, prog, s, now), cur.skip+limit+1, passed)
	if err != nil {
		return queryError(err)
	}
	end := pageRows(rows, cur.skip, limit, page)
	if end < len(rows) {
		next.skip = end
		if held != nil && prog.WholeRows() {
			next.kept = newKeptID()
			held.hold(rows[end:], next)
		}
		page.Continuation = next.String()
	}
	return nil
}

// documents feeds the evaluator the documents of src in scope s, live at
// now, counting every record read against the budget.
func documents(src itemSource, c *containerRecord, prog *eval.Program, s *itemScope, now time.Time) eval.Each {
	return func(yield func(document.Value, eval.DocMeta) error) error {
		return liveDocuments(src, c, prog, s, now, nil, func(_ []byte, doc document.Value, meta eval.DocMeta) (bool, error) {
			if err := yield(doc, meta); err != nil {
				return false, err
			}
			return true, nil
		})
	}
}

// liveDocuments calls fn with the documents of src from position from
// (nil: the start) in scope s, live at now, each with its position and
// its place for the evaluator, until fn returns false; every record read
// counts against the budget.
func liveDocuments(src itemSource, c *containerRecord, prog *eval.Program, s *itemScope, now time.Time, from []byte, fn func(pos []byte, doc document.Value, meta eval.DocMeta) (bool, error)) error {
	parse := progParser(prog, false)
	return src(from, func(pos, loc []byte, rec *itemRecord) (bool, error) {
		if err := prog.Budget().Spend(1); err != nil {
			return false, err
		}
		if c.expired(rec, now) || !s.keeps(rec) {
			return true, nil
		}
		meta := docMeta(loc)
		doc, err := parse(rec.json, meta)
		if err != nil {
			return false, err
		}
		meta.Order = s.scanPos(loc)
		return fn(pos, doc, meta)
	})
}

// sortedPage pages an ORDER BY the evaluator sorts (its rows, without
// TOP, OFFSET and LIMIT, are those of a resumable program, in the window
// win of them). A page reads the documents of its access path, as the
// first does, and asks for the rows after the place of the last row the
// page before went past (eval.Mark, which the token keeps), so it holds
// only the rows it may return and, when held is not nil, the rows of a
// few pages after them (heldSortedRows), which it leaves there with
// their places for the pages after it (sortedHeldPage): however deep a
// page is, it holds a bounded number of rows, and the candidates are
// read again once per so many pages rather than by every page.
//
// resolve puts back the mark's keys its token holds as references.
func sortedPage(src itemSource, c *containerRecord, prog *eval.Program, s *itemScope, now time.Time, cur, next cursor, limit int, win rowWindow, resolve func(*eval.Mark, []markRef) error, page *FeedPage, passed *int, held *heldRows) error {
	var after *eval.Mark
	if cur.pos != nil {
		m, refs, ok := decodeMark(cur.pos, len(prog.Query().OrderBy))
		if !ok {
			return errBadContinuation
		}
		if len(refs) > 0 {
			if err := resolve(&m, refs); err != nil {
				return err
			}
		}
		after = &m
	}
	win.made = cur.made
	if win.done() {
		return nil
	}
	n, extra := win.need(limit)+1, 0
	if held != nil && after != nil {
		src = held.watchExpiry(src, c, s, now)
		// The rows of a few pages more, within the window and the
		// rows a sort may hold: a page after the first, of a query
		// its client reads on.
		extra = min(heldSortedRows(limit), prog.Budget().SortRows()-n-1)
		if win.to >= 0 {
			extra = min(extra, win.to-win.made-n+1)
		}
		extra = max(extra, 0)
	}
	rows, marks, err := prog.RunAfter(documents(src, c, prog, s, now), n, extra, passed, after)
	if err != nil {
		return queryError(err)
	}
	last := fillSorted(len(rows), func(i int) []byte { return rows[i].JSON() }, &win, limit, page)
	if last+1 < len(rows) && !win.done() {
		next.pos, next.made = appendMark(nil, marks[last]), win.made
		if held != nil && extra > 0 && len(rows) > n {
			// More than n rows: none of those asked for past the
			// page's own was given up for memory (RunAfter), so fewer
			// than asked are the result's last.
			next.kept = newKeptID()
			held.holdSorted(rows[last+1:], marks[last+1:], next, win, len(rows) < n+extra)
		}
		page.Continuation = next.String()
	}
	return nil
}

// fillSorted adds to the page the rows of a sorted page (row(i) is the
// JSON of row i of n) that fall in the window win, as many as fit it, and
// returns the last row the page went past, returned or skipped; -1 when
// none.
func fillSorted(n int, row func(i int) []byte, win *rowWindow, limit int, page *FeedPage) int {
	last, size := -1, 0
	for i := range n {
		if win.done() || len(page.Items) == limit {
			break
		}
		if !win.take() {
			last = i
			continue
		}
		b := row(i)
		if size+len(b) > maxPageBytes && len(page.Items) > 0 {
			win.made--
			break
		}
		page.Items = append(page.Items, b)
		size += len(b)
		last = i
	}
	return last
}

// pageRows adds rows[offset:] to the page, as many as fit, and returns
// the offset of the first row left out. An offset past the rows is the
// end: rows before it went away since the page before.
func pageRows(rows []document.Value, offset, limit int, page *FeedPage) int {
	rest := rows[min(offset, len(rows)):]
	return len(rows) - len(rest) + fillPage(len(rest), func(i int) []byte { return rest[i].JSON() }, limit, page)
}

// fillPage adds the first of n rows (row(i) is the JSON of row i) to the
// page, as many as fit it, and returns how many it added: at most limit,
// and no more bytes than maxPageBytes unless the first row alone is.
func fillPage(n int, row func(i int) []byte, limit int, page *FeedPage) int {
	size := 0
	for i := range min(n, limit) {
		b := row(i)
		if size+len(b) > maxPageBytes && i > 0 {
			return i
		}
		page.Items = append(page.Items, b)
		size += len(b)
	}
	return min(n, limit)
}

// crossPartitionRefusal is the gateway's answer to a cross-partition query
// over container c it cannot serve directly: 400/1004 with the query plan
// (docs/protocol.md §6.5), so the SDK runs the query range by range and
// merges (§6.3). The plan is the one a query-plan request gets (PlanFor):
// what the client must do itself (merge ORDER BY, in the direction the
// container's embedding policy gives VectorDistance; combine aggregates;
// apply TOP, DISTINCT, OFFSET/LIMIT) and the rewritten query to send to
// each range. features is the x-ms-cosmos-supported-query-features header
// sent with the query (gatewayplan.OfQuery).
func crossPartitionRefusal(c *containerRecord, text string, params map[string]document.Value, features string) error {
	// The plan of the query as the client wrote it, as a query-plan
	// request gets (PlanFor): its program's query has its constant parts
	// folded and its computed properties' definitions in their place,
	// which the client would send to the ranges as written.
	q, err := parseOnly(text)
	if err != nil {
		return err
	}
	plan := gatewayplan.JSON(gatewayplan.DescribeFor(q, params, gatewayplan.OfQuery(features), c.vectors))
	return &Error{Code: BadRequest, SubStatus: SubCrossPartitionNotServed, Additional: plan,
		Message: "The provided cross partition query can not be directly served by the gateway. This is a first chance (internal) exception that all newer clients will know how to handle gracefully. This exception is traced, but unless you see it bubble up as an exception (which only happens on older SDK clients), then you can safely ignore this message."}
}

// ResourceKind names what a resource query runs over.
type ResourceKind int

// The queryable resource feeds besides items.
const (
	ResourceDatabases ResourceKind = iota
	ResourceContainers
	ResourceOffers
	ResourceAttachments
	ResourceUsers
	ResourcePermissions
	ResourceStoredProcedures
	ResourceTriggers
	ResourceFunctions
)

// ResourceQueryParams is a query over databases, containers or offers.
type ResourceQueryParams struct {
	Kind         ResourceKind
	DB           string        // for containers, users, permissions and scripts
	Coll         string        // for scripts
	User         string        // for permissions
	Item         AttachmentRef // for attachments
	Query        string
	Params       map[string]document.Value
	MaxItemCount int
	Continuation string
}

// QueryResources runs a query over databases, containers or offers with
// the same engine as item queries.
func (e *Engine) QueryResources(ctx context.Context, p ResourceQueryParams) (*FeedPage, error) {
	now, err := e.Now(ctx)
	if err != nil {
		return nil, err
	}
	prog, err := compileQuery(p.Query, p.Params, now, e.budget(ctx))
	if err != nil {
		return nil, err
	}
	var vals []document.Value
	page := &FeedPage{}
	switch p.Kind {
	case ResourceDatabases:
		vals, err = e.ListDatabases(ctx)
	case ResourceContainers:
		vals, page.CollRid, err = e.ListContainers(ctx, p.DB)
	case ResourceOffers:
		vals, err = e.ListOffers(ctx)
	case ResourceAttachments:
		vals, page.CollRid, err = e.ListAttachments(ctx, p.Item)
	case ResourceUsers:
		vals, page.CollRid, err = e.ListUsers(ctx, p.DB)
	case ResourceStoredProcedures:
		vals, page.CollRid, err = e.ListScripts(ctx, p.DB, p.Coll, StoredProcedures)
	case ResourceTriggers:
		vals, page.CollRid, err = e.ListScripts(ctx, p.DB, p.Coll, Triggers)
	case ResourceFunctions:
		vals, page.CollRid, err = e.ListScripts(ctx, p.DB, p.Coll, Functions)
	case ResourcePermissions:
		var perms []*Permission
		perms, page.CollRid, err = e.ListPermissions(ctx, p.DB, p.User)
		for _, pm := range perms {
			vals = append(vals, pm.Body)
		}
	}
	if err != nil {
		return nil, err
	}
	fp := fingerprint(p.Params, "resources", strconv.Itoa(int(p.Kind)), p.DB, p.Item.Coll, p.Item.ItemID, p.Query)
	var cur cursor
	if p.Continuation != "" {
		var derr *Error
		if cur, derr = parseCursor(p.Continuation, fp); derr != nil {
			return nil, derr
		}
	}
	page.Examined = len(vals)
	for _, v := range vals {
		page.ExaminedBytes += len(v.JSON())
	}
	page.Charge = queryCharge(len(vals), 0, 0)
	if prog.Streaming() {
		return page, pageResourcesByID(prog, vals, pageSize(p.MaxItemCount), fp, cur, page)
	}
	i := 0
	rows, err := prog.Run(func() (document.Value, eval.DocMeta, bool, error) {
		if i == len(vals) {
			return document.Undef, eval.DocMeta{}, false, nil
		}
		i++
		return vals[i-1], eval.DocMeta{DocumentID: int64(i)}, true, nil
	})
	if err != nil {
		return nil, queryError(err)
	}
	end := pageRows(rows, cur.skip, pageSize(p.MaxItemCount), page)
	if end < len(rows) {
		page.Continuation = cursor{fingerprint: fp, skip: end}.String()
	}
	return page, nil
}

// pageResourcesByID pages a streaming query over resources by position:
// the resources go in id order, and a token holds the id of the resource
// the page ended in and how many of its rows the pages returned (a JOIN
// makes several), so a resource deleted or created between pages hides no
// other one and repeats none. A query that sorts, groups or counts rows
// (TOP, OFFSET, DISTINCT) pages its materialized result instead.
func pageResourcesByID(prog *eval.Program, vals []document.Value, limit int, fp uint64, cur cursor, page *FeedPage) error {
	idOf := func(v document.Value) string { return v.Get("id").Str() }
	slices.SortStableFunc(vals, func(a, b document.Value) int { return strings.Compare(idOf(a), idOf(b)) })
	at := string(cur.pos)
	i, _ := slices.BinarySearchFunc(vals, at, func(v document.Value, id string) int { return strings.Compare(idOf(v), id) })
	skip := 0
	if i < len(vals) && cur.pos != nil && idOf(vals[i]) == at {
		skip = cur.skip
	}
	size := 0
	for ; i < len(vals); i++ {
		rows, err := prog.RunDocs(vals[i : i+1])
		if err != nil {
			return queryError(err)
		}
		for j := skip; j < len(rows); j++ {
			b := rows[j].JSON()
			if len(page.Items) == limit || (size+len(b) > maxPageBytes && len(page.Items) > 0) {
				page.Continuation = cursor{fingerprint: fp, pos: []byte(idOf(vals[i])), skip: j}.String()
				return nil
			}
			page.Items = append(page.Items, b)
			size += len(b)
		}
		skip = 0
	}
	return nil
}

// conditionHolds judges a patch condition with the query
// engine: the condition "FROM c WHERE …" holds when the item passes it.
// A condition reads container c's computed properties, and judges in its
// kind of space, as a query does.
func conditionHolds(cond string, doc document.Value, now time.Time, b *eval.Budget, c *containerRecord) (bool, error) {
	text := strings.TrimSpace(cond)
	if !strings.HasPrefix(strings.ToUpper(text), "SELECT") {
		text = "SELECT * " + text
	}
	prog, err := compileQueryWith(text, nil, now, b, &udfs{planar: c.planar})
	if err != nil {
		return false, err
	}
	if prog, err = withComputedProgram(prog, c.computed); err != nil {
		return false, err
	}
	if !prog.Streaming() {
		return false, errorf(BadRequest, "A patch condition must be a simple filter.")
	}
	rows, err := prog.Rows(doc, eval.DocMeta{})
	if err != nil {
		return false, queryError(err)
	}
	return len(rows) > 0, nil
}

func parseOnly(text string) (*ast.Query, error) {
	q, err := parser.Parse(text)
	if err != nil {
		return nil, queryError(err)
	}
	return q, nil
}
