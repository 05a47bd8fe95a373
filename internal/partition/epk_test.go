package partition

import (
	"errors"
	"math"
	"strings"
	"testing"
)

var (
	hashV1    = Definition{Paths: []string{"/pk"}, Kind: Hash}
	hashV2    = Definition{Paths: []string{"/pk"}, Kind: Hash, Version: 2}
	multiHash = Definition{Paths: []string{"/a", "/b", "/c"}, Kind: MultiHash, Version: 2}
)

// The vectors of docs/protocol.md §5.2, which the Go and JS SDKs agree on.
func TestEPKProtocolVectors(t *testing.T) {
	tests := []struct {
		name string
		def  Definition
		k    Key
		want string
	}{
		{"v2 asdf", hashV2, Key{String("asdf")}, "208BF1D598F5B63AD5520F04FE58C5E8"},
		{"v2 empty string", hashV2, Key{String("")}, "32E9366E637A71B4E710384B2F4970A0"},
		{"v2 5", hashV2, Key{Number(5)}, "19C08621B135968252FB34B4CF66F811"},
		{"v2 null", hashV2, Key{Null()}, "378867E4430E67857ACE5C908374FE16"},
		{"v2 undefined", hashV2, Key{Undefined()}, "11622DAA78F835834610ABE56EFF5CB5"},
		{"v2 true", hashV2, Key{Bool(true)}, "0E711127C5B5A8E4726AC6DD306A3E59"},
		{"multihash a b", multiHash, Key{String("a"), String("b")}, "3A5381E1114EB8D3FCC90795045B49B7195644569A78B1E22D200348AF9416CE"},
		{"v1 asdf", hashV1, Key{String("asdf")}, "05C1E7035DAF84086274656700"},
		{"v1 empty string", hashV1, Key{String("")}, "05C1CF33970FF80800"},
		{"v1 5", hashV1, Key{Number(5)}, "05C1D9C1C5517C05C014"},
		{"v1 true", hashV1, Key{Bool(true)}, "05C1D7C5A903D803"},
		{"v1 null", hashV1, Key{Null()}, "05C1ED45D7475601"},
		{"v1 undefined", hashV1, Key{Undefined()}, "05C1D529E345DC00"},
		{"v1 explicit version", Definition{Paths: []string{"/pk"}, Version: 1}, Key{String("asdf")}, "05C1E7035DAF84086274656700"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EPK(tt.def, tt.k)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("EPK = %s, want %s", got, tt.want)
			}
		})
	}
}

