package engine

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"strings"
)

// The engine owns the key layout (docs/design/storage.md records it). Every
// key starts with a one-byte family prefix so families never interleave.
const (
	famCounter    = 'a' // 'a'+name → uint64 counter
	famDatabase   = 'd' // 'd'+dbID → database record
	famContainer  = 'c' // 'c'+dbRid(4)+collID → container record
	famOffer      = 'o' // 'o'+offerRid → offer record
	famItem       = 'i' // 'i'+collRid(8)+loc → item record: by partition, then in _rid order
	famItemKey    = 'k' // 'k'+collRid(8)+uvarint(len pk)+pk+id → loc
	famByRid      = 'r' // 'r'+collRid(8)+seq(8) → loc: items in _rid (insertion) order
	famUnique     = 'u' // 'u'+collRid(8)+uvarint(len pk)+pk+policy#+values → loc
	famOwnDue     = 't' // 't'+collRid(8)+due(8)+seq(8) → size+loc (items with their own ttl)
	famByTs       = 's' // 's'+collRid(8)+_ts(8)+seq(8) → size+loc (items inheriting the default)
	famImage      = 'e' // 'e'+collRid(8)+'t'|'s'+key(16) → the item record of expiry entry 't'|'s'+collRid+key, while TTL is on (purge.go)
	famLSN        = 'l' // 'l'+collRid(8)(+seq(1)) → last LSN, items, bytes, high-water time of one sequence (usage.go, sequence.go)
	famIndex      = 'x' // 'x'+collRid(8)+version(4)+path+value+loc, or +0x00 0x03+ordinal(2)+values+loc for a composite → "" (index.go)
	famUsage      = 'n' // 'n'+collRid(8)+escaped EPK → items of that EPK (usage.go)
	famAttachment = 'm' // 'm'+collRid(8)+uvarint(len pk)+pk+uvarint(len id)+id+attachment id → attachment record (attachment.go)
	famVector     = 'q' // 'q'+collRid(8)+ordinal(1)+loc → the item's vector at the path of vector index ordinal, as float64s (vectors.go)
	famWord       = 'h' // 'h'+collRid(8)+ordinal(1)+word+0x00+loc → "": a word of the item's text at full-text path ordinal (words.go)

	// Users and permissions (users.go).
	famUser       = 'b' // 'b'+dbRid(4)+userID → user record
	famPermission = 'p' // 'p'+userRid(8)+permissionID → permission record; userRid starts with dbRid

	// The change feed (changefeed.go).
	famFeedLatest  = 'f' // 'f'+collRid(8)+lsn(8)+seq(8) → _ts(8), EPK, pk, high-water(8): latest version of each live item
	famFeedVersion = 'v' // 'v'+collRid(8)+lsn(8)+ord(4) → change record: every create, replace, delete, expiry
	famFeedFloor   = 'w' // 'w'+collRid(8)(+seq(1)) → lowest LSN a sequence's version log may hold (trimming's low-water mark)
)

func counterKey(name string) []byte { return append([]byte{famCounter}, name...) }

func databaseKey(id string) []byte { return append([]byte{famDatabase}, id...) }

func containerPrefix(dbRid []byte) []byte {
	return append([]byte{famContainer}, dbRid...)
}

func containerKey(dbRid []byte, id string) []byte {
	return append(containerPrefix(dbRid), id...)
}

func offerKey(rid string) []byte { return append([]byte{famOffer}, rid...) }

func userPrefix(dbRid []byte) []byte { return append([]byte{famUser}, dbRid...) }

func userKey(dbRid []byte, id string) []byte { return append(userPrefix(dbRid), id...) }

func permissionPrefix(userRid []byte) []byte { return append([]byte{famPermission}, userRid...) }

func permissionKey(userRid []byte, id string) []byte {
	return append(permissionPrefix(userRid), id...)
}

func collPrefix(fam byte, collRid []byte) []byte {
	k := make([]byte, 0, 1+len(collRid)+24)
	k = append(k, fam)
	return append(k, collRid...)
}

// An item's location, loc, is its effective partition key in binary,
// escaped (appendEscaped: self-delimiting and order-preserving), then its
// sequence number. Items are stored under 'i'+collRid+loc and index
// entries end in loc, so a logical partition, a hierarchical key prefix and
// a partition key range are each one contiguous span of item keys, an index
// entry tells its item's partition without reading the item, and within a
// logical partition items keep their insertion order.
func itemLoc(epk string, seq uint64) []byte {
	b := make([]byte, 0, len(epk)/2+12)
	return binary.BigEndian.AppendUint64(appendEPK(b, epk, true), seq)
}

