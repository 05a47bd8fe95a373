package eval

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/fulltext"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/query/vector"
)

// ORDER BY RANK orders rows best first by a scoring function:
//
//	ORDER BY RANK FullTextScore(c.text, 'term', ...)
//	ORDER BY RANK RRF(FullTextScore(c.a, ...), VectorDistance(c.v, [...]), ...[, [w1, w2]])
//
// (ORDER BY RANK VectorDistance(...) is read as ORDER BY VectorDistance,
// which orders the most similar first: parser.)
//
// FullTextScore is BM25 (k1 1.2, b 0.75) of the terms in the text at a
// property path. A term is a word or a phrase; its frequency in a document
// is how often its words occur there one after another, compared as
// FullTextContains compares them. The statistics BM25 needs (documents,
// their average length, and how many documents hold each term) are those of
// every document the query reads, which the engine makes the query's whole
// scope. RRF fuses the components by reciprocal rank: each row gets, per
// component, its dense rank by that component's score, best first, and its
// fused score is the sum of weight / (60 + rank). A VectorDistance
// component ranks most similar first (package vector), rows without a
// score last; a negative weight ranks its component the other way round,
// with the weight's magnitude. This is the fusion the SDKs apply across
// partitions.
//
// A score is only known once every document has been read, so a ranked
// query holds its rows until the end, as any ORDER BY without a known end
// does.

// rankSpec is a compiled ORDER BY RANK.
type rankSpec struct {
	alias   string // the FROM alias the component paths start at
	comps   []rankComp
	weights []float64 // one per component; nil for a single FullTextScore
}

// rankComp is one FullTextScore, or one VectorDistance in RRF.
type rankComp struct {
	path  ast.Expr
	terms [][]string // the words of each term
	vec   *ast.Call  // the VectorDistance call, for a vector component
}

// Parameters of BM25 and of reciprocal rank fusion.
const (
	bm25K1   = 1.2
	bm25B    = 0.75
	rrfConst = 60
)

// corpus is the statistics of the documents a ranked query read.
type corpus struct {
	docs  int
	words []int   // per component: the words of all documents
	hits  [][]int // per component and term: the documents holding it
}

// rankFeatures is what one row contributes to its score: per full-text
// component, each term's frequency and the text's length in words; per
// vector component, the row's score (undefined when it has none).
type rankFeatures struct {
	tf  [][]int
	dl  []int
	vec []document.Value
}

func isScoring(name string) bool {
	switch strings.ToLower(name) {
	case "fulltextscore", "rrf":
		return true
	}
	return false
}

// rank compiles the expression of ORDER BY RANK in the top-level query q.
func (c *compiler) rank(q *ast.Query, cq *compiled, e ast.Expr, names []string, top bool) error {
	if !top || len(q.OrderBy) != 1 {
		return errAt(e, "SC2241", "ORDER BY RANK must be the only ORDER BY item of the top-level query.")
	}
	if q.From == nil {
		return errAt(e, "SC2241", "ORDER BY RANK needs a query over the container's items (FROM c).")
	}
	if from, ok := q.From.Expr.(*ast.Ident); q.From.Iterate || !ok || from.Name != cq.container {
		return errAt(e, "SC2241", "ORDER BY RANK needs a query over the container's items (FROM c).")
	}
	call, ok := e.(*ast.Call)
	if !ok || call.UDF || !isScoring(call.Name) {
		return errAt(e, "SC2242", "ORDER BY RANK takes a scoring function: FullTextScore, VectorDistance or RRF.")
	}
	spec := &rankSpec{alias: q.From.Alias}
	if strings.EqualFold(call.Name, "fulltextscore") {
		comp, err := c.fullTextScore(call, names, spec.alias)
		if err != nil {
			return err
		}
		spec.comps = append(spec.comps, comp)
	} else {
		for i, a := range call.Args {
			sub, ok := a.(*ast.Call)
			if ok && !sub.UDF && strings.EqualFold(sub.Name, "fulltextscore") {
				comp, err := c.fullTextScore(sub, names, spec.alias)
				if err != nil {
					return err
				}
				spec.comps = append(spec.comps, comp)
				continue
			}
			if v, ok := vector.IsCall(a); ok {
				if err := c.expr(v, names, nil); err != nil {
					return err
				}
				spec.comps = append(spec.comps, rankComp{vec: v})
				continue
			}
			if i == len(call.Args)-1 && i > 0 {
				w, err := c.weights(a, len(spec.comps))
				if err != nil {
					return err
				}
				spec.weights = w
				continue
			}
			return errAt(a, "SC2242", "The arguments of RRF are scoring functions (FullTextScore, VectorDistance), and then an optional array of weights.")
		}
		if len(spec.comps) == 0 {
			return errAt(e, "SC2050", "The RRF function requires at least 1 scoring function argument(s).")
		}
		if spec.weights == nil {
			spec.weights = make([]float64, len(spec.comps))
			for i := range spec.weights {
				spec.weights[i] = 1
			}
		}
	}
	cq.rank = spec
	return nil
}

