package ttl

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
)

// Index names one of the two expiry indexes the engine keeps for a
// container, each in the same atomic write as the item it points to.
type Index uint8

const (
	// NoIndex: the item never expires (ttl -1) and has no entry.
	NoIndex Index = iota
	// DueIndex orders items with their own ttl by due second (_ts + ttl).
	// Their due time does not depend on the container setting.
	DueIndex
	// InheritIndex orders items that inherit the container default by _ts.
	// Their due time is _ts + the default in force, so a change of default
	// moves every one of them at once without rewriting an entry (B2).
	InheritIndex
)

func (x Index) String() string {
	switch x {
	case NoIndex:
		return "none"
	case DueIndex:
		return "due"
	case InheritIndex:
		return "inherit"
	}
	return "invalid"
}

// Entry is an item's place in the expiry indexes.
type Entry struct {
	Index Index
	// Key is the due second for DueIndex and _ts for InheritIndex.
	Key int64
}

// EntryFor returns the expiry index entry of an item written at ts (its
// _ts, whole Unix seconds) with classification item (Classify, never the
// setting: the entry must be right whatever the setting becomes).
func EntryFor(ts int64, item ItemTTL) Entry {
	switch item.Kind {
	case Own:
		return Entry{Index: DueIndex, Key: ts + int64(item.Seconds)}
	case Inherit:
		return Entry{Index: InheritIndex, Key: ts}
	}
	return Entry{Index: NoIndex}
}

// DueAt returns the instant at which an item written at ts expires under
// setting s alone (ttl.md A2: _ts + effective ttl), and false when it does
// not expire under s. Whether an item is expired depends on the history of
// settings too (B1); use Expired for that.
func DueAt(ts int64, item ItemTTL, s Setting) (time.Time, bool) {
	eff, ok := item.Effective(s)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(ts+eff, 0), true
}

// MaxEpochs bounds the number of past epochs a History keeps. The purger
// normally sweeps past epochs within a second of a change, so histories
// stay at one or two; when it cannot (it is stopped, or user load leaves it
// no capacity) and the setting keeps changing, the oldest epochs are folded
// into two index bounds, which keep expiry exact and lose only the precise
// instant at which those epochs expired items (ExpiresAt).
const MaxEpochs = 32

// Epoch is a span of time during which one setting was in force.
type Epoch struct {
	// Seq numbers the epochs of a container, starting at 1 and increasing
	// by one per change.
	Seq     uint64
	Setting Setting
	// From is when the setting came into force.
	From time.Time
	// Until is when it was replaced; zero for the current epoch.
	Until time.Time
}

// History is a container's TTL setting together with the past settings
// that may still decide whether some stored item is expired (B1). It is an
// immutable value: methods return a new History and never modify the
// receiver's memory, so a History can be shared between goroutines.
//
// The zero History has TTL off since the beginning of time.
type History struct {
	// past holds ended epochs in which TTL was on, oldest first. Epochs in
	// which TTL was off expire nothing and are not kept.
	past []Epoch
	// fold summarises epochs folded away when past outgrew MaxEpochs.
	fold fold
	cur  Epoch
}

// fold is what remains of folded epochs: the largest index keys they
// expired (NoKey when none) and the end of the newest.
type fold struct {
	through   uint64 // Seq of the newest folded epoch; 0 when nothing is folded
	until     time.Time
	ownDue    int64
	inheritTS int64
}

// NewHistory returns the history of a container created at at with setting
// s.
func NewHistory(s Setting, at time.Time) History {
	return History{cur: Epoch{Seq: 1, Setting: s, From: at.Round(0)}}
}

// Setting returns the setting in force now.
func (h History) Setting() Setting { return h.cur.Setting }

// Current returns the current epoch; its Until is zero.
func (h History) Current() Epoch { return h.cur }

// Epochs returns the past epochs still kept, oldest first, then the current
// one. Folded epochs are not listed.
func (h History) Epochs() []Epoch {
	out := make([]Epoch, 0, len(h.past)+1)
	out = append(out, h.past...)
	return append(out, h.cur)
}

