package engine

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/fulltext"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// Stored words. A container created with full-text indexes keeps, for
// each item whose value at an index's path is a string, one entry per
// distinct word of it (fulltext.Words, as FullTextContains reads it):
//
//	'h' + collRid(8) + ordinal(1) + word + 0x00 + loc → ""
//
// ordinal being the path's place in containerRecord.TextPaths, fixed when
// the container was created. A word is letters and digits, so no 0x00
// within it; ordered by location, a word's items in a logical partition,
// a hierarchical prefix or a range are one span. A full-text filter
// (FullTextContains, …All, …Any on such a path, in the WHERE clause's AND
// chain) names its candidates by the items that hold the words its
// phrases need (wordLocs, groupItems): a page reads those items' records,
// in the scan's order, and the evaluator decides, phrases' word order
// included.
//
// A word longer than maxWordBytes is not stored; a filter that needs one
// reads its scope.

// maxTextPaths is how many of a container's full-text paths keep words:
// an ordinal is one byte.
const maxTextPaths = 255

// maxWordBytes bounds a stored word: a longer run of letters and digits
// (an encoded blob, say) is no word anyone searches for, and would make a
// key as long.
const maxWordBytes = 64

// textIndexPaths returns the paths of an indexing policy's full-text
// indexes, at most maxTextPaths.
func textIndexPaths(indexingPolicy document.Value) [][]string {
	var out [][]string
	for _, ix := range indexingPolicy.Get("fullTextIndexes").Array() {
		if path, ok := propertyPath(ix.Get("path")); ok && len(path) > 0 && len(out) < maxTextPaths {
			out = append(out, path)
		}
	}
	return out
}

func wordPrefix(c *containerRecord, ord int) []byte {
	return append(collPrefix(famWord, c.Rid), byte(ord))
}

// wordSpanPrefix is the prefix of word's entries at path ordinal ord.
func wordSpanPrefix(c *containerRecord, ord int, word string) []byte {
	return append(append(wordPrefix(c, ord), word...), 0)
}

// wordText is a text as its stored words hold it: its distinct words of
// at most maxWordBytes, sorted, how often each occurs, and its length in
// words, repeats and words too long to store counted, as FullTextScore
// counts them.
type wordText struct {
	words []string
	tf    []int64
	n     int64
}

// textOf returns doc's text at path as its stored words hold it: none
// unless the value there is a string.
func textOf(doc document.Value, path []string) wordText {
	v := doc.At(path)
	if v.Kind() != document.String {
		return wordText{}
	}
	ws := fulltext.Words(v.Str())
	t := wordText{n: int64(len(ws))}
	slices.Sort(ws)
	for i, w := range ws {
		switch {
		case len(w) > maxWordBytes:
		case i > 0 && ws[i-1] == w:
			t.tf[len(t.tf)-1]++
		default:
			t.words, t.tf = append(t.words, w), append(t.tf, 1)
		}
	}
	return t
}

// textWords returns the distinct stored words of doc's text at path,
// sorted; none unless the value there is a string.
func textWords(doc document.Value, path []string) []string {
	return textOf(doc, path).words
}

// entryValue is what the entry of t's word i holds: in a container that
// keeps text totals, how often the word occurs in the text and the text's
// length, so that a ranked query scores the item from its entries
// (rankwords.go); nothing otherwise.
func (t wordText) entryValue(c *containerRecord, i int) []byte {
	if !c.TextTotals {
		return nil
	}
	return binary.AppendUvarint(binary.AppendUvarint(nil, uint64(t.tf[i])), uint64(t.n))
}

// decodeWordValue reads an entry's value (entryValue): the word's
// occurrences in its text and the text's length; ok is false for an
// entry that holds neither.
func decodeWordValue(v []byte) (tf, n int64, ok bool) {
	a, k := binary.Uvarint(v)
	if k <= 0 {
		return 0, 0, false
	}
	b, m := binary.Uvarint(v[k:])
	if m <= 0 || k+m != len(v) {
		return 0, 0, false
	}
	return int64(a), int64(b), true
}

