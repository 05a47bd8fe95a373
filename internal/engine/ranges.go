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
	if id == "" || len(e.ranges) == 1 && id == e.ranges[0].ID {
		return func(string) bool { return true }, nil
	}
	for _, r := range e.ranges {
		if r.ID == id {
			return r.Contains, nil
		}
	}
	return nil, &Error{Code: Gone, SubStatus: SubPartitionKeyRangeGone, Message: "The partition key range '" + id + "' does not exist."}
}

// EPKRange returns a filter for an effective-partition-key span [min, max),
// as the JS SDK sends it in x-ms-start-epk and x-ms-end-epk.
func EPKRange(min, max string) func(epk string) bool {
	return func(epk string) bool { return epk >= min && (max == "" || epk < max) }
}

// hashDefinition is the container's partition key definition for hashing.
func (c *containerRecord) hashDefinition() partition.Definition {
	return partition.Definition{Paths: c.pk.raw, Kind: c.pk.kind, Version: c.pk.version}
}