// fullTextScore compiles FullTextScore(path, term, ...).
func (c *compiler) fullTextScore(call *ast.Call, names []string, alias string) (rankComp, error) {
	if len(call.Args) < 2 {
		return rankComp{}, errAt(call, "SC2050", "The FULLTEXTSCORE function requires at least 2 argument(s).")
	}
	path := call.Args[0]
	if id, ok := ast.PathRoot(path); !ok || id.Name != alias || path == ast.Expr(id) {
		return rankComp{}, errAt(path, "SC2243", "The first argument of FullTextScore must be a property path of the container's items.")
	}
	if err := c.expr(path, names, nil); err != nil {
		return rankComp{}, err
	}
	comp := rankComp{path: path}
	for _, a := range call.Args[1:] {
		// The terms come as strings, or (as the service's first
		// documentation wrote them) in an array of strings.
		var vals []document.Value
		if lit, ok := a.(*ast.ArrayLit); ok {
			for _, x := range lit.Elems {
				v, ok := c.constant(x)
				if !ok {
					v = document.Undef
				}
				vals = append(vals, v)
			}
		} else if v, ok := c.constant(a); ok && v.Kind() == document.Array {
			vals = v.Array()
		} else if ok {
			vals = []document.Value{v}
		}
		if len(vals) == 0 {
			return rankComp{}, errAt(a, "SC2243", "The terms of FullTextScore must be string literals or parameters.")
		}
		for _, v := range vals {
			if v.Kind() != document.String {
				return rankComp{}, errAt(a, "SC2243", "The terms of FullTextScore must be string literals or parameters.")
			}
			comp.terms = append(comp.terms, fulltext.Words(v.Str()))
		}
	}
	return comp, nil
}

// weights compiles RRF's array of component weights.
func (c *compiler) weights(e ast.Expr, n int) ([]float64, error) {
	var vals []document.Value
	if lit, ok := e.(*ast.ArrayLit); ok {
		for _, x := range lit.Elems {
			v, ok := c.constant(x)
			if !ok {
				return nil, errAt(x, "SC2244", "The weights of RRF must be numbers.")
			}
			vals = append(vals, v)
		}
	} else if v, ok := c.constant(e); ok && v.Kind() == document.Array {
		vals = v.Array()
	} else {
		return nil, errAt(e, "SC2244", "The last argument of RRF must be an array of weights, one per scoring function.")
	}
	if len(vals) != n {
		return nil, errAt(e, "SC2244", "RRF has %d scoring function(s) but %d weight(s).", n, len(vals))
	}
	out := make([]float64, n)
	for i, v := range vals {
		if v.Kind() != document.Number {
			return nil, errAt(e, "SC2244", "The weights of RRF must be numbers.")
		}
		out[i] = v.Float()
	}
	return out, nil
}

// constant returns the value of a constant expression (ast.Constant).
func (c *compiler) constant(e ast.Expr) (document.Value, bool) {
	return ast.Constant(e, c.prog.params)
}

// text returns the words at a component's path in the row s.
func (c *ctx) text(comp *rankComp, s scope) ([]string, error) {
	v, err := c.eval(comp.path, s)
	if err != nil || v.Kind() != document.String {
		return nil, err
	}
	if err := c.charge(len(v.Str()) / 64); err != nil {
		return nil, err
	}
	return fulltext.Words(v.Str()), nil
}

// count adds a document read by a ranked query to the statistics.
func (st *corpus) count(c *ctx, spec *rankSpec, doc document.Value) error {
	if st.words == nil {
		st.words = make([]int, len(spec.comps))
		st.hits = make([][]int, len(spec.comps))
		for i, comp := range spec.comps {
			st.hits[i] = make([]int, len(comp.terms))
		}
	}
	st.docs++
	s := scope{{spec.alias, doc}}
	for i := range spec.comps {
		comp := &spec.comps[i]
		if comp.vec != nil {
			continue
		}
		text, err := c.text(comp, s)
		if err != nil {
			return err
		}
		st.words[i] += len(text)
		for j, t := range comp.terms {
			if occurrences(text, t) > 0 {
				st.hits[i][j]++
			}
		}
	}
	return nil
}

// features computes what row s contributes to its score.
func (c *ctx) features(spec *rankSpec, s scope) (*rankFeatures, error) {
	f := &rankFeatures{tf: make([][]int, len(spec.comps)), dl: make([]int, len(spec.comps))}
	for i := range spec.comps {
		comp := &spec.comps[i]
		if comp.vec != nil {
			v, err := c.eval(comp.vec, s)
			if err != nil {
				return nil, err
			}
			if f.vec == nil {
				f.vec = make([]document.Value, len(spec.comps))
			}
			f.vec[i] = v
			continue
		}
		text, err := c.text(comp, s)
		if err != nil {
			return nil, err
		}
		f.dl[i] = len(text)
		f.tf[i] = make([]int, len(comp.terms))
		for j, t := range comp.terms {
			f.tf[i][j] = occurrences(text, t)
		}
	}
	return f, nil
}

