package engine

import (
	"encoding/binary"
	"errors"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// Usage counters. Every write that adds or removes an item, or changes its
// size, updates in the same transaction
//
//	'n'+collRid            → items(8), bytes(8): the container's totals
//	'n'+collRid+escaped EPK → items(8): the items of one effective partition key
//
// so reading a container's usage costs O(1) and the planner knows how many
// items a logical partition holds before it reads any (plan.Scope). Items
// that expired but are not yet purged are still counted here; ReadContainer
// subtracts them (usage in container.go), the expiry index tells which.
//
// A partition's count is keyed by its EPK, which two partition key values
// share only on a hash collision; the count is then their sum, which is
// what the partition's key span holds.

func usageKey(collRid []byte) []byte { return collPrefix(famUsage, collRid) }

func partitionCountKey(collRid []byte, epk string) []byte {
	return appendEPK(collPrefix(famUsage, collRid), epk, true)
}

// addUsage adds items and bytes to the container's totals and items to its
// partition's count.
func addUsage(tx storage.Txn, c *containerRecord, epk string, items, bytes int64) error {
	if items == 0 && bytes == 0 {
		return nil
	}
	k := usageKey(c.Rid)
	n, size, err := readUsage(tx, k)
	if err != nil {
		return err
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(max(n+items, 0)))
	v = binary.BigEndian.AppendUint64(v, uint64(max(size+bytes, 0)))
	if err := tx.Set(k, v); err != nil {
		return err
	}
	if items == 0 {
		return nil
	}
	pk := partitionCountKey(c.Rid, epk)
	n, _, err = readUsage(tx, pk)
	if err != nil {
		return err
	}
	if n+items <= 0 {
		return tx.Delete(pk)
	}
	return tx.Set(pk, binary.BigEndian.AppendUint64(nil, uint64(n+items)))
}

// readUsage reads a counter value: items, and bytes where it has them.
func readUsage(r storage.Reader, key []byte) (items, bytes int64, err error) {
	v, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if len(v) >= 8 {
		items = int64(binary.BigEndian.Uint64(v))
	}
	if len(v) >= 16 {
		bytes = int64(binary.BigEndian.Uint64(v[8:]))
	}
	return items, bytes, nil
}

// decodeCount reads a partition count value.
func decodeCount(v []byte) uint64 {
	if len(v) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}
