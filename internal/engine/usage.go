package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// Usage counters. Every write that adds or removes an item, or changes its
// size, updates in the same transaction
//
//	'l'+collRid(+seq)       → last LSN(8), items(8), bytes(8)(, high-water time(8)(, words(8)…)): a sequence's state
//	'n'+collRid+escaped EPK → items(8): the items of one effective partition key
//
// The totals of a sequence's items share the key of its last LSN
// (sequence.go), which every write reads and writes already, so they cost
// no read of their own (a later read of it in the transaction finds it in
// the transaction's batch); the container's totals are the sum over its
// sequences (one per range at most), so reading a container's usage costs
// O(ranges) and the planner knows how many items a logical partition holds
// before it reads any (plan.Scope). Items that expired but are not yet
// purged are still counted here; ReadContainer subtracts them (usage in
// container.go), the expiry index tells which.
//
// In a container that keeps text totals (containerRecord.TextTotals), a
// sequence's state also holds, per path of its stored words, the words of
// its items' texts there, repeats counted (wordText.n): what a ranked
// query's statistics need (rankwords.go). A replace that changes a text
// changes them, as it changes the bytes.
//
// A partition's count is keyed by its EPK, which two partition key values
// share only on a hash collision; the count is then their sum, which is
// what the partition's key span holds. So that the count of one logical
// partition can still be read from it, the value also says whose items it
// counts (partitionOwner):
//
//	items(8) 0x01 pk: every item counted since the count was last zero has key bytes pk
//	items(8) 0x00:    items of more than one key were counted
//	items(8):         written before the owner was kept; unknown
//
// A count that falls to zero is deleted, so the next item's key owns it
// again.

// containerState is the value under stateKey: one sequence's last LSN, the
// totals of its items, and its high-water time (changefeed.go).
type containerState struct {
	lsn          uint64
	items, bytes int64
	hw           int64 // Unix seconds; 0 until a change is logged with it
	// writes, in the totals readTotals sums, is the sum of every
	// sequence's lsn: every write of an item takes an LSN, so it grows
	// with every write to the container (heldRows).
	writes uint64
	// words, in a container that keeps text totals, is per stored text
	// path the words of the items' texts; nil before the first.
	words []int64
}

func (st containerState) encode() []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 32), st.lsn)
	b = binary.BigEndian.AppendUint64(b, uint64(max(st.items, 0)))
	b = binary.BigEndian.AppendUint64(b, uint64(max(st.bytes, 0)))
	if st.hw == 0 && len(st.words) == 0 {
		return b
	}
	b = binary.BigEndian.AppendUint64(b, uint64(st.hw))
	for _, n := range st.words {
		b = binary.BigEndian.AppendUint64(b, uint64(max(n, 0)))
	}
	return b
}

