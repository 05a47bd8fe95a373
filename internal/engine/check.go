package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/vector"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// IndexCounts is what CheckIndexes found in one container.
type IndexCounts struct {
	// Items is the number of item records on disk, expired or not.
	Items int
	// Expired is how many of them are expired at the instant of the
	// check: invisible, waiting for the purger.
	Expired int
	// DueEntries and InheritEntries count the entries of the two expiry
	// indexes (own ttl, keyed by due second; inherited, keyed by _ts).
	DueEntries     int
	InheritEntries int
	// Images counts the record images kept next to expiry entries.
	Images int
	// IndexEntries counts the entries of the range index's current
	// version, composite entries included; OrderEntries the absence, tie
	// and partition entries of the paths ORDER BY queries listed
	// (absent.go), which come and go with those queries.
	IndexEntries int
	OrderEntries int
}

// orderEntry reports whether the index key whose bytes after the index
// version are rest is an absence, tie or partition entry.
func orderEntry(rest []byte) bool {
	return slices.ContainsFunc(orderMarkers, func(m []byte) bool { return bytes.HasPrefix(rest, m) })
}

// maxProblems bounds the report of a damaged store.
const maxProblems = 20

// CheckIndexes verifies, in one snapshot, that every container's indexes
// match its items exactly:
//
//   - every item record decodes, and its stored _ts and ttl classification
//     are those of its JSON body;
//   - every item has its id-index entry, pointing at it, and every id-index
//     entry points at an item with that partition key and id;
//   - every item has exactly the expiry-index entry ttl.EntryFor gives it
//     (none for ttl -1), and every expiry-index entry is some item's entry;
//   - every record image is a byte-for-byte copy of the record of an item
//     with that expiry entry, and an item written while TTL has been on
//     has one (items written before the engine kept images lack them, and
//     are reported, though the purge reads their records instead);
//   - the change feed's latest-version index has exactly one entry per
//     item, at the LSN of its version, and its entries' high-water times
//     are in LSN order within each sequence, none before its entry's time;
//   - every entry of the range index's current version belongs to an
//     existing item and is one of its entries, and, once that index is
//     complete, every item has all of its entries;
//   - every unique-key entry belongs to an existing item, and every live
//     item owns its unique-key entries (an expired one may have lost them
//     to a newer item, ttl.md A3);
//   - no item version is newer than the container's last LSN.
//
// It changes nothing and reads the whole store, so it is for tests and
// tools (a data directory opened offline after a crash), not for serving.
// The result is keyed by container link, "dbs/{db}/colls/{coll}".
func (e *Engine) CheckIndexes(ctx context.Context) (map[string]IndexCounts, error) {
	now, done, err := e.judgingEvery(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	out := map[string]IndexCounts{}
	var problems []string
	report := func(format string, args ...any) {
		if len(problems) < maxProblems {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	err = e.store.View(ctx, func(r storage.Reader) error {
		var colls []*containerRecord
		if err := scanPrefix(r, []byte{famContainer}, func(_, v []byte) (bool, error) {
			c, err := decodeContainer(v)
			if err != nil {
				return false, err
			}
			colls = append(colls, c)
			return true, nil
		}); err != nil {
			return err
		}
		for _, c := range colls {
			counts, err := e.checkContainer(r, c, now, func(format string, args ...any) {
				report("%s: "+format, append([]any{c.link()}, args...)...)
			})
			if err != nil {
				return fmt.Errorf("check %s: %w", c.link(), err)
			}
			out[c.link()] = counts
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return out, fmt.Errorf("engine: indexes do not match the items:\n%s", strings.Join(problems, "\n"))
	}
	return out, nil
}

func (e *Engine) checkContainer(r storage.Reader, c *containerRecord, now time.Time, report func(string, ...any)) (IndexCounts, error) {
	var counts IndexCounts
	lastLSN := make([]uint64, c.sequences())
	for i := range lastLSN {
		var err error
		if lastLSN[i], err = e.currentLSN(r, c, i); err != nil {
			return counts, err
		}
	}
	items := map[uint64]*itemRecord{}
	raws := map[uint64][]byte{}
	live := map[uint64]bool{}
	var totalBytes int64
	perEPK := map[string]int64{}
	keysOfEPK := map[string][][]byte{} // the partition keys of each EPK's items
	err := scanPrefix(r, collPrefix(famItem, c.Rid), func(k, v []byte) (bool, error) {
		if len(k) < 1+len(c.Rid)+10 {
			report("item key %x is too short", k)
			return true, nil
		}
		loc := k[1+len(c.Rid):]
		seq := locSeq(loc)
		rec, err := decodeItemRecord(bytes.Clone(v))
		if err != nil {
			report("item %d: %v", seq, err)
			return true, nil
		}
		if want := itemLoc(rec.epk, seq); !bytes.Equal(loc, want) {
			report("item %q (seq %d) is stored at %x, not at its location %x", rec.id, seq, loc, want)
		}
		totalBytes += int64(len(rec.json))
		perEPK[rec.epk]++
		if keys := keysOfEPK[rec.epk]; !slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Equal(k, rec.pk) }) {
			keysOfEPK[rec.epk] = append(keys, bytes.Clone(rec.pk))
		}
		counts.Items++
		items[seq] = &rec
		raws[seq] = bytes.Clone(v)
		if c.expired(&rec, now) {
			counts.Expired++
		} else {
			live[seq] = true
		}
		if want := c.seqOf(rec.epk); lsnSeq(rec.lsn) != want || lsnSeq(seq) != want {
			report("item %q (seq %d) has LSN %d, not of its range's sequence %d", rec.id, seq, rec.lsn, want)
		} else if last := lastLSN[want]; rec.lsn > last || seq > last {
			report("item %q (seq %d) has LSN %d beyond its sequence's last LSN %d", rec.id, seq, rec.lsn, last)
		}
		body, err := document.Parse(rec.json)
		if err != nil {
			report("item %q: stored JSON does not parse: %v", rec.id, err)
			return true, nil
		}
		if ts := body.Get("_ts"); !ts.IsInt() || ts.Int() != rec.ts {
			report("item %q: record _ts %d, body _ts %s", rec.id, rec.ts, ts.String())
		}
		if id := body.Get("id"); id.Kind() != document.String || id.Str() != rec.id {
			report("item %q: body id %s", rec.id, id.String())
		}
		if got, want := rec.itemTTL(), ttl.Classify(body.Get("ttl")); got != want {
			report("item %q: record ttl %v, body ttl %s (%v)", rec.id, got, body.Get("ttl").String(), want)
		}
		return true, nil
	})
	if err != nil {
		return counts, err
	}

	// The usage counters: what the items add up to.
	state, err := readTotals(r, c, 0)
	if err != nil {
		return counts, err
	}
	n, size := state.items, state.bytes
	if n != int64(len(items)) || size != totalBytes {
		report("usage counter says %d items of %d bytes; the container holds %d of %d", n, size, len(items), totalBytes)
	}
	for epk, want := range perEPK {
		v, err := r.Get(partitionCountKey(c.Rid, epk))
		if errors.Is(err, storage.ErrNotFound) {
			v, err = nil, nil
		}
		if err != nil {
			return counts, err
		}
		if got := decodeCount(v); got != want {
			report("partition count of EPK %q says %d; the partition holds %d", epk, got, want)
		}
		if owner, ok := partitionOwner(v); ok && (len(keysOfEPK[epk]) != 1 || !bytes.Equal(keysOfEPK[epk][0], owner)) {
			report("partition count of EPK %q counts key %x alone; the partition holds keys %x", epk, owner, keysOfEPK[epk])
		}
	}

	// The _rid-order entries: one per item, holding its location.
	byRid := 0
	err = scanPrefix(r, collPrefix(famByRid, c.Rid), func(k, v []byte) (bool, error) {
		byRid++
		seq := binary.BigEndian.Uint64(k[len(k)-8:])
		if rec, ok := items[seq]; !ok {
			report("_rid entry %x is dangling: no item %d", k, seq)
		} else if !bytes.Equal(v, itemLoc(rec.epk, seq)) {
			report("_rid entry %x holds %x, not the location of item %q", k, v, rec.id)
		}
		return true, nil
	})
	if err != nil {
		return counts, err
	}
	if byRid != len(items) {
		report("%d _rid entries for %d items", byRid, len(items))
	}

	// The id index: one entry per item, pointing at it.
	byID := map[uint64]bool{}
	err = scanPrefix(r, collPrefix(famItemKey, c.Rid), func(k, v []byte) (bool, error) {
		seq := locSeq(v)
		rec, ok := items[seq]
		switch {
		case !ok:
			report("id entry %x points at missing item %d", k, seq)
		case !bytes.Equal(v, itemLoc(rec.epk, seq)):
			report("id entry %x holds %x, not the location of item %q", k, v, rec.id)
		case !bytes.Equal(k, itemIDKey(c.Rid, rec.pk, rec.id)):
			report("id entry %x points at item %q (seq %d) of another key", k, rec.id, seq)
		case byID[seq]:
			report("item %q (seq %d) has two id entries", rec.id, seq)
		}
		byID[seq] = true
		return true, nil
	})
	if err != nil {
		return counts, err
	}

	// The expiry indexes: exactly the entry EntryFor gives each item.
	byExpiry := map[uint64]bool{}
	for _, fam := range []byte{famOwnDue, famByTs} {
		prefix := collPrefix(fam, c.Rid)
		err = scanPrefix(r, prefix, func(k, v []byte) (bool, error) {
			if len(k) != len(prefix)+16 {
				report("expiry entry %x has the wrong length", k)
				return true, nil
			}
			if rec, ok := items[binary.BigEndian.Uint64(k[len(prefix)+8:])]; ok {
				if want := expiryValue(rec, itemLoc(rec.epk, binary.BigEndian.Uint64(k[len(prefix)+8:]))); !bytes.Equal(v, want) {
					report("expiry entry %x holds %x, not %x", k, v, want)
				}
			}
			if fam == famOwnDue {
				counts.DueEntries++
			} else {
				counts.InheritEntries++
			}
			seq := binary.BigEndian.Uint64(k[len(prefix)+8:])
			rec, ok := items[seq]
			switch {
			case !ok:
				report("expiry entry %x is dangling: no item %d", k, seq)
			case !bytes.Equal(k, expiryKey(c, rec, seq)):
				report("expiry entry %x does not match item %q (seq %d, _ts %d, ttl %v)", k, rec.id, seq, rec.ts, rec.itemTTL())
			case byExpiry[seq]:
				report("item %q (seq %d) has two expiry entries", rec.id, seq)
			}
			byExpiry[seq] = true
			return true, nil
		})
		if err != nil {
			return counts, err
		}
	}
	if err := checkImages(r, c, items, raws, report, &counts); err != nil {
		return counts, err
	}
	for seq, rec := range items {
		if !byID[seq] {
			report("item %q (seq %d) has no id entry", rec.id, seq)
		}
		if want := expiryKey(c, rec, seq) != nil; want != byExpiry[seq] {
			report("item %q (seq %d, ttl %v): expiry entry present %v, want %v", rec.id, seq, rec.itemTTL(), byExpiry[seq], want)
		}
	}

	// The change feed's latest-version index: exactly one entry per item,
	// at the LSN of its version, describing it, with high-water times in
	// LSN order within each sequence, none before its entry's own time.
	byLatest := map[uint64]bool{}
	lastHW := map[int]int64{}
	prefix := collPrefix(famFeedLatest, c.Rid)
	err = scanPrefix(r, prefix, func(k, v []byte) (bool, error) {
		if len(k) != len(prefix)+16 {
			report("latest-version entry %x has the wrong length", k)
			return true, nil
		}
		lsn, seq := binary.BigEndian.Uint64(k[len(prefix):]), binary.BigEndian.Uint64(k[len(prefix)+8:])
		rec, ok := items[seq]
		switch {
		case !ok:
			report("latest-version entry %x is dangling: no item %d", k, seq)
			return true, nil
		case lsn != rec.lsn:
			report("latest-version entry of item %q (seq %d) at LSN %d, its version is LSN %d", rec.id, seq, lsn, rec.lsn)
		case byLatest[seq]:
			report("item %q (seq %d) has two latest-version entries", rec.id, seq)
		}
		byLatest[seq] = true
		ts, hw, epk, pk, err := decodeLatestEntry(v)
		if err != nil {
			report("latest-version entry of item %q: %v", rec.id, err)
			return true, nil
		}
		if hw != 0 {
			if hw < ts || hw < lastHW[lsnSeq(lsn)] {
				report("latest-version entry of item %q at LSN %d has high-water %d, below its _ts %d or the %d of an earlier entry", rec.id, lsn, hw, ts, lastHW[lsnSeq(lsn)])
			}
			lastHW[lsnSeq(lsn)] = hw
		}
		want, err := c.epkOf(rec.pk)
		if err != nil {
			return false, err
		}
		if ts != rec.ts || string(epk) != want || !bytes.Equal(pk, rec.pk) {
			report("latest-version entry of item %q (seq %d) says _ts %d, key %x, EPK %s; the item has %d, %x, %s", rec.id, seq, ts, pk, epk, rec.ts, rec.pk, want)
		}
		return true, nil
	})
	if err != nil {
		return counts, err
	}
	for seq, rec := range items {
		if !byLatest[seq] {
			report("item %q (seq %d) has no latest-version entry", rec.id, seq)
		}
	}

	// The range index of the current version: entries belong to existing
	// items and are theirs; once the index is complete, every item has all
	// of its entries. (Entries of older versions are dropped in the
	// background and not checked.)
	indexed := map[uint64][][]byte{}
	entriesOf := func(seq uint64) [][]byte {
		if es, ok := indexed[seq]; ok {
			return es
		}
		body, err := document.Parse(items[seq].json)
		if err != nil {
			return nil // reported above
		}
		es := indexEntries(c, body, itemLoc(items[seq].epk, seq))
		indexed[seq] = es
		return es
	}
	found := map[string]bool{}
	if prefix := indexPrefix(c); !c.index.none {
		err = scanPrefix(r, prefix, func(k, _ []byte) (bool, error) {
			if orderEntry(k[len(prefix):]) {
				counts.OrderEntries++
			} else {
				counts.IndexEntries++
			}
			if len(k) < len(prefix)+10 {
				report("range index entry %x is too short", k)
				return true, nil
			}
			seq := locSeq(k)
			if _, ok := items[seq]; !ok {
				report("range index entry %x is dangling: no item %d", k, seq)
				return true, nil
			}
			if !slices.ContainsFunc(entriesOf(seq), func(e []byte) bool { return bytes.Equal(e, k) }) {
				report("range index entry %x is not one of item %q (seq %d)", k, items[seq].id, seq)
			}
			found[string(k)] = true
			return true, nil
		})
		if err != nil {
			return counts, err
		}
		if c.Index.Ready {
			for seq, rec := range items {
				for _, k := range entriesOf(seq) {
					if !found[string(k)] && !c.absentPending(k) {
						report("item %q (seq %d) lacks its range index entry %x", rec.id, seq, k)
					}
				}
			}
		}
	}

	// Unique keys: entries belong to existing items; live items own theirs.
	if len(c.uniqueKeys) > 0 {
		owned := map[string]uint64{}
		err = scanPrefix(r, collPrefix(famUnique, c.Rid), func(k, v []byte) (bool, error) {
			seq := locSeq(v)
			if rec, ok := items[seq]; !ok {
				report("unique entry %x points at missing item %d", k, seq)
			} else if !bytes.Equal(v, itemLoc(rec.epk, seq)) {
				report("unique entry %x holds %x, not the location of item %q", k, v, rec.id)
			}
			owned[string(k)] = seq
			return true, nil
		})
		if err != nil {
			return counts, err
		}
		for seq := range live {
			rec := items[seq]
			body, err := document.Parse(rec.json)
			if err != nil {
				continue // reported above
			}
			for _, k := range uniqueKeys(c, body, rec.pk) {
				if got, ok := owned[string(k)]; !ok || got != seq {
					report("live item %q (seq %d) does not own its unique entry %x", rec.id, seq, k)
				}
			}
		}
	}

	// The items' bodies, parsed once for the stored vectors and words
	// (one that does not parse is reported above).
	bodies := map[uint64]document.Value{}
	bodyOf := func(seq uint64, rec *itemRecord) (document.Value, bool) {
		if b, ok := bodies[seq]; ok {
			return b, b.IsDefined()
		}
		b, err := document.Parse(rec.json)
		if err != nil {
			b = document.Undef
		}
		bodies[seq] = b
		return b, err == nil
	}
	// entryItem is the item an entry (of kind, at key k) names by its
	// location, and its body; a dangling entry is reported.
	entryItem := func(kind string, k, loc []byte) (*itemRecord, document.Value, bool) {
		seq := locSeq(loc)
		rec, ok := items[seq]
		if !ok || !bytes.Equal(loc, itemLoc(rec.epk, seq)) {
			report("%s %x is dangling: no item at %x", kind, k, loc)
			return nil, document.Undef, false
		}
		body, ok := bodyOf(seq, rec)
		return rec, body, ok
	}

	// Stored vectors: each is the vector of an existing item at its
	// index's path, and every item with a vector there has it.
	for ord, path := range c.vecPaths {
		prefix := vectorPrefix(c, ord)
		stored := map[uint64]bool{}
		err = scanPrefix(r, prefix, func(k, v []byte) (bool, error) {
			loc := k[len(prefix):]
			rec, body, ok := entryItem("stored vector", k, loc)
			if !ok {
				return true, nil
			}
			seq := locSeq(loc)
			if want, ok := vector.Store(nil, body.At(path)); !ok || !bytes.Equal(v, want) {
				report("stored vector %x of item %q is not its vector at %v", k, rec.id, path)
			}
			stored[seq] = true
			return true, nil
		})
		if err != nil {
			return counts, err
		}
		for seq, rec := range items {
			body, ok := bodyOf(seq, rec)
			if !ok {
				continue
			}
			if _, ok := vector.Store(nil, body.At(path)); ok && !stored[seq] {
				report("item %q (seq %d) lacks its stored vector at %v", rec.id, seq, path)
			}
		}
	}
	// Stored words: each is a word of an existing item's text at its
	// path, and every word of every item's text there has one.
	// And, where the container keeps text totals, each sequence's state
	// holds the words of its items' texts at each path.
	perSeqWords := map[int][]int64{}
	if c.TextTotals {
		for seq, rec := range items {
			if body, ok := bodyOf(seq, rec); ok {
				s := c.seqOf(rec.epk)
				for ord, path := range c.TextPaths {
					perSeqWords[s] = addWords(perSeqWords[s], append(make([]int64, ord), textOf(body, path).n))
				}
			}
		}
		for seq := range c.sequences() {
			st, err := readState(r, c.Rid, seq)
			if err != nil {
				return counts, err
			}
			want := perSeqWords[seq]
			for ord := range c.TextPaths {
				var got, w int64
				if ord < len(st.words) {
					got = st.words[ord]
				}
				if ord < len(want) {
					w = want[ord]
				}
				if got != w {
					report("text totals of sequence %d say %d words at %v; its items' texts hold %d", seq, got, c.TextPaths[ord], w)
				}
			}
		}
	}
	for ord, path := range c.TextPaths {
		prefix := wordPrefix(c, ord)
		stored := map[string]bool{}
		err = scanPrefix(r, prefix, func(k, v []byte) (bool, error) {
			word, loc, ok := bytes.Cut(k[len(prefix):], []byte{0})
			if !ok || len(loc) < 10 {
				report("word entry %x has no location", k)
				return true, nil
			}
			rec, body, ok := entryItem("word entry", k, loc)
			if !ok {
				return true, nil
			}
			t := textOf(body, path)
			if i, found := slices.BinarySearch(t.words, string(word)); !found {
				report("word entry %x: %q is not a word of item %q at %v", k, word, rec.id, path)
			} else if want := t.entryValue(c, i); !bytes.Equal(v, want) {
				report("word entry %x of item %q holds %x, not %x", k, rec.id, v, want)
			}
			stored[string(k)] = true
			return true, nil
		})
		if err != nil {
			return counts, err
		}
		for seq, rec := range items {
			body, ok := bodyOf(seq, rec)
			if !ok {
				continue
			}
			for _, w := range textWords(body, path) {
				if k := append(wordSpanPrefix(c, ord, w), itemLoc(rec.epk, seq)...); !stored[string(k)] {
					report("item %q (seq %d) lacks its word entry %q at %v", rec.id, seq, w, path)
				}
			}
		}
	}
	return counts, nil
}

// checkImages checks the record images (keys.go, imageKey) against the
// items: each copies the record of an item whose expiry entry it follows,
// and an item whose version was written after the setting in force was
// set (a later second than the setting's) has one when it can fall due
// under that setting (hasImage).
func checkImages(r storage.Reader, c *containerRecord, items map[uint64]*itemRecord, raws map[uint64][]byte, report func(string, ...any), counts *IndexCounts) error {
	prefix := collPrefix(famImage, c.Rid)
	imaged := map[uint64]bool{}
	err := scanPrefix(r, prefix, func(k, v []byte) (bool, error) {
		counts.Images++
		ek := imageEntry(c.Rid, k)
		if ek == nil {
			report("record image key %x is malformed", k)
			return true, nil
		}
		seq := binary.BigEndian.Uint64(k[len(k)-8:])
		rec, ok := items[seq]
		switch {
		case !ok:
			report("record image %x is dangling: no item %d", k, seq)
		case !bytes.Equal(ek, expiryKey(c, rec, seq)):
			report("record image %x does not follow the expiry entry of item %q (seq %d)", k, rec.id, seq)
		case !bytes.Equal(v, raws[seq]):
			report("record image of item %q (seq %d) differs from its record", rec.id, seq)
		case rec.noImage:
			report("item %q (seq %d) has a record image though its record says it was written without one", rec.id, seq)
		}
		imaged[seq] = true
		return true, nil
	})
	if err != nil {
		return err
	}
	if !c.TTL.Setting().On {
		return nil
	}
	since := c.TTL.Current().From.Unix()
	for seq, rec := range items {
		if rec.ts > since && expiryKey(c, rec, seq) != nil && hasImage(c, rec) && !imaged[seq] {
			report("item %q (seq %d, _ts %d) has no record image though it can expire under the setting in force since %d", rec.id, seq, rec.ts, since)
		}
	}
	return nil
}
