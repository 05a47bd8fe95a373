package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// The engine is the purger's Target: it knows where the expiry indexes are.
var (
	_ ttl.Target       = (*Engine)(nil)
	_ ttl.DueCounter   = (*Engine)(nil)
	_ ttl.FirstEntries = (*Engine)(nil)
)

// Containers lists the containers in which some item may expire (their
// TTL history NeedsPurge), with their committed TTL history, from the
// engine's work list (worklist.go): its cost grows with those containers,
// not with every container of the store.
func (e *Engine) Containers(ctx context.Context) ([]ttl.Container, error) {
	return e.purgeWork(ctx)
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
	loc []byte // the item's location, from the entry's value
}

// expiryRange is the part of one expiry index that lies within a horizon
// bound: [prefix, upper). ok is false when nothing can be expired.
func expiryRange(c *containerRecord, fam byte, bound int64) (prefix, upper []byte, ok bool) {
	if bound == ttl.NoKey || bound < 0 {
		return nil, nil, false
	}
	prefix = collPrefix(fam, c.Rid)
	if bound == math.MaxInt64 {
		return prefix, prefixEnd(prefix), true
	}
	return prefix, binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(bound)+1), true
}

// purgeHint returns where the last purge of the index under prefix stopped:
// the highest entry key it took, or nil.
func (e *Engine) purgeHint(prefix []byte) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.purgedTo[string(prefix)]
}

// advancePurgeHint records that the entries of the index under prefix up to
// key were taken by a committed purge.
func (e *Engine) advancePurgeHint(prefix, key []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.purgedTo == nil {
		e.purgedTo = map[string][]byte{}
	}
	if old := e.purgedTo[string(prefix)]; bytes.Compare(key, old) > 0 {
		e.purgedTo[string(prefix)] = key
	}
}

