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
// without it, and of one for every document with it for each of the tie,
// partition and partition composite entries it keeps, and of a gap entry
// for a document a listed composite leaves out (below).
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
// (orderstream.go); under a hierarchical prefix of a few partitions, it
// walks the merge of theirs (prefixparts.go).
//
// And, for composite indexes whose first path is the listed path, when it
// keeps partition entries, the composite's entries of each logical
// partition apart (partition composite entries):
//
//	'x' + collRid + version + 0x00 0x08 + ordinal(2) + EPK + value… + loc
//
// An ORDER BY on several keys within one logical partition walks a group
// of equal first values through them in the order of the other keys
// (orderkeys.go, coveredGroup), and a filter the composite answers there
// counts and reads its span through them (compositeStart); the
// composite's own entries span the whole container, and its span of a
// group would cost the group's entries in every other partition. With
// them, gap entries, for every document whose
// value at the path is one the index keeps exactly but which has no
// composite entry with exact values (a later path is undefined, an array,
// an object, or a number the index cannot tell apart):
//
//	'x' + collRid + version + 0x00 0x09 + ordinal(2) + value + loc
//
// A group of equal first values without gap entries in the scope is
// ordered by the composite whole, so the stream walks the composite from
// its position without reading the group first.
//
// And, for _ts alone, the path's own entries (Own), which indexEntries
// leaves out as it leaves out every system property: listed when a query
// filters on _ts or orders by it, they index it as the service does, at
// the cost of an entry per write and per purged item that containers
// never queried on _ts do not pay.
var (
	absentLocMarker = []byte{0, 4}
	absentSeqMarker = []byte{0, 5}
	tieMarker       = []byte{0, 6}
	partMarker      = []byte{0, 7}
	partCompMarker  = []byte{0, 8}
	gapMarker       = []byte{0, 9}
	// orderMarkers begin the entries of a listed path, of every kind.
	orderMarkers = [][]byte{absentLocMarker, absentSeqMarker, tieMarker, partMarker, partCompMarker, gapMarker}
)

// maxAbsentPaths bounds the paths a container keeps absence entries for.
const maxAbsentPaths = 8

// absentPath is a path listed for absence entries: ready once every item
// has its entries, built from item location Cursor onwards until then.
// Ties is set when the path keeps tie entries too (an ORDER BY over a
// range or the whole container asked for them), Parts when it keeps
// partition entries (an ORDER BY within a logical partition did), Comps
// names the composite indexes starting with the path whose gap entries,
// and with Parts partition composite entries, it keeps
// (compositeIndex.sig; an ORDER BY on several keys asked for them); a path
// listed without the entries a query asks for is listed again with them,
// and built again. While it is, Was holds the kinds it was ready with:
// writes keep every listed kind's entries, and the build only adds, so
// those stay complete and readable, and a page's token taken while they
// were ready stays good.
type absentPath struct {
	Path   []string `json:"path"`
	Ready  bool     `json:"ready,omitempty"`
	Cursor []byte   `json:"cursor,omitempty"`
	Ties   bool     `json:"ties,omitempty"`
	Parts  bool     `json:"parts,omitempty"`
	Comps  []string `json:"comps,omitempty"`
	// Own is set for _ts, which the index's own entries leave out: the
	// list keeps the path's own entries too (a query on it asked).
	Own bool `json:"own,omitempty"`
	// Was: see above; nil when the path is ready, or was not before.
	Was *readyKinds `json:"was,omitempty"`
}

// readyKinds are the kinds of entries a path listed again was ready with.
type readyKinds struct {
	Ties  bool     `json:"ties,omitempty"`
	Parts bool     `json:"parts,omitempty"`
	Own   bool     `json:"own,omitempty"`
	Comps []string `json:"comps,omitempty"`
}

