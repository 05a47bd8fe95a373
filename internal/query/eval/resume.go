package eval

import (
	"errors"

	"github.com/mayfly-db/mayfly/internal/document"
)

// A Mark is a row's place in the order of an ORDER BY query's rows: its
// ORDER BY keys, then, among rows whose keys are all equal, its
// document's place in the order of the source (DocMeta.Order), backwards
// when a key is descending as sortRows breaks such ties, then its number
// among that document's rows. Marks order the rows totally, so a page
// can ask for the rows after the last one the page before returned
// (RunAfter) instead of for every row up to its own.
type Mark struct {
	Keys []document.Value
	Doc  []byte
	Row  int
}

// Resumable reports whether the program's rows can be asked for after a
// Mark (RunAfter): a query over documents with ORDER BY, without GROUP BY,
// an aggregate, DISTINCT, RANK, TOP or OFFSET, whose rows are in the order
// of their keys and nothing else.
func (p *Program) Resumable() bool {
	q := p.q
	return q.From != nil && len(q.OrderBy) > 0 && !p.top.grouped && !q.Select.Distinct &&
		p.top.rank == nil && q.Select.Top == nil && q.Offset == nil
}

var errNotResumable = errors.New("eval: RunAfter needs a resumable program (Resumable)")

// RunAfter is RunEach for a resumable program (Resumable) that returns
// only its rows after mark (nil: from the first), at most n of them
// (n <= 0: every one), each with its mark. It holds at most the rows it
// may return, and a few more, however many rows come before the mark; a
// document's Order is the only part of its DocMeta the mark keeps.
func (p *Program) RunAfter(each Each, n int, passed *int, after *Mark) ([]document.Value, []Mark, error) {
	if !p.Resumable() {
		return nil, nil, errNotResumable
	}
	if after != nil && len(after.Keys) != len(p.q.OrderBy) {
		return nil, nil, errors.New("eval: a mark of another query")
	}
	ctx := p.newCtx(DocMeta{})
	ctx.resume = &resumeState{after: after}
	ctx.resume.order = ctx.rowOrder(p.q) // which sees the run places its rows
	rows, err := p.runEach(ctx, each, n, passed)
	if err != nil {
		return nil, nil, err
	}
	return rows, ctx.resume.marks, nil
}

// resumeState is what a run under RunAfter keeps beyond RunEach's.
type resumeState struct {
	after *Mark
	order func(a, b sortRow) int
	// marks holds the places of the rows returned, in order.
	marks []Mark
	// arena holds the copies of the documents' Order, a chunk at a time
	// rather than an allocation per row.
	arena []byte
}

// keep copies b into the arena.
func (rs *resumeState) keep(b []byte) []byte {
	if len(rs.arena)+len(b) > cap(rs.arena) {
		rs.arena = make([]byte, 0, max(4096, len(b)))
	}
	n := len(rs.arena)
	rs.arena = append(rs.arena, b...)
	return rs.arena[n:len(rs.arena):len(rs.arena)]
}

// place gives row r of the current document its place and reports
// whether that is after the mark.
func (rs *resumeState) place(c *ctx, r *sortRow) bool {
	r.order = rs.keep(c.meta.Order)
	r.sub = c.docRow
	c.docRow++
	if rs.after == nil {
		return true
	}
	m := sortRow{keys: rs.after.Keys, order: rs.after.Doc, sub: rs.after.Row}
	return rs.order(m, *r) < 0
}

func (r sortRow) mark() Mark { return Mark{Keys: r.keys, Doc: r.order, Row: r.sub} }
