package engine

import (
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
)

// A query whose rows the evaluator makes whole (eval.Program.WholeRows: a
// GROUP BY paged by an offset into its groups, a DISTINCT with ORDER BY)
// makes every row of its result to return one page of them. The page
// after it would evaluate the query again and skip the rows before its
// offset, so that draining R rows in pages of n would read the scope R/n
// times. Instead the page keeps the rows after its own (heldRows), under
// an id its token carries, and the next page returns them without reading
// a document, when they are the rows an evaluation would now make:
//
//   - no item of the container was written since (every write of an item
//     takes an LSN of its range's sequence, and a page reads every
//     sequence's state anyway: containerState.writes);
//   - the container is as it was (its etag: defaultTtl, computed
//     properties);
//   - no document the evaluation read has expired since: an expired item
//     leaves every row and aggregate at once (ttl.md A3);
//   - the query reads no clock (GetCurrentDateTime and the like) and
//     calls no user-defined function, whose code may change.
//
// Otherwise, or when the rows are gone (a restart, another gateway, the
// room they took given to others), the page evaluates the query again and
// skips to its offset, as every page did before. A script's query keeps
// nothing: it reads its transaction's writes, which a rollback may take
// back without a trace in the LSNs.

// heldRowsMax bounds the bytes of the rows kept for all queries.
const heldRowsMax = 16 << 20

// heldRows are the rows of a whole result from the offset skip on.
type heldRows struct {
	// next is the token of the page that kept them, whose offset
	// (next.skip) the first of them is at.
	next cursor
	rows [][]byte
	// complete says the rows run to the result's end; when not, those
	// past them were left out for room, and the page after the last
	// held evaluates the query again.
	complete bool
	etag     string
	writes   uint64
	// until is the first instant a document the evaluation read
	// expires; zero when none will.
	until time.Time
}

// servesAt reports whether the rows are still the query's, for the page
// of token cur over container c, whose sequences' state is st, at now.
func (h *heldRows) servesAt(cur cursor, c *containerRecord, st containerState, now time.Time) bool {
	return h.next.fingerprint == cur.fingerprint && h.next.skip == cur.skip && h.etag == c.Etag &&
		h.writes == st.writes && (h.until.IsZero() || now.Before(h.until))
}

// heldPage fills page with the held rows that fit it and keeps the rest
// for the page after it.
func (e *Engine) heldPage(h *heldRows, limit int, page *FeedPage) {
	end := fillPage(len(h.rows), func(i int) []byte { return h.rows[i] }, limit, page)
	next := h.next
	next.skip += end
	next.kept = 0
	if end < len(h.rows) {
		next.kept = newKeptID()
		rest := *h
		rest.next, rest.rows = next, h.rows[end:]
		e.held.keep(next.kept, &rest, heldBytes(rest.rows), e.clock.Now())
	} else if h.complete {
		return
	}
	page.Continuation = next.String()
}

// heldRowOverhead is what a held row costs beyond its bytes.
const heldRowOverhead = 24

func heldBytes(rows [][]byte) int {
	n := 0
	for _, r := range rows {
		n += len(r) + heldRowOverhead
	}
	return n
}

// holdsRows reports whether a page of q may keep the rows after its own
// for the page after it: q's rows change with its items alone.
func holdsRows(q *ast.Query) bool {
	holds := true
	ast.WalkQuery(q, func(e ast.Expr) bool {
		if call, ok := e.(*ast.Call); ok && (call.UDF || strings.HasPrefix(strings.ToUpper(call.Name), "GETCURRENT")) {
			holds = false
		}
		return holds
	})
	return holds
}

// heldQueryMax bounds the bytes of the rows one query keeps: its
// pages past them evaluate the query again, each keeping as much.
const heldQueryMax = heldRowsMax / 4

// hold makes rows the held rows of the page of token next, as many as
// fit the room one query may take.
func (h *heldRows) hold(rows []document.Value, next cursor) {
	h.next, h.rows, h.complete = next, make([][]byte, 0, len(rows)), true
	size := 0
	for _, r := range rows {
		b := r.JSON()
		if size += len(b) + heldRowOverhead; size > heldQueryMax {
			h.complete = false
			break
		}
		h.rows = append(h.rows, b)
	}
}

// watchExpiry returns src, noting in h the first instant one of the
// live documents of scope s it gives expires.
func (h *heldRows) watchExpiry(src itemSource, c *containerRecord, s *itemScope, now time.Time) itemSource {
	if !c.TTL.NeedsPurge() {
		return src
	}
	return func(from []byte, fn func(pos, loc []byte, rec *itemRecord) (bool, error)) error {
		return src(from, func(pos, loc []byte, rec *itemRecord) (bool, error) {
			if !c.expired(rec, now) && s.keeps(rec) {
				if at, ok := c.TTL.ExpiresAt(rec.ts, rec.itemTTL()); ok && (h.until.IsZero() || at.Before(h.until)) {
					h.until = at
				}
			}
			return fn(pos, loc, rec)
		})
	}
}
