package engine

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// The range index. Every scalar an indexing policy includes gets one entry
//
//	'x' + collRid(8) + version(4) + path + value + loc → ""
//
// written in the same transaction as the item. path and value are encoded
// so that byte order is the query language's order within a type: entries
// for one path and type are contiguous, and equality, range and prefix
// filters are range scans. Array elements are indexed under the segment
// "[]", as the policy language writes them ("/tags/[]/?").
//
// The version changes with the indexing policy; entries of older versions
// are dropped in the background, and queries use the index only while the
// container's index is complete for the current version (they scan
// otherwise), so results stay correct while an index is rebuilt.

const (
	tagNull   = 0x01
	tagFalse  = 0x02
	tagTrue   = 0x03
	tagNumber = 0x04
	tagString = 0x05
	// Arrays and objects get a bare marker entry, so an ORDER BY walk of
	// the index meets every document whose value sorts above strings.
	tagArray  = 0x06
	tagObject = 0x07
)

// appendEscaped appends s so that the encoding sorts like s and is
// self-delimiting: 0x00 is written 0x00 0xFF and the end is 0x00 0x01.
func appendEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			dst = append(dst, 0, 0xff)
		} else {
			dst = append(dst, s[i])
		}
	}
	return append(dst, 0, 1)
}

func appendIndexPath(dst []byte, path []string) []byte {
	for _, seg := range path {
		dst = appendEscaped(dst, seg)
	}
	return append(dst, 0, 0) // sorts before any further segment
}

func orderedFloat(f float64) uint64 {
	if f == 0 {
		f = 0 // fold -0
	}
	u := math.Float64bits(f)
	if u>>63 == 0 {
		return u | 1<<63
	}
	return ^u
}

// appendIndexValue encodes a scalar; ok is false for values the index does
// not hold (arrays, objects, undefined).
func appendIndexValue(dst []byte, v document.Value) ([]byte, bool) {
	switch v.Kind() {
	case document.Null:
		return append(dst, tagNull), true
	case document.Bool:
		if v.Bool() {
			return append(dst, tagTrue), true
		}
		return append(dst, tagFalse), true
	case document.Number:
		return binary.BigEndian.AppendUint64(append(dst, tagNumber), orderedFloat(v.Float())), true
	case document.String:
		return appendEscaped(append(dst, tagString), v.Str()), true
	}
	return dst, false
}

func indexPrefix(c *containerRecord) []byte {
	return binary.BigEndian.AppendUint32(collPrefix(famIndex, c.Rid), c.Index.Version)
}

// indexPolicy decides which paths are indexed.
type indexPolicy struct {
	// ts is set when the entries of _ts are complete (absent.go).
	ts         bool
	none       bool
	included   []indexPattern
	excluded   []indexPattern
	composites []compositeIndex
}

// compositeIndex is one entry of the policy's "compositeIndexes": two or
// more property paths, each ascending or descending.
type compositeIndex struct {
	ordinal int // its position in the policy, which its entries carry
	paths   [][]string
	desc    []bool
	// kept is false when the engine keeps no entries for it: a path names
	// a system property, which the index's own entries leave out. It
	// still counts for the ORDER BY check (indexcheck.go).
	kept bool
	name string // sig
}

// sig names the composite by its paths and directions, as its ordinal
// does not: a policy change may move it. It is made once, when the policy
// is read, as writes compare it with the listed composites.
func (ci *compositeIndex) sig() string { return ci.name }

// compositeName is the sig of a composite over paths in the directions
// desc. Each segment is quoted, so no two composites share a name.
func compositeName(paths [][]string, desc []bool) string {
	var b strings.Builder
	for i, p := range paths {
		if i > 0 {
			b.WriteByte(',')
		}
		for _, seg := range p {
			b.WriteByte('/')
			b.WriteString(strconv.Quote(seg))
		}
		if desc[i] {
			b.WriteString(" desc")
		} else {
			b.WriteString(" asc")
		}
	}
	return b.String()
}

type indexPattern struct {
	segs    []string
	subtree bool // ends in "/*"
}

// parseIndexPattern reads an included or excluded path: its segments, a
// quoted label ("/\"a/b\"/?") being one, then "?" or "*". The paths of
// policies stored before they were checked (checkIndexPath) are read as
// they were then: a path without a wildcard covers its subtree, and one
// with a wildcard inside ends there.
func parseIndexPattern(p string) (indexPattern, bool) {
	if p == "/*" {
		return indexPattern{subtree: true}, true
	}
	segs, err := document.ParsePath(p)
	if err != nil {
		return indexPattern{}, false
	}
	var out indexPattern
	for _, seg := range segs {
		switch seg {
		case "*":
			out.subtree = true
			return out, true
		case "?":
			return out, true
		}
		out.segs = append(out.segs, seg)
	}
	out.subtree = true
	return out, true
}

