package engine

import (
	"hash/maphash"
	"sync"
)

// locHints remembers where items were found: by the key of an item's id
// entry, the location that entry held. A point operation that has a hint
// reads the record at that location directly and skips the id entry, one
// of its two lookups, each of which walks every level of the store that
// may hold its key (docs/benchmarks.md, "Where an item is: a hint").
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
// The hints are a fixed table of small slots, allocated once and holding
// no pointers: the collector has nothing in it to scan, and the server's
// heap target, a multiple of the live heap, grows by the table's size
// only. Slots go in pairs, the last used first; a new hint takes the
// first slot of its pair and moves the other out.
type locHints struct {
	seed  maphash.Seed
	mu    sync.Mutex
	slots []hintSlot // a power of two
}

type hintSlot struct {
	h   uint64 // the id entry key's hash; 0 for an empty slot
	n   uint8
	loc [maxHintedLoc]byte
}

// maxHintedLoc is the longest location kept: a single-path partition
// key's (a 16-byte hash, escaped, then the sequence number) fits with
// room; longer ones, of hierarchical keys, are looked up every time.
const maxHintedLoc = 31

// defaultLocHints is the number of slots: 640 KB.
const defaultLocHints = 1 << 14

func newLocHints(slots int) *locHints {
	return &locHints{seed: maphash.MakeSeed(), slots: make([]hintSlot, slots)}
}

// pair returns the index of the first slot of idKey's pair, and its hash.
func (h *locHints) pair(idKey []byte) (int, uint64) {
	x := maphash.Bytes(h.seed, idKey)
	if x == 0 {
		x = 1
	}
	return int(x) & (len(h.slots) - 1) &^ 1, x
}

// get returns a copy of the location hinted for an id entry's key, or nil.
func (h *locHints) get(idKey []byte) []byte {
	i, x := h.pair(idKey)
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.slots[i : i+2]
	if s[1].h == x {
		s[0], s[1] = s[1], s[0]
	} else if s[0].h != x {
		return nil
	}
	loc := make([]byte, s[0].n)
	copy(loc, s[0].loc[:s[0].n])
	return loc
}

// put remembers loc for idKey.
func (h *locHints) put(idKey, loc []byte) {
	if len(loc) > maxHintedLoc {
		return
	}
	i, x := h.pair(idKey)
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.slots[i : i+2]
	switch x {
	case s[0].h:
	case s[1].h:
		s[0], s[1] = s[1], s[0]
	default:
		s[1] = s[0]
		s[0].h = x
	}
	s[0].n = uint8(copy(s[0].loc[:], loc))
}

// forget drops the hint for idKey, once its item is deleted.
func (h *locHints) forget(idKey []byte) {
	i, x := h.pair(idKey)
	h.mu.Lock()
	defer h.mu.Unlock()
	for j := i; j < i+2; j++ {
		if h.slots[j].h == x {
			h.slots[j] = hintSlot{}
		}
	}
}
