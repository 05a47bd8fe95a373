package engine

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// Usage counters. Every write that adds or removes an item, or changes its
// size, updates in the same transaction
//
//	'l'+collRid             → last LSN(8), items(8), bytes(8): the container's state
//	'n'+collRid+escaped EPK → items(8): the items of one effective partition key
//
// The totals share the key of the container's last LSN, which every write
// reads and writes already, so they cost no read of their own (a later
// read of it in the transaction finds it in the transaction's batch);
// so reading a container's usage costs O(1) and the planner knows how many
// items a logical partition holds before it reads any (plan.Scope). Items
// that expired but are not yet purged are still counted here; ReadContainer
// subtracts them (usage in container.go), the expiry index tells which.
//
// A partition's count is keyed by its EPK, which two partition key values
// share only on a hash collision; the count is then their sum, which is
// what the partition's key span holds.

// containerState is the value under lsnKey.
type containerState struct {
	lsn          uint64
	items, bytes int64
}

func (st containerState) encode() []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 24), st.lsn)
	b = binary.BigEndian.AppendUint64(b, uint64(max(st.items, 0)))
	return binary.BigEndian.AppendUint64(b, uint64(max(st.bytes, 0)))
}

// readState reads the container's state; a container without one (new)
// reads as zeros.
func readState(r storage.Reader, collRid []byte) (containerState, error) {
	var st containerState
	v, err := r.Get(lsnKey(collRid))
	if errors.Is(err, storage.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if len(v) != 8 && len(v) != 24 {
		return st, fmt.Errorf("container state %x: %w", v, errBadRecord)
	}
	st.lsn = binary.BigEndian.Uint64(v)
	if len(v) == 24 {
		st.items = int64(binary.BigEndian.Uint64(v[8:]))
		st.bytes = int64(binary.BigEndian.Uint64(v[16:]))
	}
	return st, nil
}

func partitionCountKey(collRid []byte, epk string) []byte {
	return appendEPK(collPrefix(famUsage, collRid), epk, true)
}

// addUsage adds items and bytes to the container's totals and items to its
// partition's count.
func addUsage(tx storage.Txn, c *containerRecord, epk string, items, bytes int64) error {
	if err := addTotals(tx, c, items, bytes); err != nil {
		return err
	}
	return addPartitionItems(tx, c, epk, items)
}

// addTotals adds items and bytes to the container's totals.
func addTotals(tx storage.Txn, c *containerRecord, items, bytes int64) error {
	if items == 0 && bytes == 0 {
		return nil
	}
	st, err := readState(tx, c.Rid)
	if err != nil {
		return err
	}
	st.items, st.bytes = st.items+items, st.bytes+bytes
	return tx.Set(lsnKey(c.Rid), st.encode())
}

// addPartitionItems adds items to the count of the partition of epk.
func addPartitionItems(tx storage.Txn, c *containerRecord, epk string, items int64) error {
	if items == 0 {
		return nil
	}
	pk := partitionCountKey(c.Rid, epk)
	n, err := readCount(tx, pk)
	if err != nil {
		return err
	}
	if n+items <= 0 {
		return tx.Delete(pk)
	}
	return tx.Set(pk, binary.BigEndian.AppendUint64(nil, uint64(n+items)))
}

// readCount reads a partition's item count; absent reads as zero.
func readCount(r storage.Reader, key []byte) (int64, error) {
	v, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return decodeCount(v), nil
}

// decodeCount reads a partition count value.
func decodeCount(v []byte) int64 {
	if len(v) < 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

// usageDelta gathers the usage changes of several removals in one
// transaction, so they cost one update of the container's state and one
// per partition rather than one of each per item.
type usageDelta struct {
	items, bytes int64
	perEPK       map[string]int64
}

func (d *usageDelta) add(epk string, items, bytes int64) {
	if d.perEPK == nil {
		d.perEPK = map[string]int64{}
	}
	d.items += items
	d.bytes += bytes
	d.perEPK[epk] += items
}

// apply writes the gathered changes.
func (d *usageDelta) apply(tx storage.Txn, c *containerRecord) error {
	reads := make([]storage.Read, 0, len(d.perEPK))
	for epk := range d.perEPK {
		reads = append(reads, storage.Read{Key: partitionCountKey(c.Rid, epk)})
	}
	storage.Prefetch(tx, reads...)
	if err := addTotals(tx, c, d.items, d.bytes); err != nil {
		return err
	}
	for epk, n := range d.perEPK {
		if err := addPartitionItems(tx, c, epk, n); err != nil {
			return err
		}
	}
	return nil
}
