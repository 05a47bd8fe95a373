package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// uniqueKeys returns the unique-key index entries of an item: one per
// unique key of the container's policy, scoped to the item's logical
// partition as the service scopes them. A missing value counts as null;
// values compare as DISTINCT compares them (containerRecord.UniqueByValue).
func uniqueKeys(c *containerRecord, body document.Value, pk []byte) [][]byte {
	if len(c.uniqueKeys) == 0 {
		return nil
	}
	out := make([][]byte, 0, len(c.uniqueKeys))
	for i, paths := range c.uniqueKeys {
		k := collPrefix(famUnique, c.Rid)
		k = binary.AppendUvarint(k, uint64(len(pk)))
		k = append(k, pk...)
		k = append(k, byte(i))
		for _, p := range paths {
			v := body.At(p)
			if !v.IsDefined() {
				v = document.NullValue()
			}
			var enc []byte
			if c.UniqueByValue {
				enc = eval.CanonicalKey(nil, v)
			} else {
				enc = v.AppendJSON(nil)
			}
			k = binary.AppendUvarint(k, uint64(len(enc)))
			k = append(k, enc...)
		}
		out = append(out, k)
	}
	return out
}

// checkUniqueKeys refuses a write at loc of an item whose unique-key
// entries are keys (uniqueKeys) when it would give two live items in one
// partition the same unique key values. Entries left by expired items do
// not count: their owner is invisible, and the entry goes with the purge.
func (e *Engine) checkUniqueKeys(tx storage.Txn, c *containerRecord, keys [][]byte, loc []byte, now time.Time) error {
	for _, k := range keys {
		v, err := tx.Get(k)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if bytes.Equal(v, loc) {
			continue
		}
		owner, err := tx.Get(itemKey(c.Rid, v))
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		rec, err := decodeItemRecord(owner)
		if err != nil {
			return err
		}
		if c.expired(&rec, now) {
			// The expired owner keeps its entry until purged; take it over.
			continue
		}
		return errorf(Conflict, "Unique index constraint violation.")
	}
	return nil
}
