package engine

// The change feed (docs/design/changefeed.md). Every write, user delete and
// expiry calls logChange in its own transaction, which keeps two per-container
// logs in step with the items:
//
//   - the latest-version index, 'f'+collRid+lsn+seq: one entry per live item
//     version. A write adds its version's entry and deletes the entry of the
//     version it replaces; a delete or an expiry deletes it. Latest-version
//     mode is a range scan of it from the client's LSN, so a page costs what
//     it returns (plus entries another scope filters out), never the history.
//   - the version log, 'v'+collRid+lsn+ord: one record per change (create,
//     replace, delete, expiry) with the images a reader needs. All-versions-
//     and-deletes mode scans it. Records older than the container's
//     retention are hidden at once and trimmed lazily, a few per change.
//
// Several changes may share an LSN (an expired item removed by the create
// that takes its id); ord keeps their records apart and in order, and pages
// never split the changes of one LSN, so an LSN is a complete continuation.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/plan"
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
	// ord orders changes that share an LSN: a create over an expired id
	// logs the expiry (0) and the create (1) under one LSN.
	ord  uint32
	seq  uint64
	cur  *itemRecord
	prev *itemRecord
	// erase, when set, collects the erasure of an item the change
	// removes, for the caller to queue with others (erasure.go).
	erase *erasureBatch
	// now is the operation's time, on the clock that judges expiry (the
	// database's over a shared store): the time of a delete or an
	// expiry in the log, and what retention is measured against.
	now time.Time
}

// Trimming runs on one change in trimEvery and removes up to trimPerChange
// expired version records, so it keeps pace with writes (two records per
// change on average) while most writes pay nothing for it: a trim opens an
// iterator, the dearest step of logging a change.
const (
	trimEvery     = 32
	trimPerChange = 2 * trimEvery
)

// A write takes its time before it takes its LSN, so writers waiting on
// one another, or a clock stepped back, can commit a later LSN with an
// earlier time: a log's times are not in LSN order. Each sequence keeps
// its high-water time, the latest time among the changes it has logged
// (containerState.hw), and every log entry carries the high-water as of
// its own change. Those are in LSN order, and at or after the entry's own
// time, so a start from a time bisects on them (seekTime): the first entry
// whose high-water reaches the time is where changes at or after it can
// begin, and what the walk then filters out are only the changes that
// lagged behind one already logged.
//
// timeSlack is what entries logged before high-waters were kept fall back
// on: a start seeks to this much before its time on their own times.
const timeSlack = 5 * time.Minute

// logChange records a change for the change feed, in the same transaction
// as the write itself.
func (e *Engine) logChange(tx storage.Txn, c *containerRecord, ch change) error {
	img := ch.cur
	if img == nil {
		img = ch.prev
	}
	if img == nil {
		return fmt.Errorf("change feed: change at LSN %d has no item version", ch.lsn)
	}
	// Records carry their EPK; recompute it only for a container without
	// partition key paths, whose records keep "".
	epk := img.epk
	if epk == "" {
		var err error
		if epk, err = c.epkOf(img.pk); err != nil {
			return fmt.Errorf("change feed: item %q: %w", img.id, err)
		}
	}
	if ch.prev != nil {
		if err := tx.Delete(latestKey(c.Rid, ch.prev.lsn, ch.seq)); err != nil {
			return err
		}
	}
	now := ch.now
	var v versionRecord
	versions := c.feedRetention() > 0
	if versions {
		v = versionOf(c, ch, epk, img, now)
	}
	if versions || ch.cur != nil {
		// The latest of the times this change logs.
		t := v.crts
		if ch.cur != nil && (!versions || ch.cur.ts > t) {
			t = ch.cur.ts
		}
		hw, err := raiseHighWater(tx, c, lsnSeq(ch.lsn), t)
		if err != nil {
			return err
		}
		v.hw = hw
	}
	if ch.cur != nil {
		if err := tx.Set(latestKey(c.Rid, ch.lsn, ch.seq), encodeLatestEntry(ch.cur.ts, v.hw, epk, ch.cur.pk)); err != nil {
			return err
		}
	}
	if versions {
		if err := tx.Set(versionKey(c.Rid, ch.lsn, ch.ord), v.encode()); err != nil {
			return err
		}
	}
	if err := e.queueGone(tx, c, ch, now); err != nil {
		return err
	}
	if ch.lsn%trimEvery != 0 {
		return nil
	}
	return trimVersions(tx, c, c.versionCutoff(now), ch.lsn)
}

// raiseHighWater raises sequence seq's high-water time to t, the latest
// time a change logs, if it is below, and returns it. A change that logs
// no entry (a delete without a version log) neither reads nor moves it.
func raiseHighWater(tx storage.Txn, c *containerRecord, seq int, t int64) (int64, error) {
	st, err := readState(tx, c.Rid, seq)
	if err != nil || t <= st.hw {
		return st.hw, err
	}
	st.hw = t
	return t, tx.Set(stateKey(c.Rid, seq), st.encode())
}

