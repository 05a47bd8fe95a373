package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// The erasure queue (ttl.md B4; docs/design/ttl.md §7). Every item the
// purge removes, every item a user deletes from a container that asks for
// it, and every dropped container, is queued here in the transaction that
// deletes it, with the instant its bytes must be gone by. The erasure loop
// (ttl.Erasure) calls Erase, which deletes the versions of those items the
// change feed still keeps, has the store erase the container's spans, and
// only then takes the entries off the queue: a crash in between repeats
// the erasure, never skips it.
//
// 'z'+collRid(8)+by(8)+lsn(8) → for each item, lsn(8)+expired(8)+
// size(uvarint): the items one transaction queued (a purge batch, a
// delete), by being the earliest instant any of them must be erased by and
// lsn the highest LSN among them, in Unix nanoseconds; an item's lsn is its
// expiry or delete record in the version log (0 for a dropped container).
// Entries hold no property value, id or partition key. One entry per
// transaction, not per item: a key per purged item cost the purge half
// again as much CPU once its compactions had run (docs/benchmarks.md).
const famErase = 'z'

// eraseEntryLen is the length of an entry's key.
const eraseEntryLen = 1 + 8 + 8 + 8

func eraseKey(rid []byte, by int64, lsn uint64) []byte {
	k := collPrefix(famErase, rid)
	k = binary.BigEndian.AppendUint64(k, uint64(by))
	return binary.BigEndian.AppendUint64(k, lsn)
}

// queuedItem is one item of a queue entry.
type queuedItem struct {
	lsn     uint64
	expired int64
	size    uint64
}

// eraseEntry is a decoded queue entry.
type eraseEntry struct {
	rid   []byte // in the key's memory
	by    int64
	lsn   uint64
	items []queuedItem
}

func decodeEraseEntry(k, v []byte) (eraseEntry, bool) {
	if len(k) != eraseEntryLen {
		return eraseEntry{}, false
	}
	en := eraseEntry{
		rid: k[1:9],
		by:  int64(binary.BigEndian.Uint64(k[9:17])),
		lsn: binary.BigEndian.Uint64(k[17:25]),
	}
	for len(v) > 0 {
		if len(v) < 17 {
			return eraseEntry{}, false
		}
		size, n := binary.Uvarint(v[16:])
		if n <= 0 {
			return eraseEntry{}, false
		}
		en.items = append(en.items, queuedItem{lsn: binary.BigEndian.Uint64(v), expired: int64(binary.BigEndian.Uint64(v[8:])), size: size})
		v = v[16+n:]
	}
	return en, len(en.items) > 0
}

// erasureBatch is the items a transaction queues, written as one entry.
type erasureBatch struct {
	val []byte
	by  int64
	lsn uint64
}

// add queues an item whose bytes stopped being needed at gone (its expiry,
// or its delete), logged at lsn, to be erased within deadline.
func (b *erasureBatch) add(lsn uint64, gone time.Time, deadline time.Duration, size int) {
	by := gone.Add(deadline).UnixNano()
	if len(b.val) == 0 || by < b.by {
		b.by = by
	}
	b.lsn = max(b.lsn, lsn)
	b.val = binary.BigEndian.AppendUint64(b.val, lsn)
	b.val = binary.BigEndian.AppendUint64(b.val, uint64(gone.UnixNano()))
	b.val = binary.AppendUvarint(b.val, uint64(size))
}

// write puts the batch in tx as an entry of c's queue, if it holds any.
func (b *erasureBatch) write(tx storage.Txn, c *containerRecord) error {
	if len(b.val) == 0 {
		return nil
	}
	return tx.Set(eraseKey(c.Rid, b.by, b.lsn), b.val)
}

// queueErasure queues, in tx, the erasure of one item of c (see
// erasureBatch.add).
func (e *Engine) queueErasure(tx storage.Txn, c *containerRecord, lsn uint64, gone time.Time, size int) error {
	var b erasureBatch
	deadline, _ := c.erasure(e.eraseDeadline)
	b.add(lsn, gone, deadline, size)
	return b.write(tx, c)
}

// queueGone queues the erasure of the item a change removed: every
// expired item, and a deleted one when its container asks for it; into
// ch.erase when the change comes with a batch, else in an entry of its own.
func (e *Engine) queueGone(tx storage.Txn, c *containerRecord, ch change, now time.Time) error {
	gone := now
	deadline, onDelete := c.erasure(e.eraseDeadline)
	switch ch.kind {
	case changeExpire:
		if at, ok := c.TTL.ExpiresAt(ch.prev.ts, ch.prev.itemTTL()); ok {
			gone = at
		}
	case changeDelete:
		if !onDelete {
			return nil
		}
	default:
		return nil
	}
	if ch.erase != nil {
		ch.erase.add(ch.lsn, gone, deadline, len(ch.prev.json))
		return nil
	}
	return e.queueErasure(tx, c, ch.lsn, gone, len(ch.prev.json))
}

