// Package eval runs parsed Cosmos DB NoSQL queries over documents.
//
// Compile checks a parsed query against its parameters (unknown functions,
// unresolved identifiers, missing parameters, misplaced aggregates are all
// refused here, as *ast.Error) and returns a Program. A Program is immutable
// and safe for concurrent use; every evaluation keeps its state on its own
// stack.
//
// The engine drives a Program in one of two ways:
//
//   - Streaming programs (filter and projection only) are fed one document
//     at a time through Rows; the engine pages by document position.
//   - Every program can be fed a whole document source through Run, which
//     applies ORDER BY, GROUP BY, aggregates, DISTINCT, TOP and
//     OFFSET/LIMIT.
//
// Evaluation is bounded: a Budget (Options.Budget, or one per call sized
// by Options.MaxWork) caps the expression steps, the time and the memory
// of held rows of a request, and stops evaluation when the request's
// context is done, so a query cannot spin forever however it is written.
package eval

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/vector"
)

// UDFFunc evaluates a user-defined function call, udf.name(args...). An
// error it returns fails the query.
type UDFFunc func(name string, args []document.Value) (document.Value, error)

// Options configure a Program.
type Options struct {
	// Now is the request time that GetCurrentDateTime, GetCurrentTimestamp
	// and GetCurrentTicks report; the caller takes it from its clock. The
	// zero time means the Unix epoch.
	Now time.Time
	// UDF evaluates user-defined functions; nil makes every UDF call fail
	// with "unknown UDF".
	UDF UDFFunc
	// Rand returns RAND() values in [0, 1); nil uses a fixed-seed source
	// derived from Now, so a query is repeatable within one request.
	Rand func() float64
	// MaxWork bounds the evaluation steps of one Rows or Run call (0 means
	// DefaultMaxWork) when there is no Budget. Past it the call fails with
	// an *ast.Error.
	MaxWork int
	// MaxSortRows, when positive, bounds the rows an ORDER BY of the
	// top-level query holds at once (see the constant MaxSortRows).
	MaxSortRows int
	// Budget, when set, is the request's budget: every Rows and Run call
	// draws on it instead of starting a budget of its own, and it carries
	// the request's context and deadline.
	Budget *Budget
	// Vectors is the container's vector embedding policy, which gives
	// VectorDistance its distance function by path. It is read when the
	// program runs, so the caller may fill it in after Compile; nil means
	// no embeddings (cosine everywhere).
	Vectors *vector.Policy
	// Planar points at whether the container's geospatialConfig is
	// "Geometry": its spatial functions then work in the plane of the
	// coordinates, in their units, rather than on the Earth. It is read
	// when the program runs, as Vectors is; nil means geography.
	Planar *bool
	// AsWritten compiles the query exactly as written, without folding
	// the parts of its filters that read no document (fold.go): a
	// reference to check the folded queries against.
	AsWritten bool

	// orderByExpressions lets ORDER BY items be expressions
	// (DeriveRewritten).
	orderByExpressions bool
}

// DefaultMaxWork is the step budget used when Options.MaxWork is zero. At
// roughly 20 ns a step it stands for several seconds of work, the order of
// the service's 5-second limit per page.
const DefaultMaxWork = 200_000_000

// DocMeta is what the engine knows about a document beyond its JSON.
type DocMeta struct {
	// DocumentID is the numeric identity DocumentId() reports, taken from
	// the document's _rid.
	DocumentID int64
	// Order is the document's place in the order its source reads
	// documents in, compared as bytes. A resumed ORDER BY (RunAfter)
	// breaks ties by it, so that its rows keep one order from page to
	// page whatever documents come and go between them. It is copied
	// when kept.
	Order []byte
}

