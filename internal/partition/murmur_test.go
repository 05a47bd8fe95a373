package partition

import (
	"bytes"
	"testing"
)

// Published MurmurHash3 vectors, plus hashes of Cosmos DB's own encodings
// taken from the SDKs' partition-key baselines.
func TestMurmur3x86_32(t *testing.T) {
	tests := []struct {
		in   []byte
		seed uint32
		want uint32
	}{
		{nil, 0, 0},
		{nil, 1, 0x514e28b7},
		{nil, 0xffffffff, 0x81f16f39},
		{[]byte{0, 0, 0, 0}, 0, 0x2362f9de},
		{[]byte("hello"), 0, 0x248bfa47},
		{[]byte("Hello, world!"), 1234, 0xfaf6cdb3},
		{[]byte("The quick brown fox jumps over the lazy dog"), 0, 0x2e4ff723},
		// 0x08 "asdf" 0x00: the V1 hash input of the string "asdf".
		{[]byte("\x08asdf\x00"), 0, 0xb02babc2},
		{[]byte("\x08\x00"), 0, 0x3cccb0ff},
		{[]byte{0x00}, 0, 0x514e28b7},
		{[]byte{0x01}, 0, 0xe45ad1ab},
		{[]byte{0x03}, 0, 0x5e2a8076},
		{[]byte{0x02}, 0, 0x6c27d09f},
		{append([]byte{0x08}, append(bytes.Repeat([]byte("a"), 101), 0)...), 0, 0x3b1b5d8d},
		{append([]byte{0x08}, append(bytes.Repeat([]byte("a"), 2048), 0)...), 0, 0x9c91058d},
	}
	for _, tt := range tests {
		if got := Murmur3x86_32(tt.in, tt.seed); got != tt.want {
			t.Errorf("Murmur3x86_32(%q, %d) = %08x, want %08x", tt.in, tt.seed, got, tt.want)
		}
	}
}

func TestMurmur3x64_128(t *testing.T) {
	tests := []struct {
		in     []byte
		seed   uint32
		h1, h2 uint64
	}{
		{nil, 0, 0, 0},
		{[]byte("hello"), 0, 0xcbd8a7b341bd9b02, 0x5b1e906a48ae1d19},
		{[]byte("Hello, world!"), 0, 0xf1512dd1d2d665df, 0x2c326650a8f3c564},
		{[]byte("The quick brown fox jumps over the lazy dog"), 0, 0xe34bbc7bbc071b6c, 0x7a433ca9c49a9347},
		// 0x08 "asdf" 0xFF: the V2 hash input of "asdf"; its unmasked
		// effective key is 608BF1D598F5B63AD5520F04FE58C5E8 = BE(h2) BE(h1).
		{[]byte("\x08asdf\xff"), 0, 0xd5520f04fe58c5e8, 0x608bf1d598f5b63a},
		{[]byte{0x00}, 0, 0x4610abe56eff5cb5, 0x51622daa78f83583},
	}
	for _, tt := range tests {
		h1, h2 := Murmur3x64_128(tt.in, tt.seed)
		if h1 != tt.h1 || h2 != tt.h2 {
			t.Errorf("Murmur3x64_128(%q, %d) = %016x %016x, want %016x %016x", tt.in, tt.seed, h1, h2, tt.h1, tt.h2)
		}
	}
}

