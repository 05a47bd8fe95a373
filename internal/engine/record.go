package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// itemRecord is what the engine stores for an item: the fields every read
// and the purger need without parsing JSON, then the item's JSON exactly as
// it is served (system properties included), so a point read copies bytes.
type itemRecord struct {
	ts      int64  // _ts, whole Unix seconds
	lsn     uint64 // LSN of the write that produced this version
	ttlKind ttlKind
	ttlSecs int32 // the item's own ttl when ttlKind == ttlOwn
	// noImage says this version was written without a record image beside
	// its expiry entry (hasImage was false), so removing it deletes none.
	// Records written before the flag existed leave it false, and their
	// removal deletes the image key whether or not it exists, as it did.
	noImage bool
	pk      []byte // canonical partition key bytes
	id      string
	epk     string // effective partition key: which range holds the item
	json    []byte
}

// detach copies the record's slices out of the store's buffers, which are
// valid only until the next read (storage contract), for a record that
// outlives later reads.
func (r *itemRecord) detach() {
	r.json, r.pk = bytes.Clone(r.json), bytes.Clone(r.pk)
}

// ttlKind is ttl.ItemKind as stored: how the item's own ttl property reads
// whatever the container's setting at write time, since TTL may be enabled
// later and then counts from _ts (ttl.md A5).
type ttlKind uint8

const recordVersion = 2

// recordNoImage marks itemRecord.noImage in the byte that holds the
// ttlKind, whose values are far below it.
const recordNoImage = 0x80

func (r *itemRecord) encode() []byte {
	b := make([]byte, 0, 40+len(r.pk)+len(r.id)+len(r.epk)+len(r.json))
	b = append(b, recordVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(r.ts))
	b = binary.BigEndian.AppendUint64(b, r.lsn)
	kind := byte(r.ttlKind)
	if r.noImage {
		kind |= recordNoImage
	}
	b = append(b, kind)
	b = binary.BigEndian.AppendUint32(b, uint32(r.ttlSecs))
	b = binary.AppendUvarint(b, uint64(len(r.pk)))
	b = append(b, r.pk...)
	b = binary.AppendUvarint(b, uint64(len(r.id)))
	b = append(b, r.id...)
	b = binary.AppendUvarint(b, uint64(len(r.epk)))
	b = append(b, r.epk...)
	return append(b, r.json...)
}

var errBadRecord = errors.New("corrupt item record")

// decodeItemRecord parses a stored record. The slices of the result alias b.
func decodeItemRecord(b []byte) (itemRecord, error) {
	var r itemRecord
	if len(b) < 22 || b[0] != recordVersion {
		return r, errBadRecord
	}
	r.ts = int64(binary.BigEndian.Uint64(b[1:]))
	r.lsn = binary.BigEndian.Uint64(b[9:])
	r.ttlKind = ttlKind(b[17] &^ recordNoImage)
	r.noImage = b[17]&recordNoImage != 0
	r.ttlSecs = int32(binary.BigEndian.Uint32(b[18:]))
	rest := b[22:]
	n, w := binary.Uvarint(rest)
	if w <= 0 || uint64(len(rest)-w) < n {
		return r, errBadRecord
	}
	r.pk = rest[w : w+int(n)]
	rest = rest[w+int(n):]
	n, w = binary.Uvarint(rest)
	if w <= 0 || uint64(len(rest)-w) < n {
		return r, errBadRecord
	}
	r.id = string(rest[w : w+int(n)])
	rest = rest[w+int(n):]
	n, w = binary.Uvarint(rest)
	if w <= 0 || uint64(len(rest)-w) < n {
		return r, errBadRecord
	}
	r.epk = string(rest[w : w+int(n)])
	r.json = rest[w+int(n):]
	return r, nil
}
