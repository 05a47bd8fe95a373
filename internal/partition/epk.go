package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// The kinds of partition key definition: Hash has one path; MultiHash (a
// hierarchical key) has up to MaxMultiHashPaths.
const (
	Hash      = "Hash"
	MultiHash = "MultiHash"
)

// MaxMultiHashPaths is the most paths a hierarchical key may have.
const MaxMultiHashPaths = 3

// Definition is a container's partition key definition. Kind "" means Hash;
// Version 0 (absent) means 1.
type Definition struct {
	Paths   []string
	Kind    string
	Version int
}

// ErrDefinition is wrapped by the errors Validate returns.
var ErrDefinition = errors.New("invalid partition key definition")

// Validate checks that def is a definition Cosmos DB accepts: Hash with one
// path and version 1 or 2, or MultiHash with 1 to MaxMultiHashPaths paths and
// version 2. Each path must start with '/'.
func (def Definition) Validate() error {
	switch def.kind() {
	case Hash:
		if len(def.Paths) != 1 {
			return fmt.Errorf("%w: a Hash key has exactly one path, got %d", ErrDefinition, len(def.Paths))
		}
		if def.Version < 0 || def.Version > 2 {
			return fmt.Errorf("%w: version %d is not 1 or 2", ErrDefinition, def.Version)
		}
	case MultiHash:
		if len(def.Paths) < 1 || len(def.Paths) > MaxMultiHashPaths {
			return fmt.Errorf("%w: a MultiHash key has 1 to %d paths, got %d", ErrDefinition, MaxMultiHashPaths, len(def.Paths))
		}
		if def.Version != 2 {
			return fmt.Errorf("%w: a MultiHash key needs version 2", ErrDefinition)
		}
	default:
		return fmt.Errorf("%w: unknown kind %q", ErrDefinition, def.Kind)
	}
	for _, p := range def.Paths {
		if len(p) < 2 || p[0] != '/' {
			return fmt.Errorf("%w: path %q must start with '/' and name a property", ErrDefinition, p)
		}
	}
	return nil
}

func (def Definition) kind() string {
	if def.Kind == "" {
		return Hash
	}
	return def.Kind
}

// ErrKeyShape is wrapped by the errors EPK returns when a key does not fit
// the definition.
var ErrKeyShape = errors.New("partition key does not match the definition")

// EPK returns the effective partition key of k under def, as upper-case hex.
// Effective partition keys order the key space that ranges split: every EPK
// sorts at or above "" and below "FF".
//
//   - Hash version 2: MurmurHash3 x64_128 of the components' encodings,
//     32 hex characters, the top two bits cleared.
//   - MultiHash: the version 2 hash of each component on its own, 32 hex
//     characters per component. A key with fewer components than paths is a
//     prefix (see EPKRange).
//   - Hash version 1 (or no version): the binary encoding of the x86_32 hash
//     as a number followed by the encoding of the component, which the
//     service, .NET, Java and JavaScript share (not the Go SDK's own V1 form,
//     which only picks a range on the client).
//
// The empty key has the EPK "", the start of the key space. EPK fails only
// when k has more components than def allows (one for Hash). It does not
// check def itself; see Validate.
func EPK(def Definition, k Key) (string, error) {
	if len(k) == 0 {
		return "", nil
	}
	switch def.kind() {
	case MultiHash:
		if len(def.Paths) > 0 && len(k) > len(def.Paths) {
			return "", fmt.Errorf("%w: %d components for %d paths", ErrKeyShape, len(k), len(def.Paths))
		}
		var dst []byte
		for _, c := range k {
			dst = appendV2(dst, Key{c})
		}
		return string(dst), nil
	default:
		if len(k) > 1 {
			return "", fmt.Errorf("%w: %d components for a Hash key", ErrKeyShape, len(k))
		}
		if def.Version == 2 {
			return string(appendV2(nil, k)), nil
		}
		return string(appendV1(nil, k[0])), nil
	}
}

// EPKRange returns the span [min, max) of effective partition keys that the
// full keys starting with k have. For a MultiHash prefix of j components that
// is [EPK(k), EPK(k)+"FF"): every full key's EPK extends EPK(k) with more
// 32-character hashes, each below "FF". For a full key the span holds that
// key's EPK alone, and for the empty key it is the whole space ["", "FF").
func EPKRange(def Definition, k Key) (min, max string, err error) {
	min, err = EPK(def, k)
	if err != nil {
		return "", "", err
	}
	return min, min + MaxEPK, nil
}

