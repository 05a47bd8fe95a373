package vector

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
)

func val(t *testing.T, s string) document.Value {
	t.Helper()
	v, err := document.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestScore(t *testing.T) {
	for _, tc := range []struct {
		f    Function
		a, b string
		want float64
		ok   bool
	}{
		// The emulator's values for [1,2,3] against [2,3,4].
		{Cosine, "[1,2,3]", "[2,3,4]", 0.9925833339709302, true},
		{DotProduct, "[1,2,3]", "[2,3,4]", 20, true},
		{Euclidean, "[1,2,3]", "[2,3,4]", math.Sqrt(3), true},
		{Cosine, "[3,4]", "[3,4]", 1, true},
		{Euclidean, "[0.5]", "[0.5]", 0, true},
		{Cosine, "[0,0]", "[1,1]", 0, false},
		{DotProduct, "[0,0]", "[1,1]", 0, true},
		{Cosine, "[1,2]", "[1,2,3]", 0, false},
		{Cosine, "[]", "[]", 0, false},
		{Cosine, "[1,\"2\"]", "[1,2]", 0, false},
		{Cosine, "[[1],[2]]", "[[1],[2]]", 0, false},
		{Euclidean, `"AQID"`, "[1,2,3]", 0, false},
		{DotProduct, "[1e308,1e308]", "[1e308,1e308]", 0, false},
	} {
		got, ok := Score(tc.f, val(t, tc.a), val(t, tc.b))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%v(%s, %s) = %v, %v; want %v, %v", tc.f, tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseFunction(t *testing.T) {
	for name, want := range map[string]Function{"cosine": Cosine, "DotProduct": DotProduct, "EUCLIDEAN": Euclidean} {
		if f, ok := ParseFunction(name); !ok || f != want {
			t.Errorf("ParseFunction(%q) = %v, %v", name, f, ok)
		}
	}
	if _, ok := ParseFunction("manhattan"); ok {
		t.Error("manhattan parsed")
	}
	if Euclidean.Descending() || !Cosine.Descending() || !DotProduct.Descending() {
		t.Error("most similar first: highest for cosine and the dot product, lowest for Euclidean")
	}
}

// A replace compares policies as the service keeps them: absent, null and
// empty are one.
func TestCheckReplace(t *testing.T) {
	p := `{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":3,"distanceFunction":"cosine"}]}`
	ix := `[{"path":"/v","type":"flat"}]`
	for _, tc := range []struct {
		oldP, newP, oldIx, newIx string
		ok                       bool
	}{
		{p, p, ix, ix, true},
		{"", "null", "", "[]", true},
		{`{"vectorEmbeddings":[]}`, "", "null", "", true},
		{p, `{"vectorEmbeddings":[]}`, ix, ix, false},
		{"", p, "", "", false},
		{p, p, ix, `[{"path":"/v","type":"diskANN"}]`, false},
		{p, p, ix, "", false},
	} {
		v := func(s string) document.Value {
			if s == "" {
				return document.Undef
			}
			return val(t, s)
		}
		err := CheckReplace(v(tc.oldP), v(tc.newP), v(tc.oldIx), v(tc.newIx))
		if (err == nil) != tc.ok {
			t.Errorf("%s -> %s, %s -> %s: %v", tc.oldP, tc.newP, tc.oldIx, tc.newIx, err)
		}
	}
}

// TestScoreStored checks that a stored vector scores as its document does,
// bit for bit, with the stored vector on either side of the call.
func TestScoreStored(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + rng.IntN(40)
		a, b := make([]document.Value, n), make([]document.Value, n)
		for i := range n {
			a[i], b[i] = document.Float(rng.NormFloat64()*1e3), document.Float(rng.NormFloat64())
			if rng.IntN(5) == 0 {
				a[i] = document.Int(int64(rng.IntN(7) - 3))
			}
		}
		av, bv := document.Arr(a), document.Arr(b)
		stored, ok := Store(nil, av)
		if !ok {
			t.Fatalf("Store(%s) refused", av.JSON())
		}
		for _, f := range []Function{Cosine, DotProduct, Euclidean} {
			q, ok := NewQuery(f, bv)
			if !ok {
				t.Fatalf("NewQuery(%s) refused", bv.JSON())
			}
			want, wok := Score(f, av, bv)
			got, gok := q.Score(stored)
			back, bok := Score(f, bv, av)
			if gok != wok || got != want || bok != wok || back != want {
				t.Fatalf("%v: Score %v %v, reversed %v %v, ScoreStored %v %v", f, want, wok, back, bok, got, gok)
			}
		}
	}
	for _, s := range []string{`[]`, `[1,"2"]`, `"AQID"`, `{"a":1}`, `[[1]]`} {
		if _, ok := Store(nil, val(t, s)); ok {
			t.Errorf("Store(%s) stored", s)
		}
		if _, ok := NewQuery(Cosine, val(t, s)); ok {
			t.Errorf("NewQuery(%s) read", s)
		}
	}
	if q, _ := NewQuery(Cosine, val(t, "[1,1]")); q == nil {
		t.Error("NewQuery([1,1]) refused")
	} else if stored, _ := Store(nil, val(t, "[0,0]")); stored == nil {
		t.Error("Store([0,0]) refused")
	} else if _, ok := q.Score(stored); ok {
		t.Error("the cosine of a vector of zeros scored")
	}
	if q, _ := NewQuery(Cosine, val(t, "[1]")); q == nil {
		t.Error("NewQuery([1]) refused")
	} else if _, ok := q.Score(make([]byte, 16)); ok {
		t.Error("a stored vector of another length scored")
	}
}