// readState reads the state of the container's sequence seq; a sequence
// without one (no writes yet) reads as its base LSN and no items.
func readState(r storage.Reader, collRid []byte, seq int) (containerState, error) {
	st := containerState{lsn: seqBase(seq)}
	v, err := r.Get(stateKey(collRid, seq))
	if errors.Is(err, storage.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if len(v) != 8 && len(v) != 24 && (len(v) < 32 || len(v)%8 != 0) {
		return st, fmt.Errorf("container state %x: %w", v, errBadRecord)
	}
	st.lsn = binary.BigEndian.Uint64(v)
	if len(v) >= 24 {
		st.items = int64(binary.BigEndian.Uint64(v[8:]))
		st.bytes = int64(binary.BigEndian.Uint64(v[16:]))
	}
	if len(v) >= 32 {
		st.hw = int64(binary.BigEndian.Uint64(v[24:]))
	}
	for i := 32; i < len(v); i += 8 {
		st.words = append(st.words, int64(binary.BigEndian.Uint64(v[i:])))
	}
	return st, nil
}

// readTotals sums the states of all of c's sequences: the container's
// items and bytes, and, as lsn, the last LSN of its sequence seq.
func readTotals(r storage.Reader, c *containerRecord, seq int) (containerState, error) {
	n := c.sequences()
	if n > 1 {
		storage.Prefetch(r, stateReads(c, false)...)
	}
	var sum containerState
	for i := range n {
		st, err := readState(r, c.Rid, i)
		if err != nil {
			return sum, err
		}
		if i == seq {
			sum.lsn = st.lsn
		}
		sum.items += st.items
		sum.bytes += st.bytes
		sum.writes += st.lsn
		sum.words = addWords(sum.words, st.words)
	}
	return sum, nil
}

func partitionCountKey(collRid []byte, epk string) []byte {
	return appendEPK(collPrefix(famUsage, collRid), epk, true)
}

// addUsage adds items, bytes and words (per stored text path; nil: none)
// to the totals of the sequence of epk and items to its partition's
// count; pk is the key bytes of the items added (unused when items <= 0).
func addUsage(tx storage.Txn, c *containerRecord, epk string, pk []byte, items, bytes int64, words []int64) error {
	if err := addTotals(tx, c, c.seqOf(epk), items, bytes, words); err != nil {
		return err
	}
	return addPartitionItems(tx, c, epk, pk, items)
}

// addTotals adds items, bytes and words to the totals of sequence seq.
func addTotals(tx storage.Txn, c *containerRecord, seq int, items, bytes int64, words []int64) error {
	if items == 0 && bytes == 0 && !slices.ContainsFunc(words, func(n int64) bool { return n != 0 }) {
		return nil
	}
	st, err := readState(tx, c.Rid, seq)
	if err != nil {
		return err
	}
	st.items, st.bytes = st.items+items, st.bytes+bytes
	st.words = addWords(st.words, words)
	return tx.Set(stateKey(c.Rid, seq), st.encode())
}

// addWords returns the per-path word totals a with b added, as long as
// the longer.
func addWords(a, b []int64) []int64 {
	for i, n := range b {
		if i == len(a) {
			a = append(a, 0)
		}
		a[i] += n
	}
	return a
}

// addPartitionItems adds items to the count of the partition of epk; pk
// is the key bytes of the items added (unused when items <= 0).
func addPartitionItems(tx storage.Txn, c *containerRecord, epk string, pk []byte, items int64) error {
	if items == 0 {
		return nil
	}
	key := partitionCountKey(c.Rid, epk)
	v, err := tx.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		v, err = nil, nil
	}
	if err != nil {
		return err
	}
	n := decodeCount(v)
	if n+items <= 0 {
		return tx.Delete(key)
	}
	out := binary.BigEndian.AppendUint64(make([]byte, 0, 9+len(pk)), uint64(n+items))
	switch owner, known := partitionOwner(v); {
	case n <= 0:
		out = append(append(out, ownerOne), pk...)
	case items < 0 || known && bytes.Equal(owner, pk):
		out = append(out, v[8:]...) // as it was
	case len(v) > 8:
		out = append(out, ownerMany)
	}
	return tx.Set(key, out)
}

// The marks after a partition count's items.
const (
	ownerMany = 0x00
	ownerOne  = 0x01
)

