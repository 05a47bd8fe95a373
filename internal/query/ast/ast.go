// Package ast holds the syntax tree of the Cosmos DB NoSQL query language,
// its printer and the error type every query package reports.
//
// The tree is produced by package parser and consumed by package eval (which
// runs it) and package plan (which describes it to cross-partition clients).
// Trees are immutable once parsed; packages that rewrite a query build new
// nodes instead of changing shared ones.
package ast

import (
	"github.com/mayfly-db/mayfly/internal/document"
)

// Pos is a byte offset into the query text.
type Pos int

// Query is one SELECT statement, the top level one or a subquery.
type Query struct {
	Select  Select
	From    *FromSource // nil when the query has no FROM clause
	Joins   []*FromSource
	Where   Expr // nil when absent
	GroupBy []Expr
	OrderBy []OrderItem
	Offset  Expr // *Literal or *Param; nil when absent
	Limit   Expr // *Literal or *Param; nil when absent
	Pos     Pos
}

// Select is the SELECT clause.
type Select struct {
	Distinct bool
	Top      Expr // *Literal or *Param; nil when absent
	Star     bool // SELECT *
	Value    Expr // SELECT VALUE expr; nil otherwise
	Items    []SelectItem
}

// SelectItem is one projected expression.
type SelectItem struct {
	Expr  Expr
	Alias string // "" when not written
}

// FromSource is the FROM clause or one JOIN.
//
//	FROM c                  Alias "c",  Expr Ident "c"
//	FROM root r             Alias "r",  Expr Ident "root"
//	FROM c.children ch      Alias "ch", Expr Member(Ident c, children)
//	FROM x IN c.arr         Alias "x",  Expr Member(Ident c, arr), Iterate
//	JOIN (SELECT ...) AS t  Alias "t",  Expr *Subquery
//
// In FROM, the first identifier of Expr names the container (whatever the
// name); in a JOIN it names an alias bound earlier.
type FromSource struct {
	Alias   string
	Iterate bool // "alias IN expr": one row per element of an array
	Expr    Expr
	// AliasWritten is false when Alias was inferred from Expr.
	AliasWritten bool
	Pos          Pos
}

// OrderItem is one ORDER BY key.
type OrderItem struct {
	Expr Expr
	Desc bool
	// Explicit records whether ASC or DESC was written.
	Explicit bool
	// Rank is ORDER BY RANK: Expr is a scoring function (FullTextScore,
	// RRF) and the rows come best first.
	Rank bool
}

// Expr is a scalar expression.
type Expr interface {
	// Position returns where the expression starts in the query text.
	Position() Pos
	exprNode()
}

// Literal is a constant: undefined, null, a boolean, a number or a string.
// Array and object constructors are ArrayLit and ObjectLit.
type Literal struct {
	Value document.Value
	// Text is the literal as written, for numbers (printing keeps hex and
	// float spelling); empty otherwise.
	Text string
	Pos  Pos
}

// Param is a parameter reference, @name. Name includes the '@'.
type Param struct {
	Name string
	Pos  Pos
}

// Ident is a reference to a bound alias (or, in a FROM expression, to the
// container).
type Ident struct {
	Name string
	Pos  Pos
}

// Member is a property access: X.Name or X["Name"].
type Member struct {
	X      Expr
	Name   string
	Quoted bool // written X["Name"]
	Pos    Pos
}

// Index is an access with a computed key: X[0], X[@p], X[expr].
type Index struct {
	X     Expr
	Index Expr
	Pos   Pos
}

// UnaryOp is a prefix operator.
type UnaryOp uint8

// The prefix operators.
const (
	OpNeg    UnaryOp = iota // -
	OpPlus                  // +
	OpBitNot                // ~
	OpNot                   // NOT
)

// Unary is a prefix operation.
type Unary struct {
	Op  UnaryOp
	X   Expr
	Pos Pos
}

// BinaryOp is an infix operator.
type BinaryOp uint8

// The infix operators.
const (
	OpAdd BinaryOp = iota
	OpSub
	OpMul
	OpDiv
	OpMod
	OpEq
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
	OpAnd
	OpOr
	OpBitAnd
	OpBitOr
	OpBitXor
	OpShl
	OpShr
	OpShrZero // >>>
	OpConcat  // ||
	OpCoalesce
)

var binaryText = [...]string{
	OpAdd: "+", OpSub: "-", OpMul: "*", OpDiv: "/", OpMod: "%",
	OpEq: "=", OpNe: "!=", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">=",
	OpAnd: "AND", OpOr: "OR", OpBitAnd: "&", OpBitOr: "|", OpBitXor: "^",
	OpShl: "<<", OpShr: ">>", OpShrZero: ">>>", OpConcat: "||", OpCoalesce: "??",
}

func (op BinaryOp) String() string {
	if int(op) < len(binaryText) {
		return binaryText[op]
	}
	return "?"
}

