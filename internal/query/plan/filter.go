// Package plan decides how the engine reads what a query asks: it extracts
// from a parsed query what an access path can use before evaluation
// (whether the WHERE clause pins the partition key, and simple
// "path op constant" predicates), and chooses among access paths by cost.
// It knows no storage engine. Nothing here evaluates documents; package
// eval does that, and always re-filters what an access path returns.
package plan

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
)

// conjuncts returns the terms of the top-level AND chain of e, each as
// Truth has it.
func conjuncts(e ast.Expr) []ast.Expr {
	e = Truth(e)
	if b, ok := e.(*ast.Binary); ok && b.Op == ast.OpAnd {
		return append(conjuncts(b.L), conjuncts(b.R)...)
	}
	if e == nil {
		return nil
	}
	return []ast.Expr{e}
}

// Truth returns a filter that holds for a document exactly when e does, in
// a place where only e's being true counts (a WHERE clause, a term of its
// AND chain): e without its comparisons with a boolean literal, where it
// is not a property path (whose comparison is a predicate of its own).
// IS_DEFINED(c.x) = true holds exactly when IS_DEFINED(c.x) does, and
// IS_DEFINED(c.x) = false or != true exactly when NOT IS_DEFINED(c.x)
// does: a value of another type compares with a boolean as undefined, as
// its NOT is undefined.
func Truth(e ast.Expr) ast.Expr {
	for {
		b, ok := e.(*ast.Binary)
		if !ok || b.Op != ast.OpEq && b.Op != ast.OpNe {
			return e
		}
		x, lit := b.L, b.R
		if _, isLit := x.(*ast.Literal); isLit {
			x, lit = b.R, b.L
		}
		if !isTrue(lit) && !isFalse(lit) || !computed(x) {
			return e
		}
		if isTrue(lit) == (b.Op == ast.OpEq) {
			e = x
		} else {
			e = &ast.Unary{Op: ast.OpNot, X: x}
		}
	}
}

// computed reports whether e is neither a property path, whose
// comparison with a boolean is a predicate of its own, nor a literal or a
// parameter.
func computed(e ast.Expr) bool {
	switch e.(type) {
	case *ast.Member, *ast.Index, *ast.Ident, *ast.Literal, *ast.Param:
		return false
	}
	return true
}

// DocPath returns the property path e reads from the document bound to
// the FROM alias of q, when e is such a path (c.a.b, c["a"]["b"]).
func DocPath(q *ast.Query, e ast.Expr) ([]string, bool) {
	if q.From == nil || q.From.Iterate {
		return nil, false
	}
	if id, ok := q.From.Expr.(*ast.Ident); !ok || id == nil {
		return nil, false // FROM c.children ch binds a sub-document
	}
	root, names, ok := pathOf(e)
	if !ok || root != q.From.Alias || len(names) == 0 {
		return nil, false
	}
	return names, true
}

// ElemPath is DocPath, or for a path read from a JOIN alias that
// iterates an array of the document (JOIN t IN c.tags), the path of the
// array's elements under the index's segment "[]": t is tags/[], t.name
// is tags/[]/name, and a JOIN over a JOIN nests (JOIN u IN t.parts).
func ElemPath(q *ast.Query, e ast.Expr) ([]string, bool) {
	return elemPathIn(q, e, q.Joins)
}

// elemPathIn is elemPath with the aliases joins bind: a JOIN's own array
// is read with the JOINs before it only.
func elemPathIn(q *ast.Query, e ast.Expr, joins []*ast.FromSource) ([]string, bool) {
	if p, ok := DocPath(q, e); ok {
		return p, true
	}
	root, names, ok := pathOf(e)
	if !ok || q.From == nil || root == q.From.Alias {
		return nil, false
	}
	for i := len(joins) - 1; i >= 0; i-- {
		j := joins[i]
		if j.Alias != root {
			continue
		}
		// The last JOIN of the name binds it.
		p, ok := elemPathIn(q, j.Expr, joins[:i])
		if !ok || !j.Iterate {
			return nil, false
		}
		return append(append(slices.Clone(p), "[]"), names...), true
	}
	return nil, false
}