// versionOf is the version-log record of change ch, whose item image is
// img and EPK epk, logged at now.
func versionOf(c *containerRecord, ch change, epk string, img *itemRecord, now time.Time) versionRecord {
	v := versionRecord{kind: ch.kind, epk: epk, pk: img.pk, id: img.id}
	switch {
	case ch.cur != nil:
		v.crts = ch.cur.ts
		v.cur = ch.cur.json
	case ch.kind == changeExpire:
		// Never before the instant the item expired, whichever clock
		// removed it.
		v.crts = now.Unix()
		if at, ok := c.TTL.ExpiresAt(ch.prev.ts, ch.prev.itemTTL()); ok {
			v.crts = max(v.crts, ceilSecond(at))
		}
	default:
		v.crts = now.Unix()
	}
	if ch.prev != nil {
		v.prevLSN = ch.prev.lsn
	}
	// Deletes and expiries carry the item's id and partition key and not
	// its last image, as the service's do; a purge then writes a small
	// record, not a copy of the item it removes.
	if ch.prev != nil && ch.cur != nil {
		v.prev = ch.prev.json
	}
	return v
}

func ceilSecond(t time.Time) int64 {
	s := t.Unix()
	if t.After(time.Unix(s, 0)) {
		s++
	}
	return s
}

// trimVersions deletes up to trimPerChange version records older than
// cutoff (Unix seconds), oldest first, and moves the log's low-water mark
// past them, so neither trimming nor reading ever walks over the
// tombstones trimming leaves. It never touches records at or after below.
func trimVersions(tx storage.Txn, c *containerRecord, cutoff int64, below uint64) error {
	seq := lsnSeq(below)
	lower, err := versionFloor(tx, c.Rid, seq)
	if err != nil {
		return err
	}
	it, err := tx.NewIter(storage.IterParams{Lower: versionKey(c.Rid, lower, 0), Upper: versionKey(c.Rid, below, 0)})
	if err != nil {
		return err
	}
	var dead [][]byte
	floor := lower
	for ok := it.First(); ok && len(dead) < trimPerChange; ok = it.Next() {
		crts, _, err := versionTimes(it.Value())
		if err != nil {
			it.Close()
			return err
		}
		if crts >= cutoff {
			break
		}
		k := bytes.Clone(it.Key())
		dead = append(dead, k)
		floor = versionKeyLSN(c.Rid, k)
	}
	err = errors.Join(it.Err(), it.Close())
	if err != nil || len(dead) == 0 {
		return err
	}
	for _, k := range dead {
		if err := tx.Delete(k); err != nil {
			return err
		}
	}
	// Records sharing the last trimmed LSN may remain; the floor stays at
	// that LSN so they are still found.
	return tx.Set(versionFloorKey(c.Rid, seq), binary.BigEndian.AppendUint64(nil, floor))
}

// versionFloor is the lowest LSN the version log may still hold in
// sequence seq.
func versionFloor(r storage.Reader, rid []byte, seq int) (uint64, error) {
	v, err := r.Get(versionFloorKey(rid, seq))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return seqBase(seq), nil
	case err != nil:
		return 0, err
	case len(v) != 8:
		return 0, errBadFeedRecord
	}
	return binary.BigEndian.Uint64(v), nil
}

// feedRetention is the container's changeFeedPolicy.retentionDuration
// (minutes), or 0 when it sets none.
func (c *containerRecord) feedRetention() time.Duration {
	m := c.Props.Get("changeFeedPolicy").Get("retentionDuration")
	if m.Kind() != document.Number || m.Float() <= 0 {
		return 0
	}
	if f := m.Float(); f < float64(math.MaxInt64/int64(time.Minute)) {
		return time.Duration(f * float64(time.Minute))
	}
	return time.Duration(math.MaxInt64)
}

// versionCutoff is the crts (Unix seconds) below which version records are
// past the container's retention at now: all of them when it sets none,
// which leaves only records kept while it had one.
func (c *containerRecord) versionCutoff(now time.Time) int64 {
	r := c.feedRetention()
	if r == 0 {
		return math.MaxInt64
	}
	return now.Add(-r).Unix()
}

// errPastRetention refuses an all-versions read whose position lies
// before what the container's retention still keeps.
func (c *containerRecord) errPastRetention() *Error {
	return errorf(BadRequest, "The change feed continuation is older than the container's change feed retention (changeFeedPolicy.retentionDuration %v minutes): the intermediate versions and deletes after it are no longer kept. Start again from now.",
		c.Props.Get("changeFeedPolicy").Get("retentionDuration").Float())
}

// epkOf is the effective partition key of stored partition key bytes.
func (c *containerRecord) epkOf(pk []byte) (string, error) {
	k, err := decodeKeyBytes(pk)
	if err != nil {
		return "", err
	}
	return partition.EPK(c.hashDefinition(), k)
}

var errBadKeyBytes = errors.New("corrupt partition key bytes")