// Change returns the history after the setting became s at instant at. It
// costs constant time whatever the number of items (B2): nothing is
// re-indexed, because items that inherit are indexed by _ts and their due
// time is computed from the setting at read time.
//
// A change to the setting already in force changes nothing. A change at or
// before the start of the current epoch (two changes in the same instant,
// or a clock that stepped back) replaces the current setting, which was
// then never in force for any instant and so expired nothing.
//
// at comes from the store's authoritative clock (B6), and every expiry
// judgement made before the new History is stored must be at an instant
// before at, or B1 would not hold for it: the engine serialises changes
// with readers, or dates at a little ahead and commits before it (see
// docs/design/ttl.md, "The instant of a change").
func (h History) Change(s Setting, at time.Time) History {
	if s == h.cur.Setting {
		return h
	}
	at = at.Round(0)
	next := Epoch{Seq: h.cur.Seq + 1, Setting: s, From: at}
	if !at.After(h.cur.From) {
		next.From = h.cur.From
		h.cur = next
		return h
	}
	if h.cur.Setting.On {
		ended := h.cur
		ended.Until = at
		past := make([]Epoch, 0, len(h.past)+1)
		past = append(past, h.past...)
		past = append(past, ended)
		if n := len(past) - MaxEpochs; n > 0 {
			h.fold = h.fold.add(past[:n])
			past = past[n:]
		}
		h.past = past
	}
	h.cur = next
	return h
}

// add returns f with epochs folded in.
func (f fold) add(epochs []Epoch) fold {
	if f.through == 0 {
		f.ownDue, f.inheritTS = NoKey, NoKey
	}
	for _, e := range epochs {
		last := lastSecondBefore(e.Until)
		f.ownDue = max(f.ownDue, last)
		if e.Setting.Default >= 1 {
			f.inheritTS = max(f.inheritTS, last-int64(e.Setting.Default))
		}
		f.through, f.until = e.Seq, e.Until
	}
	return f
}

// NoKey is a Horizon bound that no index key reaches.
const NoKey int64 = math.MinInt64

// Horizon divides the expiry indexes of a container, at one instant, into
// expired entries and live ones. Each index is ordered by its key, so the
// expired entries are a prefix of it: a scan for the purger reads only
// expired entries, and its cost grows with them alone (B3).
type Horizon struct {
	// DueIndex entries with Key <= OwnDue are expired.
	OwnDue int64
	// InheritIndex entries with Key <= InheritTS are expired.
	InheritTS int64
}

// Empty reports whether no entry can be expired.
func (z Horizon) Empty() bool { return z.OwnDue == NoKey && z.InheritTS == NoKey }

// Expired reports whether an item written at ts with classification item
// lies within the horizon.
func (z Horizon) Expired(ts int64, item ItemTTL) bool {
	e := EntryFor(ts, item)
	switch e.Index {
	case DueIndex:
		return z.OwnDue != NoKey && e.Key <= z.OwnDue
	case InheritIndex:
		return z.InheritTS != NoKey && e.Key <= z.InheritTS
	}
	return false
}

// Horizon returns the horizon at instant now.
//
// An item is expired at now (ttl.md A2, B1) when, at some instant t <= now
// since it was written, the setting in force at t made it due: _ts + the
// effective ttl under that setting <= t. For the current epoch that is the
// rule of A2 against the current setting; for a past epoch it means the
// item became due before the epoch ended, after which it stays expired
// forever, whatever the setting became. An item written after the last
// change is judged by the current setting alone, since it is due at least a
// second after it was written.
//
// Each epoch in which TTL was on expires a prefix of each index, so the
// horizon is, per index, the largest of those prefixes: it costs one step
// per kept epoch, and the engine computes it once per request.
//
// now should not precede the start of the current epoch (one authoritative
// clock, B6). If it does, epochs that had not begun at now are ignored, and
// folded epochs count as ended.
func (h History) Horizon(now time.Time) Horizon {
	z := Horizon{OwnDue: NoKey, InheritTS: NoKey}
	nowSec := now.Unix()
	if h.fold.through != 0 {
		z.OwnDue = min(h.fold.ownDue, nowSec)
		z.InheritTS = h.fold.inheritTS
	}
	consider := func(e Epoch, last int64) {
		if !e.Setting.On || e.From.After(now) {
			return
		}
		last = min(last, nowSec)
		z.OwnDue = max(z.OwnDue, last)
		if e.Setting.Default >= 1 {
			z.InheritTS = max(z.InheritTS, last-int64(e.Setting.Default))
		}
	}
	for _, e := range h.past {
		consider(e, lastSecondBefore(e.Until))
	}
	consider(h.cur, nowSec)
	return z
}

// Expired reports whether an item written at ts (its _ts) with
// classification item is expired at now, given the container's history:
// h.Horizon(now).Expired(ts, item). Every API judges expiry this way, so
// they never disagree (A3, A6).
func Expired(ts int64, item ItemTTL, h History, now time.Time) bool {
	return h.Horizon(now).Expired(ts, item)
}

