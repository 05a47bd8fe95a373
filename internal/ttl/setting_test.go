package ttl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
)

// parse reads a JSON value; "" is undefined (the property is absent).
func parse(t testing.TB, text string) document.Value {
	t.Helper()
	if text == "" {
		return document.Undef
	}
	v, err := document.Parse([]byte(text))
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	return v
}

func TestA1_DefaultTTLValues(t *testing.T) {
	for _, tc := range []struct {
		json string
		want Setting
		bad  bool
	}{
		{json: "", want: Setting{}},
		{json: "null", want: Setting{}},
		{json: "-1", want: Setting{On: true, Default: NoDefault}},
		{json: "1", want: Enabled(1)},
		{json: "60", want: Enabled(60)},
		{json: "2147483647", want: Enabled(MaxTTL)},
		// Integral numbers are integers however they are spelt.
		{json: "5.0", want: Enabled(5)},
		{json: "5e0", want: Enabled(5)},
		{json: "-1.0", want: Enabled(NoDefault)},
		{json: "2147483647.0", want: Enabled(MaxTTL)},
		{json: "0", bad: true},
		{json: "-0.0", bad: true},
		{json: "-2", bad: true},
		{json: "-2147483648", bad: true},
		{json: "2147483648", bad: true},
		{json: "9223372036854775807", bad: true},
		{json: "1e300", bad: true},
		{json: "1.5", bad: true},
		{json: "0.5", bad: true},
		{json: `"60"`, bad: true},
		{json: "true", bad: true},
		{json: "false", bad: true},
		{json: "{}", bad: true},
		{json: "[60]", bad: true},
	} {
		t.Run(tc.json, func(t *testing.T) {
			got, err := ParseDefaultTTL(parse(t, tc.json))
			if tc.bad {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("ParseDefaultTTL(%s) = %v, %v; want an *Error", tc.json, got, err)
				}
				if e.Property != "defaultTtl" || !strings.Contains(e.Message, "defaultTtl") {
					t.Errorf("error %+v does not name defaultTtl", e)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseDefaultTTL(%s) = %v, %v; want %v", tc.json, got, err, tc.want)
			}
			if !got.Valid() {
				t.Errorf("%v is not Valid", got)
			}
		})
	}
}

func TestA1_DefaultTTLRendering(t *testing.T) {
	body := document.Obj([]document.Field{{Name: "id", Value: document.Str("c")}})
	for _, tc := range []struct {
		s        Setting
		body     string
		jsonText string
	}{
		{Setting{}, `{"id":"c"}`, `null`},
		{Enabled(NoDefault), `{"id":"c","defaultTtl":-1}`, `-1`},
		{Enabled(3600), `{"id":"c","defaultTtl":3600}`, `3600`},
	} {
		if got := body.With(DefaultTTLProperty, tc.s.Value()).String(); got != tc.body {
			t.Errorf("body with %v = %s, want %s", tc.s, got, tc.body)
		}
		b, err := json.Marshal(tc.s)
		if err != nil || string(b) != tc.jsonText {
			t.Errorf("json.Marshal(%v) = %s, %v; want %s", tc.s, b, err, tc.jsonText)
		}
		var back Setting
		if err := json.Unmarshal(b, &back); err != nil || back != tc.s {
			t.Errorf("round trip of %v = %v, %v", tc.s, back, err)
		}
	}
	// An existing defaultTtl is removed when TTL is turned off.
	on := body.With(DefaultTTLProperty, Enabled(5).Value())
	if got := on.With(DefaultTTLProperty, Setting{}.Value()).String(); got != `{"id":"c"}` {
		t.Errorf("turning off left %s", got)
	}
	var s Setting
	if err := json.Unmarshal([]byte(`0`), &s); err == nil {
		t.Error("json.Unmarshal accepted defaultTtl 0")
	}
}

