package engine

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/plan"
)

func TestCursorRoundTrip(t *testing.T) {
	for _, c := range []cursor{
		{fingerprint: 1},
		{fingerprint: 7, access: plan.IndexSpan, terms: []int{2}, indexVer: 3, skip: 4, pos: []byte{'x', 0, 1, 2}},
		{fingerprint: ^uint64(0), access: plan.Intersect, terms: []int{0, 1}, pos: itemLoc("0A0B", 1<<40)},
		{fingerprint: 9, access: plan.CompositeSpan, terms: []int{0, 2}, composite: 3, indexVer: 2, pos: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{fingerprint: 9, access: plan.CompositeWalk, terms: []int{1}, composite: 65535, skip: 12},
		{fingerprint: 3, access: plan.Scan, skip: 1, made: 300, pos: []byte{0, 1}},
		{fingerprint: 4, access: plan.Scan, skip: 2, kept: ^uint64(0) - 5, pos: []byte{0, 1}},
	} {
		got, err := parseCursor(c.String(), c.fingerprint)
		if err != nil || got.fingerprint != c.fingerprint || got.access != c.access || !slices.Equal(got.terms, c.terms) || got.composite != c.composite ||
			got.indexVer != c.indexVer || got.skip != c.skip || got.made != c.made || got.kept != c.kept || !bytes.Equal(got.pos, c.pos) {
			t.Errorf("round trip of %+v: %+v %v", c, got, err)
		}
		if _, err := parseCursor(c.String(), c.fingerprint+1); err == nil || err.Code != BadRequest {
			t.Errorf("a token of another query was accepted: %v", err)
		}
	}
	// A token cut short, added to or changed is refused: its position
	// would be read as another.
	tok := cursor{fingerprint: 2, access: plan.Scan, skip: 1, pos: itemLoc("0A0B", 77)}.String()
	flipped := []byte(tok)
	flipped[len(flipped)-7] ^= 1
	for what, bad := range map[string]string{"cut by 3": tok[:len(tok)-3], "cut by 1": tok[:len(tok)-1], "added to": tok + "x", "a character changed": string(flipped)} {
		if _, err := parseCursor(bad, 2); err == nil || err.Code != BadRequest {
			t.Errorf("a token %s: %v, want 400", what, err)
		}
	}
	// Tokens of version 5, which has no check; of version 4, which has no
	// set of a DISTINCT's rows; and of version 3, which has no count of
	// rows made either.
	v5, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(cursor{fingerprint: 2, skip: 5, made: 7, pos: []byte("p")}.String(), cursorPrefix))
	v5 = v5[:len(v5)-4]
	v5[0] = 5
	if got, err := parseCursor(cursorPrefix+base64.RawURLEncoding.EncodeToString(v5), 2); err != nil || got.skip != 5 || got.made != 7 || string(got.pos) != "p" {
		t.Errorf("version 5 token: %+v %v", got, err)
	}
	v4 := slices.Delete(slices.Clone(v5), len(v5)-2, len(v5)-1)
	v4[0] = 4
	if got, err := parseCursor(cursorPrefix+base64.RawURLEncoding.EncodeToString(v4), 2); err != nil || got.skip != 5 || got.made != 7 || got.kept != 0 || string(got.pos) != "p" {
		t.Errorf("version 4 token: %+v %v", got, err)
	}
	v3 := slices.Delete(slices.Clone(v4), len(v4)-2, len(v4)-1)
	v3[0] = 3
	if got, err := parseCursor(cursorPrefix+base64.RawURLEncoding.EncodeToString(v3), 2); err != nil || got.skip != 5 || got.made != 0 || string(got.pos) != "p" {
		t.Errorf("version 3 token: %+v %v", got, err)
	}
	for _, bad := range []string{"", "x", "mf1.abc", "mf2.", "mf2.!!", "mf2.AQ", cursorPrefix + "AgAAAAAAAAAB"} {
		if _, err := parseCursor(bad, 1); err == nil || err.Code != BadRequest {
			t.Errorf("parseCursor(%q) = %v, want 400", bad, err)
		}
	}
}

func FuzzCursor(f *testing.F) {
	f.Add(cursor{fingerprint: 5, access: plan.IndexSpan, terms: []int{1}, skip: 2, pos: []byte("pos")}.String())
	f.Add("mf2.AQ")
	f.Add(cursor{fingerprint: 5, access: plan.CompositeWalk, terms: []int{0, 1}, composite: 2, skip: 3}.String())
	f.Add(cursor{fingerprint: 5, access: plan.CompositeSpan, terms: []int{0}, composite: 1, pos: []byte("pos")}.String())
	f.Add(cursor{fingerprint: 5, access: plan.Union, skip: 1, pos: []byte("pos")}.String())
	f.Add(cursor{fingerprint: 5, access: plan.Union, terms: []int{2}, skip: 1, pos: []byte("pos")}.String())
	f.Add(cursor{fingerprint: 5, access: plan.FilteredStream, skip: 1, pos: []byte("pos")}.String())
	f.Add(cursor{fingerprint: 5, access: plan.AbsentScan, skip: 1, pos: []byte("12345678")}.String())
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseCursor(s, 5)
		if err != nil {
			if err.Code != BadRequest {
				t.Fatalf("unexpected code %v", err.Code)
			}
			return
		}
		if c.skip < 0 || !c.access.Paged() || (!c.access.Composite() && c.composite != 0) ||
			c.access == plan.Union && len(c.terms) > 1 {
			t.Fatalf("parsed an impossible cursor %+v from %q", c, s)
		}
		if again, err := parseCursor(c.String(), 5); err != nil || again.String() != c.String() {
			t.Fatalf("re-encoding %q gives %v", s, err)
		}
	})
}