// pathOf splits a property path into the name it starts from and the
// property names after it: c.a["b"] is c and [a b].
func pathOf(e ast.Expr) (root string, names []string, ok bool) {
	for {
		switch x := e.(type) {
		case *ast.Member:
			names = append(names, x.Name)
			e = x.X
		case *ast.Index:
			lit, ok := x.Index.(*ast.Literal)
			if !ok || lit.Value.Kind() != document.String {
				return "", nil, false
			}
			names = append(names, lit.Value.Str())
			e = x.X
		case *ast.Ident:
			slices.Reverse(names)
			return x.Name, names, true
		default:
			return "", nil, false
		}
	}
}

// constant returns the value of a literal or parameter.
func constant(e ast.Expr, params map[string]document.Value) (document.Value, bool) {
	switch x := e.(type) {
	case *ast.Literal:
		// NaN and Infinity are left to the evaluator: no index entry
		// holds them.
		return x.Value, x.Value.IsDefined() && x.Text != "NaN" && x.Text != "Infinity"
	case *ast.Param:
		v := Param(params, x.Name)
		return v, v.IsDefined()
	case *ast.Unary:
		if x.Op == ast.OpNeg {
			if lit, ok := x.X.(*ast.Literal); ok && lit.Value.Kind() == document.Number && lit.Text != "Infinity" && lit.Text != "NaN" {
				if lit.Value.IsInt() {
					return document.Int(-lit.Value.Int()), true
				}
				return document.Float(-lit.Value.Float()), true
			}
		}
	}
	return document.Undef, false
}

