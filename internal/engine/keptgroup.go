package engine

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"slices"
	"sort"
)

// A sorted group a page kept for the next (keptCandidates.group) holds
// its members from the page's end on, in their order, each as its
// location and its encoded sort key (appendSortKey). The next page parses
// only the keys it reaches, and keeps the rest for the page after it as
// the same slices, so a page costs its own members, not the group's.
//
// Writes since are taken in without sorting the group again: the members
// written since stay where they were but are passed over (gone), and the
// written items that belong to the group at or after the page's position
// are placed anew among a few members kept beside the rest in their own
// order (extra), which a page merges with the others as it goes. Once
// those two outgrow an eighth of the rest (or countStep), the page that
// keeps the group merges them in.

// keptMember is a member of a kept group placed after a write: its
// location and encoded sort key.
type keptMember struct{ loc, key []byte }

// queuedMember is a member of a kept group a page reached: parsed, with its
// encoded key, and whether it is one of the members as kept (base, at
// index i of them) or one placed since.
type queuedMember struct {
	sortMember
	key  []byte
	base bool
	i    int
}

// memberQueue gives a kept group's members in their order: those kept
// (locs and keys) from index i on but for those gone, merged with extra.
type memberQueue struct {
	w          *orderStream
	locs, keys [][]byte
	i          int
	gone       map[string]struct{}
	extra      []queuedMember
	head       *queuedMember // member i, parsed, while it waits for its turn
}

var errKeptKey = errors.New("a kept group member's sort key does not parse")

// queueKept returns the members of the kept group g (of the encoded first
// value, nil for the documents without the first key) from at on, with
// the items written since placed anew: each is read, and placed as a
// sort of the group would place it if it now belongs to the group and
// sorts at or after at. ok is false when it cannot: the page reads the
// group whole.
func (w *orderStream) queueKept(g *keptCandidates, value []byte, at *sortKey) (q *memberQueue, ok bool) {
	q = &memberQueue{w: w, locs: g.locs, keys: g.keys, gone: g.gone}
	written := make(map[string]struct{}, len(g.written))
	for _, loc := range g.written {
		written[string(loc)] = struct{}{}
	}
	if len(written) > 0 {
		q.gone = maps.Clone(g.gone)
		if q.gone == nil {
			q.gone = make(map[string]struct{}, len(written))
		}
		maps.Copy(q.gone, written)
	}
	n := len(w.keys)
	for _, m := range g.extra {
		if _, ok := written[string(m.loc)]; ok {
			continue
		}
		k, ok := parseSortKey(m.key, n)
		if !ok {
			return nil, false
		}
		if w.compareSort(k, *at) >= 0 {
			q.extra = append(q.extra, queuedMember{sortMember: sortMember{sortKey: k, loc: m.loc}, key: m.key})
		}
	}
	for _, loc := range g.written {
		doc, rows, found, err := w.memberRows(value, loc)
		if err != nil {
			return nil, false
		}
		if !found || len(rows) == 0 {
			continue
		}
		if m := w.member(doc, loc, rows); w.compareSort(m.sortKey, *at) >= 0 {
			// Its rows go with it: the page that reaches it reads it no
			// more.
			q.extra = append(q.extra, queuedMember{sortMember: m, key: appendSortKey(nil, m.sortKey)})
		}
	}
	slices.SortFunc(q.extra, func(a, b queuedMember) int { return w.compareSort(a.sortKey, b.sortKey) })
	bad := false
	q.i = sort.Search(len(q.keys), func(i int) bool {
		k, ok := parseSortKey(q.keys[i], n)
		bad = bad || !ok
		return !ok || w.compareSort(k, *at) >= 0
	})
	return q, !bad
}

// pull returns up to n of the next members, in their order.
func (q *memberQueue) pull(n int) ([]queuedMember, error) {
	var out []queuedMember
	for len(out) < n {
		if q.head == nil {
			for q.i < len(q.locs) {
				if _, gone := q.gone[string(q.locs[q.i])]; !gone {
					break
				}
				q.i++
			}
			if q.i < len(q.locs) {
				k, ok := parseSortKey(q.keys[q.i], len(q.w.keys))
				if !ok {
					return nil, errKeptKey
				}
				q.head = &queuedMember{sortMember: sortMember{sortKey: k, loc: q.locs[q.i]}, key: q.keys[q.i], base: true, i: q.i}
			}
		}
		switch {
		case q.head != nil && (len(q.extra) == 0 || q.w.compareSort(q.head.sortKey, q.extra[0].sortKey) < 0):
			out = append(out, *q.head)
			q.head = nil
			q.i++
		case len(q.extra) > 0:
			out = append(out, q.extra[0])
			q.extra = q.extra[1:]
		default:
			return out, nil
		}
	}
	return out, nil
}

