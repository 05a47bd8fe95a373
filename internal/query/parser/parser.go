// Package parser turns Cosmos DB NoSQL query text into an ast.Query.
//
// A hand-written lexer feeds a recursive-descent parser with one token of
// lookahead (two where FROM must tell "x IN c.arr" from "c.arr x"). It never
// panics and bounds both its own recursion and the depth of the tree it
// builds, so any input, however hostile, ends in a tree or an *ast.Error,
// and every package that walks the tree recursively (the evaluator, the
// planner, the printer) can do so without exhausting the stack.
//
// Operator precedence, loosest first:
//
//	?:   ??   OR   AND   NOT   [NOT] IN / LIKE / BETWEEN
//	||   |   ^   &   = != <>   < <= > >=   << >> >>>   + -   * / %
//	unary - + ~   postfix .name [expr]
package parser

import (
	"fmt"
	"math"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
)

// Error is the error type Parse returns.
type Error = ast.Error

// Limits the service documents.
const (
	MaxQueryBytes = 512 * 1024
	MaxJoins      = 10
	// MaxDepth bounds nesting of expressions and subqueries, and the depth
	// of the tree: operators and accessors chained without parentheses
	// (1+1+…, c.a.a.…, c[0][0]…) build a tree as deep as the chain is
	// long, and the packages downstream recurse once per level. Long
	// chains of the associative AND, OR and ?? are built balanced instead
	// (see chain), so they stay shallow at any length.
	MaxDepth = ast.MaxDepth
	// maxRecursion bounds the parser's own recursion, which MaxDepth
	// does not: parentheses add a level of recursion and none to the
	// tree. A tree prints (ast.Query.String) to text that needs about two
	// levels of recursion per level of the tree (a parenthesis and the
	// operator inside it), so with this margin the print of a tree within
	// MaxDepth parses again (FuzzParse); the bound still keeps the
	// recursion small.
	maxRecursion = 3 * MaxDepth
	// balanceOver is the length past which a chain of an associative
	// operator is built balanced. Shorter chains keep the left-nested
	// shape (and so the printed form) they always had.
	balanceOver = 32
)

// keywords may not be used as identifiers or aliases. Property names after a
// dot and object-literal names may still be keywords.
var keywords = map[string]bool{
	"AND": true, "ARRAY": true, "AS": true, "ASC": true, "BETWEEN": true, "BY": true,
	"CASE": true, "CAST": true, "CONVERT": true, "CROSS": true, "DESC": true,
	"DISTINCT": true, "ELSE": true, "END": true, "ESCAPE": true, "EXISTS": true,
	"FALSE": true, "FOR": true, "FROM": true, "GROUP": true, "HAVING": true, "IN": true,
	"INNER": true, "INSERT": true, "INTO": true, "IS": true, "JOIN": true, "LEFT": true,
	"LIKE": true, "LIMIT": true, "NOT": true, "NULL": true, "OFFSET": true, "ON": true,
	"OR": true, "ORDER": true, "OUTER": true, "OVER": true, "RIGHT": true, "SELECT": true,
	"SET": true, "THEN": true, "TOP": true, "TRUE": true, "UDF": true, "UNDEFINED": true,
	"UPDATE": true, "VALUE": true, "WHEN": true, "WHERE": true, "WITH": true,
}

// Parse parses one query.
func Parse(text string) (*ast.Query, error) {
	if len(text) > MaxQueryBytes {
		return nil, tooLong()
	}
	p := &parser{lex: lexer{src: text}}
	p.advance()
	p.advance()
	q := p.query()
	p.finish()
	if p.err != nil {
		return nil, p.err
	}
	return q, nil
}

// ParseExpr parses a lone scalar expression (used by tests and tools).
func ParseExpr(text string) (ast.Expr, error) {
	if len(text) > MaxQueryBytes {
		return nil, tooLong()
	}
	p := &parser{lex: lexer{src: text}}
	p.advance()
	p.advance()
	e := p.expr()
	p.finish()
	if p.err != nil {
		return nil, p.err
	}
	return e, nil
}