// decodeKeyBytes inverts partition.AppendKeyBytes.
func decodeKeyBytes(b []byte) (partition.Key, error) {
	var k partition.Key
	for len(b) > 0 {
		tag := b[0]
		b = b[1:]
		switch tag {
		case 0x10:
			k = append(k, partition.Undefined())
		case 0x20:
			k = append(k, partition.Null())
		case 0x30, 0x31:
			k = append(k, partition.Bool(tag == 0x31))
		case 0x40:
			if len(b) < 8 {
				return nil, errBadKeyBytes
			}
			u := binary.BigEndian.Uint64(b)
			if u>>63 == 1 {
				u &^= 1 << 63
			} else {
				u = ^u
			}
			k = append(k, partition.Number(math.Float64frombits(u)))
			b = b[8:]
		case 0x50:
			var s []byte
			for {
				i := bytes.IndexByte(b, 0)
				if i < 0 || i+1 >= len(b) {
					return nil, errBadKeyBytes
				}
				s = append(s, b[:i]...)
				switch b[i+1] {
				case 0xff:
					s = append(s, 0)
				case 0x01:
				default:
					return nil, errBadKeyBytes
				}
				end := b[i+1] == 0x01
				b = b[i+2:]
				if end {
					break
				}
			}
			k = append(k, partition.String(string(s)))
		default:
			return nil, errBadKeyBytes
		}
	}
	return k, nil
}

// Keys of the two logs.

func latestKey(rid []byte, lsn, seq uint64) []byte {
	k := binary.BigEndian.AppendUint64(collPrefix(famFeedLatest, rid), lsn)
	return binary.BigEndian.AppendUint64(k, seq)
}

func versionKey(rid []byte, lsn uint64, ord uint32) []byte {
	k := binary.BigEndian.AppendUint64(collPrefix(famFeedVersion, rid), lsn)
	return binary.BigEndian.AppendUint32(k, ord)
}

func versionKeyLSN(rid, k []byte) uint64 {
	return binary.BigEndian.Uint64(k[1+len(rid):])
}

// versionFloorKey is the key of sequence seq's low-water mark, keyed as
// its state (stateKey).
func versionFloorKey(rid []byte, seq int) []byte {
	k := collPrefix(famFeedFloor, rid)
	if seq > 0 {
		k = append(k, byte(seq))
	}
	return k
}

// FeedPosition is where a change feed reader stands: for each sequence of
// its scope it has read from, the last LSN it read or caught up to (an LSN
// names its sequence). A sequence it has no LSN for starts at Since (Unix
// seconds) when that is set, at the beginning otherwise. Its text, the
// continuation the transport hands out as an etag, is the LSNs and then
// "t" and Since, comma-separated: a reader of one sequence has just the
// one number, the form a container of one sequence always had.
type FeedPosition struct {
	LSNs  []uint64
	Since int64
}

// at is the reader's LSN in sequence seq of a container of n, if it has
// one. An LSN past the last sequence counts for the last: it is beyond
// that sequence's end, which keeps the reader there rather than start it
// again from the beginning.
func (p FeedPosition) at(seq, n int) (uint64, bool) {
	for _, lsn := range p.LSNs {
		if min(lsnSeq(lsn), n-1) == seq {
			return lsn, true
		}
	}
	return 0, false
}

func (p FeedPosition) String() string {
	var b []byte
	for _, lsn := range p.LSNs {
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, lsn, 10)
	}
	if p.Since != 0 {
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(append(b, 't'), p.Since, 10)
	}
	return string(b)
}

// ParseFeedPosition reads a FeedPosition's text; ok is false when s is not
// one: empty, malformed, or naming a sequence twice.
func ParseFeedPosition(s string) (p FeedPosition, ok bool) {
	if s == "" {
		return p, false
	}
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		if t, isTime := strings.CutPrefix(f, "t"); isTime {
			n, err := strconv.ParseInt(t, 10, 64)
			if err != nil || p.Since != 0 || n == 0 {
				return p, false
			}
			p.Since = n
			continue
		}
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil || seen[lsnSeq(n)] {
			return p, false
		}
		seen[lsnSeq(n)] = true
		p.LSNs = append(p.LSNs, n)
	}
	return p, true
}

var errBadFeedRecord = errors.New("corrupt change feed record")

// A latest-version entry: the version's _ts, then its EPK and partition key
// bytes, so scopes and start times are judged without reading the item,
// then its sequence's high-water time (absent from entries written before
// high-waters were kept).
func encodeLatestEntry(ts, hw int64, epk string, pk []byte) []byte {
	b := make([]byte, 0, 8+2+len(epk)+len(pk)+8)
	b = binary.BigEndian.AppendUint64(b, uint64(ts))
	b = appendBytes(b, []byte(epk))
	b = appendBytes(b, pk)
	return binary.BigEndian.AppendUint64(b, uint64(hw))
}

// decodeLatestEntry parses an entry; hw is 0 in one without a high-water.
func decodeLatestEntry(b []byte) (ts, hw int64, epk, pk []byte, err error) {
	if len(b) < 8 {
		return 0, 0, nil, nil, errBadFeedRecord
	}
	ts = int64(binary.BigEndian.Uint64(b))
	rest := b[8:]
	if epk, rest, err = readBytes(rest); err != nil {
		return 0, 0, nil, nil, err
	}
	if pk, rest, err = readBytes(rest); err != nil {
		return 0, 0, nil, nil, errBadFeedRecord
	}
	switch len(rest) {
	case 0:
	case 8:
		hw = int64(binary.BigEndian.Uint64(rest))
	default:
		return 0, 0, nil, nil, errBadFeedRecord
	}
	return ts, hw, epk, pk, nil
}