// erasureProp is the container property, a Mayfly extension, that sets
// its erasure: {"deadlineSeconds": n, "onDelete": true|false}.
const erasureProp = "mayflyErasure"

// maxEraseDeadline bounds a container's erasure deadline: a year.
const maxEraseDeadline = 365 * 24 * time.Hour

var minEraseSeconds = int64(ttl.MinEraseDeadline / time.Second)

// checkErasureProp validates the erasure property of a container body.
func checkErasureProp(v document.Value) *Error {
	if !v.IsDefined() || v.IsNull() {
		return nil
	}
	if v.Kind() != document.Object {
		return errorf(BadRequest, "The container property '%s' must be an object with 'deadlineSeconds' and 'onDelete'.", erasureProp)
	}
	for _, f := range v.Fields() {
		switch f.Name {
		case "deadlineSeconds":
			d := f.Value
			if !d.IsInt() || d.Int() < minEraseSeconds || d.Int() > int64(maxEraseDeadline/time.Second) {
				return errorf(BadRequest, "The '%s.deadlineSeconds' property must be an integer between %d and %d.", erasureProp, minEraseSeconds, int64(maxEraseDeadline/time.Second))
			}
		case "onDelete":
			if f.Value.Kind() != document.Bool {
				return errorf(BadRequest, "The '%s.onDelete' property must be true or false.", erasureProp)
			}
		default:
			return errorf(BadRequest, "The '%s' property has no field '%s': use 'deadlineSeconds' and 'onDelete'.", erasureProp, f.Name)
		}
	}
	return nil
}

// erasure is the container's erasure deadline (def unless it sets one)
// and whether items users delete are erased too.
func (c *containerRecord) erasure(def time.Duration) (time.Duration, bool) {
	p := c.Props.Get(erasureProp)
	deadline := def
	if d := p.Get("deadlineSeconds"); d.IsInt() && d.Int() > 0 {
		deadline = time.Duration(d.Int()) * time.Second
	}
	return deadline, p.Get("onDelete").Bool()
}

// ErasureBacklog lists the containers with items queued for erasure: the
// most urgent entry of each, and counts of up to max entries.
func (e *Engine) ErasureBacklog(ctx context.Context, max int) ([]ttl.ErasureBacklog, error) {
	var out []ttl.ErasureBacklog
	err := e.store.View(ctx, func(r storage.Reader) error {
		out = nil
		prefix := []byte{famErase}
		it, err := r.NewIter(storage.IterParams{Lower: prefix, Upper: prefixEnd(prefix)})
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; {
			en, valid := decodeEraseEntry(it.Key(), it.Value())
			if !valid {
				return fmt.Errorf("erasure entry %x: %w", it.Key(), errBadRecord)
			}
			rid := bytes.Clone(en.rid)
			b := ttl.ErasureBacklog{ID: string(rid), Expired: time.Unix(0, en.items[0].expired), By: time.Unix(0, en.by)}
			for _, item := range en.items {
				b.Expired = time.Unix(0, min(b.Expired.UnixNano(), item.expired))
			}
			for ; ok && b.Items < max; ok = it.Next() {
				en, valid := decodeEraseEntry(it.Key(), it.Value())
				if !valid || !bytes.Equal(en.rid, rid) {
					break
				}
				b.Items += len(en.items)
				for _, item := range en.items {
					b.Bytes += int64(item.size)
				}
			}
			if ok && b.Items >= max {
				ok = it.SeekGE(prefixEnd(collPrefix(famErase, rid)))
			}
			if b.Label, b.Busy, err = e.erasureLabel(r, rid); err != nil {
				return err
			}
			out = append(out, b)
		}
		return it.Err()
	})
	return out, err
}

// ErasureQueue reports, for the Data Explorer, the items of container
// db/coll queued for erasure (counted up to max) and their bytes, and the
// container's erasure deadline.
func (e *Engine) ErasureQueue(ctx context.Context, db, coll string, max int) (items int, bytes int64, deadline time.Duration, err error) {
	err = e.store.View(ctx, func(r storage.Reader) error {
		items, bytes = 0, 0
		c, err := e.loadContainer(r, db, coll)
		if err != nil {
			return err
		}
		deadline, _ = c.erasure(e.eraseDeadline)
		prefix := collPrefix(famErase, c.Rid)
		return scanPrefix(r, prefix, func(k, v []byte) (bool, error) {
			en, ok := decodeEraseEntry(k, v)
			if !ok {
				return false, fmt.Errorf("erasure entry %x: %w", k, errBadRecord)
			}
			items += len(en.items)
			for _, item := range en.items {
				bytes += int64(item.size)
			}
			return items < max, nil
		})
	})
	return items, bytes, deadline, err
}

