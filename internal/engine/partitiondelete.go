package engine

import (
	"context"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// partitionDeletePage is how many items DeleteAllItemsByPartitionKey
// deletes in one transaction.
const partitionDeletePage = 200

// DeleteAllItemsByPartitionKey deletes every item of the logical partition
// ref names (POST …/colls/{c}/operations/partitionkeydelete). The service
// deletes them in the background; here the request returns once the items
// it found are deleted. It reads the partition a page at a time, from
// where the last page ended, and deletes each page in one transaction of
// ordinary deletes, so the indexes, the counts, the TTL's copies and the
// change feed follow as for single deletes. An item created meanwhile may
// survive, as it may in the service. With a hierarchical key, the whole
// key is needed.
func (e *Engine) DeleteAllItemsByPartitionKey(ctx context.Context, ref ItemRef) (*ItemResult, error) {
	if !ref.HasKey {
		return nil, errorf(BadRequest, "A delete of all items by partition key needs the partition key (x-ms-documentdb-partitionkey).")
	}
	// A hierarchical key's prefix is refused, as the service refuses it,
	// whether or not it holds items.
	err := e.store.View(ctx, func(r storage.Reader) error {
		c, err := e.loadContainer(r, ref.DB, ref.Coll)
		if err != nil {
			return err
		}
		if _, derr := c.pointKey(ref); derr != nil {
			return derr
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	total := &ItemResult{}
	cont := ""
	for {
		page, err := e.ReadFeed(ctx, FeedParams{ItemRef: ref, MaxItemCount: partitionDeletePage, Continuation: cont})
		if err != nil {
			return nil, err
		}
		total.CollRid = page.CollRid
		if total.LSN == 0 {
			total.LSN = page.LSN
		}
		ids := make([]string, 0, len(page.Items))
		for _, it := range page.Items {
			v, err := document.ParseTop(it, map[string]bool{"id": true})
			if err != nil {
				return nil, err
			}
			ids = append(ids, v.Get("id").Str())
		}
		if len(ids) > 0 {
			var coll *containerRecord
			deleted := 0
			res, err := e.writeOne(ctx, ref, ids[0], false, func(tx storage.Txn, c *containerRecord, now time.Time) (*ItemResult, error) {
				coll, deleted = c, 0
				out := &ItemResult{CollRid: c.ridString()}
				for _, id := range ids {
					res, err := e.deleteItemTx(tx, c, DeleteItemParams{ItemRef: ref, ID: id}, now)
					if isNotFound(err) {
						continue // deleted or expired since the page was read
					}
					if err != nil {
						return nil, err
					}
					out.LSN = res.LSN
					deleted++
				}
				return out, nil
			})
			if err != nil {
				return nil, err
			}
			// writeOne charged the page as one write; each delete is one.
			charge := float64(deleted) * writeCharge(0)
			if extra := charge - res.Charge; extra > 0 {
				e.charge(coll, extra)
			}
			total.Charge += charge
			total.LSN = max(total.LSN, res.LSN)
		}
		if cont = page.Continuation; cont == "" {
			return total, nil
		}
	}
}
