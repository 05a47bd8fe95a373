package ttl

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
)

const t0 = 1_700_000_000

func sec(s float64) time.Time { return time.Unix(0, int64((t0+s)*1e9)) }

// TestB1_ExpiryIsFinal: once expired, an item stays expired whatever the
// setting becomes; items not expired at the change follow the new setting.
func TestB1_ExpiryIsFinal(t *testing.T) {
	type probe struct {
		ts   int64
		item ItemTTL
		at   float64 // seconds after t0
		want bool
	}
	for _, tc := range []struct {
		name   string
		from   Setting
		change Setting
		at     float64 // the change, seconds after t0
		probes []probe
	}{
		{
			name: "disable after expiry", from: Enabled(10), change: Setting{}, at: 12.5,
			probes: []probe{
				{t0, ItemTTL{}, 12.5, true},     // due at 10
				{t0, ItemTTL{}, 1e6, true},      // forever
				{t0 + 2, ItemTTL{}, 12.5, true}, // due at 12, just before the change
				{t0 + 3, ItemTTL{}, 13, false},  // due at 13, after the change: follows off
				{t0 + 3, ItemTTL{}, 1e6, false},
				{t0, OwnTTL(5), 1e6, true},   // due at 5
				{t0, OwnTTL(20), 1e6, false}, // due at 20, TTL off by then
			},
		},
		{
			name: "lengthen default after expiry", from: Enabled(10), change: Enabled(1000), at: 12.5,
			probes: []probe{
				{t0, ItemTTL{}, 12.5, true},
				{t0, ItemTTL{}, 500, true},
				{t0 + 3, ItemTTL{}, 13, false},   // not expired at the change…
				{t0 + 3, ItemTTL{}, 1002, false}, // …so it follows the new default
				{t0 + 3, ItemTTL{}, 1003, true},
			},
		},
		{
			name: "default -1 after expiry", from: Enabled(10), change: Enabled(NoDefault), at: 12.5,
			probes: []probe{
				{t0, ItemTTL{}, 1e6, true},
				{t0 + 3, ItemTTL{}, 1e6, false},
				{t0 + 3, OwnTTL(20), 23, true}, // own ttl stays in force
			},
		},
		{
			name: "expired the instant TTL came on, then off again", from: Setting{}, change: Enabled(5), at: 100,
			probes: []probe{
				{t0 + 10, ItemTTL{}, 100, true},
				{t0 + 10, OwnTTL(50), 100, true},
				{t0 + 10, OwnTTL(500), 100, false},
			},
		},
		{
			name: "due exactly at the change follows the new setting", from: Enabled(10), change: Setting{}, at: 12,
			probes: []probe{
				{t0 + 2, ItemTTL{}, 12, false},
				{t0 + 2, ItemTTL{}, 1e6, false},
				{t0 + 1, ItemTTL{}, 1e6, true},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistory(tc.from, sec(0)).Change(tc.change, sec(tc.at))
			// A restart or a crash: the history comes back from storage.
			stored, err := json.Marshal(h)
			if err != nil {
				t.Fatal(err)
			}
			var restarted History
			if err := json.Unmarshal(stored, &restarted); err != nil {
				t.Fatal(err)
			}
			// And yet another change: still final.
			again := h.Change(Enabled(MaxTTL), sec(tc.at+1e5))
			for _, p := range tc.probes {
				for name, h := range map[string]History{"live": h, "restarted": restarted} {
					if got := Expired(p.ts, p.item, h, sec(p.at)); got != p.want {
						t.Errorf("%s: item (%d, %v) at %v: expired = %v, want %v", name, p.ts-t0, p.item, p.at, got, p.want)
					}
				}
				if p.want && p.at < tc.at+1e5 && !Expired(p.ts, p.item, again, sec(tc.at+2e5)) {
					t.Errorf("item (%d, %v) came back after a second change", p.ts-t0, p.item)
				}
			}
		})
	}
}

