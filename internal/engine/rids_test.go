package engine

import (
	"bytes"
	"testing"
)

// TestRidLayout: rids have the service's shape, which the DocumentDB-era
// SDKs parse (docs/protocol.md §2.2): a container's fifth byte has its
// high bit set, a user's has it clear; under a container, 8 more bytes
// whose last high nibble is the type (0 an item, 8, 7, 6 the scripts).
// Containers made before this layout keep their items' big-endian rids,
// and both kinds of item rid lead back to their sequence numbers.
func TestRidLayout(t *testing.T) {
	db := []byte{0, 0, 0, 1}
	coll := containerRid(db, 2)
	if !bytes.Equal(coll, []byte{0, 0, 0, 1, 0x80, 0, 0, 2}) || !serviceLayout(coll) {
		t.Fatalf("container rid % x", coll)
	}
	old := []byte{0, 0, 0, 1, 0, 0, 0, 2}
	if serviceLayout(old) {
		t.Fatal("a container rid of the earlier layout reads as the service's")
	}
	for _, seq := range []uint64{1, 0x0f, 0x10, 0xff, 0x1234, 1 << 40, 1<<56 - 1} {
		rid := itemRid(coll, seq)
		if len(rid) != itemRidLen || !bytes.Equal(rid[:collRidLen], coll) || rid[15]>>4 != 0 {
			t.Errorf("item %d: rid % x", seq, rid)
		}
		if got := itemSeq(coll, rid); got != seq {
			t.Errorf("item %d: rid % x reads back as %d", seq, rid, got)
		}
		legacy := itemRid(old, seq)
		if !bytes.Equal(legacy[collRidLen:], []byte{byte(seq >> 56), byte(seq >> 48), byte(seq >> 40), byte(seq >> 32), byte(seq >> 24), byte(seq >> 16), byte(seq >> 8), byte(seq)}) {
			t.Errorf("item %d of an earlier container: rid % x, want its big-endian sequence number", seq, legacy)
		}
		if got := itemSeq(old, legacy); got != seq {
			t.Errorf("item %d of an earlier container: reads back as %d", seq, got)
		}
	}
	for kind, nibble := range map[ScriptKind]byte{StoredProcedures: 8, Triggers: 7, Functions: 6} {
		rid := scriptRid(coll, kind, 0x1234)
		if len(rid) != 16 || !bytes.Equal(rid[:collRidLen], coll) || rid[15]>>4 != nibble {
			t.Errorf("%s rid % x", kind, rid)
		}
	}
}