func TestMarkRoundTrip(t *testing.T) {
	for _, m := range []eval.Mark{
		{Keys: []document.Value{document.Int(3)}, Doc: []byte{0, 1}, Row: 0},
		{Keys: []document.Value{document.Undef, document.Str("a\x00b"), document.Float(0.1)}, Doc: itemLoc("0A", 7), Row: 12},
		{Keys: []document.Value{document.Obj([]document.Field{{Name: "x", Value: document.Arr([]document.Value{document.NullValue()})}})}, Row: 1 << 20},
	} {
		got, _, ok := decodeMark(appendMark(nil, m), len(m.Keys))
		if !ok || got.Row != m.Row || !bytes.Equal(got.Doc, m.Doc) || len(got.Keys) != len(m.Keys) {
			t.Fatalf("round trip of %+v: %+v %v", m, got, ok)
		}
		for i := range m.Keys {
			if document.Compare(got.Keys[i], m.Keys[i]) != 0 || got.Keys[i].IsDefined() != m.Keys[i].IsDefined() {
				t.Errorf("key %d of %+v came back as %s", i, m, got.Keys[i].JSON())
			}
		}
		if _, _, ok := decodeMark(appendMark(nil, m), len(m.Keys)+1); ok {
			t.Errorf("a mark of %d keys read as one of %d", len(m.Keys), len(m.Keys)+1)
		}
	}
}

// FuzzMark: any bytes a token's position holds decode to a mark that
// encodes back to them, or are refused; never a panic.
func FuzzMark(f *testing.F) {
	f.Add(appendMark(nil, eval.Mark{Keys: []document.Value{document.Int(3), document.Undef}, Doc: []byte{1, 2}, Row: 4}), 2)
	f.Add([]byte{1, 1, 200, 1}, 1)
	f.Fuzz(func(t *testing.T, b []byte, nkeys int) {
		if nkeys < 0 || nkeys > 8 {
			return
		}
		m, _, ok := decodeMark(b, nkeys)
		if !ok {
			return
		}
		if again, _, ok := decodeMark(appendMark(nil, m), nkeys); !ok || again.Row != m.Row || !bytes.Equal(again.Doc, m.Doc) {
			t.Fatalf("re-encoding the mark of %x gives %+v %v", b, again, ok)
		}
	})
}

func TestLocOrder(t *testing.T) {
	// Locations sort by EPK as the hex strings do, then by sequence, and an
	// EPK bound (no terminator) separates the EPKs below it from the rest.
	epks := []string{"", "00", "0000", "05C1", "05C100", "3F", "3F00FF", "FF"}
	var locs [][]byte
	for _, e := range epks {
		for _, seq := range []uint64{1, 1 << 40} {
			locs = append(locs, itemLoc(e, seq))
		}
	}
	if !slices.IsSortedFunc(locs, bytes.Compare) {
		t.Fatalf("locations out of EPK order")
	}
	for _, bound := range epks {
		b := appendEPK(nil, bound, false)
		for _, e := range epks {
			loc := itemLoc(e, 1<<40)
			if got, want := bytes.Compare(loc, b) >= 0, e >= bound; got != want {
				t.Errorf("EPK %q against bound %q: at or above = %v, want %v", e, bound, got, want)
			}
		}
	}
}

func TestItemRecordRoundTrip(t *testing.T) {
	for _, noImage := range []bool{false, true} {
		r := itemRecord{ts: 1700000000, lsn: 42, ttlKind: 2, ttlSecs: 60, noImage: noImage, pk: []byte{0x50, 'a', 0, 1}, id: "it\x00em", json: []byte(`{"id":"x"}`)}
		got, err := decodeItemRecord(r.encode())
		if err != nil {
			t.Fatal(err)
		}
		if got.ts != r.ts || got.lsn != r.lsn || got.ttlKind != r.ttlKind || got.ttlSecs != r.ttlSecs || got.noImage != r.noImage ||
			!bytes.Equal(got.pk, r.pk) || got.id != r.id || !bytes.Equal(got.json, r.json) {
			t.Fatalf("got %+v, want %+v", got, r)
		}
	}
	// A record written before the flag has the bare kind in its byte: it
	// reads as one that may have an image.
	old := (&itemRecord{ts: 1, ttlKind: 2, pk: []byte("k"), id: "i", json: []byte("{}")}).encode()
	if got, err := decodeItemRecord(old); err != nil || got.noImage || got.ttlKind != 2 {
		t.Fatalf("pre-flag record: got %+v, %v", got, err)
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
