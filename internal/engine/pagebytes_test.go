package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/query/plan"
)

// A page stops before a row or change that would take it past 4 MB, as
// the service bounds a response, on every path that makes pages: a
// document stored whole, a projection, an index span, the ordered
// stream, across partitions, and both change feeds. Five items of 1.5
// MB come two to a page.
func TestPagesStayUnderTheResponseBound(t *testing.T) {
	skipMegabytesUnderRace(t)
	ce := newCFEnv(t)
	ce.coll("big", `"partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}`)
	big := strings.Repeat("x", 1_500_000)
	for i := range 5 {
		ce.write("big", ModeCreate, fmt.Sprintf(`{"id":"i%d","pk":"p","n":%d,"s":"%s"}`, i, i, big))
	}
	check := func(what string, pages [][][]byte) {
		t.Helper()
		n := 0
		for _, items := range pages {
			size := 0
			for _, it := range items {
				size += len(it)
			}
			if len(items) > 1 && size > maxPageBytes {
				t.Errorf("%s: a page of %d items and %d bytes, past %d", what, len(items), size, maxPageBytes)
			}
			n += len(items)
		}
		if n != 5 {
			t.Errorf("%s: %d items over %d pages, want 5", what, n, len(pages))
		}
	}
	for _, q := range []string{
		"SELECT * FROM c",
		"SELECT c.id, c.s FROM c",
		"SELECT * FROM c WHERE c.n >= 0",
		"SELECT * FROM c ORDER BY c.n",
		"SELECT * FROM c ORDER BY c.n DESC",
		"SELECT VALUE c.s FROM c ORDER BY c.n OFFSET 1 LIMIT 3",
	} {
		for _, p := range []QueryParams{
			{ItemRef: cfRef("big", `["p"]`), Query: q},
			{ItemRef: cfRef("big", ""), Query: q, RangeID: "0", CrossPartition: true},
		} {
			var pages [][][]byte
			for {
				page, err := ce.e.QueryItems(context.Background(), p)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				pages = append(pages, page.Items)
				if page.Continuation == "" {
					break
				}
				p.Continuation = page.Continuation
			}
			if strings.Contains(q, "LIMIT 3") {
				// Three of the five, checked for their pages' size alone.
				pages = append(pages, [][]byte{nil, nil})
			}
			check(fmt.Sprintf("%s (range %q)", q, p.RangeID), pages)
		}
	}
	for _, p := range []ChangeFeedParams{lv("big"), all("big")} {
		var pages [][][]byte
		if p.Mode == AllVersionsAndDeletes {
			p.Start = StartNow
			p.Start, p.After = StartAfter, ce.feed(p).Position
			for i := range 5 {
				ce.write("big", ModeReplace, fmt.Sprintf(`{"id":"i%d","pk":"p","n":%d,"s":"%s"}`, i, i, big))
			}
		}
		for {
			page := ce.feed(p)
			if len(page.Items) == 0 {
				break
			}
			pages = append(pages, page.Items)
			p.Start, p.After = StartAfter, page.Position
		}
		check(fmt.Sprintf("change feed, mode %v", p.Mode), pages)
	}
}

// The ordered stream (an ORDER BY walked in its index's order, a page at
// a time) stops before a row that would take its page past 4 MB too.
func TestOrderedStreamPagesStayUnderTheResponseBound(t *testing.T) {
	skipMegabytesUnderRace(t)
	ce := newCFEnv(t)
	ce.coll("big", `"partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}`)
	big := strings.Repeat("x", 1_500_000)
	for i := range 2000 {
		s := ""
		if i >= 1997 {
			s = big
		}
		ce.write("big", ModeCreate, fmt.Sprintf(`{"id":"i%d","pk":"p%d","n":%d,"s":"%s"}`, i, i%7, i, s))
	}
	for _, q := range []string{"SELECT * FROM c ORDER BY c.n DESC", "SELECT c.s FROM c ORDER BY c.n DESC"} {
		p := QueryParams{ItemRef: cfRef("big", ""), Query: q, RangeID: "0", CrossPartition: true, MaxItemCount: 10}
		page, err := ce.e.QueryItems(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		size := 0
		for _, it := range page.Items {
			size += len(it)
		}
		if page.Plan.Chosen.Access != plan.OrderedStream {
			t.Errorf("%s: %s, want the ordered stream", q, page.Plan.Explain())
		}
		if len(page.Items) != 2 || size > maxPageBytes || page.Continuation == "" {
			t.Errorf("%s: a first page of %d items and %d bytes, want the 2 that fit in %d and a continuation", q, len(page.Items), size, maxPageBytes)
		}
	}
}
