package ast

import "github.com/mayfly-db/mayfly/internal/document"

// Constant returns the value of e when e is constant: a literal, a
// parameter (from params, by its name with the '@'), a negated number, or
// an array or object literal of constants.
func Constant(e Expr, params map[string]document.Value) (document.Value, bool) {
	switch x := e.(type) {
	case *Literal:
		return x.Value, true
	case *Param:
		v, ok := params[x.Name]
		return v, ok
	case *Unary:
		if v, ok := Constant(x.X, params); ok && x.Op == OpNeg && v.Kind() == document.Number {
			return document.Float(-v.Float()), true
		}
	case *ArrayLit:
		elems := make([]document.Value, 0, len(x.Elems))
		for _, el := range x.Elems {
			v, ok := Constant(el, params)
			if !ok {
				return document.Undef, false
			}
			elems = append(elems, v)
		}
		return document.Arr(elems), true
	case *ObjectLit:
		fields := make([]document.Field, 0, len(x.Fields))
		for _, f := range x.Fields {
			v, ok := Constant(f.Value, params)
			if !ok {
				return document.Undef, false
			}
			fields = append(fields, document.Field{Name: f.Name, Value: v})
		}
		return document.Obj(fields), true
	}
	return document.Undef, false
}
