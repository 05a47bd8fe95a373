package eval

import (
	"math"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
)

func numArg(v document.Value) (float64, bool) { return v.Float(), v.Kind() == document.Number }

func math1(f func(float64) float64) func([]document.Value) document.Value {
	return func(a []document.Value) document.Value {
		x, ok := numArg(a[0])
		if !ok {
			return undef
		}
		return number(f(x))
	}
}

// keepInt applies f to floats but returns integers unchanged (CEILING,
// FLOOR, ROUND, TRUNC of an integer is the integer, exactly).
func keepInt(f func(float64) float64) func([]document.Value) document.Value {
	return func(a []document.Value) document.Value {
		if a[0].IsInt() {
			return a[0]
		}
		return math1(f)(a)
	}
}

// int64Args reads the integer arguments of the Int* functions.
func int64Args(a []document.Value) (x, y int64, ok bool) {
	for i, v := range a {
		if !v.IsInt() {
			if v.Kind() != document.Number {
				return 0, 0, false
			}
			f := v.Float()
			if f != math.Trunc(f) || f < -9223372036854775808 || f >= 9223372036854775808 {
				return 0, 0, false
			}
			v = document.Int(int64(f))
		}
		if i == 0 {
			x = v.Int()
		} else {
			y = v.Int()
		}
	}
	return x, y, true
}

func intFunc(f func(x, y int64) (int64, bool)) func([]document.Value) document.Value {
	return func(a []document.Value) document.Value {
		x, y, ok := int64Args(a)
		if !ok {
			return undef
		}
		r, ok := f(x, y)
		if !ok {
			return undef
		}
		return document.Int(r)
	}
}