func latestTimes(v []byte) (t, hw int64, err error) {
	t, hw, _, _, err = decodeLatestEntry(v)
	return t, hw, err
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func readBytes(b []byte) (s, rest []byte, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return nil, nil, errBadFeedRecord
	}
	return b[w : w+int(n)], b[w+int(n):], nil
}

// versionRecord is one change in the version log: what the all-versions
// mode serves, and the EPK and key bytes its scopes filter on.
type versionRecord struct {
	kind    changeKind
	crts    int64 // Unix seconds
	hw      int64 // the sequence's high-water time; 0 in a record of version 1
	prevLSN uint64
	epk     string
	pk      []byte
	id      string
	cur     []byte // nil for deletes and expiries
	prev    []byte // nil for creates
}

// A version record is its format's version, its kind, crts, the
// high-water time (from version 2 on), the previous image's LSN, then its
// EPK, key bytes, id and images.
const versionRecordVersion = 2

func (v *versionRecord) encode() []byte {
	b := make([]byte, 0, 40+len(v.epk)+len(v.pk)+len(v.id)+len(v.cur)+len(v.prev))
	b = append(b, versionRecordVersion, byte(v.kind))
	b = binary.BigEndian.AppendUint64(b, uint64(v.crts))
	b = binary.BigEndian.AppendUint64(b, uint64(v.hw))
	b = binary.BigEndian.AppendUint64(b, v.prevLSN)
	b = appendBytes(b, []byte(v.epk))
	b = appendBytes(b, v.pk)
	b = appendBytes(b, []byte(v.id))
	b = appendBytes(b, v.cur)
	return appendBytes(b, v.prev)
}

// versionHeader is the length of a record's fixed fields in the format of
// version ver, 0 for a version it does not know.
func versionHeader(ver byte) int {
	switch ver {
	case 1:
		return 18
	case 2:
		return 26
	}
	return 0
}

// versionTimes reads a record's times without decoding the rest.
func versionTimes(b []byte) (crts, hw int64, err error) {
	if len(b) < 2 || len(b) < versionHeader(b[0]) {
		return 0, 0, errBadFeedRecord
	}
	crts = int64(binary.BigEndian.Uint64(b[2:]))
	if b[0] >= 2 {
		hw = int64(binary.BigEndian.Uint64(b[10:]))
	}
	return crts, hw, nil
}

// decodeVersionRecord parses a record; its slices alias b.
func decodeVersionRecord(b []byte) (versionRecord, error) {
	var v versionRecord
	if len(b) < 2 {
		return v, errBadFeedRecord
	}
	head := versionHeader(b[0])
	if head == 0 || len(b) < head {
		return v, errBadFeedRecord
	}
	v.kind = changeKind(b[1])
	if v.kind < changeCreate || v.kind > changeExpire {
		return v, errBadFeedRecord
	}
	v.crts = int64(binary.BigEndian.Uint64(b[2:]))
	if b[0] >= 2 {
		v.hw = int64(binary.BigEndian.Uint64(b[10:]))
	}
	v.prevLSN = binary.BigEndian.Uint64(b[head-8:])
	rest := b[head:]
	var epk, id []byte
	var err error
	for _, f := range []*[]byte{&epk, &v.pk, &id, &v.cur, &v.prev} {
		if *f, rest, err = readBytes(rest); err != nil {
			return v, err
		}
	}
	if len(rest) != 0 {
		return v, errBadFeedRecord
	}
	v.epk, v.id = string(epk), string(id)
	if len(v.cur) == 0 {
		v.cur = nil
	}
	if len(v.prev) == 0 {
		v.prev = nil
	}
	return v, nil
}

// ChangeFeedMode is what a change feed request reads.
type ChangeFeedMode uint8

// The change feed modes.
const (
	// LatestVersion (A-IM: Incremental Feed): each changed item once, in
	// its latest version; deletes and expiries do not appear.
	LatestVersion ChangeFeedMode = iota
	// AllVersionsAndDeletes (A-IM: Full-Fidelity Feed): every create,
	// replace and delete, expiries as deletes with timeToLiveExpired.
	AllVersionsAndDeletes
)

// ChangeFeedStart is where a change feed read begins.
type ChangeFeedStart uint8

// The start points.
const (
	StartBeginning ChangeFeedStart = iota // no If-None-Match
	StartNow                              // If-None-Match: *
	StartAfter                            // If-None-Match: an LSN from a previous page
	StartTime                             // If-Modified-Since
)

