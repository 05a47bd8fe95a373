package engine

import (
	"bytes"
	"context"
	"slices"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// Entries for documents without a property. An ORDER BY returns the
// documents without its first property too (first ascending, last
// descending), and the range index has no entry for them: the property is
// absent, and a wildcard policy cannot list what a document lacks. Found by
// a scan, they made a page of an ORDER BY cost the whole scope once per
// drain, and a TOP … ORDER BY ascending without a filter on the path cost
// the whole scope every time.
//
// So the container keeps, for a few paths its ORDER BY queries ask about,
// entries for the documents that lack the path:
//
//	'x' + collRid + version + 0x00 0x04 + path + loc              (location order)
//	'x' + collRid + version + 0x00 0x05 + path + sequence + loc  (_rid order)
//
// one for each of the two scan orders (access.go scanSource): a logical
// partition or a prefix reads its span of the first, a range or the whole
// container walks the second. Like the composite marker (index.go), 0x00
// 0x04 and 0x00 0x05 begin no path's encoding, and the entries share the
// index version: rebuilt and dropped with it. indexEntries makes them, so
// every write, delete, purge and rebuild keeps them as it keeps the rest.
//
// A path joins the list (indexState.Absent) when a query first needs it:
// the query scans as before and asks the indexer, which adds the path to
// the container record and then fills its entries for the items already
// there, batch by batch from a cursor, as it builds a new index version.
// Writers put the entries of a listed path from the moment it is listed, so
// when the builder reaches the end every item has its entries and the path
// is ready; until then queries scan. The list is bounded (maxAbsentPaths):
// each listed path costs a write of two entries for every document
// without it, and of one for every document with it for each of the tie
// and partition entries it keeps (below).
//
// A listed path also keeps tie entries, for every document whose value at
// the path is one the index keeps exactly (exactValue):
//
//	'x' + collRid + version + 0x00 0x06 + path + value + sequence + loc
//
// An ORDER BY over a range or the whole container returns equal values in
// _rid order, and the path's own entries hold a value's documents in
// location order: without tie entries the stream reads a value's entries
// whole to sort them, on every page that touches the value, so a page of
// an ORDER BY on a property with few values costs the container's size.
// With them a page reads a value's documents in _rid order from where the
// last page stopped (orderstream.go, tieGroup).
//
// And partition entries, for every document with a value at the path, as
// the path's own entries are but under the document's partition first:
//
//	'x' + collRid + version + 0x00 0x07 + path + EPK + value + loc
//
// The path's own entries span the whole container, so an ORDER BY within
// one logical partition walked every partition's entries of the path and
// skipped the others' by their location: a page cost the container's size
// over the partition's. Under the partition they are the partition's own,
// in the same order, and the stream walks them in place of the path's
// (orderstream.go).
var (
	absentLocMarker = []byte{0, 4}
	absentSeqMarker = []byte{0, 5}
	tieMarker       = []byte{0, 6}
	partMarker      = []byte{0, 7}
	// orderMarkers begin the entries of a listed path, of every kind.
	orderMarkers = [][]byte{absentLocMarker, absentSeqMarker, tieMarker, partMarker}
)

// maxAbsentPaths bounds the paths a container keeps absence entries for.
const maxAbsentPaths = 8

// absentPath is a path listed for absence entries: ready once every item
// has its entries, built from item location Cursor onwards until then.
// Ties is set when the path keeps tie entries too (an ORDER BY over a
// range or the whole container asked for them), Parts when it keeps
// partition entries (an ORDER BY within a logical partition did); a path
// listed without the entries a query asks for is listed again with them,
// and built again.
type absentPath struct {
	Path   []string `json:"path"`
	Ready  bool     `json:"ready,omitempty"`
	Cursor []byte   `json:"cursor,omitempty"`
	Ties   bool     `json:"ties,omitempty"`
	Parts  bool     `json:"parts,omitempty"`
}

// entryKinds are the entries besides absence entries a listed path keeps.
type entryKinds struct{ ties, parts bool }

func (a absentPath) kinds() entryKinds { return entryKinds{ties: a.Ties, parts: a.Parts} }

// covers reports whether h holds every kind k asks for.
func (h entryKinds) covers(k entryKinds) bool { return (h.ties || !k.ties) && (h.parts || !k.parts) }

func (h entryKinds) or(k entryKinds) entryKinds {
	return entryKinds{ties: h.ties || k.ties, parts: h.parts || k.parts}
}

// absentPrefix is where the entries of path in one scan order (marker)
// begin, under an index prefix.
func absentPrefix(indexPrefix, marker []byte, path []string) []byte {
	return appendIndexPath(append(bytes.Clone(indexPrefix), marker...), path)
}

// absentEntries are a document's absence, tie and partition entries: two
// for every listed path it lacks, one for every path with ties it holds an
// exact value at, one for every path with partition entries it holds a
// value at.
func absentEntries(c *containerRecord, prefix []byte, doc document.Value, loc []byte) [][]byte {
	var out [][]byte
	for _, a := range c.Index.Absent {
		if !c.index.indexes(a.Path) {
			continue
		}
		if v := doc.At(a.Path); v.IsDefined() {
			if k, ok := tieEntry(prefix, a, v, loc); ok {
				out = append(out, k)
			}
			if k, ok := partEntry(prefix, a, v, loc); ok {
				out = append(out, k)
			}
			continue
		}
		out = append(out,
			append(absentPrefix(prefix, absentLocMarker, a.Path), loc...),
			append(append(absentPrefix(prefix, absentSeqMarker, a.Path), seqPos(loc)...), loc...))
	}
	return out
}

// tieEntry is the tie entry of a document whose value at a's path is v.
func tieEntry(prefix []byte, a absentPath, v document.Value, loc []byte) ([]byte, bool) {
	if !a.Ties {
		return nil, false
	}
	at := len(absentPrefix(prefix, tieMarker, a.Path))
	k, ok := appendIndexValue(absentPrefix(prefix, tieMarker, a.Path), v)
	if !ok || !exactValue(k[at:]) {
		return nil, false
	}
	return append(append(k, seqPos(loc)...), loc...), true
}

// partEntry is the partition entry of a document whose value at a's path
// is v: the key the path's own entry has (index.go indexEntries: a scalar's
// value, or the bare marker of an array or an object), under the marker
// and the document's EPK.
func partEntry(prefix []byte, a absentPath, v document.Value, loc []byte) ([]byte, bool) {
	if !a.Parts || len(loc) < 8 {
		return nil, false
	}
	k := append(absentPrefix(prefix, partMarker, a.Path), loc[:len(loc)-8]...)
	switch v.Kind() {
	case document.Array:
		k = append(k, tagArray)
	case document.Object:
		k = append(k, tagObject)
	default:
		var ok bool
		if k, ok = appendIndexValue(k, v); !ok {
			return nil, false
		}
	}
	return append(k, loc...), true
}

// partsPrefix is where the partition entries of path for the logical
// partition with the EPK epk begin.
func partsPrefix(c *containerRecord, path []string, epk string) []byte {
	return appendEPK(absentPrefix(indexPrefix(c), partMarker, path), epk, true)
}

// orderPrefix is where the entries of path an ordered walk over scope s
// reads begin: within a logical partition, the partition's own entries of
// the path once they are complete; the path's entries otherwise. Both
// hold the partition's documents in the same order, at the same positions.
func orderPrefix(c *containerRecord, path []string, s *itemScope) []byte {
	if s.kind == plan.ScopePartition && c.partsReady(path) {
		return partsPrefix(c, path, s.epk)
	}
	return appendIndexPath(indexPrefix(c), path)
}

// partsReady reports whether every item with a value at path has its
// partition entry.
func (c *containerRecord) partsReady(path []string) bool {
	return c.absentReady(path) && c.Index.Absent[c.absentIndex(path)].Parts
}

// tiesReady reports whether every item with an exact value at path has
// its tie entry.
func (c *containerRecord) tiesReady(path []string) bool {
	return c.absentReady(path) && c.Index.Absent[c.absentIndex(path)].Ties
}

// absentReady reports whether every item without path has its absence
// entries.
func (c *containerRecord) absentReady(path []string) bool {
	if !c.Index.Ready {
		return false
	}
	i := c.absentIndex(path)
	return i >= 0 && c.Index.Absent[i].Ready
}

func (c *containerRecord) absentIndex(path []string) int {
	return slices.IndexFunc(c.Index.Absent, func(a absentPath) bool { return slices.Equal(a.Path, path) })
}

// absentPending reports whether index key k is an absence entry of a path
// still being built: one an item may lack for now.
func (c *containerRecord) absentPending(k []byte) bool {
	prefix := indexPrefix(c)
	for _, a := range c.Index.Absent {
		if !a.Ready && slices.ContainsFunc(orderMarkers, func(m []byte) bool { return bytes.HasPrefix(k, absentPrefix(prefix, m, a.Path)) }) {
			return true
		}
	}
	return false
}

// building reports whether an absence list entry awaits its builder.
func (s indexState) building() bool {
	return slices.ContainsFunc(s.Absent, func(a absentPath) bool { return !a.Ready })
}

// rebuilt is the absence list under a new index version: every path is
// ready as soon as the version is, since the version's builder writes
// every entry indexEntries makes.
func rebuilt(list []absentPath) []absentPath {
	out := make([]absentPath, 0, len(list))
	for _, a := range list {
		out = append(out, absentPath{Path: a.Path, Ready: true, Ties: a.Ties, Parts: a.Parts})
	}
	return out
}

// absentSource reads the scope's items that lack path, in scan order (or
// backwards with reverse), through their absence entries: as scanSourceDir
// does, with the same positions, so a page may resume on either source.
func absentSource(r storage.Reader, c *containerRecord, s *itemScope, path []string, reverse bool, st *readStats) itemSource {
	if s.kind == plan.ScopePartition || s.kind == plan.ScopePrefix {
		prefix := absentPrefix(indexPrefix(c), absentLocMarker, path)
		return func(from []byte, fn func(pos, loc []byte, rec *itemRecord) (bool, error)) error {
			lo, hi := scopeBounds(prefix, s)
			lo, hi = resumeBounds(lo, hi, prefix, from, reverse)
			return scanRangeDir(r, lo, hi, reverse, func(k, _ []byte) (bool, error) {
				return readAbsent(r, c, st, k[len(prefix):], k[len(prefix):], fn)
			})
		}
	}
	prefix := absentPrefix(indexPrefix(c), absentSeqMarker, path)
	return func(from []byte, fn func(pos, loc []byte, rec *itemRecord) (bool, error)) error {
		lo, hi := resumeBounds(prefix, prefixEnd(prefix), prefix, from, reverse)
		return scanRangeDir(r, lo, hi, reverse, func(k, _ []byte) (bool, error) {
			rest := k[len(prefix):]
			if len(rest) < 8 || !s.holds(rest[8:]) {
				st.entries++
				return true, nil
			}
			return readAbsent(r, c, st, rest[:8], rest[8:], fn)
		})
	}
}

// readAbsent reads the item at loc, named by an absence entry, and hands
// it to fn at position pos.
func readAbsent(r storage.Reader, c *containerRecord, st *readStats, pos, loc []byte, fn func(pos, loc []byte, rec *itemRecord) (bool, error)) (bool, error) {
	st.entries++
	pos, loc = bytes.Clone(pos), bytes.Clone(loc)
	rec, ok, err := readItemAt(r, c, loc, st)
	if err != nil || !ok {
		return err == nil, err
	}
	return fn(pos, loc, &rec)
}

// undefinedPath returns the first ORDER BY path of q when an ordered path
// (the TOP walk or the stream) may serve q, the index holds the path and
// the WHERE clause has no term on it: documents without the property may
// then be in the answer, which only a scan or absence entries find.
func undefinedPath(c *containerRecord, q *ast.Query, params map[string]document.Value) ([]string, bool) {
	if !c.Index.Ready || c.index.none || len(q.OrderBy) == 0 || len(q.GroupBy) > 0 || q.Select.Distinct ||
		len(q.Joins) > 0 || gatewayplan.HasAggregates(q) {
		return nil, false
	}
	path, ok := plan.DocPath(q, q.OrderBy[0].Expr)
	if !ok || !c.index.indexes(path) || crossesArray(path) || filtersOn(q, params, path) {
		return nil, false
	}
	return path, true
}

// wantAbsent asks the indexer to list path for absence entries in c, and
// for the entries of the kinds want. The wishes are kept in memory, a
// bounded few: a wish lost to a restart or the bound comes back with the
// next query that needs it.
func (e *Engine) wantAbsent(c *containerRecord, path []string, want entryKinds) {
	if i := c.absentIndex(path); i >= 0 && c.Index.Absent[i].kinds().covers(want) || i < 0 && len(c.Index.Absent) >= maxAbsentPaths {
		return
	}
	key := c.DBID + "\x00" + c.ID + "\x00" + strings.Join(path, "\x00")
	e.mu.Lock()
	if w, ok := e.absentWanted[key]; ok {
		w.want = w.want.or(want)
		e.absentWanted[key] = w
	} else if len(e.absentWanted) < 64 {
		e.absentWanted[key] = absentWish{db: c.DBID, coll: c.ID, path: slices.Clone(path), want: want}
	}
	e.mu.Unlock()
	e.kickIndexer()
}

type absentWish struct {
	db, coll string
	path     []string
	want     entryKinds
}

// listAbsent adds the paths queries asked for to their containers' lists.
func (e *Engine) listAbsent(ctx context.Context) error {
	e.mu.Lock()
	wishes := make([]absentWish, 0, len(e.absentWanted))
	for k, w := range e.absentWanted {
		wishes = append(wishes, w)
		delete(e.absentWanted, k)
	}
	e.mu.Unlock()
	for _, w := range wishes {
		var listed *containerRecord
		err := e.store.Update(ctx, func(tx storage.Txn) error {
			listed = nil
			c, err := e.loadContainer(tx, w.db, w.coll)
			if err != nil {
				return err
			}
			i := c.absentIndex(w.path)
			if !c.Index.Ready || i >= 0 && c.Index.Absent[i].kinds().covers(w.want) || i < 0 && len(c.Index.Absent) >= maxAbsentPaths || !c.index.indexes(w.path) {
				return nil
			}
			want := w.want
			if i >= 0 {
				want = want.or(c.Index.Absent[i].kinds())
			}
			next := *c
			// A path listed without entries now asked for is built again,
			// with them.
			next.Index.Absent = append(slices.DeleteFunc(slices.Clone(c.Index.Absent), func(a absentPath) bool { return slices.Equal(a.Path, w.path) }),
				absentPath{Path: w.path, Ties: want.ties, Parts: want.parts})
			listed = c
			return setJSON(tx, containerKey(c.DBRid, c.ID), &next)
		})
		if err != nil && !isNotFound(err) {
			return err
		}
		if listed != nil {
			e.containerChanged(ctx, listed)
		}
	}
	return nil
}

// buildAbsentBatch writes the absence entries of up to n items, from the
// cursor of the first listed path not ready, in one transaction with the
// cursor's advance; at the end it marks the path ready.
func (e *Engine) buildAbsentBatch(ctx context.Context, db, coll string, n int) (bool, error) {
	building := func(c *containerRecord) int {
		return slices.IndexFunc(c.Index.Absent, func(a absentPath) bool { return !a.Ready })
	}
	// next: another listed path awaits its build after this one ends.
	next := false
	more, err := e.buildBatch(ctx, db, coll, n, buildStep{
		cursor: func(c *containerRecord) ([]byte, bool) {
			next = false // every attempt of the transaction starts here
			i := building(c)
			if !c.Index.Ready || i < 0 {
				return nil, false
			}
			return c.Index.Absent[i].Cursor, true
		},
		visit: func(tx storage.Txn, c *containerRecord, doc document.Value, loc []byte) error {
			only := *c
			only.Index.Absent = []absentPath{c.Index.Absent[building(c)]}
			for _, k := range absentEntries(&only, indexPrefix(c), doc, loc) {
				if err := tx.Set(k, nil); err != nil {
					return err
				}
			}
			return nil
		},
		advance: func(tx storage.Txn, c *containerRecord, cursor []byte) error {
			updated := *c
			updated.Index.Absent = slices.Clone(c.Index.Absent)
			a := &updated.Index.Absent[building(c)]
			if cursor != nil {
				a.Cursor = cursor
			} else {
				*a = absentPath{Path: a.Path, Ready: true, Ties: a.Ties, Parts: a.Parts}
				next = updated.Index.building()
			}
			return setJSON(tx, containerKey(c.DBRid, c.ID), &updated)
		},
	})
	return more || next, err
}
