package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// WriteMode says what a write expects to find.
type WriteMode int

// The item write modes.
const (
	ModeCreate  WriteMode = iota // 409 if the item exists
	ModeUpsert                   // create or replace
	ModeReplace                  // 404 if the item is missing
)

// ItemRef addresses an item's container and, optionally, its partition.
type ItemRef struct {
	DB, Coll string
	// PartitionKey is the parsed x-ms-documentdb-partitionkey header; nil
	// when the header was absent.
	PartitionKey partition.Key
	HasKey       bool
}

// WriteItemParams is a create, upsert or replace.
type WriteItemParams struct {
	ItemRef
	Mode    WriteMode
	ID      string // the addressed id, for replace
	Body    []byte
	IfMatch string
	// Triggers names the pre- and post-triggers to run with the write.
	Triggers TriggerNames
	// KeyRequired refuses the write without ItemRef's key when the
	// container has a partition key, as the service refuses a request
	// without the key header. Writes the engine makes (a script's, a
	// patch's) take the key from the body.
	KeyRequired bool
}

// ItemResult is an item as stored, plus what the transport reports.
type ItemResult struct {
	Body    []byte // the item's JSON, system properties included
	Etag    string
	LSN     uint64
	Created bool // an upsert that created
	Charge  float64
	CollRid string
}

// liveItem is an item found by (partition key, id) and still visible.
type liveItem struct {
	loc []byte // itemLoc(rec.epk, seq)
	rec itemRecord
}

func (it *liveItem) seq() uint64 { return locSeq(it.loc) }

const maxIDBytes = 1023

// validateItemID applies the rules for item ids. The service's gateway
// accepts at create ids that its documentation calls restricted ('/',
// '\', '?', '#') and ids with control characters such as tab, carriage
// return and line feed (the official Go SDK's emulator suite checks 201
// for each; such items are then reachable by queries and feeds, not by
// their address), so Mayfly does too. A NUL is refused: no request path
// or C string can carry it, and it would only make an item that nothing
// can name.
func validateItemID(id string) *Error {
	switch {
	case id == "":
		return errorf(BadRequest, "The input content is invalid because the required properties - 'id; ' - are missing")
	case len(id) > maxIDBytes:
		return errorf(BadRequest, "The id exceeds the maximum allowed length of %d bytes.", maxIDBytes)
	case strings.IndexByte(id, 0) >= 0:
		return errorf(BadRequest, "The input name '%s' is invalid. Ensure to provide a unique non-empty string less than '%d' characters. Ids cannot contain a NUL character.", printableID(id), maxIDBytes+1)
	}
	return nil
}

// printableID is id as an error message may quote it: control characters
// appear as Go escapes, so a message never carries a raw NUL.
func printableID(id string) string {
	q := strconv.Quote(id)
	return q[1 : len(q)-1]
}

// keyFromBody extracts an item's partition key from its properties. A
// path that leads to an object or an array has no partition key value:
// the service takes it as undefined, like a missing property.
func (c *containerRecord) keyFromBody(body document.Value) partition.Key {
	key := make(partition.Key, len(c.pk.paths))
	for i, p := range c.pk.paths {
		if comp, ok := componentOf(body.At(p)); ok {
			key[i] = comp
		} // else the zero Component: undefined
	}
	return key
}

// maxKeyBytes is the longest string a partition key value may be, as the
// service documents it for keys hashed by version 2 (large partition
// keys). Version 1 hashes a key's first 100 bytes and takes longer ones.
const maxKeyBytes = 2048

func (c *containerRecord) checkKeySize(key partition.Key) *Error {
	if c.pk.hashV1() {
		return nil
	}
	for _, k := range key {
		if k.Kind == partition.KindString && len(k.Str) > maxKeyBytes {
			return errorf(BadRequest, "The partition key value is %d bytes long; the most a value may be is %d bytes.", len(k.Str), maxKeyBytes)
		}
	}
	return nil
}

