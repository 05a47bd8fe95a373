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
// Evaluation is bounded: Options.MaxWork caps the expression steps one Run
// or Rows call may take, so a query cannot spin forever however it is
// written.
package eval

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
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
	// DefaultMaxWork). Past it the call fails with an *ast.Error.
	MaxWork int
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
}

// Program is a compiled query.
type Program struct {
	q       *ast.Query
	params  map[string]document.Value
	opts    Options
	top     *compiled
	queries map[*ast.Query]*compiled
	funcs   map[*ast.Call]*builtin
	rnd     func() float64

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

// Query returns the query the program was compiled from.
func (p *Program) Query() *ast.Query { return p.q }

// Rows returns the rows one document produces. It is only valid for
// streaming programs (see Streaming).
func (p *Program) Rows(doc document.Value, meta DocMeta) ([]document.Value, error) {
	if !p.Streaming() {
		return nil, ast.NewError("SC3001", "The query needs a full evaluation (Run), not a per-document one.")
	}
	ctx := p.newCtx(meta)
	var rows []document.Value
	err := ctx.scopes(p.top, nil, doc, func(s scope) error {
		v, err := ctx.project(p.top, s)
		if err != nil {
			return err
		}
		if v.IsDefined() {
			rows = append(rows, v)
		}
		return nil
	})
	return rows, err
}

// Source yields documents to Run: the next document and its metadata, or
// ok=false at the end.
type Source func() (doc document.Value, meta DocMeta, ok bool, err error)

// Run evaluates the whole query over the documents next yields, in the
// order it yields them (which is the order of results without ORDER BY).
// A query without a FROM clause reads no documents.
func (p *Program) Run(next Source) ([]document.Value, error) {
	ctx := p.newCtx(DocMeta{})
	produce := func(emit func(scope) error) error {
		if p.q.From == nil {
			return ctx.scopes(p.top, nil, document.Undef, emit)
		}
		for {
			doc, meta, ok, err := next()
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
			ctx.meta = meta
			if err := ctx.scopes(p.top, nil, doc, emit); err != nil {
				return err
			}
		}
	}
	return ctx.run(p.top, produce)
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
	steps   int
}

func (p *Program) newCtx(meta DocMeta) *ctx { return &ctx{prog: p, meta: meta} }

var errWork = ast.NewError("SC3002", "The query exceeded the maximum amount of work allowed for one request.")

func (c *ctx) step() error {
	c.steps++
	if c.steps > c.prog.opts.MaxWork {
		return errWork
	}
	return nil
}

// charge counts n steps of work done outside eval, such as a function
// scanning a large argument.
func (c *ctx) charge(n int) error {
	c.steps += n
	if c.steps > c.prog.opts.MaxWork || n < 0 {
		return errWork
	}
	return nil
}

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
	keys []document.Value
}

// run applies the row-set clauses of cq to the scopes produce yields.
func (c *ctx) run(cq *compiled, produce func(emit func(scope) error) error, stopAt ...int) ([]document.Value, error) {
	q := cq.q
	want := -1 // rows needed before the rest cannot matter
	if len(stopAt) > 0 && stopAt[0] > 0 {
		want = stopAt[0]
	}
	if !cq.grouped && len(q.OrderBy) == 0 && !q.Select.Distinct {
		n := -1
		if cq.top >= 0 {
			n = cq.top
		}
		if cq.limit >= 0 {
			m := cq.offset + cq.limit
			if n < 0 || m < n {
				n = m
			}
		}
		if n >= 0 && (want < 0 || n < want) {
			want = n
		}
	}
	var rows []sortRow
	if cq.grouped {
		var err error
		rows, err = c.groups(cq, produce)
		if err != nil {
			return nil, err
		}
	} else {
		if want == 0 {
			return []document.Value{}, nil
		}
		err := produce(func(s scope) error {
			v, err := c.project(cq, s)
			if err != nil {
				return err
			}
			if !v.IsDefined() {
				return nil
			}
			r := sortRow{val: v}
			for _, o := range q.OrderBy {
				k, err := c.eval(o.Expr, s)
				if err != nil {
					return err
				}
				r.keys = append(r.keys, k)
			}
			rows = append(rows, r)
			if want > 0 && len(rows) >= want {
				return errStop
			}
			return nil
		})
		if err != nil && err != errStop {
			return nil, err
		}
	}
	if len(q.OrderBy) > 0 {
		sort.SliceStable(rows, func(i, j int) bool {
			for k, o := range q.OrderBy {
				d := document.Compare(rows[i].keys[k], rows[j].keys[k])
				if o.Desc {
					d = -d
				}
				if d != 0 {
					return d < 0
				}
			}
			return false
		})
	}
	out := make([]document.Value, 0, len(rows))
	var seen map[string]bool
	if q.Select.Distinct {
		seen = map[string]bool{}
	}
	for _, r := range rows {
		if !r.val.IsDefined() {
			continue
		}
		if seen != nil {
			k := string(canonicalKey(nil, r.val))
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		out = append(out, r.val)
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

// project computes the output value of one row.
func (c *ctx) project(cq *compiled, s scope) (document.Value, error) {
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