// Binary is an infix operation.
type Binary struct {
	Op   BinaryOp
	L, R Expr
	Pos  Pos
}

// Ternary is Cond ? Then : Else.
type Ternary struct {
	Cond, Then, Else Expr
	Pos              Pos
}

// Between is X [NOT] BETWEEN Lo AND Hi.
type Between struct {
	X, Lo, Hi Expr
	Not       bool
	Pos       Pos
}

// In is X [NOT] IN (List...).
type In struct {
	X    Expr
	List []Expr
	Not  bool
	Pos  Pos
}

// Like is X [NOT] LIKE Pattern [ESCAPE Escape].
type Like struct {
	X, Pattern Expr
	Escape     Expr // nil when absent
	Not        bool
	Pos        Pos
}

// Call is a function call: a built-in (including the aggregates) or, with
// UDF set, udf.Name(...).
type Call struct {
	Name string // as written
	Args []Expr
	UDF  bool
	Pos  Pos
}

// ArrayLit is [e1, e2, ...].
type ArrayLit struct {
	Elems []Expr
	Pos   Pos
}

// ObjectField is one property of an ObjectLit.
type ObjectField struct {
	Name  string
	Value Expr
}

// ObjectLit is {name: e1, "name": e2, ...}.
type ObjectLit struct {
	Fields []ObjectField
	Pos    Pos
}

// Exists is EXISTS(subquery).
type Exists struct {
	Query *Query
	Pos   Pos
}

// ArrayQuery is ARRAY(subquery).
type ArrayQuery struct {
	Query *Query
	Pos   Pos
}

// Subquery is a scalar subquery, (SELECT ...), or a subquery used as a FROM
// or JOIN source.
type Subquery struct {
	Query *Query
	Pos   Pos
}

func (e *Literal) Position() Pos    { return e.Pos }
func (e *Param) Position() Pos      { return e.Pos }
func (e *Ident) Position() Pos      { return e.Pos }
func (e *Member) Position() Pos     { return e.Pos }
func (e *Index) Position() Pos      { return e.Pos }
func (e *Unary) Position() Pos      { return e.Pos }
func (e *Binary) Position() Pos     { return e.Pos }
func (e *Ternary) Position() Pos    { return e.Pos }
func (e *Between) Position() Pos    { return e.Pos }
func (e *In) Position() Pos         { return e.Pos }
func (e *Like) Position() Pos       { return e.Pos }
func (e *Call) Position() Pos       { return e.Pos }
func (e *ArrayLit) Position() Pos   { return e.Pos }
func (e *ObjectLit) Position() Pos  { return e.Pos }
func (e *Exists) Position() Pos     { return e.Pos }
func (e *ArrayQuery) Position() Pos { return e.Pos }
func (e *Subquery) Position() Pos   { return e.Pos }

func (*Literal) exprNode()    {}
func (*Param) exprNode()      {}
func (*Ident) exprNode()      {}
func (*Member) exprNode()     {}
func (*Index) exprNode()      {}
func (*Unary) exprNode()      {}
func (*Binary) exprNode()     {}
func (*Ternary) exprNode()    {}
func (*Between) exprNode()    {}
func (*In) exprNode()         {}
func (*Like) exprNode()       {}
func (*Call) exprNode()       {}
func (*ArrayLit) exprNode()   {}
func (*ObjectLit) exprNode()  {}
func (*Exists) exprNode()     {}
func (*ArrayQuery) exprNode() {}
func (*Subquery) exprNode()   {}

