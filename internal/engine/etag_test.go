package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// An etag keeps the spelling it always had: clients compare them as
// strings, and a store's etags must not change with the server's version.
func TestEtagSpelling(t *testing.T) {
	cases := []struct {
		rid  []byte
		lsn  uint64
		want string
	}{
		{nil, 0, `"811c9dc5-0000-0000-0000-000000000000"`},
		{[]byte{1, 2, 3, 4}, 1, `"5734a87d-0000-0000-0000-000000000001"`},
		{[]byte("abc"), 1<<48 | 0xabcdef, `"1a47e90b-0000-0000-0001-000000abcdef"`},
		{[]byte("abc"), ^uint64(0), `"1a47e90b-0000-0000-ffff-ffffffffffff"`},
	}
	for _, c := range cases {
		if got := etagFor(c.rid, c.lsn); got != c.want {
			t.Errorf("etagFor(%x, %d) = %s, want %s", c.rid, c.lsn, got, c.want)
		}
	}
	// And as fmt spells it, over random inputs.
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		rid := make([]byte, r.IntN(12))
		for i := range rid {
			rid[i] = byte(r.Uint32())
		}
		lsn := r.Uint64() >> r.IntN(64)
		var h uint32 = 2166136261
		for _, b := range rid {
			h = (h ^ uint32(b)) * 16777619
		}
		want := fmt.Sprintf("\"%08x-0000-0000-%04x-%012x\"", h, uint16(lsn>>48), lsn&0xffffffffffff)
		if got := etagFor(rid, lsn); got != want {
			t.Fatalf("etagFor(%x, %d) = %s, want %s", rid, lsn, got, want)
		}
	}
}
