package vector

import (
	"math"
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
