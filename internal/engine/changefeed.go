package engine

import (
	"github.com/mayfly-db/mayfly/internal/storage"
)

// changeKind is what a write did to an item.
type changeKind uint8

const (
	changeCreate  changeKind = iota + 1
	changeReplace            // replace, upsert of an existing item, patch
	changeDelete             // a user delete
	changeExpire             // physical removal of an expired item (ttl.md B5)
)

// change describes one write, in the transaction that makes it. prev is the
// version it replaced or removed (nil for a create); cur is the new version
// (nil for deletes and expiries).
type change struct {
	kind changeKind
	lsn  uint64
	seq  uint64
	cur  *itemRecord
	prev *itemRecord
}

// logChange records a change for the change feed, in the same transaction
// as the write itself.
func (e *Engine) logChange(tx storage.Txn, c *containerRecord, ch change) error {
	return nil
}