// putWords writes the word entries of the item doc stored at loc; prev,
// when defined, is the version at loc it replaces, whose entries doc's
// words no longer hold are deleted, and whose others are written again
// where they hold something else. It returns by how much each path's
// text length changed, for the text totals (nil in a container that
// keeps none).
func putWords(tx storage.Txn, c *containerRecord, doc, prev document.Value, loc []byte) ([]int64, error) {
	var grew []int64
	if c.TextTotals {
		grew = make([]int64, len(c.TextPaths))
	}
	for ord, path := range c.TextPaths {
		now, before := textOf(doc, path), wordText{}
		if prev.IsDefined() {
			before = textOf(prev, path)
		}
		if grew != nil {
			grew[ord] = now.n - before.n
		}
		for _, w := range before.words {
			if _, found := slices.BinarySearch(now.words, w); !found {
				if err := tx.Delete(append(wordSpanPrefix(c, ord, w), loc...)); err != nil {
					return nil, err
				}
			}
		}
		for i, w := range now.words {
			v := now.entryValue(c, i)
			if j, found := slices.BinarySearch(before.words, w); found && bytes.Equal(before.entryValue(c, j), v) {
				continue
			}
			if err := tx.Set(append(wordSpanPrefix(c, ord, w), loc...), v); err != nil {
				return nil, err
			}
		}
	}
	return grew, nil
}

// itemText is the stored document of rec as the word entries need it: its
// full-text paths' properties; undefined when the container stores none.
func itemText(c *containerRecord, rec *itemRecord) (document.Value, error) {
	if len(c.TextPaths) == 0 {
		return document.Undef, nil
	}
	names := map[string]bool{}
	for _, p := range c.TextPaths {
		names[p[0]] = true
	}
	return document.ParseTop(rec.json, names)
}

// deleteWords takes away the word entries of the item at loc, whose
// stored document is doc (itemText), and returns by how much each path's
// text totals fall (nil in a container that keeps none).
func deleteWords(tx storage.Txn, c *containerRecord, doc document.Value, loc []byte) ([]int64, error) {
	var fell []int64
	if c.TextTotals {
		fell = make([]int64, len(c.TextPaths))
	}
	for ord, path := range c.TextPaths {
		t := textOf(doc, path)
		if fell != nil {
			fell[ord] = -t.n
		}
		for _, w := range t.words {
			if err := tx.Delete(append(wordSpanPrefix(c, ord, w), loc...)); err != nil {
				return nil, err
			}
		}
	}
	return fell, nil
}

// wordOrdinal returns the ordinal of path among c's stored text paths.
func wordOrdinal(c *containerRecord, path []string) (int, bool) {
	for ord, p := range c.TextPaths {
		if slices.Equal(p, path) {
			return ord, true
		}
	}
	return 0, false
}

// wordRead is the choice of a full-text filter's candidates: the words
// whose items they are (for each group of groupItems, the words it read
// whole) and how many.
type wordRead struct {
	ord   int
	path  []string
	words []string
	count int64
	// entries is how many entries of the words reading them read.
	entries int64
}

// term is the plan's label of the read.
func (w wordRead) term() plan.Term {
	return plan.Term{Path: w.path, Label: "words of /" + strings.Join(w.path, "/") + " " + strings.Join(w.words, "|")}
}