// erasureLabel names the container with rid for metrics, and reports
// whether its data is still being deleted (it was dropped and its cleanup
// is not finished).
func (e *Engine) erasureLabel(r storage.Reader, rid []byte) (string, bool, error) {
	if _, err := r.Get(cleanupKey(rid)); err == nil {
		return "dropped/" + ridString(rid), true, nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return "", false, err
	}
	d, err := e.databaseByRid(r, rid[:4])
	if err == nil && d != nil {
		var c *containerRecord
		if c, err = e.containerByRid(r, d, rid); err == nil {
			return c.link(), false, nil
		}
	}
	if err == nil || isNotFound(err) {
		return "dropped/" + ridString(rid), false, nil
	}
	return "", false, err
}

// eraseBatch is about how many queued items one transaction of Erase
// handles (whole entries, so a few more).
const eraseBatch = 256

// Erase erases the items queued for the containers ids (their rids) before
// the call: it deletes the versions of each item the change feed keeps with
// its body, then has the store erase the containers' spans (when it can:
// storage.Eraser), then takes the entries off the queue.
func (e *Engine) Erase(ctx context.Context, ids []string) (ttl.EraseResult, error) {
	var res ttl.EraseResult
	var spans [][2][]byte
	upTo := make([]lastLSNs, len(ids))
	for i, id := range ids {
		rid := []byte(id)
		// Entries of items deleted from now on have higher LSNs: this
		// erasure is for those below.
		var err error
		if upTo[i], err = e.eraseUpTo(ctx, rid); err != nil {
			return res, err
		}
		if err := e.eraseVersions(ctx, rid, upTo[i], &res); err != nil {
			return res, err
		}
		spans = append(spans, containerSpans(rid)...)
	}
	if er, ok := e.store.(storage.Eraser); ok && storage.CanErase(e.store) {
		if err := er.Erase(ctx, spans); err != nil {
			return res, fmt.Errorf("erase: %w", err)
		}
		res.Physical = true
	}
	for i, id := range ids {
		if err := e.dequeueErasure(ctx, []byte(id), upTo[i]); err != nil {
			return res, err
		}
	}
	return res, nil
}

// lastLSNs is, per sequence, the last LSN a container has logged: what one
// pass of erasure covers, since the items deleted after it was read have
// later LSNs. nil covers every LSN (a container that is gone).
type lastLSNs map[int]uint64

// covers reports whether every item of en was logged at or before l.
func (l lastLSNs) covers(en eraseEntry) bool {
	if l == nil {
		return true
	}
	for _, it := range en.items {
		last, ok := l[lsnSeq(it.lsn)]
		if !ok || it.lsn > last {
			return false
		}
	}
	return true
}

// eraseUpTo reads the last LSN of each sequence of the container with
// rid (nil for a container that is gone: one with no state).
func (e *Engine) eraseUpTo(ctx context.Context, rid []byte) (lastLSNs, error) {
	var last lastLSNs
	err := e.store.View(ctx, func(r storage.Reader) error {
		last = nil
		prefix := collPrefix(famLSN, rid)
		return scanPrefix(r, prefix, func(k, v []byte) (bool, error) {
			if len(v) < 8 || len(k) > len(prefix)+1 {
				return false, fmt.Errorf("container state %x: %w", k, errBadRecord)
			}
			seq := 0
			if len(k) > len(prefix) {
				seq = int(k[len(prefix)])
			}
			if last == nil {
				last = lastLSNs{}
			}
			last[seq] = binary.BigEndian.Uint64(v[:8])
			return true, nil
		})
	})
	return last, err
}

// eraseVersions deletes, for every queue entry of the container with rid
// covered by upTo, the versions of its item that the version log keeps
// with a body (creates and replaces), following each record's
// previous-image LSN back from the expiry or delete record. The expiry and
// delete records stay: they hold ids and system properties only.
func (e *Engine) eraseVersions(ctx context.Context, rid []byte, upTo lastLSNs, res *ttl.EraseResult) error {
	return e.eachQueued(ctx, rid, upTo, func(tx storage.Txn, items []queuedItem, _ [][]byte) error {
		lsns := make([]uint64, len(items))
		floors := map[int]uint64{}
		for i, item := range items {
			lsns[i] = item.lsn
			seq := lsnSeq(item.lsn)
			if _, ok := floors[seq]; !ok {
				floor, err := versionFloor(tx, rid, seq)
				if err != nil {
					return err
				}
				floors[seq] = floor
			}
		}
		if err := deleteBodies(tx, rid, lsns, floors); err != nil {
			return err
		}
		for _, item := range items {
			res.Expired = append(res.Expired, time.Unix(0, item.expired))
			res.Bytes += int64(item.size)
		}
		return nil
	})
}

