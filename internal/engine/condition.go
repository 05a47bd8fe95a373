package engine

import (
	"context"
	"crypto/sha256"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// Patch conditions are judged before the store's write lock is taken.
//
// A conditional patch (alone or in a batch) must see its item as the
// transaction that writes it does, and a condition can be as costly as a
// query over the item. Evaluated inside the transaction, it would hold the
// store's one write lock, and every write to every container would wait
// for it. So each condition is first judged on a snapshot, outside the
// lock, and the verdict is kept under the exact bytes of the item it was
// judged on (which carry its _etag and _ts). Inside the transaction a
// verdict is used only when the item read there has those same bytes; the
// operation's "now" is the same, so the verdict is the one the
// transaction would reach itself, and the batch stays atomic and its reads
// consistent. Only an item that changed in between (a concurrent write,
// or an earlier operation of the same batch) is judged inside the
// transaction, within the request's budget.

// verdicts holds conditions judged on a snapshot, by verdictKey.
type verdicts map[[sha256.Size]byte]verdict

type verdict struct {
	holds bool
	err   error
}

func verdictKey(cond string, item []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(cond))
	h.Write([]byte{0})
	h.Write(item)
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// condTarget is a conditional patch to judge ahead: its item and its
// condition.
type condTarget struct {
	ref  ItemRef
	id   string
	cond string
}

// prejudge judges the conditions of targets on a snapshot of the store,
// at the operation's now, drawing on budget b. What it cannot judge (a
// missing item, a bad key) is left for the transaction to find; a
// snapshot that cannot be read leaves everything to it.
func (e *Engine) prejudge(ctx context.Context, db, coll string, targets []condTarget, now time.Time, b *eval.Budget) verdicts {
	if len(targets) == 0 {
		return nil
	}
	v := verdicts{}
	_ = e.store.View(ctx, func(r storage.Reader) error {
		c, err := e.loadContainer(r, db, coll)
		if err != nil {
			return err
		}
		for _, t := range targets {
			pk, derr := c.pointKey(t.ref)
			if derr != nil || validateItemID(t.id) != nil {
				continue
			}
			live, _, err := e.findItem(r, c, pk, t.id, now)
			if err != nil {
				return err
			}
			if live == nil {
				continue
			}
			doc, err := document.Parse(live.rec.json)
			if err != nil {
				continue
			}
			holds, err := conditionHolds(t.cond, doc, now, b, c)
			if err != nil && ErrorCode(err) == Internal {
				// The request's context ended: the transaction will
				// not run either.
				return err
			}
			v[verdictKey(t.cond, live.rec.json)] = verdict{holds, err}
		}
		return nil
	})
	return v
}

// judgeCondition is the verdict on cond for the item whose stored bytes
// are item: the one judged ahead when there is one, else judged now.
func judgeCondition(pre verdicts, cond string, item []byte, doc document.Value, now time.Time, b *eval.Budget, c *containerRecord) (bool, error) {
	if v, ok := pre[verdictKey(cond, item)]; ok {
		return v.holds, v.err
	}
	return conditionHolds(cond, doc, now, b, c)
}