// partitionOwner returns the key bytes whose items alone a partition
// count value counts, if it knows of one key only.
func partitionOwner(v []byte) ([]byte, bool) {
	if len(v) < 9 || v[8] != ownerOne {
		return nil, false
	}
	return v[9:], true
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
// transaction, so they cost one update of each sequence's state and one
// per partition rather than one of each per item.
type usageDelta struct {
	perSeq map[int][2]int64 // items, bytes
	words  map[int][]int64  // per sequence, per stored text path
	perEPK map[string]int64
}

func (d *usageDelta) add(c *containerRecord, epk string, items, bytes int64, words []int64) {
	if d.perEPK == nil {
		d.perEPK, d.perSeq, d.words = map[string]int64{}, map[int][2]int64{}, map[int][]int64{}
	}
	seq := c.seqOf(epk)
	t := d.perSeq[seq]
	d.perSeq[seq] = [2]int64{t[0] + items, t[1] + bytes}
	d.words[seq] = addWords(d.words[seq], words)
	d.perEPK[epk] += items
}

// apply writes the gathered changes.
func (d *usageDelta) apply(tx storage.Txn, c *containerRecord) error {
	reads := make([]storage.Read, 0, len(d.perEPK))
	for epk := range d.perEPK {
		reads = append(reads, storage.Read{Key: partitionCountKey(c.Rid, epk)})
	}
	storage.Prefetch(tx, reads...)
	for seq, t := range d.perSeq {
		if err := addTotals(tx, c, seq, t[0], t[1], d.words[seq]); err != nil {
			return err
		}
	}
	for epk, n := range d.perEPK {
		if err := addPartitionItems(tx, c, epk, nil, n); err != nil {
			return err
		}
	}
	return nil
}

// RangeStatistics is what one partition key range of a container holds:
// the statistics a container read with
// x-ms-documentdb-populatepartitionstatistics returns.
type RangeStatistics struct {
	ID            string
	DocumentCount int64
	SizeBytes     int64
}

// PartitionStatistics returns the items and bytes of each partition key
// range of container db/coll, read from the usage counters: O(ranges) for
// a container that keeps a sequence per range. One that keeps a single
// sequence for several ranges (made before sequences per range) counts
// each range's items from its partitions' counters and shares its bytes
// out in proportion. Items that expired but are not yet purged no longer
// count, as in the container's usage (ttl.md).
func (e *Engine) PartitionStatistics(ctx context.Context, db, coll string) ([]RangeStatistics, error) {
	now, done, err := e.judging(ctx, db, coll)
	if err != nil {
		return nil, err
	}
	defer done()
	var out []RangeStatistics
	err = e.store.View(ctx, func(r storage.Reader) error {
		c, err := e.loadContainer(r, db, coll)
		if err != nil {
			return err
		}
		ranges := e.rangesOf(c)
		if out, err = rangeCounts(r, c, ranges); err != nil {
			return err
		}
		// A range's locations lie from its lower bound up to the next
		// range's.
		bounds := make([][]byte, len(ranges))
		for i, rg := range ranges {
			bounds[i] = appendEPK(nil, rg.Min, false)
		}
		err = eachExpired(r, c, now, func(size int64, loc []byte) {
			i := len(bounds) - 1
			for i > 0 && bytes.Compare(loc, bounds[i]) < 0 {
				i--
			}
			out[i].DocumentCount = max(out[i].DocumentCount-1, 0)
			out[i].SizeBytes = max(out[i].SizeBytes-size, 0)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("partition statistics of %q: %w", coll, err)
	}
	return out, nil
}

// rangeCounts reads the items and bytes of each of c's ranges from the
// usage counters.
func rangeCounts(r storage.Reader, c *containerRecord, ranges []partition.Range) ([]RangeStatistics, error) {
	out := make([]RangeStatistics, len(ranges))
	for i, rg := range ranges {
		out[i].ID = rg.ID
	}
	if c.sequences() == len(ranges) {
		for i := range ranges {
			st, err := readState(r, c.Rid, i)
			if err != nil {
				return nil, err
			}
			out[i].DocumentCount, out[i].SizeBytes = st.items, st.bytes
		}
		return out, nil
	}
	total, err := readTotals(r, c, 0)
	if err != nil {
		return nil, err
	}
	prefix := collPrefix(famUsage, c.Rid)
	for i, rg := range ranges {
		lo, hi := appendEPK(bytes.Clone(prefix), rg.Min, false), prefixEnd(prefix)
		if rg.Max < partition.MaxEPK {
			hi = appendEPK(bytes.Clone(prefix), rg.Max, false)
		}
		err := scanRange(r, lo, hi, func(_, v []byte) (bool, error) {
			if len(v) == 8 {
				out[i].DocumentCount += int64(binary.BigEndian.Uint64(v))
			}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
		if total.items > 0 {
			out[i].SizeBytes = total.bytes * out[i].DocumentCount / total.items
		}
	}
	return out, nil
}
