package engine

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/plan"
)

// A continuation token is a position in the access path a query's first
// page chose, so page k costs what page 1 costs: the next page seeks to
// the position and goes on. It is opaque to clients ("mf2." and base64url)
// and holds
//
//	version(1) fingerprint(8) text(4) access(1) nterms(1) terms(n)
//	[composite(2)] indexVersion(4) uvarint(skip) uvarint(made)
//	uvarint(distinct) position check(4)
//
// where composite, the ordinal of a composite index in the policy, is
// there only for the composite access paths, and check is the CRC-32 of
// all that comes before it: a token cut short or added to is refused,
// where its position would have been read as another one.
//
// The fingerprint is a hash of the query text, its parameters and its
// scope (partition key, range), so a token given with a different query is
// refused rather than misread. The text of an ORDER BY query an SDK
// rewrote from a gateway plan is hashed with its resume filter (what
// replaced {documentdb-formattableorderbyquery-filter}) left out: an SDK
// resuming from a user's continuation sends the range's token with a
// filter on the ORDER BY values in place of "true" (orderByFilter). text
// is a hash of the exact text, which tells the engine that happened. The access path and its terms are kept so
// the next page reads the same path even if the counts the planner weighs
// have changed (a filtered stream's terms are its filter's place among
// the terms it may filter by, filterPick: the terms of a stream are found
// again from the query); the index version, so that a token taken before an
// indexing policy change goes on only where the entries it reads are the
// same under the new policy (entriesKept).
// skip counts rows of the item at the position already returned (a JOIN
// can make several rows of one item), or rows of a materialized result.
// The position of an ORDER BY the evaluator sorts is the place of the
// last row in its order (appendMark). kept names what the engine keeps
// for the page after the position: the rows a DISTINCT returned before it
// (seenSets), or the rows of a result made whole that follow it
// (heldRows); 0 for none.
type cursor struct {
	fingerprint uint64
	text        uint32
	access      plan.Access
	terms       []int
	composite   int
	indexVer    uint32
	skip        int
	pos         []byte // nil: from the start
	// made counts the rows a windowed page's stream made before pos and
	// skip (rowWindow); 0 for any other page.
	made int
	// kept is the id of what the engine keeps for this page: the set of
	// the rows a DISTINCT's pages returned up to pos (seenSets), or the
	// rows of a whole result from skip on (heldRows); 0 for none.
	kept uint64
	// partial marks a page of a GROUP BY's partial groups
	// (partialGroupsPage), whose made and skip are its own. It is the
	// token's version: 7, where every other token is of version 6, so
	// that a gateway of the version before, which would read them as an
	// offset into whole groups and count groups again, refuses it,
	// while it still takes every other token.
	partial bool
}

const (
	cursorPrefix  = "mf2."
	cursorVersion = 7 // the latest read; 6 is written unless partial
)

var errBadContinuation = errorf(BadRequest, "Invalid Continuation Token")