func componentOf(v document.Value) (partition.Component, bool) {
	switch v.Kind() {
	case document.Undefined:
		return partition.Undefined(), true
	case document.Null:
		return partition.Null(), true
	case document.Bool:
		return partition.Bool(v.Bool()), true
	case document.Number:
		return partition.Number(v.Float()), true
	case document.String:
		return partition.String(v.Str()), true
	}
	return partition.Component{}, false
}

// pointKey checks the partition key header of a point operation.
func (c *containerRecord) pointKey(ref ItemRef) ([]byte, *Error) {
	if !ref.HasKey {
		if len(c.pk.paths) == 0 {
			return partition.AppendKeyBytes(nil, nil), nil
		}
		return nil, errorf(BadRequest, "PartitionKey value must be supplied for this operation.")
	}
	return c.headerKeyBytes(ref.PartitionKey)
}

func (c *containerRecord) headerKeyBytes(k partition.Key) ([]byte, *Error) {
	if len(k) == 0 {
		// "[]" addresses items without a partition key value.
		k = make(partition.Key, len(c.pk.paths))
		for i := range k {
			k[i] = partition.Undefined()
		}
	}
	if len(k) != len(c.pk.paths) {
		return nil, errorf(BadRequest, "Partition key provided either doesn't correspond to definition in the collection or doesn't match partition key field values specified in the document.")
	}
	return partition.AppendKeyBytes(nil, k), nil
}

// findItem looks an item up by partition key bytes and id. Expired items
// are reported as absent, together with their record so a write can remove
// what is left of them.
func (e *Engine) findItem(r storage.Reader, c *containerRecord, pk []byte, id string, now time.Time) (live *liveItem, dead *liveItem, err error) {
	idKey := itemIDKey(c.Rid, pk, id)
	if seq, ok := e.locHints.get(idKey); ok {
		it, err := hintedItem(r, c, itemLoc(c.epkOfBytes(pk), seq), pk, id)
		if err != nil {
			return nil, nil, err
		}
		if it != nil {
			return judgeItem(c, it, now)
		}
	}
	locv, err := r.Get(idKey)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if len(locv) < 10 {
		return nil, nil, errBadRecord
	}
	loc := bytes.Clone(locv)
	raw, err := r.Get(itemKey(c.Rid, loc))
	if err != nil {
		return nil, nil, fmt.Errorf("item %q: id index points at a missing record: %w", id, err)
	}
	rec, err := decodeItemRecord(raw)
	if err != nil {
		return nil, nil, err
	}
	rec.detach()
	e.locHints.put(idKey, locSeq(loc))
	return judgeItem(c, &liveItem{loc: loc, rec: rec}, now)
}

// hintedItem reads the record at a hinted location and returns it as the
// item (pk, id) if it is that item (locHints), or nil if there is no
// record there or it is another's.
func hintedItem(r storage.Reader, c *containerRecord, loc, pk []byte, id string) (*liveItem, error) {
	raw, err := r.Get(itemKey(c.Rid, loc))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := decodeItemRecord(raw)
	if err != nil || rec.id != id || !bytes.Equal(rec.pk, pk) {
		// Not the item asked for; the id entry will say where it is,
		// and a record that does not decode is reported from there if
		// it is this item's.
		return nil, nil
	}
	rec.detach()
	return &liveItem{loc: loc, rec: rec}, nil
}

// judgeItem reports a found item as live, or as dead when it has expired.
func judgeItem(c *containerRecord, it *liveItem, now time.Time) (live *liveItem, dead *liveItem, err error) {
	if c.expired(&it.rec, now) {
		return nil, it, nil
	}
	return it, nil, nil
}

var itemSystemProps = []string{"_rid", "_self", "_etag", "_ts", "_attachments", "_lsn"}

