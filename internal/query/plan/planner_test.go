package plan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/parser"
)

// TestRangeBoundsExcluded: a range's bound is excluded by > and <, on
// either side of the comparison, and not by BETWEEN, >= or <=.
func TestRangeBoundsExcluded(t *testing.T) {
	tests := []struct {
		where          string
		exclLo, exclHi bool
	}{
		{"c.n > 10 AND c.n <= 20", true, false},
		{"c.n >= 10 AND c.n < 20", false, true},
		{"10 < c.n", true, false},
		{"20 > c.n", false, true},
		{"c.n BETWEEN 10 AND 20", false, false},
		{"c.s > 'a' AND c.s < 'b'", true, true},
	}
	for _, tt := range tests {
		q, err := parser.Parse("SELECT * FROM c WHERE " + tt.where)
		if err != nil {
			t.Fatal(err)
		}
		terms := Terms(Predicates(q, nil))
		if len(terms) != 1 || len(terms[0].Spans) != 1 {
			t.Fatalf("%s: terms %+v, want one span", tt.where, terms)
		}
		if sp := terms[0].Spans[0]; sp.ExclLo != tt.exclLo || sp.ExclHi != tt.exclHi {
			t.Errorf("%s: excluded low %v, high %v; want %v, %v", tt.where, sp.ExclLo, sp.ExclHi, tt.exclLo, tt.exclHi)
		}
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		where string
		want  []string // one label per term
	}{
		{"c.n > 10", []string{"/n > 10"}},
		{"c.n > 10 AND c.n <= 20", []string{"/n > 10 AND /n <= 20"}},
		{"c.n > 10 AND c.n = 12", []string{"/n = 12"}},
		{"c.n IN (1, 2, 2) AND STARTSWITH(c.s, 'a')", []string{"/n IN (3 values)", "/s STARTSWITH \"a\""}},
		{"c.n > 'a' AND c.n < 5", []string{"/n > \"a\""}},
		{"IS_DEFINED(c.n) AND c.a = [1]", []string{"IS_DEFINED(/n)"}},
		{"IS_NUMBER(c.n) AND is_string(c.s) AND IS_PRIMITIVE(c.p) AND IS_ARRAY(c.a) AND IS_OBJECT(c.o) AND IS_BOOL(c.b)",
			[]string{"IS_NUMBER(/n)", "IS_STRING(/s)", "IS_PRIMITIVE(/p)", "IS_ARRAY(/a)", "IS_OBJECT(/o)", "IS_BOOL(/b)"}},
		{"IS_DEFINED(c.n) AND c.n > 2", []string{"/n > 2"}},
		{"IS_NUMBER(c.n) AND c.n = 'a'", []string{`/n = "a"`}},
		{"IS_INTEGER(c.n) AND NOT IS_DEFINED(c.m) AND IS_DEFINED(c.tags[0]) AND IS_DEFINED(c.n, 1)", nil},
		{"c.n > 1 OR c.m = 2", nil},
		{"c.id = 'a' OR c.id = 'b'", []string{"/id IN (2 values)"}},
		{"(c.n = 1 OR 2 = c.n OR c.n IN (3, 4)) AND c.s = 'x'", []string{"/n IN (4 values)", "/s = \"x\""}},
		{"c.n = 1 OR c.m = 2", nil},
		{"c.n = 1 OR c.n > 2", nil},
		{"c.n = 1 OR c.n NOT IN (2)", nil},
		{"ARRAY_CONTAINS(['a', 'b', 'c'], c.id)", []string{"/id IN (3 values)"}},
		{"ARRAY_CONTAINS([1, 2], c.n, false)", []string{"/n IN (2 values)"}},
		{"ARRAY_CONTAINS([1, 2], c.n, true)", nil},
		{"ARRAY_CONTAINS([{'a': 1}], c.n)", nil},
		{"ARRAY_CONTAINS([], c.n)", nil},
		{"ARRAY_CONTAINS(c.tags, 'a')", []string{"/tags/[] = \"a\""}},
		{"ARRAY_CONTAINS(c.o.tags, 2, false)", []string{"/o/tags/[] = 2"}},
		{"ARRAY_CONTAINS(c.tags, {'a': 1})", nil},
		{"ARRAY_CONTAINS(c.tags, 'a', true)", []string{`/tags/[] = "a"`}},
	}
	for _, tt := range tests {
		q, err := parser.Parse("SELECT * FROM c WHERE " + tt.where)
		if err != nil {
			t.Fatal(err)
		}
		terms := Terms(Predicates(q, nil))
		var got []string
		for _, term := range terms {
			got = append(got, term.Label)
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: terms %q, want %q", tt.where, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: term %d is %q, want %q", tt.where, i, got[i], tt.want[i])
			}
		}
	}
	q, _ := parser.Parse("SELECT * FROM c WHERE c.n IN (1, 2, 2)")
	if spans := Terms(Predicates(q, nil))[0].Spans; len(spans) != 2 {
		t.Errorf("IN with a repeated value: %d spans, want 2", len(spans))
	}
}