// relisted is a listed again with the kinds want, to be built again.
func (a absentPath) relisted(want entryKinds) absentPath {
	next := absentPath{Path: a.Path, Ties: want.ties, Parts: want.parts, Own: want.own, Comps: want.comps, Was: a.Was}
	if a.Ready {
		next.Was = &readyKinds{Ties: a.Ties, Parts: a.Parts, Own: a.Own, Comps: a.Comps}
	}
	return next
}

// ready returns the kinds of a's entries that are complete, and whether
// its absence entries are.
func (a absentPath) ready() (entryKinds, bool) {
	switch {
	case a.Ready:
		return a.kinds(), true
	case a.Was != nil:
		return entryKinds{ties: a.Was.Ties, parts: a.Was.Parts, own: a.Was.Own, comps: a.Was.Comps}, true
	}
	return entryKinds{}, false
}

// tsPath is _ts, the system property the index keeps when queries ask.
var tsPath = []string{"_ts"}

// tsReady reports whether the entries of _ts are complete.
func (c *containerRecord) tsReady() bool {
	k, ok := c.readyKinds(tsPath)
	return ok && k.own
}

// built is a, with every entry written.
func (a absentPath) built() absentPath {
	a.Ready, a.Cursor, a.Was = true, nil, nil
	return a
}

// entryKinds are the entries besides absence entries a listed path keeps.
type entryKinds struct {
	ties, parts, own bool
	comps            []string
}

func (a absentPath) kinds() entryKinds {
	return entryKinds{ties: a.Ties, parts: a.Parts, own: a.Own, comps: a.Comps}
}

// covers reports whether h holds every kind k asks for.
func (h entryKinds) covers(k entryKinds) bool {
	return (h.ties || !k.ties) && (h.parts || !k.parts) && (h.own || !k.own) &&
		!slices.ContainsFunc(k.comps, func(s string) bool { return !slices.Contains(h.comps, s) })
}