func init() {
	pure(1, 1, func(a []document.Value) document.Value {
		if a[0].IsInt() && a[0].Int() != math.MinInt64 {
			if a[0].Int() < 0 {
				return document.Int(-a[0].Int())
			}
			return a[0]
		}
		return math1(math.Abs)(a)
	}, "ABS")
	pure(1, 1, keepInt(math.Ceil), "CEILING")
	pure(1, 1, keepInt(math.Floor), "FLOOR")
	pure(1, 1, keepInt(math.Trunc), "TRUNC")
	pure(1, 1, keepInt(math.Round), "ROUND") // half away from zero
	pure(1, 1, math1(math.Sqrt), "SQRT")
	pure(1, 1, func(a []document.Value) document.Value {
		if a[0].Kind() != document.Number {
			return undef
		}
		return arith(ast.OpMul, a[0], a[0])
	}, "SQUARE")
	pure(2, 2, func(a []document.Value) document.Value {
		x, ok1 := numArg(a[0])
		y, ok2 := numArg(a[1])
		if !ok1 || !ok2 {
			return undef
		}
		if a[0].IsInt() && a[1].IsInt() && y >= 0 && y < 64 {
			// Exact integer powers while they fit.
			r := document.Int(1)
			for i := int64(0); i < a[1].Int(); i++ {
				r = arith(ast.OpMul, r, a[0])
				if !r.IsInt() {
					return number(math.Pow(x, y))
				}
			}
			return r
		}
		return number(math.Pow(x, y))
	}, "POWER")
	pure(1, 1, math1(math.Exp), "EXP")
	pure(1, 2, func(a []document.Value) document.Value {
		x, ok := numArg(a[0])
		if !ok {
			return undef
		}
		if len(a) == 1 {
			return number(math.Log(x))
		}
		b, ok := numArg(a[1])
		if !ok {
			return undef
		}
		return number(math.Log(x) / math.Log(b))
	}, "LOG")
	pure(1, 1, math1(math.Log10), "LOG10")
	pure(1, 1, func(a []document.Value) document.Value {
		x, ok := numArg(a[0])
		if !ok {
			return undef
		}
		switch {
		case x > 0:
			return document.Int(1)
		case x < 0:
			return document.Int(-1)
		}
		return document.Int(0)
	}, "SIGN")
	pure(1, 1, math1(math.Sin), "SIN")
	pure(1, 1, math1(math.Cos), "COS")
	pure(1, 1, math1(math.Tan), "TAN")
	pure(1, 1, math1(math.Asin), "ASIN")
	pure(1, 1, math1(math.Acos), "ACOS")
	pure(1, 1, math1(math.Atan), "ATAN")
	pure(1, 1, math1(func(x float64) float64 { return 1 / math.Tan(x) }), "COT")
	pure(1, 1, math1(func(x float64) float64 { return x * 180 / math.Pi }), "DEGREES")
	pure(1, 1, math1(func(x float64) float64 { return x * math.Pi / 180 }), "RADIANS")
	// ATN2(y, x) is the arc tangent of y/x in the quadrant of (x, y): the
	// documentation's ATN2(35.175643, 129.44) is 0.265344532064832.
	pure(2, 2, func(a []document.Value) document.Value {
		y, ok1 := numArg(a[0])
		x, ok2 := numArg(a[1])
		if !ok1 || !ok2 {
			return undef
		}
		return number(math.Atan2(y, x))
	}, "ATN2")
	pure(0, 0, func([]document.Value) document.Value { return document.FloatExact(math.Pi) }, "PI")
	register(0, 0, func(c *ctx, _ []document.Value) (document.Value, error) {
		return document.FloatExact(c.prog.rnd()), nil
	}, "RAND")
	pure(1, 2, func(a []document.Value) document.Value {
		x, ok := numArg(a[0])
		if !ok {
			return undef
		}
		// The multiple of size at or below x/size: with a negative size
		// that rounds away from zero (NumberBin(37.752, -100) is 100).
		size := 1.0
		if len(a) > 1 {
			if size, ok = numArg(a[1]); !ok || size == 0 {
				return undef
			}
		}
		if a[0].IsInt() && (len(a) == 1 || a[1].IsInt()) {
			v, s := a[0].Int(), int64(size)
			if s == -1 {
				return document.Int(v) // v / -1 overflows for the least int64
			}
			q := v / s
			if v%s != 0 && (v < 0) != (s < 0) {
				q--
			}
			return document.Int(q * s)
		}
		return number(math.Floor(x/size) * size)
	}, "NumberBin")

	pure(2, 2, intFunc(func(x, y int64) (int64, bool) { return x + y, true }), "IntAdd")
	pure(2, 2, intFunc(func(x, y int64) (int64, bool) { return x - y, true }), "IntSub")
	pure(2, 2, intFunc(func(x, y int64) (int64, bool) { return x * y, true }), "IntMul")
	pure(2, 2, intFunc(func(x, y int64) (int64, bool) {
		if y == 0 {
			return 0, false
		}
		if y == -1 {
			return -x, true
		}
		return x / y, true
	}), "IntDiv")
	pure(2, 2, intFunc(func(x, y int64) (int64, bool) {
		if y == 0 {
			return 0, false
		}
		if y == -1 {
			return 0, true
		}
		return x % y, true
	}), "IntMod")
	pure(2, 2, intFunc(func(x, y int64) (int64, bool) { return x & y, true }), "IntBitAnd")
	pure(2, 2, intFunc(func(x, y int64) (int64, bool) { return x | y, true }), "IntBitOr")
	pure(2, 2, intFunc(func(x, y int64) (int64, bool) { return x ^ y, true }), "IntBitXor")
	pure(1, 1, intFunc(func(x, _ int64) (int64, bool) { return ^x, true }), "IntBitNot")
	pure(2, 2, intFunc(func(x, y int64) (int64, bool) {
		if y < 0 {
			return 0, false
		}
		return x << uint64(y), true
	}), "IntBitLeftShift")
	pure(2, 2, intFunc(func(x, y int64) (int64, bool) {
		if y < 0 {
			return 0, false
		}
		return x >> uint64(y), true
	}), "IntBitRightShift")
}
