// Package ttl holds Mayfly's time-to-live rules (the TTL specification,
// ttl.md: rules A1–A6 and B1–B6) and the purger that physically deletes
// expired items.
//
// The rules live here and nowhere else. The engine calls this package to
//
//   - validate a container's defaultTtl (ParseDefaultTTL) and its indexing
//     mode (CheckIndexingMode),
//   - validate and classify an item's ttl on every write (ParseItemTTL,
//     Classify) and pick the expiry index entry that goes in the same atomic
//     write as the item (EntryFor),
//   - record a change of defaultTtl in the container's History (Change), in
//     constant time, with no item rewritten,
//   - judge whether an item is expired (Expired, or Horizon for a whole scan).
//
// Expiry is final (B1): a History remembers, for every past setting whose
// expired items may still be on disk, when it was replaced, so an item that
// expired under it stays expired whatever the setting becomes. The purger
// removes those items and then lets the engine drop the epoch.
//
// The package is part of the domain: no HTTP, no storage driver. The purger
// reaches the store only through the Target interface, which the engine
// implements. See docs/design/ttl.md for the whole design.
package ttl

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
)

// Property names, as they appear in container bodies and items.
const (
	DefaultTTLProperty = "defaultTtl"
	ItemTTLProperty    = "ttl"
)

// MaxTTL is the largest ttl or defaultTtl accepted, in seconds: Cosmos DB
// holds both as a signed 32-bit integer.
const MaxTTL = math.MaxInt32

// NoDefault is Setting.Default for a container whose items do not expire
// unless they say so (defaultTtl -1).
const NoDefault int32 = -1

// Error is a rejected defaultTtl, item ttl or indexing mode. The engine
// answers it with 400 BadRequest and Message as the error message; nothing
// is changed or written.
type Error struct {
	// Property names what was rejected: "defaultTtl", "ttl" or
	// "indexingMode".
	Property string
	Message  string
}

func (e *Error) Error() string { return e.Message }

// Setting is a container's TTL setting (ttl.md A1). The zero Setting is
// off: the container has no defaultTtl.
type Setting struct {
	// On reports whether TTL is on: defaultTtl is present and not null.
	On bool
	// Default is the default time-to-live in seconds while On: NoDefault
	// (-1) or 1…MaxTTL. It is 0 while off.
	Default int32
}

// Enabled returns the setting for defaultTtl n: NoDefault or 1…MaxTTL.
// Other values give an invalid setting; use ParseDefaultTTL on input.
func Enabled(n int32) Setting { return Setting{On: true, Default: n} }

// Valid reports whether s is one of the settings ParseDefaultTTL returns.
func (s Setting) Valid() bool {
	if !s.On {
		return s.Default == 0
	}
	return s.Default == NoDefault || s.Default >= 1
}

// Value returns defaultTtl as it appears in a container body: Undef when
// off, so that body.With(DefaultTTLProperty, s.Value()) removes the
// property, and the number otherwise.
func (s Setting) Value() document.Value {
	if !s.On {
		return document.Undef
	}
	return document.Int(int64(s.Default))
}

// String describes s for logs and test failures.
func (s Setting) String() string {
	switch {
	case !s.On:
		return "off"
	case s.Default == NoDefault:
		return "on, no default"
	default:
		return "on, " + strconv.Itoa(int(s.Default)) + " s"
	}
}

// MarshalJSON encodes s as defaultTtl: null when off, else the number.
func (s Setting) MarshalJSON() ([]byte, error) {
	if !s.On {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, int64(s.Default), 10), nil
}

// UnmarshalJSON accepts what ParseDefaultTTL accepts.
func (s *Setting) UnmarshalJSON(b []byte) error {
	var v document.Value
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	got, err := ParseDefaultTTL(v)
	if err != nil {
		return err
	}
	*s = got
	return nil
}

// ParseDefaultTTL validates a container's defaultTtl (ttl.md A1). Undef or
// null turns TTL off; -1 turns it on with no default; 1…MaxTTL turns it on
// with that default. Anything else is an *Error naming defaultTtl.
//
// A number is judged by its value, not its spelling: JSON does not tell 5
// from 5.0 (RFC 8259 has one number type, and JavaScript clients cannot
// send them differently), so an integral number written with a fraction or
// an exponent (5.0, 5e0) is the integer 5. A fraction such as 1.5 is
// rejected.
func ParseDefaultTTL(v document.Value) (Setting, error) {
	if !v.IsDefined() || v.IsNull() {
		return Setting{}, nil
	}
	n, ok := integer(v)
	if !ok || !(n == -1 || (n >= 1 && n <= MaxTTL)) {
		return Setting{}, &Error{Property: DefaultTTLProperty, Message: invalidMessage(DefaultTTLProperty, v)}
	}
	return Enabled(int32(n)), nil
}

// CheckIndexingMode enforces ttl.md A5: TTL needs an index, so a container
// with defaultTtl set cannot have indexing mode none. The mode is compared
// without regard to case, as the SDKs send "consistent" and "Consistent".
// An empty mode means the default (consistent) and passes.
func CheckIndexingMode(s Setting, indexingMode string) error {
	if s.On && strings.EqualFold(indexingMode, "none") {
		return &Error{
			Property: "indexingMode",
			Message:  "Indexing mode value cannot be 'none' when 'defaultTtl' is specified in the collection.",
		}
	}
	return nil
}