func TestChoose(t *testing.T) {
	term := Term{Path: []string{"n"}, Spans: []Span{{Kind: SpanRange, Lo: document.Int(10), HasLo: true}}, Label: "/n > 10"}
	other := Term{Path: []string{"s"}, Spans: []Span{{Kind: SpanValue, Lo: document.Str("x")}}, Label: "/s = x"}
	partition := Scope{Kind: ScopePartition, Items: 100, ContainerItems: 1_000_000}
	all := Scope{Kind: ScopeAll, Items: 1_000_000, ContainerItems: 1_000_000}
	// Terms a composite's span bounds, not counted past it: the span's
	// locations, when the engine has them, filter the stream.
	both := Input{Scope: all, Terms: []Term{other, term}, Entries: []int64{5_001, 5_001}, Stopped: []bool{true, true},
		Composites: []CompositeUse{{Index: CompositeIndex{Paths: [][]string{{"s"}, {"n"}}, Desc: []bool{false, false}}, Eq: []int{0}, Next: 1, Entries: 5_000}},
		Stream:     &Ordered{Path: []string{"id"}, Want: 100, Term: -1, Filter: []int{0}}, WalkEntries: 1_000_000}
	byComposite := both
	byComposite.Stream = &Ordered{Path: []string{"id"}, Want: 100, Term: -1, Filter: []int{0}, FilterComposite: &both.Composites[0]}
	tests := []struct {
		name string
		in   Input
		want Access
	}{
		{"a partition's scan beats a wide span", Input{Scope: partition, Terms: []Term{term}, Entries: []int64{682}}, Scan},
		{"a narrow span beats a partition's scan", Input{Scope: partition, Terms: []Term{term}, Entries: []int64{20}}, IndexSpan},
		{"a selective span beats a container scan", Input{Scope: all, Terms: []Term{term}, Entries: []int64{1000}}, IndexSpan},
		{"an unselective span loses to a container scan", Input{Scope: all, Terms: []Term{term}, Entries: []int64{600_000}}, Scan},
		{"an unindexed term is no path", Input{Scope: all, Terms: []Term{term}, Entries: []int64{-1}}, Scan},
		{"two wide terms intersect", Input{Scope: all, Terms: []Term{term, other}, Entries: []int64{100_000, 100_000}}, Intersect},
		{"TOP 10 walks the order", Input{Scope: all, Ordered: &Ordered{Path: []string{"n"}, Want: 10, Term: -1}, WalkEntries: 1_000_000}, OrderedWalk},
		{"TOP 10 in a small partition scans it", Input{Scope: partition, Ordered: &Ordered{Path: []string{"n"}, Want: 10, Term: -1}, WalkEntries: 1_000_000}, Scan},
		{"a page streams the order", Input{Scope: all, Stream: &Ordered{Path: []string{"n"}, Want: 100, Term: -1}, WalkEntries: 1_000_000}, OrderedStream},
		{"a page over several keys streams small groups", Input{Scope: all, Stream: &Ordered{Path: []string{"n"}, Want: 100, Term: -1, Group: 1_000}, WalkEntries: 1_000_000}, OrderedStream},
		// An equality on another path: a two-hundredth of the items, then
		// most of them, then a few.
		{"a page streams the order filtered by a term's items", Input{Scope: all, Terms: []Term{other}, Entries: []int64{5_000},
			Stream: &Ordered{Path: []string{"n"}, Want: 100, Term: -1, Filter: []int{0}}, WalkEntries: 1_000_000}, FilteredStream},
		{"a wide filter is not worth its entries", Input{Scope: all, Terms: []Term{other}, Entries: []int64{900_000},
			Stream: &Ordered{Path: []string{"n"}, Want: 100, Term: -1, Filter: []int{0}}, WalkEntries: 1_000_000}, OrderedStream},
		{"a few items are read whole", Input{Scope: all, Terms: []Term{other}, Entries: []int64{40},
			Stream: &Ordered{Path: []string{"n"}, Want: 100, Term: -1, Filter: []int{0}}, WalkEntries: 1_000_000}, IndexSpan},
		// An OFFSET the stream counts by its entries: the walk steps
		// through the skipped rows' entries, a two-hundredth of which
		// name its rows, but reads none of their records.
		{"a short offset is counted by the filtered walk", Input{Scope: all, Terms: []Term{other}, Entries: []int64{5_000},
			Stream: &Ordered{Path: []string{"n"}, Want: 20, Skip: 10, Term: -1, Filter: []int{0}}, WalkEntries: 1_000_000}, FilteredStream},
		{"a long offset costs the filtered walk its entries", Input{Scope: all, Terms: []Term{other}, Entries: []int64{5_000},
			Stream: &Ordered{Path: []string{"n"}, Want: 20, Skip: 500, Term: -1, Filter: []int{0}}, WalkEntries: 1_000_000}, IndexSpan},
		{"a long offset's records are not read", Input{Scope: all,
			Stream: &Ordered{Path: []string{"n"}, Want: 20, Skip: 5_000, Term: -1}, WalkEntries: 1_000_000}, OrderedStream},
		// NOT IS_DEFINED: the items without a path, through its
		// absence entries, when few lack it.
		{"a few items without a path are read through their entries", Input{Scope: all, Absent: []string{"done"}, AbsentEntries: 5_000}, AbsentScan},
		{"a stream whose terms are not counted is not filtered", both, CompositeSpan},
		{"a stream is filtered by a composite's span", byComposite, FilteredStream},
		// An OR of few items beside a term of half the items: the
		// stream would walk to its rows past most of the path.
		{"a stream's rows are among an OR's items", Input{Scope: all, Terms: []Term{other}, Entries: []int64{500_000},
			Union: []Term{term, other}, UnionEntries: []int64{20, 24},
			Stream: &Ordered{Path: []string{"id"}, Want: 10, Term: -1}, WalkEntries: 1_000_000}, Union},
		{"most items without a path are scanned", Input{Scope: all, Absent: []string{"done"}, AbsentEntries: 900_000}, Scan},
		{"a partition's own entries of items without a path", Input{Scope: partition, Absent: []string{"done"}, AbsentEntries: 10, AbsentScoped: true}, AbsentScan},
		{"a page over several keys scans rather than read half the container", Input{Scope: all, Stream: &Ordered{Path: []string{"n"}, Want: 100, Term: -1, Group: 500_000}, WalkEntries: 1_000_000}, Scan},
	}
	if p := PointPlan(ScopePartition, []Term{term}, 1); p.Chosen.Access != PointRead || len(p.Considered) != 1 || p.Explain() == "" {
		t.Errorf("PointPlan chose %v of %d paths", p.Chosen.Access, len(p.Considered))
	}
	for _, tt := range tests {
		p := Choose(tt.in)
		if p.Chosen.Access != tt.want {
			t.Errorf("%s: chose %v, want %v\n%s", tt.name, p.Chosen.Access, tt.want, p.Explain())
		}
		if p.Explain() == "" || p.Summary() == "" {
			t.Errorf("%s: no explanation", tt.name)
		}
	}
}