// Program is a compiled query.
type Program struct {
	q       *ast.Query
	params  map[string]document.Value
	opts    Options
	top     *compiled
	queries map[*ast.Query]*compiled
	funcs   map[*ast.Call]*builtin
	// vectors holds what Compile learned of each call of VectorDistance.
	vectors map[*ast.Call]*vectorCall
	// distances, when set (UseDistances), holds the scores of the calls
	// of vectors that known names.
	distances *Distances
	known     map[*ast.Call]bool
	// corpus, when set (UseCorpus), is the statistics of a ranked query's
	// scope, which its runs take rather than gather.
	corpus *corpus
	rnd    func() float64

	regexps    sync.Map // pattern → *regexp.Regexp
	regexCount atomic.Int32
}

// compiled is what Compile learned about one query or subquery.
type compiled struct {
	q         *ast.Query
	aggs      []*ast.Call
	aggIndex  map[*ast.Call]int
	grouped   bool // GROUP BY or aggregates: one row per group
	names     []string
	top       int // -1 when absent
	offset    int // -1 when absent
	limit     int // -1 when absent
	container string
	rank      *rankSpec // ORDER BY RANK; nil otherwise
	// builds: the SELECT list calls a function or runs a subquery, so a
	// row may be larger than any document (checkRow).
	builds bool
}

// maxRewriteLevels is how many levels the packages that rewrite parsed
// queries may add to them.
const maxRewriteLevels = 16

// Compile prepares q for evaluation with the given parameters (keys with or
// without the leading '@').
func Compile(q *ast.Query, params map[string]document.Value, opts Options) (*Program, error) {
	p := &Program{
		q:       q,
		params:  map[string]document.Value{},
		opts:    opts,
		queries: map[*ast.Query]*compiled{},
		funcs:   map[*ast.Call]*builtin{},
		vectors: map[*ast.Call]*vectorCall{},
	}
	for k, v := range params {
		if !strings.HasPrefix(k, "@") {
			k = "@" + k
		}
		p.params[k] = v
	}
	if p.opts.MaxWork <= 0 {
		p.opts.MaxWork = DefaultMaxWork
	}
	p.rnd = opts.Rand
	if p.rnd == nil {
		p.rnd = newRand(opts.Now.UnixNano())
	}
	// The compiler and the evaluator recurse once per level of the tree.
	// Parsed trees are bounded already; trees built from them (rewritten
	// by the planner) add a few levels, which the margin allows.
	if ast.Deeper(q, ast.MaxDepth+maxRewriteLevels) {
		return nil, ast.NewError("SC1001", fmt.Sprintf(
			"The query is nested too deeply: an expression may have at most %d levels of operators, accessors and subqueries.", ast.MaxDepth))
	}
	c := &compiler{prog: p}
	top, err := c.query(q, nil, true)
	if err != nil {
		return nil, err
	}
	p.top = top
	if fq, ok := p.folded(q); ok && !opts.AsWritten {
		// Checked as written, run as folded: the folded query compiles
		// as the one it came from did, and folds no further.
		return Compile(fq, params, opts)
	}
	return p, nil
}

// Streaming reports whether the program's rows can be produced one document
// at a time with no state across documents: it has a FROM clause and no
// ORDER BY, GROUP BY, aggregate, DISTINCT, TOP or OFFSET/LIMIT.
func (p *Program) Streaming() bool {
	q := p.q
	return q.From != nil && !p.top.grouped && len(q.OrderBy) == 0 && !q.Select.Distinct &&
		q.Select.Top == nil && q.Offset == nil
}

// ReadsAll reports whether a run reads every document it is given before
// its first row is known: a grouped query (GROUP BY or aggregates), or
// one with ORDER BY.
func (p *Program) ReadsAll() bool {
	return p.q.From != nil && (p.top.grouped || len(p.q.OrderBy) > 0)
}

// Budget returns the budget the program was compiled with (Options.Budget),
// nil when it has none.
func (p *Program) Budget() *Budget { return p.opts.Budget }

// Derive compiles q, a rewrite of p's query, with p's parameters and
// options: its clock, budget, user-defined functions and embeddings.
func (p *Program) Derive(q *ast.Query) (*Program, error) { return Compile(q, p.params, p.opts) }