// wordLocs returns the locations of the candidates of the narrowest
// full-text term of q's filter in scope s (plan.WordTerms) on a path with
// stored words, sorted by s.byIndexPos, when some term has fewer than
// limit of them: for a term that needs every phrase, the items that hold
// its phrases' words (groupItems); for one that needs any, the union of
// each phrase's. A phrase without words is in no text: a term that needs
// it has no candidates, and one that needs any phrase none from it.
func wordLocs(r storage.Reader, c *containerRecord, s *itemScope, q *ast.Query, params map[string]document.Value, limit int64, st *readStats) ([][]byte, wordRead, bool, error) {
	var best [][]byte
	var chosen wordRead
	found := false
	for _, t := range plan.WordTerms(q, params) {
		ord, ok := wordOrdinal(c, t.Path)
		if !ok {
			continue
		}
		// The word of each group whose items hold the term's candidates:
		// one group of all the phrases' words, or one per phrase.
		groups := [][]string{slices.Concat(t.Phrases...)}
		if t.Any {
			groups = t.Phrases
		}
		read := wordRead{ord: ord, path: t.Path}
		var locs [][]byte
		usable := true
		for _, g := range groups {
			if len(g) == 0 {
				if t.Any {
					continue
				}
				locs, read.words = nil, nil
				break // a phrase in no text: no candidates at all
			}
			cand, used, have, err := groupItems(r, c, s, ord, g, limit-int64(len(locs)), &read, st)
			if err != nil {
				return nil, wordRead{}, false, err
			}
			if !have {
				usable = false // every word too common, or none stored
				break
			}
			locs = append(locs, cand...)
			read.words = append(read.words, strings.Join(used, "&"))
		}
		if !usable || int64(len(locs)) >= limit {
			continue
		}
		if t.Any {
			slices.SortFunc(locs, s.byIndexPos)
			locs = slices.CompactFunc(locs, bytes.Equal)
		}
		read.count = int64(len(locs))
		best, chosen, found, limit = locs, read, true, read.count
	}
	if found {
		slices.SortFunc(best, s.byIndexPos)
	}
	return best, chosen, found, nil
}

// groupItems returns the locations of the items of scope s that hold
// every word of group at path ordinal ord, when some word has fewer than
// limit items, and the words whose items it read whole (the entries read
// are added to read.entries). Several words are read side by side, each
// going on from where it stopped, to bounds growing fourfold from 64,
// until one has fewer items than its bound: so a common word costs no
// more than four times the rarest, whatever their order. The items of the
// words read whole are the candidates, narrowed by each other word that
// has fewer than plan.WordNarrowBound of them, as its entries then cost
// less than the records they may spare.
func groupItems(r storage.Reader, c *containerRecord, s *itemScope, ord int, group []string, limit int64, read *wordRead, st *readStats) (cand [][]byte, used []string, have bool, err error) {
	var words []*wordSpan
	for _, w := range group {
		if len(w) <= maxWordBytes && !slices.ContainsFunc(words, func(ws *wordSpan) bool { return ws.word == w }) {
			words = append(words, newWordSpan(c, s, ord, w)) // a longer word is not stored
		}
	}
	take := func(ws *wordSpan) {
		slices.SortFunc(ws.locs, s.byIndexPos)
		if have {
			cand = intersectLocs(cand, ws.locs, s.byIndexPos)
		} else {
			cand, have = ws.locs, true
		}
		used = append(used, ws.word)
	}
	rest := words
	for bound := firstWordRound; !have && len(rest) > 0; bound *= 4 {
		b := min(bound, limit)
		if len(rest) == 1 {
			b = limit // a word alone has nothing to be weighed against
		}
		var common []*wordSpan
		for _, ws := range rest {
			done, err := ws.readTo(r, s, b, st)
			if err != nil {
				return nil, nil, false, err
			}
			if done {
				take(ws)
			} else if b < limit {
				common = append(common, ws)
			}
		}
		rest = common
	}
	for _, ws := range rest {
		b := min(limit, max(int64(len(cand)), plan.WordNarrowBound(int64(len(cand)))))
		done, err := ws.readTo(r, s, b, st)
		if err != nil {
			return nil, nil, false, err
		}
		if done {
			take(ws)
		}
	}
	for _, ws := range words {
		read.entries += ws.n
	}
	return cand, used, have, nil
}

// firstWordRound is the bound of groupItems' first round of reads: a few
// entries cost little beside a seek, and a rare word is read in one round.
// (A test lowers it, so that its small containers read in many rounds.)
var firstWordRound int64 = 64

// wordSpan is one word's entries in a scope as groupItems reads them: the
// span, lo where the next read goes on, and the locations read so far,
// with the entries' values when values is set (rankByWords).
type wordSpan struct {
	word   string
	prefix []byte
	lo, hi []byte
	locs   [][]byte
	values bool
	vals   [][]byte
	n      int64
}

