package engine

import (
	"hash/maphash"
	"sync"
)

// locHints remembers where items were found: by the key of an item's id
// entry, the sequence number of the location that entry held. A point
// operation that has a hint reads the record at that location, rebuilt
// from the partition key it was given and the sequence number, directly
// and skips the id entry, one of its two lookups, each of which walks
// every level of the store that may hold its key (docs/benchmarks.md,
// "Where an item is: a hint").
//
// A hint is a guess, never trusted: findItem uses the record it finds at
// the hinted location only if the record's partition key and id are the
// ones asked for. At most one item of a container has a given partition
// key and id in any state of the store, and its id entry and its record
// are written and deleted in the same transaction, so a record found there
// with that key and id is the item, in whatever snapshot the reader has.
// A hint that is stale (the item was deleted, or deleted and created
// again elsewhere) or wrong (two keys with the same hash) finds no record
// or another item's, and the lookup goes through the id entry as it would
// without the hint. So hints need no invalidation for correctness, and a
// key's hash can stand for the key.
//
// The hints are a fixed table of 16-byte slots, allocated once and holding
// no pointers: the collector has nothing in it to scan. Slots go in sets
// of four, a cache line, the last used first; a new hint takes the first
// slot of its set and the last one's hint is dropped. With sets of two,
// a working set of 10,000 items written in turn missed a third of its
// hints: the keys of a set that three of them shared pushed each other
// out before they came round again.
type locHints struct {
	seed  maphash.Seed
	mu    sync.Mutex
	slots []hintSlot // a multiple of hintWays, a power of two
}

type hintSlot struct {
	h   uint64 // the id entry key's hash; 0 for an empty slot
	seq uint64 // the sequence number of the location
}

// hintWays is the number of slots in a set.
const hintWays = 4

// defaultLocHints is the number of slots: 512 KB.
const defaultLocHints = 1 << 15

func newLocHints(slots int) *locHints {
	return &locHints{seed: maphash.MakeSeed(), slots: make([]hintSlot, max(slots, hintWays))}
}

// set returns idKey's set of slots and its hash.
func (h *locHints) set(idKey []byte) ([]hintSlot, uint64) {
	x := maphash.Bytes(h.seed, idKey)
	if x == 0 {
		x = 1
	}
	i := int(x) & (len(h.slots) - 1) &^ (hintWays - 1)
	return h.slots[i : i+hintWays], x
}

// toFront moves slot i of s to the front, the others down by one.
func toFront(s []hintSlot, i int) {
	first := s[i]
	copy(s[1:i+1], s[:i])
	s[0] = first
}

// get returns the sequence number hinted for an id entry's key.
func (h *locHints) get(idKey []byte) (uint64, bool) {
	s, x := h.set(idKey)
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range s {
		if s[i].h == x {
			toFront(s, i)
			return s[0].seq, true
		}
	}
	return 0, false
}

// put remembers seq for idKey.
func (h *locHints) put(idKey []byte, seq uint64) {
	s, x := h.set(idKey)
	h.mu.Lock()
	defer h.mu.Unlock()
	i := len(s) - 1
	for j := range s {
		if s[j].h == x {
			i = j
			break
		}
	}
	toFront(s, i)
	s[0] = hintSlot{h: x, seq: seq}
}

// forget drops the hint for idKey, once its item is deleted.
func (h *locHints) forget(idKey []byte) {
	s, x := h.set(idKey)
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range s {
		if s[i].h == x {
			s[i] = hintSlot{}
		}
	}
}