// tooLong is the service's answer to query text over its size limit.
func tooLong() *ast.Error {
	return ast.NewError("SC3020", fmt.Sprintf(
		"The SQL query text exceeded the maximum limit of %d characters.", MaxQueryBytes))
}

type parser struct {
	lex   lexer
	tok   token // current
	peek  token // next
	err   *ast.Error
	depth int // recursion depth, bounded by enter (maxRecursion)
	// h is the height of the tree the last parse function returned (a
	// leaf is 1; a query counts one level above its deepest expression).
	// Every function that returns an expression or a query sets it, so a
	// node's height is known as it is built, without walking the tree.
	h int
}

// finish fails a parse that stopped before the end of the text: at a token
// the grammar had no place for, or at a character the lexer could not read.
// The lexer answers such a character with end-of-file, so without this a
// complete query followed by one ("c.n = 1 $ AND …") would parse as its
// prefix and drop the rest.
func (p *parser) finish() {
	if p.err != nil {
		return
	}
	if p.tok.kind != tEOF {
		p.fail()
		return
	}
	if p.lex.err != nil {
		p.err = p.lex.err
	}
}

func (p *parser) advance() {
	p.tok = p.peek
	if p.err != nil {
		p.peek = token{kind: tEOF, pos: len(p.lex.src), end: len(p.lex.src)}
		return
	}
	p.peek = p.lex.next()
}

func syntaxError(pos, end int, near string) *ast.Error {
	return &ast.Error{Code: "SC1001", Pos: ast.Pos(pos), End: ast.Pos(end),
		Message: fmt.Sprintf("Syntax error, incorrect syntax near '%s'.", near)}
}

// fail records a syntax error at the current token (the first error wins).
func (p *parser) fail() {
	if p.err != nil {
		return
	}
	if p.tok.kind == tEOF {
		if p.lex.err != nil {
			p.err = p.lex.err
			return
		}
		p.err = &ast.Error{Code: "SC1002", Pos: ast.Pos(p.tok.pos), End: ast.Pos(p.tok.pos),
			Message: "Syntax error, unexpected end-of-file."}
		return
	}
	p.err = syntaxError(p.tok.pos, p.tok.end, p.tok.text)
}

func (p *parser) failf(pos, end int, code, format string, args ...any) {
	if p.err == nil {
		p.err = &ast.Error{Code: code, Pos: ast.Pos(pos), End: ast.Pos(end), Message: fmt.Sprintf(format, args...)}
	}
}

func (p *parser) isKeyword(kw string) bool {
	return p.tok.kind == tWord && strings.EqualFold(p.tok.text, kw)
}

func (p *parser) peekKeyword(kw string) bool {
	return p.peek.kind == tWord && strings.EqualFold(p.peek.text, kw)
}

// rankAhead reports whether an ORDER BY item starts with RANK followed by
// its scoring function; RANK alone is an ordinary identifier.
func (p *parser) rankAhead() bool {
	return p.isKeyword("RANK") && p.peek.kind == tWord
}

func (p *parser) acceptKeyword(kw string) bool {
	if p.err == nil && p.isKeyword(kw) {
		p.advance()
		return true
	}
	return false
}

func (p *parser) expectKeyword(kw string) {
	if !p.acceptKeyword(kw) {
		p.fail()
	}
}

func (p *parser) isPunct(s string) bool { return p.tok.kind == tPunct && p.tok.text == s }

func (p *parser) acceptPunct(s string) bool {
	if p.err == nil && p.isPunct(s) {
		p.advance()
		return true
	}
	return false
}

func (p *parser) expectPunct(s string) {
	if !p.acceptPunct(s) {
		p.fail()
	}
}

// name consumes an identifier that is not a keyword.
func (p *parser) name() string {
	if p.err != nil {
		return ""
	}
	if p.tok.kind != tWord || keywords[strings.ToUpper(p.tok.text)] {
		p.fail()
		return ""
	}
	s := p.tok.text
	p.advance()
	return s
}

func (p *parser) enter() bool {
	p.depth++
	if p.depth > maxRecursion {
		p.tooDeep()
		return false
	}
	return p.err == nil
}