// ChangeFeedParams asks for one page of a container's change feed.
type ChangeFeedParams struct {
	// ItemRef scopes the feed to a logical partition, or to a prefix of a
	// hierarchical key, when HasKey is set.
	ItemRef
	Mode  ChangeFeedMode
	Start ChangeFeedStart
	After FeedPosition // StartAfter: where a previous page left off
	Since time.Time    // StartTime: changes made at or after it
	// RangeID is x-ms-documentdb-partitionkeyrangeid: one partition key
	// range, "" for all of them.
	RangeID string
	// MinEPK and MaxEPK (x-ms-start-epk, x-ms-end-epk) scope the feed to
	// effective partition keys in [MinEPK, MaxEPK) when either is set.
	MinEPK, MaxEPK string
	MaxItemCount   int
}

// ChangeFeedPage is one page of a change feed. No items means nothing new:
// the transport answers 304.
type ChangeFeedPage struct {
	Items [][]byte
	// Position is the continuation: in each sequence of the scope, the
	// LSN of the last change the page holds or the point the reader has
	// caught up to.
	Position FeedPosition
	// CurrentLSN is the last LSN of the scope's first sequence when the
	// page was read.
	CurrentLSN uint64
	CollRid    string
	Charge     float64
	// Examined is how many log entries the page looked at: its cost.
	Examined int
}

// ChangeFeed returns one page of a container's change feed. It reads the
// sequences of its scope in order (sequence.go), each from where the
// reader stands in it, until the page is full.
func (e *Engine) ChangeFeed(ctx context.Context, p ChangeFeedParams) (*ChangeFeedPage, error) {
	now, done, err := e.judging(ctx, p.DB, p.Coll)
	if err != nil {
		return nil, err
	}
	defer done()
	page := &ChangeFeedPage{}
	var coll *containerRecord
	size := 0
	err = e.store.View(ctx, func(r storage.Reader) error {
		c, err := e.loadContainer(r, p.DB, p.Coll)
		if err != nil {
			return err
		}
		coll = c
		page.CollRid = c.ridString()
		seqs, inRange, derr := e.feedScope(c, &p)
		if derr != nil {
			return derr
		}
		match, derr := c.keyFilter(p.ItemRef)
		if derr != nil {
			return derr
		}
		s := &feedScan{r: r, c: c, now: now, p: &p, match: match, inRange: inRange, limit: pageSize(p.MaxItemCount)}
		// One logical partition's latest versions can be read from its
		// own items rather than from its sequence's log (latestOf).
		var part *itemScope
		var partItems int64
		if p.Mode == LatestVersion && p.HasKey && len(c.pk.paths) > 0 && len(p.PartitionKey) == len(c.pk.paths) {
			if part, derr = e.scopeFor(c, p.PartitionKey, true, ""); derr != nil {
				return derr
			}
			if partItems, err = readCount(r, partitionCountKey(c.Rid, part.epk)); err != nil {
				return err
			}
		}
		if p.Start == StartTime {
			s.since, s.hasSince = p.Since.Unix(), true
		}
		var pos FeedPosition
		full := false
		for i, seq := range seqs {
			cur, err := e.currentLSN(r, c, seq)
			if err != nil {
				return err
			}
			if i == 0 {
				page.CurrentLSN = cur
			}
			at, started := p.After.at(seq, c.sequences())
			switch {
			case p.Start == StartNow:
				pos.LSNs = append(pos.LSNs, cur)
				continue
			case full:
				// Not reached: the reader stands where it stood.
				if started {
					pos.LSNs = append(pos.LSNs, at)
				}
				continue
			}
			s.hasSince = p.Start == StartTime || (p.Start == StartAfter && !started && p.After.Since != 0)
			if s.hasSince && p.Start == StartAfter {
				s.since = p.After.Since
			}
			s.from, s.upto = seqBase(seq)+1, seqBase(seq+1)
			if started {
				if at >= cur {
					// At or beyond the sequence's last change: nothing
					// after it yet. The position is kept as it is, as
					// the service keeps one it handed out.
					pos.LSNs = append(pos.LSNs, at)
					continue
				}
				s.from = at + 1
			}
			n := len(s.items)
			switch {
			case p.Mode == AllVersionsAndDeletes:
				full, err = s.versions(seq, started)
			case part != nil && part.kind == plan.ScopePartition && uint64(partItems) < cur-s.from+1:
				full, err = s.latestOf(part)
			default:
				full, err = s.latest()
			}
			if err != nil {
				return err
			}
			switch {
			case full && len(s.items) > n:
				pos.LSNs = append(pos.LSNs, s.last)
			case full && started:
				pos.LSNs = append(pos.LSNs, at)
			case !full:
				// Everything up to the sequence's last LSN was looked
				// at; what of it is for this reader is in the page.
				pos.LSNs = append(pos.LSNs, max(cur, at))
			}
		}
		if full && p.Start != StartNow {
			// Sequences not reached yet start where the read began.
			switch {
			case p.Start == StartTime:
				pos.Since = s.since
			case p.Start == StartAfter:
				pos.Since = p.After.Since
			}
		}
		page.Position = pos
		page.Items, page.Examined, size = s.items, s.examined, s.size
		return nil
	})
	if err != nil {
		return nil, err
	}
	page.Charge = queryCharge(page.Examined, 0, size)
	e.charge(coll, page.Charge)
	return page, nil
}