func TestCompositeUses(t *testing.T) {
	comps := []CompositeIndex{
		{Ordinal: 0, Paths: [][]string{{"a"}, {"b"}, {"c"}}, Desc: []bool{false, true, false}},
		{Ordinal: 1, Paths: [][]string{{"s"}, {"n"}}, Desc: []bool{false, false}},
	}
	tests := []struct {
		query string
		want  []string // "ordinal terms [ordered [reverse]]"
	}{
		// Every path needs a term: an item lacking one is not in the index.
		{"SELECT * FROM c WHERE c.a = 1 AND c.b > 2", nil},
		{"SELECT TOP 5 * FROM c WHERE IS_DEFINED(c.s) AND c.n > 1 ORDER BY c.s, c.n", nil},
		{"SELECT TOP 5 * FROM c WHERE IS_PRIMITIVE(c.s) AND IS_ARRAY(c.n) ORDER BY c.s, c.n", nil},
		// A type check of scalars holds only for items the index holds.
		{"SELECT TOP 5 * FROM c WHERE IS_STRING(c.s) AND c.n > 1 ORDER BY c.s, c.n", []string{"1 eq=0 next=/s", "1 eq=0 next=/s ordered"}},
		{"SELECT TOP 5 * FROM c WHERE c.s = 'a' AND IS_PRIMITIVE(c.n) ORDER BY c.n", []string{"1 eq=1 next=/n", "1 eq=1 next=/n ordered"}},
		{"SELECT * FROM c WHERE c.a = 1 AND c.b > 2 AND c.c = 3", []string{"0 eq=1 next=/b"}},
		{"SELECT * FROM c WHERE c.c = 3 AND c.b = 2 AND c.a = 1", []string{"0 eq=3 next="}},
		// An IN list fixes its path to each of its values, a span each.
		{"SELECT * FROM c WHERE c.a IN (1, 2) AND c.b = 2 AND c.c = 3", []string{"0 eq=3 next="}},
		{"SELECT * FROM c WHERE c.a IN (1, 2) AND c.b IN (3, 4) AND c.c > 3", []string{"0 eq=2 next=/c"}},
		{"SELECT TOP 5 * FROM c WHERE c.s IN ('a', 'b') AND c.n > 1 ORDER BY c.s, c.n", []string{"1 eq=1 next=/n", "1 eq=1 next=/n ordered"}},
		{"SELECT TOP 5 * FROM c WHERE c.s IN ('a', 'b') AND c.n > 1 ORDER BY c.s DESC, c.n DESC", []string{"1 eq=1 next=/n", "1 eq=1 next=/n ordered reverse"}},
		// Its values' spans are walked in the path's order: the ORDER BY
		// must take it, in its direction.
		{"SELECT TOP 5 * FROM c WHERE c.s IN ('a', 'b') AND c.n > 1 ORDER BY c.n", []string{"1 eq=1 next=/n"}},
		{"SELECT TOP 5 * FROM c WHERE c.s IN ('a', 'b') AND c.n > 1 ORDER BY c.s DESC, c.n", []string{"1 eq=1 next=/n"}},
		{"SELECT TOP 5 * FROM c WHERE c.a = 1 AND c.b IN (1, 2) AND c.c < 3 ORDER BY c.b, c.c DESC", []string{"0 eq=2 next=/c", "0 eq=2 next=/c ordered reverse"}},
		{"SELECT TOP 5 * FROM c WHERE c.a = 1 AND c.b IN (1, 2) AND c.c < 3 ORDER BY c.c DESC", []string{"0 eq=2 next=/c"}},
		{"SELECT TOP 5 * FROM c WHERE c.a IN (1, 2) AND c.b = 2 AND c.c < 3 ORDER BY c.a, c.b, c.c", []string{"0 eq=2 next=/c", "0 eq=2 next=/c ordered"}},
		{"SELECT TOP 5 * FROM c WHERE c.s > 'a' AND c.n > 1 ORDER BY c.s, c.n", []string{"1 eq=0 next=/s", "1 eq=0 next=/s ordered"}},
		{"SELECT TOP 5 * FROM c WHERE c.s > 'a' AND c.n > 1 ORDER BY c.s DESC, c.n DESC", []string{"1 eq=0 next=/s", "1 eq=0 next=/s ordered reverse"}},
		{"SELECT TOP 5 * FROM c WHERE c.s > 'a' AND c.n > 1 ORDER BY c.s, c.n DESC", []string{"1 eq=0 next=/s"}},
		{"SELECT TOP 5 * FROM c WHERE c.s > 'a' AND c.n > 1 ORDER BY c.n", []string{"1 eq=0 next=/s"}},
		// An equality fixes a leading path: the ORDER BY may start after it,
		// and its direction there does not matter.
		{"SELECT TOP 5 * FROM c WHERE c.s = 'a' AND c.n > 1 ORDER BY c.n DESC", []string{"1 eq=1 next=/n", "1 eq=1 next=/n ordered reverse"}},
		{"SELECT TOP 5 * FROM c WHERE c.s = 'a' AND c.n > 1 ORDER BY c.s DESC, c.n", []string{"1 eq=1 next=/n", "1 eq=1 next=/n ordered"}},
		{"SELECT TOP 5 * FROM c WHERE c.a = 1 AND c.b < 2 AND c.c < 3 ORDER BY c.b, c.c DESC", []string{"0 eq=1 next=/b", "0 eq=1 next=/b ordered reverse"}},
		{"SELECT TOP 5 * FROM c WHERE c.a > 1 AND c.b < 2 AND c.c < 3 ORDER BY c.b, c.c DESC", []string{"0 eq=0 next=/a"}},
	}
	for _, tt := range tests {
		q, err := parser.Parse(tt.query)
		if err != nil {
			t.Fatal(err)
		}
		terms := Terms(Predicates(q, nil))
		var order []OrderKey
		for _, o := range q.OrderBy {
			p, _ := DocPath(q, o.Expr)
			order = append(order, OrderKey{Path: p, Desc: o.Desc})
		}
		var got []string
		for _, u := range CompositeUses(comps, terms, order, 5) {
			s := fmt.Sprintf("%d eq=%d next=", u.Index.Ordinal, len(u.Eq))
			if u.Next >= 0 {
				s += pathLabel(terms[u.Next].Path)
			}
			if u.Ordered {
				s += " ordered"
			}
			if u.Reverse {
				s += " reverse"
			}
			got = append(got, s)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s:\n got  %q\n want %q", tt.query, got, tt.want)
		}
	}
}