func TestA1_ItemTTLValues(t *testing.T) {
	on := Enabled(60)
	for _, tc := range []struct {
		json string
		want ItemTTL
		msg  string // the exact message for an invalid value
	}{
		{json: "", want: ItemTTL{Kind: Inherit}},
		{json: "null", want: ItemTTL{Kind: Inherit}},
		{json: "-1", want: NeverTTL()},
		{json: "1", want: OwnTTL(1)},
		{json: "3600", want: OwnTTL(3600)},
		{json: "2147483647", want: OwnTTL(MaxTTL)},
		{json: "10.0", want: OwnTTL(10)},
		{json: "0", msg: "The input ttl '0' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."},
		{json: "-5", msg: "The input ttl '-5' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."},
		{json: "1.5", msg: "The input ttl '1.5' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."},
		{json: "2147483648", msg: "The input ttl '2147483648' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."},
		{json: `"60"`, msg: "The input ttl '60' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."},
		{json: "true", msg: "The input ttl 'true' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."},
		{json: `{"a":1}`, msg: `The input ttl '{"a":1}' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire.`},
	} {
		t.Run(tc.json, func(t *testing.T) {
			got, err := ParseItemTTL(parse(t, tc.json), on)
			if tc.msg != "" {
				var e *Error
				if !errors.As(err, &e) || e.Property != "ttl" || e.Message != tc.msg {
					t.Fatalf("ParseItemTTL(%s) = %v, %v; want error %q", tc.json, got, err, tc.msg)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseItemTTL(%s) = %v, %v; want %v", tc.json, got, err, tc.want)
			}
		})
	}
}

// While TTL is off an item's ttl is an ordinary field: nothing is rejected,
// and the classification is the one it will have when TTL comes on.
func TestA1_ItemTTLUninterpretedWhileOff(t *testing.T) {
	for _, text := range []string{"", "null", "-1", "0", "7", "1.5", "-9", `"x"`, "false", "[]", "{}", "99999999999"} {
		v := parse(t, text)
		got, err := ParseItemTTL(v, Setting{})
		if err != nil {
			t.Errorf("ParseItemTTL(%s) while off: %v", text, err)
		}
		if got != Classify(v) {
			t.Errorf("ParseItemTTL(%s) while off = %v, Classify = %v", text, got, Classify(v))
		}
		if _, ok := DueAt(1000, got, Setting{}); ok {
			t.Errorf("ttl %s expires while TTL is off", text)
		}
	}
}

// TestA1_ItemTTLMatrix is the table of ttl.md A1: rows are the item's ttl,
// columns the container's defaultTtl.
func TestA1_ItemTTLMatrix(t *testing.T) {
	const n, m = 100, 30
	columns := []struct {
		name string
		s    Setting
	}{
		{"absent/null", Setting{}},
		{"-1", Enabled(NoDefault)},
		{"n", Enabled(n)},
	}
	rows := []struct {
		name string
		json string
		want [3]int64 // seconds after _ts; 0 means never expires
	}{
		{"absent", "", [3]int64{0, 0, n}},
		{"null", "null", [3]int64{0, 0, n}},
		{"-1", "-1", [3]int64{0, 0, 0}},
		{"m", "30", [3]int64{0, m, m}},
	}
	const ts = 1_700_000_000
	for _, r := range rows {
		for i, c := range columns {
			t.Run(r.name+"/"+c.name, func(t *testing.T) {
				item, err := ParseItemTTL(parse(t, r.json), c.s)
				if err != nil {
					t.Fatal(err)
				}
				h := NewHistory(c.s, time.Unix(ts-10, 0))
				due, ok := DueAt(ts, item, c.s)
				if r.want[i] == 0 {
					if ok {
						t.Errorf("due at %v, want never", due)
					}
					if Expired(ts, item, h, time.Unix(ts+MaxTTL+1, 0)) {
						t.Error("expired, want never")
					}
					return
				}
				if want := time.Unix(ts+r.want[i], 0); !ok || !due.Equal(want) {
					t.Errorf("DueAt = %v, %v; want %v", due, ok, want)
				}
				if Expired(ts, item, h, time.Unix(ts+r.want[i], 0).Add(-time.Nanosecond)) {
					t.Error("expired before due")
				}
				if !Expired(ts, item, h, time.Unix(ts+r.want[i], 0)) {
					t.Error("not expired when due")
				}
			})
		}
	}
}

func TestA2_ExpiryAtTSPlusTTL(t *testing.T) {
	const ts = 1_700_000_000
	h := NewHistory(Enabled(10), time.Unix(ts-100, 0))
	for _, tc := range []struct {
		name string
		item ItemTTL
		now  time.Time
		want bool
	}{
		// now is not rounded: at ts+10 exactly the item is expired; a
		// nanosecond before, it is not.
		{"inherit/before", ItemTTL{}, time.Unix(ts+9, 999_999_999), false},
		{"inherit/at", ItemTTL{}, time.Unix(ts+10, 0), true},
		{"inherit/after", ItemTTL{}, time.Unix(ts+10, 1), true},
		{"own/before", OwnTTL(3), time.Unix(ts+2, 999_999_999), false},
		{"own/at", OwnTTL(3), time.Unix(ts+3, 0), true},
		{"own longer than default", OwnTTL(20), time.Unix(ts+15, 0), false},
		{"never", NeverTTL(), time.Unix(ts+1e9, 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Expired(ts, tc.item, h, tc.now); got != tc.want {
				t.Errorf("Expired at %v = %v, want %v", tc.now.Sub(time.Unix(ts, 0)), got, tc.want)
			}
		})
	}
}

// A write restarts the countdown and may change the period; removing ttl
// inherits again; ttl -1 stops expiry. Each write is a new (_ts, ttl) pair.
func TestA2_WritesRestartTheCountdown(t *testing.T) {
	const t0 = 1_700_000_000
	h := NewHistory(Enabled(10), time.Unix(t0-1, 0))
	at := func(s int64) time.Time { return time.Unix(t0+s, 0) }
	for _, tc := range []struct {
		name    string
		ts      int64
		ttl     string
		now     int64
		expired bool
	}{
		{"written at 0, judged at 10", t0, "", 10, true},
		{"rewritten at 5, judged at 10", t0 + 5, "", 10, false},
		{"rewritten at 5, judged at 15", t0 + 5, "", 15, true},
		{"rewritten at 5 with ttl 60", t0 + 5, "60", 15, false},
		{"rewritten at 5 with ttl 2", t0 + 5, "2", 7, true},
		{"ttl removed at 5", t0 + 5, "", 14, false},
		{"ttl -1 at 5", t0 + 5, "-1", 1e6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item, err := ParseItemTTL(parse(t, tc.ttl), h.Setting())
			if err != nil {
				t.Fatal(err)
			}
			if got := Expired(tc.ts, item, h, at(tc.now)); got != tc.expired {
				t.Errorf("Expired = %v, want %v", got, tc.expired)
			}
		})
	}
}