// dequeueErasure takes the container's entries upTo covers off the queue.
func (e *Engine) dequeueErasure(ctx context.Context, rid []byte, upTo lastLSNs) error {
	return e.eachQueued(ctx, rid, upTo, func(tx storage.Txn, _ []queuedItem, keys [][]byte) error {
		for _, k := range keys {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// eachQueued calls fn with the items of the queue entries of the container
// with rid that upTo covers, and the entries' keys, about eraseBatch
// items at a time, each batch in a transaction of its own. The transactions do not wait for their fsync:
// one lost in a crash is done again, since the entries go last.
func (e *Engine) eachQueued(ctx context.Context, rid []byte, upTo lastLSNs, fn func(tx storage.Txn, items []queuedItem, keys [][]byte) error) error {
	lower := collPrefix(famErase, rid)
	upper := prefixEnd(lower)
	for {
		var next []byte
		err := storage.UpdateDeferred(ctx, e.store, func(tx storage.Txn) error {
			next = nil
			it, err := tx.NewIter(storage.IterParams{Lower: lower, Upper: upper})
			if err != nil {
				return err
			}
			var items []queuedItem
			var keys [][]byte
			n := 0
			more := false
			for ok := it.First(); ok; ok = it.Next() {
				if n >= eraseBatch {
					more = true
					break
				}
				en, valid := decodeEraseEntry(it.Key(), it.Value())
				if !valid {
					it.Close()
					return fmt.Errorf("erasure entry %x: %w", it.Key(), errBadRecord)
				}
				n += len(en.items)
				k := bytes.Clone(it.Key())
				next = append(k[:len(k):len(k)], 0)
				if upTo.covers(en) {
					items = append(items, en.items...)
					keys = append(keys, k)
				}
			}
			if err := errors.Join(it.Err(), it.Close()); err != nil {
				return err
			}
			if !more {
				next = nil
			}
			return fn(tx, items, keys)
		})
		if err != nil || next == nil {
			return err
		}
		lower = next
	}
}

// versionWant is a version record looked for at an LSN: the expiry or
// delete record of an item (id nil), or an earlier version of that item.
type versionWant struct {
	lsn uint64
	id  *string
	pk  []byte
}

// deleteBodies deletes the versions with a body of the items whose expiry
// or delete records are at lsns, back to the log's floor. It looks them up
// a hop at a time for all the items at once, each hop with one iterator
// seeking forward in LSN order: most items have a single earlier version,
// and the versions of items that expired together were mostly written
// together.
//
// floors holds the floor of the version log of each sequence of lsns; an
// item's earlier versions are in its sequence.
func deleteBodies(tx storage.Txn, rid []byte, lsns []uint64, floors map[int]uint64) error {
	var wants []versionWant
	for _, lsn := range lsns {
		if lsn != 0 && lsn >= floors[lsnSeq(lsn)] { // 0: a dropped container; below the floor: trimmed with its past
			wants = append(wants, versionWant{lsn: lsn})
		}
	}
	for len(wants) > 0 {
		slices.SortFunc(wants, func(a, b versionWant) int { return cmp.Compare(a.lsn, b.lsn) })
		it, err := tx.NewIter(storage.IterParams{Lower: versionKey(rid, wants[0].lsn, 0), Upper: versionKey(rid, wants[len(wants)-1].lsn+1, 0)})
		if err != nil {
			return err
		}
		var next []versionWant
		var dead [][]byte
		for _, w := range wants {
			runtime.Gosched() // background work: users first (ttl.md A4)
			for ok := it.SeekGE(versionKey(rid, w.lsn, 0)); ok && versionKeyLSN(rid, it.Key()) == w.lsn; ok = it.Next() {
				v, err := decodeVersionRecord(it.Value())
				if err != nil {
					it.Close()
					return err
				}
				if w.id == nil && (v.kind == changeExpire || v.kind == changeDelete) {
					// The record of the item's end stays; its past goes.
				} else if w.id != nil && (v.kind == changeCreate || v.kind == changeReplace) && v.id == *w.id && bytes.Equal(v.pk, w.pk) {
					dead = append(dead, bytes.Clone(it.Key()))
				} else {
					continue
				}
				if v.prevLSN != 0 && v.prevLSN >= floors[lsnSeq(v.prevLSN)] {
					id := v.id
					next = append(next, versionWant{lsn: v.prevLSN, id: &id, pk: bytes.Clone(v.pk)})
				}
				break
			}
		}
		if err := errors.Join(it.Err(), it.Close()); err != nil {
			return err
		}
		for _, k := range dead {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		wants = next
	}
	return nil
}