// MaxEPK is the exclusive upper bound of the effective partition key space.
const MaxEPK = "FF"

// Component markers of the hashing and binary encodings.
const (
	markUndefined = 0x00
	markNull      = 0x01
	markFalse     = 0x02
	markTrue      = 0x03
	markNumber    = 0x05
	markString    = 0x08
)

// appendHashInput appends the encoding of c that is hashed. Strings end with
// suffix: 0xFF in version 2, 0x00 in version 1.
func appendHashInput(dst []byte, c Component, suffix byte) []byte {
	switch c.kind() {
	case KindNull:
		return append(dst, markNull)
	case KindBool:
		if c.Bool {
			return append(dst, markTrue)
		}
		return append(dst, markFalse)
	case KindNumber:
		dst = append(dst, markNumber)
		return binary.LittleEndian.AppendUint64(dst, canonicalBits(c.Num))
	case KindString:
		dst = append(dst, markString)
		dst = append(dst, c.Str...)
		return append(dst, suffix)
	}
	return append(dst, markUndefined)
}

// appendV2 appends the version 2 EPK of k's components hashed together.
func appendV2(dst []byte, k Key) []byte {
	var in []byte
	for _, c := range k {
		in = appendHashInput(in, c, 0xff)
	}
	h1, h2 := Murmur3x64_128(in, 0)
	// The 16 hash bytes little-endian, h1 then h2, reversed: h2 then h1
	// big-endian.
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], h2)
	binary.BigEndian.PutUint64(b[8:], h1)
	b[0] &= 0x3f
	return appendHex(dst, b[:])
}

// maxV1Chars is how many UTF-16 code units of a string version 1 hashes and
// encodes; maxV1Bytes is how many bytes of it the encoding keeps.
const (
	maxV1Chars = 100
	maxV1Bytes = 100
)

// appendV1 appends the version 1 EPK of one component.
func appendV1(dst []byte, c Component) []byte {
	if c.kind() == KindString {
		c.Str = truncateUTF16(c.Str, maxV1Chars)
	}
	h := Murmur3x86_32(appendHashInput(nil, c, 0x00), 0)
	bin := appendBinNumber(nil, float64(h))
	switch c.kind() {
	case KindNull:
		bin = append(bin, markNull)
	case KindBool:
		if c.Bool {
			bin = append(bin, markTrue)
		} else {
			bin = append(bin, markFalse)
		}
	case KindNumber:
		bin = appendBinNumber(bin, c.Num)
	case KindString:
		bin = append(bin, markString)
		s := c.Str
		// Short means at most 100 UTF-8 bytes, as .NET decides;
		// JavaScript counts UTF-16 code units instead, which differs
		// only for strings of at most 100 code units whose UTF-8 form
		// is longer than 100 bytes.
		short := len(s) <= maxV1Bytes
		if !short {
			s = s[:maxV1Bytes+1]
		}
		for i := 0; i < len(s); i++ {
			b := s[i]
			if b < 0xff {
				b++
			}
			bin = append(bin, b)
		}
		if short {
			bin = append(bin, 0x00)
		}
	default:
		bin = append(bin, markUndefined)
	}
	return appendHex(dst, bin)
}

// appendBinNumber appends the order-preserving variable-length encoding of a
// number used by version 1 EPKs: the marker, the first byte of the
// sign-adjusted bits, then 7 bits per byte with the low bit set on every byte
// but the last. This follows .NET and Java, which always write at least one
// byte after the first (JavaScript drops it when it would be a lone 0x00, as
// for the number 0).
func appendBinNumber(dst []byte, f float64) []byte {
	u := canonicalBits(f)
	if u>>63 == 0 {
		u ^= 1 << 63
	} else {
		u = ^u + 1
	}
	dst = append(dst, markNumber, byte(u>>56))
	u <<= 8
	for {
		b := byte(u>>56) | 0x01
		u <<= 7
		if u == 0 {
			return append(dst, b&0xfe)
		}
		dst = append(dst, b)
	}
}

// truncateUTF16 returns the first n UTF-16 code units of s, as .NET's
// Substring and JavaScript's substring cut strings. A surrogate pair split by
// the cut leaves half a pair, which both encode to UTF-8 as U+FFFD.
func truncateUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > n {
			if units < n {
				return s[:i] + string(utf8.RuneError)
			}
			return s[:i]
		}
		units += w
	}
	return s
}

const upperHex = "0123456789ABCDEF"

func appendHex(dst, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, upperHex[c>>4], upperHex[c&0xf])
	}
	return dst
}
