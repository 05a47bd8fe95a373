package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// A GROUP BY of whole groups pages in the order of its key: a page reads
// the documents of its own groups (and a run past the last), not the whole
// scope, so draining it reads the scope a few times at most however many
// pages it takes; and its pages hold the groups the whole evaluation
// makes, each once. Keys of every kind: absent, null, numbers, strings,
// objects (which the index does not order among themselves).
func TestWholeGroupsReadTheirOwnDocuments(t *testing.T) {
	be := newBatchEnv(t, "null")
	var docs []string
	for i := range 900 {
		g := fmt.Sprint(i % 90)
		switch {
		case i%17 == 0:
			g = ""
		case i%19 == 0:
			g = `,"g":null`
		case i%23 == 0:
			g = fmt.Sprintf(`,"g":{"x":%d}`, i%2)
		case i%5 == 0:
			g = fmt.Sprintf(`,"g":"s%d"`, i%11)
		default:
			g = `,"g":` + g
		}
		docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p%d","k":%d%s}`, i, i%3, i%7, g))
	}
	be.seed(t, docs...)
	drain := func(p QueryParams) (rows []string, examined, pages int) {
		for {
			page, err := be.e.QueryItems(context.Background(), p)
			if err != nil {
				t.Fatalf("%s: %v", p.Query, err)
			}
			pages++
			examined += page.Examined
			for _, it := range page.Items {
				rows = append(rows, string(it))
			}
			if p.Continuation = page.Continuation; p.Continuation == "" {
				return rows, examined, pages
			}
		}
	}
	keyed := QueryParams{ItemRef: batchRef("[\"p1\"]")}
	ranged := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true}
	for _, tc := range []struct {
		p     QueryParams
		query string
		// firstKey is set when a page reads the documents of its groups'
		// values of the first of several keys, a fifth of the scope or
		// less here, rather than its groups' own.
		firstKey bool
	}{
		{keyed, `SELECT c.g, COUNT(1) AS n, SUM(c.k) AS s FROM c GROUP BY c.g`, false},
		{keyed, `SELECT c.g, MAX(DocumentId(c)) AS d FROM c WHERE c.k > 2 GROUP BY c.g`, false},
		{keyed, `SELECT VALUE {"g": c.g, "ids": MakeSet(c.id)} FROM c GROUP BY c.g`, false},
		// The SDKs' rewrite, sent with a partition key: whole groups.
		{keyed, `SELECT [{"item": c.g}] AS groupByItems, {"g": c.g, "n": {"item": COUNT(1)}} AS payload FROM c GROUP BY c.g`, false},
		{ranged, `SELECT c.g, COUNT(1) AS n FROM c WHERE c.k != 4 GROUP BY c.g`, false},
		// Several keys: the stream sorts each value's documents of the
		// first by the others.
		{keyed, `SELECT c.g, c.k, COUNT(1) AS n FROM c GROUP BY c.g, c.k`, true},
		{ranged, `SELECT VALUE [c.k, c.g, MIN(c.id)] FROM c GROUP BY c.k, c.g`, true},
	} {
		whole := tc.p
		whole.Query, whole.MaxItemCount = tc.query, 1000
		want, once, _ := drain(whole)
		slices.Sort(want)
		for _, size := range []int{1, 3} {
			p := tc.p
			p.Query, p.MaxItemCount = tc.query, size
			got, examined, pages := drain(p)
			if len(got) != len(want) {
				t.Errorf("%s in pages of %d: %d rows, want %d", tc.query, size, len(got), len(want))
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s in pages of %d: rows differ from the whole evaluation's:\n%v\n%v", tc.query, size, got, want)
			}
			// Evaluating the scope on every page would read it once per
			// page: at least ten times over.
			bound := 4 * once
			if tc.firstKey {
				bound = pages * once / 5
			}
			if pages < 10 || examined > bound {
				t.Errorf("%s in pages of %d: %d records read in %d pages, where one evaluation reads %d", tc.query, size, examined, pages, once)
			}
		}
	}
}
