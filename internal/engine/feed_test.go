package engine

import (
	"bytes"
	"testing"
)

func TestContinuationRoundTrip(t *testing.T) {
	for _, c := range []struct {
		seq  uint64
		skip int
	}{{0, 0}, {1, 0}, {1 << 40, 3}, {^uint64(0), 1}} {
		seq, skip, err := decodeContinuation(encodeContinuation(c.seq, c.skip))
		if err != nil || seq != c.seq || skip != c.skip {
			t.Errorf("round trip of %v: %d %d %v", c, seq, skip, err)
		}
	}
	for _, bad := range []string{"", "x", "mf1.", "mf1.zz!", "mf1.1.0", "mf1.1.-2", "mf1.1.2.3", "mf2.1"} {
		if _, _, err := decodeContinuation(bad); err == nil || err.Code != BadRequest {
			t.Errorf("decodeContinuation(%q) = %v, want 400", bad, err)
		}
	}
}

func FuzzContinuation(f *testing.F) {
	f.Add("mf1.abc.4")
	f.Fuzz(func(t *testing.T, s string) {
		seq, skip, err := decodeContinuation(s)
		if err != nil {
			if err.Message != "Invalid Continuation Token" {
				t.Fatalf("unexpected message %q", err.Message)
			}
			return
		}
		if skip < 0 {
			t.Fatalf("negative skip from %q", s)
		}
		_ = seq
	})
}

func TestItemRecordRoundTrip(t *testing.T) {
	r := itemRecord{ts: 1700000000, lsn: 42, ttlKind: 2, ttlSecs: 60, pk: []byte{0x50, 'a', 0, 1}, id: "it\x00em", json: []byte(`{"id":"x"}`)}
	got, err := decodeItemRecord(r.encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.ts != r.ts || got.lsn != r.lsn || got.ttlKind != r.ttlKind || got.ttlSecs != r.ttlSecs ||
		!bytes.Equal(got.pk, r.pk) || got.id != r.id || !bytes.Equal(got.json, r.json) {
		t.Fatalf("got %+v, want %+v", got, r)
	}
}

func FuzzItemRecord(f *testing.F) {
	f.Add((&itemRecord{ts: 1, pk: []byte("k"), id: "i", json: []byte("{}")}).encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeItemRecord(b)
		if err != nil {
			return
		}
		again, err := decodeItemRecord(r.encode())
		if err != nil || again.id != r.id || !bytes.Equal(again.json, r.json) {
			t.Fatalf("re-encode changed the record")
		}
	})
}