func samePath(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// PartitionKeyFilter reports whether the WHERE clause of q fixes the
// partition key: for each key path in turn (one path, or the paths of a
// hierarchical key), some top-level AND term must be "path = constant",
// "constant = path", "path IN (one constant)" or IS_NULL(path). values holds
// the values found for the leading paths (a prefix of a hierarchical key may
// be pinned alone); ok is true when every path is.
func PartitionKeyFilter(q *ast.Query, params map[string]document.Value, paths [][]string) (values []document.Value, ok bool) {
	values, _, ok = PartitionKeyTerms(q, params, paths)
	return values, ok
}

// PartitionKeyTerms is PartitionKeyFilter that also returns the top-level
// AND terms that pin each value found, one a path, in the paths' order.
func PartitionKeyTerms(q *ast.Query, params map[string]document.Value, paths [][]string) (values []document.Value, terms []ast.Expr, ok bool) {
	all := conjuncts(q.Where)
	for _, want := range paths {
		v, t := pinned(q, all, params, want)
		if t == nil {
			return values, terms, false
		}
		values, terms = append(values, v), append(terms, t)
	}
	return values, terms, len(paths) > 0
}

// KeyChoices finds a top-level AND term of q's WHERE clause that lists
// the values path may take: "path IN (constants)",
// "ARRAY_CONTAINS(constant array, path)", or an OR of "path = constant"
// and of such lists. It returns that term, the values in
// the order written, and for each an equality of path with it that holds
// for a document exactly when the term holds and path has that value.
func KeyChoices(q *ast.Query, params map[string]document.Value, path []string) (term ast.Expr, values []document.Value, eqs []ast.Expr, ok bool) {
	var choices func(e ast.Expr) bool
	choices = func(e ast.Expr) bool {
		switch x := e.(type) {
		case *ast.Binary:
			if x.Op == ast.OpOr {
				return choices(x.L) && choices(x.R)
			}
			if x.Op != ast.OpEq {
				return false
			}
			for _, side := range [2][2]ast.Expr{{x.L, x.R}, {x.R, x.L}} {
				if p, ok := DocPath(q, side[0]); ok && samePath(p, path) {
					if v, ok := constant(side[1], params); ok {
						values, eqs = append(values, v), append(eqs, x)
						return true
					}
				}
			}
		case *ast.In:
			if p, ok := DocPath(q, x.X); !ok || x.Not || !samePath(p, path) {
				return false
			}
			for _, item := range x.List {
				v, ok := constant(item, params)
				if !ok {
					return false
				}
				values, eqs = append(values, v), append(eqs, &ast.Binary{Op: ast.OpEq, L: x.X, R: item})
			}
			return true
		case *ast.Call:
			// ARRAY_CONTAINS(constant array of scalars, path), as Predicates
			// reads it: path IN (elements).
			if x.UDF || !strings.EqualFold(x.Name, "ARRAY_CONTAINS") || len(x.Args) != 2 && !(len(x.Args) == 3 && isFalse(x.Args[2])) {
				return false
			}
			p, ok := DocPath(q, x.Args[1])
			if !ok || !samePath(p, path) {
				return false
			}
			vals, ok := scalars(x.Args[0], params)
			if !ok {
				return false
			}
			for _, v := range vals {
				values, eqs = append(values, v), append(eqs, &ast.Binary{Op: ast.OpEq, L: x.Args[1], R: &ast.Literal{Value: v}})
			}
			return true
		}
		return false
	}
	for _, t := range conjuncts(q.Where) {
		values, eqs = nil, nil
		if choices(t) {
			return t, values, eqs, true
		}
	}
	return nil, nil, nil, false
}

// KeyLists finds the whole keys of paths (a partition key's) that q's WHERE
// clause allows when it fixes every path, each by an equality (pinned, as
// PartitionKeyTerms reads it) or by a list of values (KeyChoices), and
// lists at least one: c.tenant = 't1' AND c.user IN ('a', 'b') allows
// ['t1', 'a'] and ['t1', 'b']. It returns the list terms, the keys (the
// lists' values combined, in the order written, the first path's
// slowest), and for each key a condition that holds for a document
// exactly when the list terms hold and its paths have the key's values:
// the lists' equalities with its values, ANDed. It reports false when a
// path is neither fixed nor listed, when no path is listed, or when the
// keys would be more than max.
func KeyLists(q *ast.Query, params map[string]document.Value, paths [][]string, max int) (terms []ast.Expr, keys [][]document.Value, eqs []ast.Expr, ok bool) {
	all := conjuncts(q.Where)
	keys = [][]document.Value{nil}
	eqs = []ast.Expr{nil}
	for _, want := range paths {
		if v, t := pinned(q, all, params, want); t != nil {
			for i := range keys {
				keys[i] = append(keys[i], v)
			}
			continue
		}
		term, values, choices, found := KeyChoices(q, params, want)
		if !found || len(keys)*len(values) > max {
			return nil, nil, nil, false
		}
		terms = append(terms, term)
		nextKeys := make([][]document.Value, 0, len(keys)*len(values))
		nextEqs := make([]ast.Expr, 0, len(keys)*len(values))
		for i, k := range keys {
			for j, v := range values {
				nextKeys = append(nextKeys, append(slices.Clip(k), v))
				eq := choices[j]
				if eqs[i] != nil {
					eq = &ast.Binary{Op: ast.OpAnd, L: eqs[i], R: eq}
				}
				nextEqs = append(nextEqs, eq)
			}
		}
		keys, eqs = nextKeys, nextEqs
	}
	if len(terms) == 0 {
		return nil, nil, nil, false
	}
	return terms, keys, eqs, true
}

// WithoutTerms returns q with the top-level AND terms drop left out of
// its WHERE clause (none left: no WHERE clause); q itself is unchanged.
func WithoutTerms(q *ast.Query, drop []ast.Expr) *ast.Query {
	var where ast.Expr
	for _, t := range conjuncts(q.Where) {
		if slices.Contains(drop, t) {
			continue
		}
		if where == nil {
			where = t
		} else {
			where = &ast.Binary{Op: ast.OpAnd, L: where, R: t}
		}
	}
	f := *q
	f.Where = where
	return &f
}

// pinned returns the value a term of terms fixes the path want to, and
// that term (nil when none does).
func pinned(q *ast.Query, terms []ast.Expr, params map[string]document.Value, want []string) (document.Value, ast.Expr) {
	for _, t := range terms {
		switch x := t.(type) {
		case *ast.Binary:
			if x.Op != ast.OpEq {
				continue
			}
			if p, ok := DocPath(q, x.L); ok && samePath(p, want) {
				if v, ok := constant(x.R, params); ok {
					return v, t
				}
			}
			if p, ok := DocPath(q, x.R); ok && samePath(p, want) {
				if v, ok := constant(x.L, params); ok {
					return v, t
				}
			}
		case *ast.In:
			if x.Not || len(x.List) != 1 {
				continue
			}
			if p, ok := DocPath(q, x.X); ok && samePath(p, want) {
				if v, ok := constant(x.List[0], params); ok {
					return v, t
				}
			}
		case *ast.Call:
			if x.UDF || len(x.Args) != 1 || !strings.EqualFold(x.Name, "IS_NULL") {
				continue
			}
			if p, ok := DocPath(q, x.Args[0]); ok && samePath(p, want) {
				return document.NullValue(), t
			}
		}
	}
	return document.Undef, nil
}

// Op is the comparison of a Predicate.
type Op uint8

// The predicate comparisons.
const (
	Eq Op = iota
	Lt
	Le
	Gt
	Ge
	In      // Values holds the candidates
	Prefix  // STARTSWITH(path, Value), case-sensitive
	OfKinds // a type check (IS_DEFINED, IS_NUMBER, …): the value's kind lies in Kinds
	Ne      // a value of Value's kind other than Value
)

// KindRange is the kinds of value from First to Last in the query
// language's order of kinds (document.Kind), which is the order of the
// index's types: IS_DEFINED holds for null to object, IS_PRIMITIVE for
// null to string, IS_NUMBER for numbers alone.
type KindRange struct{ First, Last document.Kind }

// typeChecks are the type checks a KindRange says whole. IS_NULL is an
// equality with null.
var typeChecks = map[string]KindRange{
	"IS_DEFINED":   {document.Null, document.Object},
	"IS_PRIMITIVE": {document.Null, document.String},
	"IS_BOOL":      {document.Bool, document.Bool},
	"IS_NUMBER":    {document.Number, document.Number},
	"IS_STRING":    {document.String, document.String},
	"IS_ARRAY":     {document.Array, document.Array},
	"IS_OBJECT":    {document.Object, document.Object},
}

// Name is the type check that holds for the kinds of k.
func (k KindRange) Name() string {
	for name, r := range typeChecks {
		if r == k {
			return name
		}
	}
	return fmt.Sprintf("IS_KIND(%s..%s)", k.First, k.Last)
}

// Scalars reports whether every kind of k is a scalar's (null, a boolean,
// a number or a string), which a composite index holds.
func (k KindRange) Scalars() bool { return k.Last <= document.String }

// Predicate is one "path op constant" term of a WHERE clause that an index
// can answer. Every document the query returns satisfies every predicate,
// so an index may narrow the candidates; the evaluator still filters them
// all (pushdown is advisory).
type Predicate struct {
	Path   []string
	Op     Op
	Value  document.Value
	Values []document.Value // for In
	Kinds  KindRange        // for OfKinds
}

var flip = map[ast.BinaryOp]Op{ast.OpEq: Eq, ast.OpNe: Ne, ast.OpLt: Gt, ast.OpLe: Ge, ast.OpGt: Lt, ast.OpGe: Le}
var direct = map[ast.BinaryOp]Op{ast.OpEq: Eq, ast.OpNe: Ne, ast.OpLt: Lt, ast.OpLe: Le, ast.OpGt: Gt, ast.OpGe: Ge}

// negated is the comparison NOT (a op b) makes: the same where a and b
// are scalars of one kind, and undefined, as NOT of undefined is,
// wherever a op b is undefined.
var negated = map[ast.BinaryOp]ast.BinaryOp{ast.OpEq: ast.OpNe, ast.OpNe: ast.OpEq, ast.OpLt: ast.OpGe, ast.OpLe: ast.OpGt, ast.OpGt: ast.OpLe, ast.OpGe: ast.OpLt}

// Predicates returns the sargable terms of the top-level AND chain of the
// WHERE clause of q. Terms of other shapes are left out; the result may be
// empty.
func Predicates(q *ast.Query, params map[string]document.Value) []Predicate {
	var out []Predicate
	for _, t := range conjuncts(q.Where) {
		switch x := t.(type) {
		case *ast.Binary:
			if x.Op == ast.OpOr {
				if p, ok := anyOf(q, x, params); ok {
					out = append(out, p)
				}
				continue
			}
			out = append(out, comparison(q, x, params)...)
		case *ast.Unary:
			// NOT (c.n < 5) is c.n >= 5: for a number c.n, as the
			// comparison says, and for any other value undefined.
			if b, ok := x.X.(*ast.Binary); ok && x.Op == ast.OpNot {
				if op, ok := negated[b.Op]; ok {
					out = append(out, comparison(q, &ast.Binary{Op: op, L: b.L, R: b.R}, params)...)
				}
			}
		case *ast.Exists:
			out = append(out, existsPredicates(q, x.Query, params)...)
		case *ast.Literal:
			// A clause that is a literal other than true (WHERE false, or
			// an optional filter whose parameter ruled every row out, as
			// eval folds it) holds for no document: so does an IN of no
			// ids, whose span reads nothing.
			if x.Value.Kind() != document.Bool || !x.Value.Bool() {
				out = append(out, Predicate{Path: []string{"id"}, Op: In})
			}
		case *ast.Like:
			if p, _, ok := likePrefix(q, x, params); ok {
				out = append(out, p)
			}
		case *ast.Between:
			if x.Not {
				continue
			}
			if p, ok := DocPath(q, x.X); ok {
				lo, ok1 := constant(x.Lo, params)
				hi, ok2 := constant(x.Hi, params)
				if ok1 && ok2 {
					out = append(out, Predicate{Path: p, Op: Ge, Value: lo}, Predicate{Path: p, Op: Le, Value: hi})
				}
			}
		case *ast.In:
			if x.Not {
				continue
			}
			if p, ok := ElemPath(q, x.X); ok {
				var vals []document.Value
				for _, e := range x.List {
					v, ok := constant(e, params)
					if !ok {
						vals = nil
						break
					}
					vals = append(vals, v)
				}
				if vals != nil {
					out = append(out, Predicate{Path: p, Op: In, Values: vals})
				}
			}
		case *ast.Call:
			if x.UDF {
				continue
			}
			switch {
			case strings.EqualFold(x.Name, "STARTSWITH") && len(x.Args) == 2:
				if p, ok := DocPath(q, x.Args[0]); ok {
					if v, ok := constant(x.Args[1], params); ok && v.Kind() == document.String {
						out = append(out, Predicate{Path: p, Op: Prefix, Value: v})
					}
				}
			case strings.EqualFold(x.Name, "ARRAY_CONTAINS") && len(x.Args) == 3 && isTrue(x.Args[2]):
				out = append(out, partialContains(q, x, params)...)
			case strings.EqualFold(x.Name, "ARRAY_CONTAINS") && (len(x.Args) == 2 || len(x.Args) == 3 && isFalse(x.Args[2])):
				// ARRAY_CONTAINS(constant array, path) holds where the path
				// equals one of the array's elements: path IN (elements).
				// ARRAY_CONTAINS(path, scalar) holds where an element of the
				// array at path equals the scalar, and the index keeps
				// array elements under the segment "[]": path/[] = scalar.
				if p, ok := DocPath(q, x.Args[1]); ok {
					if vals, ok := scalars(x.Args[0], params); ok {
						out = append(out, Predicate{Path: p, Op: In, Values: vals})
					}
				} else if p, ok := DocPath(q, x.Args[0]); ok {
					if v, ok := constant(x.Args[1], params); ok && scalar(v) {
						out = append(out, Predicate{Path: append(p, "[]"), Op: Eq, Value: v})
					}
				}
			case typeChecks[strings.ToUpper(x.Name)] != KindRange{} && len(x.Args) == 1:
				if p, ok := DocPath(q, x.Args[0]); ok {
					out = append(out, Predicate{Path: p, Op: OfKinds, Kinds: typeChecks[strings.ToUpper(x.Name)]})
				}
			case strings.EqualFold(x.Name, "IS_NULL") && len(x.Args) == 1:
				if p, ok := DocPath(q, x.Args[0]); ok {
					out = append(out, Predicate{Path: p, Op: Eq, Value: document.NullValue()})
				}
			}
		}
	}
	return out
}

// comparison returns the predicate of x when it compares a document path
// (or, for an equality, a JOIN alias's elements) with a constant.
func comparison(q *ast.Query, x *ast.Binary, params map[string]document.Value) []Predicate {
	op, ok := direct[x.Op]
	if !ok {
		return nil
	}
	side := func(path func(*ast.Query, ast.Expr) ([]string, bool), e, other ast.Expr, op Op) ([]Predicate, bool) {
		p, ok := path(q, e)
		if !ok {
			return nil, false
		}
		// An inequality with null holds for no value, and one with an
		// array or an object is undefined: neither names index entries.
		if v, ok := constant(other, params); ok && (op != Ne || v.Kind() == document.Bool || v.Kind() == document.Number || v.Kind() == document.String) {
			return []Predicate{{Path: p, Op: op, Value: v}}, true
		}
		return nil, true
	}
	if op == Eq {
		// An equality on a JOIN alias's elements narrows the documents
		// to those holding such an element.
		if out, ok := side(ElemPath, x.L, x.R, op); ok {
			return out
		}
		if out, ok := side(ElemPath, x.R, x.L, op); ok {
			return out
		}
	}
	if out, ok := side(DocPath, x.L, x.R, op); ok {
		return out
	}
	out, _ := side(DocPath, x.R, x.L, flip[x.Op])
	return out
}

// AbsentPaths returns the paths the top-level AND chain of q's WHERE
// clause says a document lacks: NOT IS_DEFINED(path) of a document path.
func AbsentPaths(q *ast.Query) [][]string {
	var out [][]string
	for _, t := range conjuncts(q.Where) {
		u, ok := t.(*ast.Unary)
		if !ok || u.Op != ast.OpNot {
			continue
		}
		x, ok := u.X.(*ast.Call)
		if !ok || x.UDF || !strings.EqualFold(x.Name, "IS_DEFINED") || len(x.Args) != 1 {
			continue
		}
		if p, ok := DocPath(q, x.Args[0]); ok {
			out = append(out, p)
		}
	}
	return out
}

// Exact reports whether every term of the top-level AND chain of q's
// WHERE clause is one Predicates reads whole, so that a document passes
// the clause exactly when it passes the predicates: a term of another
// shape (c.n % 7 = 3, a UDF) gives none, an EXISTS gives those of its
// subquery's filter it understands, which may not be all of them, a LIKE
// its pattern's prefix (likePrefix), and an ARRAY_CONTAINS of an object
// with partial matching its properties one by one (partialContains).
func Exact(q *ast.Query, params map[string]document.Value) bool {
	for _, t := range conjuncts(q.Where) {
		switch x := t.(type) {
		case *ast.Exists:
			return false
		case *ast.Like:
			// Its predicate holds for more strings than a pattern
			// with more than a prefix and % matches.
			if _, exact, _ := likePrefix(q, x, params); !exact {
				return false
			}
		case *ast.Call:
			if partialObject(x, params) {
				return false
			}
		}
		one := *q
		one.Where = t
		if len(Predicates(&one, params)) == 0 {
			return false
		}
	}
	return true
}

// existsPredicates returns the equalities and INs that EXISTS(sub) makes
// hold for a document, when sub iterates an array of it (SELECT VALUE t
// FROM t IN c.tags WHERE t = 'red'): a document passes only if a row of
// the subquery does, so the subquery's filter, read as over a JOIN of q,
// narrows q's documents. A subquery with aggregates, GROUP BY or JOINs of
// its own gives none: an aggregate answers a row whatever its filter.
func existsPredicates(q, sub *ast.Query, params map[string]document.Value) []Predicate {
	if sub == nil || q.From == nil || sub.From == nil || !sub.From.Iterate || sub.From.Alias == q.From.Alias ||
		sub.Where == nil || len(sub.Joins) > 0 || len(sub.GroupBy) > 0 {
		return nil
	}
	switch sub.Select.Value.(type) {
	case nil:
		if !sub.Select.Star {
			return nil
		}
	case *ast.Ident, *ast.Member, *ast.Literal:
	default:
		return nil
	}
	q2 := *q
	q2.Joins = append(slices.Clone(q.Joins), sub.From)
	q2.Where = sub.Where
	var out []Predicate
	for _, p := range Predicates(&q2, params) {
		if p.Op == Eq || p.Op == In {
			out = append(out, p)
		}
	}
	return out
}

// UnionTerms returns, when a top-level AND term of the WHERE clause of q is an
// OR whose every operand (the operands of ORs within it too) holds a term
// the index answers, those terms, one an operand: every document the
// query returns is named by the spans of one of them, so the union of
// their items holds the query's candidates. An operand of several terms
// ANDed (c.a = 1 AND c.b = 2) gives one of them (operandTerm). An OR that
// Predicates reads as one term (equalities on one path, an IN) gives none,
// nor does one with an operand of no term. nil when no such OR exists; the
// first is taken.
func UnionTerms(q *ast.Query, params map[string]document.Value) []Term {
	for _, t := range conjuncts(q.Where) {
		if b, ok := t.(*ast.Binary); !ok || b.Op != ast.OpOr {
			continue
		}
		f := *q
		if f.Where = t; len(Terms(Predicates(&f, params))) > 0 {
			continue
		}
		var out []Term
		for _, operand := range disjuncts(t) {
			f.Where = operand
			terms := Terms(Predicates(&f, params))
			if len(terms) == 0 {
				out = nil
				break
			}
			out = append(out, operandTerm(terms))
		}
		if out != nil {
			return out
		}
	}
	return nil
}

// Operands returns, when the WHERE clause of q is an OR, q with each of
// its operands (those of ORs within it too) as its WHERE clause; nil
// otherwise.
func Operands(q *ast.Query) []*ast.Query {
	if b, ok := q.Where.(*ast.Binary); !ok || b.Op != ast.OpOr {
		return nil
	}
	var out []*ast.Query
	for _, e := range disjuncts(q.Where) {
		f := *q
		f.Where = e
		out = append(out, &f)
	}
	return out
}

// operandTerm picks, of the terms an operand of an OR ANDs together, the
// one whose items stand for it in the union: any holds every item the
// operand does; one of single values (equalities, IN), which hold fewer
// items than a range as a rule, or else the first. Of single values, one
// on id first, which names an item a value in each logical partition
// (as the SDKs' ReadMany writes (c.pk = 'a' AND c.id IN ('x', 'y')) OR …,
// whose partition key terms hold whole partitions), or else the first.
func operandTerm(terms []Term) Term {
	values := func(t Term) bool {
		return !slices.ContainsFunc(t.Spans, func(sp Span) bool { return sp.Kind != SpanValue })
	}
	for _, t := range terms {
		if values(t) && len(t.Path) == 1 && t.Path[0] == "id" {
			return t
		}
	}
	for _, t := range terms {
		if values(t) {
			return t
		}
	}
	return terms[0]
}

// disjuncts returns the operands of the OR chain of e.
func disjuncts(e ast.Expr) []ast.Expr {
	if b, ok := e.(*ast.Binary); ok && b.Op == ast.OpOr {
		return append(disjuncts(b.L), disjuncts(b.R)...)
	}
	return []ast.Expr{e}
}

// anyOf returns, for an OR of equalities and INs on one path (c.id = 'a'
// OR c.id = 'b'), the IN of all their values.
func anyOf(q *ast.Query, or *ast.Binary, params map[string]document.Value) (Predicate, bool) {
	var path []string
	var vals []document.Value
	var walk func(e ast.Expr) bool
	walk = func(e ast.Expr) bool {
		var p []string
		var ok bool
		switch x := e.(type) {
		case *ast.Binary:
			switch x.Op {
			case ast.OpOr:
				return walk(x.L) && walk(x.R)
			case ast.OpEq:
				var v document.Value
				if p, ok = ElemPath(q, x.L); ok {
					v, ok = constant(x.R, params)
				} else if p, ok = ElemPath(q, x.R); ok {
					v, ok = constant(x.L, params)
				}
				if !ok {
					return false
				}
				vals = append(vals, v)
			default:
				return false
			}
		case *ast.In:
			if x.Not {
				return false
			}
			if p, ok = ElemPath(q, x.X); !ok {
				return false
			}
			for _, e := range x.List {
				v, ok := constant(e, params)
				if !ok {
					return false
				}
				vals = append(vals, v)
			}
		default:
			return false
		}
		if path == nil {
			path = p
		}
		return samePath(path, p)
	}
	if !walk(or) {
		return Predicate{}, false
	}
	return Predicate{Path: path, Op: In, Values: vals}, true
}

// scalars returns the elements of a constant array (a literal of
// constants, or a parameter), when it has some and each is a number, a
// string, a bool or null.
func scalars(e ast.Expr, params map[string]document.Value) ([]document.Value, bool) {
	var vals []document.Value
	if lit, ok := e.(*ast.ArrayLit); ok {
		for _, x := range lit.Elems {
			v, ok := constant(x, params)
			if !ok {
				return nil, false
			}
			vals = append(vals, v)
		}
	} else if v, ok := constant(e, params); ok && v.Kind() == document.Array {
		vals = v.Array()
	}
	for _, v := range vals {
		if k := v.Kind(); k != document.Number && k != document.String && k != document.Bool && k != document.Null {
			return nil, false
		}
	}
	return vals, len(vals) > 0
}

// partialContains returns the predicates of ARRAY_CONTAINS(path, v, true),
// partial matching: for a scalar v, an element equal to it (path/[] = v,
// as without partial matching); for an object, an element holding each of
// its properties, so each property of a scalar value is an equality on
// the elements' entries of that property (path/[]/name = value), which
// every matching document has. The object's other properties (objects,
// arrays) give none, and neither does a constant array searched for a path.
func partialContains(q *ast.Query, x *ast.Call, params map[string]document.Value) []Predicate {
	p, ok := DocPath(q, x.Args[0])
	if !ok {
		return nil
	}
	var out []Predicate
	property := func(name string, v document.Value) {
		// A property named as the elements' segment is left to the
		// evaluator.
		if scalar(v) && name != "[]" {
			out = append(out, Predicate{Path: append(slices.Clip(p), "[]", name), Op: Eq, Value: v})
		}
	}
	if obj, ok := x.Args[1].(*ast.ObjectLit); ok {
		for _, f := range obj.Fields {
			if v, ok := constant(f.Value, params); ok {
				property(f.Name, v)
			}
		}
		return out
	}
	v, ok := constant(x.Args[1], params)
	switch {
	case !ok:
	case scalar(v):
		out = append(out, Predicate{Path: append(p, "[]"), Op: Eq, Value: v})
	case v.Kind() == document.Object:
		for _, f := range v.Fields() {
			property(f.Name, f.Value)
		}
	}
	return out
}

// partialObject reports whether x is ARRAY_CONTAINS(path, object, true),
// whose predicates (partialContains) do not hold for exactly the
// documents it does: one element must hold every property.
func partialObject(x *ast.Call, params map[string]document.Value) bool {
	if !strings.EqualFold(x.Name, "ARRAY_CONTAINS") || len(x.Args) != 3 || !isTrue(x.Args[2]) {
		return false
	}
	v, ok := constant(x.Args[1], params)
	return !ok || !scalar(v)
}

func isTrue(e ast.Expr) bool {
	lit, ok := e.(*ast.Literal)
	return ok && lit.Value.Kind() == document.Bool && lit.Value.Bool()
}

// isFalse reports whether e is the literal false.
func isFalse(e ast.Expr) bool {
	lit, ok := e.(*ast.Literal)
	return ok && lit.Value.Kind() == document.Bool && !lit.Value.Bool()
}

var opNames = [...]string{Eq: "=", Lt: "<", Le: "<=", Gt: ">", Ge: ">=", In: "IN", Prefix: "STARTSWITH", OfKinds: "IS", Ne: "!="}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return "?"
}

