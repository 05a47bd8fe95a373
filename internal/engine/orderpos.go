package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// A position of the ordered stream's walk holds the value of the group it
// stopped in, as the index encodes it, and the mark of an ORDER BY sorted
// in memory the ORDER BY keys of the last row its page went past. A string
// of many kilobytes would make a token of as many, past the 16 KB of
// response headers a Node.js client accepts. So a token holds a value
// longer than maxPosValue bytes as a reference: its first maxPosValue
// bytes and a hash of the whole.
//
// The walk finds the value among the path's entries that start with those
// bytes (resolveWalkPos). When no entry has it any more (the items the
// last page ended before were deleted or changed), the walk goes on from the values
// around it: past every value with those first bytes, or before them when
// descending, if none is there, which is where the value was; otherwise
// the position is in doubt and the token is refused. A mark's keys are
// read again from its document (resolveMarkRefs), and refused when the
// document changed.

// maxPosValue is the most bytes of a value a position holds as they are:
// a token of one such value and the rest of a position is well within
// 16 KB.
const maxPosValue = 4096

// tagValueRef marks a reference in place of a value; no value's encoding
// starts with it.
const tagValueRef = 0xFE

// compactWalkPos returns pos with its value, when a string longer than
// maxPosValue, as a reference.
func compactWalkPos(pos []byte) []byte {
	if len(pos) < 2 || pos[0] != phaseWalk || pos[1] != tagString {
		return pos
	}
	n := indexValueLen(pos[1:])
	if n <= maxPosValue+1 {
		// One byte more keeps whole the 0x00 0x01 that ends every
		// string, so that a reference's first bytes ending in 0x00 end
		// inside an escaped 0x00 (resolveWalkPos).
		return pos
	}
	value := pos[1 : 1+n]
	out := append([]byte{phaseWalk, tagValueRef}, value[:maxPosValue]...)
	out = binary.BigEndian.AppendUint64(out, valueHash(value))
	return append(out, pos[1+n:]...)
}

func valueHash(value []byte) uint64 {
	h := fnv.New64a()
	h.Write(value)
	return h.Sum64()
}

// resolveWalkPos returns pos with its reference, if it holds one, replaced
// by the value it names (compactWalkPos), found among the walk's entries.
func (w *orderStream) resolveWalkPos(pos []byte) ([]byte, error) {
	if len(pos) < 2 || pos[0] != phaseWalk || pos[1] != tagValueRef {
		return pos, nil
	}
	if len(pos) < 2+maxPosValue+8 {
		return nil, errBadContinuation
	}
	head := pos[2 : 2+maxPosValue]
	if head[len(head)-1] == 0 {
		// Cut inside an escaped 0x00 (0x00 0xFF): the values with these
		// first bytes are those with the whole escape.
		head = append(bytes.Clone(head), 0xFF)
	}
	found, others, err := w.findValue(head, binary.BigEndian.Uint64(pos[2+maxPosValue:]))
	if err != nil {
		return nil, err
	}
	rest := pos[2+maxPosValue+8:]
	switch {
	case found != nil:
		return append(append([]byte{phaseWalk}, found...), rest...), nil
	case others:
		return nil, errorf(BadRequest, "Invalid Continuation Token: the value the last page ended at is no longer there; run the query again.")
	}
	// Where the value was: a group no entry holds, just past (ascending)
	// or at the start of (descending) the values with its first bytes.
	var at []byte
	if w.desc {
		at = append(bytes.Clone(head), 0, 1)
	} else {
		at = append(prefixEnd(head), 0, 1)
	}
	return append(append([]byte{phaseWalk}, at...), modeGroup), nil
}

// findValue returns the value among the walk's entries that starts with
// head and has hash want; others says some other value starts with head.
// One iterator steps from value to value: a store may read the entries
// of values that share their first bytes together (pgstore's long keys),
// and a seek within what it has read costs nothing there.
func (w *orderStream) findValue(head []byte, want uint64) (found []byte, others bool, err error) {
	base := len(w.prefix)
	from := append(bytes.Clone(w.prefix), head...)
	it, err := w.r.NewIter(storage.IterParams{Lower: from, Upper: prefixEnd(from)})
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	for ok := it.First(); ok; {
		w.st.entries++
		k := it.Key()
		n := indexValueLen(k[base:])
		if n <= 0 {
			break
		}
		value := k[base : base+n]
		if valueHash(value) == want {
			return bytes.Clone(value), others, it.Err()
		}
		others = true
		past := prefixEnd(append(bytes.Clone(w.prefix), value...))
		if past == nil {
			break
		}
		ok = it.SeekGE(past)
	}
	return nil, others, it.Err()
}