// WriteItem creates, upserts or replaces an item.
func (e *Engine) WriteItem(ctx context.Context, p WriteItemParams) (*ItemResult, error) {
	if len(p.Body) > e.maxItem {
		return nil, errorf(RequestEntityTooLarge, "Request size is too large. The item exceeds the maximum allowed size of %d bytes.", e.maxItem)
	}
	body, err := document.Parse(p.Body)
	if err != nil {
		return nil, errorf(BadRequest, "The request payload is invalid: %v", err)
	}
	id, derr := bodyID(body)
	if derr != nil {
		return nil, derr
	}
	if derr := validateItemID(id); derr != nil {
		return nil, derr
	}
	if p.Mode == ModeReplace && id != p.ID {
		return nil, errorf(BadRequest, "The id '%s' in the body does not match the id '%s' addressed.", id, p.ID)
	}
	body = body.Without(itemSystemProps...)
	return e.writeOne(ctx, p.ItemRef, id, !p.Triggers.empty(), func(tx storage.Txn, c *containerRecord, now time.Time) (*ItemResult, error) {
		if p.Triggers.empty() {
			return e.writeItemTx(tx, c, p, id, body, now)
		}
		return e.writeWithTriggers(ctx, tx, c, p, id, body, now)
	})
}

// writeItemTx does a write inside a transaction; batches call it once per
// operation. Every write that stores an item body (create, upsert,
// replace, patch, alone or in a batch) comes through here, so the checks
// every stored item must pass are made here.
func (e *Engine) writeItemTx(tx storage.Txn, c *containerRecord, p WriteItemParams, id string, body document.Value, now time.Time) (*ItemResult, error) {
	if derr := checkDepth(body); derr != nil {
		return nil, derr
	}
	itemTTL, err := ttl.ParseItemTTL(body.Get("ttl"), c.TTL.Setting())
	if err != nil {
		return nil, ttlError(err)
	}
	key := c.keyFromBody(body)
	pk := partition.AppendKeyBytes(nil, key)
	if derr := c.checkKeySize(key); derr != nil {
		return nil, derr
	}
	if !p.HasKey && p.KeyRequired && len(c.pk.paths) > 0 {
		return nil, errorf(BadRequest, "The partition key supplied in x-ms-partitionkey header has fewer components than defined in the the collection.")
	}
	if p.HasKey {
		hk, derr := c.headerKeyBytes(p.PartitionKey)
		if derr != nil {
			return nil, derr
		}
		if !bytes.Equal(hk, pk) {
			return nil, &Error{Code: BadRequest, SubStatus: SubPartitionKeyMismatch, Message: "PartitionKey extracted from document doesn't match the one specified in the header. Learn more: https://aka.ms/CosmosDB/sql/errors/wrong-pk-value"}
		}
	}
	live, dead, err := e.findItem(tx, c, pk, id, now)
	if err != nil {
		return nil, err
	}
	switch {
	case live != nil && p.Mode == ModeCreate:
		return nil, conflict()
	case live == nil && p.Mode == ModeReplace:
		return nil, notFound()
	case live != nil && p.IfMatch != "" && p.IfMatch != "*" && p.IfMatch != etagFor(c.Rid, live.rec.lsn):
		return nil, preconditionFailed()
	}
	// An upsert of an item that does not exist creates it whatever its
	// If-Match says, as the service does (azure-cosmos-dotnet-v3#1698; the
	// Java SDK documents it: replace semantics when the item exists, create
	// semantics when it does not).
	epk := c.epk(key)
	lsn, err := nextLSN(tx, c, c.seqOf(epk))
	if err != nil {
		return nil, err
	}
	seq := lsn
	ts := now.Unix()
	// The index entries are the stored body's: _ts included, once a query
	// has listed it for entries (absent.go).
	indexed := body
	if c.absentIndex(tsPath) >= 0 {
		indexed = body.With("_ts", document.Int(ts))
	}
	if live != nil {
		seq = live.seq()
	}
	// A replace keeps its location, so the entries are computed once: for
	// the comparison with the replaced version's, the unique-key check and
	// the write.
	loc := itemLoc(epk, seq)
	entries, uniq := indexEntries(c, indexed, loc), uniqueKeys(c, indexed, pk)
	var kept map[string]bool
	if live != nil {
		if kept, err = e.replaceIndexes(tx, c, live, entries, uniq); err != nil {
			return nil, err
		}
	} else if dead != nil {
		// The expired item leaves now; its expiry is recorded once, here
		// or by the purger, whichever removes it.
		if err := e.removeItem(tx, c, dead, nil); err != nil {
			return nil, err
		}
		if err := e.logChange(tx, c, change{kind: changeExpire, lsn: lsn, seq: dead.seq(), prev: &dead.rec, now: now}); err != nil {
			return nil, err
		}
	}
	rec := itemRecord{ts: ts, lsn: lsn, ttlKind: ttlKind(itemTTL.Kind), ttlSecs: itemTTL.Seconds, pk: pk, id: id, epk: epk}
	rid := ridString(itemRid(c.Rid, seq))
	etag := etagFor(c.Rid, lsn)
	out := body.AppendJSON(nil)
	out = appendSystemProps(out, rid, c.self()+"docs/"+rid+"/", etag, rec.ts)
	if len(out) > e.maxItem {
		return nil, errorf(RequestEntityTooLarge, "Request size is too large. The item exceeds the maximum allowed size of %d bytes.", e.maxItem)
	}
	rec.json = out
	if err := e.checkUniqueKeys(tx, c, uniq, loc, now); err != nil {
		return nil, err
	}
	if err := e.putItem(tx, c, loc, &rec, entries, uniq, kept); err != nil {
		return nil, err
	}
	if err := putVectors(tx, c, body, loc, live != nil); err != nil {
		return nil, err
	}
	var words []int64
	if len(c.TextPaths) > 0 {
		prev := document.Undef
		if live != nil {
			if prev, err = itemText(c, &live.rec); err != nil {
				return nil, err
			}
		}
		if words, err = putWords(tx, c, body, prev, loc); err != nil {
			return nil, err
		}
	}
	items, grew := int64(1), int64(len(out))
	if live != nil {
		items, grew = 0, grew-int64(len(live.rec.json))
	}
	if err := addUsage(tx, c, rec.epk, rec.pk, items, grew, words); err != nil {
		return nil, err
	}
	if live == nil {
		if err := tx.Set(byRidKey(c.Rid, seq), loc); err != nil {
			return nil, err
		}
	}
	ch := change{kind: changeCreate, lsn: lsn, seq: seq, cur: &rec, now: now}
	if dead != nil {
		ch.ord = 1 // after the expiry logged under the same LSN
	}
	if live != nil {
		ch.kind, ch.prev = changeReplace, &live.rec
	}
	if err := e.logChange(tx, c, ch); err != nil {
		return nil, err
	}
	return &ItemResult{Body: out, Etag: etag, LSN: lsn, Created: live == nil, CollRid: c.ridString()}, nil
}

