package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// orderedSource serves a query of the shape
//
//	SELECT … FROM c [WHERE …] ORDER BY c.path [ASC|DESC] with TOP n or OFFSET/LIMIT
//
// from the range index: it walks the path's entries in the query's order
// and stops as soon as it has as many documents passing the WHERE clause as
// the query can return, so the cost follows the rows returned, not the
// container. It reports false when the query has another shape.
//
// Documents without the property are not in the index. Ascending, they
// would sort first, so the walk is used ascending only when the WHERE
// clause filters on the ORDER BY path itself (which makes it defined).
func (e *Engine) orderedSource(r storage.Reader, c *containerRecord, prog *eval.Program, params map[string]document.Value, now time.Time, keep func(*itemRecord) bool) ([]uint64, bool, error) {
	q := prog.Query()
	if !c.Index.Ready || c.index.none || len(q.OrderBy) != 1 || len(q.GroupBy) > 0 || q.Select.Distinct || gatewayplan.HasAggregates(q) || len(q.Joins) > 0 {
		return nil, false, nil
	}
	path, ok := plan.DocPath(q, q.OrderBy[0].Expr)
	if !ok || !c.index.indexes(path) {
		return nil, false, nil
	}
	info := gatewayplan.Describe(q, params)
	want := -1
	switch {
	case info.Top != nil:
		want = *info.Top
	case info.Offset != nil && info.Limit != nil:
		want = *info.Offset + *info.Limit
	}
	if want < 0 {
		return nil, false, nil
	}
	desc := q.OrderBy[0].Desc
	// A term on the ORDER BY path makes the property defined in every row,
	// so every candidate is in the index.
	defined := filtersOn(q, params, path)
	if !desc && !defined {
		return nil, false, nil
	}
	filter, err := whereOnly(q, params, now)
	if err != nil {
		return nil, false, nil
	}
	prefix := appendIndexPath(indexPrefix(c), path)
	lo, hi := pathBounds(prefix, plan.Predicates(q, params), path)
	it, err := r.NewIter(storage.IterParams{Lower: lo, Upper: hi, Reverse: desc})
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	var seqs []uint64
	seen := map[uint64]bool{}
	scalars := 0 // documents met through scalar entries
	for ok := it.First(); ok && scalars < want; ok = it.Next() {
		k := it.Key()
		seq := binary.BigEndian.Uint64(k[len(k)-8:])
		// Arrays and objects have bare markers, unordered among
		// themselves: take every one of them, then want scalars.
		nonScalar := k[len(prefix)] >= tagArray
		if seen[seq] {
			continue
		}
		seen[seq] = true
		raw, err := r.Get(itemKey(c.Rid, seq))
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		rec, err := decodeItemRecord(raw)
		if err != nil {
			return nil, false, err
		}
		if c.expired(&rec, now) || !keep(&rec) {
			continue
		}
		doc, err := document.Parse(rec.json)
		if err != nil {
			return nil, false, err
		}
		rows, err := filter.Rows(doc, docMeta(c, seq))
		if err != nil || len(rows) == 0 {
			continue
		}
		seqs = append(seqs, seq)
		if !nonScalar {
			scalars++
		}
	}
	if err := it.Err(); err != nil {
		return nil, false, err
	}
	if scalars < want && !defined {
		// Too few documents have the property: the rest of the answer is
		// documents without it, which only a scan finds.
		return nil, false, nil
	}
	return seqs, true, nil
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

// whereOnly compiles "SELECT * FROM … WHERE …" of q: the filter alone,
// judged at the operation's now like the query it comes from.
func whereOnly(q *ast.Query, params map[string]document.Value, now time.Time) (*eval.Program, error) {
	f := *q
	f.Select = ast.Select{Star: true}
	f.OrderBy, f.GroupBy, f.Offset, f.Limit = nil, nil, nil, nil
	return eval.Compile(&f, params, eval.Options{Now: now})
}
