package partition

import (
	"math/bits"
	"sort"
	"strconv"
)

// Range is a partition key range: the effective partition keys in
// [Min, Max), compared as strings. The first range of a container starts at
// "" and the last ends at MaxEPK ("FF").
type Range struct {
	ID  string
	Min string
	Max string
}

// Contains reports whether epk falls in r.
func (r Range) Contains(epk string) bool { return r.Min <= epk && epk < r.Max }

// Split returns n contiguous ranges with ids "0" to "n-1" that together cover
// ["", "FF"). One range (or n < 1) is ["", "FF").
//
// The boundaries cut the version 2 hash space evenly. A version 2 EPK starts
// with a byte in 0x00–0x3F, so its first 64 bits lie in [0, 2^62); boundary
// i is i·2^62/n written as 16 upper-case hex digits, which compares with a
// 32-digit EPK exactly as the numbers do. MultiHash keys spread by their
// first component the same way.
//
// Version 1 EPKs all begin with 0x05 followed by the first byte of the
// encoded 32-bit hash, which is 0xC1 for every hash of 2^17 or more (and
// smaller, down to 0x80, for the rare smaller ones): they sit in [0580, 05C2)
// and so fall into the range that holds that span, range 0 for n up to 11
// and about range 0.09·n beyond: such a container's ranges are SplitV1's.
func Split(n int) []Range {
	if n < 1 {
		n = 1
	}
	ranges := make([]Range, n)
	for i := range ranges {
		ranges[i] = Range{ID: strconv.Itoa(i), Min: boundary(i, n), Max: boundary(i+1, n)}
	}
	return ranges
}

// boundary returns the lower bound of range i of n.
func boundary(i, n int) string {
	switch {
	case i <= 0:
		return ""
	case i >= n:
		return MaxEPK
	}
	hi, lo := bits.Mul64(uint64(i), 1<<62)
	q, _ := bits.Div64(hi, lo, uint64(n))
	var b [8]byte
	for j := range b {
		b[j] = byte(q >> (56 - 8*j))
	}
	return string(appendHex(nil, b[:]))
}

// Locate returns the range of ranges that contains epk. ranges must be sorted
// and contiguous, as Split returns them. It reports false when no range holds
// epk.
func Locate(ranges []Range, epk string) (Range, bool) {
	i := sort.Search(len(ranges), func(i int) bool { return epk < ranges[i].Max })
	if i < len(ranges) && ranges[i].Contains(epk) {
		return ranges[i], true
	}
	return Range{}, false
}

// Overlapping returns the ranges of ranges that share at least one EPK with
// [min, max), in order. ranges must be sorted and contiguous.
func Overlapping(ranges []Range, min, max string) []Range {
	if min >= max {
		return nil
	}
	i := sort.Search(len(ranges), func(i int) bool { return min < ranges[i].Max })
	j := i
	for j < len(ranges) && ranges[j].Min < max {
		j++
	}
	return ranges[i:j:j]
}

// SplitV1 is Split for a container whose key hashes as version 1: its
// boundaries cut the 32-bit hash evenly, written as version 1 EPKs begin
// (the number's order-preserving encoding, appendBinNumber), so a key whose
// hash is h falls in the range whose bounds hold h.
func SplitV1(n int) []Range {
	ranges := Split(n)
	for i := range ranges {
		if i > 0 {
			ranges[i].Min = boundaryV1(i, len(ranges))
		}
		if i < len(ranges)-1 {
			ranges[i].Max = boundaryV1(i+1, len(ranges))
		}
	}
	return ranges
}

// boundaryV1 returns the lower bound of range i of n, for 0 < i < n.
func boundaryV1(i, n int) string {
	h := uint64(i) << 32 / uint64(n)
	return string(appendHex(nil, appendBinNumber(nil, float64(h))))
}
