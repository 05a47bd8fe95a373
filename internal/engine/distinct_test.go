package engine

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// A DISTINCT without ORDER BY that no index gives in order pages by
// position, its rows returned so far kept between pages: every row comes
// once, and page k reads from where page k-1 ended. A page whose set is
// not kept (dropped, asked twice, or given a token from before the sets)
// rebuilds it from the start and returns the same rows.
func TestDistinctPagesResume(t *testing.T) {
	be := newBatchEnv(t, "null")
	const n = 1500
	var docs []string
	names, tags := map[string]bool{}, map[string]bool{}
	namesK := map[string]bool{}
	namesP3 := map[string]bool{}
	for i := range n {
		name := fmt.Sprintf("Name%d", i*7%300)
		if i%2 == 1 {
			name = strings.ToUpper(name)
		}
		t1, t2 := fmt.Sprintf("T%d", i%13), fmt.Sprintf("t%d", (i+5)%13)
		docs = append(docs, fmt.Sprintf(`{"id":"d%04d","pk":"p%d","k":%d,"name":%q,"tags":[%q,%q]}`, i, i%20, i%5, name, t1, t2))
		lower := `"` + strings.ToLower(name) + `"`
		names[lower] = true
		tags[`{"t":"`+strings.ToLower(t1)+`"}`], tags[`{"t":"`+strings.ToLower(t2)+`"}`] = true, true
		if i%5 >= 3 {
			namesK[lower] = true
		}
		if i%20 == 3 {
			namesP3[lower] = true
		}
	}
	be.seed(t, docs...)
	keys := func(m map[string]bool) []string {
		return slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		})
	}
	// The first 300 documents hold the 300 names, in this order.
	firsts := func(from, to int) []string {
		var rows []string
		for i := from; i < to; i++ {
			rows = append(rows, fmt.Sprintf(`"name%d"`, i*7%300))
		}
		return rows
	}
	for _, tc := range []struct {
		query   string
		key     string
		want    []string
		ordered bool // the rows are want in its order, else in any
		scope   int  // the records the access path reads
	}{
		{"SELECT DISTINCT VALUE LOWER(c.name) FROM c", "", keys(names), false, n},
		{"SELECT DISTINCT LOWER(t) AS t FROM c JOIN t IN c.tags", "", keys(tags), false, n},
		{"SELECT DISTINCT VALUE LOWER(c.name) FROM c WHERE c.k >= 3", "", keys(namesK), false, n}, // a scan
		{`SELECT DISTINCT VALUE LOWER(c.name) FROM c`, `["p3"]`, keys(namesP3), false, n / 20},
		{"SELECT DISTINCT TOP 40 VALUE LOWER(c.name) FROM c", "", firsts(0, 40), true, 40},
		{"SELECT DISTINCT VALUE LOWER(c.name) FROM c OFFSET 10 LIMIT 50", "", firsts(10, 60), true, 60},
	} {
		be.e.seen = newSeenSets(seenSetsMax)
		p := QueryParams{ItemRef: batchRef(tc.key), Query: tc.query, CrossPartition: true, MaxItemCount: 7}
		if tc.key == "" {
			p.RangeID = "0"
		}
		var pages []*FeedPage
		var tokens []string
		examined := 0
		rows := drainRows(t, be.e, p, func(_ int, page *FeedPage) {
			pages = append(pages, page)
			tokens = append(tokens, page.Continuation)
			examined += page.Examined
			if page.Continuation != "" && be.e.seen.bytes == 0 {
				t.Errorf("%s: no set kept for the page after %d", tc.query, len(pages))
			}
		})
		got := rows
		if !tc.ordered {
			got = slices.Sorted(slices.Values(rows))
		}
		if !slices.Equal(got, tc.want) {
			t.Fatalf("%s: %d rows %v, want the %d distinct %v", tc.query, len(rows), got, len(tc.want), tc.want)
		}
		// Each page reads from where the last ended: every record of the
		// access path once, and the one it ends at again.
		if examined > tc.scope+len(pages) {
			t.Errorf("%s: %d pages read %d records, want at most %d", tc.query, len(pages), examined, tc.scope+len(pages))
		}
		if be.e.seen.bytes != 0 || len(be.e.seen.sets) != 0 {
			t.Errorf("%s: %d bytes of sets kept after the last page", tc.query, be.e.seen.bytes)
		}

		// Every page again from its token, whose set the drain took:
		// the page rebuilds it, reading from the start, and keeps it
		// for its own token, which the next page then resumes from.
		same := func(a, b []byte) bool { return string(a) == string(b) }
		for i := 1; i < len(pages); i++ {
			p.Continuation = tokens[i-1]
			page, err := be.e.QueryItems(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(page.Items, pages[i].Items, same) {
				t.Fatalf("%s: page %d again: %q, want %q", tc.query, i+1, page.Items, pages[i].Items)
			}
			if i < 2 || i+1 == len(pages) {
				continue
			}
			if page.Examined < pages[i].Examined+pages[i-1].Examined-1 {
				t.Errorf("%s: page %d again read %d records, not those before it", tc.query, i+1, page.Examined)
			}
			p.Continuation = page.Continuation
			next, err := be.e.QueryItems(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(next.Items, pages[i+1].Items, same) || next.Examined != pages[i+1].Examined {
				t.Fatalf("%s: page %d after a rebuilt one: %q in %d records, want %q in %d", tc.query, i+2, next.Items, next.Examined, pages[i+1].Items, pages[i+1].Examined)
			}
		}

		// A token from before the sets (version 4) had no position, and
		// its skip counted the rows returned (after OFFSET).
		if len(pages) > 2 {
			k := mustCursor(t, tokens[0])
			k.pos, k.kept, k.made, k.skip = nil, 0, 0, len(pages[0].Items)+len(pages[1].Items)
			b, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(k.String(), cursorPrefix))
			b = slices.Delete(b, len(b)-5, len(b)) // the distinct id and the check
			b[0] = 4
			p.Continuation = cursorPrefix + base64.RawURLEncoding.EncodeToString(b)
			page, err := be.e.QueryItems(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(page.Items, pages[2].Items, same) {
				t.Fatalf("%s: page 3 from an old token: %q, want %q", tc.query, page.Items, pages[2].Items)
			}
		}
	}
}

func mustCursor(t testing.TB, token string) cursor {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(token, cursorPrefix))
	if err != nil || len(b) < 9 {
		t.Fatalf("token %q: %v", token, err)
	}
	var fp uint64
	for _, x := range b[1:9] {
		fp = fp<<8 | uint64(x)
	}
	k, derr := parseCursor(token, fp)
	if derr != nil {
		t.Fatal(derr)
	}
	return k
}