// expiredEntries returns up to limit entries of the expiry indexes that lie
// within the horizon, own-ttl index first, and reports whether more remain.
// It reads only expired entries, so its cost grows with them alone.
//
// An index is a queue consumed from its low end, and every purged entry
// leaves a deletion tombstone there until a compaction drops it. Scanning
// from the start of the index each time would step over every entry purged
// so far, so a backlog of n items would cost O(n²). Each index is therefore
// scanned from the highest key the previous purge took (e.purgedTo), and
// only once that is exhausted is the part below it scanned too. Entries are
// written above the horizon of their instant (_ts + ttl > now, and _ts >
// now - default), so that part is normally empty; checking it each time the
// scan above runs dry keeps the hint a hint: an entry that got there anyway
// (a clock stepped back) is purged, never lost.
func (e *Engine) expiredEntries(r storage.Reader, c *containerRecord, z ttl.Horizon, limit int) ([]dueEntry, bool, error) {
	var out []dueEntry
	more := false
	// collect appends the entries in [lower, upper) until out holds limit;
	// it reports whether it stopped because out was full.
	collect := func(prefix, lower, upper []byte) (bool, error) {
		it, err := r.NewIter(storage.IterParams{Lower: lower, Upper: upper})
		if err != nil {
			return false, err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			k := it.Key()
			if len(k) != len(prefix)+16 {
				continue
			}
			if len(out) >= limit {
				return true, it.Err()
			}
			_, loc, ok := decodeExpiryValue(it.Value())
			if !ok {
				return false, fmt.Errorf("expiry entry %x: %w", k, errBadRecord)
			}
			out = append(out, dueEntry{key: bytes.Clone(k), loc: bytes.Clone(loc)})
		}
		return false, it.Err()
	}
	// Scan each index even when out is full: its first entry then says
	// that more remain.
	type scanned struct{ prefix, lower []byte }
	var below []scanned
	for _, sp := range e.expirySpans(c, z) {
		prefix, lower, upper := sp.prefix, sp.lower, sp.upper
		if sp.hinted {
			below = append(below, scanned{prefix, lower})
		}
		full, err := collect(prefix, lower, upper)
		if err != nil {
			return nil, false, err
		}
		more = more || full
	}
	// Only when both indexes ran dry above their hints, look below them,
	// once per backlog rather than once per batch.
	for _, s := range below {
		if more {
			break
		}
		full, err := collect(s.prefix, s.prefix, s.lower)
		if err != nil {
			return nil, false, err
		}
		more = full
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
	var taken []dueEntry
	var g grant
	defer e.sharing(db, coll)()
	if p.Now, err = e.purgeNow(ctx, p.Now); err != nil {
		return ttl.PurgeResult{}, err
	}
	// A purge lost in a crash is harmless: its items are still expired,
	// so still invisible, and are purged again; its change-feed records
	// go with it and are written again then. So it does not wait for
	// the fsync.
	done, err := e.writing(ctx, db, coll)
	if err != nil {
		return ttl.PurgeResult{}, err
	}
	defer done()
	err = storage.UpdateDeferred(ctx, e.store, func(tx storage.Txn) error {
		res, g = ttl.PurgeResult{}, grant{}
		if _, ok := tx.(storage.Prefetcher); ok {
			if dbRid, c := e.cachedContainer(db, coll); c != nil {
				storage.Prefetch(tx, append(stateReads(c, true), storage.Read{Key: containerKey(dbRid, coll)},
					storage.Read{Key: leaseKey(jobPurge, c.Rid)})...)
			}
		}
		c, err := e.loadContainer(tx, db, coll)
		if err != nil {
			return err
		}
		z := c.TTL.Horizon(p.Now)
		if z.Empty() {
			return nil
		}
		if g, err = e.leases.hold(tx, leaseKey(jobPurge, c.Rid), p.Now); err != nil || !g.ok {
			res.Elsewhere = g.wait
			return err
		}
		entries, more, err := e.expiredEntries(tx, c, z, p.Limit)
		taken = entries
		if err != nil {
			return err
		}
		res.More = more
		slices.SortFunc(entries, func(a, b dueEntry) int { return bytes.Compare(a.key, b.key) })
		raws, err := dueRecords(tx, c.Rid, entries)
		if err != nil {
			return err
		}
		var dead []liveItem
		for i, en := range entries {
			raw := raws[i]
			if raw == nil {
				// A dangling entry cannot happen through the engine; clear it.
				if err := tx.Delete(en.key); err != nil {
					return err
				}
				continue
			}
			rec, err := decodeItemRecord(raw)
			if err != nil {
				return err
			}
			if z.Expired(rec.ts, rec.itemTTL()) {
				dead = append(dead, liveItem{loc: en.loc, rec: rec})
			}
		}
		if len(dead) == 0 {
			return nil
		}
		lsns, err := reserveEach(tx, c, dead)
		if err != nil {
			return err
		}
		var usage usageDelta
		var erase erasureBatch
		for i := range dead {
			// Purging is background work: between items it lets a user
			// request waiting for a processor run first, rather than
			// after the whole batch (ttl.md A4).
			runtime.Gosched()
			it := &dead[i]
			if err := e.removeItem(tx, c, it, &usage); err != nil {
				return err
			}
			if err := e.logChange(tx, c, change{kind: changeExpire, lsn: lsns[i], seq: it.seq(), prev: &it.rec, erase: &erase, now: p.Now}); err != nil {
				return err
			}
			res.Items = append(res.Items, ttl.PurgedItem{TS: it.rec.ts, TTL: it.rec.itemTTL()})
		}
		if err := erase.write(tx, c); err != nil {
			return err
		}
		return usage.apply(tx, c)
	})
	if err != nil {
		if isNotFound(err) {
			return ttl.PurgeResult{}, nil // the container was dropped meanwhile
		}
		return ttl.PurgeResult{}, err
	}
	e.leases.commit(g)
	for _, en := range taken {
		e.advancePurgeHint(en.key[:len(en.key)-16], en.key)
	}
	return res, nil
}

// reserveEach allocates an LSN for each of items, from its own sequence,
// with one update of each sequence's state rather than one per item.
func reserveEach(tx storage.Txn, c *containerRecord, items []liveItem) ([]uint64, error) {
	seqs := make([]int, len(items))
	counts := map[int]int{}
	for i := range items {
		seqs[i] = c.seqOf(items[i].rec.epk)
		counts[seqs[i]]++
	}
	next := make(map[int]uint64, len(counts))
	for seq, n := range counts {
		first, err := reserveLSNs(tx, c, seq, n)
		if err != nil {
			return nil, err
		}
		next[seq] = first
	}
	lsns := make([]uint64, len(items))
	for i, seq := range seqs {
		lsns[i] = next[seq]
		next[seq]++
	}
	return lsns, nil
}

// dueRecords reads the records of the items of entries, which are sorted
// by key, in their order; a missing item reads nil. An item written while
// TTL was on has an image of its record next to its expiry entry, and the
// images of the items due together lie together, whatever the live items
// around their records: those are read with one iterator seeking forward
// in expiry order, so the purge loads only blocks of expired items. The
// others (written while TTL was off) are read from the records themselves.
func dueRecords(r storage.Reader, collRid []byte, entries []dueEntry) ([][]byte, error) {
	out := make([][]byte, len(entries))
	if len(entries) == 0 {
		return out, nil
	}
	if _, ok := r.(storage.Prefetcher); ok {
		return dueRecordsByKey(r, collRid, entries, out)
	}
	first, last := entries[0].key, entries[len(entries)-1].key
	it, err := r.NewIter(storage.IterParams{Lower: imageKey(collRid, first), Upper: prefixEnd(imageKey(collRid, last))})
	if err != nil {
		return nil, err
	}
	var rest []int
	for i, en := range entries {
		runtime.Gosched() // as in PurgeDue
		k := imageKey(collRid, en.key)
		if it.SeekGE(k) && bytes.Equal(it.Key(), k) {
			out[i] = bytes.Clone(it.Value())
		} else {
			rest = append(rest, i)
		}
	}
	err = it.Err()
	it.Close()
	if err != nil || len(rest) == 0 {
		return out, err
	}
	slices.SortFunc(rest, func(a, b int) int { return bytes.Compare(entries[a].loc, entries[b].loc) })
	byLoc := make([]dueEntry, len(rest))
	for j, i := range rest {
		byLoc[j] = entries[i]
	}
	raws, err := itemsByLoc(r, collRid, byLoc)
	if err != nil {
		return nil, err
	}
	for j, i := range rest {
		out[i] = raws[j]
	}
	return out, nil
}

// dueRecordsByKey is dueRecords over a store where every read is a round
// trip: seeking an iterator there is one per item, so the images and the
// records of every entry are named to Prefetch, which fetches them all in
// one round trip, and then read by key.
func dueRecordsByKey(r storage.Reader, collRid []byte, entries []dueEntry, out [][]byte) ([][]byte, error) {
	reads := make([]storage.Read, 0, 2*len(entries))
	for _, en := range entries {
		reads = append(reads, storage.Read{Key: imageKey(collRid, en.key)}, storage.Read{Key: itemKey(collRid, en.loc)})
	}
	storage.Prefetch(r, reads...)
	for i, en := range entries {
		v, err := r.Get(imageKey(collRid, en.key))
		if errors.Is(err, storage.ErrNotFound) {
			v, err = r.Get(itemKey(collRid, en.loc))
			if errors.Is(err, storage.ErrNotFound) {
				continue
			}
		}
		if err != nil {
			return nil, err
		}
		out[i] = bytes.Clone(v)
	}
	return out, nil
}

// itemsByLoc reads the records of the items of entries, which are sorted
// by location, with one iterator seeking forward; a missing item reads nil.
// Items of one partition due together were mostly written together, so
// their records share blocks: a forward seek steps on from the block the
// previous one loaded, where a point read would look each one up afresh
// through every level.
func itemsByLoc(r storage.Reader, collRid []byte, entries []dueEntry) ([][]byte, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	last := entries[len(entries)-1].loc
	it, err := r.NewIter(storage.IterParams{Lower: itemKey(collRid, entries[0].loc), Upper: prefixEnd(itemKey(collRid, last))})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	out := make([][]byte, len(entries))
	for i, en := range entries {
		runtime.Gosched() // as in PurgeDue
		k := itemKey(collRid, en.loc)
		if it.SeekGE(k) && bytes.Equal(it.Key(), k) {
			out[i] = bytes.Clone(it.Value())
		}
	}
	return out, it.Err()
}

// SweepHistory drops TTL epochs that no longer decide any stored item.
func (e *Engine) SweepHistory(ctx context.Context, p ttl.SweepParams) error {
	db, coll, err := splitLink(p.Container)
	if err != nil {
		return err
	}
	var changed *containerRecord
	err = e.store.Update(ctx, func(tx storage.Txn) error {
		c, err := e.loadContainer(tx, db, coll)
		if err != nil {
			return err
		}
		changed = c
		next := *c
		next.TTL = c.TTL.Swept(p.Through)
		return setJSON(tx, containerKey(c.DBRid, c.ID), &next)
	})
	if isNotFound(err) {
		return nil
	}
	if err == nil {
		e.containerChanged(ctx, changed)
	}
	return err
}

// purgeNow is the instant a purge, or its count, judges expiry at, given
// the purger's now. Over a store several gateways share, the store's
// clock, as their reads judge, not the purger's. Raised to the instants
// requests were handed: a setting change after it must be dated after
// it, as after a request's, and an item a request saw expired is purged
// even when the clock has been set back since (ttl.md B1).
func (e *Engine) purgeNow(ctx context.Context, now time.Time) (time.Time, error) {
	if _, ok := e.store.(storage.Clocked); ok {
		var err error
		if now, err = e.Now(ctx); err != nil {
			return time.Time{}, err
		}
	}
	return e.raise(now, false), nil
}

// StampClock returns c with its Now raised to the latest instant the
// engine has handed out (raise). The purger and the erasure judge expiry
// by it as requests judge it: after a restart with the clock set back,
// the items requests already treat as expired are purged, counted and
// erased then, not once the clock has caught up (ttl.md B1, B3, B4).
//
// Over a store with a clock of its own, c is returned as it is: the
// purge and the erasure judge by the store's clock then (PurgeDue), and
// c, the gateway's own clock, only paces them. Raising the engine's
// stamps to it would carry a gateway's clock that runs ahead into every
// judgement the stamps raise, the purge's among them, which would
// delete items early for every gateway of the store.
func (e *Engine) StampClock(c clock.Clock) clock.Clock {
	if _, ok := e.store.(storage.Clocked); ok {
		return c
	}
	return stampClock{Clock: c, e: e}
}

type stampClock struct {
	clock.Clock
	e *Engine
}

func (s stampClock) Now() time.Time { return s.e.raise(s.Clock.Now(), false) }

// TTLBacklog counts the items of container db/coll that have expired and
// are still on disk, up to max; capped reports that there may be more.
// They are invisible already; the purger deletes them.
func (e *Engine) TTLBacklog(ctx context.Context, db, coll string, max int) (n int, capped bool, err error) {
	now, err := e.Now(ctx)
	if err != nil {
		return 0, false, err
	}
	n, err = e.CountDue(ctx, ttl.CountDueParams{Container: "dbs/" + db + "/colls/" + coll, Now: now, Max: max})
	return n, n >= max, err
}

// CountDue counts expired items still on disk, up to p.Max. It counts
// from where the last purge stopped (see expiredEntries) without copying
// keys, since the purger asks for it every second while a backlog lasts.
func (e *Engine) CountDue(ctx context.Context, p ttl.CountDueParams) (int, error) {
	db, coll, err := splitLink(p.Container)
	if err != nil {
		return 0, err
	}
	if p.Now, err = e.purgeNow(ctx, p.Now); err != nil {
		return 0, err
	}
	n := 0
	err = e.store.View(ctx, func(r storage.Reader) error {
		c, err := e.loadContainer(r, db, coll)
		if err != nil {
			return err
		}
		z := c.TTL.Horizon(p.Now)
		for _, sp := range e.expirySpans(c, z) {
			prefix, lower, upper := sp.prefix, sp.lower, sp.upper
			it, err := r.NewIter(storage.IterParams{Lower: lower, Upper: upper})
			if err != nil {
				return err
			}
			for ok := it.First(); ok && n < p.Max; ok = it.Next() {
				if len(it.Key()) == len(prefix)+16 {
					n++
				}
			}
			err = it.Err()
			it.Close()
			if err != nil {
				return err
			}
		}
		return nil
	})
	if isNotFound(err) {
		return 0, nil
	}
	return n, err
}

// FirstEntries reads the lowest entry of each expiry index, so that the
// purger can leave a container alone until its next item falls due. Each
// index is read from its start, not from where the last purge stopped: an
// entry below that point (written under a clock that stepped back) must
// not be missed. The purger asks once per pass that left the container
// with nothing expired, after that pass's own look below the same point,
// so this adds no cost of another order.
func (e *Engine) FirstEntries(ctx context.Context, p ttl.FirstEntriesParams) (ttl.Keys, error) {
	out := ttl.Keys{OwnDue: ttl.NoKey, InheritTS: ttl.NoKey}
	db, coll, err := splitLink(p.Container)
	if err != nil {
		return out, err
	}
	err = e.store.View(ctx, func(r storage.Reader) error {
		c, err := e.loadContainer(r, db, coll)
		if err != nil {
			return err
		}
		for _, ix := range []struct {
			fam byte
			key *int64
		}{{famOwnDue, &out.OwnDue}, {famByTs, &out.InheritTS}} {
			prefix := collPrefix(ix.fam, c.Rid)
			it, err := r.NewIter(storage.IterParams{Lower: prefix, Upper: prefixEnd(prefix)})
			if err != nil {
				return err
			}
			for ok := it.First(); ok; ok = it.Next() {
				if k := it.Key(); len(k) == len(prefix)+16 {
					*ix.key = int64(binary.BigEndian.Uint64(k[len(prefix):]))
					break
				}
			}
			err = it.Err()
			it.Close()
			if err != nil {
				return err
			}
		}
		return nil
	})
	if isNotFound(err) {
		return out, nil
	}
	return out, err
}

// expirySpan is the expired part of one expiry index, from where the last
// purge left off (hinted) or from its start.
type expirySpan struct {
	prefix, lower, upper []byte
	hinted               bool
}

// expirySpans returns the expired spans of both expiry indexes under z.
func (e *Engine) expirySpans(c *containerRecord, z ttl.Horizon) []expirySpan {
	var out []expirySpan
	for _, ix := range []struct {
		fam   byte
		bound int64
	}{{famOwnDue, z.OwnDue}, {famByTs, z.InheritTS}} {
		prefix, upper, ok := expiryRange(c, ix.fam, ix.bound)
		if !ok {
			continue
		}
		sp := expirySpan{prefix: prefix, lower: prefix, upper: upper}
		if h := e.purgeHint(prefix); h != nil && bytes.Compare(h, upper) < 0 {
			sp.lower, sp.hinted = h, true
		}
		out = append(out, sp)
	}
	return out
}
