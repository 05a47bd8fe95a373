package engine

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/fulltext"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// Ranked queries through stored words. ORDER BY RANK FullTextScore(c.path,
// terms…) ranks by BM25, whose statistics are those of every document of
// the scope: how many, their texts' words, and per term how many hold it.
// In a container that keeps text totals (containerRecord.TextTotals), over
// the whole container, with terms of one word each, those are known
// without reading the documents: the items from the sequences' states, the
// words from their text totals, and each term's documents from its word's
// entries, less what the items expired and not purged yet hold (read from
// their records: the purge backlog). A document that holds no term scores
// 0, below every one that holds some (a term's inverse document frequency
// is above 0), so the rows of a page that ranks no further than the items
// holding a term are made from those items alone: their records are read,
// in the scan's order (which orders ties), and the evaluator scores them by
// the known statistics (eval.Program.UseCorpus). A page that ranks further
// (the query's rows run out among them, short of its TOP) is read as
// before, from its whole scope.

// rankWords is what a ranked page needs of the stored words: the corpus
// and the items holding a term.
type rankWords struct {
	corpus eval.Corpus
	// locs are the live items holding a term, in scan order, and scores
	// their scores, when their entries tell them (nil otherwise).
	locs   [][]byte
	scores []float64
	term   plan.Term
	// entries is how many word entries naming them were read.
	entries int64
}

// rankByWords reads the statistics and the candidates of prog's ranked
// page in scope s through the stored words, when it can (see above) and
// the candidates are few enough to be worth it: at most a quarter of the
// scope's items. ok is false otherwise.
func rankByWords(r storage.Reader, c *containerRecord, prog *eval.Program, s *itemScope, now time.Time, st *readStats) (*rankWords, bool, error) {
	q := prog.Query()
	if !c.TextTotals || !prog.Ranked() || s.kind != plan.ScopeAll || s.listed != nil || len(q.Joins) > 0 || q.Offset != nil {
		return nil, false, nil
	}
	rank, ok := prog.TextRank()
	if !ok {
		return nil, false, nil
	}
	ord, ok := wordOrdinal(c, rank.Path)
	if !ok {
		return nil, false, nil
	}
	for _, t := range rank.Terms {
		if len(t) > 1 || len(t) == 1 && len(t[0]) > maxWordBytes {
			// A phrase is held where its words follow each other, which
			// only its documents tell; a word too long is not stored.
			return nil, false, nil
		}
	}
	totals, err := readTotals(r, c, 0)
	if err != nil {
		return nil, false, err
	}
	expired, err := expiredIn(r, c, s, now, st)
	if err != nil {
		return nil, false, err
	}
	rw := &rankWords{corpus: eval.Corpus{Docs: int(totals.items) - len(expired), Hits: make([]int, len(rank.Terms))}}
	if ord < len(totals.words) {
		rw.corpus.Words = int(totals.words[ord])
	}
	// The expired items still hold their words until the purge removes
	// them: their texts are taken off the totals, and their entries off
	// the terms' counts.
	held := make([]map[string]bool, len(rank.Terms))
	for loc := range expired {
		rec, found, err := readItemAt(r, c, []byte(loc), st)
		if err != nil {
			return nil, false, err
		}
		if !found {
			continue
		}
		body, err := document.ParseTop(rec.json, map[string]bool{rank.Path[0]: true})
		if err != nil {
			return nil, false, err
		}
		v := body.At(rank.Path)
		if v.Kind() != document.String {
			continue
		}
		ws := fulltext.Words(v.Str())
		rw.corpus.Words -= len(ws)
		for j, t := range rank.Terms {
			if len(t) == 1 && slices.Contains(ws, t[0]) {
				if held[j] == nil {
					held[j] = map[string]bool{}
				}
				held[j][loc] = true
			}
		}
	}
	bound := max(int64(rw.corpus.Docs)/4, 16)
	var words []string
	// What each live holder's entries say: per term its occurrences, and
	// its text's length; scored is false once an entry says neither.
	holders := map[string]*wordHolder{}
	scored := true
	for j, t := range rank.Terms {
		if len(t) == 0 {
			continue // no words: held by no text
		}
		ws := newWordSpan(c, s, ord, t[0])
		ws.values = true
		done, err := ws.readTo(r, s, bound+1, st)
		if err != nil {
			return nil, false, err
		}
		rw.entries += ws.n
		if !done {
			return nil, false, nil // too common: the scan costs no more
		}
		rw.corpus.Hits[j] = len(ws.locs) - len(held[j])
		if !slices.Contains(words, t[0]) {
			words = append(words, t[0])
		}
		for i, loc := range ws.locs {
			if expired[string(loc)] {
				continue // the page would drop it
			}
			h := holders[string(loc)]
			if h == nil {
				h = &wordHolder{loc: loc, tf: make([]int, len(rank.Terms))}
				holders[string(loc)] = h
			}
			tf, n, ok := decodeWordValue(ws.vals[i])
			scored = scored && ok
			h.tf[j], h.n = int(tf), int(n)
		}
		if int64(len(holders)) > bound {
			return nil, false, nil
		}
	}
	for _, h := range holders {
		rw.locs = append(rw.locs, h.loc)
	}
	slices.SortFunc(rw.locs, s.byIndexPos)
	if scored {
		rw.scores = make([]float64, len(rw.locs))
		for i, loc := range rw.locs {
			h := holders[string(loc)]
			rw.scores[i] = rw.corpus.Score(h.tf, h.n)
		}
	}
	rw.term = plan.Term{Path: rank.Path, Label: "rank by words of /" + strings.Join(rank.Path, "/") + " " + strings.Join(words, "|")}
	return rw, true, nil
}

