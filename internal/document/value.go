// Package document holds Mayfly's JSON value model: the values items are made
// of, Cosmos DB's cross-type ordering and equality, and property paths.
//
// Values keep object properties in the order they were written (projections
// and stored items come back as the client wrote them) and keep integers as
// int64, so an integer survives a round trip exactly; every other number is a
// float64. The zero Value is Undefined, which is distinct from Null: a missing
// property is undefined (the Cosmos SQL semantics depend on it).
package document

import (
	"math"
)

// Kind is the type of a Value, in Cosmos DB's cross-type sort order.
type Kind uint8

// The kinds, in ascending ORDER BY order.
const (
	Undefined Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
)

var kindNames = [...]string{"undefined", "null", "boolean", "number", "string", "array", "object"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// Field is one property of an object.
type Field struct {
	Name  string
	Value Value
}

// Value is an immutable JSON value (or undefined). Copying a Value is cheap;
// slices inside it must not be modified by holders.
type Value struct {
	kind  Kind
	isInt bool
	b     bool
	i     int64
	f     float64
	s     string
	arr   []Value
	obj   []Field
}

// Undef is the undefined value.
var Undef = Value{}

// NullValue returns null.
func NullValue() Value { return Value{kind: Null} }

// BoolValue returns a boolean.
func BoolValue(b bool) Value { return Value{kind: Bool, b: b} }

// Int returns an integer number.
func Int(i int64) Value { return Value{kind: Number, isInt: true, i: i, f: float64(i)} }

// Float returns a number. Integral values that fit in an int64 exactly are
// kept as integers so that arithmetic on them stays exact.
func Float(f float64) Value {
	if f == math.Trunc(f) && f >= -9007199254740992 && f <= 9007199254740992 && !(f == 0 && math.Signbit(f)) {
		return Value{kind: Number, isInt: true, i: int64(f), f: f}
	}
	return Value{kind: Number, f: f}
}

// FloatExact returns a number that stays a float even when integral.
func FloatExact(f float64) Value { return Value{kind: Number, f: f} }

// Str returns a string.
func Str(s string) Value { return Value{kind: String, s: s} }

// Arr returns an array holding vals (not copied).
func Arr(vals []Value) Value {
	if vals == nil {
		vals = []Value{}
	}
	return Value{kind: Array, arr: vals}
}

// Obj returns an object holding fields (not copied). Names should be unique.
func Obj(fields []Field) Value {
	if fields == nil {
		fields = []Field{}
	}
	return Value{kind: Object, obj: fields}
}

// Kind returns the value's type.
func (v Value) Kind() Kind { return v.kind }

// IsDefined reports whether v is not undefined.
func (v Value) IsDefined() bool { return v.kind != Undefined }

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.kind == Null }

// Bool returns the boolean (false for other kinds).
func (v Value) Bool() bool { return v.kind == Bool && v.b }

// IsInt reports whether v is a number held exactly as an int64.
func (v Value) IsInt() bool { return v.kind == Number && v.isInt }

// Int returns the integer value (truncated for floats).
func (v Value) Int() int64 {
	if v.isInt {
		return v.i
	}
	return int64(v.f)
}

// Float returns the number as a float64.
func (v Value) Float() float64 {
	if v.isInt {
		return float64(v.i)
	}
	return v.f
}

// Str returns the string ("" for other kinds).
func (v Value) Str() string { return v.s }

// Array returns the elements of an array (nil for other kinds).
func (v Value) Array() []Value { return v.arr }

// Fields returns the properties of an object in order (nil for other kinds).
func (v Value) Fields() []Field { return v.obj }

// Len returns the number of elements or properties, or the byte length of a
// string.
func (v Value) Len() int {
	switch v.kind {
	case Array:
		return len(v.arr)
	case Object:
		return len(v.obj)
	case String:
		return len(v.s)
	}
	return 0
}

// Get returns the named property of an object, or Undef.
func (v Value) Get(name string) Value {
	for i := range v.obj {
		if v.obj[i].Name == name {
			return v.obj[i].Value
		}
	}
	return Undef
}

// Index returns element i of an array, or Undef.
func (v Value) Index(i int) Value {
	if v.kind != Array || i < 0 || i >= len(v.arr) {
		return Undef
	}
	return v.arr[i]
}

// With returns a copy of object v with property name set to val (replacing
// it in place or appending it). Setting Undef removes the property.
func (v Value) With(name string, val Value) Value {
	fields := make([]Field, 0, len(v.obj)+1)
	found := false
	for _, f := range v.obj {
		if f.Name == name {
			found = true
			if val.kind != Undefined {
				fields = append(fields, Field{name, val})
			}
			continue
		}
		fields = append(fields, f)
	}
	if !found && val.kind != Undefined {
		fields = append(fields, Field{name, val})
	}
	return Obj(fields)
}

// Without returns a copy of object v without the named properties.
func (v Value) Without(names ...string) Value {
	fields := make([]Field, 0, len(v.obj))
outer:
	for _, f := range v.obj {
		for _, n := range names {
			if f.Name == n {
				continue outer
			}
		}
		fields = append(fields, f)
	}
	return Obj(fields)
}