// feedScope decides the sequences a change feed request reads, in order,
// and the test of the EPKs it serves: those of its partition key range,
// EPK span and logical partition.
func (e *Engine) feedScope(c *containerRecord, p *ChangeFeedParams) ([]int, func(epk []byte) bool, *Error) {
	pkRange, whole, derr := e.lookupRange(c, p.RangeID)
	if derr != nil {
		return nil, nil, derr
	}
	inEPKs := epkFilter(p.MinEPK, p.MaxEPK)
	inRange := func(epk []byte) bool {
		return (whole || pkRange.Contains(string(epk))) && (inEPKs == nil || inEPKs(epk))
	}
	if prefix := len(p.PartitionKey) > 0 && len(p.PartitionKey) < len(c.pk.paths); p.HasKey && !prefix {
		// One logical partition: the sequence of its range.
		return []int{c.seqOfRef(p.ItemRef)}, inRange, nil
	}
	lo, hi := strings.ToUpper(p.MinEPK), strings.ToUpper(p.MaxEPK)
	if hi == "" {
		hi = partition.MaxEPK
	}
	seqs := c.seqsIn(func(min, max string) bool {
		return (whole || min < pkRange.Max && pkRange.Min < max) && min < hi && lo < max
	})
	return seqs, inRange, nil
}

// epkFilter scopes by effective partition key; EPKs are upper-case hex, so
// their order is the order of strings.
func epkFilter(lo, hi string) func(epk []byte) bool {
	if lo == "" && hi == "" {
		return nil
	}
	lo, hi = strings.ToUpper(lo), strings.ToUpper(hi)
	if hi == "" {
		hi = partition.MaxEPK
	}
	return func(epk []byte) bool {
		s := string(epk)
		return s >= lo && s < hi
	}
}

// feedScan builds one page from one of the two logs.
type feedScan struct {
	r       storage.Reader
	c       *containerRecord
	now     time.Time
	p       *ChangeFeedParams
	match   func(pk []byte) bool
	inRange func(epk []byte) bool
	limit   int

	from     uint64 // first LSN to read
	upto     uint64 // the LSN past the last to read: the sequence's end
	since    int64  // with hasSince, the earliest time to serve
	hasSince bool

	items    [][]byte
	size     int
	last     uint64 // LSN of the last item
	examined int
	// filled: a change was left for the next page, which it would have
	// taken past maxPageBytes (add).
	filled bool
}

// admit reports whether a change at lsn may still join the page: a full
// page still takes the rest of its last LSN, so no LSN is ever split.
func (s *feedScan) admit(lsn uint64) bool {
	full := s.filled || len(s.items) >= s.limit || s.size >= maxPageBytes
	return !full || lsn == s.last
}

// add puts the change at lsn on the page, unless it is the first of its
// LSN and would take the page past maxPageBytes, as the service bounds a
// response (a change larger than that comes alone); it then reports false
// and the page is full.
func (s *feedScan) add(lsn uint64, item []byte) bool {
	if len(s.items) > 0 && lsn != s.last && s.size+len(item) > maxPageBytes {
		s.filled = true
		return false
	}
	s.items = append(s.items, item)
	s.size += len(item)
	s.last = lsn
	return true
}

func (s *feedScan) scoped(epk, pk []byte) bool {
	return s.match(pk) && s.inRange(epk)
}

// walk visits a log's entries of one sequence, from s.from to s.upto,
// after seeking past older ones when the read starts from a time, and
// reports whether it stopped because the page is full.
func (s *feedScan) walk(fam byte, lower uint64, timesOf func(v []byte) (t, hw int64, err error), fn func(lsn uint64, k, v []byte) (bool, error)) (full bool, err error) {
	prefix := collPrefix(fam, s.c.Rid)
	from := max(s.from, lower)
	if s.hasSince {
		lsn, err := seekTime(s.r, prefix, from, s.upto, func(v []byte) (bool, error) {
			t, hw, err := timesOf(v)
			return reaches(t, hw, s.since), err
		})
		if err != nil {
			return false, err
		}
		from = max(from, lsn)
	}
	if from >= s.upto {
		return false, nil
	}
	it, err := s.r.NewIter(storage.IterParams{
		Lower: binary.BigEndian.AppendUint64(bytes.Clone(prefix), from),
		Upper: binary.BigEndian.AppendUint64(bytes.Clone(prefix), s.upto),
	})
	if err != nil {
		return false, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) < len(prefix)+8 {
			return false, errBadFeedRecord
		}
		s.examined++
		lsn := binary.BigEndian.Uint64(k[len(prefix):])
		if !s.admit(lsn) {
			return true, nil
		}
		more, err := fn(lsn, k, it.Value())
		if err != nil || !more {
			return false, err
		}
	}
	return false, it.Err()
}

// reaches reports whether a log entry of time t and high-water hw (0 when
// it has none) may be where changes at or after since begin: its
// high-water reaches since, or, in an entry without one, its own time is
// within timeSlack of it.
func reaches(t, hw, since int64) bool {
	if hw != 0 {
		return hw >= since
	}
	return t >= since-int64(timeSlack/time.Second)
}

