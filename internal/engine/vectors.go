package engine

import (
	"bytes"
	"container/heap"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/query/vector"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// Stored vectors. A container created with vector indexes keeps, for each
// item, the vector at each vector index's path in binary (vector.Store):
//
//	'q' + collRid(8) + ordinal(1) + loc → float64 × dimensions
//
// ordinal being the index's place in the policy's vectorIndexes, which a
// replace cannot change. Ordered by location, a logical partition's, a
// hierarchical prefix's and a range's vectors are each one span, as its
// items are. A vector search (ORDER BY VectorDistance(c.path, constant)
// with TOP or OFFSET and LIMIT) reads the vectors of its scope instead of
// every document: it scores them as the evaluator would, bit for bit, and
// reads the records of the best until enough of them make rows
// (vectorCandidates). Parsing a stored document's vector costs about a
// hundred times scoring it (docs/benchmarks.md, "Vector search through
// stored vectors").
//
// A container created before keeps no vectors (containerRecord.
// VectorEntries), and its vector searches score every document of their
// scope, as they did.

// maxVectorIndexes is how many of a container's vector indexes keep
// vectors: an ordinal is one byte.
const maxVectorIndexes = 255

func vectorPrefix(c *containerRecord, ord int) []byte {
	return append(collPrefix(famVector, c.Rid), byte(ord))
}

func vectorKey(c *containerRecord, ord int, loc []byte) []byte {
	return append(vectorPrefix(c, ord), loc...)
}

// putVectors writes the vectors of the item doc stored at loc; replaced
// says a version at loc may have some, which a path without a vector now
// takes away.
func putVectors(tx storage.Txn, c *containerRecord, doc document.Value, loc []byte, replaced bool) error {
	for ord, path := range c.vecPaths {
		k := vectorKey(c, ord, loc)
		if v, ok := vector.Store(nil, doc.At(path)); ok {
			if err := tx.Set(k, v); err != nil {
				return err
			}
		} else if replaced {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteVectors takes away the vectors of the item at loc.
func deleteVectors(tx storage.Txn, c *containerRecord, loc []byte) error {
	for ord := range c.vecPaths {
		if err := tx.Delete(vectorKey(c, ord, loc)); err != nil {
			return err
		}
	}
	return nil
}

// vectorOrder is a query ordered by the distance from a path of a vector
// index to a constant vector, of which a page needs the first want rows.
type vectorOrder struct {
	ord  int
	path []string
	fn   vector.Function
	vec  document.Value // the constant vector
	q    *vector.Query
	want int
}

// vectorShape reports whether the stored vectors can answer q: ORDER BY
// VectorDistance alone, one of its vectors read from the document at a
// path with stored vectors and the other constant, a TOP or an OFFSET
// and LIMIT, and no JOIN, GROUP BY, aggregate or DISTINCT, whose rows
// could not be told from its documents one by one.
func vectorShape(c *containerRecord, prog *eval.Program, params map[string]document.Value) (vectorOrder, bool) {
	q := prog.Query()
	if len(c.vecPaths) == 0 || len(q.OrderBy) != 1 || q.OrderBy[0].Rank || q.From == nil || len(q.Joins) > 0 ||
		len(q.GroupBy) > 0 || q.Select.Distinct || prog.Ranked() || gatewayplan.HasAggregates(q) {
		return vectorOrder{}, false
	}
	call, ok := vector.IsCall(q.OrderBy[0].Expr)
	if !ok || len(call.Args) < 2 {
		return vectorOrder{}, false
	}
	top, offset, limit := gatewayplan.Window(q, params)
	want := -1
	if top != nil {
		want = *top
	}
	if offset != nil && limit != nil && (want < 0 || *offset+*limit < want) {
		want = *offset + *limit
	}
	if want < 0 {
		return vectorOrder{}, false
	}
	fn, err := vector.FunctionOf(q, call, c.vectors, params)
	if err != nil {
		// The evaluator reports it.
		return vectorOrder{}, false
	}
	for i := range 2 {
		path, ok := plan.DocPath(q, call.Args[i])
		if !ok {
			continue
		}
		v, ok := ast.Constant(call.Args[1-i], params)
		if !ok {
			continue
		}
		qv, ok := vector.NewQuery(fn, v)
		if !ok {
			// No document scores against it: the evaluator finds none.
			continue
		}
		for ord, p := range c.vecPaths {
			if slices.Equal(p, path) {
				return vectorOrder{ord: ord, path: path, fn: fn, vec: v, q: qv, want: want}, true
			}
		}
	}
	return vectorOrder{}, false
}

// term is the plan's label of the search.
func (vo vectorOrder) term() plan.Term {
	return plan.Term{Path: vo.path, Label: "VectorDistance(/" + strings.Join(vo.path, "/") + ") " + vo.fn.String() + " first " + strconv.Itoa(vo.want)}
}

// scored is a stored vector's item and score.
type scored struct {
	score float64
	loc   []byte
	pos   []byte // the item's place in the scan order (itemScope.scanPos)
}

// before reports whether a comes before b in the order the evaluator sorts
// the rows of a vector search: most similar first, then in scan order
// (eval's rowOrder: ties of a key without DESC keep the documents'
// order).
func (vo vectorOrder) before(a, b *scored) bool {
	if a.score != b.score {
		if vo.fn.Descending() {
			return a.score > b.score
		}
		return a.score < b.score
	}
	return bytes.Compare(a.pos, b.pos) < 0
}

// bestHeap holds the best n scored items seen, the worst of them on top.
type bestHeap struct {
	vo    *vectorOrder
	items []scored
}

func (h *bestHeap) Len() int           { return len(h.items) }
func (h *bestHeap) Less(i, j int) bool { return h.vo.before(&h.items[j], &h.items[i]) }
func (h *bestHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *bestHeap) Push(x any)         { h.items = append(h.items, x.(scored)) }
func (h *bestHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

// vectorSource calls fn with stored vectors of one path and their items'
// locations, until fn returns false.
type vectorSource func(fn func(loc, v []byte) (bool, error)) error

// chargeVector counts a stored vector read and charges its score to the
// budget, what the evaluator's costs: a step per eight elements of the two
// vectors.
func chargeVector(st *readStats, vo *vectorOrder, v []byte) error {
	st.entries++
	st.bytes += len(v)
	if st.budget == nil {
		return nil
	}
	return st.budget.Spend(1 + vo.q.Dimensions()/4)
}

// scopeVectors reads the stored vectors of vo's path in scope s.
func scopeVectors(r storage.Reader, c *containerRecord, s *itemScope, vo *vectorOrder, st *readStats) vectorSource {
	return func(fn func(loc, v []byte) (bool, error)) error {
		prefix := vectorPrefix(c, vo.ord)
		lo, hi := scopeBounds(prefix, s)
		return scanRange(r, lo, hi, func(k, v []byte) (bool, error) {
			if err := chargeVector(st, vo, v); err != nil {
				return false, err
			}
			if loc := k[len(prefix):]; s.holds(loc) {
				return fn(loc, v)
			}
			return true, nil
		})
	}
}

// listedVectors reads the stored vectors of vo's path of the items at
// locs, together.
func listedVectors(r storage.Reader, c *containerRecord, locs [][]byte, vo *vectorOrder, st *readStats) vectorSource {
	return func(fn func(loc, v []byte) (bool, error)) error {
		keys := make([][]byte, len(locs))
		for i, loc := range locs {
			keys[i] = vectorKey(c, vo.ord, loc)
		}
		more := true
		return storage.GetMany(r, keys, func(i int, v []byte) error {
			if v == nil || !more {
				return nil // no vector there, or fn is done
			}
			if err := chargeVector(st, vo, v); err != nil {
				return err
			}
			var err error
			more, err = fn(locs[i], v)
			return err
		})
	}
}

// bestVectors scores the vectors of src and returns the best n, best
// first, and how many had a score.
func bestVectors(src vectorSource, s *itemScope, vo *vectorOrder, n int) ([]scored, int, error) {
	h := &bestHeap{vo: vo}
	total := 0
	err := src(func(loc, v []byte) (bool, error) {
		sc, ok := vo.q.Score(v)
		if !ok {
			return true, nil
		}
		total++
		it := scored{score: sc, loc: loc, pos: s.scanPos(loc)}
		if h.Len() == n {
			if !vo.before(&it, &h.items[0]) {
				return true, nil
			}
			heap.Pop(h)
		}
		it.loc = bytes.Clone(loc)
		it.pos = s.scanPos(it.loc)
		heap.Push(h, it)
		return true, nil
	})
	if err != nil {
		return nil, 0, err
	}
	out := make([]scored, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(scored)
	}
	return out, total, nil
}

// narrowTermLocs returns the locations of the items of scope s that a
// term of q's filter holds, when one holds fewer than limit of them: a
// filter that passes few items has only those items' vectors scored, read
// together by their keys, rather than every vector of the scope, and a
// full-text filter's words are read only while no such term names fewer
// items. Every item that passes the filter is among them (plan.Terms).
func narrowTermLocs(r storage.Reader, c *containerRecord, s *itemScope, q *ast.Query, params map[string]document.Value, limit int64, st *readStats) ([][]byte, bool, error) {
	if !c.Index.Ready || c.index.none || q.Where == nil {
		return nil, false, nil
	}
	var best [][]byte
	found := false
	for _, t := range plan.Terms(plan.Predicates(q, params)) {
		if len(t.Spans) == 0 || !c.index.indexes(t.Path) || (s.kind != plan.ScopeAll && s.kind != plan.ScopeRange && c.isKeyPath(t.Path)) {
			continue
		}
		spans, base := scopedSpans(c, t, s)
		locs, read, err := collectLocsUpTo(r, spans, s, st, func(k []byte) ([]byte, bool) { return entryLoc(k, base) }, limit, limit)
		if err != nil {
			return nil, false, err
		}
		if read < limit {
			best, found, limit = locs, true, read
		}
	}
	return best, found, nil
}

// vectorCandidates returns the items that make the first vo.want rows of
// prog's query in scope s at now, with their records and their scores
// (by their DocMeta.DocumentID): the best scored items whose records are
// live and pass the query's filter (rowFilter), read best first. The items scored are the scope's, or, when a term of
// the filter holds fewer than limit of them, that term's (narrowTermLocs).
// A round takes the best few more than it wants; when too few of them
// pass the filter, the next round takes as many more as the share that
// passed says it needs, twice over, until every scored item has been
// looked at. The order is total, so a round's best begin with the last
// round's, whose records it does not read again.
func (e *Engine) vectorCandidates(r storage.Reader, c *containerRecord, s *itemScope, vo *vectorOrder, prog *eval.Program, params map[string]document.Value, now time.Time, limit int64, st *readStats) ([]foundItem, map[int64]float64, error) {
	if vo.want == 0 {
		return nil, nil, nil
	}
	var filter *eval.Program
	parse := document.Parse
	if q := prog.Query(); q.Where != nil || q.Select.Value != nil {
		f, err := rowFilter(prog)
		if err != nil {
			return nil, nil, queryError(err)
		}
		filter = f
		// Only the properties the filter reads are decoded, not the
		// vectors the query is ordered by.
		fq := *f.Query()
		fq.Select = ast.Select{Value: &ast.Literal{Value: document.BoolValue(true)}}
		parse = docParser(&fq, true)
	}
	src := scopeVectors(r, c, s, vo, st)
	if filter != nil {
		locs, ok, err := narrowTermLocs(r, c, s, prog.Query(), params, limit, st)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			src = listedVectors(r, c, locs, vo, st)
		}
	}
	n := vo.want + vo.want/4 + 8
	var found []foundItem
	scores := map[int64]float64{}
	looked := 0
	for {
		best, total, err := bestVectors(src, s, vo, n)
		if err != nil {
			return nil, nil, err
		}
		for rest := best[min(looked, len(best)):]; len(rest) > 0 && len(found) < vo.want; {
			k := min(len(rest), vo.want-len(found))
			run := make([][]byte, k)
			for i, b := range rest[:k] {
				run[i] = b.loc
			}
			chosen := rest[:k]
			rest, looked = rest[k:], looked+k
			_, err := readRun(r, c, run, st, func(i int, rec *itemRecord) (bool, error) {
				if c.expired(rec, now) || !s.keeps(rec) {
					return true, nil
				}
				if filter != nil {
					doc, err := parse(rec.json)
					if err != nil {
						return false, err
					}
					if rows, err := filter.Rows(doc, docMeta(run[i])); err != nil || len(rows) == 0 {
						// A document the filter fails on makes no row.
						return true, nil
					}
				}
				item := foundItem{loc: run[i], rec: *rec}
				item.rec.detach()
				found = append(found, item)
				scores[docMeta(run[i]).DocumentID] = chosen[i].score
				return true, nil
			})
			if err != nil {
				return nil, nil, err
			}
		}
		if len(found) == vo.want || total <= n {
			return found, scores, nil
		}
		n += 2 * (vo.want - len(found)) * looked / max(len(found), 1)
	}
}
