package engine

import (
	"bytes"
	"context"
	"strconv"
	"sync"

	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// DefaultPageSize is the page size when the client does not choose one.
const DefaultPageSize = 100

// maxPageBytes bounds a page, as the service bounds responses to 4 MB. A
// query's row is bounded by the same (eval.MaxRowBytes).
const maxPageBytes = eval.MaxRowBytes

// FeedParams asks for one page of a container's items.
type FeedParams struct {
	ItemRef
	MaxItemCount int    // <= 0: the default; -1 lets the server choose
	Continuation string // from the previous page, "" for the first
	RangeID      string // x-ms-documentdb-partitionkeyrangeid; "" for all
	// MinEPK and MaxEPK (x-ms-start-epk, x-ms-end-epk) narrow the scope
	// to effective partition keys in [MinEPK, MaxEPK) (itemScope.narrowToEPKs).
	MinEPK, MaxEPK string
}

// FeedPage is one page of a feed or query.
type FeedPage struct {
	Items        [][]byte // JSON values
	Continuation string   // "" on the last page
	Charge       float64
	CollRid      string
	LSN          uint64
	// Examined is how many records the page read, ExaminedBytes their
	// size as stored, IndexEntries how many index entries: all the work,
	// returned or not.
	Examined      int
	ExaminedBytes int
	IndexEntries  int
	// Plan is what the planner weighed for a query's first page; nil
	// otherwise.
	Plan *plan.Plan

	// chunks hold the copies of stored documents that Items return
	// (keep); chunk is the last one's unused room.
	chunks []*[]byte
	chunk  []byte
}

// rowChunkSize is the size of the blocks a page copies stored documents
// into, and rowChunks keeps blocks that released pages returned. A page
// of a hundred documents copied each into an allocation of its own: a
// quarter of what a range query allocated, dropped as soon as the page was
// written (docs/benchmarks.md, "A page's body from a pool").
const rowChunkSize = 64 << 10

var rowChunks sync.Pool // of *[]byte, rowChunkSize long

// keep returns a copy of b, a stored document a page returns, that stays
// valid until the page is released: in a block shared with the page's
// other documents, or, for a document larger than a quarter of a block,
// an allocation of its own.
func (p *FeedPage) keep(b []byte) []byte {
	if len(b) > rowChunkSize/4 {
		return bytes.Clone(b)
	}
	if cap(p.chunk)-len(p.chunk) < len(b) {
		c, _ := rowChunks.Get().(*[]byte)
		if c == nil {
			buf := make([]byte, 0, rowChunkSize)
			c = &buf
		}
		p.chunks = append(p.chunks, c)
		p.chunk = (*c)[:0]
	}
	start := len(p.chunk)
	p.chunk = append(p.chunk, b...)
	return p.chunk[start:len(p.chunk):len(p.chunk)]
}

// Release gives the memory of the page's documents back for later pages
// to reuse. The page's Items must not be read after; a page never
// released is collected as any other value.
func (p *FeedPage) Release() {
	for _, c := range p.chunks {
		rowChunks.Put(c)
	}
	p.chunks, p.chunk, p.Items = nil, nil, nil
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

// ReadFeed returns a page of items, expired items excluded, optionally only
// those of one partition key (a prefix of the key for hierarchical keys) or
// one partition key range, in _rid (insertion) order as the service
// returns them. A page reads from where the previous page stopped, and a
// partition-scoped page only its partition's key span, so it costs
// O(page) whatever the container holds.
func (e *Engine) ReadFeed(ctx context.Context, p FeedParams) (*FeedPage, error) {
	now, done, err := e.judging(ctx, p.DB, p.Coll)
	if err != nil {
		return nil, err
	}
	defer done()
	limit := pageSize(p.MaxItemCount)
	page := &FeedPage{}
	var coll *containerRecord
	var st readStats
	err = e.store.View(ctx, func(r storage.Reader) error {
		c, err := e.loadContainer(r, p.DB, p.Coll)
		if err != nil {
			return err
		}
		coll = c
		page.CollRid = c.ridString()
		if page.LSN, err = e.currentLSN(r, c, c.seqOfScope(p.ItemRef, p.RangeID)); err != nil {
			return err
		}
		s, derr := e.scopeFor(c, p.PartitionKey, p.HasKey, p.RangeID)
		if derr != nil {
			return derr
		}
		s.narrowToEPKs(p.MinEPK, p.MaxEPK)
		fpParts := []string{"feed", string(c.Rid), string(partition.AppendKeyBytes(nil, p.PartitionKey)), strconv.FormatBool(p.HasKey), p.RangeID}
		if p.MinEPK != "" || p.MaxEPK != "" {
			fpParts = append(fpParts, string(s.lo), string(s.hi))
		}
		fp := fingerprint(nil, fpParts...)
		var cur cursor
		if p.Continuation != "" {
			if cur, derr = parseCursor(p.Continuation, fp); derr != nil {
				return derr
			}
		}
		size := 0
		st.want = func() int { return limit - len(page.Items) }
		return scanSource(r, c, s, &st)(cur.pos, func(pos, _ []byte, rec *itemRecord) (bool, error) {
			if c.expired(rec, now) || !s.keeps(rec) {
				return true, nil
			}
			if len(page.Items) == limit || (size+len(rec.json) > maxPageBytes && len(page.Items) > 0) {
				page.Continuation = cursor{fingerprint: fp, pos: bytes.Clone(pos)}.String()
				return false, nil
			}
			page.Items = append(page.Items, page.keep(rec.json))
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
	page.Examined = st.records
	page.Charge = queryCharge(st.records, st.entries, n)
	e.charge(coll, page.Charge)
	return page, nil
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
	ranges := e.rangesOf(c)
	out := make([]KeyRange, len(ranges))
	for i, r := range ranges {
		out[i] = KeyRange{ID: r.ID, Min: r.Min, Max: r.Max}
	}
	return out, c.resource(), nil
}
