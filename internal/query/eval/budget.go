package eval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
)

// Budget is what one request may spend evaluating: expression steps,
// time, and the memory of the rows a query holds (sort buffers, DISTINCT
// sets, groups, a document's JOIN rows). Every Rows and Run call of every
// Program compiled with the same Budget draws on it, so a page's budget
// does not start over with each document.
//
// A Budget belongs to one request and is used by one goroutine at a time.
type Budget struct {
	ctx      context.Context
	now      func() time.Time
	deadline time.Time

	maxWork int
	work    int
	check   int // work at which the context and the clock are next looked at

	maxMem int
	mem    int

	maxSort int
}

// SortRows is the most rows an in-memory ORDER BY drawing on b may hold;
// a nil Budget has the default.
func (b *Budget) SortRows() int {
	if b == nil {
		return MaxSortRows
	}
	return b.maxSort
}

// BudgetParams configure a Budget. Zero values take the defaults.
type BudgetParams struct {
	// Ctx is the request's context: once it is done, evaluation stops
	// with its cause. Nil means never.
	Ctx context.Context
	// MaxWork bounds the steps (DefaultMaxWork when zero).
	MaxWork int
	// MaxMemory bounds the estimated bytes of rows held at once
	// (DefaultMaxMemory when zero).
	MaxMemory int
	// MaxSortRows bounds the rows an ORDER BY sorted in memory holds at
	// once (MaxSortRows when zero).
	MaxSortRows int
	// Now and Deadline bound the evaluation's time on the caller's clock:
	// past Deadline, evaluation stops with ErrTime. A nil Now or a zero
	// Deadline sets no time limit.
	Now      func() time.Time
	Deadline time.Time
}

// DefaultMaxMemory bounds the rows one request holds: 256 MiB as
// estimated by the size of their values.
const DefaultMaxMemory = 256 << 20

// MaxRowsPerDocument bounds the rows one document may produce through its
// JOINs and FROM … IN: a cross product over a few arrays grows past any
// page, and a page resumes inside a document by producing its rows again.
const MaxRowsPerDocument = 100_000

// MaxSortRows is how many rows an ORDER BY sorted in memory (not served
// in order by an index) may hold at once by default: the account's
// advertised queryMaxInMemorySortDocumentCount. Only the rows up to the end
// of the page asked for are held, so the bound is met by any page that ends
// within the first MaxSortRows rows in order, by any query with at most
// that many rows, and by any page smaller than it that starts after a
// Mark (RunAfter); DefaultMaxMemory bounds their size.
const MaxSortRows = 100_000

// checkEvery is how many steps pass between looks at the context and the
// clock: often enough to stop within microseconds, seldom enough to cost
// nothing measurable.
const checkEvery = 1024

// ErrWork, ErrTime and ErrMemory are the ways a Budget runs out. ErrWork
// and ErrMemory are *ast.Error (the query asks for too much); ErrTime is
// not a fault of the query's text and is left to the caller to answer.
var (
	ErrWork   = errWork
	ErrMemory = ast.NewError("SC3003", "The query needs more memory than one request may hold (ORDER BY, DISTINCT, GROUP BY or JOIN state). Add a filter, TOP or OFFSET LIMIT, or serve the ORDER BY from the index.")
	ErrTime   = errors.New("the query's time for this request ran out")
	// ErrSort refuses an in-memory sort of more than MaxSortRows rows.
	ErrSort = ast.NewError("SC3006", "The query's ORDER BY needs more documents sorted in memory than the account's queryMaxInMemorySortDocumentCount: add a filter or a smaller OFFSET, or define an index that serves the ORDER BY.")
	// ErrFanOut refuses a document whose JOINs produce too many rows.
	ErrFanOut = ast.NewError("SC3005", fmt.Sprintf("The JOINs of the query produce more than %d rows for one document.", MaxRowsPerDocument))
)

// NewBudget returns a budget.
func NewBudget(p BudgetParams) *Budget {
	b := &Budget{ctx: p.Ctx, now: p.Now, deadline: p.Deadline, maxWork: p.MaxWork, maxMem: p.MaxMemory, maxSort: p.MaxSortRows}
	if b.maxSort <= 0 {
		b.maxSort = MaxSortRows
	}
	if b.maxWork <= 0 {
		b.maxWork = DefaultMaxWork
	}
	if b.maxMem <= 0 {
		b.maxMem = DefaultMaxMemory
	}
	if b.now == nil || b.deadline.IsZero() {
		b.now = nil
	}
	b.check = checkEvery
	return b
}

// Spend counts n steps of work. It fails once the work is used up, the
// deadline has passed or the context is done, checking the last two every
// checkEvery steps.
//
// A nil Budget spends nothing and never fails.
func (b *Budget) Spend(n int) error {
	if b == nil {
		return nil
	}
	if n < 0 {
		return errWork
	}
	b.work += n
	if b.work > b.maxWork {
		return errWork
	}
	if b.work < b.check {
		return nil
	}
	b.check = b.work + checkEvery
	return b.Check()
}

// Check reports whether the context is done or the deadline has passed.
func (b *Budget) Check() error {
	if b.ctx != nil {
		if err := b.ctx.Err(); err != nil {
			return context.Cause(b.ctx)
		}
	}
	if b.now != nil && !b.now().Before(b.deadline) {
		return ErrTime
	}
	return nil
}

// Work returns the steps spent so far.
func (b *Budget) Work() int { return b.work }

// Hold counts n more bytes held, failing once they pass the budget's
// memory; Release gives them back. A nil Budget holds nothing.
func (b *Budget) Hold(n int) error {
	if b == nil {
		return nil
	}
	b.mem += n
	if b.mem > b.maxMem {
		return ErrMemory
	}
	return nil
}

func (b *Budget) Release(n int) {
	if b != nil {
		b.mem -= n
	}
}

// Exhausted reports whether err is the budget's own refusal to go on for
// lack of time or work, after which a caller that can resume (a page with
// a continuation) may end early instead of failing.
func Exhausted(err error) bool {
	return errors.Is(err, ErrTime) || errors.Is(err, errWork)
}

// sizeOf estimates the bytes v occupies: a fixed cost per value plus its
// strings. Values shared between rows are counted once per row, which
// overstates JOIN rows that repeat their document; the bound is meant to
// stop runaway state, not to measure the heap.
func sizeOf(v document.Value) int {
	const word = 48 // a Value and its slot in a slice
	switch v.Kind() {
	case document.String:
		return word + len(v.Str())
	case document.Array:
		n := word
		for _, e := range v.Array() {
			n += sizeOf(e)
		}
		return n
	case document.Object:
		n := word
		for _, f := range v.Fields() {
			n += len(f.Name) + 16 + sizeOf(f.Value)
		}
		return n
	}
	return word
}