// Every body and tail length of both variants (seed 7), as computed by an
// independent implementation.
func TestMurmurLengths(t *testing.T) {
	data := []byte("0123456789abcdefghijklmnopqrstuv")
	tests := []struct {
		n      int
		h32    uint32
		h1, h2 uint64
	}{
		{0, 0x18c9aec4, 0xf402c55ac5dec98f, 0x2de586f681711c02},
		{1, 0xed311d41, 0xbecfbe5861e37f2d, 0x6299a91855c11563},
		{2, 0x76c2cae1, 0xb70abd47d3ff831d, 0x16aa3065ce858ee0},
		{3, 0x0dc5cf3b, 0x127cbe712682b594, 0xc8fd2a0181633ba4},
		{4, 0x772a6994, 0x276a98d60b6b6b5a, 0x242c8e45344efaa6},
		{5, 0xc567bdb4, 0x6d47d38a1fbc4e8f, 0x333eb9cb1cdceff8},
		{6, 0x393aa379, 0x9c9fa0bf3548a437, 0xd451cd92bc431514},
		{7, 0x86d6f92f, 0x8b5e474b410d9a08, 0xd10d6af0e194670c},
		{8, 0x4d4caf01, 0xbc58300dbb017f79, 0xef26e3783f213c48},
		{9, 0xa970ab2e, 0x7cbb0dacef36e751, 0xd3da87af3874f51f},
		{10, 0x18ea99d2, 0x7b01c1a6252dbf33, 0x7e3ee498ade9a1f8},
		{11, 0x7a3a795a, 0x67aa7477eed8eeba, 0xe1b65f1a122b5bdd},
		{12, 0xa4e6b5e7, 0x2f44301b4073b1fd, 0x8f6dcc278c73ec5d},
		{13, 0xb0e9ec97, 0x010b8484f430f3df, 0x08fe202f3b6407e1},
		{14, 0x1d2f8f00, 0xb8a6333f1d6a7375, 0xc0c151041d884142},
		{15, 0x26a7762c, 0xd0369285c8e61e8e, 0xdb693488682d8ac5},
		{16, 0x577e9754, 0x500ca03648b1f185, 0xd5c2a273849b13ab},
		{17, 0x6f43becb, 0x792d7b2ed7b034ea, 0x139764e0c8b00f0c},
		{18, 0x382678b4, 0x172999415f985fb7, 0x09ff57a1d3df74b0},
		{19, 0xee7a41fd, 0x37cf7c287a5fca25, 0x06776865269e303c},
		{20, 0xab1da2ab, 0xe814ae1734eb5988, 0x485b598cd9671f76},
		{21, 0x3d5d36e9, 0x059c321379e53c47, 0xf8283e8041982f48},
		{22, 0x2e070d49, 0x8a6ae8b2e30908d9, 0x8b776ca35ef7affe},
		{23, 0x1bf1c862, 0x005533eb6e31acec, 0x62c3e9febaa5c29e},
		{24, 0x0ea33e0d, 0x0c0bf0a929028d76, 0xdb406a98aa31adf3},
		{25, 0x373854a8, 0x8262ec37eea4cd99, 0x325c1cc05d7b75ce},
		{26, 0x7496eb0f, 0xaf81a36451cef60d, 0x6294ebb8e12f0e0e},
		{27, 0x4720f719, 0xf50701df8c65e4e1, 0x8c10b3e818ade54d},
		{28, 0x42518eea, 0x920313a263322479, 0x3d5a6e013bdbfc07},
		{29, 0x09c4d813, 0xcad4f0ff21d5311d, 0x39a5d922d1f91aea},
		{30, 0x9b3295b3, 0xb0ce84f987649862, 0x4e39f5bddd350afc},
		{31, 0x23cde62c, 0xf874614b98e93449, 0x8f3e425b16017d49},
		{32, 0x2c4d3bd0, 0x86292589d5c44cf3, 0xf561e361248dbd19},
	}
	for _, tt := range tests {
		if got := Murmur3x86_32(data[:tt.n], 7); got != tt.h32 {
			t.Errorf("x86_32 length %d = %08x, want %08x", tt.n, got, tt.h32)
		}
		h1, h2 := Murmur3x64_128(data[:tt.n], 7)
		if h1 != tt.h1 || h2 != tt.h2 {
			t.Errorf("x64_128 length %d = %016x %016x, want %016x %016x", tt.n, h1, h2, tt.h1, tt.h2)
		}
	}
}

func BenchmarkMurmur3x64_128(b *testing.B) {
	data := []byte("\x08tenant-0042/user-12345\xff")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Murmur3x64_128(data, 0)
	}
}
