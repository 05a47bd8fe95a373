package engine

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// Under a hierarchical prefix, a path's own entries are the whole
// container's: a value's entries of the prefix lie together among them,
// but a walk in the path's order steps through every other partition's
// entries between one value's and the next's. The path's partition
// entries (absent.go) hold each logical partition's apart, in the same
// order, so the prefix's are the merge of its partitions' (mergedIter):
// a page of an ORDER BY under the prefix reads its rows' entries and a
// seek a partition, rather than the container's entries between them.
// The merge pays a seek for each partition on every page, so it serves a
// prefix of a few partitions (maxMergedParts); the partitions are those
// with a count (usage.go), which every partition holding an item has.
// Over a store across the network each of those seeks is a round trip,
// where stepping through the other entries costs one for many of them:
// there the walk steps, as before. An ORDER BY over a list of partition
// keys merges the listed partitions' entries the same way (listScope).

// maxMergedParts bounds the logical partitions whose entries a walk under
// a hierarchical prefix merges.
const maxMergedParts = 64

// prefixParts returns the EPK encodings (appendEPK) of the logical
// partitions under the hierarchical prefix s, from their counts, and
// false when there are more than maxMergedParts or r reads over the
// network. It reads them once for the scope.
func prefixParts(r storage.Reader, c *containerRecord, s *itemScope, st *readStats) ([][]byte, bool, error) {
	if storage.IsNetworked(r) {
		return nil, false, nil
	}
	if s.parts != nil || s.manyParts {
		return s.parts, !s.manyParts, nil
	}
	prefix := collPrefix(famUsage, c.Rid)
	lo, hi := append(bytes.Clone(prefix), s.lo...), prefixEnd(prefix)
	if s.hi != nil {
		hi = append(bytes.Clone(prefix), s.hi...)
	}
	parts := [][]byte{}
	err := scanRange(r, lo, hi, func(k, _ []byte) (bool, error) {
		st.entries++
		if len(parts) == maxMergedParts {
			s.manyParts = true
			return false, nil
		}
		parts = append(parts, bytes.Clone(k[len(prefix):]))
		return true, nil
	})
	if err != nil {
		return nil, false, err
	}
	if !s.manyParts {
		s.parts = parts
	}
	return s.parts, !s.manyParts, nil
}

// readPrefixParts reads the partitions of the hierarchical prefix s
// (prefixParts) when one of terms is a range on a path whose partition
// entries are complete, or is on the first path of a composite index
// whose partition entries are: counting and collecting the range, or a
// span of the composite, then read the prefix's partitions' entries of it
// (prefixRange, prefixComposite), not the container's.
func readPrefixParts(r storage.Reader, c *containerRecord, terms []plan.Term, s *itemScope, st *readStats) error {
	if s.kind != plan.ScopePrefix {
		return nil
	}
	leadsReady := func(t plan.Term) bool {
		return slices.ContainsFunc(c.index.composites, func(comp compositeIndex) bool {
			return slices.Equal(comp.paths[0], t.Path) && c.compReady(&comp) && c.partsReady(comp.paths[0])
		})
	}
	if !slices.ContainsFunc(terms, func(t plan.Term) bool { return rangeOnParts(c, t) || leadsReady(t) }) {
		return nil
	}
	_, _, err := prefixParts(r, c, s, st)
	return err
}

// mergesParts reports whether a walk of path's entries under scope s
// merges its partitions' entries (mergedIter): s is a hierarchical prefix
// of a few partitions, or lists partitions (listScope), and path's
// partition entries are complete.
func mergesParts(r storage.Reader, c *containerRecord, path []string, s *itemScope, st *readStats) (bool, error) {
	if s.listed != nil {
		return c.partsReady(path) && !crossesArray(path), nil
	}
	if s.kind != plan.ScopePrefix || !c.partsReady(path) || crossesArray(path) {
		return false, nil
	}
	_, ok, err := prefixParts(r, c, s, st)
	return ok, err
}

// newPartsIter returns an iterator over path's entries under the prefix s,
// or in the partitions s lists (listScope), in [lo, hi) (keys of the
// path's own entries, under prefix), backwards when reverse, merged from
// its partitions' partition entries.
func newPartsIter(r storage.Reader, c *containerRecord, path []string, s *itemScope, prefix, lo, hi []byte, reverse bool) (storage.Iterator, error) {
	if s.listed != nil {
		// Over a range, equal values come in _rid order (listScope).
		return newSeqMergedIter(r, absentPrefix(indexPrefix(c), partMarker, path), s.listed, prefix, lo, hi, reverse)
	}
	return newMergedIter(r, absentPrefix(indexPrefix(c), partMarker, path), s.parts, prefix, lo, hi, reverse)
}

// newSeqMergedIter is newMergedIter over entry keys base + part + value
// + location (a location being the part's EPK encoding and a sequence),
// the entries of equal values merged in the order of their sequences
// (_rid order) rather than of their locations. A key out + value +
// sequence seeks each part to that sequence among its entries of the
// value.
func newSeqMergedIter(r storage.Reader, base []byte, parts [][]byte, out, lo, hi []byte, reverse bool) (storage.Iterator, error) {
	return openMerged(r, &mergedIter{out: out, reverse: reverse, bySeq: true}, base, parts, lo, hi)
}

// newMergedIter returns an iterator over the keys out + rest in [lo, hi),
// backwards when reverse, merged from the keys base + part + rest of each
// of parts.
func newMergedIter(r storage.Reader, base []byte, parts [][]byte, out, lo, hi []byte, reverse bool) (storage.Iterator, error) {
	return openMerged(r, &mergedIter{out: out, reverse: reverse}, base, parts, lo, hi)
}