func newWordSpan(c *containerRecord, s *itemScope, ord int, word string) *wordSpan {
	prefix := wordSpanPrefix(c, ord, word)
	lo, hi := scopeBounds(prefix, s)
	return &wordSpan{word: word, prefix: prefix, lo: lo, hi: hi}
}

// readTo reads ws's entries on until it has read bound of them in all,
// and reports whether that is all of them.
func (ws *wordSpan) readTo(r storage.Reader, s *itemScope, bound int64, st *readStats) (bool, error) {
	if ws.n >= bound {
		return false, nil
	}
	want := bound - ws.n
	var last []byte
	n := int64(0)
	err := scanSpans(r, []keySpan{{lo: ws.lo, hi: ws.hi}}, func(k, v []byte) (bool, error) {
		n++
		if loc := k[len(ws.prefix):]; s.holds(loc) {
			ws.locs = append(ws.locs, bytes.Clone(loc))
			if ws.values {
				ws.vals = append(ws.vals, bytes.Clone(v))
			}
		}
		if n == want {
			// The store may reuse k's bytes once this returns.
			last = append(bytes.Clone(k), 0) // the next key after it
			return false, st.entry()
		}
		return true, st.entry()
	})
	ws.n += n
	if err != nil || n < want {
		return err == nil, err
	}
	ws.lo = last
	return false, nil
}

// wordCandidates are the locations a full-text filter's stored words name
// in a page's scope (wordLocs), and how many entries reading them again
// reads at least.
type wordCandidates struct {
	locs    [][]byte
	entries int64
}

// wordShape reports whether the stored words may name q's candidates: the
// container stores some, and the query is neither ranked (whose
// statistics are its whole scope's) nor grouped or DISTINCT.
func wordShape(c *containerRecord, prog *eval.Program) bool {
	q := prog.Query()
	return len(c.TextPaths) > 0 && q.Where != nil && !prog.Ranked() && len(q.GroupBy) == 0 && !q.Select.Distinct
}

// countByWords answers a count (countShape) whose WHERE clause is one
// FullTextContains of a phrase of one word, on a path with stored words,
// by counting that word's entries in the scope: an item holds the phrase
// exactly when its text has the word, and has one entry for it. The
// items expired and not purged yet keep their entries, and are left out
// by their locations in the purge backlog, as countByIndex does. It
// reports false, and the count is made otherwise, for any other clause.
func countByWords(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, scope *itemScope, now time.Time, boxed bool, st *readStats, page *FeedPage) (bool, error) {
	call, ok := plan.Truth(q.Where).(*ast.Call)
	if !ok || len(c.TextPaths) == 0 || !strings.EqualFold(call.Name, "FullTextContains") {
		return false, nil
	}
	terms := plan.WordTerms(q, params)
	if len(terms) != 1 || len(terms[0].Phrases) != 1 || len(terms[0].Phrases[0]) != 1 || len(terms[0].Phrases[0][0]) > maxWordBytes {
		return false, nil
	}
	t := terms[0]
	ord, ok := wordOrdinal(c, t.Path)
	if !ok {
		return false, nil
	}
	expired, ok, err := countingScope(r, c, scope, now, st)
	if err != nil || !ok {
		return false, err
	}
	word := t.Phrases[0][0]
	prefix := wordSpanPrefix(c, ord, word)
	lo, hi := scopeBounds(prefix, scope)
	n, read, err := countLive(r, []keySpan{{lo: lo, hi: hi}}, func(k []byte) ([]byte, bool) { return k[len(prefix):], true }, scope, expired, st)
	if err != nil {
		return false, err
	}
	p := plan.IndexCountPlan(scope.kind, []plan.Term{wordRead{path: t.Path, words: []string{word}}.term()}, nil, read)
	page.Plan = &p
	page.Items = append(page.Items, partialRow(document.Int(n), boxed))
	return true, nil
}
