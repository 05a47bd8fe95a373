package engine

import (
	"github.com/mayfly-db/mayfly/internal/partition"
)

// epk is an item's effective partition key, which decides the range that
// holds it. A container without a partition key keeps everything at "".
func (c *containerRecord) epk(k partition.Key) string {
	if len(c.pk.paths) == 0 {
		return ""
	}
	epk, err := partition.EPK(c.hashDefinition(), k)
	if err != nil {
		return ""
	}
	return epk
}

// epkOfBytes is epk of the partition key whose bytes are pk.
func (c *containerRecord) epkOfBytes(pk []byte) string {
	if len(c.pk.paths) == 0 {
		return ""
	}
	epk, err := c.epkOf(pk)
	if err != nil {
		return ""
	}
	return epk
}

// lookupRange finds the range the header names; whole reports that it is
// absent or names the only range, so every EPK is in it.
func (e *Engine) lookupRange(c *containerRecord, id string) (r partition.Range, whole bool, derr *Error) {
	ranges := e.rangesOf(c)
	if id == "" || len(ranges) == 1 && id == ranges[0].ID {
		return partition.Range{}, true, nil
	}
	for _, r := range ranges {
		if r.ID == id {
			return r, false, nil
		}
	}
	return partition.Range{}, false, &Error{Code: Gone, SubStatus: SubPartitionKeyRangeGone, Message: "The partition key range '" + id + "' does not exist."}
}

// hashDefinition is the container's partition key definition for hashing.
func (c *containerRecord) hashDefinition() partition.Definition {
	return partition.Definition{Paths: c.pk.raw, Kind: c.pk.kind, Version: c.pk.version}
}

const (
	// maxRanges bounds the partition key ranges of one container.
	maxRanges = 64
	// ruPerRange and ruPerAutoscaleRange are the throughput one physical
	// partition is given when a container is created: the service splits
	// a container created with 18,000 RU/s into three, and one created
	// with an autoscale maximum of 20,000 RU/s into two.
	ruPerRange          = 6000
	ruPerAutoscaleRange = 10000
)

// rangeCount is how many partition key ranges a new container gets: as
// many as its throughput asks for, and at least the engine's default.
func (e *Engine) rangeCount(tp *Throughput) int {
	n := e.partitions
	if tp != nil {
		n = max(n, ceilDiv(tp.Manual, ruPerRange), ceilDiv(tp.AutoscaleMax, ruPerAutoscaleRange))
	}
	return min(n, maxRanges)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// rangesOf returns the container's partition key ranges. A container
// record from before ranges were kept per container has the engine's
// default.
func (e *Engine) rangesOf(c *containerRecord) []partition.Range {
	n := c.Ranges
	if n <= 0 {
		n = e.partitions
	}
	return splitRanges(n, c.RangesV1)
}