// appendSystemProps closes the object in out (which ends with '}') with the
// system properties, in the order the service writes them.
func appendSystemProps(out []byte, rid, self, etag string, ts int64) []byte {
	out = out[:len(out)-1]
	if len(out) > 1 {
		out = append(out, ',')
	}
	out = append(out, `"_rid":`...)
	out = document.AppendString(out, rid)
	out = append(out, `,"_self":`...)
	out = document.AppendString(out, self)
	out = append(out, `,"_etag":`...)
	out = document.AppendString(out, etag)
	out = append(out, `,"_attachments":"attachments/","_ts":`...)
	out = strconv.AppendInt(out, ts, 10)
	return append(out, '}')
}

// nextLSN allocates the next log sequence number of the container's
// sequence seq.
func nextLSN(tx storage.Txn, c *containerRecord, seq int) (uint64, error) {
	return reserveLSNs(tx, c, seq, 1)
}

// reserveLSNs allocates the next n log sequence numbers of sequence seq
// with one update of its state and returns the first.
func reserveLSNs(tx storage.Txn, c *containerRecord, seq, n int) (uint64, error) {
	st, err := readState(tx, c.Rid, seq)
	if err != nil {
		return 0, err
	}
	if st.lsn-seqBase(seq)+uint64(n) > maxSeqLSN {
		return 0, fmt.Errorf("container %s: sequence %d has no LSNs left", c.ridString(), seq)
	}
	st.lsn += uint64(n)
	if err := tx.Set(stateKey(c.Rid, seq), st.encode()); err != nil {
		return 0, err
	}
	return st.lsn - uint64(n) + 1, nil
}