// TestB2_InstantSettingChanges: a change of defaultTtl moves every item at
// once, at the instant of the change, and writes nothing but the history.
func TestB2_InstantSettingChanges(t *testing.T) {
	// An index of inheriting items, one per second over 1000 s.
	type item struct {
		ts    int64
		entry Entry
	}
	var items []item
	for ts := int64(t0); ts < t0+1000; ts++ {
		items = append(items, item{ts, EntryFor(ts, ItemTTL{})})
	}
	h := NewHistory(Enabled(2000), sec(0))
	change := sec(1000.5)
	h2 := h.Change(Enabled(100), change)

	if got := len(h2.Epochs()); got != 2 {
		t.Fatalf("history has %d epochs after one change", got)
	}
	before := change.Add(-time.Nanosecond)
	for _, it := range items {
		if EntryFor(it.ts, ItemTTL{}) != it.entry {
			t.Fatal("index entry depends on the setting")
		}
		if Expired(it.ts, ItemTTL{}, h2, before) {
			t.Fatalf("item %d expired before the change", it.ts-t0)
		}
		want := it.ts+100 <= change.Unix()
		if got := Expired(it.ts, ItemTTL{}, h2, change); got != want {
			t.Fatalf("item %d at the change: expired = %v, want %v", it.ts-t0, got, want)
		}
	}
	// The horizon, which scans use, agrees with the point rule.
	z := h2.Horizon(change)
	if z.InheritTS != t0+900 {
		t.Errorf("InheritTS = %d, want %d", z.InheritTS-t0, 900)
	}

	// Constant cost: a change allocates the same whatever the history
	// held, and nothing grows with items.
	allocs := testing.AllocsPerRun(100, func() { _ = h2.Change(Enabled(50), sec(2000)) })
	if allocs > 2 {
		t.Errorf("Change allocates %v times", allocs)
	}
}

func TestB2_HistoryStaysShort(t *testing.T) {
	h := NewHistory(Enabled(10), sec(0))
	for i := 1; i <= 10*MaxEpochs; i++ {
		s := Enabled(int32(10 + i%7))
		if i%3 == 0 {
			s = Setting{}
		}
		h = h.Change(s, sec(float64(i)))
		if n := len(h.Epochs()); n > MaxEpochs+1 {
			t.Fatalf("after %d changes the history holds %d epochs", i, n)
		}
	}
	if n := len(h.Swept(h.sweepable(sec(1e6))).Epochs()); n != 1 {
		t.Errorf("after a sweep the history holds %d epochs, want 1", n)
	}
}

func TestHistory_OffEpochsAreNotKept(t *testing.T) {
	h := NewHistory(Setting{}, sec(0)).
		Change(Enabled(5), sec(10)).
		Change(Setting{}, sec(20)).
		Change(Enabled(7), sec(30))
	var got []string
	for _, e := range h.Epochs() {
		got = append(got, fmt.Sprintf("%d:%v", e.Seq, e.Setting))
	}
	if want := "2:on, 5 s 4:on, 7 s"; strings.Join(got, " ") != want {
		t.Errorf("epochs = %q, want %q", strings.Join(got, " "), want)
	}
	// Two changes at one instant: the first was never in force.
	h2 := h.Change(Enabled(1), sec(40)).Change(Enabled(1000), sec(40))
	if n := len(h2.Epochs()); n != 3 {
		t.Errorf("a zero-length epoch was kept: %v", h2.Epochs())
	}
	if Expired(t0+38, ItemTTL{}, h2, sec(1000)) {
		t.Error("a setting in force for no time expired an item")
	}
	// The same setting again is no change.
	if h3 := h2.Change(Enabled(1000), sec(50)); len(h3.Epochs()) != len(h2.Epochs()) || h3.Current().Seq != h2.Current().Seq {
		t.Error("re-applying the current setting made an epoch")
	}
	// A clock that stepped back cannot reorder epochs.
	h4 := h2.Change(Enabled(3), sec(39))
	if !h4.Current().From.Equal(sec(40)) {
		t.Errorf("change before the current epoch started at %v", h4.Current().From)
	}
}

