package eval

import (
	"errors"
	"slices"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
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
// an aggregate, RANK, TOP or OFFSET, whose rows are in the order of their
// keys and nothing else; with DISTINCT, only when its repeats tie
// (keyedByRow), so that a page knows the rows before it that repeat its
// own from the ties of its mark alone.
func (p *Program) Resumable() bool {
	q := p.q
	return q.From != nil && len(q.OrderBy) > 0 && !p.top.grouped && (!q.Select.Distinct || keyedByRow(q)) &&
		p.top.rank == nil && q.Select.Top == nil && q.Offset == nil
}

// keyedByRow reports whether equal rows of q have equal ORDER BY keys:
// each key is the row (SELECT VALUE e … ORDER BY e), one of its
// properties (SELECT e AS a, … ORDER BY e, or SELECT VALUE {"a": e, …}
// … ORDER BY e), or, when a row is the document
// itself (SELECT * FROM c, without JOIN), any function of it but RAND.
func keyedByRow(q *ast.Query) bool {
	sel := &q.Select
	for _, o := range q.OrderBy {
		switch {
		case sel.Star:
			if len(q.Joins) > 0 || q.From.Iterate || randomized(o.Expr) {
				return false
			}
			if _, root := q.From.Expr.(*ast.Ident); !root {
				return false
			}
		case sel.Value != nil:
			if !ast.Equal(o.Expr, sel.Value) && !objectProperty(sel.Value, o.Expr) || randomized(o.Expr) {
				return false
			}
		default:
			if randomized(o.Expr) || !slices.ContainsFunc(sel.Items, func(it ast.SelectItem) bool { return ast.Equal(it.Expr, o.Expr) }) {
				return false
			}
		}
	}
	return true
}

// objectProperty reports whether v is an object literal of distinct
// property names one of which is e: equal rows then have equal values of
// e.
func objectProperty(v, e ast.Expr) bool {
	obj, ok := v.(*ast.ObjectLit)
	if !ok {
		return false
	}
	found := false
	for i, f := range obj.Fields {
		for _, g := range obj.Fields[:i] {
			if g.Name == f.Name {
				return false
			}
		}
		found = found || ast.Equal(f.Value, e)
	}
	return found
}

// randomized reports whether e calls RAND, whose value a row does not
// determine.
func randomized(e ast.Expr) bool {
	found := false
	ast.Walk(e, func(x ast.Expr) bool {
		if call, ok := x.(*ast.Call); ok && strings.EqualFold(call.Name, "RAND") {
			found = true
		}
		return !found
	})
	return found
}

var errNotResumable = errors.New("eval: RunAfter needs a resumable program (Resumable)")

// RunAfter is RunEach for a resumable program (Resumable) that returns
// only its rows after mark (nil: from the first), at most n of them
// (n <= 0: every one), each with its mark, and up to extra rows more
// while holding them keeps within the budget's memory: past it, it
// returns n (under DISTINCT, n distinct rows). It holds at most the rows it may return, and a
// few more, however many rows come before the mark; a document's Order
// is the only part of its DocMeta the mark keeps.
func (p *Program) RunAfter(each Each, n, extra int, passed *int, after *Mark) ([]document.Value, []Mark, error) {
	if !p.Resumable() {
		return nil, nil, errNotResumable
	}
	if after != nil && len(after.Keys) != len(p.q.OrderBy) {
		return nil, nil, errors.New("eval: a mark of another query")
	}
	ctx := p.newCtx(DocMeta{})
	ctx.resume = &resumeState{after: after, before: map[string]bool{}}
	if after != nil {
		ctx.resume.mark = sortRow{keys: after.Keys, order: after.Doc, sub: after.Row}
	}
	ctx.resume.order = ctx.rowOrder(p.q) // which sees the run places its rows
	if n > 0 && extra > 0 {
		n, ctx.resume.extra = n+extra, extra
	}
	rows, err := p.runEach(ctx, each, n, passed)
	if err != nil {
		return nil, nil, err
	}
	return rows, ctx.resume.marks, nil
}

// resumeState is what a run under RunAfter keeps beyond RunEach's.
type resumeState struct {
	after *Mark
	mark  sortRow // after, as a row
	order func(a, b sortRow) int
	// marks holds the places of the rows returned, in order.
	marks []Mark
	// extra is how many of the rows asked for may be given up when
	// holding them would pass the budget's memory (RunAfter).
	extra int
	// before holds, under DISTINCT, the rows at or before the mark that
	// tie with it, by canonical key: the only rows before the mark a row
	// after it may repeat.
	before map[string]bool
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
// whether that is after the mark, and if not whether its keys tie with
// the mark's.
func (rs *resumeState) place(c *ctx, r *sortRow) (after, tie bool) {
	r.order, r.sub = c.meta.Order, c.docRow
	c.docRow++
	if rs.after != nil && rs.order(rs.mark, *r) >= 0 {
		return false, rs.ties(r.keys)
	}
	r.order = rs.keep(r.order)
	return true, false
}

// seen notes a DISTINCT row before the mark that ties with it.
func (rs *resumeState) seen(v document.Value, hold func(int) error) error {
	k := string(CanonicalKey(nil, v))
	if rs.before[k] {
		return nil
	}
	if err := hold(len(k) + 48); err != nil {
		return err
	}
	rs.before[k] = true
	return nil
}

// distinct moves the first of each DISTINCT row of sorted rows that no
// row before the mark repeats to the front, in order, and the rest behind
// them; it returns how many it moved. It moves want rows, and before them
// those that tie with the mark: a row before the mark not yet read may
// repeat one of those, which would then give its place to the next.
func (rs *resumeState) distinct(rows []sortRow, want int) int {
	seen := map[string]bool{}
	var kept, rest []sortRow
	counted := 0
	for _, r := range rows {
		k := string(CanonicalKey(nil, r.val))
		tie := rs.after != nil && rs.ties(r.keys)
		if counted == want && !tie || seen[k] || rs.before[k] {
			rest = append(rest, r)
			continue
		}
		seen[k] = true
		kept = append(kept, r)
		if !tie {
			counted++
		}
	}
	copy(rows, kept)
	copy(rows[len(kept):], rest)
	return len(kept)
}

// ties reports whether keys are the mark's.
func (rs *resumeState) ties(keys []document.Value) bool {
	return slices.EqualFunc(keys, rs.after.Keys, func(a, b document.Value) bool { return document.Compare(a, b) == 0 })
}

// size is what r holds, as run counts it.
func (r sortRow) size() int {
	n := sizeOf(r.val) + len(r.order)
	for _, k := range r.keys {
		n += sizeOf(k)
	}
	return n
}

func (r sortRow) mark() Mark { return Mark{Keys: r.keys, Doc: r.order, Row: r.sub} }
