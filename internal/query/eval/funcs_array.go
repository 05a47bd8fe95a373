package eval

import (
	"github.com/mayfly-db/mayfly/internal/document"
)

// partialMatch reports whether elem holds every property of want with an
// equal value (ARRAY_CONTAINS with partial matching).
func partialMatch(elem, want document.Value) bool {
	if want.Kind() != document.Object || elem.Kind() != document.Object {
		return document.Equal(elem, want)
	}
	for _, f := range want.Fields() {
		if !f.Value.IsDefined() {
			continue
		}
		if !document.Equal(elem.Get(f.Name), f.Value) {
			return false
		}
	}
	return true
}

// keySet returns the canonical keys of the elements of arr.
func keySet(arr document.Value) map[string]bool {
	set := make(map[string]bool, arr.Len())
	for _, e := range arr.Array() {
		set[string(CanonicalKey(nil, e))] = true
	}
	return set
}

func arrayHas(arr, v document.Value, partial bool) bool {
	for _, e := range arr.Array() {
		if partial && partialMatch(e, v) || !partial && document.Equal(e, v) {
			return true
		}
	}
	return false
}

func init() {
	pure(2, 3, func(a []document.Value) document.Value {
		partial, ok := optBool(a, 2)
		if a[0].Kind() != document.Array || !ok {
			return undef
		}
		return boolVal(arrayHas(a[0], a[1], partial))
	}, "ARRAY_CONTAINS")
	// An undefined value searched for is unknown: it makes ANY undefined
	// unless another value matches, and ALL undefined unless another value
	// is missing (the documentation's examples).
	pure(2, -1, func(a []document.Value) document.Value {
		if a[0].Kind() != document.Array {
			return undef
		}
		set := keySet(a[0])
		unknown := false
		for _, v := range a[1:] {
			switch {
			case !v.IsDefined():
				unknown = true
			case set[string(CanonicalKey(nil, v))]:
				return vTrue
			}
		}
		if unknown {
			return undef
		}
		return vFals
	}, "ARRAY_CONTAINS_ANY")
	pure(2, -1, func(a []document.Value) document.Value {
		if a[0].Kind() != document.Array {
			return undef
		}
		set := keySet(a[0])
		unknown := false
		for _, v := range a[1:] {
			switch {
			case !v.IsDefined():
				unknown = true
			case !set[string(CanonicalKey(nil, v))]:
				return vFals
			}
		}
		if unknown {
			return undef
		}
		return vTrue
	}, "ARRAY_CONTAINS_ALL")
	pure(1, 1, func(a []document.Value) document.Value {
		if a[0].Kind() != document.Array {
			return undef
		}
		return document.Int(int64(a[0].Len()))
	}, "ARRAY_LENGTH")
	pure(2, 3, func(a []document.Value) document.Value {
		start, ok := intArg(a[1])
		if a[0].Kind() != document.Array || !ok {
			return undef
		}
		arr := a[0].Array()
		n := int64(len(arr))
		if start < 0 {
			start += n
			if start < 0 {
				start = 0
			}
		}
		length := n
		if len(a) > 2 {
			if length, ok = intArg(a[2]); !ok {
				return undef
			}
		}
		if start >= n || length <= 0 {
			return document.Arr(nil)
		}
		end := start + length
		if end > n || end < start {
			end = n
		}
		return document.Arr(arr[start:end])
	}, "ARRAY_SLICE")
	pure(2, -1, func(a []document.Value) document.Value {
		var out []document.Value
		for _, v := range a {
			if v.Kind() != document.Array {
				return undef
			}
			out = append(out, v.Array()...)
		}
		return document.Arr(out)
	}, "ARRAY_CONCAT")
	pure(1, 1, arrayExtreme(-1), "ARRAY_MIN")
	pure(1, 1, arrayExtreme(1), "ARRAY_MAX")
	pure(2, 2, func(a []document.Value) document.Value {
		if a[0].Kind() != document.Array || a[1].Kind() != document.Array {
			return undef
		}
		var out []document.Value
		seen := map[string]bool{}
		other := keySet(a[1])
		for _, v := range a[0].Array() {
			k := string(CanonicalKey(nil, v))
			if !seen[k] && other[k] {
				seen[k] = true
				out = append(out, v)
			}
		}
		return document.Arr(out)
	}, "SetIntersect")
	pure(2, 2, func(a []document.Value) document.Value {
		if a[0].Kind() != document.Array || a[1].Kind() != document.Array {
			return undef
		}
		var out []document.Value
		seen := map[string]bool{}
		for _, arr := range a {
			for _, v := range arr.Array() {
				k := string(CanonicalKey(nil, v))
				if !seen[k] {
					seen[k] = true
					out = append(out, v)
				}
			}
		}
		return document.Arr(out)
	}, "SetUnion")
	pure(2, -1, func(a []document.Value) document.Value {
		i, ok := intArg(a[0])
		if !ok || a[0].Float() != float64(i) || i < 1 || i >= int64(len(a)) {
			return undef
		}
		return a[i]
	}, "CHOOSE")
	pure(1, 3, func(a []document.Value) document.Value {
		if a[0].Kind() != document.Object {
			return undef
		}
		kName, vName := "k", "v"
		if len(a) > 1 {
			s, ok := strArg(a[1])
			if !ok {
				return undef
			}
			kName = s
		}
		if len(a) > 2 {
			s, ok := strArg(a[2])
			if !ok {
				return undef
			}
			vName = s
		}
		out := make([]document.Value, 0, a[0].Len())
		for _, f := range a[0].Fields() {
			if !f.Value.IsDefined() {
				continue
			}
			out = append(out, document.Obj([]document.Field{{Name: kName, Value: document.Str(f.Name)}, {Name: vName, Value: f.Value}}))
		}
		return document.Arr(out)
	}, "ObjectToArray")
}

// arrayExtreme returns ARRAY_MIN (dir -1) or ARRAY_MAX (dir 1): elements
// compare in the cross-type order; arrays and objects make it undefined.
func arrayExtreme(dir int) func([]document.Value) document.Value {
	return func(a []document.Value) document.Value {
		if a[0].Kind() != document.Array {
			return undef
		}
		best := undef
		for _, v := range a[0].Array() {
			switch v.Kind() {
			case document.Undefined:
				continue
			case document.Array, document.Object:
				return undef
			}
			if !best.IsDefined() || document.Compare(v, best)*dir > 0 {
				best = v
			}
		}
		return best
	}
}