// ExpiresAt returns the instant at which an item written at ts expired or
// will expire if the setting does not change again, and false when it will
// not expire under the current setting and did not under a past one.
// Expired(ts, item, h, now) is true exactly when ExpiresAt is at or before
// now, except that for an item expired in a folded epoch ExpiresAt reports
// the end of the folded span, a bound on the true instant. The purger uses
// it to measure purge lag.
func (h History) ExpiresAt(ts int64, item ItemTTL) (time.Time, bool) {
	if h.fold.through != 0 {
		z := Horizon{OwnDue: h.fold.ownDue, InheritTS: h.fold.inheritTS}
		if z.Expired(ts, item) {
			return h.fold.until, true
		}
	}
	for _, e := range h.past {
		due, ok := DueAt(ts, item, e.Setting)
		if ok && due.Before(e.Until) {
			return later(due, e.From), true
		}
	}
	due, ok := DueAt(ts, item, h.cur.Setting)
	if !ok {
		return time.Time{}, false
	}
	return later(due, h.cur.From), true
}

// NextDue returns the instant at which the first of the stored entries
// whose lowest keys are first falls due with time alone, when nothing of
// them is expired yet; false when only a change of setting can expire
// them (TTL off, or only InheritIndex entries under defaultTtl -1), or
// there are none.
//
// Only the current epoch's horizon moves with time (past epochs ended, and
// their bounds are fixed), at one second per second: a DueIndex entry
// with key k falls due at second k, an InheritIndex entry with key ts at
// ts + defaultTtl; within an index the lowest key falls due first.
func (h History) NextDue(first Keys) (time.Time, bool) {
	s := h.cur.Setting
	if !s.On {
		return time.Time{}, false
	}
	var at time.Time
	found := false
	consider := func(t time.Time) {
		t = later(t, h.cur.From)
		if !found || t.Before(at) {
			at, found = t, true
		}
	}
	if first.OwnDue != NoKey {
		consider(time.Unix(first.OwnDue, 0))
	}
	if first.InheritTS != NoKey && s.Default >= 1 {
		consider(time.Unix(first.InheritTS+int64(s.Default), 0))
	}
	return at, found
}

// NeedsPurge reports whether any stored item can be expired: TTL is on, or
// it was on in an epoch not yet swept. While it reports false the purger
// does no work for the container (A5: with TTL off, nothing expires).
func (h History) NeedsPurge() bool {
	return h.cur.Setting.On || len(h.past) > 0 || h.fold.through != 0
}

// Swept returns the history without the past epochs numbered through or
// lower, folded ones included. The purger asks for it once it has
// physically removed every item expired at an instant after those epochs
// ended: no item they expired is left, and no item written since can fall
// due in them, so they no longer decide anything.
func (h History) Swept(through uint64) History {
	if h.fold.through != 0 && h.fold.through <= through {
		h.fold = fold{}
	}
	i := 0
	for i < len(h.past) && h.past[i].Seq <= through {
		i++
	}
	if i > 0 {
		h.past = append([]Epoch(nil), h.past[i:]...)
	}
	return h
}

// sweepable returns the Seq of the newest past epoch that ended at or
// before now, and 0 when there is none.
func (h History) sweepable(now time.Time) uint64 {
	var seq uint64
	if h.fold.through != 0 && !h.fold.until.After(now) {
		seq = h.fold.through
	}
	for _, e := range h.past {
		if !e.Until.After(now) {
			seq = e.Seq
		}
	}
	return seq
}