// match reports whether the pattern covers path and how specific it is.
func (p indexPattern) match(path []string) (int, bool) {
	if len(path) < len(p.segs) || (!p.subtree && len(path) != len(p.segs)) {
		return 0, false
	}
	for i, s := range p.segs {
		if s != path[i] {
			return 0, false
		}
	}
	score := 2 * len(p.segs)
	if !p.subtree {
		score++ // an exact path beats a subtree of the same depth
	}
	return score, true
}

func newIndexPolicy(ip document.Value) indexPolicy {
	var pol indexPolicy
	if strings.EqualFold(ip.Get("indexingMode").Str(), "none") {
		pol.none = true
		return pol
	}
	for _, p := range ip.Get("includedPaths").Array() {
		if pat, ok := parseIndexPattern(p.Get("path").Str()); ok {
			pol.included = append(pol.included, pat)
		}
	}
	for _, p := range ip.Get("excludedPaths").Array() {
		if pat, ok := parseIndexPattern(p.Get("path").Str()); ok {
			pol.excluded = append(pol.excluded, pat)
		}
	}
	for i, ci := range ip.Get("compositeIndexes").Array() {
		if comp, ok := parseComposite(i, ci); ok {
			pol.composites = append(pol.composites, comp)
		}
	}
	return pol
}

// propertyPath parses a policy's path that names one property (a
// composite index's, a full-text path's): a string, parsed, without a
// wildcard and not through array elements.
func propertyPath(v document.Value) ([]string, bool) {
	if v.Kind() != document.String {
		return nil, false
	}
	path, err := document.ParsePath(v.Str())
	if err != nil || slices.ContainsFunc(path, func(s string) bool { return s == "*" || s == "?" || s == "[]" }) {
		return nil, false
	}
	return path, true
}

// parseComposite reads one composite index of a policy. Paths name
// properties, with no wildcard and not through array elements, as the
// service requires; a composite that breaks the rules, or has fewer than
// two paths, is ignored.
func parseComposite(ordinal int, v document.Value) (compositeIndex, bool) {
	comp := compositeIndex{ordinal: ordinal, kept: true}
	for _, p := range v.Array() {
		path, ok := propertyPath(p.Get("path"))
		if !ok {
			return compositeIndex{}, false
		}
		comp.paths = append(comp.paths, path)
		comp.desc = append(comp.desc, strings.EqualFold(p.Get("order").Str(), "descending"))
		if systemPath(path) {
			comp.kept = false
		}
	}
	comp.name = compositeName(comp.paths, comp.desc)
	return comp, len(comp.paths) >= 2 && ordinal <= math.MaxUint16
}

// indexes reports whether a scalar at path is indexed: the most specific
// matching pattern decides, an exclusion winning a tie.
//
// System properties (_ts, _rid, …) are not among the index's own entries:
// the body a write indexes does not hold them. Only _ts is indexed, by
// entries a query on it asks for (absent.go), once they are complete;
// queries on the others scan, and are not refused as unindexed
// (systemPath).
func (pol indexPolicy) indexes(path []string) bool {
	if pol.none || systemPath(path) && !(pol.ts && slices.Equal(path, tsPath)) {
		return false
	}
	return pol.matches(path)
}

// tsListable reports whether path is _ts and the policy's paths index it,
// so that a query on it may have the index keep its entries (absent.go).
func (pol indexPolicy) tsListable(path []string) bool {
	return !pol.none && slices.Equal(path, tsPath) && pol.matches(path)
}

// matches reports whether the policy's included and excluded paths index
// path.
func (pol indexPolicy) matches(path []string) bool {
	best, incl := -1, false
	for _, p := range pol.included {
		if s, ok := p.match(path); ok && s > best {
			best, incl = s, true
		}
	}
	for _, p := range pol.excluded {
		if s, ok := p.match(path); ok && s >= best {
			best, incl = s, false
		}
	}
	return incl
}

// indexEntries returns the index keys of a document.
func indexEntries(c *containerRecord, doc document.Value, loc []byte) [][]byte {
	if c.index.none {
		return nil
	}
	prefix := indexPrefix(c)
	var out [][]byte
	var path []string
	var walk func(v document.Value)
	marker := func(tag byte) {
		if len(path) == 0 || !c.index.indexes(path) {
			return
		}
		k := append(appendIndexPath(bytes.Clone(prefix), path), tag)
		out = append(out, append(k, loc...))
	}
	walk = func(v document.Value) {
		switch v.Kind() {
		case document.Object:
			marker(tagObject)
			for _, f := range v.Fields() {
				if len(path) == 0 && isSystemProp(f.Name) {
					continue
				}
				path = append(path, f.Name)
				walk(f.Value)
				path = path[:len(path)-1]
			}
		case document.Array:
			marker(tagArray)
			path = append(path, "[]")
			for _, e := range v.Array() {
				walk(e)
			}
			path = path[:len(path)-1]
		default:
			if !c.index.indexes(path) {
				return
			}
			k := appendIndexPath(bytes.Clone(prefix), path)
			k, ok := appendIndexValue(k, v)
			if ok {
				out = append(out, append(k, loc...))
			}
		}
	}
	walk(doc)
	out = append(out, absentEntries(c, prefix, doc, loc)...)
	for i := range c.index.composites {
		if k, ok := compositeEntry(prefix, &c.index.composites[i], doc, loc); ok {
			out = append(out, k)
		}
	}
	return out
}