func TestOrderedBound(t *testing.T) {
	all := Scope{Kind: ScopeAll, Items: 6000, ContainerItems: 6000}
	partition := Scope{Kind: ScopePartition, Items: 1000, ContainerItems: 6000}
	page := &Ordered{Path: []string{"n"}, Want: 10, Term: 0}
	tests := []struct {
		name  string
		in    Input
		o     *Ordered
		probe int64
		want  int64
	}{
		{"a page, no other term", Input{Scope: all, Entries: []int64{0}}, page, 2280, 11},
		{"a selective other term widens the walk", Input{Scope: all, Entries: []int64{0, 600}}, page, 2280, 101},
		{"an unindexed other term does not", Input{Scope: all, Entries: []int64{0, -1}}, page, 2280, 11},
		{"a partition's share of the entries", Input{Scope: partition, Entries: []int64{0}}, page, 2280, 61},
		{"never past the probe", Input{Scope: all, Entries: []int64{0, 6}}, page, 2280, 2280},
		// A term the walk meets by its entries' place (a composite's
		// fixed path) narrows nothing the walk reads.
		{"a term the walk meets", Input{Scope: all, Entries: []int64{0, 600}}, &Ordered{Path: []string{"n"}, Want: 10, Term: 0, Within: []int{1}}, 2280, 11},
	}
	for _, tt := range tests {
		if got := OrderedBound(tt.in, tt.o, tt.probe); got != tt.want {
			t.Errorf("%s: OrderedBound = %d, want %d", tt.name, got, tt.want)
		}
	}
	// The other terms, when the walk meets them all, are worth counting
	// up to the walk's page: a page's share of the container's entries.
	for _, tt := range []struct {
		s     Scope
		probe int64
		want  int64
	}{{all, 2280, 11}, {partition, 2280, 61}, {all, 5, 5}} {
		if got := WithinBound(Input{Scope: tt.s}, page, tt.probe); got != tt.want {
			t.Errorf("WithinBound(%v, probe %d) = %d, want %d", tt.s, tt.probe, got, tt.want)
		}
	}
}

// TestPartnerBound checks that counting the wider terms only up to
// PartnerBound changes no choice: over random scopes and counts, the
// plan chosen with every count exact (up to the probe) and the plan chosen
// with the wider ones stopped at the bound take the same path, whether
// each count is the scope's own (Input.Scoped) or the container's.
func TestPartnerBound(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	paths := [][]string{{"a"}, {"b"}, {"c"}}
	for i := range 20_000 {
		scope, probe := randomScope(rnd)
		n := scope.ContainerItems
		k := 2 + rnd.IntN(2)
		terms := make([]Term, k)
		exact := make([]int64, k)
		scoped := make([]bool, k)
		for j := range k {
			terms[j] = Term{Path: paths[j], Spans: []Span{{Kind: SpanValue, Lo: document.Int(int64(j))}}}
			// Counts spread over every order of magnitude, a scoped
			// one's over the scope's.
			size := n
			if scope.Kind != ScopeAll && rnd.IntN(2) == 0 {
				scoped[j], size = true, scope.Items
			}
			exact[j] = min(probe, int64(math.Pow(float64(size), rnd.Float64())))
		}
		first := slices.Index(exact, slices.Min(exact))
		narrowest := exact[first]
		capped := slices.Clone(exact)
		for j, e := range capped {
			capped[j] = min(e, max(narrowest, PartnerBound(scope, probe, narrowest, scoped[first])))
		}
		want := Choose(Input{Scope: scope, Terms: terms, Entries: exact, Scoped: scoped}).Chosen
		got := Choose(Input{Scope: scope, Terms: terms, Entries: capped, Scoped: scoped}).Chosen
		if got.Access != want.Access || !slices.Equal(got.Terms, want.Terms) {
			t.Fatalf("case %d: scope %+v, counts %v, stopped at %v: chose %v %v, want %v %v", i, scope, exact, capped, got.Access, got.Terms, want.Access, want.Terms)
		}
	}
	if got := PartnerBound(Scope{Kind: ScopeAll, Items: 100_000, ContainerItems: 100_000}, 37_751, 1, false); got != 18 {
		t.Errorf("PartnerBound after an id's one entry = %d, want 18", got)
	}
	if got := PartnerBound(Scope{Kind: ScopeAll, Items: 100_000, ContainerItems: 100_000}, 37_751, 10_000, false); got != 37_751 {
		t.Errorf("PartnerBound past the probe = %d, want the probe", got)
	}
}

