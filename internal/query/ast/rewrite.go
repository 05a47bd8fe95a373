package ast

// Rewrite returns a copy of e in which every subexpression sub replaces
// (sub returns true) is replaced, outermost first: a replaced expression's
// parts are not visited. A subquery is rewritten by inner, or left as it
// is when inner is nil. Nodes on the way to a replacement are copied, so
// trees that share nodes with e are left as they were; nil stays nil.
func Rewrite(e Expr, sub func(Expr) (Expr, bool), inner func(*Query) *Query) Expr {
	if e == nil {
		return nil
	}
	if n, ok := sub(e); ok {
		return n
	}
	r := func(x Expr) Expr { return Rewrite(x, sub, inner) }
	all := func(es []Expr) []Expr {
		out := make([]Expr, len(es))
		for i, x := range es {
			out[i] = r(x)
		}
		return out
	}
	q := func(x *Query) *Query {
		if inner == nil {
			return x
		}
		return inner(x)
	}
	switch x := e.(type) {
	case *Member:
		n := *x
		n.X = r(x.X)
		return &n
	case *Index:
		n := *x
		n.X, n.Index = r(x.X), r(x.Index)
		return &n
	case *Unary:
		n := *x
		n.X = r(x.X)
		return &n
	case *Binary:
		n := *x
		n.L, n.R = r(x.L), r(x.R)
		return &n
	case *Ternary:
		n := *x
		n.Cond, n.Then, n.Else = r(x.Cond), r(x.Then), r(x.Else)
		return &n
	case *Between:
		n := *x
		n.X, n.Lo, n.Hi = r(x.X), r(x.Lo), r(x.Hi)
		return &n
	case *In:
		n := *x
		n.X = r(x.X)
		n.List = all(x.List)
		return &n
	case *Like:
		n := *x
		n.X, n.Pattern, n.Escape = r(x.X), r(x.Pattern), r(x.Escape)
		return &n
	case *Call:
		n := *x
		n.Args = all(x.Args)
		return &n
	case *ArrayLit:
		n := *x
		n.Elems = all(x.Elems)
		return &n
	case *ObjectLit:
		n := *x
		n.Fields = make([]ObjectField, len(x.Fields))
		for i, f := range x.Fields {
			n.Fields[i] = ObjectField{Name: f.Name, Value: r(f.Value)}
		}
		return &n
	case *Exists:
		return &Exists{Query: q(x.Query), Pos: x.Pos}
	case *ArrayQuery:
		return &ArrayQuery{Query: q(x.Query), Pos: x.Pos}
	case *Subquery:
		return &Subquery{Query: q(x.Query), Pos: x.Pos}
	}
	return e
}