// The SDKs' partition-key hash baselines give version 2 hashes before the top
// two bits are cleared; mask them here.
func TestEPKV2Baselines(t *testing.T) {
	a := func(n int) Component { return String(strings.Repeat("a", n)) }
	tests := []struct {
		k        Key
		unmasked string
	}{
		{Key{String("")}, "B2E9366E637A71B4E710384B2F4970A0"},
		{Key{String("asdf")}, "608BF1D598F5B63AD5520F04FE58C5E8"},
		{Key{a(99)}, "3C02F609961C32AAC2B912B940D1209A"},
		{Key{a(100)}, "8DBD7D229437BB665DE6417747994D57"},
		{Key{a(101)}, "88042541D30C8BF90D7092B1519AE0BC"},
		{Key{a(2048)}, "B3E0AE996F53F2CD5DD5574ACAB3BF19"},
		{Key{Number(0)}, "555B95BEDAC4B1E9EC1CDC9BB0DDDE58"},
		{Key{Number(1)}, "A0CD98B339BA78A5D0CF6953B87070B0"},
		{Key{Number(-1)}, "59938E7A936C1C5B9E3AE842BBC16839"},
		{Key{Number(5e-324)}, "0E6CBA63A280927DE485DEF865800139"},
		{Key{Number(math.MaxFloat64)}, "71424D996457102634591FF245DBCC4D"},
		{Key{Number(-math.MaxFloat64)}, "27050CC4910CFD9DACE1283D3801DF25"},
		{Key{Number(9223372036854775807)}, "6EDB959178DFCCA18983F89384D1629B"},
		{Key{Number(9223372036854775806)}, "6EDB959178DFCCA18983F89384D1629B"},
		{Key{Number(-9223372036854775808)}, "63D5C6395512BDFEAFADAD15328AD2BB"},
		{Key{Number(9007199254740991)}, "12C221C7032CED1F9E6693CE1428E6CF"},
		{Key{Number(9007199254740990)}, "8FEA3467D94AA6E4628EF0B248C1FD9B"},
		{Key{Number(9007199254740992)}, "55335910D01122E3D99DA5DE569B065D"},
		{Key{Number(math.NaN())}, "5AA4222583D70ECAA0922D8CA8EDFCB1"},
		{Key{Number(math.Inf(1))}, "3889F7F08A8CE2A5C9829BBB1944B4FF"},
		{Key{Number(math.Inf(-1))}, "5B63B3FB266DB3B6CD3BC79FE893CDE8"},
		{Key{Undefined()}, "51622DAA78F835834610ABE56EFF5CB5"},
		{Key{Null()}, "778867E4430E67857ACE5C908374FE16"},
		{Key{Bool(true)}, "4E711127C5B5A8E4726AC6DD306A3E59"},
		{Key{Bool(false)}, "EFE1BE91E90A3439635E0E9E37361EF2"},
	}
	for _, tt := range tests {
		got, err := EPK(hashV2, tt.k)
		if err != nil {
			t.Fatal(err)
		}
		if want := mask(tt.unmasked); got != want {
			t.Errorf("EPK(%s) = %s, want %s", tt.k, got, want)
		}
	}

	// MultiHash masks each component's hash on its own.
	paths := Key{String("/path1"), String("/path2"), String("/path3")}
	unmasked := []string{"B499FD5198AE0F1EB6B77F6E428D2FF0", "E7A1848BD1102A3B65AFF266874D0FF5", "ECA5ABC953544CF9BD94776DA5E6EA52"}
	for n := 1; n <= 3; n++ {
		var want string
		for _, u := range unmasked[:n] {
			want += mask(u)
		}
		got, err := EPK(multiHash, paths[:n])
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("MultiHash EPK of %d components = %s, want %s", n, got, want)
		}
	}
}

// Version 2 keys as the JS SDK computes them.
func TestEPKV2JS(t *testing.T) {
	tests := []struct {
		k    Component
		want string
	}{
		{Bool(false), "2FE1BE91E90A3439635E0E9E37361EF2"},
		{Number(-1), "19938E7A936C1C5B9E3AE842BBC16839"},
		{Number(0), "155B95BEDAC4B1E9EC1CDC9BB0DDDE58"},
		{Number(1.5), "35C5DDEB6C795D16A9963C73C54E97BC"},
		{Number(1e300), "1234CB21048B20039B22F11DBB13CD7B"},
		{Number(-1e-300), "008D981CC43BD8DEB26B978136F0811C"},
		{Number(123456789), "1F56D2538088EBA82CCF988F36E16760"},
		{String(strings.Repeat("a", 150)), "319C4E8C8F7247700B7F8E38B72390B6"},
		{String(strings.Repeat("é", 40)), "341989B5942C57AA1A8025DDF22D04A3"},
		{String(strings.Repeat("é", 60)), "3ABA5DCC7655B85B22DF2D0454928E02"},
		{String(strings.Repeat("😀", 60)), "260FBD44EF1B0EDBDFC677191331C06E"},
		{String("x" + strings.Repeat("😀", 50)), "219BB22A4548CCA6866B1AD1C3F78884"},
		{String("日本語"), "3F0624929BDE45571F050DCA6A1CB775"},
	}
	for _, tt := range tests {
		got, err := EPK(hashV2, Key{tt.k})
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("EPK(%s) = %s, want %s", Key{tt.k}, got, tt.want)
		}
	}
}

func mask(unmasked string) string {
	const hex = "0123456789ABCDEF"
	hi := strings.IndexByte(hex, unmasked[0]) & 0x3
	return string(hex[hi]) + unmasked[1:]
}

// Negative zero hashes as zero (see the package comment); the baseline for
// the bits of -0 still holds for the hash function itself.
func TestEPKNegativeZero(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, def := range []Definition{hashV1, hashV2, multiHash} {
		a, _ := EPK(def, Key{Number(negZero)})
		b, _ := EPK(def, Key{Number(0)})
		if a != b {
			t.Errorf("%+v: EPK(-0) = %s, EPK(0) = %s", def, a, b)
		}
	}
	in := []byte{markNumber, 0, 0, 0, 0, 0, 0, 0, 0x80}
	h1, h2 := Murmur3x64_128(in, 0)
	if h2 != 0x3d018bb1df3db272 || h1 != 0x35766e81fd10406e {
		t.Errorf("hash of -0 = %016X%016X, want 3D018BB1DF3DB27235766E81FD10406E", h2, h1)
	}
}

