package partition

import (
	"fmt"
	"math"
	"strconv"
	"testing"
)

func TestSplitOne(t *testing.T) {
	for _, n := range []int{1, 0, -3} {
		got := Split(n)
		if len(got) != 1 || got[0] != (Range{ID: "0", Min: "", Max: "FF"}) {
			t.Errorf("Split(%d) = %+v", n, got)
		}
	}
}

func TestSplitBoundaries(t *testing.T) {
	tests := []struct {
		n    int
		want []string // the inner boundaries
	}{
		{2, []string{"2000000000000000"}},
		{3, []string{"1555555555555555", "2AAAAAAAAAAAAAAA"}},
		{4, []string{"1000000000000000", "2000000000000000", "3000000000000000"}},
	}
	for _, tt := range tests {
		got := Split(tt.n)
		for i, b := range tt.want {
			if got[i].Max != b || got[i+1].Min != b {
				t.Errorf("Split(%d) boundary %d = %s/%s, want %s", tt.n, i, got[i].Max, got[i+1].Min, b)
			}
		}
	}
}

func TestSplitCovers(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 16, 50, 1000} {
		rs := Split(n)
		if len(rs) != n || rs[0].Min != "" || rs[n-1].Max != MaxEPK {
			t.Fatalf("Split(%d): %d ranges from %q to %q", n, len(rs), rs[0].Min, rs[n-1].Max)
		}
		for i, r := range rs {
			if r.ID != strconv.Itoa(i) || r.Min >= r.Max {
				t.Fatalf("Split(%d)[%d] = %+v", n, i, r)
			}
			if i > 0 && rs[i-1].Max != r.Min {
				t.Fatalf("Split(%d): gap between %+v and %+v", n, rs[i-1], r)
			}
		}
	}
}

// Version 2 keys spread evenly: with 10,000 keys over 8 ranges each range
// gets within 15% of its share.
func TestSplitSpreadsV2(t *testing.T) {
	const n, keys = 8, 10000
	rs := Split(n)
	counts := make([]int, n)
	for i := range keys {
		epk, _ := EPK(hashV2, Key{String(fmt.Sprintf("user-%d", i))})
		r, ok := Locate(rs, epk)
		if !ok {
			t.Fatalf("no range holds %s", epk)
		}
		id, _ := strconv.Atoi(r.ID)
		counts[id]++
	}
	for i, c := range counts {
		if math.Abs(float64(c)-keys/n) > 0.15*keys/n {
			t.Errorf("range %d holds %d of %d keys: %v", i, c, keys, counts)
		}
	}
}

// Version 1 keys all fall into the range of Split's that holds 05C1.
func TestSplitHoldsV1InOneRange(t *testing.T) {
	for _, n := range []int{4, 11, 50} {
		rs := Split(n)
		want, _ := Locate(rs, "05C1")
		for i := range 200 {
			for _, c := range []Component{String(fmt.Sprint("k", i)), Number(float64(i))} {
				epk, _ := EPK(hashV1, Key{c})
				if r, _ := Locate(rs, epk); r.ID != want.ID {
					t.Errorf("n=%d: %s (%s) in range %s, want %s", n, Key{c}, epk, r.ID, want.ID)
				}
			}
		}
		if n <= 11 && want.ID != "0" {
			t.Errorf("n=%d: 05C1 in range %s", n, want.ID)
		}
	}
}

func TestLocate(t *testing.T) {
	rs := Split(4)
	tests := []struct {
		epk  string
		want string
		ok   bool
	}{
		{"", "0", true},
		{"0FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "0", true},
		{"1000000000000000", "1", true},
		{"10000000000000000000000000000000", "1", true},
		{"3FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "3", true},
		{"EF", "3", true},
		{"FF", "", false},
		{"FF00", "", false},
	}
	for _, tt := range tests {
		r, ok := Locate(rs, tt.epk)
		if ok != tt.ok || r.ID != tt.want {
			t.Errorf("Locate(%q) = %+v, %v; want %s, %v", tt.epk, r, ok, tt.want, tt.ok)
		}
	}
	if _, ok := Locate(nil, ""); ok {
		t.Error("Locate in no ranges found one")
	}
	gap := []Range{{ID: "0", Min: "", Max: "10"}, {ID: "1", Min: "20", Max: "FF"}}
	if r, ok := Locate(gap, "15"); ok {
		t.Errorf("Locate in a gap = %+v", r)
	}
}

func TestOverlapping(t *testing.T) {
	rs := Split(4)
	ids := func(rs []Range) string {
		s := ""
		for _, r := range rs {
			s += r.ID
		}
		return s
	}
	tests := []struct {
		min, max string
		want     string
	}{
		{"", "FF", "0123"},
		{"", "1000000000000000", "0"},
		{"", "1000000000000001", "01"},
		{"0FFF", "2000000000000000", "01"},
		{"2000000000000000", "2000000000000000FF", "2"},
		{"3", "FF", "23"}, // "3" sorts below "3000000000000000"
		{"3000000000000000", "FF", "3"},
		{"3", "3", ""},
		{"4", "3", ""},
	}
	for _, tt := range tests {
		if got := ids(Overlapping(rs, tt.min, tt.max)); got != tt.want {
			t.Errorf("Overlapping(%q, %q) = %s, want %s", tt.min, tt.max, got, tt.want)
		}
	}
	// A MultiHash prefix lies in the range of its full keys.
	min, max, _ := EPKRange(multiHash, Key{String("tenant")})
	full, _ := EPK(multiHash, Key{String("tenant"), String("u"), Number(1)})
	r, _ := Locate(rs, full)
	if got := Overlapping(rs, min, max); len(got) != 1 || got[0] != r {
		t.Errorf("prefix [%s, %s) overlaps %+v, want %+v", min, max, got, r)
	}
}

// TestSplitV1 checks that version 1 keys spread over SplitV1's ranges by
// their hash: each key's EPK lies in the range whose bounds hold its hash,
// and 4,000 keys fill each of four ranges by about a quarter. The bounds
// of five ranges are those the Cosmos DB emulator gives a container with a
// version 1 key.
func TestSplitV1Spreads(t *testing.T) {
	const n, keys = 4, 4000
	ranges := SplitV1(n)
	counts := make([]int, n)
	for i := range keys {
		k := Key{String(fmt.Sprintf("key-%d", i))}
		epk, err := EPK(hashV1, k)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := Locate(ranges, epk)
		if !ok {
			t.Fatalf("no range holds %s", epk)
		}
		h := Murmur3x86_32(appendHashInput(nil, k[0], 0x00), 0)
		if want := strconv.Itoa(int(uint64(h) * n >> 32)); r.ID != want {
			t.Errorf("key %v, hash %d: range %s, want %s", k, h, r.ID, want)
		}
		counts[r.ID[0]-'0']++
	}
	for i, c := range counts {
		if c < keys/n*8/10 || c > keys/n*12/10 {
			t.Errorf("range %d holds %d of %d keys", i, c, keys)
		}
	}
	var bounds []string
	for _, r := range SplitV1(5)[1:] {
		bounds = append(bounds, r.Min)
	}
	if got := fmt.Sprint(bounds); got != "[05C1C9CD673398 05C1D9CD673398 05C1E399CD6732 05C1E9CD673398]" {
		t.Errorf("SplitV1(5) bounds %s", got)
	}
}
