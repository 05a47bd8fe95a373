package engine

import (
	"bytes"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
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
// whole scope. Read in the order of the group key, they come together:
// keyOrderGroups reads the documents through the ordered stream of the
// query with ORDER BY the key (streamOrdered), groups them as they come,
// and ends a page before the first document of the group past its page
// size, so its token is the stream's position there and page k reads its
// own groups' documents only. The groups then come in the order of their
// keys, documents without the key first, an order the service leaves
// open.

// keyOrderShape returns the query whose rows are the documents prog groups
// in the order of its key, when prog is a GROUP BY the ordered stream can
// feed: one key, on a path of the item (streamShape checks it is indexed),
// no JOIN, window, DISTINCT or rank, not the SDKs' partial groups. Each
// row is [document, DocumentId(document)], so that the grouping sees the
// document's identity as the evaluation over the scope does.
func keyOrderShape(prog *eval.Program, p QueryParams) (*ast.Query, bool) {
	q := prog.Query()
	alias, ok := itemAlias(q)
	if !ok || len(q.GroupBy) != 1 || len(q.Joins) > 0 || len(q.OrderBy) > 0 || q.Select.Distinct || q.Select.Top != nil ||
		q.Offset != nil || q.Limit != nil || prog.Ranked() || p.RangeID != "" && gatewayplan.PartialGroups(q) {
		return nil, false
	}
	if path, ok := plan.DocPath(q, q.GroupBy[0]); !ok || len(path) == 0 {
		return nil, false
	}
	item := &ast.Ident{Name: alias}
	o := *q
	o.Select = ast.Select{Value: &ast.ArrayLit{Elems: []ast.Expr{item, &ast.Call{Name: "DocumentId", Args: []ast.Expr{item}}}}}
	o.GroupBy = nil
	o.OrderBy = []ast.OrderItem{{Expr: q.GroupBy[0]}}
	return &o, true
}

// keyOrderGroups serves a page of prog, a GROUP BY of keyOrderShape whose
// ordered query is ordered, through the ordered stream, and reports
// whether it did: a first page only when the planner chooses the stream
// for the ordered query, a later one only when its token is of such a page
// (fp, the fingerprint of this way of paging, differs from the other's).
func (e *Engine) keyOrderGroups(r storage.Reader, c *containerRecord, prog, ordered *eval.Program, p QueryParams, s *itemScope, now time.Time, st *readStats, total int64, fp uint64, page *FeedPage) (bool, error) {
	limit := pageSize(p.MaxItemCount)
	var cur cursor
	resumed := p.Continuation != ""
	if resumed {
		k, derr := parseCursor(p.Continuation, fp)
		if derr != nil {
			// A token of the other way of paging, or none at all:
			// that way reads it, or says what is wrong with it.
			return false, nil
		}
		if k.access != plan.OrderedStream {
			return true, errBadContinuation
		}
		cur = k
	}
	qp, err := e.planQuery(r, c, total, ordered, p.Params, s, now, st, limit, resumed, cur, noScanFirst, nil)
	if err != nil {
		return resumed, err
	}
	if qp.stream == nil {
		if resumed {
			return true, errBadContinuation
		}
		return false, nil
	}
	page.Plan = qp.plan
	next := cursor{fingerprint: fp, text: textHash(p.Query), access: plan.OrderedStream, terms: qp.terms, indexVer: c.Index.Version}
	keys, err := groupKeys(prog)
	if err != nil {
		return true, queryError(err)
	}
	// part groups the documents from cur up to limit groups and returns
	// their rows and the token of the position before the next group's
	// first document ("" at the end).
	part := func(limit int) ([]document.Value, string, error) {
		var stop string
		each := func(yield func(document.Value, eval.DocMeta) error) error {
			at, groups := cur, 0
			var key, last []byte
			// The stream is read in runs of documents, the first of one
			// per group of the page and one more, each after twice the
			// one before: a page reads at most about three times the
			// documents of its groups, and seeks a few times.
			for n := limit + 1; ; n = min(2*n, maxRun) {
				chunk := &FeedPage{}
				if err := streamOrdered(r, c, ordered, p.Params, qp.stream, s, now, st, at, next, n, nil, chunk); err != nil {
					return err
				}
				if len(chunk.Items) == 0 && chunk.Continuation != "" {
					// The budget ran out before a document.
					return errPageTime
				}
				for i, b := range chunk.Items {
					row, err := document.Parse(b)
					if err != nil {
						return err
					}
					doc := row.Index(0)
					meta := eval.DocMeta{DocumentID: row.Index(1).Int()}
					keyRows, err := keys.Rows(doc, meta)
					if err != nil || len(keyRows) == 0 {
						return err
					}
					key = eval.CanonicalKey(key[:0], keyRows[0])
					if groups == 0 || !bytes.Equal(key, last) {
						if groups == limit {
							stop, err = streamPosition(r, c, ordered, p.Params, qp.stream, s, now, st, at, next, i)
							return err
						}
						groups++
						last = append(last[:0], key...)
					}
					if err := yield(doc, meta); err != nil {
						return err
					}
				}
				if chunk.Continuation == "" {
					return nil
				}
				var derr *Error
				if at, derr = parseCursor(chunk.Continuation, fp); derr != nil {
					return derr
				}
			}
		}
		rows, err := prog.RunEach(each, 0, nil)
		return rows, stop, err
	}
	for kept := len(page.Items); ; limit /= 2 {
		rows, stop, err := part(limit)
		if err != nil {
			return true, queryError(err)
		}
		end, derr := pageRows(rows, 0, len(rows), page)
		if derr != nil {
			return true, derr
		}
		// Rows that take more than a response holds are grouped again
		// with half the groups, down to one, whose row fits.
		if end == len(rows) || limit == 1 {
			page.Continuation = stop
			return true, nil
		}
		page.Items = page.Items[:kept]
	}
}

// maxRun bounds a run of documents keyOrderGroups reads from the stream
// at once: what the page may read past its last group, and read again.
const maxRun = 1024

// streamPosition returns the token of the ordered stream's position n
// documents after at: where the page read them, the stream reads them
// again, to the same place.
func streamPosition(r storage.Reader, c *containerRecord, ordered *eval.Program, params map[string]document.Value, o *plan.Ordered, s *itemScope, now time.Time, st *readStats, at, next cursor, n int) (string, error) {
	if n == 0 {
		return at.String(), nil
	}
	again := &FeedPage{}
	if err := streamOrdered(r, c, ordered, params, o, s, now, st, at, next, n, nil, again); err != nil {
		return "", err
	}
	if len(again.Items) != n || again.Continuation == "" {
		return "", errPageTime
	}
	return again.Continuation, nil
}
