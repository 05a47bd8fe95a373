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

// rangeFilter returns a predicate on effective partition keys for the
// x-ms-documentdb-partitionkeyrangeid header ("" means every range), or a
// 410/1002 for a range that does not exist, which makes the SDKs refresh
// their range cache.
func (e *Engine) rangeFilter(id string) (func(epk string) bool, *Error) {
	r, whole, derr := e.lookupRange(id)
	if derr != nil || whole {
		return func(string) bool { return true }, derr
	}
	return r.Contains, nil
}

// lookupRange finds the range the header names; whole reports that it is
// absent or names the only range, so every EPK is in it.
func (e *Engine) lookupRange(id string) (r partition.Range, whole bool, derr *Error) {
	if id == "" || len(e.ranges) == 1 && id == e.ranges[0].ID {
		return partition.Range{}, true, nil
	}
	for _, r := range e.ranges {
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