// keepQueue keeps, for the next page, the members of q from rest (the
// members q gave that the page did not finish, in their order) on.
func (w *orderStream) keepQueue(prefix []byte, q *memberQueue, rest []queuedMember) {
	if !w.keepsGroups() {
		return
	}
	i := q.i
	var extra []queuedMember
	for _, m := range rest {
		if m.base {
			i = min(i, m.i)
		} else {
			extra = append(extra, m)
		}
	}
	extra = append(extra, q.extra...)
	k := &keptCandidates{group: bytes.Clone(prefix), locs: q.locs[i:], keys: q.keys[i:], gone: q.gone}
	if len(q.gone)+len(extra) > max(countStep, len(k.locs)/8) {
		// Merged in: the rest as one list in its order again.
		all, err := (&memberQueue{w: w, locs: k.locs, keys: k.keys, gone: q.gone, extra: extra}).pull(math.MaxInt)
		if err != nil {
			return // kept for nothing: the next page sorts the group
		}
		k.locs, k.keys, k.gone = make([][]byte, len(all)), make([][]byte, len(all)), nil
		for j, m := range all {
			k.locs[j], k.keys[j] = m.loc, m.key
		}
		extra = nil
	}
	for _, m := range extra {
		k.extra = append(k.extra, keptMember{loc: m.loc, key: m.key})
	}
	w.keepWithFilter(k)
}

// keepWithFilter keeps k, a group the page ends inside, for the next
// page, with the locations of a filtered stream's term, which the next
// page filters by too.
func (w *orderStream) keepWithFilter(k *keptCandidates) {
	k.set, w.groupKept = w.filter, true
	w.kept.keep(w.next, k)
}

// keepsGroups reports whether the page keeps a group it ends inside for
// the next.
func (w *orderStream) keepsGroups() bool {
	return w.kept.k != nil && w.next.kept != 0 && w.page.Continuation != ""
}

// keepGroup keeps the members of a group the page sorted, from the one it
// ended at, for the next page: their locations and sort keys, in their
// order.
func (w *orderStream) keepGroup(prefix []byte, rest []sortMember) {
	if !w.keepsGroups() {
		return
	}
	k := &keptCandidates{group: bytes.Clone(prefix), locs: make([][]byte, len(rest)), keys: make([][]byte, len(rest))}
	for i, m := range rest {
		k.locs[i], k.keys[i] = m.loc, appendSortKey(nil, m.sortKey)
	}
	w.keepWithFilter(k)
}

// keptGroup streams, from at, the rows of the sorted group of prefix
// (the walk's phase and value, or the documents without the first key)
// that the page before kept (keepGroup, keepQueue), reading only the
// records of the members it reaches. ok is false when nothing of the
// group is kept: the page reads the group's documents again to sort them.
func (w *orderStream) keptGroup(prefix []byte, at *sortKey, skip int) (more, ok bool, err error) {
	g := w.group0
	if g == nil || !bytes.Equal(g.group, prefix) {
		return false, false, nil
	}
	w.group0 = nil
	var value []byte
	if prefix[0] == phaseWalk {
		value = prefix[1:]
	}
	q, ok := w.queueKept(g, value, at)
	if !ok {
		return false, false, nil
	}
	stop := func(m queuedMember, skip int, rest []queuedMember) {
		w.stop(append(append(bytes.Clone(prefix), modeKeys), m.key...), skip)
		w.keepQueue(prefix, q, rest)
	}
	for {
		batch, err := q.pull(max(w.room(), 1))
		if err != nil {
			return false, true, err
		}
		if len(batch) == 0 {
			return true, true, nil
		}
		// The members still to read, which the walk reads ahead of
		// itself: a written one placed above holds its rows.
		unread := make([][]byte, 0, len(batch))
		for _, m := range batch {
			if m.rows == nil {
				unread = append(unread, m.loc)
			}
		}
		for j, m := range batch {
			rows, found, err := m.rows, true, error(nil)
			if rows == nil {
				if err := w.fetch(unread, w.room()); err != nil {
					return false, true, err
				}
				unread = unread[1:]
				_, rows, found, err = w.memberRows(value, m.loc)
			}
			if w.cutShort(err) {
				stop(m, 0, batch[j:])
				return false, true, nil
			}
			if err != nil {
				return false, true, queryError(err)
			}
			w.visited = true
			if !found {
				continue
			}
			first := 0
			if w.compareSort(m.sortKey, *at) == 0 {
				first = skip
			}
			for r := first; r < len(rows); r++ {
				if !w.put(rows[r]) {
					stop(m, r, batch[j:])
					return false, true, nil
				}
			}
		}
	}
}