// TestWalkBound checks that counting a walk's one filter term only up to
// WalkBound changes no choice: over random scopes, pages and counts, the
// plan chosen with the count exact (up to the probe) and the plan chosen
// with the count stopped at the bound (read as the probe, and marked
// stopped, as the engine does) take the same path, whether the walk is a
// stream that may use the term as its filter or a TOP walk, and whether
// the count is the scope's own.
func TestWalkBound(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	terms := []Term{
		{Path: []string{"t"}},
		{Path: []string{"k"}, Spans: []Span{{Kind: SpanValue, Lo: document.Int(1)}}},
	}
	bounded := 0
	for c := range 20_000 {
		scope, probe := randomScope(rnd)
		n := scope.ContainerItems
		o := &Ordered{Path: []string{"t"}, Want: int64(1 + rnd.IntN(1000)), Term: -1}
		if rnd.IntN(2) == 0 {
			o.Term = 0
		}
		if rnd.IntN(3) == 0 {
			o.Undefined, o.Absent = true, rnd.IntN(2) == 0
		}
		in := Input{Scope: scope, Terms: terms, Entries: []int64{0, 0}, WalkEntries: n}
		stream := rnd.IntN(3) > 0
		if stream {
			in.Stream = o
			o.Filter = []int{1}
			if rnd.IntN(4) == 0 {
				o.Group = rnd.Int64N(1000)
			}
		} else {
			in.Ordered = o
		}
		scoped := scope.Kind != ScopeAll && rnd.IntN(2) == 0
		size := n
		if scoped {
			size = scope.Items
		}
		if scoped || o.Scoped {
			in.WalkEntries = scope.Items
		}
		exact := min(probe, int64(math.Pow(float64(size), rnd.Float64())))
		// The count of the order's own term, made after the filter's.
		walked := in.WalkEntries
		if o.Term >= 0 {
			walked = 1 + rnd.Int64N(in.WalkEntries)
		}
		bound := WalkBound(in, o, 1, scoped, probe)
		if bound > probe {
			t.Fatalf("case %d: bound %d past the probe %d", c, bound, probe)
		}
		weigh := func(e int64, stopped bool) Path {
			in := in
			in.Entries = []int64{-1, e}
			if o.Term >= 0 {
				in.Entries[0] = walked
			}
			in.Scoped = []bool{false, scoped}
			in.Stopped = []bool{false, stopped}
			return Choose(in).Chosen
		}
		want := weigh(exact, false)
		got := want
		if exact >= bound && bound < probe {
			bounded++
			got = weigh(probe, true)
		}
		if got.Access != want.Access || !slices.Equal(got.Terms, want.Terms) {
			t.Fatalf("case %d: scope %+v, walk %+v (stream %v), count %d, bound %d: chose %v %v, want %v %v", c, scope, *o, stream, exact, bound, got.Access, got.Terms, want.Access, want.Terms)
		}
	}
	if bounded < 1000 {
		t.Errorf("the bound stopped %d counts of 20,000; the test weighs too few", bounded)
	}
	// The shape of BenchmarkDeepPage/eq-order-wide at 2·10⁵ items: a
	// stream of 101 rows, its filter counted to 18,916 rather than to
	// the probe of 75,488.
	scope := Scope{Kind: ScopeAll, Items: 200_000, ContainerItems: 200_000}
	o := &Ordered{Path: []string{"t"}, Want: 101, Term: -1, Filter: []int{1}}
	in := Input{Scope: scope, Terms: terms, Entries: []int64{-1, 0}, WalkEntries: 200_000, Stream: o}
	if got := WalkBound(in, o, 1, false, 75_488); got < 15_000 || got > 20_000 {
		t.Errorf("WalkBound for a page of 101 over 2·10⁵ items = %d, want about √(16.7·101·2·10⁵)", got)
	}
}

// TestCompositeWalkBound checks that counting the terms and the
// composite's span only up to CompositeWalkBound changes no choice: over
// random scopes, counts and pages, a composite (/a, /b) that a TOP walks
// in order, with a term on each of its paths and one elsewhere, the plan
// chosen with every count exact (up to the probe) and the plan chosen
// with the counts that reach the bound stopped there (read as the probe,
// as the engine reads them) are the same.
func TestCompositeWalkBound(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	comp := CompositeIndex{Paths: [][]string{{"a"}, {"b"}}, Desc: []bool{false, false}}
	terms := []Term{
		{Path: []string{"a"}, Spans: []Span{{Kind: SpanRange, Lo: document.Int(1), HasLo: true}}},
		{Path: []string{"b"}, Spans: []Span{{Kind: SpanRange, Lo: document.Int(1), HasLo: true}}},
		{Path: []string{"x"}, Spans: []Span{{Kind: SpanValue, Lo: document.Int(1)}}},
	}
	bounded := 0
	for c := range 20_000 {
		scope, probe := randomScope(rnd)
		n := scope.ContainerItems
		exact := func() int64 { return min(probe, int64(math.Pow(float64(n), rnd.Float64()))) }
		entries := []int64{exact(), exact(), exact()}
		if rnd.IntN(2) == 0 {
			entries[2] = -1 // no term elsewhere
		}
		span := min(probe, int64(float64(entries[0])*(0.5+rnd.Float64()/2)))
		want := int64(1 + rnd.IntN(1000))
		uses := []CompositeUse{
			{Index: comp, Next: 0, Entries: span},
			{Index: comp, Next: 0, Entries: span, Ordered: true, Want: want},
		}
		in := Input{Scope: scope, Terms: terms, Entries: entries, Scoped: make([]bool, len(terms)), Composites: uses}
		// As the engine counts: to the bound with nothing counted, then
		// on while the counts that ended raise it.
		counted := Input{Scope: scope, Terms: terms, Entries: make([]int64, len(terms)), Stopped: make([]bool, len(terms)), Composites: uses}
		for i, e := range entries {
			counted.Entries[i], counted.Stopped[i] = min(e, 0), e > 0
		}
		bound := CompositeWalkBound(counted, uses[1], probe)
		for {
			for i, e := range entries {
				if e >= 0 {
					counted.Entries[i], counted.Stopped[i] = min(e, bound), e >= bound
				}
			}
			next := CompositeWalkBound(counted, uses[1], probe)
			if bound >= probe || next <= bound {
				break
			}
			bound = next
		}
		if bound > probe {
			t.Fatalf("case %d: bound %d past the probe %d", c, bound, probe)
		}
		weigh := func(stop bool) Plan {
			in := in
			in.Entries, in.Stopped = slices.Clone(entries), make([]bool, len(entries))
			in.Composites = slices.Clone(uses)
			read := func(e int64) (int64, bool) {
				if stop && e >= bound && bound < probe {
					return probe, true
				}
				return e, false
			}
			for i, e := range in.Entries {
				if e >= 0 {
					in.Entries[i], in.Stopped[i] = read(e)
				}
			}
			for i := range in.Composites {
				in.Composites[i].Entries, _ = read(span)
			}
			if stop && slices.Contains(in.Stopped, true) {
				bounded++
			}
			return Choose(in)
		}
		// The same path, or one the exact counts weigh as cheap (a
		// composite's span and its walk tie when the walk is weighed
		// as reading the whole span).
		exactPlan, got := weigh(false), weigh(true).Chosen
		same := func(p Path) bool {
			return p.Access == got.Access && slices.Equal(p.Terms, got.Terms)
		}
		if i := slices.IndexFunc(exactPlan.Considered, same); i < 0 || exactPlan.Considered[i].Cost > exactPlan.Chosen.Cost*(1+1e-9) {
			t.Fatalf("case %d: scope %+v, counts %v, span %d, want %d rows, bound %d: chose %v %v, want %v %v", c, scope, entries, span, want, bound, got.Access, got.Terms, exactPlan.Chosen.Access, exactPlan.Chosen.Terms)
		}
	}
	if bounded < 1000 {
		t.Errorf("the bound stopped counts in %d cases of 20,000; the test weighs too few", bounded)
	}
}

