package partition

import (
	"encoding/binary"
	"math/bits"
)

// MurmurHash3, written from Austin Appleby's public-domain description. Cosmos
// DB hashes partition keys with two of its variants: x86_32 for hash version 1
// and x64_128 for version 2 and MultiHash.

// Murmur3x86_32 returns the 32-bit MurmurHash3 (x86 variant) of data.
func Murmur3x86_32(data []byte, seed uint32) uint32 {
	const (
		c1 = 0xcc9e2d51
		c2 = 0x1b873593
	)
	h := seed
	n := len(data)
	body := n &^ 3
	for i := 0; i < body; i += 4 {
		k := binary.LittleEndian.Uint32(data[i:])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
	}
	if tail := data[body:]; len(tail) > 0 {
		var k uint32
		for i := len(tail) - 1; i >= 0; i-- {
			k = k<<8 | uint32(tail[i])
		}
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
	}
	h ^= uint32(n)
	return fmix32(h)
}

func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// Murmur3x64_128 returns the 128-bit MurmurHash3 (x64 variant) of data as its
// two 64-bit halves, h1 first. Both halves start from seed, as in the
// reference implementation.
func Murmur3x64_128(data []byte, seed uint32) (h1, h2 uint64) {
	const (
		c1 = 0x87c37b91114253d5
		c2 = 0x4cf5ad432745937f
	)
	h1, h2 = uint64(seed), uint64(seed)
	n := len(data)
	body := n &^ 15
	for i := 0; i < body; i += 16 {
		k1 := binary.LittleEndian.Uint64(data[i:])
		k2 := binary.LittleEndian.Uint64(data[i+8:])

		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
		h1 = bits.RotateLeft64(h1, 27)
		h1 += h2
		h1 = h1*5 + 0x52dce729

		k2 *= c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= c1
		h2 ^= k2
		h2 = bits.RotateLeft64(h2, 31)
		h2 += h1
		h2 = h2*5 + 0x38495ab5
	}
	if tail := data[body:]; len(tail) > 0 {
		// The tail is read as two little-endian words, missing bytes zero.
		var k1, k2 uint64
		for i := len(tail) - 1; i >= 0; i-- {
			if i >= 8 {
				k2 = k2<<8 | uint64(tail[i])
			} else {
				k1 = k1<<8 | uint64(tail[i])
			}
		}
		if len(tail) > 8 {
			k2 *= c2
			k2 = bits.RotateLeft64(k2, 33)
			k2 *= c1
			h2 ^= k2
		}
		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
	}
	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1 = fmix64(h1)
	h2 = fmix64(h2)
	h1 += h2
	h2 += h1
	return h1, h2
}

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}
