package eval_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/parser"
)

// rankDocs is a corpus small enough to score by hand: for 'fox', N = 5,
// three documents hold it and the average length is 3.8 words, so BM25
// puts d2 (three times in three words) before d1 (once in four) before d4
// (once in nine); d3 and d5 score 0 and keep their order.
var rankDocs = []string{
	`{"id":"d1","text":"The quick brown fox"}`,
	`{"id":"d2","text":"fox, fox; fox!"}`,
	`{"id":"d3","text":"a lazy dog"}`,
	`{"id":"d4","text":"quick dog jumps over the lazy fox and dogs"}`,
	`{"id":"d5"}`,
}

// parseRankDocs returns rankDocs parsed.
func parseRankDocs(t *testing.T) []document.Value {
	t.Helper()
	var docs []document.Value
	for _, d := range rankDocs {
		v, err := document.Parse([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, v)
	}
	return docs
}

func TestOrderByRank(t *testing.T) {
	docs := parseRankDocs(t)
	for _, tc := range []struct{ query, want string }{
		{"SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, 'fox')", "d2 d1 d4 d3 d5"},
		{"SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, 'FOXES')", "d2 d1 d4 d3 d5"},
		{"SELECT TOP 2 VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, 'fox')", "d2 d1"},
		{"SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, 'fox') OFFSET 1 LIMIT 2", "d1 d4"},
		// The statistics are those of every document read, not of the
		// rows the filter keeps.
		{"SELECT VALUE c.id FROM c WHERE c.id != 'd2' ORDER BY RANK FullTextScore(c.text, 'fox')", "d1 d4 d3 d5"},
		// A phrase counts where its words follow each other.
		{"SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, 'lazy dog')", "d3 d1 d2 d4 d5"},
		// Dense ranks: fox d2 1, d1 2, d4 3, others 4; dog d3 1, d4 2,
		// others 3. d1 and d4 tie at 1/62 + 1/63.
		{"SELECT VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), FullTextScore(c.text, 'dog'))", "d2 d3 d1 d4 d5"},
		{"SELECT VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), FullTextScore(c.text, 'dog'), [2, 1])", "d2 d1 d4 d3 d5"},
		{"SELECT VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, @t), FullTextScore(c.text, 'dog'), @w)", "d2 d1 d4 d3 d5"},
	} {
		q, err := parser.Parse(tc.query)
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		p, err := eval.Compile(q, map[string]document.Value{
			"@t": document.Str("fox"),
			"@w": document.Arr([]document.Value{document.Int(2), document.Int(1)}),
		}, eval.Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		rows, err := p.RunDocs(docs)
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, r.Str())
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s\n got %v\nwant %s", tc.query, got, tc.want)
		}
	}
}

func TestRankRefusals(t *testing.T) {
	for query, code := range map[string]string{
		"SELECT FullTextScore(c.text, 'x') FROM c":                                        "SC2240",
		"SELECT * FROM c WHERE RRF(FullTextScore(c.text, 'x')) > 0":                       "SC2240",
		"SELECT * FROM c ORDER BY RANK c.text":                                            "SC2242",
		"SELECT * FROM c ORDER BY RANK LOWER(c.text)":                                     "SC2242",
		"SELECT * FROM c ORDER BY RANK FullTextScore(c.text, c.other)":                    "SC2243",
		"SELECT * FROM c ORDER BY RANK FullTextScore(c, 'a')":                             "SC2243",
		"SELECT * FROM c ORDER BY RANK FullTextScore(c.text, ['a', 1])":                   "SC2243",
		"SELECT * FROM c ORDER BY RANK FullTextScore(c.text, [])":                         "SC2243",
		"SELECT * FROM c ORDER BY RANK FullTextScore(c.text, [c.other])":                  "SC2243",
		"SELECT * FROM c ORDER BY RANK FullTextScore(c.text)":                             "SC2050",
		"SELECT * FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'a'), [1, 2])":           "SC2244",
		"SELECT * FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'a'), ['x'])":            "SC2244",
		"SELECT * FROM c ORDER BY c.id, RANK FullTextScore(c.text, 'a')":                  "SC2241",
		"SELECT VALUE t FROM c JOIN t IN c.tags ORDER BY RANK FullTextScore(t.text, 'a')": "SC2243",
		"SELECT VALUE COUNT(1) FROM c ORDER BY RANK FullTextScore(c.text, 'a')":           "SC2103",
	} {
		q, err := parser.Parse(query)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		_, err = eval.Compile(q, nil, eval.Options{})
		var ae *ast.Error
		if !errors.As(err, &ae) || ae.Code != code {
			t.Errorf("%s: %v, want %s", query, err, code)
		}
	}
}