// seekTime finds, by bisecting LSNs, the first LSN from which entries
// have reached a time (reached), which holds for every entry after the
// first that it holds for (high-water times are in LSN order). Entries
// are sparse: each probe looks at the first entry at or after an LSN.
func seekTime(r storage.Reader, prefix []byte, lo, upto uint64, reached func(v []byte) (bool, error)) (uint64, error) {
	it, err := r.NewIter(storage.IterParams{Lower: binary.BigEndian.AppendUint64(bytes.Clone(prefix), lo), Upper: binary.BigEndian.AppendUint64(bytes.Clone(prefix), upto)})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	// at reports whether the first entry at or after lsn has reached the
	// time (true when there is none), and that entry's LSN.
	at := func(lsn uint64) (bool, uint64, error) {
		if !it.SeekGE(binary.BigEndian.AppendUint64(bytes.Clone(prefix), lsn)) {
			return true, upto, it.Err()
		}
		ok, err := reached(it.Value())
		if err != nil {
			return false, 0, err
		}
		return ok, binary.BigEndian.Uint64(it.Key()[len(prefix):]), nil
	}
	ok, first, err := at(lo)
	if err != nil || ok {
		return lo, err
	}
	// Invariant: the entry at or after lo is early; the one at or after
	// hi is not (or there is none).
	lo, hi := first, upto
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, found, err := at(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			hi = mid
		} else {
			lo = found // mid <= found < hi, and its entry is early
		}
	}
	return hi, nil
}

// feedChange is a change a page is to read the record of: its LSN and
// the item's location.
type feedChange struct {
	lsn uint64
	loc []byte
}

// room is how many more changes the page takes before it is full (at
// least one: a full page still takes the rest of its last LSN).
func (s *feedScan) room() int { return max(s.limit-len(s.items), 1) }

// read adds the changes to the page, in their order, until it is full,
// and reports whether it filled. Their records lie wherever their
// partitions put them, so they are read first, in key order, in one run
// (readAhead: one round trip over PostgreSQL).
func (s *feedScan) read(changes []feedChange) (full bool, err error) {
	if len(changes) > 0 && !s.admit(changes[0].lsn) {
		return true, nil
	}
	var ra readAhead
	if len(changes) > 1 {
		locs := make([][]byte, len(changes))
		for i, ch := range changes {
			locs[i] = ch.loc
		}
		if err := ra.fetch(s.r, s.c, locs, &readStats{}); err != nil {
			return false, err
		}
	}
	for _, ch := range changes {
		if !s.admit(ch.lsn) {
			return true, nil
		}
		rec, ok, err := ra.read(s.r, s.c, ch.loc, &readStats{})
		if err != nil {
			return false, err
		}
		if !ok {
			return false, fmt.Errorf("change feed: entry at LSN %d points at missing item %x", ch.lsn, ch.loc)
		}
		if rec.lsn != ch.lsn {
			return false, fmt.Errorf("change feed: entry at LSN %d points at item %q of LSN %d", ch.lsn, rec.id, rec.lsn)
		}
		if s.c.expired(&rec, s.now) {
			continue // ttl.md A3: expired items appear nowhere
		}
		if !s.add(ch.lsn, withLSN(nil, rec.json, ch.lsn)) {
			return true, nil
		}
	}
	return false, nil
}

// latest fills the page from the latest-version index. The entries the
// page may still take are collected a run at a time (room), then their
// records read together.
func (s *feedScan) latest() (bool, error) {
	var run []feedChange
	stopped := false
	full, err := s.walk(famFeedLatest, 0, latestTimes, func(lsn uint64, k, v []byte) (bool, error) {
		ts, _, epk, pk, err := decodeLatestEntry(v)
		if err != nil {
			return false, err
		}
		if (s.hasSince && ts < s.since) || !s.scoped(epk, pk) {
			return true, nil
		}
		seq := binary.BigEndian.Uint64(k[len(k)-8:])
		if run = append(run, feedChange{lsn, itemLoc(string(epk), seq)}); len(run) < s.room() {
			return true, nil
		}
		stopped, err = s.read(run)
		run = run[:0]
		return !stopped && err == nil, err
	})
	if err != nil || stopped || full {
		return stopped || full, err
	}
	return s.read(run)
}

// latestOf fills the page as latest does, for one logical partition, from
// the partition's own items: those changed in [s.from, s.upto), in LSN
// order. The sequence's log holds the changes of every partition of its
// range, so walking it for one partition read the whole range's changes
// since the position (a partition of 100 items in a container of 10⁵
// read all 10⁵ entries to drain); ChangeFeed reads the partition instead
// when it holds fewer items than the log has LSNs to walk.
func (s *feedScan) latestOf(part *itemScope) (bool, error) {
	var changes []feedChange
	var st readStats
	err := scanItems(s.r, s.c, part, nil, &st, func(loc []byte, rec *itemRecord) (bool, error) {
		if rec.lsn < s.from || rec.lsn >= s.upto || (s.hasSince && rec.ts < s.since) || !s.scoped([]byte(rec.epk), rec.pk) {
			return true, nil
		}
		if s.c.expired(rec, s.now) {
			return true, nil // ttl.md A3: expired items appear nowhere
		}
		changes = append(changes, feedChange{rec.lsn, bytes.Clone(loc)})
		return true, nil
	})
	s.examined += st.records
	if err != nil {
		return false, err
	}
	slices.SortFunc(changes, func(a, b feedChange) int { return cmp.Compare(a.lsn, b.lsn) })
	for len(changes) > 0 {
		run := changes[:min(len(changes), s.room())]
		changes = changes[len(run):]
		if !s.admit(run[0].lsn) {
			return true, nil
		}
		// Each record read counts.
		s.examined += len(run)
		if full, err := s.read(run); err != nil || full {
			return full, err
		}
	}
	return false, nil
}

