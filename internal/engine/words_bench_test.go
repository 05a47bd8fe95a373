package engine

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/partition"
)

// BenchmarkFullTextFilter: a page of a full-text filter, in a container of
// 10⁵ items whose texts are twenty words drawn from a thousand, the k-th
// most common with a frequency proportional to 1/k (as in prose), in
// logical partitions of 100. Two containers hold the same items: "stored",
// with a full-text index on /text, whose filters read the stored words
// (words.go), and "scanned", without, whose filters read documents.
// Shapes: a rare word (about half a percent of the items) across the
// range and in one partition; a middling one (about a tenth) across the
// range; a common one (most items), which the stored words do not serve;
// an Any of two rare words; an All of two middling words, whose items
// both hold are a tenth of either's, and one of the second most common
// word and the rare one. Each the first page of 100, or of 10 rows;
// the count of the middling word's items; the whole drain of the
// middling word in pages of 100, each op a drain; and SELECT TOP 10 of
// ORDER BY RANK FullTextScore of the rare word, of it and a word of about
// 2% of the items, and of the middling word, across the container, and
// of the rare word in one partition.
//
//	go test -run '^$' -bench BenchmarkFullTextFilter -benchtime 20x ./internal/engine/
func BenchmarkFullTextFilter(b *testing.B) {
	const items, vocab = 100_000, 1000
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	createTextContainers(b, s)
	// Zipf's law over the vocabulary: word k (from 1) with weight 1/k.
	cum := make([]float64, vocab)
	total := 0.0
	for k := range vocab {
		total += 1 / float64(k+1)
		cum[k] = total
	}
	rng := rand.New(rand.NewPCG(3, 4))
	word := func() string {
		u := rng.Float64() * total
		lo, hi := 0, vocab-1
		for lo < hi {
			if mid := (lo + hi) / 2; cum[mid] < u {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		return "w" + strconv.Itoa(lo)
	}
	docs := make([]string, items)
	for i := range docs {
		ws := make([]string, 20)
		for j := range ws {
			ws[j] = word()
		}
		docs[i] = `{"id":"x` + strconv.Itoa(i) + `","pk":"q` + strconv.Itoa(i/100) + `","n":` + strconv.Itoa(i%100) + `,"text":"` + strings.Join(ws, " ") + `"}`
	}
	s.pk = func(i int) string { return "q" + strconv.Itoa(i/100) }
	s.block = 100
	for _, coll := range []string{"stored", "scanned"} {
		s.coll = coll
		s.load(b, 0, items, func(i int) []byte { return []byte(docs[i]) })
	}
	s.settle(b)
	key := partition.Key{partition.String("q500")}
	for _, shape := range []struct {
		name, filter string
		key          bool
		page         int
	}{
		{"rare", "FullTextContains(c.text, 'w300')", false, 100},
		{"rare-partition", "FullTextContains(c.text, 'w300')", true, 100},
		{"rare-any", "FullTextContainsAny(c.text, 'w300', 'w301')", false, 100},
		{"all-middling", "FullTextContainsAll(c.text, 'w20', 'w30')", false, 100},
		{"all-common-first", "FullTextContainsAll(c.text, 'w1', 'w300')", false, 100},
		{"middling", "FullTextContains(c.text, 'w15')", false, 100},
		{"middling-10", "FullTextContains(c.text, 'w15')", false, 10},
		{"common-10", "FullTextContains(c.text, 'w0')", false, 10},
		{"count-middling", "FullTextContains(c.text, 'w15')", false, 1},
		{"drain-middling", "FullTextContains(c.text, 'w15')", false, 100},
		{"rank-rare", "ORDER BY RANK FullTextScore(c.text, 'w300')", false, 10},
		{"rank-two", "ORDER BY RANK FullTextScore(c.text, 'w300', 'w40')", false, 10},
		{"rank-middling", "ORDER BY RANK FullTextScore(c.text, 'w15')", false, 10},
		{"rank-rare-partition", "ORDER BY RANK FullTextScore(c.text, 'w300')", true, 10},
	} {
		for _, coll := range []string{"stored", "scanned"} {
			b.Run(shape.name+"/"+coll, func(b *testing.B) {
				sel := "c.id, c.n"
				if strings.HasPrefix(shape.name, "count") {
					sel = "VALUE COUNT(1)"
				}
				p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: coll}, MaxItemCount: shape.page,
					Query: "SELECT " + sel + " FROM c WHERE " + shape.filter}
				if shape.key {
					p.HasKey, p.PartitionKey = true, key
				} else {
					p.RangeID, p.CrossPartition = "0", true
				}
				if strings.HasPrefix(shape.name, "rank") {
					// Served whole, without a range, as the SDKs send it.
					p.Query, p.RangeID = "SELECT TOP 10 c.id, c.n FROM c "+shape.filter, ""
				}
				if strings.HasPrefix(shape.name, "drain") {
					w := benchWholeDrain(b, s, p, true, nil)
					b.ReportMetric(float64(w.pages)/float64(b.N), "pages/op")
					return
				}
				rows := shape.page
				if shape.key {
					rows = -1
				}
				firstPage(b, s, p, rows)
			})
		}
	}
}

// BenchmarkFullTextCreate: creates of items with a text of twenty words
// drawn as BenchmarkFullTextFilter draws them, one at a time, synced, into
// a container whose full-text index stores the text's words ("stored")
// and into one without ("scanned"). The stored words are the cost of the
// faster filters.
//
//	go test -run '^$' -bench BenchmarkFullTextCreate -benchtime 2000x ./internal/engine/
func BenchmarkFullTextCreate(b *testing.B) {
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	ctx := context.Background()
	createTextContainers(b, s)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, coll := range []string{"stored", "scanned"} {
		b.Run(coll, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				ws := make([]string, 20)
				for j := range ws {
					// 1/k frequencies, as in BenchmarkFullTextFilter.
					ws[j] = "w" + strconv.Itoa(int(math.Exp(rng.Float64()*math.Log(1000)))-1)
				}
				body := `{"id":"x` + strconv.Itoa(i) + `","pk":"q` + strconv.Itoa(i%50) + `","text":"` + strings.Join(ws, " ") + `"}`
				if _, err := s.WriteItem(ctx, WriteItemParams{ItemRef: ItemRef{DB: benchDB, Coll: coll}, Mode: ModeCreate, Body: []byte(body)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// createTextContainers creates the full-text benchmarks' containers:
// "stored", with a full-text index on /text, and "scanned", without.
func createTextContainers(b *testing.B, s *benchStore) {
	for coll, ip := range map[string]string{
		"stored":  `"indexingPolicy":{"fullTextIndexes":[{"path":"/text"}]}`,
		"scanned": `"indexingPolicy":{}`,
	} {
		body := `{"id":"` + coll + `","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"fullTextPolicy":{"defaultLanguage":"en-US","fullTextPaths":[{"path":"/text","language":"en-US"}]},` + ip + `}`
		if _, err := s.CreateContainer(context.Background(), benchDB, benchParse(b, body), nil); err != nil {
			b.Fatal(err)
		}
	}
}