func TestRankPrints(t *testing.T) {
	q, err := parser.Parse("SELECT * FROM c ORDER BY RANK FullTextScore(c.text, 'a')")
	if err != nil {
		t.Fatal(err)
	}
	if s := q.String(); !strings.Contains(s, "ORDER BY RANK FullTextScore(c.text, \"a\")") {
		t.Errorf("printed %s", s)
	}
	// RANK alone is still a name.
	if _, err := parser.Parse("SELECT * FROM c ORDER BY rank"); err != nil {
		t.Errorf("ORDER BY rank: %v", err)
	}
}

// A program given its scope's statistics (UseCorpus) ranks the documents
// that hold a term as the program fed every document does, and by other
// statistics otherwise. TextRank names what such a program scores.
func TestUseCorpus(t *testing.T) {
	docs := parseRankDocs(t)
	holding := docs[:4] // d5 has no text
	run := func(query string, c *eval.Corpus, docs []document.Value) string {
		t.Helper()
		q, err := parser.Parse(query)
		if err != nil {
			t.Fatal(err)
		}
		p, err := eval.Compile(q, nil, eval.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if c != nil {
			p.UseCorpus(*c)
		}
		rows, err := p.RunDocs(docs)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, r.Str())
		}
		return strings.Join(got, " ")
	}
	// 'fox' and 'dog': N = 5, 19 words, three documents hold "fox" and
	// two "dog" (d3 and d4; "dogs" is "dog" too).
	query := "SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, 'fox', 'dog')"
	if got, want := run(query, nil, docs), "d4 d3 d2 d1 d5"; got != want {
		t.Errorf("fed every document: %q, want %q", got, want)
	}
	if got, want := run(query, &eval.Corpus{Docs: 5, Words: 19, Hits: []int{3, 2}}, holding), "d4 d3 d2 d1"; got != want {
		t.Errorf("fed the holders with the scope's statistics: %q, want %q", got, want)
	}
	// Longer texts on average weigh a text's length less: d2's three
	// foxes in three words pass d3's one dog in three.
	if got, want := run(query, &eval.Corpus{Docs: 50, Words: 1000, Hits: []int{3, 2}}, holding), "d4 d2 d3 d1"; got != want {
		t.Errorf("with other statistics: %q, want %q", got, want)
	}

	for _, tc := range []struct {
		query string
		path  string
		terms string
		ok    bool
	}{
		{query, "text", "fox|dog", true},
		{"SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.a.text, ['Foxes', 'lazy dog'])", "a.text", "fox|lazy dog", true},
		{"SELECT VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), FullTextScore(c.text, 'dog'))", "", "", false},
		{"SELECT VALUE c.id FROM c ORDER BY c.id", "", "", false},
	} {
		q, err := parser.Parse(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		p, err := eval.Compile(q, nil, eval.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r, ok := p.TextRank()
		var terms []string
		for _, term := range r.Terms {
			terms = append(terms, strings.Join(term, " "))
		}
		if ok != tc.ok || strings.Join(r.Path, ".") != tc.path || strings.Join(terms, "|") != tc.terms {
			t.Errorf("%s: TextRank %v %v, want %v %s %s", tc.query, r, ok, tc.ok, tc.path, tc.terms)
		}
	}
}
