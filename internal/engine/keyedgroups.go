package engine

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// A GROUP BY whose rows are whole groups (sent as written, not as the SDKs
// rewrite it for their merge: partialGroups) must read every document of a
// group before it makes the group's row. Read in the order of the scope,
// a group's documents are anywhere in it, so every page would read the
// whole scope. Read in the order of the group keys, they come together:
// keyOrderGroups reads the documents through the ordered stream of the
// query with ORDER BY the keys (streamOrdered), groups them as the stream
// hands them over, and refuses the first document of the group past its
// page size, so that the stream ends there and its token is the position
// of that document: page k reads its own groups' documents (with several
// keys, the documents of the first key's values its groups hold, which the
// stream sorts by the others). The groups then come in the order of their
// keys, documents without the first key first, an order the service
// leaves open.

// keyOrderShape returns the query whose rows are the documents prog groups
// in the order of its keys, when prog is a GROUP BY the ordered stream can
// feed: keys that are paths of the item, the first it orders by indexed
// (streamShape checks it), no JOIN, window, DISTINCT or rank, not the
// SDKs' partial groups. Each row is [document, DocumentId(document)], so
// that the grouping sees the document's identity as the evaluation over
// the scope does.
//
// A key on one of the paths fixed, whose value every document of the
// scope shares (the partition key's, in a logical partition), orders
// nothing: the query orders by the other keys alone, and skipped says
// so. Ordered by it first, every page would read the whole scope, its
// documents all of one value of the first key.
func keyOrderShape(prog *eval.Program, p QueryParams, fixed [][]string) (o *ast.Query, skipped, ok bool) {
	q := prog.Query()
	alias, ok := itemAlias(q)
	if !ok || len(q.GroupBy) == 0 || len(q.Joins) > 0 || len(q.OrderBy) > 0 || q.Select.Distinct || q.Select.Top != nil ||
		q.Offset != nil || q.Limit != nil || prog.Ranked() || p.RangeID != "" && gatewayplan.PartialGroups(q) {
		return nil, false, false
	}
	ordered := *q
	ordered.OrderBy = nil
	for _, k := range q.GroupBy {
		path, ok := plan.DocPath(q, k)
		if !ok || len(path) == 0 {
			return nil, false, false
		}
		if slices.ContainsFunc(fixed, func(f []string) bool { return slices.Equal(f, path) }) {
			skipped = true
			continue
		}
		ordered.OrderBy = append(ordered.OrderBy, ast.OrderItem{Expr: k})
	}
	if len(ordered.OrderBy) == 0 {
		return nil, false, false // one group
	}
	item := &ast.Ident{Name: alias}
	ordered.Select = ast.Select{Value: &ast.ArrayLit{Elems: []ast.Expr{item, &ast.Call{Name: "DocumentId", Args: []ast.Expr{item}}}}}
	ordered.GroupBy = nil
	return &ordered, skipped, true
}

// fixedKeyPaths returns the partition key paths whose value every item of
// a query's scope shares: all of them in a logical partition (key, when
// hasKey), the prefix's in a hierarchical prefix. A number of magnitude
// 2^53 or more is left out: items whose values differ beyond a float64's
// precision share its partition, and group apart.
func fixedKeyPaths(c *containerRecord, key partition.Key, hasKey bool) [][]string {
	if !hasKey {
		return nil
	}
	var out [][]string
	for i, path := range c.pk.paths {
		if len(key) > 0 && i >= len(key) {
			break
		}
		if len(key) > 0 && key[i].Kind == partition.KindNumber && !(math.Abs(key[i].Num) < 1<<53) {
			continue
		}
		out = append(out, path)
	}
	return out
}