// Param returns the value of a query parameter, named with or without "@".
func Param(params map[string]document.Value, name string) document.Value {
	if v, ok := params[name]; ok {
		return v
	}
	return params[strings.TrimPrefix(name, "@")]
}

// likePrefix returns STARTSWITH(path, prefix) for path LIKE pattern, where
// prefix is the pattern's literal characters before its first wildcard
// (%, _ or a [set], as eval matches them; an ESCAPE character makes the
// next one literal): every string the pattern matches begins with them.
// exact says the pattern is that prefix and then % alone, without ESCAPE,
// so that the strings it matches are those the predicate holds for. A
// pattern that begins with a wildcard, NOT LIKE, or a pattern or escape
// that is not a constant string gives none.
func likePrefix(q *ast.Query, x *ast.Like, params map[string]document.Value) (pred Predicate, exact, ok bool) {
	p, ok := DocPath(q, x.X)
	if !ok || x.Not {
		return Predicate{}, false, false
	}
	pat, ok := constant(x.Pattern, params)
	if !ok || pat.Kind() != document.String {
		return Predicate{}, false, false
	}
	esc := rune(-1)
	if x.Escape != nil {
		e, ok := constant(x.Escape, params)
		if !ok || e.Kind() != document.String || utf8.RuneCountInString(e.Str()) != 1 {
			return Predicate{}, false, false
		}
		esc, _ = utf8.DecodeRuneInString(e.Str())
	}
	rs := []rune(pat.Str())
	var prefix []rune
	i := 0
scan:
	for ; i < len(rs); i++ {
		switch c := rs[i]; {
		case c == esc && i+1 < len(rs):
			i++
			prefix = append(prefix, rs[i])
		case c == '%' || c == '_':
			break scan
		case c == '[' && slices.Contains(rs[min(i+2, len(rs)):], ']'):
			break scan
		default:
			prefix = append(prefix, c)
		}
	}
	if len(prefix) == 0 {
		return Predicate{}, false, false
	}
	rest := rs[i:]
	exact = x.Escape == nil && len(rest) > 0 && !slices.ContainsFunc(rest, func(r rune) bool { return r != '%' })
	return Predicate{Path: p, Op: Prefix, Value: document.Str(string(prefix))}, exact, true
}