// tooDeep records the error for a query past MaxDepth. The service's own
// code for this limit is not documented; the refusal is a 400 either way.
func (p *parser) tooDeep() {
	p.failf(p.tok.pos, p.tok.end, "SC1001",
		"The query is nested too deeply: an expression may have at most %d levels of operators, accessors and subqueries.", MaxDepth)
}

// height records h as the height of the node just built, and fails once it
// passes MaxDepth: the parse stops there, before a longer chain costs more.
func (p *parser) height(h int) {
	p.h = h
	if h > MaxDepth {
		p.tooDeep()
	}
}

func (p *parser) leave() { p.depth-- }

func (p *parser) query() *ast.Query {
	q := &ast.Query{Pos: ast.Pos(p.tok.pos)}
	if !p.enter() {
		return q
	}
	defer p.leave()
	// m is the height of the deepest expression of the query so far.
	m := 0
	sub := func() {
		if p.h > m {
			m = p.h
		}
	}
	p.expectKeyword("SELECT")
	p.selectClause(&q.Select)
	sub()
	if p.acceptKeyword("FROM") {
		q.From = p.source()
		sub()
		for p.err == nil && p.isKeyword("JOIN") {
			pos := p.tok.pos
			p.advance()
			q.Joins = append(q.Joins, p.source())
			sub()
			if len(q.Joins) > MaxJoins {
				p.failf(pos, pos+4, "SC2201", "The number of JOINs in the query exceeded the maximum of %d.", MaxJoins)
			}
		}
	}
	if p.acceptKeyword("WHERE") {
		q.Where = p.expr()
		sub()
	}
	if p.isKeyword("GROUP") {
		p.advance()
		p.expectKeyword("BY")
		for p.err == nil {
			q.GroupBy = append(q.GroupBy, p.expr())
			sub()
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	if p.isKeyword("ORDER") {
		p.advance()
		p.expectKeyword("BY")
		for p.err == nil {
			var item ast.OrderItem
			if p.rankAhead() {
				p.advance()
				item.Rank = true
			}
			item.Expr = p.expr()
			sub()
			rank := item.Rank
			if rank && isVectorDistance(item.Expr) {
				// VectorDistance is a scoring function ORDER BY RANK
				// takes, and ranks as ORDER BY VectorDistance orders:
				// the most similar first.
				item.Rank = false
			}
			switch {
			case rank:
				// The rows come best first; no direction is written.
			case p.acceptKeyword("DESC"):
				item.Desc, item.Explicit = true, true
			case p.acceptKeyword("ASC"):
				item.Explicit = true
			}
			q.OrderBy = append(q.OrderBy, item)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	if p.acceptKeyword("OFFSET") {
		q.Offset = p.countArg()
		p.expectKeyword("LIMIT")
		q.Limit = p.countArg()
	}
	p.height(m + 1)
	return q
}

// countArg parses the operand of TOP, OFFSET and LIMIT: a non-negative
// integer or a parameter.
func (p *parser) countArg() ast.Expr {
	p.h = 1
	if p.err != nil {
		return nil
	}
	switch p.tok.kind {
	case tNumber:
		v := p.tok.val
		if !v.IsInt() || v.Int() < 0 {
			p.fail()
			return nil
		}
		e := &ast.Literal{Value: v, Text: p.tok.text, Pos: ast.Pos(p.tok.pos)}
		p.advance()
		return e
	case tParam:
		e := &ast.Param{Name: p.tok.text, Pos: ast.Pos(p.tok.pos)}
		p.advance()
		return e
	}
	p.fail()
	return nil
}

// selectClause parses the select list; p.h is left at the height of its
// deepest expression.
func (p *parser) selectClause(s *ast.Select) {
	m := 1
	for p.err == nil {
		switch {
		case !s.Distinct && s.Top == nil && p.isKeyword("DISTINCT"):
			p.advance()
			s.Distinct = true
			continue
		case s.Top == nil && p.isKeyword("TOP"):
			p.advance()
			s.Top = p.countArg()
			continue
		}
		break
	}
	switch {
	case p.acceptPunct("*"):
		s.Star = true
	case p.acceptKeyword("VALUE"):
		s.Value = p.expr()
		m = max(m, p.h)
	default:
		for p.err == nil {
			item := ast.SelectItem{Expr: p.expr()}
			m = max(m, p.h)
			if p.acceptKeyword("AS") {
				item.Alias = p.name()
			} else if p.tok.kind == tWord && !keywords[strings.ToUpper(p.tok.text)] {
				item.Alias = p.name()
			}
			s.Items = append(s.Items, item)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	p.h = m
}

// source parses a FROM or JOIN source; p.h is left at the height of its
// expression.
func (p *parser) source() *ast.FromSource {
	src := &ast.FromSource{Pos: ast.Pos(p.tok.pos)}
	p.h = 1
	if p.err != nil {
		return src
	}
	if p.tok.kind == tWord && p.peekKeyword("IN") {
		src.Alias = p.name()
		src.AliasWritten = true
		src.Iterate = true
		p.advance() // IN
		src.Expr = p.collection()
		return src
	}
	src.Expr = p.collection()
	h := p.h
	if p.acceptKeyword("AS") {
		src.Alias = p.name()
		src.AliasWritten = true
	} else if p.tok.kind == tWord && !keywords[strings.ToUpper(p.tok.text)] {
		src.Alias = p.name()
		src.AliasWritten = true
	} else {
		switch e := src.Expr.(type) {
		case *ast.Ident:
			src.Alias = e.Name
		case *ast.Member:
			src.Alias = e.Name
		default:
			if p.err == nil {
				p.failf(int(src.Pos), p.tok.pos, "SC1001", "An alias is required for this FROM source.")
			}
		}
	}
	p.h = h
	return src
}

// collection parses a collection expression: a name followed by property
// and index accessors, or a parenthesised subquery.
func (p *parser) collection() ast.Expr {
	p.h = 1
	if p.err != nil {
		return nil
	}
	pos := ast.Pos(p.tok.pos)
	if p.isPunct("(") && p.peekKeyword("SELECT") {
		p.advance()
		q := p.query()
		p.expectPunct(")")
		p.height(p.h + 1)
		return &ast.Subquery{Query: q, Pos: pos}
	}
	var e ast.Expr = &ast.Ident{Name: p.name(), Pos: pos}
	h := 1
	for p.err == nil {
		switch {
		case p.isPunct("."):
			p.advance()
			e = p.member(e)
		case p.isPunct("["):
			p.advance()
			switch p.tok.kind {
			case tString:
				e = &ast.Member{X: e, Name: p.tok.val.Str(), Quoted: true, Pos: pos}
				p.advance()
			case tNumber, tParam:
				e = &ast.Index{X: e, Index: p.primary(), Pos: pos}
			default:
				p.fail()
			}
			p.expectPunct("]")
		default:
			p.h = h
			return e
		}
		// Each accessor adds one level; an index is a leaf.
		h++
		p.height(h)
	}
	return e
}

// member parses the name after a dot. Keywords are accepted: c.value is a
// property named "value". The caller accounts for the level it adds.
func (p *parser) member(x ast.Expr) ast.Expr {
	if p.tok.kind != tWord {
		p.fail()
		return x
	}
	e := &ast.Member{X: x, Name: p.tok.text, Pos: x.Position()}
	p.advance()
	return e
}

func (p *parser) expr() ast.Expr {
	if !p.enter() {
		return nil
	}
	defer p.leave()
	pos := ast.Pos(p.tok.pos)
	cond := p.coalesce()
	if p.acceptPunct("?") {
		h := p.h
		then := p.expr()
		h = max(h, p.h)
		p.expectPunct(":")
		els := p.expr()
		p.height(max(h, p.h) + 1)
		return &ast.Ternary{Cond: cond, Then: then, Else: els, Pos: pos}
	}
	return cond
}

// chain parses operands separated by the associative operator op (??, OR
// or AND). Up to balanceOver operands nest to the left, as written; a
// longer chain is built balanced, which is the same value (each of these
// operators is associative, and evaluation still goes left to right with
// the same short circuits) at a depth that grows with the logarithm of its
// length rather than with the length.
func (p *parser) chain(op ast.BinaryOp) ast.Expr {
	pos := ast.Pos(p.tok.pos)
	first := p.chainOperand(op)
	if p.err != nil || !p.chainSep(op) {
		return first
	}
	h := p.h
	ops := []operand{{first, p.h}}
	for {
		e := p.chainOperand(op)
		ops = append(ops, operand{e, p.h})
		if p.err != nil {
			return nil
		}
		if len(ops) <= balanceOver {
			// The left-nested height, checked as it grows so that a
			// chain over deep operands stops where it passes the limit.
			h = max(h, p.h) + 1
			p.height(h)
			if p.err != nil {
				return nil
			}
		}
		if !p.chainSep(op) {
			break
		}
	}
	var e ast.Expr
	if len(ops) <= balanceOver {
		e = ops[0].e
		for _, o := range ops[1:] {
			e = &ast.Binary{Op: op, L: e, R: o.e, Pos: pos}
		}
	} else {
		e, h = balance(op, ops)
		e.(*ast.Binary).Pos = pos
	}
	p.height(h)
	return e
}

// chainOperand parses one operand of a chain of op: the next tighter level.
func (p *parser) chainOperand(op ast.BinaryOp) ast.Expr {
	switch op {
	case ast.OpCoalesce:
		return p.or()
	case ast.OpOr:
		return p.and()
	}
	return p.not()
}

// chainSep consumes the operator of a chain of op, if it comes next.
func (p *parser) chainSep(op ast.BinaryOp) bool {
	switch op {
	case ast.OpCoalesce:
		return p.acceptPunct("??")
	case ast.OpOr:
		return p.acceptKeyword("OR")
	}
	return p.acceptKeyword("AND")
}

// operand is one operand of a chain, with its height.
type operand struct {
	e ast.Expr
	h int
}

// balance builds ops (one or more) into a balanced tree, the left half one
// larger when the count is odd. Its recursion is as deep as the tree.
func balance(op ast.BinaryOp, ops []operand) (ast.Expr, int) {
	if len(ops) == 1 {
		return ops[0].e, ops[0].h
	}
	mid := (len(ops) + 1) / 2
	l, lh := balance(op, ops[:mid])
	r, rh := balance(op, ops[mid:])
	return &ast.Binary{Op: op, L: l, R: r, Pos: l.Position()}, max(lh, rh) + 1
}

func (p *parser) coalesce() ast.Expr { return p.chain(ast.OpCoalesce) }

func (p *parser) or() ast.Expr { return p.chain(ast.OpOr) }

func (p *parser) and() ast.Expr { return p.chain(ast.OpAnd) }

func (p *parser) not() ast.Expr {
	pos := ast.Pos(p.tok.pos)
	if p.acceptKeyword("NOT") {
		if !p.enter() {
			return nil
		}
		defer p.leave()
		x := p.not()
		p.height(p.h + 1)
		return &ast.Unary{Op: ast.OpNot, X: x, Pos: pos}
	}
	return p.predicate()
}

func (p *parser) predicate() ast.Expr {
	pos := ast.Pos(p.tok.pos)
	e := p.binary(0)
	h := p.h
	for p.err == nil {
		not := false
		if p.isKeyword("NOT") && (p.peekKeyword("IN") || p.peekKeyword("LIKE") || p.peekKeyword("BETWEEN")) {
			p.advance()
			not = true
		}
		switch {
		case p.acceptKeyword("IN"):
			p.expectPunct("(")
			in := &ast.In{X: e, Not: not, Pos: pos}
			for p.err == nil {
				in.List = append(in.List, p.expr())
				h = max(h, p.h)
				if !p.acceptPunct(",") {
					break
				}
			}
			p.expectPunct(")")
			e = in
		case p.acceptKeyword("LIKE"):
			like := &ast.Like{X: e, Pattern: p.binary(0), Not: not, Pos: pos}
			h = max(h, p.h)
			if p.acceptKeyword("ESCAPE") {
				like.Escape = p.binary(0)
				h = max(h, p.h)
			}
			e = like
		case p.acceptKeyword("BETWEEN"):
			b := &ast.Between{X: e, Not: not, Pos: pos}
			b.Lo = p.binary(0)
			h = max(h, p.h)
			p.expectKeyword("AND")
			b.Hi = p.binary(0)
			h = max(h, p.h)
			e = b
		default:
			p.h = h
			return e
		}
		// c.a IN (1) IN (2) … is a chain too.
		h++
		p.height(h)
	}
	return e
}

type binOp struct {
	op   ast.BinaryOp
	prec int
}

var binOps = map[string]binOp{
	"||": {ast.OpConcat, 1},
	"|":  {ast.OpBitOr, 2},
	"^":  {ast.OpBitXor, 3},
	"&":  {ast.OpBitAnd, 4},
	"=":  {ast.OpEq, 5}, "!=": {ast.OpNe, 5}, "<>": {ast.OpNe, 5},
	"<": {ast.OpLt, 6}, "<=": {ast.OpLe, 6}, ">": {ast.OpGt, 6}, ">=": {ast.OpGe, 6},
	"<<": {ast.OpShl, 7}, ">>": {ast.OpShr, 7}, ">>>": {ast.OpShrZero, 7},
	"+": {ast.OpAdd, 8}, "-": {ast.OpSub, 8},
	"*": {ast.OpMul, 9}, "/": {ast.OpDiv, 9}, "%": {ast.OpMod, 9},
}

// binary parses left-associative infix operators binding tighter than
// minPrec, by precedence climbing. Its recursion is bounded by the number
// of precedence levels; a chain at one level is a loop, and its length is
// bounded by the height it builds.
func (p *parser) binary(minPrec int) ast.Expr {
	pos := ast.Pos(p.tok.pos)
	e := p.unary()
	h := p.h
	for p.err == nil && p.tok.kind == tPunct {
		op, ok := binOps[p.tok.text]
		if !ok || op.prec <= minPrec {
			break
		}
		p.advance()
		r := p.binary(op.prec)
		e = &ast.Binary{Op: op.op, L: e, R: r, Pos: pos}
		h = max(h, p.h) + 1
		p.height(h)
	}
	p.h = h
	return e
}

func (p *parser) unary() ast.Expr {
	pos := ast.Pos(p.tok.pos)
	var op ast.UnaryOp
	switch {
	case p.isPunct("-"):
		op = ast.OpNeg
	case p.isPunct("+"):
		op = ast.OpPlus
	case p.isPunct("~"):
		op = ast.OpBitNot
	default:
		return p.postfix()
	}
	if !p.enter() {
		return nil
	}
	defer p.leave()
	p.advance()
	x := p.unary()
	p.height(p.h + 1)
	return &ast.Unary{Op: op, X: x, Pos: pos}
}

func (p *parser) postfix() ast.Expr {
	e := p.primary()
	h := p.h
	for p.err == nil {
		switch {
		case p.isPunct("."):
			p.advance()
			e = p.member(e)
		case p.isPunct("["):
			p.advance()
			if p.tok.kind == tString && p.peek.kind == tPunct && p.peek.text == "]" {
				e = &ast.Member{X: e, Name: p.tok.val.Str(), Quoted: true, Pos: e.Position()}
				p.advance()
			} else {
				e = &ast.Index{X: e, Index: p.expr(), Pos: e.Position()}
				h = max(h, p.h)
			}
			p.expectPunct("]")
		default:
			p.h = h
			return e
		}
		h++
		p.height(h)
	}
	return e
}

func (p *parser) primary() ast.Expr {
	p.h = 1
	if p.err != nil {
		return nil
	}
	t := p.tok
	pos := ast.Pos(t.pos)
	switch t.kind {
	case tNumber:
		p.advance()
		return &ast.Literal{Value: t.val, Text: t.text, Pos: pos}
	case tString:
		p.advance()
		return &ast.Literal{Value: t.val, Pos: pos}
	case tParam:
		p.advance()
		return &ast.Param{Name: t.text, Pos: pos}
	case tPunct:
		switch t.text {
		case "(":
			p.advance()
			if p.isKeyword("SELECT") {
				q := p.query()
				p.expectPunct(")")
				p.height(p.h + 1)
				return &ast.Subquery{Query: q, Pos: pos}
			}
			// Parentheses group; they add no node.
			e := p.expr()
			p.expectPunct(")")
			return e
		case "[":
			p.advance()
			a := &ast.ArrayLit{Pos: pos}
			if p.acceptPunct("]") {
				return a
			}
			m := 0
			for p.err == nil {
				a.Elems = append(a.Elems, p.expr())
				m = max(m, p.h)
				if !p.acceptPunct(",") {
					break
				}
			}
			p.expectPunct("]")
			p.height(m + 1)
			return a
		case "{":
			p.advance()
			o := &ast.ObjectLit{Pos: pos}
			if p.acceptPunct("}") {
				return o
			}
			m := 0
			for p.err == nil {
				var name string
				switch p.tok.kind {
				case tWord:
					name = p.tok.text
				case tString:
					name = p.tok.val.Str()
				default:
					p.fail()
					return o
				}
				p.advance()
				p.expectPunct(":")
				o.Fields = append(o.Fields, ast.ObjectField{Name: name, Value: p.expr()})
				m = max(m, p.h)
				if !p.acceptPunct(",") {
					break
				}
			}
			p.expectPunct("}")
			p.height(m + 1)
			return o
		}
	case tWord:
		if (t.text == "NaN" || t.text == "Infinity") && (p.peek.kind != tPunct || p.peek.text != "(") {
			// The service's numbers that JSON cannot write (its ToString
			// and StringToNumber references use them).
			p.advance()
			f := math.Inf(1)
			if t.text == "NaN" {
				f = math.NaN()
			}
			return &ast.Literal{Value: document.Float(f), Text: t.text, Pos: pos}
		}
		upper := strings.ToUpper(t.text)
		switch upper {
		case "TRUE":
			p.advance()
			return &ast.Literal{Value: document.BoolValue(true), Pos: pos}
		case "FALSE":
			p.advance()
			return &ast.Literal{Value: document.BoolValue(false), Pos: pos}
		case "NULL":
			p.advance()
			return &ast.Literal{Value: document.NullValue(), Pos: pos}
		case "UNDEFINED":
			p.advance()
			return &ast.Literal{Value: document.Undef, Pos: pos}
		case "EXISTS", "ARRAY":
			if p.peek.kind != tPunct || p.peek.text != "(" {
				break
			}
			p.advance()
			p.advance()
			q := p.query()
			p.expectPunct(")")
			p.height(p.h + 1)
			if upper == "EXISTS" {
				return &ast.Exists{Query: q, Pos: pos}
			}
			return &ast.ArrayQuery{Query: q, Pos: pos}
		case "UDF":
			p.advance()
			p.expectPunct(".")
			if p.tok.kind != tWord {
				p.fail()
				return nil
			}
			name := p.tok.text
			p.advance()
			c := &ast.Call{Name: name, UDF: true, Pos: pos}
			c.Args = p.args()
			return c
		}
		if p.peek.kind == tPunct && p.peek.text == "(" && (!keywords[upper] || upper == "LEFT" || upper == "RIGHT") {
			p.advance()
			c := &ast.Call{Name: t.text, Pos: pos}
			c.Args = p.args()
			return c
		}
		if !keywords[upper] {
			p.advance()
			return &ast.Ident{Name: t.text, Pos: pos}
		}
	}
	p.fail()
	return nil
}

// args parses a parenthesised argument list; the current token is '('.
// p.h is left at the height of the call.
func (p *parser) args() []ast.Expr {
	p.expectPunct("(")
	var args []ast.Expr
	m := 0
	if !p.acceptPunct(")") {
		for p.err == nil {
			args = append(args, p.expr())
			m = max(m, p.h)
			if !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct(")")
	}
	p.height(m + 1)
	return args
}

// isVectorDistance reports whether e is a call of the VectorDistance
// system function.
func isVectorDistance(e ast.Expr) bool {
	c, ok := e.(*ast.Call)
	return ok && !c.UDF && strings.EqualFold(c.Name, "VectorDistance")
}
