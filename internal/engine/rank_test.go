package engine

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// A ranked query reads its whole scope, whatever its filter, so BM25's
// statistics are the scope's; across partitions it is served whole, and a
// range of a container of several ranges is refused rather than scored by
// its own statistics.
func TestOrderByRankInTheEngine(t *testing.T) {
	be := newBatchEnv(t, "null")
	be.seed(t,
		`{"id":"d1","pk":"a","n":1,"text":"The quick brown fox"}`,
		`{"id":"d2","pk":"b","n":2,"text":"fox, fox; fox!"}`,
		`{"id":"d3","pk":"a","n":3,"text":"a lazy dog"}`,
		`{"id":"d4","pk":"b","n":4,"text":"quick dog jumps over the lazy fox and dogs"}`,
		`{"id":"d5","pk":"a","n":5}`,
	)
	for i := range 60 {
		be.seed(t, `{"id":"f`+strconv.Itoa(i)+`","pk":"c","n":`+strconv.Itoa(100+i)+`}`)
	}
	ids := func(page *FeedPage) string {
		var out []string
		for _, it := range page.Items {
			v := string(it)
			out = append(out, strings.Trim(v, `"`))
		}
		return strings.Join(out, " ")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		key, query, want string
	}{
		{"", "SELECT VALUE c.id FROM c WHERE c.n < 10 ORDER BY RANK FullTextScore(c.text, 'fox')", "d2 d1 d4 d3 d5"},
		// The terms in an array, as the service's first documentation
		// wrote them.
		{"", "SELECT VALUE c.id FROM c WHERE c.n < 10 ORDER BY RANK FullTextScore(c.text, ['fox'])", "d2 d1 d4 d3 d5"},
		// The filter is served by the index in other queries; here every
		// document of the scope is read for the statistics.
		{"", "SELECT VALUE c.id FROM c WHERE c.n > 1 AND c.n < 10 ORDER BY RANK FullTextScore(c.text, 'fox')", "d2 d4 d3 d5"},
		{"", "SELECT TOP 1 VALUE c.id FROM c WHERE c.n > 2 AND c.n < 10 ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), FullTextScore(c.text, 'dog'))", "d3"},
		// In partition "a" alone, 'fox' is in one document of three.
		{`["a"]`, "SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, 'fox')", "d1 d3 d5"},
	} {
		ref := batchRef(tc.key)
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ref, Query: tc.query, MaxItemCount: -1, CrossPartition: true})
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		if got := ids(page); got != tc.want {
			t.Errorf("%s (key %s): %s, want %s", tc.query, tc.key, got, tc.want)
		}
		if tc.key == "" && page.Examined < 65 {
			t.Errorf("%s: read %d documents of 65; the statistics need them all", tc.query, page.Examined)
		}
	}
	// Without the cross-partition header, as any cross-partition query.
	if _, err := be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(""), Query: "SELECT * FROM c ORDER BY RANK FullTextScore(c.text, 'fox')"}); err == nil {
		t.Error("a cross-partition rank without the header was served")
	}

	// A container of three ranges (18,000 RU/s at creation).
	if _, err := be.e.CreateContainer(ctx, "db", batchJSON(t, `{"id":"wide","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`), &Throughput{Manual: 18000}); err != nil {
		t.Fatal(err)
	}
	wide := ItemRef{DB: "db", Coll: "wide"}
	_, err := be.e.QueryItems(ctx, QueryParams{ItemRef: wide, Query: "SELECT * FROM c ORDER BY RANK FullTextScore(c.text, 'fox')", RangeID: "1", CrossPartition: true})
	var ee *Error
	if !errors.As(err, &ee) || ee.Code != BadRequest {
		t.Errorf("a rank sent to one range of three: %v, want 400", err)
	}
	if _, err := be.e.QueryItems(ctx, QueryParams{ItemRef: wide, Query: "SELECT * FROM c ORDER BY RANK FullTextScore(c.text, 'fox')", CrossPartition: true}); err != nil {
		t.Errorf("a rank over the whole of a container of three ranges: %v", err)
	}
}