// DeriveRewritten is Derive for a rewrite that may put expressions where
// the text had ORDER BY paths: the engine's computed properties. The
// text was checked when p was compiled; the rewrite sorts by what the
// paths stood for.
func (p *Program) DeriveRewritten(q *ast.Query) (*Program, error) {
	opts := p.opts
	opts.orderByExpressions = true
	return Compile(q, p.params, opts)
}

// Query returns the query the program was compiled from.
func (p *Program) Query() *ast.Query { return p.q }

var errNotStreaming = ast.NewError("SC3001", "The query needs a full evaluation (Run), not a per-document one.")

// Rows returns the rows one document produces. It is only valid for
// streaming programs (see Streaming).
func (p *Program) Rows(doc document.Value, meta DocMeta) ([]document.Value, error) {
	if !p.Streaming() {
		return nil, errNotStreaming
	}
	return p.newCtx(meta).rows(doc, nil)
}

// rows appends the rows of a streaming program for doc to rows.
func (c *ctx) rows(doc document.Value, rows []document.Value) ([]document.Value, error) {
	top := c.prog.top
	n := len(rows)
	err := c.scopes(top, nil, doc, func(s scope) error {
		v, err := c.project(top, s)
		if err != nil {
			return err
		}
		if v.IsDefined() {
			if len(rows)-n == MaxRowsPerDocument {
				return ErrFanOut
			}
			rows = append(rows, v)
		}
		return nil
	})
	return rows, err
}

// A Streamer is Program.Rows for the documents of one page, one after
// another, with one evaluation state and one slice of rows for them all
// rather than an allocation of each per document. The rows it returns
// are valid until its next call; it is not safe for concurrent use.
type Streamer struct {
	ctx *ctx
	buf []document.Value
}

// Streamer returns a Streamer of a streaming program (see Streaming).
func (p *Program) Streamer() (*Streamer, error) {
	if !p.Streaming() {
		return nil, errNotStreaming
	}
	return &Streamer{ctx: p.newCtx(DocMeta{})}, nil
}

// Rows returns the rows doc produces, as Program.Rows does.
func (st *Streamer) Rows(doc document.Value, meta DocMeta) ([]document.Value, error) {
	// MaxWork bounds each document's rows, as it bounds each Rows call.
	st.ctx.meta, st.ctx.budget = meta, st.ctx.prog.callBudget()
	rows, err := st.ctx.rows(doc, st.buf[:0])
	st.buf = rows
	return rows, err
}

// Source yields documents to Run: the next document and its metadata, or
// ok=false at the end.
type Source func() (doc document.Value, meta DocMeta, ok bool, err error)

// Run evaluates the whole query over the documents next yields, in the
// order it yields them (which is the order of results without ORDER BY).
// A query without a FROM clause reads no documents.
func (p *Program) Run(next Source) ([]document.Value, error) {
	return p.RunEach(func(yield func(document.Value, DocMeta) error) error {
		for {
			doc, meta, ok, err := next()
			if err != nil || !ok {
				return err
			}
			if err := yield(doc, meta); err != nil {
				return err
			}
		}
	}, 0, nil)
}

// Each feeds documents to a Program: it calls yield with every document
// in order and stops at yield's first error, which it returns.
type Each func(yield func(doc document.Value, meta DocMeta) error) error

// RunEach is Run over the documents each pushes, for a caller that needs
// at most the first n rows of the result (a page and whether more
// follow): an ORDER BY then keeps only the rows that can be among them
// instead of every row it reads, and no document is held unless a row
// holds it. n <= 0 means every row. passed, when not nil, counts the
// rows made so far while the documents are read (before an ORDER BY or
// DISTINCT drops any): what a caller pacing its reads by how often
// documents pass can watch.
func (p *Program) RunEach(each Each, n int, passed *int) ([]document.Value, error) {
	return p.runEach(p.newCtx(DocMeta{}), each, n, passed)
}