// locSeq is the sequence number of a location.
func locSeq(loc []byte) uint64 {
	if len(loc) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(loc[len(loc)-8:])
}

// appendEPK appends the escaped binary form of an upper-case hex EPK.
// Without the terminator (whole false) the result is a bound: every
// location whose EPK is at or above epk sorts at or above it, every other
// below. An odd final digit is read as its high nibble, which keeps that
// order; a character that is not a hex digit ends the key.
func appendEPK(dst []byte, epk string, whole bool) []byte {
	for i := 0; i < len(epk); i += 2 {
		hi, ok := unhex(epk[i])
		if !ok {
			break
		}
		lo := byte(0)
		if i+1 < len(epk) {
			if lo, ok = unhex(epk[i+1]); !ok {
				lo = 0
			}
		}
		if b := hi<<4 | lo; b == 0 {
			dst = append(dst, 0, 0xff)
		} else {
			dst = append(dst, b)
		}
	}
	if whole {
		dst = append(dst, 0, 1)
	}
	return dst
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// byRidKey is the item's entry in _rid order. Scans wider than a logical
// partition walk it, so they return items in the order the service does
// (a physical partition's documents in _rid order), and seek to a page's
// position by sequence.
func byRidKey(collRid []byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(collPrefix(famByRid, collRid), seq)
}

func itemKey(collRid, loc []byte) []byte {
	k := collPrefix(famItem, collRid)
	return append(k, loc...)
}

func itemIDKey(collRid, pk []byte, id string) []byte {
	return append(itemIDPrefix(collRid, pk), id...)
}

// itemIDPrefix is the prefix of the id entries of the logical partition
// whose key bytes are pk, and of no other: the length ahead of the key
// ends it.
func itemIDPrefix(collRid, pk []byte) []byte {
	k := collPrefix(famItemKey, collRid)
	k = binary.AppendUvarint(k, uint64(len(pk)))
	return append(k, pk...)
}

func ownDueKey(collRid []byte, due int64, seq uint64) []byte {
	k := binary.BigEndian.AppendUint64(collPrefix(famOwnDue, collRid), uint64(due))
	return binary.BigEndian.AppendUint64(k, seq)
}

func byTsKey(collRid []byte, ts int64, seq uint64) []byte {
	k := binary.BigEndian.AppendUint64(collPrefix(famByTs, collRid), uint64(ts))
	return binary.BigEndian.AppendUint64(k, seq)
}

// imageKey is where the record of the item with expiry entry ek is copied:
// the image family orders the copies as the two expiry indexes order
// their entries, so the purge reads them in one forward pass.
func imageKey(collRid, ek []byte) []byte {
	k := collPrefix(famImage, collRid)
	k = append(k, ek[0])
	return append(k, ek[1+len(collRid):]...)
}

// imageEntry is the expiry entry whose record image is at key ik, or nil
// if ik is not an image key of the container.
func imageEntry(collRid, ik []byte) []byte {
	prefix := collPrefix(famImage, collRid)
	if len(ik) != len(prefix)+17 || !bytes.HasPrefix(ik, prefix) {
		return nil
	}
	if fam := ik[len(prefix)]; fam != famOwnDue && fam != famByTs {
		return nil
	}
	return append(collPrefix(ik[len(prefix)], collRid), ik[len(prefix)+1:]...)
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// ridString renders a binary resource id the way Cosmos DB does: base64
// with '/' written as '-'.
func ridString(b []byte) string {
	return strings.ReplaceAll(base64.StdEncoding.EncodeToString(b), "/", "-")
}

// Hot reports the keys nearly every request reads and few writes write:
// the container records, read by every operation on a container and
// written when its properties, offer links or index state change. A store
// may keep their committed values in memory (pebblestore.Options.Hot).
func Hot(key []byte) bool { return len(key) > 0 && key[0] == famContainer }

// IteratedOnlyRule names the rule IteratedOnly applies. A store that keeps
// such keys out of its bloom filters records the name with each filter, so
// it must change whenever the rule does.
const IteratedOnlyRule = "engine-keys-3"

// IteratedOnly reports keys the engine reads only by iterating, never with
// a point read: index entries, expiry index entries and their record
// images, the _rid-order entries, and change-feed records, most of the
// keys a store holds.
func IteratedOnly(key []byte) bool {
	if len(key) == 0 {
		return false
	}
	switch key[0] {
	case famIndex, famOwnDue, famByTs, famImage, famFeedLatest, famFeedVersion, famByRid:
		return true
	}
	return false
}