// Version 1 keys as the JS SDK computes them, where JS and .NET agree.
func TestEPKV1(t *testing.T) {
	tests := []struct {
		k    Component
		want string
	}{
		{Bool(false), "05C1DB857D857C02"},
		{Number(-1), "05C1D1A5BDDF9C054010"},
		{Number(1.5), "05C1E9694167A805BFF8"},
		{Number(1e300), "05C1AB5FCFAF8005FE37F30F918103D738"},
		{Number(-1e-300), "05C1E11D9B5504057E5B497907D139334E"},
		{Number(123456789), "05C1D9E1A5311C05C19DB7CD8B40"},
		{String("日本語"), "05C1E31DE9C91E08E798A6E79DADE9AB9F00"},
		// Strings are cut to 100 characters before hashing and encoding,
		// so these three share one EPK.
		{String(strings.Repeat("a", 100)), "05C1EB5921F70608" + strings.Repeat("62", 100) + "00"},
		{String(strings.Repeat("a", 101)), "05C1EB5921F70608" + strings.Repeat("62", 100) + "00"},
		{String(strings.Repeat("a", 150)), "05C1EB5921F70608" + strings.Repeat("62", 100) + "00"},
		{String(strings.Repeat("é", 40)), "05C1C3F3219B4008" + strings.Repeat("C4AA", 40) + "00"},
	}
	for _, tt := range tests {
		got, err := EPK(hashV1, Key{tt.k})
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("EPK(%s) = %s, want %s", Key{tt.k}, got, tt.want)
		}
	}
}

// Where JS departs from .NET and Java, we follow .NET and Java
// (docs/protocol.md §5.2, "Quirks"). Each case gives the JS value and ours.
func TestEPKV1DotNetQuirks(t *testing.T) {
	tests := []struct {
		name string
		k    Component
		js   string
		want string
	}{
		// The number 0 ends in 0x00 after its first byte.
		{"zero", Number(0), "05C1BF6DA115600580", "05C1BF6DA11560058000"},
		// A string is short when its UTF-8 form has at most 100 bytes;
		// a longer one keeps 101 bytes and no terminator.
		{"60 é", String(strings.Repeat("é", 60)),
			"05C1A329C995C008" + strings.Repeat("C4AA", 60) + "00",
			"05C1A329C995C008" + strings.Repeat("C4AA", 50) + "C4"},
		// 101 code units cut to 100 split the last surrogate pair; the
		// half left over is encoded as U+FFFD (EF BF BD, written +1).
		{"split surrogate", String("x" + strings.Repeat("😀", 50)),
			"05C1E5C5F585E20879" + strings.Repeat("F1A09981", 49) + "F0C0BE00",
			"05C1E5C5F585E20879" + strings.Repeat("F1A09981", 25)},
	}
	for _, tt := range tests {
		got, err := EPK(hashV1, Key{tt.k})
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("%s: EPK = %s, want %s (JS gives %s)", tt.name, got, tt.want, tt.js)
		}
		if tt.want[:16] != tt.js[:16] {
			t.Errorf("%s: the hash parts of %s and %s differ", tt.name, tt.want, tt.js)
		}
	}
}

func TestEPKShapeErrors(t *testing.T) {
	tests := []struct {
		def Definition
		k   Key
	}{
		{hashV1, Key{String("a"), String("b")}},
		{hashV2, Key{String("a"), String("b")}},
		{multiHash, Key{String("a"), String("b"), String("c"), String("d")}},
	}
	for _, tt := range tests {
		if _, err := EPK(tt.def, tt.k); !errors.Is(err, ErrKeyShape) {
			t.Errorf("EPK(%+v, %s) error = %v, want ErrKeyShape", tt.def, tt.k, err)
		}
	}
	for _, def := range []Definition{hashV1, hashV2, multiHash} {
		if got, err := EPK(def, Key{}); err != nil || got != "" {
			t.Errorf("EPK(%+v, []) = %q, %v; want \"\"", def, got, err)
		}
	}
}

