// Package partition holds everything Mayfly knows about partition keys that
// does not depend on storage or HTTP: the value model of a key, the
// x-ms-documentdb-partitionkey header, a canonical byte encoding for storage
// keys, effective partition keys (EPKs) as Cosmos DB computes them, and the
// partition key ranges a container is split into.
//
// A Key is a list of components, one per path of the container's partition
// key definition. A component is undefined (the property is missing), null, a
// boolean, a number or a string; objects and arrays are not key values. The
// empty Key (the header "[]") means "no key" and is distinct from a missing
// header, which callers model themselves.
//
// Numbers are float64, as in the SDKs: two integers that round to the same
// float64 are the same key. Negative zero is the same key as zero everywhere
// in this package (Equal, AppendKeyBytes, EPK): stored items are written back
// as JSON with -0 as 0, so keeping them apart would move an item to another
// logical partition on its first round trip. Hashing -0 as 0 differs from the
// SDKs only in which range a client would pick for -0 when a container has
// several ranges.
package partition

import (
	"encoding/binary"
	"math"
)

// ComponentKind is the type of one partition key component, in Cosmos DB's
// cross-type sort order.
type ComponentKind uint8

// The component kinds. The zero value is KindUndefined.
const (
	KindUndefined ComponentKind = iota
	KindNull
	KindBool
	KindNumber
	KindString
)

var kindNames = [...]string{"undefined", "null", "boolean", "number", "string"}

func (k ComponentKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// Component is one value of a partition key. Only the field that matches Kind
// is meaningful; the zero Component is undefined.
type Component struct {
	Kind ComponentKind
	Str  string
	Num  float64
	Bool bool
}

// Key is a partition key value: one component per path of the definition, or
// fewer for a prefix of a hierarchical key.
type Key []Component

// Undefined returns the undefined component (the property is missing).
func Undefined() Component { return Component{} }

// Null returns the null component.
func Null() Component { return Component{Kind: KindNull} }

// Bool returns a boolean component.
func Bool(b bool) Component { return Component{Kind: KindBool, Bool: b} }

// Number returns a number component.
func Number(f float64) Component { return Component{Kind: KindNumber, Num: f} }

// String returns a string component.
func String(s string) Component { return Component{Kind: KindString, Str: s} }

// Equal reports whether two components are the same key value. Numbers
// compare numerically (so -0 equals 0), and NaN equals NaN so that Equal
// agrees with AppendKeyBytes.
func (c Component) Equal(o Component) bool {
	if c.kind() != o.kind() {
		return false
	}
	switch c.kind() {
	case KindBool:
		return c.Bool == o.Bool
	case KindNumber:
		return canonicalBits(c.Num) == canonicalBits(o.Num)
	case KindString:
		return c.Str == o.Str
	}
	return true
}

// Equal reports whether two keys have equal components in the same order.
func (k Key) Equal(o Key) bool {
	if len(k) != len(o) {
		return false
	}
	for i := range k {
		if !k[i].Equal(o[i]) {
			return false
		}
	}
	return true
}

// kind returns c.Kind, reading a kind this package does not know (which only
// a caller building Components by hand can produce) as undefined.
func (c Component) kind() ComponentKind {
	if c.Kind > KindString {
		return KindUndefined
	}
	return c.Kind
}

// canonicalBits returns the IEEE-754 bits of f with -0 folded into 0 and every
// NaN folded into .NET's NaN, whose hash the SDK baselines record. JSON has
// no NaN or infinities, so only keys built by hand hold them.
func canonicalBits(f float64) uint64 {
	switch {
	case f == 0:
		return 0
	case f != f:
		return 0xfff8000000000000
	}
	return math.Float64bits(f)
}

// Tags of the storage encoding, ordered like the kinds they stand for.
const (
	tagUndefined = 0x10
	tagNull      = 0x20
	tagFalse     = 0x30
	tagTrue      = 0x31
	tagNumber    = 0x40
	tagString    = 0x50
)

// AppendKeyBytes appends the canonical storage encoding of k to dst.
//
// The encoding is a concatenation of self-delimiting components, so:
//   - equal keys (per Equal) give equal bytes and different keys different
//     bytes;
//   - the encoding of a prefix of k is a byte prefix of k's encoding, so a
//     range scan over a hierarchical key prefix is a prefix scan;
//   - byte order follows Cosmos DB's order within one position: undefined <
//     null < false < true < numbers (numerically) < strings (by UTF-8 bytes,
//     that is by code point), and a shorter key sorts before its extensions.
//
// Each component is a tag byte, then for a number the 8 bytes of its IEEE-754
// value made order-preserving (sign flipped when positive, all bits flipped
// when negative), and for a string its bytes with 0x00 written as 0x00 0xFF,
// closed by 0x00 0x01. The empty key encodes as nothing.
func AppendKeyBytes(dst []byte, k Key) []byte {
	for _, c := range k {
		switch c.kind() {
		case KindNull:
			dst = append(dst, tagNull)
		case KindBool:
			if c.Bool {
				dst = append(dst, tagTrue)
			} else {
				dst = append(dst, tagFalse)
			}
		case KindNumber:
			u := canonicalBits(c.Num)
			if u>>63 == 0 {
				u |= 1 << 63
			} else {
				u = ^u
			}
			dst = append(dst, tagNumber)
			dst = binary.BigEndian.AppendUint64(dst, u)
		case KindString:
			dst = append(dst, tagString)
			for i := 0; i < len(c.Str); i++ {
				if b := c.Str[i]; b == 0 {
					dst = append(dst, 0x00, 0xff)
				} else {
					dst = append(dst, b)
				}
			}
			dst = append(dst, 0x00, 0x01)
		default:
			dst = append(dst, tagUndefined)
		}
	}
	return dst
}