// Enabling TTL brings items' own ttl into force at once, measured from
// their existing _ts.
func TestA5_EnablingMeasuresFromTS(t *testing.T) {
	const t0 = 1_700_000_000
	h := NewHistory(Setting{}, time.Unix(t0, 0))
	// Written while off: ttl 30 (stored, not interpreted), ttl absent, and
	// an invalid ttl, classed as inherit.
	own := Classify(parse(t, "30"))
	inherit := Classify(document.Undef)
	invalid := Classify(parse(t, `"soon"`))
	ts := int64(t0 + 10)
	if Expired(ts, own, h, time.Unix(t0+100, 0)) {
		t.Fatal("ttl interpreted while TTL was off")
	}
	h = h.Change(Enabled(NoDefault), time.Unix(t0+100, 500e6))
	if !Expired(ts, own, h, time.Unix(t0+100, 500e6)) {
		t.Error("own ttl long past due not expired the instant TTL was enabled")
	}
	if Expired(ts, inherit, h, time.Unix(t0+1000, 0)) {
		t.Error("inheriting item expired with defaultTtl -1")
	}
	h = h.Change(Enabled(200), time.Unix(t0+150, 0))
	if Expired(ts, inherit, h, time.Unix(t0+209, 0)) || !Expired(ts, inherit, h, time.Unix(t0+210, 0)) {
		t.Error("inheriting item not due at _ts + new default")
	}
	if Expired(ts, invalid, h, time.Unix(t0+209, 0)) || !Expired(ts, invalid, h, time.Unix(t0+210, 0)) {
		t.Error("item with an invalid ttl written while off does not follow the default")
	}
}

