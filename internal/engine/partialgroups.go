package engine

import (
	"bytes"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
)

// partialGroups reports whether a page of prog asked with p, resuming at
// cur, groups only the documents from its position on
// (partialGroupsPage): prog is a GROUP BY an SDK rewrote from a gateway
// plan (gatewayplan.PartialGroups), sent as the SDKs send it, to a
// partition key range, and cur is a token of such a page (cursor.partial),
// not one of a page of whole groups, which pages by an offset into them
// (runQuery). A query of that shape sent otherwise, by a client that need not
// merge, gets whole groups; whole groups merge too.
func partialGroups(prog *eval.Program, p QueryParams, resumed bool, cur cursor) bool {
	return p.RangeID != "" && gatewayplan.PartialGroups(prog.Query()) && (!resumed || cur.partial)
}

// partialGroupsPage pages a GROUP BY whose rows are partial aggregates the
// client merges (partialGroups). A page groups the documents of src from
// its position until it has limit groups and the next document would
// start another, and ends before that document; so it reads the documents
// of its own part of the scope only, and draining the query reads each
// document once, where a page of whole groups reads the whole scope.
//
// The SDKs' GROUP BY stage takes a round of empty pages for the end of the
// query (the JavaScript SDK's then reports more results forever), so no
// page but a range's only one may be empty: a page ends before a document
// that makes a row, never where no row may follow. To know that before it
// groups a document, the page reads its group keys first, through the
// query with the keys as its rows (groupKeys); a document that makes no
// row is passed over. A page whose time or work runs out fails, as a page
// of whole groups does: ending there could leave only an empty page.
//
// A part whose rows take more than a response holds is grouped again with
// half the groups, down to one; only the rows of one group's documents,
// or one document's, may still come over several responses. The token's
// made is then the limit the page stopped at, and its skip counts the rows
// of the part already returned: the next page groups the same part again,
// from the same position to the same limit, and returns the rest.
func partialGroupsPage(src itemSource, c *containerRecord, prog *eval.Program, s *itemScope, now time.Time, cur, next cursor, limit int, made *int, page *FeedPage) error {
	if cur.skip > 0 {
		limit = cur.made
	}
	keys, err := groupKeys(prog)
	if err != nil {
		return queryError(err)
	}
	// part groups the documents from the position up to limit groups, and
	// returns their rows and the position of the document it stopped
	// before (nil at the end of the scope).
	part := func(limit int) ([]document.Value, []byte, error) {
		seen := map[string]bool{}
		var stop, key []byte
		*made = 0
		each := func(yield func(document.Value, eval.DocMeta) error) error {
			return liveDocuments(src, c, prog, s, now, cur.pos, func(pos []byte, doc document.Value, meta eval.DocMeta) (bool, error) {
				rows, err := keys.Rows(doc, meta)
				if err != nil {
					return false, err
				}
				var fresh []string
				for _, row := range rows {
					key = eval.CanonicalKey(key[:0], row)
					if !seen[string(key)] {
						fresh = append(fresh, string(key))
					}
				}
				if len(fresh) == 0 {
					// No row, or rows of groups the page has.
					if len(rows) == 0 {
						return true, nil
					}
					return true, yield(doc, meta)
				}
				if len(seen) >= limit {
					stop = bytes.Clone(pos)
					return false, nil
				}
				for _, k := range fresh {
					seen[k] = true
				}
				*made = len(seen)
				return true, yield(doc, meta)
			})
		}
		rows, err := prog.RunEach(each, 0, nil)
		return rows, stop, err
	}
	var stop []byte
	for kept := len(page.Items); ; limit /= 2 {
		rows, at, err := part(limit)
		if err != nil {
			return queryError(err)
		}
		end := pageRows(rows, cur.skip, len(rows), page)
		stop = at
		// Rows that take more than a response holds are grouped again
		// in a smaller part, down to one group, rather than returned
		// over several responses: a write between those would shift
		// the rows the next skips.
		if end == len(rows) || cur.skip > 0 || limit == 1 {
			if end < len(rows) {
				next.pos, next.skip = cur.pos, end
			}
			break
		}
		page.Items = page.Items[:kept]
	}
	next.made, next.partial = limit, true
	switch {
	case next.skip > 0:
	case stop != nil:
		next.pos = stop
	default:
		return nil
	}
	page.Continuation = next.String()
	return nil
}

// groupKeys is the streamer of prog's GROUP BY keys: the query with
// SELECT VALUE [keys…] and no GROUP BY, whose rows for a document are
// those its grouping sees, each as the array of its keys.
func groupKeys(prog *eval.Program) (*eval.Streamer, error) {
	q := *prog.Query()
	q.Select = ast.Select{Value: &ast.ArrayLit{Elems: q.GroupBy}}
	q.GroupBy = nil
	keys, err := prog.Derive(&q)
	if err != nil {
		return nil, err
	}
	return keys.Streamer()
}
