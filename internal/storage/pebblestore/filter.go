package pebblestore

import (
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
)

// bloomBitsPerKey gives bloom filters about a 1% false-positive rate.
const bloomBitsPerKey = 10

// KeyFilter says which keys the tables' bloom filters hold. A filter only
// helps Get (a point read that misses skips the table), yet every key a
// flush or compaction writes is hashed into one; a store whose keys are
// mostly index entries that are only ever iterated over spends much of its
// compaction time building filters nobody consults.
type KeyFilter struct {
	// Name identifies the rule. A table records the name of the filter it
	// was built with and its filter is used only under the same name, so
	// the name must change whenever Skip changes.
	Name string
	// Skip reports keys that are never read with Get. Filters leave them
	// out, and a Get for one of them reads the table.
	Skip func(key []byte) bool
}

// skipFilter is a bloom filter that leaves out the keys kf.Skip reports.
type skipFilter struct {
	bloom bloom.FilterPolicy
	kf    KeyFilter
}

var _ pebble.FilterPolicy = skipFilter{}

func (f skipFilter) Name() string { return "mayfly." + f.kf.Name + "." + f.bloom.Name() }

// MayContain answers true for skipped keys, which the filter never saw.
func (f skipFilter) MayContain(ftype pebble.FilterType, filter, key []byte) bool {
	return f.kf.Skip(key) || f.bloom.MayContain(ftype, filter, key)
}

func (f skipFilter) NewWriter(ftype pebble.FilterType) pebble.FilterWriter {
	return skipWriter{w: f.bloom.NewWriter(ftype), skip: f.kf.Skip}
}

type skipWriter struct {
	w    pebble.FilterWriter
	skip func(key []byte) bool
}

func (w skipWriter) AddKey(key []byte) {
	if !w.skip(key) {
		w.w.AddKey(key)
	}
}

func (w skipWriter) Finish(buf []byte) []byte { return w.w.Finish(buf) }

// filterPolicies returns the policy new tables are built with, and every
// policy a table may have been built with, by name: a table whose filter
// has an unknown name is read as if it had none.
func filterPolicies(kf *KeyFilter) (pebble.FilterPolicy, map[string]pebble.FilterPolicy) {
	plain := bloom.FilterPolicy(bloomBitsPerKey)
	all := map[string]pebble.FilterPolicy{plain.Name(): plain}
	if kf == nil {
		return plain, all
	}
	f := skipFilter{bloom: plain, kf: *kf}
	all[f.Name()] = f
	return f, all
}