// keyOrderGroups serves a page of prog, a GROUP BY of keyOrderShape whose
// ordered query is ordered, through the ordered stream, and reports
// whether it did: a first page only when the planner chooses the stream
// for the ordered query, a later one only when its token is of such a page
// (fp, the fingerprint of this way of paging, differs from the other's).
// A first page the planner chose another way for gets that way back
// (planned), which is the one it would choose for prog: the two queries
// have the same terms, and prog no other ways to weigh. The page need not
// plan again; but for the walks that read only the documents an ORDER
// BY's first rows need, which prog has no use for, and for a stream the
// page turns down: those plan prog from the counts of its terms made for
// the ordered query (counts), rather than count them again.
func (e *Engine) keyOrderGroups(r storage.Reader, c *containerRecord, prog, ordered *eval.Program, p QueryParams, s *itemScope, now time.Time, st *readStats, total int64, kept candidateKeeper, fp uint64, page *FeedPage) (done bool, planned *queryAccess, counts *termCounts, err error) {
	limit := pageSize(p.MaxItemCount)
	var cur cursor
	resumed := p.Continuation != ""
	if resumed {
		k, derr := parseCursor(p.Continuation, fp)
		if derr != nil {
			// A token of the other way of paging, or none at all:
			// that way reads it, or says what is wrong with it.
			return false, nil, nil, nil
		}
		if k.access != plan.OrderedStream && k.access != plan.FilteredStream {
			return true, nil, nil, errBadContinuation
		}
		cur = k
	}
	// Its rows go to the groups, not to a page a stream tried first
	// could set aside.
	qp, err := e.planQuery(r, c, total, ordered, p.Params, s, now, st, limit, resumed, cur, noScanFirst, nil)
	if err != nil {
		return resumed, nil, nil, err
	}
	if qp.stream == nil {
		if resumed {
			return true, nil, nil, errBadContinuation
		}
		if qp.access == plan.OrderedWalk || qp.access == plan.CompositeWalk {
			// Ways that read only the documents the ordered query's
			// first rows need.
			return false, nil, qp.counts, nil
		}
		return false, qp, nil, nil
	}
	if !resumed {
		if inexact, err := inexactValues(r, c, qp.stream.Path, s, st); err != nil || inexact {
			return false, nil, qp.counts, err
		}
		if costly, err := groupsCostMore(r, c, ordered.Query(), p.Params, qp, s, limit, st); err != nil || costly {
			return false, nil, qp.counts, err
		}
	}
	page.Plan = qp.plan
	// A later page walks as this one does: a filtered stream by the
	// same term's locations.
	next := cursor{fingerprint: fp, text: textHash(p.Query), access: qp.access, terms: qp.terms, indexVer: c.Index.Version}
	keys, err := groupKeys(prog)
	if err != nil {
		return true, nil, nil, queryError(err)
	}
	// part groups the documents from cur up to limit groups and returns
	// their rows and the token of the position before the next group's
	// first document ("" at the end).
	part := func(limit int) ([]document.Value, string, error) {
		var stop string
		each := func(yield func(document.Value, eval.DocMeta) error) error {
			groups, full := 0, false
			var key, last []byte
			var failed error
			take := func(row document.Value) bool {
				doc := row.Index(0)
				meta := eval.DocMeta{DocumentID: row.Index(1).Int()}
				keyRows, err := keys.Rows(doc, meta)
				if err != nil {
					failed = err
					return false
				}
				if len(keyRows) == 0 {
					return true
				}
				key = eval.CanonicalKey(key[:0], keyRows[0])
				if groups == 0 || !bytes.Equal(key, last) {
					if groups == limit {
						full = true
						return false
					}
					groups++
					last = append(last[:0], key...)
				}
				if err := yield(doc, meta); err != nil {
					failed = err
					return false
				}
				return true
			}
			end := &FeedPage{}
			feed := &streamFeed{take: take, parse: docParser(prog.Query(), false)}
			// The rows go to the feed, not the page, so the walk's
			// read-ahead is set by the groups still wanted: a document
			// starts one group at most, and one more document tells
			// whether the last group goes on.
			defer func(want func() int) { st.want = want }(st.want)
			st.want = func() int { return limit - groups + 1 }
			if err := streamOrdered(r, c, ordered, p.Params, qp, s, now, st, cur, next, limit, nil, feed, seenSets{}, kept, end); err != nil {
				return err
			}
			if failed != nil {
				return failed
			}
			if end.Continuation != "" && !full {
				// The stream stopped inside a group: the page's time or
				// work ran out.
				return errPageTime
			}
			stop = end.Continuation
			return nil
		}
		rows, err := prog.RunEach(each, 0, nil)
		return rows, stop, err
	}
	for kept := len(page.Items); ; limit /= 2 {
		rows, stop, err := part(limit)
		if err != nil {
			return true, nil, nil, queryError(err)
		}
		end := pageRows(rows, 0, len(rows), page)
		// Rows that take more than a response holds are grouped again
		// with half the groups, down to one, whose row fits.
		if end == len(rows) || limit == 1 {
			page.Continuation = stop
			return true, nil, nil, nil
		}
		page.Items = page.Items[:kept]
	}
}

