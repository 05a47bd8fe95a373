package partition

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseHeader(t *testing.T) {
	tests := []struct {
		in   string
		want Key
	}{
		{`[]`, Key{}},
		{` [ ] `, Key{}},
		{`["a"]`, Key{String("a")}},
		{`[""]`, Key{String("")}},
		{`[5]`, Key{Number(5)}},
		{`[5.0]`, Key{Number(5)}},
		{`[-2.5e-3]`, Key{Number(-0.0025)}},
		{`[1.5e+300]`, Key{Number(1.5e300)}},
		{`[1E2]`, Key{Number(100)}},
		{`[-0]`, Key{Number(0)}},
		{`[1e-400]`, Key{Number(0)}},
		{`[9223372036854775807]`, Key{Number(9223372036854775807)}},
		{`[true]`, Key{Bool(true)}},
		{`[false]`, Key{Bool(false)}},
		{`[null]`, Key{Null()}},
		{`[{}]`, Key{Undefined()}},
		{`[{ }]`, Key{Undefined()}},
		{`["tenant","user"]`, Key{String("tenant"), String("user")}},
		{"[ \"t\" ,\t1 ,\r\nnull, {} ,false]", Key{String("t"), Number(1), Null(), Undefined(), Bool(false)}},
		// JSON escapes, as JS sends them.
		{`["caf\u00e9"]`, Key{String("café")}},
		{`["\ud83d\ude00"]`, Key{String("😀")}},
		{`["\"\\\/\b\f\n\r\t"]`, Key{String("\"\\/\b\f\n\r\t")}},
		{`["\ud800"]`, Key{String("\uFFFD")}},
		{`["\udc00x"]`, Key{String("\uFFFDx")}},
		{`["\ud800\u0041"]`, Key{String("\uFFFDA")}},
		{`["\ud800\ud800\udc00"]`, Key{String("\uFFFD𐀀")}},
		{"[\"raw é\"]", Key{String("raw é")}},
		{"[\"bad \xff byte\"]", Key{String("bad \uFFFD byte")}},
		// Go literals, as strconv.QuoteToASCII writes them.
		{`["\U0001f600"]`, Key{String("😀")}},
		{`["\x01"]`, Key{String("\x01")}},
		{`["\a\v"]`, Key{String("\a\v")}},
		{`["caf\u00e9 \U0001f600", 7]`, Key{String("café 😀"), Number(7)}},
		{`["\xff"]`, Key{String("\uFFFD")}},
		{`["\101"]`, Key{String("A")}},
		// Each element falls back on its own.
		{`["\ud83d\ude00", "\U0001f600"]`, Key{String("😀"), String("😀")}},
	}
	for _, tt := range tests {
		got, err := ParseHeader(tt.in)
		if err != nil {
			t.Errorf("ParseHeader(%q): %v", tt.in, err)
			continue
		}
		if got == nil || !got.Equal(tt.want) {
			t.Errorf("ParseHeader(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

func TestParseHeaderErrors(t *testing.T) {
	for _, in := range []string{
		``, ` `, `a`, `"a"`, `5`, `{}`, `null`,
		`[`, `]`, `[,]`, `[1,]`, `[,1]`, `[1 2]`, `[1;2]`, `["a"] x`, `[]]`, `[][]`,
		`[01]`, `[1.]`, `[.5]`, `[+1]`, `[1e]`, `[1e+]`, `[-]`, `[--1]`, `[0x10]`,
		`[1e400]`, `[-1e400]`, `[NaN]`, `[Infinity]`, `[-Infinity]`,
		`["a"`, `["a]`, `["a\"]`, `["\q"]`, `["\u12"]`, `["\u12G4"]`, "[\"a\nb\"]",
		`[[1]]`, `[[]]`, `[{"a":1}]`, `[{]`, `[{}`, `[nul]`, `[nulll]`, `[True]`, `[undefined]`,
	} {
		k, err := ParseHeader(in)
		if err == nil {
			t.Errorf("ParseHeader(%q) = %v, want an error", in, k)
			continue
		}
		if !errors.Is(err, ErrHeader) {
			t.Errorf("ParseHeader(%q) error %v does not wrap ErrHeader", in, err)
		}
	}
}

func TestKeyString(t *testing.T) {
	tests := []struct {
		k    Key
		want string
	}{
		{Key{}, `[]`},
		{nil, `[]`},
		{Key{Undefined()}, `[{}]`},
		{Key{Null(), Bool(true), Bool(false)}, `[null,true,false]`},
		{Key{String("a"), String("b")}, `["a","b"]`},
		{Key{String("q\"b\\s/\n\r\t\b\f\x01\x7f")}, `["q\"b\\s/\n\r\t\b\f\u0001\u007f"]`},
		{Key{String("café 😀")}, `["caf\u00e9 \ud83d\ude00"]`},
		{Key{String("bad \xff")}, `["bad \ufffd"]`},
		{Key{Number(math.NaN()), Number(math.Inf(-1))}, `[null,null]`},
		{Key{Component{Kind: 42}}, `[{}]`},
	}
	for _, tt := range tests {
		if got := tt.k.String(); got != tt.want {
			t.Errorf("%#v.String() = %s, want %s", tt.k, got, tt.want)
		}
	}
}

// Numbers are printed as JavaScript prints them.
func TestAppendNumber(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{5, "5"},
		{-5, "-5"},
		{0.1, "0.1"},
		{-2.5, "-2.5"},
		{123.456, "123.456"},
		{1e20, "100000000000000000000"},
		{1e21, "1e+21"},
		{1.5e300, "1.5e+300"},
		{0.000001, "0.000001"},
		{1e-7, "1e-7"},
		{1.5e-7, "1.5e-7"},
		{5e-324, "5e-324"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{9007199254740992, "9007199254740992"},
		{9223372036854775807, "9223372036854776000"},
		{123456789012345680000, "123456789012345680000"},
	}
	for _, tt := range tests {
		if got := string(appendNumber(nil, tt.f)); got != tt.want {
			t.Errorf("appendNumber(%v) = %s, want %s", tt.f, got, tt.want)
		}
	}
}

// Every string the Go SDK can send parses back to itself.
func TestParseHeaderGoQuoted(t *testing.T) {
	for _, s := range []string{
		"", "plain", "tab\there", "nul\x00", "bell\a", "del\x7f", "é", "日本", "😀", "\U0010FFFF",
		"\u2028", "\uFFFD", "a\"b\\c", strings.Repeat("x", 3000), "mixed é😀\x01\v",
	} {
		h := "[" + strconv.QuoteToASCII(s) + "]"
		k, err := ParseHeader(h)
		if err != nil {
			t.Errorf("ParseHeader(%s): %v", h, err)
			continue
		}
		if !k.Equal(Key{String(s)}) {
			t.Errorf("ParseHeader(%s) = %q, want %q", h, k[0].Str, s)
		}
	}
}

func FuzzParseHeader(f *testing.F) {
	for _, s := range []string{
		`[]`, `["a"]`, `[5]`, `[1.5e+300]`, `[null]`, `[{}]`, `[true,false]`, `["t","u","v"]`,
		`["\U0001f600"]`, `["\x01"]`, `["\ud83d\ude00"]`, `["\ud800"]`, `[-0]`, `[1e400]`, `[{"a":1}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseHeader(s)
		if err != nil {
			if !errors.Is(err, ErrHeader) {
				t.Fatalf("error %v does not wrap ErrHeader", err)
			}
		} else {
			// The canonical form parses back to an equal key, and the
			// storage encoding does not change across the round trip.
			out := k.String()
			k2, err := ParseHeader(out)
			if err != nil {
				t.Fatalf("ParseHeader(%q) -> %s: %v", s, out, err)
			}
			if !k2.Equal(k) || !bytes.Equal(AppendKeyBytes(nil, k), AppendKeyBytes(nil, k2)) {
				t.Fatalf("round trip %q -> %s -> %#v, want %#v", s, out, k2, k)
			}
			if k2.String() != out {
				t.Fatalf("canonical form not stable: %s then %s", out, k2.String())
			}
			for _, c := range k {
				if c.Kind == KindString && !utf8.ValidString(c.Str) {
					t.Fatalf("ParseHeader(%q) produced invalid UTF-8 %q", s, c.Str)
				}
			}
		}
		// What encoding/json accepts as an array of key values, we accept
		// with the same values.
		var vals []any
		if json.Unmarshal([]byte(s), &vals) != nil || vals == nil {
			return
		}
		want := Key{}
		for _, v := range vals {
			switch v := v.(type) {
			case nil:
				want = append(want, Null())
			case bool:
				want = append(want, Bool(v))
			case float64:
				want = append(want, Number(v))
			case string:
				want = append(want, String(v))
			case map[string]any:
				if len(v) != 0 {
					return
				}
				want = append(want, Undefined())
			default:
				return
			}
		}
		if err != nil {
			t.Fatalf("ParseHeader(%q): %v; encoding/json accepts it", s, err)
		}
		if !k.Equal(want) {
			t.Fatalf("ParseHeader(%q) = %#v, encoding/json gives %#v", s, k, want)
		}
	})
}
