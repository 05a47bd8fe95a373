package document

import (
	"math"
	"sort"
	"strings"
)

// Compare orders two values as Cosmos DB's ORDER BY does: first by kind
// (undefined < null < false < true < numbers < strings < arrays < objects),
// then by value. Strings compare by code point; arrays element by element;
// objects property by property in name order.
func Compare(a, b Value) int {
	if a.kind != b.kind {
		if a.kind < b.kind {
			return -1
		}
		return 1
	}
	switch a.kind {
	case Bool:
		switch {
		case a.b == b.b:
			return 0
		case !a.b:
			return -1
		}
		return 1
	case Number:
		return CompareNumbers(a, b)
	case String:
		return strings.Compare(a.s, b.s)
	case Array:
		for i := 0; i < len(a.arr) && i < len(b.arr); i++ {
			if c := Compare(a.arr[i], b.arr[i]); c != 0 {
				return c
			}
		}
		return cmpInt(len(a.arr), len(b.arr))
	case Object:
		af, bf := sortedFields(a), sortedFields(b)
		for i := 0; i < len(af) && i < len(bf); i++ {
			if c := strings.Compare(af[i].Name, bf[i].Name); c != 0 {
				return c
			}
			if c := Compare(af[i].Value, bf[i].Value); c != 0 {
				return c
			}
		}
		return cmpInt(len(af), len(bf))
	}
	return 0
}

// CompareNumbers compares two numbers exactly, also when one is an int64
// beyond float64's exact range.
func CompareNumbers(a, b Value) int {
	if a.isInt && b.isInt {
		return cmpInt64(a.i, b.i)
	}
	if !a.isInt && !b.isInt {
		return cmpFloat(a.f, b.f)
	}
	if a.isInt {
		return -compareFloatInt(b.f, a.i)
	}
	return compareFloatInt(a.f, b.i)
}

func compareFloatInt(f float64, i int64) int {
	if math.IsNaN(f) {
		return -1
	}
	// Past ±2^63 the float is beyond every int64, and int64(f) would
	// overflow.
	const two63 = 1 << 63
	if f < -two63 {
		return -1
	}
	if f >= two63 {
		return 1
	}
	t := math.Trunc(f)
	ti := int64(t)
	if ti != i {
		return cmpInt64(ti, i)
	}
	return cmpFloat(f, t)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	}
	// NaNs sort first and equal each other.
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return -1
	}
	return 1
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpInt(a, b int) int { return cmpInt64(int64(a), int64(b)) }

func sortedFields(v Value) []Field {
	fs := make([]Field, 0, len(v.obj))
	for _, f := range v.obj {
		if f.Value.kind != Undefined {
			fs = append(fs, f)
		}
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].Name < fs[j].Name })
	return fs
}

// Equal reports deep equality as the query language's = sees it: numbers by
// value, objects regardless of property order, undefined equal to nothing.
func Equal(a, b Value) bool {
	if a.kind == Undefined || b.kind == Undefined {
		return false
	}
	return Compare(a, b) == 0
}
