package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// The engine is the purger's Target: it knows where the expiry indexes are.
var (
	_ ttl.Target     = (*Engine)(nil)
	_ ttl.DueCounter = (*Engine)(nil)
)

// Containers lists every container with its committed TTL history.
func (e *Engine) Containers(ctx context.Context) ([]ttl.Container, error) {
	var out []ttl.Container
	err := e.store.View(ctx, func(r storage.Reader) error {
		return scanPrefix(r, []byte{famContainer}, func(_, v []byte) (bool, error) {
			c, err := decodeContainer(v)
			if err != nil {
				return false, err
			}
			out = append(out, ttl.Container{ID: c.link(), History: c.TTL})
			return true, nil
		})
	})
	return out, err
}

// splitLink parses a container link "dbs/{db}/colls/{coll}".
func splitLink(link string) (db, coll string, err error) {
	parts := strings.Split(link, "/")
	if len(parts) != 4 || parts[0] != "dbs" || parts[2] != "colls" {
		return "", "", fmt.Errorf("invalid container link %q", link)
	}
	return parts[1], parts[3], nil
}

// dueEntry is one expiry index entry found expired.
type dueEntry struct {
	key []byte
	seq uint64
}

// expiredEntries returns up to limit entries of the expiry indexes that lie
// within the horizon, own-ttl index first, each in key order. It reads only
// expired entries, so its cost grows with them alone.
func expiredEntries(r storage.Reader, c *containerRecord, z ttl.Horizon, limit int) ([]dueEntry, bool, error) {
	var out []dueEntry
	more := false
	scan := func(fam byte, bound int64) error {
		// Scan even when out is full: the first entry found then says that
		// more remain. Skipping the second index because the first filled
		// the batch would report no more while the second has a backlog.
		if bound == ttl.NoKey {
			return nil
		}
		prefix := collPrefix(fam, c.Rid)
		lower := prefix
		if bound < 0 {
			return nil
		}
		var upper []byte
		if bound == math.MaxInt64 {
			upper = prefixEnd(prefix)
		} else {
			upper = binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(bound)+1)
		}
		it, err := r.NewIter(storage.IterParams{Lower: lower, Upper: upper})
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			if len(out) >= limit {
				more = true
				break
			}
			k := it.Key()
			if len(k) != len(prefix)+16 {
				continue
			}
			out = append(out, dueEntry{key: bytes.Clone(k), seq: binary.BigEndian.Uint64(k[len(prefix)+8:])})
		}
		return it.Err()
	}
	if err := scan(famOwnDue, z.OwnDue); err != nil {
		return nil, false, err
	}
	if err := scan(famByTs, z.InheritTS); err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// PurgeDue physically deletes up to p.Limit expired items of a container,
// each with all its index entries, in one atomic write. Expiry is judged
// with the history read in the same transaction.
func (e *Engine) PurgeDue(ctx context.Context, p ttl.PurgeParams) (ttl.PurgeResult, error) {
	db, coll, err := splitLink(p.Container)
	if err != nil {
		return ttl.PurgeResult{}, err
	}
	var res ttl.PurgeResult
	e.settingMu.RLock()
	defer e.settingMu.RUnlock()
	err = e.store.Update(ctx, func(tx storage.Txn) error {
		res = ttl.PurgeResult{}
		c, err := e.loadContainer(tx, db, coll)
		if err != nil {
			return err
		}
		z := c.TTL.Horizon(p.Now)
		if z.Empty() {
			return nil
		}
		entries, more, err := expiredEntries(tx, c, z, p.Limit)
		if err != nil {
			return err
		}
		res.More = more
		for _, en := range entries {
			raw, err := tx.Get(itemKey(c.Rid, en.seq))
			if errors.Is(err, storage.ErrNotFound) {
				// A dangling entry cannot happen through the engine; clear it.
				if err := tx.Delete(en.key); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			rec, err := decodeItemRecord(raw)
			if err != nil {
				return err
			}
			if !z.Expired(rec.ts, rec.itemTTL()) {
				continue
			}
			rec.json = bytes.Clone(rec.json)
			rec.pk = bytes.Clone(rec.pk)
			if err := e.removeItem(tx, c, &liveItem{seq: en.seq, rec: rec}); err != nil {
				return err
			}
			lsn, err := nextLSN(tx, c)
			if err != nil {
				return err
			}
			if err := e.logChange(tx, c, change{kind: changeExpire, lsn: lsn, seq: en.seq, prev: &rec}); err != nil {
				return err
			}
			res.Items = append(res.Items, ttl.PurgedItem{TS: rec.ts, TTL: rec.itemTTL()})
		}
		return nil
	})
	if err != nil {
		if isNotFound(err) {
			return ttl.PurgeResult{}, nil // the container was dropped meanwhile
		}
		return ttl.PurgeResult{}, err
	}
	return res, nil
}

// SweepHistory drops TTL epochs that no longer decide any stored item.
func (e *Engine) SweepHistory(ctx context.Context, p ttl.SweepParams) error {
	db, coll, err := splitLink(p.Container)
	if err != nil {
		return err
	}
	err = e.store.Update(ctx, func(tx storage.Txn) error {
		c, err := e.loadContainer(tx, db, coll)
		if err != nil {
			return err
		}
		next := *c
		next.TTL = c.TTL.Swept(p.Through)
		return setJSON(tx, containerKey(c.DBRid, c.ID), &next)
	})
	if isNotFound(err) {
		return nil
	}
	return err
}

// CountDue counts expired items still on disk, up to p.Max.
func (e *Engine) CountDue(ctx context.Context, p ttl.CountDueParams) (int, error) {
	db, coll, err := splitLink(p.Container)
	if err != nil {
		return 0, err
	}
	n := 0
	err = e.store.View(ctx, func(r storage.Reader) error {
		c, err := e.loadContainer(r, db, coll)
		if err != nil {
			return err
		}
		entries, _, err := expiredEntries(r, c, c.TTL.Horizon(p.Now), p.Max)
		n = len(entries)
		return err
	})
	if isNotFound(err) {
		return 0, nil
	}
	return n, err
}
