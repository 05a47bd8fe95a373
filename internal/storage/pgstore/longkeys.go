package pgstore

import (
	"bytes"
	"crypto/sha256"
)

// Long keys. PostgreSQL refuses a B-tree index entry larger than a third
// of a page (2,704 bytes with 8 KiB pages), and the engine's keys have no
// such bound: an index entry holds the string it indexes. So the primary
// key k of mayfly_kv holds a key of up to headLen bytes as it is, and a
// longer key as its first headLen bytes followed by its SHA-256, with the
// key itself in the column kx (NULL for the others).
//
// A stored key sorts as its key does against every other key except the
// longer keys with the same first headLen bytes, its group, among which
// the digests decide. A group is contiguous in k's order (after the key
// that is exactly the shared head, when there is one), so a range in key
// order is a range in k's order widened to whole groups at its ends and
// then cut to the keys themselves; iterators sort a group they read
// (iter.fetch). Groups are rare: keys that share two kilobytes.
const headLen = 2000

// storedKey returns the primary key under which k is stored.
func storedKey(k []byte) []byte {
	if len(k) <= headLen {
		return k
	}
	sum := sha256.Sum256(k)
	return append(k[:headLen:headLen], sum[:]...)
}

// storedKeys returns the primary keys of keys.
func storedKeys(keys [][]byte) [][]byte {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = storedKey(k)
	}
	return out
}

// longKey returns k when it is stored with its digest (kx), else nil.
func longKey(k []byte) []byte {
	if len(k) <= headLen {
		return nil
	}
	return k
}

// long reports whether a stored key is a long key's head and digest.
func long(stored []byte) bool { return len(stored) > headLen }

// sameGroup reports whether stored keys a and b are long keys of one
// group.
func sameGroup(a, b []byte) bool {
	return long(a) && long(b) && bytes.Equal(a[:headLen], b[:headLen])
}

// lowerBound returns the smallest stored key of the keys >= k: k itself,
// or, for a long k, its head, before its whole group.
func lowerBound(k []byte) []byte {
	if len(k) <= headLen {
		return k
	}
	return k[:headLen]
}

// upperBound returns a stored key above every stored key of the keys < k:
// k itself, or, for a long k, the end of its group; nil when there is
// none.
func upperBound(k []byte) []byte {
	if len(k) <= headLen {
		return k
	}
	return prefixEnd(k[:headLen])
}

// prefixEnd returns the smallest key above every key with prefix p, nil
// when there is none (p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