// Disabling TTL stops expiry, even of items with their own ttl, unlike -1.
func TestA5_DisablingStopsExpiry(t *testing.T) {
	const t0 = 1_700_000_000
	ts := int64(t0 + 10)
	for _, tc := range []struct {
		name    string
		to      Setting
		own     bool // an item with ttl 50 written at ts, judged at t0+100
		inherit bool // an item without ttl, judged at t0+100
	}{
		{"null", Setting{}, false, false},
		{"-1", Enabled(NoDefault), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistory(Enabled(60), time.Unix(t0, 0)).Change(tc.to, time.Unix(t0+20, 0))
			now := time.Unix(t0+100, 0)
			if got := Expired(ts, OwnTTL(50), h, now); got != tc.own {
				t.Errorf("own ttl expired = %v, want %v", got, tc.own)
			}
			if got := Expired(ts, ItemTTL{}, h, now); got != tc.inherit {
				t.Errorf("inheriting expired = %v, want %v", got, tc.inherit)
			}
		})
	}
}

func TestA5_IndexingModeNone(t *testing.T) {
	for _, tc := range []struct {
		s    Setting
		mode string
		bad  bool
	}{
		{Setting{}, "none", false},
		{Setting{}, "consistent", false},
		{Enabled(NoDefault), "none", true},
		{Enabled(10), "None", true},
		{Enabled(10), "consistent", false},
		{Enabled(10), "Consistent", false},
		{Enabled(10), "lazy", false},
		{Enabled(10), "", false},
	} {
		err := CheckIndexingMode(tc.s, tc.mode)
		var e *Error
		if tc.bad != errors.As(err, &e) {
			t.Errorf("CheckIndexingMode(%v, %q) = %v, want error %v", tc.s, tc.mode, err, tc.bad)
		}
		if tc.bad && !strings.Contains(e.Message, "defaultTtl") {
			t.Errorf("message %q does not name defaultTtl", e.Message)
		}
	}
}

// The index entry of an item depends on its own ttl alone, never on the
// setting, so no setting change needs a rewrite.
func TestA5_IndexEntryIndependentOfSetting(t *testing.T) {
	for _, tc := range []struct {
		json string
		want Entry
	}{
		{"", Entry{InheritIndex, 100}},
		{"null", Entry{InheritIndex, 100}},
		{"0", Entry{InheritIndex, 100}},
		{`"x"`, Entry{InheritIndex, 100}},
		{"-1", Entry{NoIndex, 0}},
		{"25", Entry{DueIndex, 125}},
	} {
		v := parse(t, tc.json)
		if got := EntryFor(100, Classify(v)); got != tc.want {
			t.Errorf("EntryFor(ttl %s) = %+v, want %+v", tc.json, got, tc.want)
		}
		for _, s := range []Setting{{}, Enabled(NoDefault), Enabled(5)} {
			item, err := ParseItemTTL(v, s)
			if err == nil && EntryFor(100, item) != tc.want {
				t.Errorf("EntryFor(ttl %s) under %v = %+v, want %+v", tc.json, s, EntryFor(100, item), tc.want)
			}
		}
	}
}

func FuzzParseItemTTL(f *testing.F) {
	for _, s := range []string{"null", "-1", "0", "1", "2147483647", "2147483648", "1.5", "5.0", `"7"`, "{}", "[1]", "-0.0", "1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		v, err := document.Parse([]byte(text))
		if err != nil {
			return
		}
		c := Classify(v)
		off, err := ParseItemTTL(v, Setting{})
		if err != nil || off != c {
			t.Fatalf("while off: %v, %v; Classify %v", off, err, c)
		}
		on, err := ParseItemTTL(v, Enabled(10))
		if err == nil && on != c {
			t.Fatalf("valid value %s: ParseItemTTL %v, Classify %v", text, on, c)
		}
		if c.Kind == Own && (c.Seconds < 1) {
			t.Fatalf("Classify(%s) = %v", text, c)
		}
		s, err := ParseDefaultTTL(v)
		if err == nil && !s.Valid() {
			t.Fatalf("ParseDefaultTTL(%s) = invalid %+v", text, s)
		}
	})
}