// occurrences counts where the words of term occur one after another in
// text.
func occurrences(text, term []string) int {
	if len(term) == 0 {
		return 0
	}
	n := 0
	for i := 0; i+len(term) <= len(text); i++ {
		match := true
		for j := range term {
			if text[i+j] != term[j] {
				match = false
				break
			}
		}
		if match {
			n++
		}
	}
	return n
}

// bm25 is component i's score of a row.
func (st *corpus) bm25(i int, f *rankFeatures) float64 {
	if st.docs == 0 {
		return 0
	}
	avgdl := float64(st.words[i]) / float64(st.docs)
	norm := 1.0
	if avgdl > 0 {
		norm = 1 - bm25B + bm25B*float64(f.dl[i])/avgdl
	}
	score := 0.0
	for j, tf := range f.tf[i] {
		if tf == 0 {
			continue
		}
		n := float64(st.hits[i][j])
		idf := math.Log(1 + (float64(st.docs)-n+0.5)/(n+0.5))
		score += idf * float64(tf) * (bm25K1 + 1) / (float64(tf) + bm25K1*norm)
	}
	return score
}

// score sets every row's ORDER BY key to its final score, higher first.
// desc says, per component, whether its higher scores rank first.
func (spec *rankSpec) score(st *corpus, rows []sortRow, desc []bool) {
	if spec.weights == nil {
		for i := range rows {
			rows[i].keys[0] = document.FloatExact(st.bm25(0, rows[i].rank))
		}
		return
	}
	fused := make([]float64, len(rows))
	scores := make([]float64, len(rows))
	order := make([]int, len(rows))
	for ci, comp := range spec.comps {
		w := spec.weights[ci]
		better := desc[ci] != (w < 0) // higher scores rank first
		// A row without a score ranks last: as the worst score in the
		// component's order.
		worst := math.Inf(-1)
		if !better {
			worst = math.Inf(1)
		}
		for i := range rows {
			scores[i] = worst
			if comp.vec == nil {
				scores[i] = st.bm25(ci, rows[i].rank)
			} else if v := rows[i].rank.vec[ci]; v.Kind() == document.Number {
				scores[i] = v.Float()
			}
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool {
			if better {
				return scores[order[a]] > scores[order[b]]
			}
			return scores[order[a]] < scores[order[b]]
		})
		rank := 0
		for k, i := range order {
			if k == 0 || scores[i] != scores[order[k-1]] {
				rank++
			}
			fused[i] += math.Abs(w) / float64(rrfConst+rank)
		}
	}
	for i := range rows {
		rows[i].keys[0] = document.FloatExact(fused[i])
	}
}

// TextRank is a ranked query's FullTextScore, when it is the whole of its
// ORDER BY RANK: the property path it scores the text of, and each term's
// words.
type TextRank struct {
	Path  []string
	Terms [][]string
}

// TextRank returns the query's FullTextScore when it orders by that alone
// (not by RRF) on a property path of its documents.
func (p *Program) TextRank() (TextRank, bool) {
	spec := p.top.rank
	if spec == nil || spec.weights != nil || len(spec.comps) != 1 || spec.comps[0].vec != nil {
		return TextRank{}, false
	}
	path, ok := plan.DocPath(p.q, spec.comps[0].path)
	if !ok {
		return TextRank{}, false
	}
	return TextRank{Path: path, Terms: spec.comps[0].terms}, true
}

// Corpus is what BM25 needs of the documents a ranked query's FullTextScore
// ranks (TextRank): how many, the words of their texts at its path, and
// per term the documents whose text holds it.
type Corpus struct {
	Docs  int
	Words int
	Hits  []int
}

// UseCorpus makes the runs of p, a query of one FullTextScore (TextRank),
// score its rows by c rather than by the statistics of the documents they
// are fed: the engine knows its scope's, and feeds only the documents that
// may rank first.
func (p *Program) UseCorpus(c Corpus) {
	p.corpus = &corpus{docs: c.Docs, words: []int{c.Words}, hits: [][]int{slices.Clone(c.Hits)}}
}

// Score is the BM25 score, by the statistics c, of a text of n words in
// which each term occurs tf[j] times: what UseCorpus's runs give the row
// of such a document.
func (c Corpus) Score(tf []int, n int) float64 {
	st := corpus{docs: c.Docs, words: []int{c.Words}, hits: [][]int{c.Hits}}
	return st.bm25(0, &rankFeatures{tf: [][]int{tf}, dl: []int{n}})
}

// Ranked reports whether the query orders by RANK.
func (p *Program) Ranked() bool { return p.top.rank != nil }