func (p *Program) runEach(ctx *ctx, each Each, n int, passed *int) ([]document.Value, error) {
	if ctx.resume == nil {
		// A resumable program has no OFFSET, and a DISTINCT of its
		// trims as it goes.
		n = p.eachRows(n)
	}
	ctx.passed = passed
	fixed := p.top.rank != nil && p.corpus != nil
	switch {
	case fixed:
		ctx.corpus = p.corpus
	case p.top.rank != nil:
		ctx.corpus = &corpus{}
	}
	return ctx.run(p.top, func(emit func(scope) error) error {
		if p.q.From == nil {
			return ctx.scopes(p.top, nil, document.Undef, emit)
		}
		return each(func(doc document.Value, meta DocMeta) error {
			ctx.meta = meta
			ctx.doc++
			ctx.docRow = 0
			if ctx.corpus != nil && !fixed {
				if err := ctx.corpus.count(ctx, p.top.rank, doc); err != nil {
					return err
				}
			}
			return ctx.scopes(p.top, nil, doc, emit)
		})
	}, n)
}

// WholeRows reports whether RunEach makes every row of the result
// whatever n asks for: a row's place is known only once every document is
// read (a GROUP BY's, or under ORDER BY a DISTINCT row's).
func (p *Program) WholeRows() bool { return p.eachRows(1) == 0 }

// eachRows is the rows RunEach(each, n, …) asks its run for: n and the
// OFFSET before them; 0 (every row) when a row's place is known only at
// the end, a group's or, under ORDER BY, a DISTINCT row's.
func (p *Program) eachRows(n int) int {
	if p.top.grouped || (p.q.Select.Distinct && len(p.q.OrderBy) > 0) {
		return 0
	}
	if n > 0 && p.top.offset > 0 {
		n += p.top.offset
	}
	return n
}

// Stop is how many rows RunEach(each, n, passed) makes, as passed counts
// them, before it reads no further document; -1 when it reads every
// document (ReadsAll). A document makes at most one row unless the query
// has a JOIN, so a caller that has passed rows needs at least Stop -
// passed more documents.
func (p *Program) Stop(n int) int {
	if p.ReadsAll() {
		return -1
	}
	return p.top.stop(p.eachRows(n))
}

// Wants is how many rows RunEach(each, n, …) returns when its documents
// make that many or more, whether or not it reads every document: n, or
// fewer under a TOP or LIMIT (-1: every row).
func (p *Program) Wants(n int) int {
	return p.top.stop(p.eachRows(n))
}

// stop is the rows a run of cq asked for want rows (<= 0: every row)
// needs before the rest cannot matter; -1 when it needs every row.
func (cq *compiled) stop(want int) int {
	if want <= 0 {
		want = -1
	}
	q := cq.q
	// DISTINCT without ORDER BY drops repeats as rows come (the first
	// occurrence wins either way), so it holds only distinct rows and
	// stops like a plain query once it has enough of them.
	if cq.grouped || (q.Select.Distinct && len(q.OrderBy) > 0) {
		return want
	}
	n := -1
	if cq.top >= 0 {
		n = cq.top
	}
	if cq.limit >= 0 {
		if m := cq.offset + cq.limit; n < 0 || m < n {
			n = m
		}
	}
	if n >= 0 && (want < 0 || n < want) {
		want = n
	}
	return want
}

// RunDocs is Run over a slice of documents.
func (p *Program) RunDocs(docs []document.Value) ([]document.Value, error) {
	i := 0
	return p.Run(func() (document.Value, DocMeta, bool, error) {
		if i >= len(docs) {
			return document.Undef, DocMeta{}, false, nil
		}
		i++
		return docs[i-1], DocMeta{}, true, nil
	})
}

// scope is the set of aliases bound for one row, innermost last.
type scope []binding

type binding struct {
	name string
	val  document.Value
}

func (s scope) lookup(name string) (document.Value, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i].name == name {
			return s[i].val, true
		}
	}
	return document.Undef, false
}

func (s scope) with(name string, v document.Value) scope {
	out := make(scope, len(s), len(s)+1)
	copy(out, s)
	return append(out, binding{name, v})
}

