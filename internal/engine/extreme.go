package engine

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// extremeByIndex answers SELECT VALUE MIN(c.path) FROM c, or MAX, with no
// WHERE clause (or the SDKs' per-range rewrite, [{"item": MAX(c.path)}]),
// over the whole container or a range, from the path's index entries:
// they sort as MIN and MAX compare (null, false, true, numbers, strings),
// so the answer is the item at the first or last entry of a scalar in the
// scope, skipping the items expired and not purged yet, and it reads that
// item's record for the value as written. It reads as many entries as lie
// outside the scope before it, and a record, where evaluating it read
// every record of the scope.
//
// It reports false, and the query's evaluation answers, when the index
// cannot tell the answer: an item of the scope holds an array or an object
// there (MIN and MAX are then undefined; the index keeps a marker entry
// for each), none holds a scalar (the query has no value), the value is a
// number of magnitude 2^53 or more (whose double others share), the path
// is a system property or crosses an array, or the index is being rebuilt;
// and for a logical partition or a hierarchical prefix, whose own records
// a scan reads, where the path's entries are the whole container's.
func extremeByIndex(r storage.Reader, c *containerRecord, q *ast.Query, scope *itemScope, now time.Time, st *readStats, page *FeedPage) (bool, error) {
	call, boxed := aggregateShape(q, "MAX")
	if call == nil {
		call, boxed = aggregateShape(q, "MIN")
	}
	if call == nil || q.Where != nil || !c.Index.Ready || c.index.none ||
		(scope.kind != plan.ScopeAll && scope.kind != plan.ScopeRange) {
		return false, nil
	}
	path, ok := plan.DocPath(q, call.Args[0])
	if !ok || crossesArray(path) || systemPath(path) || !c.index.indexes(path) {
		return false, nil
	}
	expired, err := expiredIn(r, c, scope, now, st)
	if err != nil {
		return false, err
	}
	base := appendIndexPath(indexPrefix(c), path)
	var read int64
	// first finds the first entry of the scope's live items in [lo, hi),
	// from the end when last; found is nil when there is none.
	first := func(lo, hi []byte, last bool) (found, loc []byte, err error) {
		err = scanRangeDir(r, lo, hi, last, func(k, _ []byte) (bool, error) {
			read++
			if err := st.entry(); err != nil {
				return false, err
			}
			l, ok := entryLoc(k, len(base))
			if !ok {
				return false, fmt.Errorf("index entry %x: malformed", k)
			}
			if !scope.holds(l) || expired[string(l)] {
				return true, nil
			}
			found, loc = bytes.Clone(k[len(base):len(k)-len(l)]), bytes.Clone(l)
			return false, nil
		})
		return found, loc, err
	}
	scalars := append(bytes.Clone(base), tagNull)
	markers := append(bytes.Clone(base), tagArray)
	if m, _, err := first(markers, prefixEnd(base), false); err != nil || m != nil {
		return false, err
	}
	value, loc, err := first(scalars, markers, strings.EqualFold(call.Name, "MAX"))
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
	p := plan.IndexExtremePlan(scope.kind, plan.Term{Path: path, Label: "/" + strings.Join(path, "/") + " " + strings.ToUpper(call.Name)}, read)
	page.Plan = &p
	page.Items = append(page.Items, partialRow(v, boxed))
	return true, nil
}