func TestHistory_Swept(t *testing.T) {
	h := NewHistory(Enabled(10), sec(0)).
		Change(Setting{}, sec(100)).
		Change(Enabled(20), sec(200)).
		Change(Enabled(30), sec(300))
	if got := h.sweepable(sec(250)); got != 1 {
		t.Errorf("sweepable at 250 = %d, want 1", got)
	}
	if got := h.sweepable(sec(300)); got != 3 {
		t.Errorf("sweepable at 300 = %d, want 3", got)
	}
	s := h.Swept(1)
	if len(s.Epochs()) != 2 || s.Epochs()[0].Seq != 3 {
		t.Errorf("Swept(1) = %v", s.Epochs())
	}
	if len(h.Epochs()) != 3 {
		t.Error("Swept modified its receiver")
	}
	if s.Swept(0).Current() != s.Current() || len(s.Swept(3).Epochs()) != 1 {
		t.Error("Swept(3) kept past epochs")
	}
	if !NewHistory(Enabled(1), sec(0)).Change(Setting{}, sec(1)).NeedsPurge() {
		t.Error("history with an unswept epoch does not need a purge")
	}
	if (History{}).NeedsPurge() || NewHistory(Setting{}, sec(0)).NeedsPurge() {
		t.Error("history that was never on needs a purge")
	}
}

func TestHistory_StoredForm(t *testing.T) {
	for _, h := range []History{
		{},
		NewHistory(Setting{}, sec(0)),
		NewHistory(Enabled(NoDefault), sec(0.25)),
		NewHistory(Enabled(10), sec(0)).Change(Setting{}, sec(100.5)).Change(Enabled(MaxTTL), sec(101)),
		manyChanges(3 * MaxEpochs),
	} {
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		var back History
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		if b2, _ := json.Marshal(back); string(b2) != string(b) {
			t.Errorf("round trip:\n%s\n%s", b, b2)
		}
		for _, probe := range []struct {
			ts   int64
			item ItemTTL
		}{{t0, ItemTTL{}}, {t0 + 50, OwnTTL(3)}, {t0 + 99, ItemTTL{}}, {t0 + 100, OwnTTL(1)}} {
			for _, now := range []time.Time{sec(99), sec(101), sec(1e6)} {
				if Expired(probe.ts, probe.item, h, now) != Expired(probe.ts, probe.item, back, now) {
					t.Errorf("%s: judgement changed by a round trip", b)
				}
			}
		}
	}
	want := `{"seq":3,"defaultTtl":2147483647,"from":1700000101000000000,"past":[{"seq":1,"defaultTtl":10,"from":1700000000000000000,"until":1700000100500000000}]}`
	got, _ := json.Marshal(NewHistory(Enabled(10), sec(0)).Change(Setting{}, sec(100.5)).Change(Enabled(MaxTTL), sec(101)))
	if string(got) != want {
		t.Errorf("stored form\n got %s\nwant %s", got, want)
	}
}

func TestHistory_ParseRejectsDamage(t *testing.T) {
	for _, text := range []string{
		`[]`,
		`{"defaultTtl":5}`,
		`{"seq":-1}`,
		`{"seq":1,"defaultTtl":0}`,
		`{"seq":1,"from":"x"}`,
		`{"seq":1,"until":5}`,
		`{"seq":2,"past":{}}`,
		`{"seq":2,"past":[{"seq":1,"defaultTtl":5,"from":10}]}`,
		`{"seq":2,"past":[{"seq":1,"from":10,"until":20}]}`,
		`{"seq":2,"past":[{"seq":1,"defaultTtl":5,"from":20,"until":10}]}`,
		`{"seq":2,"from":15,"past":[{"seq":1,"defaultTtl":5,"from":10,"until":20}]}`,
		`{"seq":1,"from":25,"past":[{"seq":1,"defaultTtl":5,"from":10,"until":20}]}`,
		`{"seq":3,"from":30,"past":[{"seq":2,"defaultTtl":5,"from":10,"until":20},{"seq":1,"defaultTtl":5,"from":20,"until":30}]}`,
		`{"seq":3,"folded":{"through":0,"until":1,"ownDue":1,"inheritTs":1}}`,
		`{"seq":3,"folded":{"through":4,"until":1,"ownDue":1,"inheritTs":1}}`,
		`{"seq":3,"folded":{"through":1}}`,
	} {
		var h History
		if err := json.Unmarshal([]byte(text), &h); err == nil {
			t.Errorf("accepted %s", text)
		}
	}
	h, err := ParseHistory(document.NullValue())
	if err != nil || h.NeedsPurge() {
		t.Errorf("null history = %v, %v", h, err)
	}
}