func (h entryKinds) or(k entryKinds) entryKinds {
	comps := slices.Clone(h.comps)
	for _, s := range k.comps {
		if !slices.Contains(comps, s) {
			comps = append(comps, s)
		}
	}
	return entryKinds{ties: h.ties || k.ties, parts: h.parts || k.parts, own: h.own || k.own, comps: comps}
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
		if !c.index.indexes(a.Path) && !a.Own {
			continue
		}
		if crossesArray(a.Path) {
			out = append(out, elemTieEntries(prefix, a, doc, loc)...)
			continue
		}
		if v := doc.At(a.Path); v.IsDefined() {
			if a.Own {
				if k, ok := appendIndexValue(appendIndexPath(bytes.Clone(prefix), a.Path), v); ok {
					out = append(out, append(k, loc...))
				}
			}
			if k, ok := tieEntry(prefix, a, v, loc); ok {
				out = append(out, k)
			}
			if k, ok := partEntry(prefix, a, v, loc); ok {
				out = append(out, k)
			}
			for i := range c.index.composites {
				out = append(out, compEntries(prefix, a, &c.index.composites[i], doc, loc)...)
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

// elemTieEntries are the tie entries of a document at a path through
// array elements (tags/[]): one for each distinct value the index keeps
// exactly among the elements the path reaches, as its own entries hold
// them (index.go indexEntries). Such a path keeps tie entries alone: an
// element path has no document "without" it to find, nor an order to
// walk within a partition.
func elemTieEntries(prefix []byte, a absentPath, doc document.Value, loc []byte) [][]byte {
	if !a.Ties {
		return nil
	}
	var out [][]byte
	seen := make(map[string]bool)
	eachElem(doc, a.Path, func(v document.Value) {
		if k, ok := tieEntry(prefix, a, v, loc); ok && !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, k)
		}
	})
	return out
}

// eachElem calls fn with every value path reaches in v, the segment "[]"
// standing for each element of an array.
func eachElem(v document.Value, path []string, fn func(document.Value)) {
	if len(path) == 0 {
		fn(v)
		return
	}
	switch {
	case path[0] == "[]" && v.Kind() == document.Array:
		for _, e := range v.Array() {
			eachElem(e, path[1:], fn)
		}
	case path[0] != "[]" && v.Kind() == document.Object:
		if f := v.Get(path[0]); f.IsDefined() {
			eachElem(f, path[1:], fn)
		}
	}
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

// compEntries are a document's partition composite entry and gap entry in
// comp, when a keeps them for comp: its composite entry (index.go
// compositeEntry) with the document's EPK after the ordinal, when a keeps
// partition entries too (an ORDER BY within a logical partition asked for
// both), and, when its value at a's path is exact and it has no composite
// entry with exact values, the gap entry.
func compEntries(prefix []byte, a absentPath, comp *compositeIndex, doc document.Value, loc []byte) [][]byte {
	if len(a.Comps) == 0 || len(loc) < 8 || !comp.kept || !slices.Equal(comp.paths[0], a.Path) || !slices.Contains(a.Comps, comp.sig()) {
		return nil
	}
	var out [][]byte
	k := append(partCompBase(prefix, comp), loc[:len(loc)-8]...)
	exact := true
	for i, p := range comp.paths {
		at := len(k)
		var ok bool
		if k, ok = appendIndexValue(k, doc.At(p)); !ok {
			k, exact = nil, false
			break
		}
		exact = exact && exactValue(k[at:])
		if comp.desc[i] {
			invert(k[at:])
		}
	}
	if k != nil && a.Parts {
		out = append(out, append(k, loc...))
	}
	if !exact {
		base := gapBase(prefix, comp)
		if g, ok := appendIndexValue(base, doc.At(a.Path)); ok && exactValue(g[len(base):]) {
			out = append(out, append(g, loc...))
		}
	}
	return out
}

// partCompPrefix is where the partition composite entries of comp for the
// logical partition with the EPK epk begin.
func partCompPrefix(c *containerRecord, comp *compositeIndex, epk string) []byte {
	return appendEPK(partCompBase(indexPrefix(c), comp), epk, true)
}

// partCompBase is where the partition composite entries of comp begin,
// under an index prefix.
func partCompBase(indexPrefix []byte, comp *compositeIndex) []byte {
	return ordinalPrefix(indexPrefix, partCompMarker, comp.ordinal)
}

// gapBase is where the gap entries of comp begin, under an index prefix.
func gapBase(indexPrefix []byte, comp *compositeIndex) []byte {
	return ordinalPrefix(indexPrefix, gapMarker, comp.ordinal)
}

// compReady reports whether every item has its gap entries in comp, and
// its partition composite entry when comp's first path keeps partition
// entries.
func (c *containerRecord) compReady(comp *compositeIndex) bool {
	k, ok := c.readyKinds(comp.paths[0])
	return ok && slices.Contains(k.comps, comp.sig())
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
	k, ok := c.readyKinds(path)
	return ok && k.parts
}

// tiesReady reports whether every item with an exact value at path has
// its tie entry.
func (c *containerRecord) tiesReady(path []string) bool {
	k, ok := c.readyKinds(path)
	return ok && k.ties
}

// absentReady reports whether every item without path has its absence
// entries.
func (c *containerRecord) absentReady(path []string) bool {
	_, ok := c.readyKinds(path)
	return ok
}

// readyKinds returns the kinds of path's entries that are complete, and
// whether its absence entries are (absentPath.ready).
func (c *containerRecord) readyKinds(path []string) (entryKinds, bool) {
	i := c.absentIndex(path)
	if !c.Index.Ready || i < 0 {
		return entryKinds{}, false
	}
	return c.Index.Absent[i].ready()
}

func (c *containerRecord) absentIndex(path []string) int {
	return slices.IndexFunc(c.Index.Absent, func(a absentPath) bool { return slices.Equal(a.Path, path) })
}

// absentPending reports whether index key k is an absence entry of a path
// still being built: one an item may lack for now.
func (c *containerRecord) absentPending(k []byte) bool {
	prefix := indexPrefix(c)
	for _, a := range c.Index.Absent {
		if a.Ready {
			continue
		}
		if slices.ContainsFunc(orderMarkers, func(m []byte) bool { return bytes.HasPrefix(k, absentPrefix(prefix, m, a.Path)) }) ||
			a.Own && bytes.HasPrefix(k, appendIndexPath(bytes.Clone(prefix), a.Path)) {
			return true
		}
		for i := range c.index.composites {
			comp := &c.index.composites[i]
			if slices.Contains(a.Comps, comp.sig()) && (bytes.HasPrefix(k, partCompBase(prefix, comp)) || bytes.HasPrefix(k, gapBase(prefix, comp))) {
				return true
			}
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
		out = append(out, a.built())
	}
	return out
}

// absentSource reads the scope's items that lack path, in scan order (or
// backwards with reverse), through their absence entries: as scanSourceDir
// does, with the same positions, so a page may resume on either source.
func absentSource(r storage.Reader, c *containerRecord, s *itemScope, path []string, reverse bool, st *readStats) itemSource {
	return func(from []byte, fn func(pos, loc []byte, rec *itemRecord) (bool, error)) error {
		return eachAbsent(r, c, s, path, reverse, from, st, func(pos, loc []byte) (bool, error) {
			pos, loc = bytes.Clone(pos), bytes.Clone(loc)
			rec, ok, err := readItemAt(r, c, loc, st)
			if err != nil || !ok {
				return err == nil, err
			}
			return fn(pos, loc, &rec)
		})
	}
}

// eachAbsent calls fn with the scan position and the location of each
// of the scope's items that lack path, named by its absence entries, in
// scan order (backwards with reverse) from scan position from (nil: the
// start), and reads no record. The keys fn is given are the iterator's:
// it clones what it keeps.
func eachAbsent(r storage.Reader, c *containerRecord, s *itemScope, path []string, reverse bool, from []byte, st *readStats, fn func(pos, loc []byte) (bool, error)) error {
	if s.kind == plan.ScopePartition || s.kind == plan.ScopePrefix {
		prefix := absentPrefix(indexPrefix(c), absentLocMarker, path)
		lo, hi := scopeBounds(prefix, s)
		lo, hi = resumeBounds(lo, hi, prefix, from, reverse)
		if !s.partsListed {
			return scanRangeDir(r, lo, hi, reverse, func(k, _ []byte) (bool, error) {
				st.entries++
				return fn(k[len(prefix):], k[len(prefix):])
			})
		}
		// Under a prefix whose partitions a filter lists (listScope),
		// their spans of the prefix's, in location order.
		parts := slices.Clone(s.parts)
		if reverse {
			slices.Reverse(parts)
		}
		for _, epk := range parts {
			plo := append(bytes.Clone(prefix), epk...)
			phi := prefixEnd(plo)
			if bytes.Compare(plo, lo) < 0 {
				plo = lo
			}
			if hi != nil && bytes.Compare(phi, hi) > 0 {
				phi = hi
			}
			if bytes.Compare(plo, phi) >= 0 {
				continue
			}
			more := true
			err := scanRangeDir(r, plo, phi, reverse, func(k, _ []byte) (bool, error) {
				st.entries++
				var err error
				more, err = fn(k[len(prefix):], k[len(prefix):])
				return more, err
			})
			if err != nil || !more {
				return err
			}
		}
		return nil
	}
	prefix := absentPrefix(indexPrefix(c), absentSeqMarker, path)
	lo, hi := s.seqBounds(prefix)
	lo, hi = resumeBounds(lo, hi, prefix, from, reverse)
	if s.listed != nil {
		return eachListedAbsent(r, c, s, path, prefix, lo, hi, reverse, from, st, fn)
	}
	return scanRangeDir(r, lo, hi, reverse, func(k, _ []byte) (bool, error) {
		st.entries++
		rest := k[len(prefix):]
		// A position one past an item's (its sequence and 0x00, as a
		// page across partitions ends when the next item's is not
		// known yet) sorts before the item's entry, whose location
		// follows its sequence: the entry is passed over.
		past := from != nil && !reverse && len(rest) >= 8 && bytes.Compare(rest[:8], from) < 0
		if len(rest) < 8 || past || !s.holds(rest[8:]) {
			return true, nil
		}
		return fn(rest[:8], rest[8:])
	})
}

// eachListedAbsent is eachAbsent over the partitions a filter lists
// (itemScope.listed): their absence entries in location order, merged in
// the order of the sequences (_rid order), as keys prefix + sequence in
// [lo, hi), the span of the _rid-order entries eachAbsent would read.
func eachListedAbsent(r storage.Reader, c *containerRecord, s *itemScope, path []string, prefix, lo, hi []byte, reverse bool, from []byte, st *readStats, fn func(pos, loc []byte) (bool, error)) error {
	base := absentPrefix(indexPrefix(c), absentLocMarker, path)
	it, err := newMergedIter(r, base, s.listed, prefix, lo, hi, reverse)
	if err != nil {
		return err
	}
	defer it.Close()
	m := it.(*mergedIter)
	var loc []byte
	for ok := m.First(); ok; ok = m.Next() {
		st.entries++
		seq := m.Key()[len(prefix):]
		past := from != nil && !reverse && len(seq) >= 8 && bytes.Compare(seq[:8], from) < 0
		if len(seq) != 8 || past {
			continue
		}
		loc = append(append(loc[:0], m.part()[len(base):]...), seq...)
		if !s.holds(loc) {
			continue
		}
		if more, err := fn(seq, loc); err != nil || !more {
			return err
		}
	}
	return m.Err()
}

// undefinedPath returns the first ORDER BY path of q when an ordered path
// (the TOP walk or the stream) may serve q, the index holds the path and
// the WHERE clause has no term on it, and items may lack it (not id or
// _ts): documents without the property may then be in the answer, which
// only a scan or absence entries find.
func undefinedPath(c *containerRecord, q *ast.Query, params map[string]document.Value) ([]string, bool) {
	if !c.Index.Ready || c.index.none || len(q.OrderBy) == 0 || len(q.GroupBy) > 0 || (q.Select.Distinct && (bareValue(q) || !distinctKeyed(q))) ||
		len(q.Joins) > 0 || gatewayplan.HasAggregates(q) {
		return nil, false
	}
	path, ok := plan.DocPath(q, q.OrderBy[0].Expr)
	if !ok || !c.index.indexes(path) || crossesArray(path) || filtersOn(q, params, path) || everyItemHas(path) {
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
			if !c.Index.Ready || i >= 0 && c.Index.Absent[i].kinds().covers(w.want) || i < 0 && len(c.Index.Absent) >= maxAbsentPaths ||
				!c.index.indexes(w.path) && !(w.want.own && c.index.tsListable(w.path)) ||
				crossesArray(w.path) && (w.want.parts || w.want.own || len(w.want.comps) > 0) {
				return nil
			}
			want := w.want
			if i >= 0 {
				want = want.or(c.Index.Absent[i].kinds())
			}
			next := *c
			// A path listed without entries now asked for is built again,
			// with them.
			listing := absentPath{Path: w.path}
			if i >= 0 {
				listing = c.Index.Absent[i]
			}
			next.Index.Absent = append(slices.DeleteFunc(slices.Clone(c.Index.Absent), func(a absentPath) bool { return slices.Equal(a.Path, w.path) }),
				listing.relisted(want))
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
				*a = a.built()
				next = updated.Index.building()
			}
			return setJSON(tx, containerKey(c.DBRid, c.ID), &updated)
		},
	})
	return more || next, err
}