// lastSecondBefore returns the largest whole Unix second strictly before t.
func lastSecondBefore(t time.Time) int64 {
	if t.Nanosecond() == 0 {
		return t.Unix() - 1
	}
	return t.Unix()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// The stored form of a History, in the container record:
//
//	{"seq":3,"defaultTtl":60,"from":1700000000500000000,
//	 "past":[{"seq":2,"defaultTtl":-1,"from":…,"until":…}],
//	 "folded":{"through":1,"until":…,"ownDue":…,"inheritTs":…}}
//
// Instants are Unix nanoseconds; defaultTtl is absent while off, and
// "from" is absent for the zero instant. ParseHistory checks every
// invariant, so a damaged record is an error, never a wrong answer.

// Value returns the stored form of h.
func (h History) Value() document.Value {
	fields := epochFields(h.cur)
	if len(h.past) > 0 {
		past := make([]document.Value, len(h.past))
		for i, e := range h.past {
			past[i] = document.Obj(epochFields(e))
		}
		fields = append(fields, document.Field{Name: "past", Value: document.Arr(past)})
	}
	if h.fold.through != 0 {
		fields = append(fields, document.Field{Name: "folded", Value: document.Obj([]document.Field{
			{Name: "through", Value: document.Int(int64(h.fold.through))},
			{Name: "until", Value: document.Int(h.fold.until.UnixNano())},
			{Name: "ownDue", Value: document.Int(h.fold.ownDue)},
			{Name: "inheritTs", Value: document.Int(h.fold.inheritTS)},
		})})
	}
	return document.Obj(fields)
}

func epochFields(e Epoch) []document.Field {
	fields := []document.Field{{Name: "seq", Value: document.Int(int64(e.Seq))}}
	if e.Setting.On {
		fields = append(fields, document.Field{Name: DefaultTTLProperty, Value: e.Setting.Value()})
	}
	if !e.From.IsZero() {
		fields = append(fields, document.Field{Name: "from", Value: document.Int(e.From.UnixNano())})
	}
	if !e.Until.IsZero() {
		fields = append(fields, document.Field{Name: "until", Value: document.Int(e.Until.UnixNano())})
	}
	return fields
}

// ParseHistory reads the stored form of a History. Undef or null is the
// zero History.
func ParseHistory(v document.Value) (History, error) {
	if !v.IsDefined() || v.IsNull() {
		return History{}, nil
	}
	if v.Kind() != document.Object {
		return History{}, corrupt("not an object")
	}
	var h History
	var err error
	if h.cur, err = parseEpoch(v, false); err != nil {
		return History{}, err
	}
	if p := v.Get("past"); p.IsDefined() {
		if p.Kind() != document.Array {
			return History{}, corrupt("past is not an array")
		}
		for _, ev := range p.Array() {
			e, err := parseEpoch(ev, true)
			if err != nil {
				return History{}, err
			}
			h.past = append(h.past, e)
		}
	}
	if f := v.Get("folded"); f.IsDefined() {
		through, ok1 := uintField(f, "through")
		until, ok2 := intField(f, "until")
		own, ok3 := intField(f, "ownDue")
		inh, ok4 := intField(f, "inheritTs")
		if !ok1 || !ok2 || !ok3 || !ok4 || through == 0 {
			return History{}, corrupt("bad folded epochs")
		}
		h.fold = fold{through: through, until: time.Unix(0, until), ownDue: own, inheritTS: inh}
	}
	// Epochs are numbered in order and do not overlap.
	prevSeq, prevUntil := h.fold.through, h.fold.until
	for _, e := range h.past {
		if e.Seq <= prevSeq || e.From.Before(prevUntil) || !e.Until.After(e.From) || !e.Setting.On {
			return History{}, corrupt(fmt.Sprintf("past epoch %d out of order", e.Seq))
		}
		prevSeq, prevUntil = e.Seq, e.Until
	}
	if (prevSeq != 0 && h.cur.Seq <= prevSeq) || h.cur.From.Before(prevUntil) {
		return History{}, corrupt("current epoch out of order")
	}
	return h, nil
}

func parseEpoch(v document.Value, ended bool) (Epoch, error) {
	if v.Kind() != document.Object {
		return Epoch{}, corrupt("epoch is not an object")
	}
	var e Epoch
	var ok bool
	if e.Seq, ok = uintField(v, "seq"); !ok {
		return Epoch{}, corrupt("epoch without seq")
	}
	s, err := ParseDefaultTTL(v.Get(DefaultTTLProperty))
	if err != nil {
		return Epoch{}, corrupt(fmt.Sprintf("epoch %d: %v", e.Seq, err))
	}
	e.Setting = s
	if f := v.Get("from"); f.IsDefined() {
		n, ok := intField(v, "from")
		if !ok {
			return Epoch{}, corrupt(fmt.Sprintf("epoch %d: bad from", e.Seq))
		}
		e.From = time.Unix(0, n)
	}
	u := v.Get("until")
	if u.IsDefined() != ended {
		return Epoch{}, corrupt(fmt.Sprintf("epoch %d: until misplaced", e.Seq))
	}
	if ended {
		n, ok := intField(v, "until")
		if !ok {
			return Epoch{}, corrupt(fmt.Sprintf("epoch %d: bad until", e.Seq))
		}
		e.Until = time.Unix(0, n)
	}
	return e, nil
}

func intField(v document.Value, name string) (int64, bool) {
	f := v.Get(name)
	if !f.IsInt() {
		return 0, false
	}
	return f.Int(), true
}

func uintField(v document.Value, name string) (uint64, bool) {
	n, ok := intField(v, name)
	if !ok || n < 0 {
		return 0, false
	}
	return uint64(n), true
}

func corrupt(msg string) error { return fmt.Errorf("ttl: corrupt history: %s", msg) }

// MarshalJSON encodes the stored form.
func (h History) MarshalJSON() ([]byte, error) { return h.Value().JSON(), nil }

// UnmarshalJSON decodes the stored form with ParseHistory.
func (h *History) UnmarshalJSON(b []byte) error {
	v, err := document.Parse(b)
	if err != nil {
		return err
	}
	got, err := ParseHistory(v)
	if err != nil {
		return err
	}
	*h = got
	return nil
}

var (
	_ json.Marshaler   = History{}
	_ json.Unmarshaler = (*History)(nil)
)
