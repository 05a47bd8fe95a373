package eval

import (
	"math"

	"github.com/mayfly-db/mayfly/internal/document"
)

func kindIs(kinds ...document.Kind) func([]document.Value) document.Value {
	return func(a []document.Value) document.Value {
		for _, k := range kinds {
			if a[0].Kind() == k {
				return vTrue
			}
		}
		return vFals
	}
}

func init() {
	pure(1, 1, kindIs(document.Array), "IS_ARRAY")
	pure(1, 1, kindIs(document.Bool), "IS_BOOL")
	pure(1, 1, kindIs(document.Null), "IS_NULL")
	pure(1, 1, kindIs(document.Number), "IS_NUMBER")
	pure(1, 1, kindIs(document.Object), "IS_OBJECT")
	pure(1, 1, kindIs(document.String), "IS_STRING")
	pure(1, 1, kindIs(document.Null, document.Bool, document.Number, document.String), "IS_PRIMITIVE")
	pure(1, 1, func(a []document.Value) document.Value { return boolVal(a[0].IsDefined()) }, "IS_DEFINED")
	pure(1, 1, func(a []document.Value) document.Value {
		if a[0].Kind() != document.Number {
			return vFals
		}
		if a[0].IsInt() {
			return vTrue
		}
		f := a[0].Float()
		return boolVal(f == math.Trunc(f) && f >= -9223372036854775808 && f < 9223372036854775808)
	}, "IS_INTEGER")
	pure(1, 1, func(a []document.Value) document.Value {
		if a[0].Kind() != document.Number {
			return vFals
		}
		f := a[0].Float()
		return boolVal(!math.IsInf(f, 0) && !math.IsNaN(f))
	}, "IS_FINITE_NUMBER")
}