// The sets kept for DISTINCT pages stay within their room, the least
// recently kept dropped first, and no longer than keptIdleMax; a set is
// the token's only with the token's query and position.
func TestSeenSetsRoom(t *testing.T) {
	s := newSeenSets(300)
	t0 := time.Unix(1_700_000_000, 0)
	set := func(id uint64, bytes int) *seenSet {
		return &seenSet{id: id, fp: 9, pos: []byte{byte(id)}, bytes: bytes}
	}
	s.keep(set(1, 100), t0)
	s.keep(set(2, 100), t0)
	s.keep(set(3, 100), t0)
	s.keep(set(4, 150), t0) // drops 1 and 2
	s.keep(set(5, 400), t0) // too large to keep
	if s.bytes != 250 || len(s.sets) != 2 {
		t.Fatalf("%d bytes in %d sets, want 250 in 2", s.bytes, len(s.sets))
	}
	for _, tc := range []struct {
		k    cursor
		want bool
	}{
		{cursor{kept: 1, fingerprint: 9, pos: []byte{1}}, false},
		{cursor{kept: 3, fingerprint: 8, pos: []byte{3}}, false}, // another query's: and dropped
		{cursor{kept: 3, fingerprint: 9, pos: []byte{3}}, false}, // taken by the last
		{cursor{kept: 4, fingerprint: 9, pos: []byte{4}, skip: 1}, false},
		{cursor{kept: 0, fingerprint: 9}, false},
	} {
		if got := s.take(tc.k) != nil; got != tc.want {
			t.Errorf("take(%+v) = %v", tc.k, got)
		}
	}
	s.keep(set(6, 10), t0)
	if s.take(cursor{kept: 6, fingerprint: 9, pos: []byte{6}}) == nil || s.bytes != 0 {
		t.Errorf("set 6 not taken, or %d bytes left", s.bytes)
	}

	// Ageing: forget drops what was kept before its time, and only that.
	s.keep(set(7, 10), t0)
	s.keep(set(8, 10), t0.Add(time.Minute))
	s.keep(set(9, 10), t0.Add(2*time.Minute))
	s.forget(t0.Add(time.Minute))
	if s.bytes != 20 || len(s.sets) != 2 {
		t.Fatalf("after forget: %d bytes in %d sets, want 20 in 2", s.bytes, len(s.sets))
	}
	if s.take(cursor{kept: 7, fingerprint: 9, pos: []byte{7}}) != nil ||
		s.take(cursor{kept: 8, fingerprint: 9, pos: []byte{8}}) == nil {
		t.Error("forget dropped the wrong set")
	}
	s.forget(t0.Add(time.Hour))
	if s.bytes != 0 || len(s.sets) != 0 || s.order.Len() != 0 {
		t.Errorf("after forgetting all: %d bytes in %d sets, %d in order", s.bytes, len(s.sets), s.order.Len())
	}
}
