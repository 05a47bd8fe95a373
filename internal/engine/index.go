package engine

import (
	"bytes"
	"encoding/binary"
	"math"
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
	none     bool
	included []indexPattern
	excluded []indexPattern
}

type indexPattern struct {
	segs    []string
	subtree bool // ends in "/*"
}

func parseIndexPattern(p string) (indexPattern, bool) {
	if !strings.HasPrefix(p, "/") {
		return indexPattern{}, false
	}
	var out indexPattern
	for _, seg := range strings.Split(p[1:], "/") {
		seg = strings.Trim(seg, `"`)
		switch seg {
		case "*":
			out.subtree = true
			return out, true
		case "?":
			return out, true
		case "":
			return indexPattern{}, false
		}
		out.segs = append(out.segs, seg)
	}
	out.subtree = true // a path without a wildcard covers its subtree
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
	return pol
}

// indexes reports whether a scalar at path is indexed: the most specific
// matching pattern decides, an exclusion winning a tie.
//
// System properties (_ts, _rid, …) are never in the index: the stored body
// the entries are made from does not hold them when it is written. Queries
// on them scan, and are not refused as unindexed (systemPath).
func (pol indexPolicy) indexes(path []string) bool {
	if pol.none || systemPath(path) {
		return false
	}
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
	return out
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
// type can match). Exclusive bounds are left to the evaluator's re-filter.
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
	}
	if upper != nil && upper.Value.Kind() == kind {
		k, _ := appendIndexValue(bytes.Clone(base), upper.Value)
		hi = prefixEnd(k)
	}
	return lo, hi
}
