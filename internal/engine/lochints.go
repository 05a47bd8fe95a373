package engine

import "sync"

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
// again elsewhere) finds no record or another item's, and the lookup goes
// through the id entry as it would without the hint. So hints need no
// invalidation for correctness, only a bound on their number.
type locHints struct {
	mu   sync.Mutex
	max  int
	locs map[string][]byte // by id entry key; values are never modified
}

// defaultLocHints bounds the hints an engine keeps: some 2 MB at about a
// hundred bytes a hint.
const defaultLocHints = 1 << 14

func newLocHints(max int) *locHints {
	return &locHints{max: max, locs: make(map[string][]byte)}
}

// get returns the hinted location for an id entry's key, or nil. The
// slice is shared: the caller must not modify it, and appending to it
// copies it.
func (h *locHints) get(idKey []byte) []byte {
	h.mu.Lock()
	loc := h.locs[string(idKey)]
	h.mu.Unlock()
	return loc[:len(loc):len(loc)]
}

// put remembers loc for idKey, copying both. When the hints are at their
// bound, an eighth of them, chosen by the map's random order, make room.
func (h *locHints) put(idKey, loc []byte) {
	v := make([]byte, len(loc))
	copy(v, loc)
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.locs[string(idKey)]; ok {
		if string(old) != string(v) {
			h.locs[string(idKey)] = v
		}
		return
	}
	if len(h.locs) >= h.max {
		drop := max(h.max/8, 1)
		for k := range h.locs {
			delete(h.locs, k)
			if drop--; drop == 0 {
				break
			}
		}
	}
	h.locs[string(idKey)] = v
}

// forget drops the hint for idKey, once its item is deleted.
func (h *locHints) forget(idKey []byte) {
	h.mu.Lock()
	delete(h.locs, string(idKey))
	h.mu.Unlock()
}

func (h *locHints) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.locs)
}
