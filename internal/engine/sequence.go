package engine

import (
	"sort"
	"strconv"
	"sync"

	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// A sequence per range (docs/design/storage.md "A sequence per range").
//
// Every write takes the next LSN of a sequence and updates that sequence's
// state record (usage.go), so writes to one sequence commit one at a time,
// and over a shared store two gateways writing into one sequence wait for
// each other. A container created with SeqPerRange keeps one sequence per
// partition key range, as the service keeps one per physical partition:
// writes into different ranges do not meet at all. A container created
// before keeps its one sequence.
//
// An LSN carries its sequence in its high bits,
//
//	LSN = sequence << lsnSeqShift | n, n = 1, 2, ...
//
// so LSNs stay unique within the container (an item's sequence number, its
// etag, the erasure queue and the change feed's logs are keyed by them),
// the change feed's logs hold each sequence's changes in a key span of
// their own, and an LSN names its range. With at most maxRanges (64)
// sequences, every LSN stays below 2^46, exact as a JSON number.
const (
	lsnSeqShift = 40
	// maxSeqLSN is the last n a sequence can hand out.
	maxSeqLSN = 1<<lsnSeqShift - 1
)

// lsnSeq is the sequence an LSN belongs to.
func lsnSeq(lsn uint64) int { return int(lsn >> lsnSeqShift) }

// seqBase is the LSN before the first of sequence i: what a sequence
// without writes reports as its last LSN.
func seqBase(i int) uint64 { return uint64(i) << lsnSeqShift }

// stateKey is the key of sequence i's state record: the container's
// own state key for the first (the one a container of one sequence
// has), that key and the sequence's number for the others.
func stateKey(collRid []byte, i int) []byte {
	k := collPrefix(famLSN, collRid)
	if i > 0 {
		k = append(k, byte(i))
	}
	return k
}

// sequences is how many sequences c has.
func (c *containerRecord) sequences() int {
	if !c.SeqPerRange {
		return 1
	}
	return len(splitRanges(c.Ranges, c.RangesV1))
}

// seqOf is the sequence of the items of effective partition key epk.
func (c *containerRecord) seqOf(epk string) int {
	if !c.SeqPerRange {
		return 0
	}
	ranges := splitRanges(c.Ranges, c.RangesV1)
	i := sort.Search(len(ranges), func(i int) bool { return epk < ranges[i].Max })
	return min(i, len(ranges)-1)
}

// seqOfKey is the sequence of the items of partition key bytes pk, or 0
// when they are not a partition key.
func (c *containerRecord) seqOfKey(pk []byte) int {
	if !c.SeqPerRange {
		return 0
	}
	epk, err := c.epkOf(pk)
	if err != nil {
		return 0
	}
	return c.seqOf(epk)
}

// seqOfRef is the sequence of the logical partition ref names, or 0 when
// it names none (or a prefix of a hierarchical key).
func (c *containerRecord) seqOfRef(ref ItemRef) int {
	if !c.SeqPerRange || !ref.HasKey {
		return 0
	}
	pk, derr := c.pointKey(ref)
	if derr != nil {
		return 0
	}
	return c.seqOfKey(pk)
}

// seqOfScope is the sequence whose last LSN a page of the logical
// partition ref names, or else of range rangeID, reports: what the page's
// session token names, so that a client files it under that range.
func (c *containerRecord) seqOfScope(ref ItemRef, rangeID string) int {
	if ref.HasKey || rangeID == "" || !c.SeqPerRange {
		return c.seqOfRef(ref)
	}
	for i, r := range splitRanges(c.Ranges, c.RangesV1) {
		if r.ID == rangeID {
			return i
		}
	}
	return 0
}

// seqsIn lists, in order, the sequences of the ranges that within accepts
// by their bounds [min, max).
func (c *containerRecord) seqsIn(within func(min, max string) bool) []int {
	if !c.SeqPerRange {
		return []int{0}
	}
	var out []int
	for i, r := range splitRanges(c.Ranges, c.RangesV1) {
		if within(r.Min, r.Max) {
			out = append(out, i)
		}
	}
	return out
}

var splitCache sync.Map // splitKey → []partition.Range

type splitKey struct {
	n  int
	v1 bool
}

// splitRanges is partition.Split(n), or with v1 partition.SplitV1(n),
// cached.
func splitRanges(n int, v1 bool) []partition.Range {
	if r, ok := splitCache.Load(splitKey{n, v1}); ok {
		return r.([]partition.Range)
	}
	r := partition.Split(n)
	if v1 {
		r = partition.SplitV1(n)
	}
	splitCache.Store(splitKey{n, v1}, r)
	return r
}

// stateReads names the state records of every sequence of c to prefetch,
// locked (storage.Read.Lock) for a write that may touch any of them (the
// purge).
func stateReads(c *containerRecord, lock bool) []storage.Read {
	reads := make([]storage.Read, c.sequences())
	for i := range reads {
		reads[i] = storage.Read{Key: stateKey(c.Rid, i), Lock: lock}
	}
	return reads
}

// SessionToken is the session token of a response at lsn: the range of
// its sequence, and the LSN.
func SessionToken(lsn uint64) string {
	return SessionRange(lsn) + ":-1#" + strconv.FormatUint(lsn, 10)
}

// SessionRange is the partition key range an LSN's session token names:
// its sequence's, which in a container of a sequence per range is the
// range's id.
func SessionRange(lsn uint64) string {
	return strconv.Itoa(lsnSeq(lsn))
}