// ctx is the state of one evaluation.
type ctx struct {
	prog    *Program
	meta    DocMeta
	aggVals []document.Value // aggregate results while projecting a group
	aggOf   *compiled
	budget  *Budget
	// corpus gathers the statistics of a ranked query's documents.
	corpus *corpus
	// doc counts the documents read so far: the rows of a document
	// carry its number, which orders ties (sortRows).
	doc int
	// passed, when not nil, counts the top-level rows made (RunEach).
	passed *int
	// resume, when not nil, is the state of a run that places its rows
	// (RunAfter); docRow counts the top-level rows of the document read
	// last.
	resume *resumeState
	docRow int
}

func (p *Program) newCtx(meta DocMeta) *ctx {
	return &ctx{prog: p, meta: meta, budget: p.callBudget()}
}

// callBudget is the budget of one call: the program's, or without one a
// new budget of MaxWork.
func (p *Program) callBudget() *Budget {
	if b := p.opts.Budget; b != nil {
		return b
	}
	return NewBudget(BudgetParams{MaxWork: p.opts.MaxWork})
}

var errWork = ast.NewError("SC3002", "The query exceeded the maximum amount of work allowed for one request.")

func (c *ctx) step() error { return c.budget.Spend(1) }

// charge counts n steps of work done outside eval, such as a function
// scanning a large argument.
func (c *ctx) charge(n int) error { return c.budget.Spend(n) }

// errStop ends a production early once enough rows are known.
var errStop = fmt.Errorf("stop")