// ItemKind says how an item's own ttl relates to the container default.
type ItemKind uint8

const (
	// Inherit: ttl absent or null; the item follows the container default.
	Inherit ItemKind = iota
	// Never: ttl -1; the item never expires, whatever the default.
	Never
	// Own: ttl 1…MaxTTL; the item expires that many seconds after its _ts
	// while TTL is on, whatever the default.
	Own
)

func (k ItemKind) String() string {
	switch k {
	case Inherit:
		return "inherit"
	case Never:
		return "never"
	case Own:
		return "own"
	}
	return "invalid"
}

// ItemTTL is an item's own ttl, classified. The zero ItemTTL inherits.
type ItemTTL struct {
	Kind ItemKind
	// Seconds is the item's own ttl when Kind is Own, else 0.
	Seconds int32
}

// OwnTTL returns the classification of ttl n (1…MaxTTL).
func OwnTTL(n int32) ItemTTL { return ItemTTL{Kind: Own, Seconds: n} }

// NeverTTL returns the classification of ttl -1.
func NeverTTL() ItemTTL { return ItemTTL{Kind: Never} }

func (i ItemTTL) String() string {
	if i.Kind == Own {
		return "own " + strconv.Itoa(int(i.Seconds)) + " s"
	}
	return i.Kind.String()
}

// Effective returns the number of seconds after _ts at which the item
// expires under s, and false when it does not expire under s. This is the
// matrix of ttl.md A1.
func (i ItemTTL) Effective(s Setting) (seconds int64, expires bool) {
	if !s.On {
		return 0, false
	}
	switch i.Kind {
	case Own:
		return int64(i.Seconds), true
	case Inherit:
		if s.Default >= 1 {
			return int64(s.Default), true
		}
	}
	return 0, false
}

// ParseItemTTL validates an item's ttl property (v is Undef when the item
// has none) against the container setting at the time of the write (ttl.md
// A1).
//
// While TTL is on, Undef and null inherit, -1 never expires, 1…MaxTTL is the
// item's own ttl, and anything else is an *Error naming ttl, worded as the
// service words it.
//
// While TTL is off the property is an ordinary field: ParseItemTTL never
// fails and returns Classify(v). Expiry ignores it until TTL is turned on;
// then it comes into force measured from the item's _ts (ttl.md A5), which
// is why the classification, and so the item's expiry index entry, must not
// depend on the setting at write time.
//
// Numbers are judged by value, as in ParseDefaultTTL: 5.0 is 5.
func ParseItemTTL(v document.Value, s Setting) (ItemTTL, error) {
	if !s.On {
		return Classify(v), nil
	}
	if !v.IsDefined() || v.IsNull() {
		return ItemTTL{}, nil
	}
	it, ok := classify(v)
	if !ok {
		return ItemTTL{}, &Error{Property: ItemTTLProperty, Message: invalidMessage(ItemTTLProperty, v)}
	}
	return it, nil
}

// Classify returns the classification of a stored ttl property, whatever
// the container setting. It is what the engine indexes under.
//
// A value that would be invalid while TTL is on (0, 1.5, "60", true, an
// object, …) can only have been written while TTL was off, when it was an
// uninterpreted field. It is classed as Inherit: a property that says
// nothing valid about expiry is treated as if absent, so once TTL is
// enabled the item follows the container default like any item without a
// ttl. Treating it as Never would let garbage in a field keep an item
// forever; rejecting it is impossible, as it is already stored.
func Classify(v document.Value) ItemTTL {
	it, ok := classify(v)
	if !ok {
		return ItemTTL{}
	}
	return it
}

// classify returns the classification of a valid ttl value and false for
// an invalid one.
func classify(v document.Value) (ItemTTL, bool) {
	if !v.IsDefined() || v.IsNull() {
		return ItemTTL{}, true
	}
	n, ok := integer(v)
	switch {
	case !ok:
		return ItemTTL{}, false
	case n == -1:
		return NeverTTL(), true
	case n >= 1 && n <= MaxTTL:
		return OwnTTL(int32(n)), true
	}
	return ItemTTL{}, false
}

// integer returns the value of an integral number within the int32 range
// (and a little beyond, so that out-of-range values are reported as such).
func integer(v document.Value) (int64, bool) {
	if v.Kind() != document.Number {
		return 0, false
	}
	if v.IsInt() {
		return v.Int(), true
	}
	f := v.Float()
	if f != math.Trunc(f) || math.IsInf(f, 0) || f < math.MinInt64/2 || f > math.MaxInt64/2 {
		return 0, false
	}
	return int64(f), true
}

// invalidMessage words a rejection as the service does: "The input ttl '0'
// is invalid. Ensure to provide a nonzero positive integer less than or
// equal to '2147483647', or '-1' which means never expire."
func invalidMessage(property string, v document.Value) string {
	shown := v.String()
	if v.Kind() == document.String {
		shown = v.Str()
	}
	return fmt.Sprintf("The input %s '%s' is invalid. Ensure to provide a nonzero positive integer less than or equal to '%d', or '-1' which means never expire.",
		property, shown, MaxTTL)
}