// Walk calls fn for e and, while fn returns true, for its subexpressions in
// written order. It does not descend into subqueries; callers that need to
// see them handle *Exists, *ArrayQuery and *Subquery themselves.
func Walk(e Expr, fn func(Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	switch e := e.(type) {
	case *Member:
		Walk(e.X, fn)
	case *Index:
		Walk(e.X, fn)
		Walk(e.Index, fn)
	case *Unary:
		Walk(e.X, fn)
	case *Binary:
		Walk(e.L, fn)
		Walk(e.R, fn)
	case *Ternary:
		Walk(e.Cond, fn)
		Walk(e.Then, fn)
		Walk(e.Else, fn)
	case *Between:
		Walk(e.X, fn)
		Walk(e.Lo, fn)
		Walk(e.Hi, fn)
	case *In:
		Walk(e.X, fn)
		for _, x := range e.List {
			Walk(x, fn)
		}
	case *Like:
		Walk(e.X, fn)
		Walk(e.Pattern, fn)
		Walk(e.Escape, fn)
	case *Call:
		for _, x := range e.Args {
			Walk(x, fn)
		}
	case *ArrayLit:
		for _, x := range e.Elems {
			Walk(x, fn)
		}
	case *ObjectLit:
		for _, f := range e.Fields {
			Walk(f.Value, fn)
		}
	}
}

// WalkQuery calls Walk(e, fn) for every expression of q's clauses and,
// wherever fn is called with a subquery, for that subquery's too.
func WalkQuery(q *Query, fn func(Expr) bool) {
	visit := func(e Expr) bool {
		if !fn(e) {
			return false
		}
		switch x := e.(type) {
		case *Exists:
			WalkQuery(x.Query, fn)
		case *ArrayQuery:
			WalkQuery(x.Query, fn)
		case *Subquery:
			WalkQuery(x.Query, fn)
		}
		return true
	}
	walk := func(e Expr) { Walk(e, visit) }
	walk(q.Select.Top)
	walk(q.Select.Value)
	for _, it := range q.Select.Items {
		walk(it.Expr)
	}
	if q.From != nil {
		walk(q.From.Expr)
	}
	for _, j := range q.Joins {
		walk(j.Expr)
	}
	walk(q.Where)
	for _, g := range q.GroupBy {
		walk(g)
	}
	for _, o := range q.OrderBy {
		walk(o.Expr)
	}
	walk(q.Offset)
	walk(q.Limit)
}

// MaxDepth is the most levels a query may have, counting each query and
// each expression as one (parentheses add none). The parser refuses deeper
// text; 200 levels reach well past the deepest property an item may have
// (128 levels), and keep every recursive walk of a tree small.
const MaxDepth = 200

// Deeper reports whether q has a path of more than limit levels, counting
// each query and each expression as one level. The parser builds no such
// tree for the limit it enforces; this check lets a package that recurses
// over trees from anywhere (rewritten ones included) refuse one that would
// take its recursion too deep. It recurses itself, but stops descending
// past limit, so its own depth is bounded whatever the tree's; and it
// allocates nothing.
func Deeper(q *Query, limit int) bool {
	return queryDeeper(q, 1, limit)
}

func queryDeeper(q *Query, d, limit int) bool {
	if q == nil {
		return false
	}
	if d > limit {
		return true
	}
	d++
	if exprDeeper(q.Select.Top, d, limit) || exprDeeper(q.Select.Value, d, limit) ||
		exprDeeper(q.Where, d, limit) || exprDeeper(q.Offset, d, limit) || exprDeeper(q.Limit, d, limit) {
		return true
	}
	for _, it := range q.Select.Items {
		if exprDeeper(it.Expr, d, limit) {
			return true
		}
	}
	if q.From != nil && exprDeeper(q.From.Expr, d, limit) {
		return true
	}
	for _, j := range q.Joins {
		if exprDeeper(j.Expr, d, limit) {
			return true
		}
	}
	for _, g := range q.GroupBy {
		if exprDeeper(g, d, limit) {
			return true
		}
	}
	for _, o := range q.OrderBy {
		if exprDeeper(o.Expr, d, limit) {
			return true
		}
	}
	return false
}

// exprDeeper reports whether e, at level d, has a path below it that goes
// past limit.
func exprDeeper(e Expr, d, limit int) bool {
	if e == nil {
		return false
	}
	if d > limit {
		return true
	}
	d++
	anyDeeper := func(xs []Expr) bool {
		for _, x := range xs {
			if exprDeeper(x, d, limit) {
				return true
			}
		}
		return false
	}
	switch e := e.(type) {
	case *Member:
		return exprDeeper(e.X, d, limit)
	case *Index:
		return exprDeeper(e.X, d, limit) || exprDeeper(e.Index, d, limit)
	case *Unary:
		return exprDeeper(e.X, d, limit)
	case *Binary:
		return exprDeeper(e.L, d, limit) || exprDeeper(e.R, d, limit)
	case *Ternary:
		return exprDeeper(e.Cond, d, limit) || exprDeeper(e.Then, d, limit) || exprDeeper(e.Else, d, limit)
	case *Between:
		return exprDeeper(e.X, d, limit) || exprDeeper(e.Lo, d, limit) || exprDeeper(e.Hi, d, limit)
	case *In:
		return exprDeeper(e.X, d, limit) || anyDeeper(e.List)
	case *Like:
		return exprDeeper(e.X, d, limit) || exprDeeper(e.Pattern, d, limit) || exprDeeper(e.Escape, d, limit)
	case *Call:
		return anyDeeper(e.Args)
	case *ArrayLit:
		return anyDeeper(e.Elems)
	case *ObjectLit:
		for _, f := range e.Fields {
			if exprDeeper(f.Value, d, limit) {
				return true
			}
		}
	case *Exists:
		return queryDeeper(e.Query, d, limit)
	case *ArrayQuery:
		return queryDeeper(e.Query, d, limit)
	case *Subquery:
		return queryDeeper(e.Query, d, limit)
	}
	return false
}

// PathRoot returns the identifier a path expression (members and indexes
// of an identifier: c.a[0].b) starts from.
func PathRoot(e Expr) (*Ident, bool) {
	for {
		switch x := e.(type) {
		case *Ident:
			return x, true
		case *Member:
			e = x.X
		case *Index:
			e = x.X
		default:
			return nil, false
		}
	}
}