// The composite index. Each composite index of the policy gets one entry
// per item whose every path holds a scalar:
//
//	'x' + collRid(8) + version(4) + 0x00 0x03 + ordinal(2) + value… + loc
//
// with one value per path, in the composite's order, encoded as the range
// index encodes it, every byte inverted for a descending path. The value
// encoding is prefix-free, so inverting it reverses its order, and the
// concatenation sorts by the first path, then the second, each in its own
// direction: a walk of the composite in key order (or backwards) is the
// order of an ORDER BY over its paths (or over them all reversed), and
// equalities on its leading paths with a range on the next one are one
// contiguous span. The marker 0x00 0x03 cannot begin a path's encoding
// (which begins with a segment byte, the escape 0x00 0xFF, or the end
// 0x00 0x00), so composite entries never fall among single-path ones
// and live in the same version space: the rebuild and the drop of old
// versions treat them alike.
//
// Items where a path is undefined, an array or an object get no entry.
// The query language sorts undefined first and arrays and objects after
// strings, but the service does not document what its composite index
// holds for them; the planner uses a composite only when the WHERE clause
// bounds every one of its paths to a scalar, so such items cannot be in
// the answer (plan.CompositeUses).
var compositeMarker = []byte{0, 3}

// compositePrefix is where the entries of composite ordinal begin, under
// an index prefix.
func compositePrefix(indexPrefix []byte, ordinal int) []byte {
	return ordinalPrefix(indexPrefix, compositeMarker, ordinal)
}

// ordinalPrefix is where the entries of one kind (marker) of composite
// ordinal begin, under an index prefix.
func ordinalPrefix(indexPrefix, marker []byte, ordinal int) []byte {
	k := append(bytes.Clone(indexPrefix), marker...)
	return binary.BigEndian.AppendUint16(k, uint16(ordinal))
}

// compositeEntry is an item's entry in a composite index; ok is false
// when a path does not hold a scalar.
func compositeEntry(indexPrefix []byte, comp *compositeIndex, doc document.Value, loc []byte) ([]byte, bool) {
	if !comp.kept {
		return nil, false
	}
	k := compositePrefix(indexPrefix, comp.ordinal)
	for i, p := range comp.paths {
		var ok bool
		if k, ok = appendCompositeValue(k, doc.At(p), comp.desc[i]); !ok {
			return nil, false
		}
	}
	return append(k, loc...), true
}

// appendCompositeValue encodes a scalar as appendIndexValue does, every
// byte inverted when desc.
func appendCompositeValue(dst []byte, v document.Value, desc bool) ([]byte, bool) {
	start := len(dst)
	dst, ok := appendIndexValue(dst, v)
	if desc {
		invert(dst[start:])
	}
	return dst, ok
}

func invert(b []byte) {
	for i := range b {
		b[i] = ^b[i]
	}
}

// systemPath reports whether path is a system property of the item.
func systemPath(path []string) bool { return len(path) == 1 && isSystemProp(path[0]) }

func isSystemProp(name string) bool {
	switch name {
	case "_rid", "_self", "_etag", "_attachments", "_ts", "_lsn":
		return true
	}
	return false
}

func (e *Engine) putIndexEntries(tx storage.Txn, c *containerRecord, doc document.Value, loc []byte) error {
	for _, k := range indexEntries(c, doc, loc) {
		if err := tx.Set(k, nil); err != nil {
			return err
		}
	}
	return nil
}

// rangeSpan turns lower and upper bounds on one path into a key span within
// the bound's type (comparisons across types are undefined, so no other
// type can match). An exclusive bound's entries are left out when they
// hold that value alone (exactValue): a walk that read them would read
// the records of a group no row comes from (WHERE c.s > 's5' ORDER BY
// c.s, c.n read every document of 's5'). Those of a number 2^53 or more
// hold its neighbours too, and are left to the evaluator's re-filter.
func rangeSpan(base []byte, lower, upper *plan.Predicate, kind document.Kind) ([]byte, []byte) {
	tag := byte(tagNumber)
	if kind == document.String {
		tag = tagString
	}
	typeLo := append(bytes.Clone(base), tag)
	typeHi := prefixEnd(typeLo)
	lo, hi := typeLo, typeHi
	if lower != nil && lower.Value.Kind() == kind {
		k, _ := appendIndexValue(bytes.Clone(base), lower.Value)
		lo = k
		if lower.Op == plan.Gt && exactValue(k[len(base):]) {
			lo = prefixEnd(k)
		}
	}
	if upper != nil && upper.Value.Kind() == kind {
		k, _ := appendIndexValue(bytes.Clone(base), upper.Value)
		hi = prefixEnd(k)
		if upper.Op == plan.Lt && exactValue(k[len(base):]) {
			hi = k
		}
	}
	return lo, hi
}