// scopes produces the bound rows of cq that pass its WHERE clause. For the
// top-level query root is the document; for a subquery outer holds the
// enclosing bindings and root is unused.
func (c *ctx) scopes(cq *compiled, outer scope, root document.Value, emit func(scope) error) error {
	q := cq.q
	if q.From == nil {
		return c.filter(cq, outer, emit)
	}
	if outer == nil && len(q.Joins) == 0 && !q.From.Iterate && isIdent(q.From.Expr, cq.container) {
		// FROM c over each document, the common case: one row bound to
		// the document, as the general walk below binds it, without its
		// allocations per document.
		if err := c.step(); err != nil { // the source's evaluation
			return err
		}
		if !root.IsDefined() {
			return nil
		}
		if err := c.step(); err != nil { // the row
			return err
		}
		return c.filter(cq, scope{{q.From.Alias, root}}, emit)
	}
	var sources []*ast.FromSource
	sources = append(sources, q.From)
	sources = append(sources, q.Joins...)
	var walk func(i int, s scope) error
	walk = func(i int, s scope) error {
		if i == len(sources) {
			return c.filter(cq, s, emit)
		}
		src := sources[i]
		var vals []document.Value
		var err error
		if i == 0 && outer == nil && cq.container != "" {
			vals, err = c.sourceValues(src, scope{{cq.container, root}})
		} else {
			vals, err = c.sourceValues(src, s)
		}
		if err != nil {
			return err
		}
		for _, v := range vals {
			if err := c.step(); err != nil {
				return err
			}
			if err := walk(i+1, s.with(src.Alias, v)); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(0, outer)
}

// isIdent reports whether e is the identifier name (never the empty
// name).
func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && name != "" && id.Name == name
}

// sourceValues returns the values a FROM or JOIN source binds its alias to.
func (c *ctx) sourceValues(src *ast.FromSource, s scope) ([]document.Value, error) {
	var vals []document.Value
	if sq, ok := src.Expr.(*ast.Subquery); ok {
		rows, err := c.subquery(sq.Query, s, 0)
		if err != nil {
			return nil, err
		}
		vals = rows
	} else {
		v, err := c.eval(src.Expr, s)
		if err != nil {
			return nil, err
		}
		if v.IsDefined() {
			vals = []document.Value{v}
		}
	}
	if !src.Iterate {
		return vals, nil
	}
	var out []document.Value
	for _, v := range vals {
		out = append(out, v.Array()...)
	}
	return out, nil
}

func (c *ctx) filter(cq *compiled, s scope, emit func(scope) error) error {
	if cq.q.Where != nil {
		v, err := c.eval(cq.q.Where, s)
		if err != nil {
			return err
		}
		if v.Kind() != document.Bool || !v.Bool() {
			return nil
		}
	}
	return emit(s)
}

// subquery evaluates a subquery in scope s; limit > 0 stops after that many
// rows (EXISTS needs one).
func (c *ctx) subquery(q *ast.Query, s scope, limit int) ([]document.Value, error) {
	cq := c.prog.queries[q]
	saveVals, saveOf := c.aggVals, c.aggOf
	c.aggVals, c.aggOf = nil, nil
	defer func() { c.aggVals, c.aggOf = saveVals, saveOf }()
	rows, err := c.run(cq, func(emit func(scope) error) error {
		return c.scopes(cq, s, document.Undef, emit)
	}, limit)
	return rows, err
}

type sortRow struct {
	val  document.Value
	doc  int // the number of the document it comes from (ctx.doc)
	keys []document.Value
	rank *rankFeatures // under ORDER BY RANK, what the score is made of
	// Under RunAfter: the document's DocMeta.Order and the row's number
	// among the document's rows, which break ties in its place (Mark).
	order []byte
	sub   int
}

// run applies the row-set clauses of cq to the scopes produce yields.
// stopAt, when given and positive, is how many rows before OFFSET the
// caller needs at most (EXISTS needs one; a page needs its end).
func (c *ctx) run(cq *compiled, produce func(emit func(scope) error) error, stopAt ...int) ([]document.Value, error) {
	q := cq.q
	asked := 0
	if len(stopAt) > 0 {
		asked = stopAt[0]
	}
	want := cq.stop(asked) // rows needed before the rest cannot matter
	// Under RunAfter the top-level rows are placed (resumeState).
	placed := c.resume != nil && cq == c.prog.top
	early := q.Select.Distinct && len(q.OrderBy) == 0
	// The memory of the rows held is counted against the budget while
	// the query runs; what is returned is at most what was held.
	held := 0
	defer func() { c.budget.Release(held) }()
	hold := func(n int) error {
		held += n
		return c.budget.Hold(n)
	}
	var rows []sortRow
	if cq.grouped {
		var err error
		rows, err = c.groups(cq, produce, hold)
		if err != nil {
			return nil, err
		}
	} else {
		if want == 0 {
			return []document.Value{}, nil
		}
		seenEarly := map[string]bool{}
		ordered := len(q.OrderBy) > 0
		// A rank is known only once every document is read.
		// Under RunAfter a DISTINCT's repeats tie (keyedByRow), so
		// trimming drops them too.
		capped := want > 0 && ordered && (!q.Select.Distinct || placed) && cq.rank == nil
		// An ORDER BY with a known end keeps the rows that can be among
		// the first want: it sorts and trims whenever the buffer reaches
		// compact rows, so it holds O(want) rows, not the scope's.
		limit := 0
		if cq == c.prog.top {
			limit = c.prog.opts.MaxSortRows
		}
		compact := 2*want + 64
		if limit > 0 && want < limit {
			compact = min(compact, limit)
		}
		vectorKey := make([]bool, len(q.OrderBy))
		for i, o := range q.OrderBy {
			_, vectorKey[i] = vector.IsCall(o.Expr)
		}
		produced := 0
		// trim keeps the first n rows, sorted, releasing the rest.
		trim := func(n int) {
			for _, dropped := range rows[n:] {
				size := dropped.size()
				held -= size
				c.budget.Release(size)
			}
			clear(rows[n:])
			rows = rows[:n]
		}
		err := produce(func(s scope) error {
			v, err := c.project(cq, s)
			if err != nil {
				return err
			}
			if !v.IsDefined() {
				return nil
			}
			// A subquery runs for one document (or one row of it): its
			// rows are that document's, bounded as its JOINs' are.
			if produced++; cq != c.prog.top && produced > MaxRowsPerDocument {
				return ErrFanOut
			}
			if early {
				k := string(CanonicalKey(nil, v))
				if seenEarly[k] {
					return nil
				}
				if err := hold(len(k) + 48); err != nil {
					return err
				}
				seenEarly[k] = true
			}
			r := sortRow{val: v, doc: c.doc}
			size := sizeOf(v)
			for i, o := range q.OrderBy {
				if o.Rank {
					f, err := c.features(cq.rank, s)
					if err != nil {
						return err
					}
					r.rank = f
					r.keys = append(r.keys, document.Undef)
					size += 16 * len(cq.rank.comps)
					continue
				}
				k, err := c.eval(o.Expr, s)
				if err != nil {
					return err
				}
				if !k.IsDefined() && vectorKey[i] {
					// No score (no vector at the path, or one of another
					// dimension or type): the service's vector index does
					// not hold the item, so it is no neighbour of any
					// query vector, whichever way the function orders.
					return nil
				}
				r.keys = append(r.keys, k)
				size += sizeOf(k)
			}
			if placed {
				if after, tie := c.resume.place(c, &r); !after {
					if tie && q.Select.Distinct {
						return c.resume.seen(v, hold)
					}
					return nil
				}
				size += len(r.order)
			}
			if err := hold(size); err != nil {
				if !placed || !capped || c.resume.extra == 0 || !errors.Is(err, ErrMemory) {
					return err
				}
				// The rows asked for past the page's own are given up
				// rather than the page.
				want -= c.resume.extra
				c.resume.extra = 0
				c.sortRows(q, rows)
				n := min(want, len(rows))
				if q.Select.Distinct {
					// The first want distinct rows, which a count of
					// rows could cut short where they repeat.
					n = c.resume.distinct(rows, want)
				}
				trim(n)
				compact = min(compact, 2*want+64)
				if err := hold(0); err != nil {
					return err
				}
			}
			rows = append(rows, r)
			if c.passed != nil && cq == c.prog.top {
				*c.passed++
			}
			switch {
			case want > 0 && !ordered && len(rows) >= want:
				return errStop
			case ordered && limit > 0 && len(rows) > limit && (!capped || want >= limit):
				return ErrSort
			case capped && len(rows) >= compact:
				c.sortRows(q, rows)
				n := want
				if placed && q.Select.Distinct {
					n = c.resume.distinct(rows, want)
				}
				trim(n)
				// Rows that tie with a DISTINCT's mark are kept past
				// want (resumeState.distinct): the buffer grows
				// before the next trim, so trims stay rare.
				compact = max(compact, 2*n)
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return nil, err
		}
	}
	if cq.rank != nil && c.corpus != nil {
		desc := make([]bool, len(cq.rank.comps))
		for i, comp := range cq.rank.comps {
			desc[i] = comp.vec == nil || c.vectorDescending(comp.vec)
		}
		cq.rank.score(c.corpus, rows, desc)
	}
	c.sortRows(q, rows)
	if !cq.grouped && want > 0 && len(q.OrderBy) > 0 && !q.Select.Distinct && len(rows) > want {
		rows = rows[:want]
	}
	out := make([]document.Value, 0, len(rows))
	var seen map[string]bool
	if q.Select.Distinct && !early {
		seen = map[string]bool{}
		if placed {
			seen = c.resume.before
		}
	}
	for _, r := range rows {
		if !r.val.IsDefined() {
			continue
		}
		if seen != nil {
			k := string(CanonicalKey(nil, r.val))
			if seen[k] {
				continue
			}
			if err := hold(len(k) + 48); err != nil {
				return nil, err
			}
			seen[k] = true
		}
		out = append(out, r.val)
		if placed {
			c.resume.marks = append(c.resume.marks, r.mark())
		}
	}
	if placed && want > 0 && len(out) > want {
		out, c.resume.marks = out[:want], c.resume.marks[:want]
	}
	if cq.offset >= 0 {
		if cq.offset >= len(out) {
			out = out[:0]
		} else {
			out = out[cq.offset:]
		}
		if cq.limit < len(out) {
			out = out[:cq.limit]
		}
	}
	if cq.top >= 0 && cq.top < len(out) {
		out = out[:cq.top]
	}
	return out, nil
}

// sortRows sorts rows stably by the ORDER BY keys of q. Rows whose keys
// are all equal keep the order of their documents as read, ascending, or
// descending when a key is descending: the service walks its index
// backwards then, and the SDKs, resuming a cross-partition ORDER BY inside
// such a tie, skip what they returned by _rid in that direction. The rows
// of one document keep their order either way.
func (c *ctx) sortRows(q *ast.Query, rows []sortRow) {
	if len(q.OrderBy) == 0 {
		return
	}
	slices.SortStableFunc(rows, c.rowOrder(q))
}

// rowOrder compares two rows of q by its ORDER BY keys, then as sortRows
// breaks ties: under RunAfter by their documents' Order and their number
// among its rows, which make the order total.
func (c *ctx) rowOrder(q *ast.Query) func(a, b sortRow) int {
	reverseTies := descendingTies(q)
	desc := make([]bool, len(q.OrderBy))
	for k, o := range q.OrderBy {
		desc[k] = o.Desc || o.Rank || c.vectorDescending(o.Expr)
	}
	placed := c.resume != nil
	return func(a, b sortRow) int {
		for k := range q.OrderBy {
			d := document.Compare(a.keys[k], b.keys[k])
			if desc[k] {
				d = -d
			}
			if d != 0 {
				return d
			}
		}
		if !placed {
			// The sort is stable and rows come in document order.
			if reverseTies {
				return cmp.Compare(b.doc, a.doc)
			}
			return 0
		}
		d := bytes.Compare(a.order, b.order)
		if reverseTies {
			d = -d
		}
		if d != 0 {
			return d
		}
		return cmp.Compare(a.sub, b.sub)
	}
}

// descendingTies reports whether rows of q whose ORDER BY keys are all
// equal come in descending document order (see sortRows): when a key is
// descending. Under ORDER BY RANK ties keep the order the documents were
// read in.
func descendingTies(q *ast.Query) bool {
	for _, o := range q.OrderBy {
		if o.Desc && !o.Rank {
			return true
		}
	}
	return false
}

// project computes the output value of one row.
func (c *ctx) project(cq *compiled, s scope) (document.Value, error) {
	v, err := c.projectRow(cq, s)
	if err == nil && cq.builds && cq == c.prog.top {
		err = checkRow(v)
	}
	return v, err
}

// MaxRowBytes bounds a row of a query's results as written: the 4 MB the
// service bounds a response to. Only rows the query builds can pass it;
// a document is at most 2 MB.
const MaxRowBytes = 4 << 20

// ErrRowTooLarge refuses a row past MaxRowBytes, which no page could
// carry.
var ErrRowTooLarge = ast.NewError("SC3007", fmt.Sprintf("A row of the query's results is larger than the %d bytes a response may carry.", MaxRowBytes))

// checkRow refuses a row past MaxRowBytes. Its estimated size is a bound
// from above, so only a row estimated past it is written out to measure.
func checkRow(v document.Value) error {
	if sizeOf(v) > MaxRowBytes && len(v.JSON()) > MaxRowBytes {
		return ErrRowTooLarge
	}
	return nil
}

func (c *ctx) projectRow(cq *compiled, s scope) (document.Value, error) {
	sel := &cq.q.Select
	switch {
	case sel.Star:
		if len(s) == 0 {
			return document.Undef, nil
		}
		return s[len(s)-1].val, nil
	case sel.Value != nil:
		return c.eval(sel.Value, s)
	}
	fields := make([]document.Field, 0, len(sel.Items))
	for i, it := range sel.Items {
		v, err := c.eval(it.Expr, s)
		if err != nil {
			return document.Undef, err
		}
		if v.IsDefined() {
			fields = append(fields, document.Field{Name: cq.names[i], Value: v})
		}
	}
	return document.Obj(fields), nil
}