// versions fills the page from the version log of sequence seq. A
// reader resuming from a position whose next change is past retention
// (trimmed, or kept but hidden) has missed changes the log no longer
// shows, and is refused, as the service refuses it ("an error (Status
// Code 400) will be returned because the events for intermediary updates
// and deletes have vanished").
func (s *feedScan) versions(seq int, resumed bool) (bool, error) {
	floor, err := versionFloor(s.r, s.c.Rid, seq)
	if err != nil {
		return false, err
	}
	// The floor is the last LSN trimmed: past the reader's position, the
	// change after it is gone.
	if resumed && floor >= s.from {
		return false, s.c.errPastRetention()
	}
	cutoff := s.c.versionCutoff(s.now)
	next := resumed
	full, err := s.walk(famFeedVersion, floor, versionTimes, func(lsn uint64, _, v []byte) (bool, error) {
		rec, err := decodeVersionRecord(v)
		if err != nil {
			return false, err
		}
		in := s.scoped([]byte(rec.epk), rec.pk)
		if next && in && rec.crts < cutoff {
			return false, s.c.errPastRetention()
		}
		next = next && !in // the reader's next change is its scope's
		if rec.crts < cutoff || (s.hasSince && rec.crts < s.since) || !in {
			return true, nil
		}
		out, err := s.c.renderVersion(lsn, &rec)
		if err != nil {
			return false, err
		}
		return s.add(lsn, out), nil
	})
	return full || s.filled, err
}

// withLSN appends item (a JSON object) to dst with "_lsn" added.
func withLSN(dst, item []byte, lsn uint64) []byte {
	dst = append(dst, item[:len(item)-1]...)
	if len(item) > 2 {
		dst = append(dst, ',')
	}
	dst = append(dst, `"_lsn":`...)
	dst = strconv.AppendUint(dst, lsn, 10)
	return append(dst, '}')
}

var operationTypes = [...]string{changeCreate: "create", changeReplace: "replace", changeDelete: "delete", changeExpire: "delete"}

// renderVersion writes a record in the service's all-versions wire format
// (2021-09-15): current and previous images and the metadata.
func (c *containerRecord) renderVersion(lsn uint64, v *versionRecord) ([]byte, error) {
	b := []byte{'{'}
	if v.cur != nil {
		b = append(b, `"current":`...)
		b = withLSN(b, v.cur, lsn)
		b = append(b, ',')
	}
	if v.prev != nil {
		b = append(b, `"previous":`...)
		b = withLSN(b, v.prev, v.prevLSN)
		b = append(b, ',')
	}
	b = append(b, `"metadata":{"operationType":"`...)
	b = append(b, operationTypes[v.kind]...)
	b = append(b, `","lsn":`...)
	b = strconv.AppendUint(b, lsn, 10)
	b = append(b, `,"crts":`...)
	b = strconv.AppendInt(b, v.crts, 10)
	if v.prevLSN != 0 {
		b = append(b, `,"previousImageLSN":`...)
		b = strconv.AppendUint(b, v.prevLSN, 10)
	}
	b = append(b, `,"timeToLiveExpired":`...)
	b = strconv.AppendBool(b, v.kind == changeExpire)
	if v.kind == changeDelete || v.kind == changeExpire {
		b = append(b, `,"id":`...)
		b = document.AppendString(b, v.id)
		key, err := decodeKeyBytes(v.pk)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"partitionKey":`...)
		b = c.appendKeyObject(b, key)
	}
	return append(b, "}}"...), nil
}

// appendKeyObject writes a partition key as the service's metadata does:
// {"<path>": value} for each path, undefined components left out.
func (c *containerRecord) appendKeyObject(b []byte, key partition.Key) []byte {
	b = append(b, '{')
	n := 0
	for i, comp := range key {
		if i >= len(c.pk.paths) || comp.Kind == partition.KindUndefined {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = document.AppendString(b, strings.Join(c.pk.paths[i], "/"))
		b = append(b, ':')
		b = componentValue(comp).AppendJSON(b)
	}
	return append(b, '}')
}

// componentValue is a partition key component as a JSON value.
func componentValue(comp partition.Component) document.Value {
	switch comp.Kind {
	case partition.KindNull:
		return document.NullValue()
	case partition.KindBool:
		return document.BoolValue(comp.Bool)
	case partition.KindNumber:
		return document.Float(comp.Num)
	case partition.KindString:
		return document.Str(comp.Str)
	}
	return document.Undef
}