// randomScope draws a container of 100 to about 10⁶ items, and half the
// time a logical partition of it, with the probe the engine counts to
// there.
func randomScope(rnd *rand.Rand) (Scope, int64) {
	n := int64(100 + rnd.IntN(1_000_000))
	scope := Scope{Kind: ScopeAll, Items: n, ContainerItems: n}
	if rnd.IntN(2) == 0 {
		scope = Scope{Kind: ScopePartition, Items: 1 + rnd.Int64N(n), ContainerItems: n}
	}
	return scope, int64(float64(scope.Items)/(0.15+2.5*scope.fraction())) + 16
}

// A partner whose count stopped at the probe holds more entries than
// the count says, all of which an intersection reads: it is not weighed
// at the count. Over 2·10⁴ items, c.k = 3 holds 2,857 entries and
// c.n >= 20 16,000, counted to the probe, 7,563; weighed there, the
// intersection looked cheaper than c.k's span and read 18,857 entries a
// page against 2,857.
func TestStoppedPartnerIsNotWeighed(t *testing.T) {
	scope := Scope{Kind: ScopeAll, Items: 20_000, ContainerItems: 20_000}
	terms := []Term{
		{Path: []string{"k"}, Spans: []Span{{Kind: SpanValue, Lo: document.Int(3)}}},
		{Path: []string{"n"}, Spans: []Span{{Kind: SpanRange, Lo: document.Int(20)}}},
	}
	in := Input{Scope: scope, Terms: terms, Entries: []int64{2_857, 16_000}}
	if got := Choose(in).Chosen; got.Access != IndexSpan || !slices.Equal(got.Terms, []int{0}) {
		t.Errorf("with the whole counts: chose %v %v, want the span of c.k", got.Access, got.Terms)
	}
	in.Entries, in.Stopped = []int64{2_857, 7_563}, []bool{false, true}
	if got := Choose(in).Chosen; got.Access != IndexSpan || !slices.Equal(got.Terms, []int{0}) {
		t.Errorf("with c.n's count stopped at the probe: chose %v %v, want the span of c.k", got.Access, got.Terms)
	}
	// A partner counted whole is weighed: 2,000 of c.n's entries make
	// the intersection the cheaper.
	in.Entries, in.Stopped = []int64{2_857, 2_000}, []bool{false, false}
	if got := Choose(in).Chosen; got.Access != Intersect {
		t.Errorf("with c.n's whole count of 2,000: chose %v %v, want the intersection", got.Access, got.Terms)
	}
}

func TestScanFirstBounds(t *testing.T) {
	scope := func(n int64) Scope { return Scope{Kind: ScopeAll, Items: n, ContainerItems: n} }
	tests := []struct {
		name         string
		s            Scope
		rows, probe  int64
		wide, budget int64
		ok           bool
	}{
		{"a page of 100 over 10⁵ items", scope(100_000), 100, 37_751, 8_166, 4_437, true},
		{"a TOP 10 over 10⁵ items", scope(100_000), 10, 37_751, 2_583, 5_275, true},
		{"a page that reads its whole scope", scope(100_000), 0, 37_751, 0, 0, false},
		{"a container too small to be worth it", scope(10_000), 100, 3_789, 2_583, 180, false},
	}
	for _, tt := range tests {
		wide, budget, ok := ScanFirstBounds(tt.s, tt.rows, tt.probe)
		if ok != tt.ok || ok && (wide != tt.wide || budget != tt.budget) {
			t.Errorf("%s: wide %d, budget %d, %v; want %d, %d, %v", tt.name, wide, budget, ok, tt.wide, tt.budget, tt.ok)
		}
	}
}

// A paced scan tried first may read the records its counts are worth,
// starts once its first records could fill the page, and is thin when
// what it finds, scaled to the scope, falls short of wide.
func TestPace(t *testing.T) {
	if got := PaceRecords(2668); got != 101 {
		t.Errorf("PaceRecords(2668) = %d, want 101", got)
	}
	if got := PaceStart(100); got != 2694 {
		t.Errorf("PaceStart(100) = %d, want 2694", got)
	}
	for _, rows := range []int64{1, 10, 11, 100, 1000} {
		if got := PaceRecords(PaceStart(rows)); got < rows+1 {
			t.Errorf("the first records of a paced scan, %d, cannot fill a page of %d and see more", got, rows)
		}
	}
	for _, tt := range []struct {
		hits, read, items, wide int64
		thin                    bool
	}{
		{1, 100, 200_000, 11_550, true},   // 2,000 of the scope's items pass
		{10, 100, 200_000, 11_550, false}, // 20,000 pass
		{0, 100, 200_000, 11_550, true},
		{6, 100, 200_000, 12_000, false}, // exactly wide
	} {
		if got := Thin(tt.hits, tt.read, tt.items, tt.wide); got != tt.thin {
			t.Errorf("Thin(%d, %d, %d, %d) = %v", tt.hits, tt.read, tt.items, tt.wide, got)
		}
	}
}

// A scan from the page's position beats collecting again when the records
// it reads cost less than the entries and the located records: 1,000
// entries and 50 rows cost 275 scanned records.
func TestScanBeatsCollect(t *testing.T) {
	for _, tt := range []struct {
		entries, rows, window int64
		scan                  bool
	}{
		{1_000, 50, 50, true},   // the next rows lie side by side
		{1_000, 50, 274, true},  // a sixth of the records scanned pass
		{1_000, 50, 275, false}, // the break-even
		{1_000, 50, 500, false}, // the rows spread like the container's
		{100_000, 100, 10_000, true},
		{0, 100, 251, false}, // nothing to collect: the located reads alone
	} {
		if got := ScanBeatsCollect(tt.entries, tt.rows, tt.window); got != tt.scan {
			t.Errorf("ScanBeatsCollect(%d, %d, %d) = %v", tt.entries, tt.rows, tt.window, got)
		}
	}
}