// currentLSN is the last LSN of the container's sequence seq.
func (e *Engine) currentLSN(r storage.Reader, c *containerRecord, seq int) (uint64, error) {
	st, err := readState(r, c.Rid, seq)
	return st.lsn, err
}

// putItem writes an item record and every index entry it needs: its range
// and composite index entries and its unique-key entries (indexEntries
// and uniqueKeys of the body at loc).
//
// kept, when the write replaces a version at the same location, holds the
// entries that version had and this one keeps (replaceIndexes): they are
// in place already, as is the id entry.
func (e *Engine) putItem(tx storage.Txn, c *containerRecord, loc []byte, rec *itemRecord, entries, uniq [][]byte, kept map[string]bool) error {
	ek := expiryKey(c, rec, locSeq(loc))
	// While the item can fall due, the purge reads the record from its
	// image, in expiry order, rather than from among the live records.
	// The record says when it has none, so that replacing or removing it
	// writes no deletion of a key that was never there.
	image := ek != nil && hasImage(c, rec)
	rec.noImage = !image
	raw := rec.encode()
	if err := tx.Set(itemKey(c.Rid, loc), raw); err != nil {
		return err
	}
	if kept == nil {
		idKey := itemIDKey(c.Rid, rec.pk, rec.id)
		if err := tx.Set(idKey, loc); err != nil {
			return err
		}
		e.locHints.put(idKey, locSeq(loc))
	}
	if ek != nil {
		if err := tx.Set(ek, expiryValue(rec, loc)); err != nil {
			return err
		}
		if image {
			if err := tx.Set(imageKey(c.Rid, ek), raw); err != nil {
				return err
			}
		}
	}
	for _, k := range uniq {
		if kept[string(k)] {
			continue
		}
		if err := tx.Set(k, loc); err != nil {
			return err
		}
	}
	for _, k := range entries {
		if kept[string(k)] {
			continue
		}
		if err := tx.Set(k, nil); err != nil {
			return err
		}
	}
	return nil
}

// replaceIndexes takes away the entries of the version live that the
// version about to replace it at the same location does not have (its
// index entries and unique-key entries, entries and uniq), and returns
// those it has too, which stay as they are. An upsert that changes one
// property then rewrites one index entry, not all of them.
func (e *Engine) replaceIndexes(tx storage.Txn, c *containerRecord, live *liveItem, entries, uniqNext [][]byte) (map[string]bool, error) {
	keys, uniq, err := indexKeys(tx, c, live)
	if err != nil {
		return nil, err
	}
	next := make(map[string]bool, len(entries)+len(uniqNext))
	for _, k := range entries {
		next[string(k)] = true
	}
	for _, k := range uniqNext {
		next[string(k)] = true
	}
	kept := make(map[string]bool, len(next))
	stays := func(k []byte) bool {
		if next[string(k)] {
			kept[string(k)] = true
			return true
		}
		return false
	}
	keys = slices.DeleteFunc(keys, stays)
	uniq = slices.DeleteFunc(uniq, stays)
	return kept, deleteEntries(tx, keys, uniq, live.loc)
}

// removeIndexes deletes the index entries of an item version that is about
// to be overwritten in place.
func (e *Engine) removeIndexes(tx storage.Txn, c *containerRecord, it *liveItem) error {
	keys, uniq, err := indexKeys(tx, c, it)
	if err != nil {
		return err
	}
	return deleteEntries(tx, keys, uniq, it.loc)
}

// indexKeys returns the keys of an item version's expiry and range index
// entries, and of its unique-key entries.
func indexKeys(r storage.Reader, c *containerRecord, it *liveItem) (keys, uniq [][]byte, err error) {
	if k := expiryKey(c, &it.rec, it.seq()); k != nil {
		keys = append(keys, k)
		// Whether the image exists depended on the setting when this
		// version was written. A record written without one says so; an
		// older record does not, and deleting the key either way is exact.
		if !it.rec.noImage {
			keys = append(keys, imageKey(c.Rid, k))
		}
	}
	if len(c.uniqueKeys) == 0 && c.index.none {
		return keys, nil, nil
	}
	doc, err := document.Parse(it.rec.json)
	if err != nil {
		// A body that cannot be read must still be removable: a delete or
		// a purge that failed on it would fail the same way forever.
		idx, uniq, serr := entriesByScan(r, c, it.loc)
		if serr != nil {
			return nil, nil, fmt.Errorf("find the index entries of an unreadable item body (%v): %w", err, serr)
		}
		return append(keys, idx...), uniq, nil
	}
	return append(keys, indexEntries(c, doc, it.loc)...), uniqueKeys(c, doc, it.rec.pk), nil
}

