package engine

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// The rules of ttl.md live in package ttl; this file only adapts them to
// the engine's records and errors.

func ttlError(err error) error {
	var te *ttl.Error
	if errors.As(err, &te) {
		return &Error{Code: BadRequest, Message: te.Message}
	}
	return err
}

func parseDefaultTTL(v document.Value) (ttl.Setting, *Error) {
	s, err := ttl.ParseDefaultTTL(v)
	if err != nil {
		var te *ttl.Error
		if errors.As(err, &te) {
			return ttl.Setting{}, &Error{Code: BadRequest, Message: te.Message}
		}
		return ttl.Setting{}, &Error{Code: BadRequest, Message: err.Error()}
	}
	return s, nil
}

func (r *itemRecord) itemTTL() ttl.ItemTTL {
	return ttl.ItemTTL{Kind: ttl.ItemKind(r.ttlKind), Seconds: r.ttlSecs}
}

// expired reports whether the item is invisible at now: every API asks
// this one question, so they never disagree (ttl.md A3).
func (c *containerRecord) expired(r *itemRecord, now time.Time) bool {
	if !c.TTL.NeedsPurge() {
		return false
	}
	// A change this operation can see has happened: its instant is not
	// later than this operation's, even when another gateway dated it by a
	// clock a hair ahead of ours.
	if from := c.TTL.Current().From; now.Before(from) {
		now = from
	}
	return ttl.Expired(r.ts, r.itemTTL(), c.TTL, now)
}

// expiryKey is the item's entry in one of the two expiry indexes: by its
// own due time, or by _ts for items that inherit the container default (so
// a default change needs no rewrite).
func expiryKey(c *containerRecord, rec *itemRecord, seq uint64) []byte {
	e := ttl.EntryFor(rec.ts, rec.itemTTL())
	switch e.Index {
	case ttl.DueIndex:
		return ownDueKey(c.Rid, e.Key, seq)
	case ttl.InheritIndex:
		return byTsKey(c.Rid, e.Key, seq)
	}
	return nil
}

// hasImage reports whether an item version written now gets a record
// image next to its expiry entry: only when it can fall due under the
// container's current setting. An item that inherits defaultTtl -1 cannot
// until the setting changes, and its image would be one more full copy of
// its record kept for nothing; should the setting change, the purge reads
// it from its record, as it reads items written while TTL was off.
func hasImage(c *containerRecord, rec *itemRecord) bool {
	_, ok := ttl.DueAt(rec.ts, rec.itemTTL(), c.TTL.Setting())
	return ok
}

// expiryValue is what an expiry entry holds: the item's size, for usage
// (expired items stop counting before they are purged), and its location.
func expiryValue(rec *itemRecord, loc []byte) []byte {
	v := binary.AppendUvarint(make([]byte, 0, 4+len(loc)), uint64(len(rec.json)))
	return append(v, loc...)
}

// decodeExpiryValue splits an expiry entry's value; ok is false when it is
// malformed.
func decodeExpiryValue(v []byte) (size int64, loc []byte, ok bool) {
	n, w := binary.Uvarint(v)
	if w <= 0 || len(v)-w < 10 {
		return 0, nil, false
	}
	return int64(n), v[w:], true
}
