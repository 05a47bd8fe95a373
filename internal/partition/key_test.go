package partition

import (
	"bytes"
	"math"
	"testing"
)

// Keys in ascending order, no two equal.
var orderedKeys = []Key{
	{},
	{Undefined()},
	{Undefined(), Undefined()},
	{Undefined(), Null()},
	{Null()},
	{Bool(false)},
	{Bool(true)},
	{Number(math.Inf(-1))},
	{Number(-math.MaxFloat64)},
	{Number(-1)},
	{Number(-math.SmallestNonzeroFloat64)},
	{Number(0)},
	{Number(math.SmallestNonzeroFloat64)},
	{Number(0.5)},
	{Number(5)},
	{Number(9007199254740992)},
	{Number(math.MaxFloat64)},
	{Number(math.Inf(1))},
	{String("")},
	{String(""), Undefined()},
	{String(""), String("")},
	{String("\x00")},
	{String("\x00\x00")},
	{String("\x00a")},
	{String("\x01")},
	{String("a")},
	{String("a"), Null()},
	{String("a"), String("b")},
	{String("a\x00")},
	{String("a\x00"), Null()},
	{String("ab")},
	{String("b")},
	{String("é")},
	{String("😀")},
}

func TestAppendKeyBytesOrder(t *testing.T) {
	for i := range orderedKeys {
		a := AppendKeyBytes(nil, orderedKeys[i])
		for j := range orderedKeys {
			b := AppendKeyBytes(nil, orderedKeys[j])
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			if got := bytes.Compare(a, b); got != want {
				t.Errorf("Compare(%s %x, %s %x) = %d, want %d", orderedKeys[i], a, orderedKeys[j], b, got, want)
			}
			if eq := orderedKeys[i].Equal(orderedKeys[j]); eq != (i == j) {
				t.Errorf("%s.Equal(%s) = %v", orderedKeys[i], orderedKeys[j], eq)
			}
		}
	}
}

func TestAppendKeyBytesEqualValues(t *testing.T) {
	tests := []struct{ a, b Key }{
		{Key{Number(5)}, Key{Number(5.0)}},
		{Key{Number(0)}, Key{Number(math.Copysign(0, -1))}},
		{Key{Number(math.NaN())}, Key{Number(math.Float64frombits(0x7ff8000000000001))}},
		{Key{Component{Kind: 9, Str: "x"}}, Key{Undefined()}},
		{Key{Component{Kind: KindNull, Str: "ignored", Num: 3}}, Key{Null()}},
		{Key{Component{Kind: KindString, Str: "s", Num: 3, Bool: true}}, Key{String("s")}},
		{nil, Key{}},
	}
	for _, tt := range tests {
		a, b := AppendKeyBytes(nil, tt.a), AppendKeyBytes(nil, tt.b)
		if !bytes.Equal(a, b) || !tt.a.Equal(tt.b) {
			t.Errorf("%#v and %#v: bytes %x and %x, Equal %v", tt.a, tt.b, a, b, tt.a.Equal(tt.b))
		}
	}
}

// The encoding of a prefix is a byte prefix of the full key's encoding, and
// AppendKeyBytes appends.
func TestAppendKeyBytesPrefix(t *testing.T) {
	k := Key{String("tenant\x00"), Number(-3), Null()}
	full := AppendKeyBytes([]byte("p/"), k)
	for n := 0; n <= len(k); n++ {
		p := AppendKeyBytes([]byte("p/"), k[:n])
		if !bytes.HasPrefix(full, p) {
			t.Errorf("encoding of %s is not a prefix of %s's", k[:n], k)
		}
	}
}

func TestComponentKindString(t *testing.T) {
	for k, want := range map[ComponentKind]string{
		KindUndefined: "undefined", KindNull: "null", KindBool: "boolean",
		KindNumber: "number", KindString: "string", 7: "invalid",
	} {
		if got := k.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", k, got, want)
		}
	}
}
