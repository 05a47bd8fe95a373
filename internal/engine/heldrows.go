package engine

import (
	"bytes"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
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
	// marks, for the rows of an ORDER BY the evaluator sorts
	// (sortedPage), holds each row's place as its token keeps it
	// (appendMark), and window the rows' window (next.made counts the
	// rows before the first); nil for a whole result's rows.
	marks  [][]byte
	window rowWindow
}

// holds reports whether h holds rows.
func (h *heldRows) holds() bool { return h.rows != nil }

// servesAt reports whether the rows are still the query's, for the page
// of token cur over container c, whose sequences' state is st, at now.
func (h *heldRows) servesAt(cur cursor, c *containerRecord, st containerState, now time.Time) bool {
	return h.next.fingerprint == cur.fingerprint && h.next.skip == cur.skip && bytes.Equal(h.next.pos, cur.pos) && h.next.made == cur.made && h.etag == c.Etag &&
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
		e.held.keep(next.kept, &rest, rest.size(), e.clock.Now())
	} else if h.complete {
		return
	}
	page.Continuation = next.String()
}

// sortedHeldPage fills page with the held rows of a sorted ORDER BY
// that fall in its window and fit it, as sortedPage would from the same
// place, and keeps the rest for the page after it. When they run out
// before the result does, the page after evaluates the query again from
// the last one's place.
func (e *Engine) sortedHeldPage(h *heldRows, limit int, page *FeedPage) {
	win := h.window
	win.made = h.next.made
	last := fillSorted(len(h.rows), func(i int) []byte { return h.rows[i] }, &win, limit, page)
	if last < 0 || win.done() || last+1 == len(h.rows) && h.complete {
		return
	}
	next := h.next
	next.pos, next.made, next.kept = h.marks[last], win.made, 0
	if last+1 < len(h.rows) {
		next.kept = newKeptID()
		rest := *h
		rest.next, rest.rows, rest.marks = next, h.rows[last+1:], h.marks[last+1:]
		e.held.keep(next.kept, &rest, rest.size(), e.clock.Now())
	}
	page.Continuation = next.String()
}

// heldSortedRows is how many rows past its own a later page of a sorted
// ORDER BY holds for the pages after it (sortedPage): a few pages'
// worth, at least 256, so that a drain reads the candidates again once
// per so many pages. A first page holds none: many queries end there,
// and making the rows cost such a page as much again as reading its
// candidates (BenchmarkSortedDrain/page-1).
func heldSortedRows(limit int) int { return max(4*limit, 256) }

// holdSorted makes rows, whose places are marks, the held rows of the
// sorted page of token next, in the window win as the page left it, as
// many as fit the room one query may take; complete says they run to the
// result's end.
func (h *heldRows) holdSorted(rows []document.Value, marks []eval.Mark, next cursor, win rowWindow, complete bool) {
	h.hold(rows, next)
	h.complete = h.complete && complete
	h.window = win
	h.marks = make([][]byte, len(h.rows))
	for i := range h.rows {
		h.marks[i] = appendMark(nil, marks[i])
	}
}

// heldRowOverhead is what a held row costs beyond its bytes.
const heldRowOverhead = 24

// size is the room the held rows take, with their places.
func (h *heldRows) size() int {
	n := 0
	for _, r := range h.rows {
		n += len(r) + heldRowOverhead
	}
	for _, m := range h.marks {
		n += len(m) + heldRowOverhead
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

// watchExpiry returns src, noting in h, which it empties of rows, the
// first instant one of the live documents of scope s it gives expires.
func (h *heldRows) watchExpiry(src itemSource, c *containerRecord, s *itemScope, now time.Time) itemSource {
	h.rows, h.marks, h.until = nil, nil, time.Time{}
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