// wordHolder is an item holding a ranked query's term, as its word
// entries tell: each term's occurrences in its text, and the text's
// length.
type wordHolder struct {
	loc []byte
	tf  []int
	n   int
}

// best returns the locations of the want holders that rank first, by
// their scores and then in scan order (as the evaluator orders ties), in
// scan order; all of them when they are no more, or when their scores are
// not known.
func (rw *rankWords) best(want int) [][]byte {
	if rw.scores == nil || want >= len(rw.locs) {
		return rw.locs
	}
	order := make([]int, len(rw.locs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rw.scores[b], rw.scores[a]) })
	order = order[:want]
	slices.Sort(order)
	out := make([][]byte, want)
	for i, k := range order {
		out[i] = rw.locs[k]
	}
	return out
}

// rankedPage makes the page of a ranked query from the items holding its
// terms (rankByWords) when they rank at least as far as the page: the
// rows they make reach past the page, or to the query's TOP. It reports
// false, the reads counted, for the page to be read otherwise; prog then
// keeps the scope's statistics, which that read would gather alike.
func rankedPage(r storage.Reader, c *containerRecord, prog *eval.Program, s *itemScope, now time.Time, st *readStats, cur, next cursor, limit int, page *FeedPage, held *heldRows) (bool, error) {
	rw, ok, err := rankByWords(r, c, prog, s, now, st)
	if err != nil || !ok {
		return false, err
	}
	prog.UseCorpus(rw.corpus)
	want := prog.Wants(cur.skip + limit + 1)
	if want < 0 {
		return false, nil // every row: every document, held or not
	}
	// The holders that rank first, as many as the page wants: every
	// holder is a row without a filter; under one, four times as many
	// again until enough pass or every holder is read. A holder left out
	// ranks below every one read, so the rows of those read that pass are
	// the first of all that pass.
	for n := want; ; n *= 4 {
		locs := rw.best(n)
		tried := &FeedPage{CollRid: page.CollRid, LSN: page.LSN}
		p := plan.WordPlan(s.kind, rw.term, rw.entries, int64(len(locs)))
		tried.Plan = &p
		passed := 0
		src := locSource(r, c, s, func() ([][]byte, error) { return locs, nil }, st)
		if err := runQuery(src, c, prog, s, now, cur, next, limit, tried, &passed, held); err != nil {
			return false, err
		}
		if passed >= want {
			*page = *tried
			return true, nil
		}
		if len(locs) == len(rw.locs) {
			return false, nil // the page ranks documents that hold no term
		}
	}
}