// resolveMarkRefs puts back the keys of m, the mark of an ORDER BY sorted
// in memory, that its token holds as references (markRef): they are read
// again from the mark's document, row m.Row of the rows prog makes of it,
// with the ORDER BY keys for the row. If the document is gone, or a key is
// no longer the one the reference names, the mark's place among the rows
// is in doubt, and the token is refused.
func resolveMarkRefs(r storage.Reader, c *containerRecord, prog *eval.Program, s *itemScope, now time.Time, st *readStats, m *eval.Mark, refs []markRef) error {
	gone := errorf(BadRequest, "Invalid Continuation Token: the item the last page ended at has changed; run the query again.")
	loc := m.Doc
	if s.kind != plan.ScopePartition && s.kind != plan.ScopePrefix {
		// The scan position is the sequence; its _rid-order entry has
		// the location.
		if len(m.Doc) != 8 {
			return errBadContinuation
		}
		st.entries++
		raw, err := r.Get(byRidKey(c.Rid, binary.BigEndian.Uint64(m.Doc)))
		if errors.Is(err, storage.ErrNotFound) {
			return gone
		}
		if err != nil {
			return err
		}
		loc = raw
	}
	rec, ok, err := readItemAt(r, c, loc, st)
	if err != nil {
		return err
	}
	if !ok || c.expired(&rec, now) || !s.keeps(&rec) {
		return gone
	}
	doc, err := document.Parse(rec.json)
	if err != nil {
		return err
	}
	q := *prog.Query()
	keys := make([]ast.Expr, len(q.OrderBy))
	for i, o := range q.OrderBy {
		keys[i] = o.Expr
	}
	q.Select, q.OrderBy = ast.Select{Value: &ast.ArrayLit{Elems: keys}}, nil
	kp, err := prog.Derive(&q)
	if err != nil {
		return queryError(err)
	}
	rows, err := kp.Rows(doc, docMeta(loc))
	if err != nil {
		return queryError(err)
	}
	if m.Row >= len(rows) {
		return gone
	}
	for _, ref := range refs {
		k := rows[m.Row].Index(ref.key)
		j := k.JSON()
		if len(j) <= maxPosValue || !bytes.Equal(j[:maxPosValue], ref.head) || valueHash(j) != ref.sum {
			return gone
		}
		m.Keys[ref.key] = k
	}
	return nil
}

// withoutFirstKey returns pos, a position of the walk inside a group of a
// long string's documents sorted by the other ORDER BY keys, with the
// first key left out of its sort key (Undef, which no walked value is):
// it is the walk's value, which the position holds already, as a
// reference (compactWalkPos). groupFrom puts it back.
func (w *orderStream) withoutFirstKey(pos []byte) []byte {
	if len(w.keys) < 2 || len(pos) < 2 || pos[0] != phaseWalk || pos[1] != tagString {
		return pos
	}
	n := indexValueLen(pos[1:])
	if n <= maxPosValue || len(pos) < 3+n || pos[1+n] != modeKeys {
		return pos
	}
	k, ok := parseSortKey(pos[2+n:], len(w.keys))
	if !ok || k.keys[0].Kind() != document.String {
		return pos
	}
	k.keys[0] = document.Undef
	return appendSortKey(bytes.Clone(pos[:2+n]), k)
}

// indexString decodes the index's encoding of a string.
func indexString(value []byte) (string, bool) {
	if len(value) < 3 || value[0] != tagString || indexValueLen(value) != len(value) {
		return "", false
	}
	b := make([]byte, 0, len(value)-3)
	for i := 1; i < len(value)-2; i++ {
		b = append(b, value[i])
		if value[i] == 0 {
			i++ // the 0xFF of an escaped 0x00
		}
	}
	return string(b), true
}