// groupsCostMore reports whether the stream the planner chose for the
// ordered query of a GROUP BY's first page (qp) costs more than the
// cheapest way that reads the candidates once (plan.Access.Unordered),
// which the page then takes: the planner weighed the stream for a page
// of limit documents, and the page reads every document of limit groups
// that hold one passing the filter. It counts the entries of the first
// limit groups and one more, up to where the stream would cost the other
// way (plan.GroupWalkBound): a key of few values holds the whole scope in
// them. Past them, a group holds a document that passes the filter as
// likely as its documents each do, at the share of the scope the other
// way reads, so the walk reads that many entries over the likelihood.
// Where the stream's entries are not the scope's own (a partition whose
// entries of the path are not built, a prefix whose partitions' it does
// not merge) the count would be the container's, and where the groups have several keys its first key's
// values hold more than the groups: the stream stays.
func groupsCostMore(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, qp *queryAccess, s *itemScope, limit int, st *readStats) (bool, error) {
	o, p := qp.stream, qp.plan
	if p == nil || len(q.OrderBy) != 1 || !(s.kind == plan.ScopeAll || s.kind == plan.ScopeRange || o.Scoped) {
		return false, nil
	}
	other, records := math.Inf(1), float64(p.Scope.Items)
	for _, path := range p.Considered {
		if path.Access.Unordered() {
			other, records = math.Min(other, path.Cost), math.Min(records, path.Records)
		}
	}
	if math.IsInf(other, 1) {
		return false, nil
	}
	bound := plan.GroupWalkBound(p.Chosen, other)
	n, seen, err := leadEntries(r, c, q, params, o, s, limit+1, bound, st)
	if err != nil || n >= bound || seen <= limit {
		return n >= bound, err
	}
	share := records / float64(max(p.Scope.Items, 1))
	passes := 1 - math.Pow(1-share, float64(n)/float64(seen))
	return float64(n) >= passes*float64(bound), nil
}

// inexactValues reports whether the entries of path that the ordered
// stream walks in scope s may hold a value the index does not tell apart
// from others (exactValue): an array, an object, a number of magnitude
// 2^53 or more. The stream reads all of those as one group and sorts it,
// so it would read that group again on every page that ends inside it,
// and resume there by a count of its documents, which a write between the
// pages shifts, to a group returned twice or not at all. A GROUP BY of
// such values goes on as it was, by the evaluation of its scope. The
// entries may be the whole container's (a partition's own are not built
// yet) or an expired item's: a value there that the scope no longer holds
// costs the pages only the faster way.
func inexactValues(r storage.Reader, c *containerRecord, path []string, s *itemScope, st *readStats) (bool, error) {
	prefix := orderPrefix(c, path, s)
	at := func(tag byte) []byte { return append(bytes.Clone(prefix), tag) }
	number := func(f float64) []byte { return binary.BigEndian.AppendUint64(at(tagNumber), orderedFloat(f)) }
	for _, span := range []keySpan{
		{lo: at(tagNumber), hi: prefixEnd(number(-(1 << 53)))},
		{lo: number(1 << 53), hi: at(tagString)},
		{lo: at(tagArray), hi: prefixEnd(prefix)},
	} {
		found := false
		if err := scanRange(r, span.lo, span.hi, func(_, _ []byte) (bool, error) {
			st.entries++
			found = true
			return false, nil
		}); err != nil || found {
			return found, err
		}
	}
	return false, nil
}