// openMerged opens m's subs, one for each of parts under base, in [lo, hi).
func openMerged(r storage.Reader, m *mergedIter, base []byte, parts [][]byte, lo, hi []byte) (storage.Iterator, error) {
	for _, epk := range parts {
		sub := mergedSub{pre: append(bytes.Clone(base), epk...), part: len(epk)}
		it, err := r.NewIter(storage.IterParams{Lower: m.within(sub, lo), Upper: m.within(sub, hi), Reverse: m.reverse})
		if err != nil {
			m.Close()
			return nil, err
		}
		sub.it = it
		m.subs = append(m.subs, sub)
	}
	return m, nil
}

// mergedIter merges iterators over key spaces that each hold keys pre +
// rest into one over out + rest, in the order of rest (backwards when
// reverse). The rests of different spaces differ (an entry's rest ends
// with its item's location). The positioned subs are kept in a heap by
// their rests, so that a step costs a few comparisons however many
// partitions the prefix has.
type mergedIter struct {
	subs    []mergedSub
	out     []byte
	reverse bool
	heap    []int // the positioned subs, the one whose rest comes first on top
	key     []byte
	// bySeq orders the rests of equal values by their sequences, their
	// last 8 bytes, rather than by their locations (newSeqMergedIter).
	bySeq bool
}

type mergedSub struct {
	it  storage.Iterator
	pre []byte
	// part is the length of the sub's part, the last bytes of pre: in a
	// rest of value + location, the location's EPK encoding (bySeq).
	part int
}

// within translates a key of the merged space into sub's space: out +
// rest is pre + rest; a key before every key under out is pre, one after
// them all is past pre's keys. Merged by sequence, out + value + sequence
// is pre + value + the part's EPK + sequence, and so is a sequence cut
// short past its last 0xFF bytes (prefixEnd of such a key, a walk's
// bound backwards).
func (m *mergedIter) within(sub mergedSub, k []byte) []byte {
	switch {
	case bytes.HasPrefix(k, m.out):
		rest := k[len(m.out):]
		if n := indexValueLen(rest); m.bySeq && n > 0 && len(rest) > n && len(rest) <= n+8 {
			out := append(bytes.Clone(sub.pre), rest[:n]...)
			return append(append(out, sub.pre[len(sub.pre)-sub.part:]...), rest[n:]...)
		}
		return append(bytes.Clone(sub.pre), rest...)
	case bytes.Compare(k, m.out) < 0:
		return bytes.Clone(sub.pre)
	}
	return prefixEnd(sub.pre)
}

// rest is the rest of sub i's key.
func (m *mergedIter) rest(i int) []byte {
	sub := &m.subs[i]
	return sub.it.Key()[len(sub.pre):]
}

// before reports whether sub i's rest comes before sub j's in the order.
func (m *mergedIter) before(i, j int) bool {
	a, b := m.rest(i), m.rest(j)
	var c int
	if ea, eb := len(a)-m.subs[i].part-8, len(b)-m.subs[j].part-8; m.bySeq && ea > 0 && eb > 0 {
		// The values, then the sequences.
		c = cmp.Or(bytes.Compare(a[:ea], b[:eb]), bytes.Compare(a[len(a)-8:], b[len(b)-8:]))
	} else {
		c = bytes.Compare(a, b)
	}
	if m.reverse {
		return c > 0
	}
	return c < 0
}

// down moves the heap's entry at k down to its place.
func (m *mergedIter) down(k int) {
	h := m.heap
	for {
		first := k
		if l := 2*k + 1; l < len(h) && m.before(h[l], h[first]) {
			first = l
		}
		if r := 2*k + 2; r < len(h) && m.before(h[r], h[first]) {
			first = r
		}
		if first == k {
			return
		}
		h[k], h[first] = h[first], h[k]
		k = first
	}
}

// settle builds the heap of the positioned subs (valid says which are)
// and positions at its top.
func (m *mergedIter) settle(valid func(i int) bool) bool {
	m.heap = m.heap[:0]
	for i := range m.subs {
		if valid(i) {
			m.heap = append(m.heap, i)
		}
	}
	for k := len(m.heap)/2 - 1; k >= 0; k-- {
		m.down(k)
	}
	return m.top()
}

// top positions at the heap's top, if any.
func (m *mergedIter) top() bool {
	if len(m.heap) == 0 {
		return false
	}
	m.key = append(append(m.key[:0], m.out...), m.rest(m.heap[0])...)
	return true
}

func (m *mergedIter) First() bool {
	return m.settle(func(i int) bool { return m.subs[i].it.First() })
}

func (m *mergedIter) SeekGE(key []byte) bool {
	return m.settle(func(i int) bool {
		sub := &m.subs[i]
		return sub.it.SeekGE(m.within(*sub, key))
	})
}

func (m *mergedIter) Next() bool {
	if len(m.heap) == 0 {
		return false
	}
	if !m.subs[m.heap[0]].it.Next() {
		last := len(m.heap) - 1
		m.heap[0] = m.heap[last]
		m.heap = m.heap[:last]
	}
	if len(m.heap) > 0 {
		m.down(0)
	}
	return m.top()
}

func (m *mergedIter) Key() []byte { return m.key }

// part is the key space of the sub the iterator is positioned in: the
// pre its key was read under.
func (m *mergedIter) part() []byte { return m.subs[m.heap[0]].pre }

func (m *mergedIter) Value() []byte { return m.subs[m.heap[0]].it.Value() }

func (m *mergedIter) Err() error {
	for _, sub := range m.subs {
		if err := sub.it.Err(); err != nil {
			return err
		}
	}
	return nil
}

func (m *mergedIter) Close() error {
	var first error
	for _, sub := range m.subs {
		if err := sub.it.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