// entriesByScan finds the range, composite and unique-key entries of the
// item at loc without its body, by scanning the container's index for
// them: slow, and only for a body that cannot be parsed. Every index entry
// ends with the location of its item, whose last eight bytes are a
// sequence number no other item of the container has; a unique-key entry
// holds the location as its value.
func entriesByScan(r storage.Reader, c *containerRecord, loc []byte) (idx, uniq [][]byte, err error) {
	if !c.index.none {
		err = scanPrefix(r, indexPrefix(c), func(k, _ []byte) (bool, error) {
			if bytes.HasSuffix(k, loc) {
				idx = append(idx, bytes.Clone(k))
			}
			return true, nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if len(c.uniqueKeys) > 0 {
		err = scanPrefix(r, collPrefix(famUnique, c.Rid), func(k, v []byte) (bool, error) {
			if bytes.Equal(v, loc) {
				uniq = append(uniq, bytes.Clone(k))
			}
			return true, nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return idx, uniq, nil
}

// deleteEntries deletes keys, and those of the unique-key entries uniq
// that the item at loc still owns: a later item may have taken an entry
// over once this one expired.
func deleteEntries(tx storage.Txn, keys, uniq [][]byte, loc []byte) error {
	for _, k := range keys {
		if err := tx.Delete(k); err != nil {
			return err
		}
	}
	for _, k := range uniq {
		v, err := tx.Get(k)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if !bytes.Equal(v, loc) {
			continue
		}
		if err := tx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// removeItem deletes an item and all its index entries. Its usage is
// taken off the counters at once, or gathered in d when d is not nil (a
// purge applies a whole batch's with one update per partition).
func (e *Engine) removeItem(tx storage.Txn, c *containerRecord, it *liveItem, d *usageDelta) error {
	if err := e.removeIndexes(tx, c, it); err != nil {
		return err
	}
	if err := deleteVectors(tx, c, it.loc); err != nil {
		return err
	}
	text, err := itemText(c, &it.rec)
	if err != nil {
		return err
	}
	words, err := deleteWords(tx, c, text, it.loc)
	if err != nil {
		return err
	}
	idKey := itemIDKey(c.Rid, it.rec.pk, it.rec.id)
	if err := tx.Delete(idKey); err != nil {
		return err
	}
	e.locHints.forget(idKey)
	if d != nil {
		d.add(c, it.rec.epk, -1, -int64(len(it.rec.json)), words)
	} else if err := addUsage(tx, c, it.rec.epk, nil, -1, -int64(len(it.rec.json)), words); err != nil {
		return err
	}
	if err := tx.Delete(byRidKey(c.Rid, it.seq())); err != nil {
		return err
	}
	return tx.Delete(itemKey(c.Rid, it.loc))
}

// ReadItemParams is a point read.
type ReadItemParams struct {
	ItemRef
	ID          string
	IfNoneMatch string
}

// ReadItem returns one item. A matching If-None-Match gives NotModified.
func (e *Engine) ReadItem(ctx context.Context, p ReadItemParams) (*ItemResult, error) {
	now, done, err := e.judgingIn(ctx, p.DB, p.Coll)
	if err != nil {
		return nil, err
	}
	defer done()
	var res *ItemResult
	var coll *containerRecord
	err = e.store.View(ctx, func(r storage.Reader) error {
		e.prefetchPoint(r, p.ItemRef, p.ID, false)
		now, err := e.nowIn(ctx, r, now)
		if err != nil {
			return err
		}
		c, err := e.loadContainer(r, p.DB, p.Coll)
		if err != nil {
			return err
		}
		coll = c
		pk, derr := c.pointKey(p.ItemRef)
		if derr != nil {
			return derr
		}
		live, _, err := e.findItem(r, c, pk, p.ID, now)
		if err != nil {
			return err
		}
		if live == nil {
			return notFound()
		}
		res = &ItemResult{Body: bytes.Clone(live.rec.json), Etag: etagFor(c.Rid, live.rec.lsn), LSN: live.rec.lsn, CollRid: c.ridString()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Charge = readCharge(len(res.Body))
	e.charge(coll, res.Charge)
	if p.IfNoneMatch != "" && (p.IfNoneMatch == res.Etag || p.IfNoneMatch == "*") {
		return res, &Error{Code: NotModified, Message: "Not modified."}
	}
	return res, nil
}

// DeleteItemParams is a delete.
type DeleteItemParams struct {
	ItemRef
	ID       string
	IfMatch  string
	Triggers TriggerNames
}

// DeleteItem removes an item.
func (e *Engine) DeleteItem(ctx context.Context, p DeleteItemParams) (*ItemResult, error) {
	return e.writeOne(ctx, p.ItemRef, p.ID, !p.Triggers.empty(), func(tx storage.Txn, c *containerRecord, now time.Time) (*ItemResult, error) {
		if p.Triggers.empty() {
			return e.deleteItemTx(tx, c, p, now)
		}
		return e.deleteWithTriggers(ctx, tx, c, p, now)
	})
}

// writeOne runs one write of item id in a transaction of its own, with
// the operation's one "now", and charges it to the container. scripted
// is set when the write runs triggers (updateScripted).
func (e *Engine) writeOne(ctx context.Context, ref ItemRef, id string, scripted bool, op func(tx storage.Txn, c *containerRecord, now time.Time) (*ItemResult, error)) (*ItemResult, error) {
	now, done, err := e.judgingIn(ctx, ref.DB, ref.Coll)
	if err != nil {
		return nil, err
	}
	defer done()
	return e.writeOneAt(ctx, ref, id, now, scripted, op)
}

// writeOneAt is writeOne for a caller that holds the container's setting
// lock and has taken the operation's now, or left it zero for the
// transaction to take (judgingIn).
func (e *Engine) writeOneAt(ctx context.Context, ref ItemRef, id string, now time.Time, scripted bool, op func(tx storage.Txn, c *containerRecord, now time.Time) (*ItemResult, error)) (*ItemResult, error) {
	var res *ItemResult
	var coll *containerRecord
	update := e.updateWriting
	if scripted {
		update = e.updateScripted
	}
	err := update(ctx, ref, func(tx storage.Txn) error {
		e.prefetchPoint(tx, ref, id, true)
		now, err := e.nowIn(ctx, tx, now)
		if err != nil {
			return err
		}
		c, err := e.loadContainer(tx, ref.DB, ref.Coll)
		if err != nil {
			return err
		}
		coll = c
		res, err = op(tx, c, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	res.Charge = writeCharge(len(res.Body))
	e.charge(coll, res.Charge)
	return res, nil
}

// prefetchPoint names to the store the keys a point operation on item id
// reads (storage.Prefetch): the container record, the item's id entry and
// the record it points at, and for a write the container's state and its
// partition's count. The names come from the cached container record; if
// it is stale, the reads that follow find other keys and fetch them as
// usual, so a wrong guess costs round trips, never a wrong answer.
func (e *Engine) prefetchPoint(r storage.Reader, ref ItemRef, id string, write bool) {
	e.prefetchPoints(r, ref.DB, ref.Coll, pointAt{ref: ref, id: id, write: write})
}

// pointAt is an item a point operation names: under ref, by id, to write
// it or only read it; lsn when a read answers with its sequence's LSN,
// whose state it then reads too (a write's comes with its lock).
type pointAt struct {
	ref        ItemRef
	id         string
	write, lsn bool
}

// prefetchPoints is prefetchPoint for the items of several operations on
// container db/coll, named together, so that a store over the network
// reads them in one round trip rather than one an operation.
func (e *Engine) prefetchPoints(r storage.Reader, db, coll string, points ...pointAt) {
	if _, ok := r.(storage.Prefetcher); !ok {
		return
	}
	dbRid, c := e.cachedContainer(db, coll)
	if c == nil {
		return
	}
	reads := []storage.Read{{Key: containerKey(dbRid, coll)}}
	named := map[string]bool{}
	name := func(rd storage.Read) {
		if !named[string(rd.Key)] {
			named[string(rd.Key)] = true
			reads = append(reads, rd)
		}
	}
	for _, p := range points {
		pk, derr := c.pointKey(p.ref)
		if derr != nil || p.id == "" {
			continue
		}
		name(storage.Read{Key: itemIDKey(c.Rid, pk, p.id), Via: collPrefix(famItem, c.Rid)})
		epk, err := c.epkOf(pk)
		switch {
		case err != nil:
		case p.write:
			// The container's state comes with updateWriting's lock
			// (lockState).
			name(storage.Read{Key: partitionCountKey(c.Rid, epk)})
		case p.lsn:
			name(storage.Read{Key: stateKey(c.Rid, c.seqOf(epk))})
		}
	}
	storage.Prefetch(r, reads...)
}

// cachedContainer returns the rid of database db and the record of its
// container coll as this engine last read them, or nil when it has not.
// They are guesses to prefetch by, never answers.
func (e *Engine) cachedContainer(db, coll string) ([]byte, *containerRecord) {
	e.mu.Lock()
	defer e.mu.Unlock()
	dbRid, known := e.dbRids[db]
	if !known {
		return nil, nil
	}
	return dbRid, e.cache[string(containerKey(dbRid, coll))].c
}

// deleteItemTx deletes inside a transaction; batches call it once per
// delete operation.
func (e *Engine) deleteItemTx(tx storage.Txn, c *containerRecord, p DeleteItemParams, now time.Time) (*ItemResult, error) {
	live, err := e.liveForWrite(tx, c, p.ItemRef, p.ID, p.IfMatch, now)
	if err != nil {
		return nil, err
	}
	lsn, err := nextLSN(tx, c, c.seqOf(live.rec.epk))
	if err != nil {
		return nil, err
	}
	if err := e.removeItem(tx, c, live, nil); err != nil {
		return nil, err
	}
	if err := e.logChange(tx, c, change{kind: changeDelete, lsn: lsn, seq: live.seq(), prev: &live.rec, now: now}); err != nil {
		return nil, err
	}
	return &ItemResult{LSN: lsn, CollRid: c.ridString()}, nil
}

// liveForWrite finds the item a delete or patch addresses: 404 when it is
// missing or expired, 412 when If-Match names another version.
func (e *Engine) liveForWrite(tx storage.Txn, c *containerRecord, ref ItemRef, id, ifMatch string, now time.Time) (*liveItem, error) {
	pk, derr := c.pointKey(ref)
	if derr != nil {
		return nil, derr
	}
	live, _, err := e.findItem(tx, c, pk, id, now)
	if err != nil {
		return nil, err
	}
	if live == nil {
		return nil, notFound()
	}
	if ifMatch != "" && ifMatch != "*" && ifMatch != etagFor(c.Rid, live.rec.lsn) {
		return nil, preconditionFailed()
	}
	return live, nil
}

// maxItemDepth is the service's nesting limit for items. A variable only so
// that tests can store items the way a build that did not check patches
// did.
var maxItemDepth = 128

// checkDepth enforces the service's nesting limit for items.
func checkDepth(v document.Value) *Error {
	if depth(v, 0) > maxItemDepth {
		return errorf(BadRequest, "The item exceeds the maximum nesting depth of %d levels.", maxItemDepth)
	}
	return nil
}

func depth(v document.Value, d int) int {
	max := d
	switch v.Kind() {
	case document.Array:
		for _, e := range v.Array() {
			if n := depth(e, d+1); n > max {
				max = n
			}
		}
	case document.Object:
		for _, f := range v.Fields() {
			if n := depth(f.Value, d+1); n > max {
				max = n
			}
		}
	}
	return max
}
