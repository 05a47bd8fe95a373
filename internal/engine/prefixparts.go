package engine

import (
	"bytes"

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
// there the walk steps, as before.

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

// mergesParts reports whether a walk of path's entries under scope s
// merges its partitions' entries (mergedIter): s is a hierarchical prefix
// of a few partitions, and path's partition entries are complete.
func mergesParts(r storage.Reader, c *containerRecord, path []string, s *itemScope, st *readStats) (bool, error) {
	if s.kind != plan.ScopePrefix || !c.partsReady(path) || crossesArray(path) {
		return false, nil
	}
	_, ok, err := prefixParts(r, c, s, st)
	return ok, err
}

// newPartsIter returns an iterator over path's entries under the prefix s
// in [lo, hi) (keys of the path's own entries, under prefix), backwards
// when reverse, merged from its partitions' partition entries.
func newPartsIter(r storage.Reader, c *containerRecord, path []string, s *itemScope, prefix, lo, hi []byte, reverse bool) (storage.Iterator, error) {
	m := &mergedIter{out: prefix, reverse: reverse}
	base := absentPrefix(indexPrefix(c), partMarker, path)
	for _, epk := range s.parts {
		pre := append(bytes.Clone(base), epk...)
		it, err := r.NewIter(storage.IterParams{Lower: m.within(pre, lo), Upper: m.within(pre, hi), Reverse: reverse})
		if err != nil {
			m.Close()
			return nil, err
		}
		m.subs = append(m.subs, mergedSub{it: it, pre: pre})
	}
	return m, nil
}

// mergedIter merges iterators over key spaces that each hold keys pre +
// rest into one over out + rest, in the order of rest (backwards when
// reverse). The rests of different spaces differ (an entry's rest ends
// with its item's location).
type mergedIter struct {
	subs    []mergedSub
	out     []byte
	reverse bool
	cur     int // the sub at the position; -1: none
	key     []byte
}

type mergedSub struct {
	it    storage.Iterator
	pre   []byte
	valid bool
}

// within translates a key of the merged space into sub space pre: out +
// rest is pre + rest; a key before every key under out is pre, one after
// them all is past pre's keys.
func (m *mergedIter) within(pre, k []byte) []byte {
	switch {
	case bytes.HasPrefix(k, m.out):
		return append(bytes.Clone(pre), k[len(m.out):]...)
	case bytes.Compare(k, m.out) < 0:
		return bytes.Clone(pre)
	}
	return prefixEnd(pre)
}

// settle positions at the sub whose key's rest comes first.
func (m *mergedIter) settle() bool {
	m.cur = -1
	var best []byte
	for i := range m.subs {
		sub := &m.subs[i]
		if !sub.valid {
			continue
		}
		rest := sub.it.Key()[len(sub.pre):]
		if c := bytes.Compare(rest, best); m.cur < 0 || (c < 0) != m.reverse && c != 0 {
			m.cur, best = i, rest
		}
	}
	if m.cur < 0 {
		return false
	}
	m.key = append(append(m.key[:0], m.out...), best...)
	return true
}

func (m *mergedIter) First() bool {
	for i := range m.subs {
		m.subs[i].valid = m.subs[i].it.First()
	}
	return m.settle()
}

func (m *mergedIter) SeekGE(key []byte) bool {
	for i := range m.subs {
		sub := &m.subs[i]
		sub.valid = sub.it.SeekGE(m.within(sub.pre, key))
	}
	return m.settle()
}

func (m *mergedIter) Next() bool {
	if m.cur < 0 {
		return false
	}
	sub := &m.subs[m.cur]
	sub.valid = sub.it.Next()
	return m.settle()
}

func (m *mergedIter) Key() []byte { return m.key }

func (m *mergedIter) Value() []byte { return m.subs[m.cur].it.Value() }

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
