package engine

import (
	"context"
	"fmt"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// Deleting a container or a database, or finishing an index build, leaves
// data whose metadata is gone: the container's items and indexes, an old
// index version. It can be far too large for one transaction, so it is
// deleted after the metadata commits, in bounded transactions. To make sure
// it is deleted at all, whatever happens to the process or the request in
// between (a crash, a client that goes away, another gateway), the metadata
// transaction also writes a cleanup record naming the key spans to delete;
// the record is removed only once they are empty. The request that made
// the change deletes the spans at once, without its cancellation; the
// background loop of every engine (Indexer) finishes any record left over,
// at start and then on every pass. Two engines finishing the same record
// only repeat deletes, which are idempotent. Rids are never reused, so
// nothing new is ever written into a span a record names.

// famCleanup keys the cleanup records:
// 'g'+id → the spans (cleanupRecord). The id is the dropped container's rid,
// or a container's rid and the index version its spans end before.
const famCleanup = 'g'

// cleanupRecord is the stored form of a pending cleanup.
type cleanupRecord struct {
	// Spans are [lo, hi) key ranges.
	Spans [][2][]byte `json:"spans"`
}

func cleanupKey(id []byte) []byte { return append([]byte{famCleanup}, id...) }

// containerFamilies are the key families holding a container's data, each
// under collPrefix(fam, rid).
var containerFamilies = []byte{famItem, famItemKey, famUnique, famOwnDue, famByTs, famImage, famLSN, famIndex,
	famFeedLatest, famFeedVersion, famFeedFloor, famUsage, famByRid, famAttachment, famScript, famVector, famWord}

// containerSpans are the spans holding every byte of the data of the
// container with rid.
func containerSpans(rid []byte) [][2][]byte {
	spans := make([][2][]byte, 0, len(containerFamilies))
	for _, fam := range containerFamilies {
		lo := collPrefix(fam, rid)
		spans = append(spans, [2][]byte{lo, prefixEnd(lo)})
	}
	for _, job := range []byte{jobPurge, jobIndex} {
		lo := leaseKey(job, rid)
		spans = append(spans, [2][]byte{lo, prefixEnd(lo)})
	}
	return spans
}

// scheduleCleanup records, in tx, that spans are to be deleted once tx has
// committed. It returns the record's id for runCleanup.
func scheduleCleanup(tx storage.Txn, id []byte, spans [][2][]byte) error {
	return setJSON(tx, cleanupKey(id), cleanupRecord{Spans: spans})
}

// runCleanup deletes the spans of cleanup record id, then the record. It
// is not cancelled with ctx: a request that gave up must not leave the
// work half done when it could finish it (the background loop would, but
// later).
func (e *Engine) runCleanup(ctx context.Context, id []byte) error {
	ctx = context.WithoutCancel(ctx)
	var rec cleanupRecord
	var found bool
	err := e.store.View(ctx, func(r storage.Reader) error {
		var err error
		found, err = getJSON(r, cleanupKey(id), &rec)
		return err
	})
	if err != nil || !found {
		return err
	}
	for _, s := range rec.Spans {
		if err := e.deleteRange(ctx, s[0], s[1]); err != nil {
			return fmt.Errorf("clean up %x: %w", id, err)
		}
	}
	return e.store.Update(ctx, func(tx storage.Txn) error { return tx.Delete(cleanupKey(id)) })
}

// cleanupPass finishes every pending cleanup record.
func (e *Engine) cleanupPass(ctx context.Context) error {
	var ids [][]byte
	err := e.store.View(ctx, func(r storage.Reader) error {
		ids = nil
		return scanPrefix(r, []byte{famCleanup}, func(k, _ []byte) (bool, error) {
			ids = append(ids, append([]byte(nil), k[1:]...))
			return true, nil
		})
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := e.runCleanup(ctx, id); err != nil {
			return err
		}
	}
	return nil
}