func (k cursor) String() string {
	b := []byte{6}
	if k.partial {
		b[0] = 7
	}
	b = binary.BigEndian.AppendUint64(b, k.fingerprint)
	b = binary.BigEndian.AppendUint32(b, k.text)
	b = append(b, byte(k.access), byte(len(k.terms)))
	for _, t := range k.terms {
		b = append(b, byte(t))
	}
	if k.access.Composite() {
		b = binary.BigEndian.AppendUint16(b, uint16(k.composite))
	}
	b = binary.BigEndian.AppendUint32(b, k.indexVer)
	b = binary.AppendUvarint(b, uint64(k.skip))
	b = binary.AppendUvarint(b, uint64(k.made))
	b = binary.AppendUvarint(b, k.kept)
	b = append(b, k.pos...)
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	return cursorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// parseCursor decodes a token and checks it belongs to the query with
// fingerprint fp.
func parseCursor(s string, fp uint64) (cursor, *Error) {
	var k cursor
	if !strings.HasPrefix(s, cursorPrefix) {
		return k, errBadContinuation
	}
	b, err := base64.RawURLEncoding.DecodeString(s[len(cursorPrefix):])
	if err == nil && len(b) >= 11 && b[0] == 2 {
		// A token of version 2, which kept no text hash: as if the text
		// were the same.
		b = slices.Concat(b[:9], binary.BigEndian.AppendUint32(nil, textUnknown), b[9:])
		b[0] = 3
	}
	// Version 3 kept no count of rows made (made): it is 0, and a
	// windowed page given such a token with an offset reads from the
	// start as those pages did. Versions 3 and 4 kept no set of a
	// DISTINCT's rows (distinct): such a token's page counts the rows
	// its skip says were returned again (streamQuery).
	var version byte
	if err == nil && len(b) > 0 {
		version = b[0]
	}
	if err != nil || len(b) < 15 || version < 3 || version > cursorVersion {
		return k, errBadContinuation
	}
	// Versions 3 to 5 kept no check. Version 7 is 6 of a page of partial
	// groups (partial).
	k.partial = version == 7
	if version >= 6 {
		n := len(b) - 4
		if n < 15 || binary.BigEndian.Uint32(b[n:]) != crc32.ChecksumIEEE(b[:n]) {
			return k, errBadContinuation
		}
		b = b[:n]
	}
	k.fingerprint = binary.BigEndian.Uint64(b[1:])
	if k.fingerprint != fp {
		return k, errorf(BadRequest, "Invalid Continuation Token: it belongs to a different query.")
	}
	k.text = binary.BigEndian.Uint32(b[9:])
	k.access = plan.Access(b[13])
	n := int(b[14])
	b = b[15:]
	// A union's terms are the query's OR, found again on every page;
	// its token holds at most the term its items are intersected with.
	if !k.access.Paged() || k.access == plan.Union && n > 1 || len(b) < n+4 {
		return k, errBadContinuation
	}
	for _, t := range b[:n] {
		k.terms = append(k.terms, int(t))
	}
	b = b[n:]
	if k.access.Composite() {
		if len(b) < 6 {
			return k, errBadContinuation
		}
		k.composite = int(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	k.indexVer = binary.BigEndian.Uint32(b)
	skip, w := binary.Uvarint(b[4:])
	if w <= 0 || skip > 1<<31 {
		return k, errBadContinuation
	}
	k.skip = int(skip)
	b = b[4+w:]
	if version >= 4 {
		made, w := binary.Uvarint(b)
		if w <= 0 || made > 1<<31 {
			return k, errBadContinuation
		}
		k.made = int(made)
		b = b[w:]
	}
	if version >= 5 {
		id, w := binary.Uvarint(b)
		if w <= 0 {
			return k, errBadContinuation
		}
		k.kept = id
		b = b[w:]
	}
	if rest := b; len(rest) > 0 {
		k.pos = slices.Clone(rest)
	}
	return k, nil
}

// textHash is the hash of a query's exact text a cursor keeps; it is
// never textUnknown, which a token from before text hashes holds.
func textHash(text string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(text))
	return max(h.Sum32(), 1)
}

const textUnknown = 0

// fingerprint hashes what makes two requests the same query: the parts
// given, then the parameters in name order.
func fingerprint(params map[string]document.Value, parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(params[n].JSON())
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// appendMark appends the encoding of a row's place in an ORDER BY the
// evaluator sorts, a sorted page's position (sortedPage):
//
//	uvarint(nkeys) { 0 | 1 uvarint(len) json }... uvarint(len) doc uvarint(row)
//
// where 0 stands for an undefined key.
func appendMark(b []byte, m eval.Mark) []byte {
	b = binary.AppendUvarint(b, uint64(len(m.Keys)))
	for _, k := range m.Keys {
		if !k.IsDefined() {
			b = append(b, 0)
			continue
		}
		j := k.JSON()
		if len(j) > maxPosValue {
			// A reference (markRef): the next page finds the key again
			// on the mark's document.
			b = append(b, 2)
			b = append(b, j[:maxPosValue]...)
			b = binary.BigEndian.AppendUint64(b, valueHash(j))
			continue
		}
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(j)))
		b = append(b, j...)
	}
	b = binary.AppendUvarint(b, uint64(len(m.Doc)))
	b = append(b, m.Doc...)
	return binary.AppendUvarint(b, uint64(m.Row))
}

// markRef is a key of a mark held as a reference, as appendMark holds a
// key whose JSON is longer than maxPosValue, so that a token stays short:
// the JSON's first maxPosValue bytes and a hash of the whole. The page that
// resumes reads the key again from the mark's document (resolveMarkRefs).
type markRef struct {
	key  int
	head []byte
	sum  uint64
}

// decodeMark decodes appendMark's encoding of a mark of nkeys keys; the
// keys held as references are Undef in the mark, and listed in refs.
func decodeMark(b []byte, nkeys int) (m eval.Mark, refs []markRef, ok bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n != uint64(nkeys) {
		return m, nil, false
	}
	b = b[w:]
	for i := range nkeys {
		if len(b) == 0 {
			return m, nil, false
		}
		defined := b[0]
		b = b[1:]
		if defined == 0 {
			m.Keys = append(m.Keys, document.Undef)
			continue
		}
		if defined == 2 {
			if len(b) < maxPosValue+8 {
				return m, nil, false
			}
			refs = append(refs, markRef{key: i, head: slices.Clone(b[:maxPosValue]), sum: binary.BigEndian.Uint64(b[maxPosValue:])})
			m.Keys = append(m.Keys, document.Undef)
			b = b[maxPosValue+8:]
			continue
		}
		size, w := binary.Uvarint(b)
		if defined != 1 || w <= 0 || size > uint64(len(b)-w) {
			return m, nil, false
		}
		k, err := document.Parse(b[w : w+int(size)])
		if err != nil {
			return m, nil, false
		}
		m.Keys = append(m.Keys, k)
		b = b[w+int(size):]
	}
	size, w := binary.Uvarint(b)
	if w <= 0 || size > uint64(len(b)-w) {
		return m, nil, false
	}
	m.Doc = slices.Clone(b[w : w+int(size)])
	b = b[w+int(size):]
	row, w := binary.Uvarint(b)
	if w <= 0 || w != len(b) || row > 1<<31 {
		return m, nil, false
	}
	m.Row = int(row)
	return m, refs, true
}
