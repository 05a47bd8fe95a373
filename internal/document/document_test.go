package document

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	tests := []struct{ in, out string }{
		{`{"b":1,"a":2}`, `{"b":1,"a":2}`},
		{`9223372036854775807`, `9223372036854775807`},
		{`-9223372036854775808`, `-9223372036854775808`},
		{`1.5`, `1.5`},
		{`0.1`, `0.1`},
		{`1e300`, `1e+300`},
		{`1.0`, `1`},
		{`1e-7`, `1e-7`},
		{`123456789012345678901234567890`, `1.2345678901234568e+29`},
		{`"a\"b\\c\n\u0001<>&"`, `"a\"b\\c\n\u0001<>&"`},
		{`"\ud83d\ude00"`, `"😀"`},
		{` [ 1 , true , false , null , "x" , [] , {} ] `, `[1,true,false,null,"x",[],{}]`},
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`-0`, `0`},
	}
	for _, tt := range tests {
		v, err := Parse([]byte(tt.in))
		if err != nil {
			t.Errorf("Parse(%s): %v", tt.in, err)
			continue
		}
		if got := string(v.JSON()); got != tt.out {
			t.Errorf("Parse(%s) = %s, want %s", tt.in, got, tt.out)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{``, `{`, `[1,]`, `{"a"}`, `{"a":1,}`, `01`, `1.`, `1e`, `tru`, `"abc`, "\"a\x01\"", `{} x`, `1e400`, `"\x"`, `"\u12"`, `[1 2]`, `{a:1}`, `-`, `.5`} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", in)
		}
	}
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	if _, err := Parse([]byte(deep)); !errors.Is(err, ErrTooDeep) {
		t.Errorf("deep input: %v, want ErrTooDeep", err)
	}
}

func TestCompareOrder(t *testing.T) {
	ordered := []string{`null`, `false`, `true`, `-1.5`, `-1`, `0`, `1`, `1.5`, `9223372036854775806`, `9223372036854775807`, `""`, `"A"`, `"a"`, `"b"`, `[]`, `[1]`, `[1,2]`, `[2]`, `{}`, `{"a":1}`}
	vals := []Value{Undef}
	for _, s := range ordered {
		v, err := Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, v)
	}
	for i := range vals {
		for j := range vals {
			want := cmpInt(i, j)
			if got := Compare(vals[i], vals[j]); got != want {
				t.Errorf("Compare(%v, %v) = %d, want %d", vals[i], vals[j], got, want)
			}
		}
	}
}

func TestEqual(t *testing.T) {
	a, _ := Parse([]byte(`{"x":1,"y":[1,2.0]}`))
	b, _ := Parse([]byte(`{"y":[1.0,2],"x":1.0}`))
	if !Equal(a, b) {
		t.Error("objects with reordered properties and 1 vs 1.0 should be equal")
	}
	if Equal(Undef, Undef) {
		t.Error("undefined equals nothing")
	}
}

func TestPath(t *testing.T) {
	v, _ := Parse([]byte(`{"a":{"b c":{"d":5}}}`))
	p, err := ParsePath(`/a/"b c"/d`)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.At(p); got.Int() != 5 {
		t.Errorf("At = %v", got)
	}
	for _, tc := range []struct {
		path string
		want []string
	}{
		{`/a/b`, []string{"a", "b"}},
		{`/"level' 1*()"/"le/vel2"`, []string{"level' 1*()", "le/vel2"}},
		{`/'level" 1*()'/'le/vel2'`, []string{`level" 1*()`, "le/vel2"}},
		{`/'it\'s'/x`, []string{`it\'s`, "x"}},
	} {
		got, err := ParsePath(tc.path)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParsePath(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "/", "a", "//a", `/"a`, `/'a`, `/'a\'`, `/'a'b`} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) succeeded", bad)
		}
	}
}

func TestWith(t *testing.T) {
	v, _ := Parse([]byte(`{"a":1,"b":2}`))
	if got := v.With("a", Int(3)).With("c", Str("x")).Without("b").String(); got != `{"a":3,"c":"x"}` {
		t.Errorf("got %s", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"\u00e9"`, `-1.5e10`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			return
		}
		// What we write we must read back to an equal value.
		out := v.JSON()
		w, err := Parse(out)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
		if Compare(v, w) != 0 {
			t.Fatalf("round trip changed %s into %s", out, w.JSON())
		}
	})
}

// BenchmarkParse parses a stored item of about 400 bytes: a few properties,
// the system properties, and one nested object and array.
func BenchmarkParse(b *testing.B) {
	doc := []byte(`{"id":"a12345","pk":"tenant-42","ttl":3600,"payload":"` + strings.Repeat("x", 200) +
		`","tags":["red","green"],"owner":{"name":"Ada","age":36},` +
		`"_rid":"AAAAAAAAAAABAAAAAAAAAA==","_self":"dbs/AAAAAA==/colls/AAAAAAAAAAA=/docs/AAAAAAAAAAABAAAAAAAAAA==/",` +
		`"_etag":"\"0000000000000001\"","_attachments":"attachments/","_ts":1700000000}`)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseConcurrent: parses share pooled stacks, one parse at a time
// each; values from parallel parses must never share or lose members.
func TestParseConcurrent(t *testing.T) {
	docs := make([][]byte, 8)
	for i := range docs {
		docs[i] = []byte(fmt.Sprintf(`{"id":"d%d","a":[%d,{"b":[%d,%d]},"x"],"n":{"m":{"k":%d}},"z":[]}`, i, i, i, i+1, i))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 500 {
				want := docs[(g+n)%len(docs)]
				v, err := Parse(want)
				if err != nil {
					t.Errorf("Parse(%s): %v", want, err)
					return
				}
				if got := v.JSON(); string(got) != string(want) {
					t.Errorf("Parse(%s) wrote back %s", want, got)
					return
				}
			}
		})
	}
	wg.Wait()
}

// Floats past the int64 range compare beyond every int64: int64(f) of
// 2^63 is the least int64, not the greatest.
func TestCompareNumbersAtTheInt64Bounds(t *testing.T) {
	const two63 = 9223372036854775808.0
	tests := []struct {
		a, b Value
		want int
	}{
		{FloatExact(two63), Int(0), 1},
		{FloatExact(two63), Int(math.MaxInt64), 1},
		{FloatExact(9.25e18), Int(-5), 1},
		{FloatExact(1e19), Int(1), 1},
		{Int(math.MinInt64), FloatExact(two63), -1},
		{FloatExact(-two63), Int(math.MinInt64), 0},
		{FloatExact(-9.25e18), Int(math.MinInt64), -1},
		{FloatExact(-1e19), Int(0), -1},
		{FloatExact(9.2e18), Int(9200000000000000000), 0},
		{FloatExact(9.2e18), Int(9200000000000000001), -1},
	}
	for _, tt := range tests {
		if got := CompareNumbers(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareNumbers(%v, %v) = %d, want %d", tt.a.Float(), tt.b.Int(), got, tt.want)
		}
		if got := CompareNumbers(tt.b, tt.a); got != -tt.want {
			t.Errorf("CompareNumbers(%v, %v) = %d, want %d", tt.b.Int(), tt.a.Float(), got, -tt.want)
		}
	}
}