// An equality on a JOIN alias's elements is a term on the elements' path;
// a range on them is not (it would make an excluded path's query refused
// where it used to scan).
func TestJoinTerms(t *testing.T) {
	q, err := parser.Parse("SELECT VALUE t FROM c JOIN t IN c.tags JOIN u IN t.parts JOIN s IN (SELECT VALUE 1) WHERE t = 'a' AND 2 = u.n AND t > 'b' AND s = 1 AND c.k = 3")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, term := range Terms(Predicates(q, nil)) {
		got = append(got, term.Label)
	}
	want := []string{`/tags/[] = "a"`, "/tags/[]/parts/[]/n = 2", "/k = 3"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("terms %q, want %q", got, want)
	}
}

// EXISTS over an array of the document narrows the documents as a JOIN
// would; one whose subquery aggregates does not (COUNT answers a row
// whatever its filter).
func TestExistsTerms(t *testing.T) {
	tests := []struct {
		where string
		want  []string
	}{
		{"EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 'a')", []string{`/tags/[] = "a"`}},
		{"EXISTS(SELECT * FROM p IN c.parts WHERE p.n = 2 AND p.m > 3)", []string{"/parts/[]/n = 2"}},
		{"EXISTS(SELECT VALUE COUNT(1) FROM t IN c.tags WHERE t = 'a')", nil},
		{"EXISTS(SELECT VALUE t FROM t IN c.tags)", nil},
		{"NOT EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 'a')", nil},
		{"EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 'a' OR t = 'b')", []string{`/tags/[] IN (2 values)`}},
	}
	for _, tt := range tests {
		q, err := parser.Parse("SELECT * FROM c WHERE " + tt.where)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, term := range Terms(Predicates(q, nil)) {
			got = append(got, term.Label)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: terms %q, want %q", tt.where, got, tt.want)
		}
	}
}

// A JOIN that reads its own alias (not bound before it) gives no term and
// no endless resolution.
func TestJoinSelfReference(t *testing.T) {
	q, err := parser.Parse("SELECT VALUE t FROM c JOIN t IN t.tags WHERE t = 'a'")
	if err != nil {
		t.Fatal(err)
	}
	if terms := Terms(Predicates(q, nil)); len(terms) != 0 {
		t.Errorf("terms %v, want none", terms)
	}
}

