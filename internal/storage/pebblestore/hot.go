package pebblestore

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// hotKeys keeps the committed values of the keys Options.Hot names: a few
// keys nearly every request reads (the engine's container records), which
// change rarely. Reading one from here is a map lookup; from Pebble it is
// a walk down every level of the tree, one of a point read's three Gets
// (docs/benchmarks.md, "Hot keys").
//
// A value kept is valid for a read only if no commit that writes a hot
// key became visible between the value being read and the read's own
// view being taken. Every such commit is bracketed by stamp: it adds one
// to the low half (commits in flight) before it becomes visible, and when
// it has returned it adds one to the high half (commits done) and takes
// the one off the low half, in one atomic step. A reader loads the stamp
// before its view is taken and again when it uses or keeps a value; if
// both loads are equal with nothing in flight, no hot commit was in flight
// or completed in between, so the view sees exactly the hot keys as they
// were at that stamp. Values are kept with the stamp they were read at and
// used only at the same stamp.
type hotKeys struct {
	match func(key []byte) bool
	stamp atomic.Uint64

	mu   sync.Mutex
	at   uint64 // the stamp vals were read at
	vals map[string][]byte
}

const (
	hotInFlight = 1
	hotDone     = 1<<32 - 1 // one more done, one fewer in flight
)

func newHotKeys(match func([]byte) bool) *hotKeys {
	if match == nil {
		return nil
	}
	return &hotKeys{match: match, vals: map[string][]byte{}}
}

// begin marks a commit that writes hot keys, before it becomes visible;
// end, once it has returned, whether it committed or not.
func (h *hotKeys) begin() { h.stamp.Add(hotInFlight) }
func (h *hotKeys) end()   { h.stamp.Add(hotDone) }

// now is the stamp a reader takes before its view, and ok is false while a
// hot commit is in flight, when nothing may be used or kept.
func (h *hotKeys) now() (stamp uint64, ok bool) {
	s := h.stamp.Load()
	return s, uint32(s) == 0
}

// get returns a copy of the value of key kept at stamp.
func (h *hotKeys) get(key []byte, stamp uint64) ([]byte, bool) {
	h.mu.Lock()
	v, ok := h.vals[string(key)]
	ok = ok && h.at == stamp
	h.mu.Unlock()
	if !ok || h.stamp.Load() != stamp {
		return nil, false
	}
	return bytes.Clone(v), true
}

// put keeps v, read from a view taken at stamp, if no hot commit has begun
// since. Values kept at an earlier stamp are dropped.
func (h *hotKeys) put(key, v []byte, stamp uint64) {
	if h.stamp.Load() != stamp {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at != stamp {
		clear(h.vals)
		h.at = stamp
	}
	h.vals[string(key)] = bytes.Clone(v)
}