func FuzzParseHistory(f *testing.F) {
	f.Add(`{"seq":3,"defaultTtl":2147483647,"from":1700000101000000000,"past":[{"seq":1,"defaultTtl":10,"from":1700000000000000000,"until":1700000100500000000}]}`)
	f.Add(`{"seq":40,"folded":{"through":5,"until":1700000005000000000,"ownDue":1700000004,"inheritTs":1699999990}}`)
	f.Add(`{"seq":0}`)
	f.Fuzz(func(t *testing.T, text string) {
		var h History
		if err := json.Unmarshal([]byte(text), &h); err != nil {
			return
		}
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		var back History
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("re-reading %s: %v", b, err)
		}
		_ = h.Horizon(sec(0))
		_, _ = h.ExpiresAt(t0, ItemTTL{})
		_ = h.Change(Enabled(5), sec(1)).Swept(h.sweepable(sec(2)))
	})
}

func manyChanges(n int) History {
	h := NewHistory(Enabled(10), sec(0))
	for i := 1; i <= n; i++ {
		s := Enabled(int32(1 + i%13))
		switch i % 4 {
		case 0:
			s = Setting{}
		case 1:
			s = Enabled(NoDefault)
		}
		h = h.Change(s, sec(float64(i)))
	}
	return h
}

// The model for the property test: time moves in quarter seconds from t0,
// and expiry is judged the slow way, instant by instant.

type simChange struct {
	at int64 // quarter seconds after t0
	s  Setting
}

type simItem struct {
	w    int64 // write instant, quarter seconds after t0
	item ItemTTL
}

func (it simItem) ts() int64 { return t0 + it.w/4 }

func quarter(q int64) time.Time {
	return time.Unix(t0, 0).Add(time.Duration(q) * 250 * time.Millisecond)
}

// settingAt is the setting in force at quarter q: the last change at or
// before it.
func settingAt(changes []simChange, q int64) Setting {
	var s Setting
	for _, c := range changes {
		if c.at <= q {
			s = c.s
		}
	}
	return s
}

// firstExpired returns the first quarter at which the item is expired, by
// walking time: at each instant the setting then in force either makes the
// item due or not, and once it has, the item stays expired.
func firstExpired(changes []simChange, it simItem, until int64) (int64, bool) {
	for q := it.w; q <= until; q++ {
		eff, ok := it.item.Effective(settingAt(changes, q))
		if ok && quarter(q).Unix() >= it.ts()+eff {
			return q, true
		}
	}
	return 0, false
}

func randSetting(r *rand.Rand) Setting {
	switch r.IntN(4) {
	case 0:
		return Setting{}
	case 1:
		return Enabled(NoDefault)
	}
	return Enabled(int32(1 + r.IntN(8)))
}

func randItem(r *rand.Rand) ItemTTL {
	switch r.IntN(3) {
	case 0:
		return ItemTTL{}
	case 1:
		return NeverTTL()
	}
	return OwnTTL(int32(1 + r.IntN(8)))
}

// TestExpired_MatchesSimulation checks Expired, Horizon and ExpiresAt
// against a brute-force walk through random histories.
func TestExpired_MatchesSimulation(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const span = 160 // quarters: 40 s
	seen := map[bool]int{}
	for round := 0; round < 400; round++ {
		changes := []simChange{{0, randSetting(r)}}
		nChanges := r.IntN(6)
		if round%20 == 0 {
			nChanges = MaxEpochs + r.IntN(2*MaxEpochs) // exercise folding
		}
		for range nChanges {
			changes = append(changes, simChange{changes[len(changes)-1].at + int64(r.IntN(12)), randSetting(r)})
		}
		h := NewHistory(changes[0].s, quarter(0))
		for _, c := range changes[1:] {
			h = h.Change(c.s, quarter(c.at))
		}
		last := changes[len(changes)-1].at
		folded := h.fold.through != 0

		for range 30 {
			it := simItem{w: int64(r.IntN(int(last + span/2))), item: randItem(r)}
			end := max(last, it.w) + span
			first, ok := firstExpired(changes, it, end)
			for q := it.w; q <= end; q++ {
				if folded && q < last {
					continue // folding assumes now is past the last change
				}
				want := ok && q >= first
				if got := Expired(it.ts(), it.item, h, quarter(q)); got != want {
					t.Fatalf("round %d: changes %v, item %+v (ts %d): Expired at %v = %v, want %v",
						round, changes, it, it.ts()-t0, float64(q)/4, got, want)
				}
			}
			at, expires := h.ExpiresAt(it.ts(), it.item)
			switch {
			case folded:
				// For epochs folded away ExpiresAt is a bound.
				if ok && (!expires || at.Before(quarter(first))) {
					t.Fatalf("round %d: folded ExpiresAt = %v, %v; true expiry %v", round, at, expires, quarter(first))
				}
			case ok:
				if !expires || !at.Equal(quarter(first)) {
					t.Fatalf("round %d: changes %v, item %+v: ExpiresAt = %v, %v; want %v",
						round, changes, it, at.Sub(quarter(0)), expires, quarter(first).Sub(quarter(0)))
				}
				seen[true]++
			default:
				// Longer than any ttl drawn: an item that expires at all
				// does so within the walk.
				if expires {
					t.Fatalf("round %d: changes %v, item %+v: ExpiresAt = %v, never in the walk", round, changes, it, at.Sub(quarter(0)))
				}
				seen[false]++
			}
		}
	}
	if seen[true] < 1000 || seen[false] < 1000 {
		t.Errorf("the walk is lopsided: %v", seen)
	}
}