// TestExact: a WHERE clause every term of which is a predicate is exact;
// a term of another shape, or an EXISTS, is not.
func TestExact(t *testing.T) {
	tests := []struct {
		query string
		exact bool
	}{
		{"SELECT * FROM c", true},
		{"SELECT * FROM c WHERE c.n > 10 AND c.n <= 20", true},
		{"SELECT * FROM c WHERE c.k IN (1, 2) AND STARTSWITH(c.s, 'a') AND IS_DEFINED(c.d)", true},
		{"SELECT * FROM c WHERE ARRAY_CONTAINS(c.tags, 'x') AND (c.g = 1 OR c.g = 2)", true},
		{"SELECT c.n FROM c JOIN t IN c.tags WHERE t = 'x'", true},
		{"SELECT * FROM c WHERE c.n BETWEEN 1 AND @hi", true},
		{"SELECT * FROM c WHERE c.f = 2 AND c.n % 7 = 3", false},
		{"SELECT * FROM c WHERE c.f = 2 AND c.a = c.b", false},
		{"SELECT * FROM c WHERE c.f != 2 AND NOT (c.g < 'x')", true},
		{"SELECT * FROM c WHERE c.f != null", false},
		{"SELECT * FROM c WHERE NOT (c.f = c.g)", false},
		{"SELECT * FROM c WHERE c.n = @missing", false},
		{"SELECT * FROM c WHERE ARRAY_CONTAINS(c.tags, {'a': 1}, true)", false},
		{"SELECT * FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 'x')", false},
	}
	params := map[string]document.Value{"@hi": document.Int(9)}
	for _, tt := range tests {
		q, err := parser.Parse(tt.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := Exact(q, params); got != tt.exact {
			t.Errorf("%s: exact %v, want %v", tt.query, got, tt.exact)
		}
	}
}

// dedupe keeps the first of each value, in the list's order; values of
// different kinds never repeat one another.
func TestDedupe(t *testing.T) {
	var spans []Span
	for _, v := range []document.Value{document.Int(1), document.Str("a"), document.Float(1), document.Int(2), document.Str("a"), document.BoolValue(true), document.Int(1), document.Str("1")} {
		spans = append(spans, Span{Lo: v, Hi: v})
	}
	var got []string
	for _, s := range dedupe(spans) {
		got = append(got, string(s.Lo.JSON()))
	}
	if want := []string{`1`, `"a"`, `2`, `true`, `"1"`}; !slices.Equal(got, want) {
		t.Errorf("dedupe: %v, want %v", got, want)
	}
}

// BenchmarkDedupe: an IN list of 60,000 distinct values.
func BenchmarkDedupe(b *testing.B) {
	spans := make([]Span, 60_000)
	for i := range spans {
		v := document.Str(fmt.Sprint(i))
		spans[i] = Span{Lo: v, Hi: v}
	}
	for b.Loop() {
		dedupe(slices.Clone(spans))
	}
}

// GatherBound goes on counting a stream's filter past WalkBound only as
// far as a count that ends there makes the filtered stream, reading the
// rest of the term's entries, cheaper than the plain stream for the page:
// the shape of BenchmarkDeepPage/eq-order at 2·10⁵ items (c.m IN (5, 6),
// 23,529 entries, counted to 19,656 by WalkBound) ends within it, and a
// filter of six sevenths of the items is counted a little further, not
// to its end.
func TestGatherBound(t *testing.T) {
	terms := []Term{
		{Path: []string{"t"}},
		{Path: []string{"m"}, Spans: []Span{{Kind: SpanValue, Lo: document.Int(5)}, {Kind: SpanValue, Lo: document.Int(6)}}},
	}
	scope := Scope{Kind: ScopeAll, Items: 200_000, ContainerItems: 200_000}
	const probe = 75_488
	for _, tc := range []struct {
		read      int64
		min, max  int64 // the bound's
		stream    Access
		exact     int64 // a count that ends there
		ends      bool  // within the bound
		afterward Access
	}{
		{read: 19_656, min: 25_000, max: probe, exact: 23_529, ends: true, afterward: FilteredStream},
		// Counted to a quarter, the term looks a fifth of the items:
		// the plain stream reads about 420 records for 101 rows, and
		// the count goes on for what their difference costs.
		{read: 171_428 / 4, min: 171_428/4 + 3_000, max: 171_428/4 + 7_000, exact: 171_428, ends: false},
	} {
		o := &Ordered{Path: []string{"t"}, Want: 101, Term: -1, Filter: []int{1}}
		in := Input{Scope: scope, Terms: terms, Entries: []int64{-1, tc.read}, Stopped: []bool{false, true}, WalkEntries: 200_000, Stream: o, FilterRead: []int64{0, tc.read}}
		bound := GatherBound(in, o, 1, false, tc.read, probe)
		if bound < tc.min || bound > tc.max {
			t.Errorf("read %d: bound %d, want %d to %d", tc.read, bound, tc.min, tc.max)
		}
		if ends := tc.exact < bound; ends != tc.ends {
			t.Errorf("read %d: a term of %d ends within %d: %v, want %v", tc.read, tc.exact, bound, ends, tc.ends)
		}
		if !tc.ends {
			continue
		}
		in.Entries, in.Stopped, in.FilterRead = []int64{-1, tc.exact}, nil, []int64{0, tc.exact}
		if got := Choose(in).Chosen.Access; got != tc.afterward {
			t.Errorf("read %d, ended at %d: chose %v, want %v", tc.read, tc.exact, got, tc.afterward)
		}
		// Weighed without what the count read, the plain stream wins.
		in.FilterRead = nil
		if got := Choose(in).Chosen.Access; got != OrderedStream {
			t.Errorf("read %d, ended at %d, the read not counted as paid: chose %v, want %v", tc.read, tc.exact, got, OrderedStream)
		}
	}
}

// CountSettled stops a term's count beside an ORDER BY's walks once a
// narrower term counted to its end makes the walks' estimates its own and
// the term's entries so far cost what the chosen path does; a count that
// gathers its locations for the stream goes on while the stream filtered
// by it, were the count to end there, would cost less. The shape of
// c.h IN (0, …, 8) AND c.m < 5 ORDER BY c.n over 10⁵ items.
func TestCountSettled(t *testing.T) {
	terms := []Term{
		{Path: []string{"h"}, Spans: []Span{{Kind: SpanValue, Lo: document.Int(0)}, {Kind: SpanValue, Lo: document.Int(1)}}},
		{Path: []string{"m"}, Spans: []Span{{Kind: SpanRange, Hi: document.Int(5), HasHi: true, ExclHi: true}}},
	}
	scope := Scope{Kind: ScopeAll, Items: 100_000, ContainerItems: 100_000}
	for _, tc := range []struct {
		name     string
		h, m     int64 // counts; m's whole unless mStopped
		mStopped bool
		gathered bool // h's count gathered its locations
		chosen   *Path
		settled  bool
		worth    int64 // at least, and within a tenth (0 when no count settles it)
	}{
		// The stream filtered by c.m costs 1,300: 8,668 entries' worth.
		{name: "short", h: 8_000, m: 5_000, worth: 8_668},
		{name: "past", h: 9_000, m: 5_000, settled: true, worth: 8_668},
		// Filtered by c.h, the stream reads a record for the share of
		// the walk's 2,000 entries c.h holds: under 1,300 until 20,000.
		{name: "gathered", h: 9_000, m: 5_000, gathered: true, worth: 20_000},
		{name: "gathered past", h: 20_001, m: 5_000, gathered: true, settled: true, worth: 20_000},
		{name: "none narrower", h: 9_000, m: 5_000, mStopped: true},
		{name: "wider", h: 9_000, m: 12_000},
		{name: "chosen reads it", h: 30_000, m: 5_000, chosen: &Path{Access: IndexSpan, Terms: []int{0}, Cost: 1}},
	} {
		o := &Ordered{Path: []string{"n"}, Want: 100, Term: -1, Filter: []int{0, 1}}
		in := Input{Scope: scope, Terms: terms, Entries: []int64{tc.h, tc.m}, Stopped: []bool{true, tc.mStopped}, WalkEntries: 100_000, Stream: o}
		if tc.gathered {
			in.FilterRead = []int64{tc.h, 0}
		}
		chosen := Choose(in).Chosen
		if tc.chosen != nil {
			chosen = *tc.chosen
		} else if !tc.mStopped && (chosen.Access != FilteredStream || !slices.Equal(chosen.Terms, []int{1})) {
			t.Fatalf("%s: chose %v %v, want the stream filtered by c.m", tc.name, chosen.Access, chosen.Terms)
		}
		settled, worth := CountSettled(in, 0, chosen)
		if settled != tc.settled || worth < tc.worth || worth > tc.worth+tc.worth/10 {
			t.Errorf("%s: settled %v, worth %d; want %v, %d", tc.name, settled, worth, tc.settled, tc.worth)
		}
	}
}

// GroupWalkBound is the walk's length at which the stream page costs what
// the other way does, its records growing with its entries.
func TestGroupWalkBound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     Path
		other float64
		want  int64
	}{
		{"a record an entry", Path{Entries: 100, Records: 100}, 2650, 1000},
		{"a record every tenth entry", Path{Entries: 100, Records: 10}, 400, 1000},
		{"no entries yet", Path{}, 265, 100},
		{"its scan costs the other already", Path{Entries: 10, Records: 10, Scanned: 500}, 400, 0},
	} {
		if got := GroupWalkBound(tc.p, tc.other); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