func TestEPKRange(t *testing.T) {
	full := Key{String("a"), String("b"), String("c")}
	fullEPK, _ := EPK(multiHash, full)
	for n := 0; n <= 3; n++ {
		min, max, err := EPKRange(multiHash, full[:n])
		if err != nil {
			t.Fatal(err)
		}
		if !(min <= fullEPK && fullEPK < max) {
			t.Errorf("prefix of %d: [%s, %s) does not hold %s", n, min, max, fullEPK)
		}
		if len(min) != 32*n || max != min+"FF" {
			t.Errorf("prefix of %d: [%s, %s)", n, min, max)
		}
	}
	// A different first component falls outside the one-component span.
	other, _ := EPK(multiHash, Key{String("z"), String("b"), String("c")})
	min, max, _ := EPKRange(multiHash, full[:1])
	if min <= other && other < max {
		t.Errorf("%s is inside [%s, %s)", other, min, max)
	}
}

func TestDefinitionValidate(t *testing.T) {
	valid := []Definition{
		{Paths: []string{"/pk"}},
		{Paths: []string{"/pk"}, Kind: Hash, Version: 1},
		{Paths: []string{"/pk"}, Kind: Hash, Version: 2},
		{Paths: []string{"/a"}, Kind: MultiHash, Version: 2},
		{Paths: []string{"/a", "/b/c", "/d"}, Kind: MultiHash, Version: 2},
	}
	for _, def := range valid {
		if err := def.Validate(); err != nil {
			t.Errorf("%+v: %v", def, err)
		}
	}
	invalid := []Definition{
		{},
		{Paths: []string{"/a", "/b"}, Kind: Hash, Version: 2},
		{Paths: []string{"/pk"}, Version: 3},
		{Paths: []string{"/pk"}, Version: -1},
		{Paths: []string{"/a", "/b"}, Kind: MultiHash},
		{Paths: []string{"/a", "/b"}, Kind: MultiHash, Version: 1},
		{Kind: MultiHash, Version: 2},
		{Paths: []string{"/a", "/b", "/c", "/d"}, Kind: MultiHash, Version: 2},
		{Paths: []string{"/pk"}, Kind: "Range"},
		{Paths: []string{"pk"}},
		{Paths: []string{"/"}},
	}
	for _, def := range invalid {
		if err := def.Validate(); !errors.Is(err, ErrDefinition) {
			t.Errorf("%+v: error = %v, want ErrDefinition", def, err)
		}
	}
}

func FuzzEPK(f *testing.F) {
	f.Add(uint8(0), "asdf", 5.0, uint8(3), "b")
	f.Add(uint8(1), strings.Repeat("é", 60), -1.5, uint8(0), "😀")
	f.Add(uint8(2), "\xff\xfe", math.Inf(1), uint8(4), "")
	f.Fuzz(func(t *testing.T, kinds uint8, s string, num float64, n uint8, s2 string) {
		comp := func(kind uint8, s string) Component {
			return Component{Kind: ComponentKind(kind % 6), Str: s, Num: num, Bool: len(s)%2 == 0}
		}
		k := Key{comp(kinds, s), comp(kinds>>3, s2), comp(kinds>>5, s+s2)}[:n%4]
		for _, def := range []Definition{hashV1, hashV2, multiHash} {
			epk, err := EPK(def, k)
			if err != nil {
				if !errors.Is(err, ErrKeyShape) || (def.Kind == Hash && len(k) <= 1) {
					t.Fatalf("EPK(%+v, %#v): %v", def, k, err)
				}
				continue
			}
			if epk >= MaxEPK || strings.Trim(epk, upperHex) != "" || len(epk)%2 != 0 {
				t.Fatalf("EPK(%+v, %#v) = %q", def, k, epk)
			}
			if def.Version == 2 && len(epk) != 32*len(k) {
				t.Fatalf("EPK(%+v, %#v) = %q: want %d characters", def, k, epk, 32*len(k))
			}
			if def.Version == 2 {
				for i := 0; i < len(epk); i += 32 {
					if epk[i] > '3' {
						t.Fatalf("EPK(%+v, %#v) = %q: component %d not masked", def, k, epk, i/32)
					}
				}
			}
		}
	})
}