func BenchmarkChange(b *testing.B) {
	h := NewHistory(Enabled(10), sec(0)).Change(Enabled(20), sec(1))
	for i := 0; b.Loop(); i++ {
		_ = h.Change(Enabled(int32(1+i%100)), sec(float64(2+i)))
	}
}

func BenchmarkExpired(b *testing.B) {
	h := NewHistory(Enabled(10), sec(0)).Change(Setting{}, sec(100)).Change(Enabled(20), sec(200))
	now := sec(300)
	for b.Loop() {
		_ = Expired(t0+250, ItemTTL{}, h, now)
	}
}

// TestHistory_NextDue: the instant NextDue reports is the first at which
// the horizon covers one of the entries, and an instant before it covers
// none; with TTL off, or only inheriting entries under -1, time alone
// expires nothing.
func TestHistory_NextDue(t *testing.T) {
	changed := NewHistory(Enabled(NoDefault), sec(0)).Change(Enabled(10), sec(50))
	cases := []struct {
		name  string
		h     History
		first Keys
		want  time.Time // zero: none
	}{
		{"off", NewHistory(Setting{}, sec(0)), Keys{OwnDue: t0 + 5, InheritTS: t0}, time.Time{}},
		{"-1, own", NewHistory(Enabled(NoDefault), sec(0)), Keys{OwnDue: t0 + 10, InheritTS: NoKey}, sec(10)},
		{"-1, inheriting only", NewHistory(Enabled(NoDefault), sec(0)), Keys{OwnDue: NoKey, InheritTS: t0}, time.Time{}},
		{"60, inheriting", NewHistory(Enabled(60), sec(0)), Keys{OwnDue: NoKey, InheritTS: t0 + 5}, sec(65)},
		{"60, both, inheriting first", NewHistory(Enabled(60), sec(0)), Keys{OwnDue: t0 + 100, InheritTS: t0}, sec(60)},
		{"60, both, own first", NewHistory(Enabled(60), sec(0)), Keys{OwnDue: t0 + 30, InheritTS: t0}, sec(30)},
		{"none", NewHistory(Enabled(60), sec(0)), Keys{OwnDue: NoKey, InheritTS: NoKey}, time.Time{}},
		{"due before the setting began", changed, Keys{OwnDue: NoKey, InheritTS: t0 + 1}, sec(50)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := c.h.NextDue(c.first)
			if ok != !c.want.IsZero() || !got.Equal(c.want) {
				t.Fatalf("NextDue = %v, %v; want %v", got, ok, c.want)
			}
			if !ok {
				return
			}
			covers := func(at time.Time) bool {
				z := c.h.Horizon(at)
				return (c.first.OwnDue != NoKey && z.OwnDue != NoKey && c.first.OwnDue <= z.OwnDue) ||
					(c.first.InheritTS != NoKey && z.InheritTS != NoKey && c.first.InheritTS <= z.InheritTS)
			}
			if !covers(got) {
				t.Fatalf("the horizon at %v does not cover %+v", got, c.first)
			}
			if covers(got.Add(-time.Nanosecond)) {
				t.Fatalf("the horizon already covers %+v before %v", c.first, got)
			}
		})
	}
}
