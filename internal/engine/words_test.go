package engine

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/fulltext"
	"github.com/mayfly-db/mayfly/internal/query/parser"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// TestWordsMatchTheScan runs full-text filters on two containers that hold
// the same items, one with full-text indexes (its filters read the stored
// words) and one without (its filters read every document of their
// scope), and requires the same pages, drained a few rows a page: in one
// partition and across the range of a container of one range and of four,
// and under the first component of a hierarchical key. The texts are
// drawn from a few words in several forms (case, plurals), with
// punctuation; some items have no text, one that is not a string, or a
// word too long to store; some expire, some are replaced with another text
// or none, some are deleted. MAYFLY_WORDS_SEEDS sets how many seeds run
// (default 4), from MAYFLY_WORDS_FROM (default 0).
func TestWordsMatchTheScan(t *testing.T) {
	runSeeds(t, "MAYFLY_WORDS", wordsScenario)
}

var testWords = []string{"whale", "Whales", "fox", "foxes", "Blue", "blue", "sea", "seas", "story", "stories", "box", "Boxes", "the", "42"}

func wordsScenario(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	if seed%4 < 2 {
		// The words of a phrase are read in rounds of a few entries,
		// each going on from where the last stopped.
		firstWordRound = 1 + rng.Int63n(4)
		t.Cleanup(func() { firstWordRound = 64 })
	}
	ctx := context.Background()
	policy := `"fullTextPolicy":{"defaultLanguage":"en-US","fullTextPaths":[{"path":"/t","language":"en-US"},{"path":"/n/t","language":"en-US"}]}`
	indexed := `"indexingPolicy":{"fullTextIndexes":[{"path":"/n/t"},{"path":"/t"}]}`
	body := func(id string, ip string) string {
		return `{"id":"` + id + `","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1,` + policy + `,` + ip + `}`
	}
	be := newPairedEnv(t, func(id string, withIndex bool) string {
		if withIndex {
			return body(id, indexed)
		}
		return body(id, `"indexingPolicy":{}`)
	})
	// Fewer words in some seeds, so that some filters name many items and
	// are read by another path.
	vocab := testWords[:4+rng.Intn(len(testWords)-3)]
	// extra words go at the end of a text: words rarer than the
	// vocabulary's, so that some ranked queries have few holders.
	text := func(extra ...string) string {
		parts := make([]string, rng.Intn(7))
		for j := range parts {
			parts[j] = vocab[rng.Intn(len(vocab))]
			if rng.Intn(5) == 0 {
				parts[j] += []string{",", ".", "!", "'s"}[rng.Intn(4)]
			}
		}
		if rng.Intn(10) == 0 {
			parts = append(parts, strings.Repeat("x", 70)) // too long to store
		}
		parts = append(parts, extra...)
		return document.Str(strings.Join(parts, " ")).String()
	}
	item := func(i int) string {
		doc := `{"id":"i` + strconv.Itoa(i) + `","pk":"p` + strconv.Itoa(rng.Intn(6)) + `","k":` + strconv.Itoa(rng.Intn(10))
		switch rng.Intn(10) {
		case 0: // no text
		case 1:
			doc += `,"t":42`
		case 2:
			doc += `,"t":["whale"]`
		default:
			var extra []string
			if i%9 == 4 {
				extra = append(extra, "narwhal")
			}
			if i%11 == 3 {
				extra = append(extra, "orca")
			}
			doc += `,"t":` + text(extra...)
		}
		if rng.Intn(2) == 0 {
			doc += `,"n":{"t":` + text() + `}`
		}
		if rng.Intn(8) == 0 {
			doc += `,"ttl":30`
		}
		return doc + `}`
	}
	n := 80 + rng.Intn(120)
	docs := make([]string, n)
	for i := range n {
		docs[i] = item(i)
		writePaired(t, be, ModeCreate, docs[i])
	}
	changePaired(t, be, rng, docs, n/6, item)
	be.clock.Advance(31 * time.Second) // the items with their own ttl expire
	if _, err := be.e.CheckIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	if seed%2 == 1 {
		for coll := range pairedColls {
			if _, err := be.e.PurgeDue(ctx, ttl.PurgeParams{Container: "dbs/db/colls/" + coll, Now: be.clock.Now(), Limit: 1000}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := be.e.CheckIndexes(ctx); err != nil {
			t.Fatal(err)
		}
	}

	phrase := func() string {
		switch rng.Intn(12) {
		case 0:
			return "!!" // no words
		case 1:
			return strings.Repeat("x", 70)
		}
		// Mostly the texts' words, in any of their forms.
		word := func() string {
			if rng.Intn(4) == 0 {
				return testWords[rng.Intn(len(testWords))]
			}
			return vocab[rng.Intn(len(vocab))]
		}
		p := word()
		if rng.Intn(3) == 0 {
			p += " " + word()
		}
		return p
	}
	chosen := 0
	for range 40 {
		path := []string{"c.t", "c.n.t"}[rng.Intn(2)]
		var params map[string]document.Value
		arg := func() string {
			p := phrase()
			if rng.Intn(4) == 0 {
				if params == nil {
					params = map[string]document.Value{}
				}
				name := "@p" + strconv.Itoa(len(params))
				params[name] = document.Str(p)
				return name
			}
			return "'" + p + "'"
		}
		var filter string
		switch rng.Intn(3) {
		case 0:
			filter = "FullTextContains(" + path + ", " + arg() + ")"
		case 1:
			filter = "FullTextContainsAll(" + path + ", " + arg() + ", " + arg() + ")"
		default:
			filter = "FullTextContainsAny(" + path + ", " + arg() + ", " + arg() + ", " + arg() + ")"
		}
		switch rng.Intn(4) {
		case 0:
			filter += " AND c.k > " + strconv.Itoa(rng.Intn(10))
		case 1:
			filter = "c.k = " + strconv.Itoa(rng.Intn(10)) + " AND " + filter
		}
		sel := []string{"c.id, c.k", "VALUE c.id", "c.id, c.t", "VALUE COUNT(1)", "COUNT(1) AS n, SUM(c.k) AS s, MAX(c.id) AS m"}[rng.Intn(5)]
		text := "SELECT " + sel + " FROM c WHERE " + filter
		// An aggregate of the filter's documents is drawn whole.
		switch k := rng.Intn(4); {
		case strings.Contains(sel, "COUNT"):
		case k == 0:
			text = fmt.Sprintf("SELECT TOP %d %s FROM c WHERE %s", 1+rng.Intn(10), sel, filter)
		case k == 1:
			text += " ORDER BY c.k"
		case k == 2:
			text += fmt.Sprintf(" ORDER BY c.id DESC OFFSET %d LIMIT %d", rng.Intn(4), 1+rng.Intn(8))
		}
		pk := ""
		if rng.Intn(3) == 0 {
			pk = "p" + strconv.Itoa(rng.Intn(6))
		}
		pageSize := 1 + rng.Intn(6)
		p := QueryParams{Query: text, Params: params, MaxItemCount: pageSize}
		drainPaired(t, be, seed, p, pk, func(_ string, access plan.Access, _ plan.ScopeKind) {
			if access == plan.WordSpan {
				chosen++
			}
		})
	}
	t.Logf("seed %d: %d pages read the words", seed, chosen)
	if chosen == 0 {
		t.Errorf("seed %d: no query read the stored words", seed)
	}

	// Ranked queries, served whole over each container: those of one
	// FullTextScore of single words rank from the items holding them
	// and the container's text totals (rankwords.go) as far as those
	// rank, each page after as the scan does.
	ranked := 0
	queries := 12
	if RaceEnabled {
		queries = 4
	}
	for k := range queries {
		path := []string{"c.t", "c.n.t"}[rng.Intn(2)]
		var terms []string
		for range 1 + rng.Intn(3) {
			switch rng.Intn(10) {
			case 0:
				terms = append(terms, "'!!'") // no words
			case 1:
				terms = append(terms, "'blue whale'") // a phrase: read as before
			case 2, 3:
				terms = append(terms, "'Narwhals'")
			default:
				terms = append(terms, "'"+testWords[rng.Intn(len(testWords))]+"'")
			}
		}
		text := "SELECT c.id FROM c"
		if rng.Intn(3) == 0 {
			text += " WHERE c.k > " + strconv.Itoa(rng.Intn(10))
		}
		text += " ORDER BY RANK FullTextScore(" + path + ", " + strings.Join(terms, ", ") + ")"
		// Without TOP every item is a row, each page reading the scope
		// once its holders' rows ran out: pages of more rows.
		size := 10 + rng.Intn(20)
		if rng.Intn(2) == 0 {
			text = strings.Replace(text, "SELECT ", fmt.Sprintf("SELECT TOP %d ", 1+rng.Intn(12)), 1)
			size = 1 + rng.Intn(6)
		}
		if k == 0 {
			// One whose terms few items hold, so that every seed ranks
			// by the words: each term's weight depends on how many
			// items hold it.
			text = "SELECT TOP 5 c.id FROM c ORDER BY RANK FullTextScore(c.t, 'narwhal', 'orca')"
		}
		p := QueryParams{Query: text, MaxItemCount: size, CrossPartition: true}
		for _, pair := range [][2]string{{"c", "plain"}, {"wide", "plainwide"}, {"hpk", "plainhpk"}} {
			var rows [2][]string
			for i, coll := range pair {
				p.ItemRef, p.Continuation = ItemRef{DB: "db", Coll: coll}, ""
				for {
					page, err := be.e.QueryItems(ctx, p)
					if err != nil {
						t.Fatalf("seed %d: %s in %s: %v", seed, text, coll, err)
					}
					if i == 0 && page.Plan != nil && page.Plan.Chosen.Access == plan.WordSpan {
						ranked++
					}
					for _, it := range page.Items {
						rows[i] = append(rows[i], string(it))
					}
					if p.Continuation = page.Continuation; p.Continuation == "" {
						break
					}
				}
			}
			if !slices.Equal(rows[0], rows[1]) {
				t.Fatalf("seed %d: %s in %s, %d a page:\n got %v\nwant %v", seed, text, pair[0], p.MaxItemCount, rows[0], rows[1])
			}
		}
	}
	t.Logf("seed %d: %d ranked pages read the words", seed, ranked)
	if ranked == 0 {
		t.Errorf("seed %d: no ranked page read the stored words", seed)
	}
}

// A ranked query's statistics leave out the items expired and not purged
// yet (rankByWords), as the scan that reads every live document does:
// here five live items and three expired ones hold "narwhal", seventeen
// live ones "orca", so "narwhal" is the rarer term and its holders rank first;
// counted with the expired holders, it would be the commoner, and rank
// last. The same query without the index reads the scope. The statistics
// themselves are those of the live items.
func TestRankedByWordsLeavesOutExpiredItems(t *testing.T) {
	body := func(id string, ip string) string {
		return `{"id":"` + id + `","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1,` + ip + `}`
	}
	be := newPairedEnv(t, func(id string, withIndex bool) string {
		if withIndex {
			return body(id, `"indexingPolicy":{"fullTextIndexes":[{"path":"/t"}]}`)
		}
		return body(id, `"indexingPolicy":{}`)
	})
	liveWords := 0
	for i := range 100 {
		text, ttl := "the sea", ""
		switch {
		case i < 5:
			text = "a narwhal"
		case i < 8:
			text, ttl = "a long tale of a narwhal and of the sea", `,"ttl":30`
		case i < 22:
			text = "an orca"
		case i < 25:
			text = "orca orca orca" // the orcas' best, last in scan order
		}
		if ttl == "" {
			liveWords += len(fulltext.Words(text))
		}
		writePaired(t, be, ModeCreate, fmt.Sprintf(`{"id":"i%02d","pk":"p%d","k":%d,"t":%q%s}`, i, i%7, i%3, text, ttl))
	}
	be.clock.Advance(31 * time.Second)
	q, err := parser.Parse("SELECT c.id FROM c ORDER BY RANK FullTextScore(c.t, 'orca', 'narwhal')")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := eval.Compile(q, nil, eval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = be.e.store.View(context.Background(), func(r storage.Reader) error {
		rw, ok, err := rankByWords(r, be.container(t), prog, wholeContainer(), be.clock.Now(), &readStats{})
		if err != nil || !ok {
			return fmt.Errorf("rankByWords: %v %v", ok, err)
		}
		if want := (eval.Corpus{Docs: 97, Words: liveWords, Hits: []int{17, 5}}); !reflect.DeepEqual(rw.corpus, want) || len(rw.locs) != 22 {
			t.Errorf("statistics %+v of %d holders, want %+v of 22", rw.corpus, len(rw.locs), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query, first string
		rows         int
	}{
		{"SELECT TOP 11 c.id FROM c ORDER BY RANK FullTextScore(c.t, 'orca', 'narwhal')", "i00", 11},
		{"SELECT c.id FROM c WHERE c.k != 1 ORDER BY RANK FullTextScore(c.t, 'orca', 'narwhal')", "i00", 65},
		// Under a filter, the holders that rank first are read, and more
		// until three pass: i23 and i24 (i22 does not), then i08.
		// (Their order is their _rids', which a container of four ranges
		// gives per range.)
		{"SELECT TOP 3 c.id FROM c WHERE c.k != 1 ORDER BY RANK FullTextScore(c.t, 'orca')", "i23|i24", 3},
	} {
		query := tc.query
		for _, pair := range [][2]string{{"c", "plain"}, {"wide", "plainwide"}, {"hpk", "plainhpk"}} {
			var rows [2][]string
			for i, coll := range pair {
				p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: coll}, Query: query, MaxItemCount: 4, CrossPartition: true}
				for n := 0; ; n++ {
					page, err := be.e.QueryItems(context.Background(), p)
					if err != nil {
						t.Fatal(err)
					}
					if i == 0 && n == 0 && (page.Plan == nil || page.Plan.Chosen.Access != plan.WordSpan) {
						t.Errorf("%s in %s: page 1 by %v, want the words", query, coll, page.Plan)
					}
					for _, it := range page.Items {
						rows[i] = append(rows[i], string(it))
					}
					if p.Continuation = page.Continuation; p.Continuation == "" {
						break
					}
				}
			}
			if !slices.Equal(rows[0], rows[1]) || len(rows[0]) != tc.rows || !slices.Contains(strings.Split(tc.first, "|"), strings.TrimSuffix(strings.TrimPrefix(rows[0][0], `{"id":"`), `"}`)) {
				t.Errorf("%s in %s:\n got %v\nwant %v, %d rows, %s first", query, pair[0], rows[0], rows[1], tc.rows, tc.first)
			}
		}
	}
}
