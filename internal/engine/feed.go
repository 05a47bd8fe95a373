package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// DefaultPageSize is the page size when the client does not choose one.
const DefaultPageSize = 100

// maxPageBytes bounds a page, as the service bounds responses to 4 MB.
const maxPageBytes = 4 << 20

// FeedParams asks for one page of a container's items.
type FeedParams struct {
	ItemRef
	MaxItemCount int    // <= 0: the default; -1 lets the server choose
	Continuation string // from the previous page, "" for the first
	RangeID      string // x-ms-documentdb-partitionkeyrangeid; "" for all
}

// FeedPage is one page of a feed or query.
type FeedPage struct {
	Items        [][]byte // JSON values
	Continuation string   // "" on the last page
	Charge       float64
	CollRid      string
	LSN          uint64
	Examined     int
}

const contPrefix = "mf1."

func encodeContinuation(seq uint64, skip int) string {
	s := contPrefix + strconv.FormatUint(seq, 36)
	if skip > 0 {
		s += "." + strconv.Itoa(skip)
	}
	return s
}

// decodeContinuation parses a token made by encodeContinuation: the next
// item sequence to read, and how many rows of it were already returned.
func decodeContinuation(s string) (seq uint64, skip int, err *Error) {
	bad := errorf(BadRequest, "Invalid Continuation Token")
	if !strings.HasPrefix(s, contPrefix) {
		return 0, 0, bad
	}
	parts := strings.Split(s[len(contPrefix):], ".")
	if len(parts) > 2 {
		return 0, 0, bad
	}
	seq, perr := strconv.ParseUint(parts[0], 36, 64)
	if perr != nil {
		return 0, 0, bad
	}
	if len(parts) == 2 {
		n, perr := strconv.Atoi(parts[1])
		if perr != nil || n <= 0 {
			return 0, 0, bad
		}
		skip = n
	}
	return seq, skip, nil
}

func pageSize(n int) int {
	switch {
	case n == 0:
		return DefaultPageSize
	case n < 0:
		return 1000
	}
	return n
}

// ReadFeed returns a page of items in _rid (insertion) order, expired items
// excluded, optionally only those of one partition key (a prefix of the
// key for hierarchical keys).
func (e *Engine) ReadFeed(ctx context.Context, p FeedParams) (*FeedPage, error) {
	now, done := e.judging(ctx, p.DB, p.Coll)
	defer done()
	start := uint64(0)
	if p.Continuation != "" {
		s, _, derr := decodeContinuation(p.Continuation)
		if derr != nil {
			return nil, derr
		}
		start = s
	}
	limit := pageSize(p.MaxItemCount)
	page := &FeedPage{}
	var coll *containerRecord
	err := e.store.View(ctx, func(r storage.Reader) error {
		sc, err := e.openPage(r, p.ItemRef, p.RangeID, page)
		if err != nil {
			return err
		}
		c, match, inRange := sc.c, sc.match, sc.inRange
		coll = c
		size := 0
		return e.scanItems(r, c, start, func(seq uint64, rec *itemRecord) (bool, error) {
			page.Examined++
			if c.expired(rec, now) || !match(rec.pk) || !inRange(rec.epk) {
				return true, nil
			}
			if len(page.Items) == limit || (size+len(rec.json) > maxPageBytes && len(page.Items) > 0) {
				page.Continuation = encodeContinuation(seq, 0)
				return false, nil
			}
			page.Items = append(page.Items, bytes.Clone(rec.json))
			size += len(rec.json)
			return true, nil
		})
	})
	if err != nil {
		return nil, err
	}
	n := 0
	for _, it := range page.Items {
		n += len(it)
	}
	page.Charge = queryCharge(page.Examined, n)
	e.charge(coll, page.Charge)
	return page, nil
}

// pageScope is what a feed or query page reads before its items: the
// container and the filters of its partition key and range headers.
type pageScope struct {
	c       *containerRecord
	match   func(pk []byte) bool
	inRange func(epk string) bool
}

// openPage loads the container for a page, fills the page's container rid
// and LSN, and builds its filters.
func (e *Engine) openPage(r storage.Reader, ref ItemRef, rangeID string, page *FeedPage) (*pageScope, error) {
	c, err := e.loadContainer(r, ref.DB, ref.Coll)
	if err != nil {
		return nil, err
	}
	page.CollRid = c.ridString()
	if page.LSN, err = e.currentLSN(r, c); err != nil {
		return nil, err
	}
	inRange, derr := e.rangeFilter(rangeID)
	if derr != nil {
		return nil, derr
	}
	match, derr := c.keyFilter(ref)
	if derr != nil {
		return nil, derr
	}
	return &pageScope{c: c, match: match, inRange: inRange}, nil
}

// scanItems visits items from sequence start onwards in order.
func (e *Engine) scanItems(r storage.Reader, c *containerRecord, start uint64, fn func(seq uint64, rec *itemRecord) (bool, error)) error {
	prefix := collPrefix(famItem, c.Rid)
	it, err := r.NewIter(storage.IterParams{Lower: itemKey(c.Rid, start), Upper: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != len(prefix)+8 {
			continue
		}
		rec, err := decodeItemRecord(it.Value())
		if err != nil {
			return err
		}
		more, err := fn(binary.BigEndian.Uint64(k[len(prefix):]), &rec)
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	return it.Err()
}

// keyFilter returns a predicate on stored partition key bytes for the
// partition key header of a feed or query: everything when absent, one
// logical partition for a full key, a prefix for a hierarchical prefix.
func (c *containerRecord) keyFilter(ref ItemRef) (func(pk []byte) bool, *Error) {
	if !ref.HasKey {
		return func([]byte) bool { return true }, nil
	}
	k := ref.PartitionKey
	if len(k) > 0 && len(k) < len(c.pk.paths) {
		prefix := partition.AppendKeyBytes(nil, k)
		return func(pk []byte) bool { return bytes.HasPrefix(pk, prefix) && len(pk) >= len(prefix) }, nil
	}
	want, derr := c.headerKeyBytes(k)
	if derr != nil {
		return nil, derr
	}
	return func(pk []byte) bool { return bytes.Equal(pk, want) }, nil
}

// KeyRange is a partition key range: effective partition keys in
// [Min, Max).
type KeyRange struct{ ID, Min, Max string }

// PartitionKeyRanges returns the container's ranges (one, for now) and the
// version the SDK caches them under.
func (e *Engine) PartitionKeyRanges(ctx context.Context, db, coll string) ([]KeyRange, *Resource, error) {
	var c *containerRecord
	err := e.store.View(ctx, func(r storage.Reader) error {
		var err error
		c, err = e.loadContainer(r, db, coll)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	out := make([]KeyRange, len(e.ranges))
	for i, r := range e.ranges {
		out[i] = KeyRange{ID: r.ID, Min: r.Min, Max: r.Max}
	}
	return out, c.resource(), nil
}
