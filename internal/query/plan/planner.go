package plan

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
)

// The planner chooses how one page of a query reads its candidates. It
// works in three steps, none of which touches storage:
//
//  1. Scope: what the partition key header, a WHERE clause that pins the
//     partition key, and the partition key range allow (ScopeKind). The
//     engine turns a scope into one contiguous span of item keys.
//  2. Access paths: a scan of the scope; a point read when the id and the
//     whole partition key are known; a walk of one path's index spans; the
//     intersection of two paths' spans; for TOP/OFFSET-LIMIT with one
//     ORDER BY, a walk of the ORDER BY path's index in order; and the span
//     of a composite index that equalities on its leading paths and a term
//     on the next one give, read for its items or, when the ORDER BY
//     follows the composite, walked in order (CompositeUses); and for
//     ORDER BY on one path without a window, a walk of that path's index
//     that streams the rows a page at a time (OrderedStream). A count of
//     a whole container or range without a filter reads the usage
//     counters (Counters), and nothing is weighed.
//  3. Choice: each path gets an estimated cost from the counts the engine
//     keeps (items per container and per logical partition) and the number
//     of index entries each span holds, which the engine counts up to a
//     bound (PartnerBound stops a wider term's count sooner); the cheapest
//     wins. A page that a scan may fill early tries one first when every
//     term is wide (ScanFirstBounds). Explain says what was weighed.
//
// Costs are in units of one record read in key order. The weights below
// were set from the engine's benchmarks: a record read by point lookup
// costs a few sequential ones, and an index entry is a short key with no
// value.
const (
	costRecordScan  = 1.0
	costRecordPoint = 2.5
	costEntry       = 0.15
	// A point read is exact, one id lookup and one record: it is chosen
	// whenever it is possible.
	costPoint = 0
)

// ScopeKind is how much of a container a page may read.
type ScopeKind uint8

// The scopes, widest first.
const (
	ScopeAll       ScopeKind = iota // every item of the container
	ScopeRange                      // a partition key range (an EPK span)
	ScopePrefix                     // a hierarchical partition key prefix
	ScopePartition                  // one logical partition
)

var scopeNames = [...]string{ScopeAll: "all", ScopeRange: "range", ScopePrefix: "prefix", ScopePartition: "partition"}

func (k ScopeKind) String() string { return scopeNames[k] }

// Scope is what a page may read and how big it is.
type Scope struct {
	Kind ScopeKind
	// Items is how many items the scope holds: exact for a logical
	// partition and the whole container, estimated otherwise.
	Items int64
	// ContainerItems is how many items the container holds.
	ContainerItems int64
	// Parts, when above 1, is how many logical partitions a page reads
	// one after another, each a scope of its own (an IN list of partition
	// keys); the plan is the first one's (InParts).
	Parts int
}

// fraction is the share of the container's items in the scope.
func (s Scope) fraction() float64 {
	if s.ContainerItems <= 0 || s.Kind == ScopeAll {
		return 1
	}
	return math.Min(1, float64(s.Items)/float64(s.ContainerItems))
}

// SpanKind is the shape of a span of index values.
type SpanKind uint8

// The span shapes.
const (
	SpanValue  SpanKind = iota // exactly Lo
	SpanRange                  // values of Lo's (or Hi's) type between the bounds present
	SpanPrefix                 // strings starting with Lo
	SpanKinds                  // every value of the kinds Kinds
)

// Span is a set of values of one path, contiguous in the index. ExclLo
// and ExclHi say that a range's bound is not in it (> and <); a reader
// may read the bound's entries all the same, as the evaluator re-filters
// every candidate.
type Span struct {
	Kind           SpanKind
	Lo, Hi         document.Value
	HasLo, HasHi   bool
	ExclLo, ExclHi bool
	Kinds          KindRange // for SpanKinds
}

// Scalars reports whether the span holds scalars alone, which a composite
// index holds: every span but one of kinds that include arrays or objects.
func (s Span) Scalars() bool { return s.Kind != SpanKinds || s.Kinds.Scalars() }

// Term is what the WHERE clause lets the index read for one path: the
// union of Spans.
type Term struct {
	Path  []string
	Spans []Span
	Label string // the predicates it came from, for Explain
}

// Terms groups the predicates by path into index terms. For each path the
// narrowest form wins: an equality, then IN, then STARTSWITH, then the
// range the comparisons bound (both sides combined), then an inequality
// (the two ranges beside its value), then a type check
// (every entry of the path of its kinds: the index has an entry for every
// value, a bare marker for an array or an object). Predicates an index
// cannot answer (comparisons with arrays or objects) give no term.
func Terms(preds []Predicate) []Term {
	type group struct {
		path   []string
		best   *Term
		rank   int
		lo, hi *Predicate
	}
	var groups []*group
	find := func(path []string) *group {
		for _, g := range groups {
			if slices.Equal(g.path, path) {
				return g
			}
		}
		g := &group{path: path, rank: 100}
		groups = append(groups, g)
		return g
	}
	offer := func(g *group, rank int, t Term) {
		if rank < g.rank {
			t.Path = g.path
			g.best, g.rank = &t, rank
		}
	}
	for i := range preds {
		p := &preds[i]
		g := find(p.Path)
		label := pathLabel(p.Path) + " " + p.Op.String()
		switch p.Op {
		case Eq:
			if scalar(p.Value) {
				offer(g, 0, Term{Spans: []Span{{Kind: SpanValue, Lo: p.Value}}, Label: label + " " + string(p.Value.JSON())})
			}
		case In:
			spans := make([]Span, 0, len(p.Values))
			for _, v := range p.Values {
				if !scalar(v) {
					spans = nil
					break
				}
				spans = append(spans, Span{Kind: SpanValue, Lo: v})
			}
			if spans != nil {
				offer(g, 1, Term{Spans: dedupe(spans), Label: fmt.Sprintf("%s (%d values)", label, len(p.Values))})
			}
		case Prefix:
			offer(g, 2, Term{Spans: []Span{{Kind: SpanPrefix, Lo: p.Value}}, Label: label + " " + string(p.Value.JSON())})
		case Lt, Le, Gt, Ge:
			if k := p.Value.Kind(); k != document.Number && k != document.String {
				continue
			}
			if p.Op == Gt || p.Op == Ge {
				g.lo = p
			} else {
				g.hi = p
			}
			s := Span{Kind: SpanRange}
			var parts []string
			if g.lo != nil {
				s.Lo, s.HasLo, s.ExclLo = g.lo.Value, true, g.lo.Op == Gt
				parts = append(parts, pathLabel(p.Path)+" "+g.lo.Op.String()+" "+string(g.lo.Value.JSON()))
			}
			if g.hi != nil && (g.lo == nil || g.hi.Value.Kind() == g.lo.Value.Kind()) {
				s.Hi, s.HasHi, s.ExclHi = g.hi.Value, true, g.hi.Op == Lt
				parts = append(parts, pathLabel(p.Path)+" "+g.hi.Op.String()+" "+string(g.hi.Value.JSON()))
			}
			rank := 4
			if s.HasLo && s.HasHi {
				rank = 3
			}
			offer(g, rank, Term{Spans: []Span{s}, Label: strings.Join(parts, " AND ")})
		case Ne:
			// The values of its kind on either side of it: another kind
			// compares as undefined. A boolean's is the other boolean;
			// null differs from no null, and gives no term.
			switch p.Value.Kind() {
			case document.Bool:
				offer(g, 0, Term{Spans: []Span{{Kind: SpanValue, Lo: document.BoolValue(!p.Value.Bool())}}, Label: label + " " + string(p.Value.JSON())})
			case document.Number, document.String:
				below := Span{Kind: SpanRange, Hi: p.Value, HasHi: true, ExclHi: true}
				above := Span{Kind: SpanRange, Lo: p.Value, HasLo: true, ExclLo: true}
				offer(g, 5, Term{Spans: []Span{below, above}, Label: label + " " + string(p.Value.JSON())})
			}
		case OfKinds:
			offer(g, 6, Term{Spans: []Span{{Kind: SpanKinds, Kinds: p.Kinds}}, Label: p.Kinds.Name() + "(" + pathLabel(p.Path) + ")"})
		}
	}
	var out []Term
	for _, g := range groups {
		if g.best != nil {
			out = append(out, *g.best)
		}
	}
	return out
}

func scalar(v document.Value) bool {
	switch v.Kind() {
	case document.Null, document.Bool, document.Number, document.String:
		return true
	}
	return false
}

// dedupe drops repeated values, so an IN list with a value twice reads its
// entries once. It sorts the values to find the repeats, so a list of n
// values costs n log n comparisons, not n² (an IN list of 60,000 values
// took 32 s of CPU when each was compared with every other).
func dedupe(spans []Span) []Span {
	order := make([]int, len(spans))
	for i := range order {
		order[i] = i
	}
	same := func(a, b Span) int {
		if c := cmp.Compare(a.Lo.Kind(), b.Lo.Kind()); c != 0 {
			return c
		}
		return document.Compare(a.Lo, b.Lo)
	}
	slices.SortStableFunc(order, func(i, j int) int { return same(spans[i], spans[j]) })
	repeat := make([]bool, len(spans))
	for k := 1; k < len(order); k++ {
		repeat[order[k]] = same(spans[order[k-1]], spans[order[k]]) == 0
	}
	out := spans[:0]
	for i, s := range spans {
		if !repeat[i] {
			out = append(out, s)
		}
	}
	return out
}

func pathLabel(path []string) string { return "/" + strings.Join(path, "/") }

// Access is the kind of an access path.
type Access uint8

// The access paths.
const (
	Scan           Access = iota // every item of the scope, in key order
	PointRead                    // one item by partition key and id
	IndexSpan                    // one term's index spans
	Intersect                    // the items two terms' spans share
	OrderedWalk                  // the ORDER BY path's index, in order, until enough rows
	CompositeSpan                // the items of a span of a composite index
	CompositeWalk                // a span of a composite index, in the ORDER BY's order, until enough rows
	OrderedStream                // the ORDER BY path's index, in order, one page at a time
	Counters                     // the usage counters: a container's, range's or partition's COUNT without a filter
	IDEntries                    // a logical partition's id entries: its COUNT without a filter
	IndexCount                   // one term's index entries in the scope: a COUNT filtered by that term alone
	IndexExtreme                 // a path's first or last index entry in the scope: its MIN or MAX
	IndexSum                     // a path's index entries in the scope: its SUM or AVG
	Union                        // the items any of an OR's terms' spans hold (Input.Union)
	FilteredStream               // OrderedStream reading only the records a term's entries name (Ordered.Filter)
	AbsentScan                   // the scope's items without a path (NOT IS_DEFINED), through its absence entries, in scan order
	ValueScan                    // every index entry of one path in the scope, its value tested by the filter's terms on it (Input.Values)
	VectorTop                    // the scope's stored vectors of one path, scored, and the records of the best until enough rows (VectorPlan)
	WordSpan                     // the items whose stored words at a text path include a full-text term's words (WordPlan)
)

var accessNames = [...]string{Scan: "scan", PointRead: "point", IndexSpan: "index", Intersect: "intersect", OrderedWalk: "ordered",
	CompositeSpan: "composite", CompositeWalk: "composite-ordered", OrderedStream: "ordered-stream", Counters: "counters",
	IDEntries: "id-entries", IndexCount: "index-count", IndexExtreme: "index-extreme", IndexSum: "index-sum", Union: "union", FilteredStream: "filtered-stream", AbsentScan: "absent", ValueScan: "value-scan", VectorTop: "vector", WordSpan: "words"}

func (a Access) String() string { return accessNames[a] }

// Ordered says that a walk of the ORDER BY path's index can answer the
// query: it needs Want rows that pass the filter.
type Ordered struct {
	Path []string
	Want int64
	// Skip is, for an OrderedStream, how many rows an OFFSET passes over
	// before the Want rows when the stream counts them by their entries
	// (the engine's countSkips): the walk steps through their entries
	// and reads none of their records.
	Skip int64
	// Term is the index into Input.Terms of the term on the ORDER BY
	// path, or -1; the walk then reads only that term's spans.
	Term int
	// Undefined is set when documents without the property may pass the
	// filter: they are in no entry of the path, so a scan of the scope
	// finds them (for OrderedStream: before the walk ascending, after it
	// descending), unless Absent.
	Undefined bool
	// Absent is set with Undefined when the documents without the
	// property have index entries of their own: they are read through
	// those, not found by a scan.
	Absent bool
	// Scoped is set when the path's entries the walk reads are the scope's
	// own (a logical partition's), not the whole container's: it skips
	// none, and WalkEntries counts the scope's.
	Scoped bool
	// Group is, for an OrderedStream over several ORDER BY keys, how many
	// entries the first group of equal first values holds (counted up to
	// a bound): such a stream reads each group it touches whole, to sort
	// it by the other keys, so a page reads at least one group. It is 0
	// when a composite index on the keys orders the groups by the other
	// keys: a page then reads its own rows' entries and records.
	Group int64
	// Within holds the terms the walk's entries meet by their place
	// alone (a composite's paths after the first that the filter fixes,
	// and one span on the path after them): they select nothing among
	// the entries the walk reads.
	Within []int
	// Filter holds the index into Input.Terms of a term on another
	// path, if the stream may use one. A page of the
	// stream may collect that term's entries in the scope first and
	// read the record of a walked entry only when they name its item
	// (FilteredStream): every document that passes the filter is among
	// them.
	Filter []int
	// FilterComposite, when set, is a composite span whose items are
	// among Filter[0]'s and pass every other term the engine weighed,
	// and whose entries the engine has read whole and kept: the stream
	// may filter its walk by the locations they name instead (a
	// FilteredStream with the use as its Composite).
	FilterComposite *CompositeUse
	// FilterUnion is set when the stream may filter its walk by the
	// locations of the items of the OR the index answers (Input.Union):
	// every document that passes the filter is among them (a
	// FilteredStream with ByUnion).
	FilterUnion bool
}

// Input is what the planner weighs.
type Input struct {
	Scope Scope
	Terms []Term
	// Entries[i] is how many index entries Terms[i]'s spans hold in the
	// whole container (in the scope when Scoped[i]), or -1 when the index cannot answer the term (the
	// path is not indexed, or the index is being rebuilt). A count the
	// engine stopped at its bound reads as that bound, and Stopped[i] is
	// then set (nil: every count is whole).
	Entries []int64
	Stopped []bool
	// FilterRead[i] is how many entries of the stream's filter term i
	// (one of Stream.Filter) the engine has read already, keeping the
	// locations they name, which the stream filtered by i goes on
	// collecting from: a cost paid whichever path is chosen (nil: none).
	FilterRead []int64
	// Scoped[i] says Entries[i] counts only the entries of the scope's
	// items (nil: none does): the engine narrows a span of one value to
	// the scope, its entries following the value with the item's place.
	Scoped []bool
	// Ordered is set when an ordered walk applies; WalkEntries is then
	// how many entries the ORDER BY path's index holds (or -1).
	Ordered     *Ordered
	WalkEntries int64
	// Stream is set when the ORDER BY can stream (OrderedStream); its
	// Want is the rows of one page. WalkEntries counts its entries too.
	Stream *Ordered
	// Composites are the ways composite indexes can answer the query
	// (CompositeUses), each with the count of its span's entries.
	Composites []CompositeUse
	// Union holds the terms of an OR (UnionTerms) when the index answers
	// each; UnionEntries[i] counts Union[i]'s entries as Entries does,
	// and UnionScoped[i] says the count is the scope's own.
	Union        []Term
	UnionEntries []int64
	UnionScoped  []bool
	// Absent, when not nil, is a path the WHERE clause says every row's
	// document lacks (NOT IS_DEFINED, AbsentPaths) whose absence entries
	// the engine keeps complete; AbsentEntries counts them as Entries
	// counts a term's, and AbsentScoped says the count is the scope's
	// own.
	Absent        []string
	AbsentEntries int64
	AbsentScoped  bool
	// Values, when not nil, is the filter's value filter (ValueTerms),
	// which the engine weighed by reading its path's entries in the
	// scope: ValueEntries of them, whose values passed for ValuePassing
	// items of the scope (or could not be told apart from a value that
	// does: those are read).
	Values       *ValueFilter
	ValueEntries int64
	ValuePassing int64
}

// Path is one candidate access path with its estimates.
type Path struct {
	Access    Access
	Composite *CompositeUse // for CompositeSpan and CompositeWalk
	Terms     []int         // indexes into Input.Terms (into Input.Union for Union)
	Entries   float64       // index entries it is expected to read
	Records   float64       // records it is expected to read
	// Scanned is the records read in key order besides (OrderedStream's
	// share, per page, of the scan for documents without the property).
	Scanned float64
	// Absent is set when an ordered path reads the documents without the
	// property through their absence entries (Ordered.Absent).
	Absent bool
	// Scoped is set when an ordered path walks the scope's own entries
	// (Ordered.Scoped).
	Scoped bool
	// Budget, for a scan tried first (ScanFirst), is how many records it
	// may read before it gives up and the page is planned again.
	Budget float64
	// First is set for a path chosen before its entries were counted
	// (SpanFirst): its entries and records are the page's.
	First bool
	// ByUnion is set for a FilteredStream filtered by the locations of
	// the OR's items (Ordered.FilterUnion).
	ByUnion bool
	// Beside, for a Union, holds a term (an index into Input.Terms)
	// whose items the OR's are intersected with before any is read.
	Beside []int
	Cost   float64
}

// Plan is the planner's choice and what it weighed.
type Plan struct {
	Scope      Scope
	Chosen     Path
	Considered []Path
	terms      []Term
	union      []Term
	absent     []string
	values     *ValueFilter
}

// Choose enumerates the access paths in, estimates each, and picks the
// cheapest; a scan is always possible, so a plan always exists. Ties go
// to the path enumerated first (scan, ordered, index, intersect),
// so the choice is deterministic.
func Choose(in Input) Plan {
	frac := in.Scope.fraction()
	n := float64(max(in.Scope.ContainerItems, 1))
	p := Plan{Scope: in.Scope, terms: in.Terms, union: in.Union, absent: in.Absent, values: in.Values}
	add := func(path Path) {
		path.Cost = path.cost()
		p.Considered = append(p.Considered, path)
	}
	add(Path{Access: Scan, Records: float64(in.Scope.Items)})
	if o := in.Ordered; o != nil && in.WalkEntries >= 0 {
		add(orderedPath(in, o))
	}
	if o := in.Stream; o != nil && in.WalkEntries >= 0 {
		path := streamPath(in, o)
		add(path)
		for _, f := range o.Filter {
			if f >= len(in.Entries) || in.Entries[f] < 0 || in.Stopped != nil && in.Stopped[f] {
				continue
			}
			add(filteredPath(in, o, path, f))
		}
		if u := o.FilterComposite; u != nil && len(o.Filter) > 0 && u.Entries >= 0 {
			add(compositeFilteredPath(in, o, path, u))
		}
		if o.FilterUnion && len(in.Union) > 0 && len(in.UnionEntries) == len(in.Union) {
			add(unionFilteredPath(in, o, path))
		}
	}
	best := -1
	for i, e := range in.Entries {
		if e < 0 {
			continue
		}
		add(Path{Access: IndexSpan, Terms: []int{i}, Entries: float64(e), Records: float64(e) * in.termShare(i)})
		if best < 0 || e < in.Entries[best] {
			best = i
		}
	}
	if best >= 0 {
		// Intersect the narrowest term with the next narrowest: the
		// records read are those both hold, assuming independence.
		second := -1
		for i, e := range in.Entries {
			if e >= 0 && i != best && (second < 0 || e < in.Entries[second]) {
				second = i
			}
		}
		// A partner whose count stopped at its bound holds more
		// entries than that, and every one of them is read: weighed
		// at the bound, an intersection with a term that holds most of
		// the container looked the cheapest (a count stopped at 7,563
		// of 16,000 entries chose a path that read 29,481 entries a
		// page against the narrower span's 2,857). At the partner's
		// own bound (PartnerBound) it could not win; at the probe it
		// is unknown, so it is not weighed.
		if second >= 0 && !(in.Stopped != nil && in.Stopped[second]) {
			e1, e2 := float64(in.Entries[best]), float64(in.Entries[second])
			// Each count over the items it was counted among: a
			// scoped count (Input.Scoped) is over the scope's.
			records := e1 * e2 / n * frac
			for _, i := range []int{best, second} {
				if in.scoped(i) && frac > 0 {
					records /= frac
				}
			}
			add(Path{Access: Intersect, Terms: []int{best, second}, Entries: e1 + e2, Records: records})
		}
	}
	for i := range in.Composites {
		u := &in.Composites[i]
		if u.Entries < 0 {
			continue
		}
		if !u.Ordered {
			e, f := float64(u.Entries), u.share(frac)
			add(Path{Access: CompositeSpan, Composite: u, Terms: u.Terms(), Entries: e, Records: e * f})
			continue
		}
		add(compositeWalkPath(in, u, frac))
	}
	if len(in.Union) > 0 && len(in.UnionEntries) == len(in.Union) {
		// Each term's entries are read and the items they name, at most
		// the scope's, once each (an item two terms name is read once).
		var entries, records float64
		var terms []int
		for i, e := range in.UnionEntries {
			share := frac
			if in.UnionScoped != nil && in.UnionScoped[i] {
				share = 1
			}
			entries += float64(e)
			records += float64(e) * share
			terms = append(terms, i)
		}
		records = math.Min(records, float64(in.Scope.Items))
		add(Path{Access: Union, Terms: terms, Entries: entries, Records: records})
		// Beside a term counted to its end, the OR's items intersected
		// with the term's: both read as entries, a record for each
		// item in both, the term's share of the OR's.
		for i, e := range in.Entries {
			if e < 0 || in.Stopped != nil && in.Stopped[i] {
				continue
			}
			add(Path{Access: Union, Terms: terms, Beside: []int{i}, Entries: entries + float64(e), Records: records * math.Min(1, in.selectivity(i))})
		}
	}
	if in.Absent != nil && in.AbsentEntries >= 0 {
		// The items without the path, in scan order: an entry each, and
		// the record of each in the scope.
		share := frac
		if in.AbsentScoped {
			share = 1
		}
		e := float64(in.AbsentEntries)
		add(Path{Access: AbsentScan, Entries: e, Records: math.Min(e*share, float64(in.Scope.Items))})
	}
	if in.Values != nil {
		// Every entry of the path, and the record of each item whose
		// value passed.
		add(Path{Access: ValueScan, Entries: float64(in.ValueEntries), Records: float64(in.ValuePassing)})
	}
	p.Chosen = p.Considered[0]
	for _, c := range p.Considered[1:] {
		if c.Cost < p.Chosen.Cost {
			p.Chosen = c
		}
	}
	return p
}

// share is the part of the composite span's entries that name items in
// the scope, frac of them unless the span is the scope's own.
func (u *CompositeUse) share(frac float64) float64 {
	if u.Scoped {
		return 1
	}
	return frac
}

// compositeWalkPath is the walk u, as the ordered walk: the rows passing
// the terms the span does not hold are assumed spread evenly along it.
func compositeWalkPath(in Input, u *CompositeUse, frac float64) Path {
	f, sel := u.share(frac), 1.0
	for i, te := range in.Entries {
		if te >= 0 && !slices.Contains(u.Eq, i) && i != u.Next {
			sel = math.Min(sel, in.selectivity(i))
		}
	}
	entries := math.Min(float64(u.Entries), float64(u.Want)/(f*sel))
	return Path{Access: CompositeWalk, Composite: u, Terms: u.Terms(), Entries: entries, Records: entries * f}
}

// CompositeWalkBound is how many entries of each weighed term (those
// whose Entries are not -1) and of each composite's span are worth
// counting when the composite walk u may serve the page: at that many,
// the walk, weighed with the terms that many hold, costs no more than
// reading them, which every path built on a count that stopped there does
// (a term's span, an intersection, a composite's span). A term whose
// count ended below it is weighed at its count; one not counted yet, or
// whose count stopped (in.Stopped), at the bound, the least it can hold
// once counted that far: so the walk costs at most what it is weighed at.
// A count that ends short raises the walk's cost and the bound with it,
// so the engine counts on until the bound no longer rises. It is probe
// when the walk so weighed costs more than a scan of the scope. Without
// it, the first page of SELECT TOP 5 … WHERE c.s > 's5' AND c.n >= 0
// ORDER BY c.s, c.n counted 6,845 entries for a walk of 13.
func CompositeWalkBound(in Input, u CompositeUse, probe int64) int64 {
	at := in
	at.Entries, at.Stopped = slices.Clone(in.Entries), nil
	u.Entries = math.MaxInt64 // its span's count only caps the walk
	frac := in.Scope.fraction()
	walk := func(e int64) Path {
		for i, n := range in.Entries {
			if n >= 0 && (in.Stopped == nil || in.Stopped[i]) {
				at.Entries[i] = max(n, e)
			}
		}
		return compositeWalkPath(at, &u, frac)
	}
	e := int64(sort.Search(int(probe), func(k int) bool { return walk(int64(k)+1).cost() <= float64(k+1)*costEntry })) + 1
	if e > probe || walk(e).cost() >= float64(in.Scope.Items)*costRecordScan {
		return probe
	}
	return min(probe, e+1)
}

// orderedPath is the TOP walk o. It stops after Want rows. Rows that pass
// the other terms are assumed spread evenly along the path, so it reads
// Want/(frac·sel) entries, at most all it may read. Entries outside the
// scope are skipped by their key; only those in it cost a record.
func orderedPath(in Input, o *Ordered) Path {
	total, sel := walkSpan(in, o)
	share := o.share(in.Scope)
	entries := math.Min(total, float64(o.Want)/(share*sel))
	return Path{Access: OrderedWalk, Terms: orderedTerms(o), Entries: entries, Records: entries * share, Absent: o.Absent, Scoped: o.Scoped}
}

// KeptGroupMax is the most members of a sorted group of equal first keys
// the planner takes a page to keep for the next (the engine keeps them
// within a bound on the bytes of all it keeps).
const KeptGroupMax = 1 << 16

// streamPath is a page of the ordered stream o. Every page walks on from
// where the last one stopped, so a page costs what the TOP walk of one
// page's rows costs, and the other paths (which evaluate the whole scope
// on every page) are weighed per page too. The scan for documents
// without the property is read once over the whole drain: a page's share
// is the scope over the number of pages the walk's rows make.
func streamPath(in Input, o *Ordered) Path {
	total, sel := walkSpan(in, o)
	share := o.share(in.Scope)
	read := math.Min(total, float64(o.Want)/(share*sel))
	entries := math.Min(total, float64(o.Want+o.Skip)/(share*sel))
	// A page reads the group it ends in whole too, which the pages after
	// it take kept (the engine's keptGroup): a group larger than a page
	// is read once for the pages it fills, as much a page as its rows. A
	// group too large to keep is read again by each of them.
	group := float64(o.Group)
	if o.Group <= KeptGroupMax {
		group = math.Min(group, read)
	}
	records := (read + group) * share
	entries += group
	path := Path{Access: OrderedStream, Terms: orderedTerms(o), Entries: entries, Records: records, Absent: o.Absent, Scoped: o.Scoped}
	if o.Undefined && !o.Absent {
		pages := math.Max(1, total*share*sel/float64(max(o.Want, 1)))
		path.Scanned = float64(in.Scope.Items) / pages
	}
	return path
}

// filteredPath is the stream o's page path filtered by term f: the same
// walk, which reads a record only for an entry whose item the filter's
// entries name (the share of the walk's entries in the scope that the
// filter holds), and the filter's entries not yet read.
func filteredPath(in Input, o *Ordered, path Path, f int) Path {
	filtered := path
	filtered.Access, filtered.Terms = FilteredStream, append(orderedTerms(o), f)
	left := max(in.Entries[f]-in.filterRead(f), 0)
	filtered.Entries += float64(left)
	filtered.Records = path.Records * math.Min(1, in.selectivity(f))
	return filtered
}

// unionFilteredPath is the stream o's page path filtered by the locations
// of the OR's items (Ordered.FilterUnion): a record only for a walked
// entry whose item one of the OR's terms names. Its entries were read
// whole while the OR was weighed (Input.UnionEntries are set only then).
func unionFilteredPath(in Input, o *Ordered, path Path) Path {
	filtered := path
	filtered.Access, filtered.Terms, filtered.ByUnion = FilteredStream, orderedTerms(o), true
	filtered.Records = path.Records * in.unionSelectivity()
	return filtered
}

// filterRead is how many of term f's entries the engine read already
// for the stream filtered by f (FilterRead).
func (in Input) filterRead(f int) int64 {
	if f < len(in.FilterRead) {
		return in.FilterRead[f]
	}
	return 0
}

// compositeFilteredPath is the stream o's page path filtered by the
// locations of the composite span u (Ordered.FilterComposite), read
// already: a record only for an entry whose item the span holds.
func compositeFilteredPath(in Input, o *Ordered, path Path, u *CompositeUse) Path {
	filtered := path
	filtered.Access, filtered.Composite, filtered.Terms = FilteredStream, u, orderedTerms(o)
	filtered.Records = path.Records * math.Min(1, math.Max(float64(u.Entries), 1)/in.countedAmong(u.Scoped))
	return filtered
}

// GatherBound is how far a walk tried first goes on counting the
// stream's first filter term i, gathering the locations its entries name,
// once the count has read read of them and passed WalkBound without
// ending: the fewest entries past which, were the count to end there,
// the filtered stream reading the rest costs no less than the plain
// stream. The entries read are paid whichever path is chosen, so a term
// that ends below it makes the filtered stream the cheaper; read when
// none does. It is at most probe.
func GatherBound(in Input, o *Ordered, i int, scoped bool, read, probe int64) int64 {
	if !slices.Contains(o.Filter, i) || read >= probe {
		return read
	}
	at := weighedAlone(in, o, i, scoped)
	at.FilterRead = make([]int64, len(at.Entries))
	at.FilterRead[i] = read
	pays := func(e int64) bool {
		at.Entries[i] = e
		plain := streamPath(at, o)
		return filteredPath(at, o, plain, i).cost() < plain.cost()
	}
	// The filtered stream's share of the term's entries grows with them,
	// the plain stream's cost falls: the first count that does not pay.
	k := sort.Search(int(probe-read), func(k int) bool { return !pays(read + 1 + int64(k)) })
	return min(read+1+int64(k), probe)
}

// cost is what a path is weighed at.
func (p Path) cost() float64 {
	if p.Access == Scan {
		return p.Records * costRecordScan
	}
	return p.Entries*costEntry + p.Records*costRecordPoint + p.Scanned*costRecordScan
}

// ValueWalkBound is how many entries of a value filter's path are worth
// reading beside the terms weighed in in, and false when none are: past
// the entries that cost what the cheapest path whose estimate no count
// will change does (SettledCost), a value scan cannot win; and when the
// path's entries, at most pathEntries, all cost less than that, a walk
// that reads them may.
func ValueWalkBound(in Input, pathEntries int64) (int64, bool) {
	settled := SettledCost(in, -1)
	return EntriesCosting(settled), float64(pathEntries)*costEntry < settled
}

// ValueScanOver reports whether a value scan in scope s that has read
// entries of its path, keeping kept items of the scope, can no longer be
// the cheaper way to the query's pages: they cost more than a scan of the
// scope, or, for a page that ends after rows (0: a page that needs every
// candidate), the items kept are as many as make a scan the likely
// cheaper way to the page, as a term holding them would (ScanFirstBounds'
// wide, over the scope's items). The share of the entries read that pass
// says little: they come in the order of their values, those that pass
// often together (LOWER(c.city) = "oslo" keeps the first entries, "OSLO"
// and "Oslo", and few after them).
func ValueScanOver(s Scope, rows, entries, kept int64) bool {
	if (Path{Access: ValueScan, Entries: float64(entries), Records: float64(kept)}).cost() > float64(s.Items)*costRecordScan {
		return true
	}
	return rows > 0 && float64(kept) >= math.Sqrt(float64(rows)*float64(max(s.Items, 1))*costRecordScan/costEntry)
}

// WalkBound is how many entries of term i are worth counting for a page
// the walk o may serve (in.Stream, or the TOP walk in.Ordered), weighing
// i as the only term besides those the walk meets itself: at that many, the walk's estimate costs no more than reading i's
// entries alone does, and every other path the count weighs reads them
// all (i's index span, the filtered stream, an intersection). The walk
// is weighed as reading its whole path, whatever a term on the path
// holds. Without it, the first page of WHERE c.k IN (0, 1, 2, 3, 4, 5)
// ORDER BY c.t, six sevenths of 2·10⁵ items, counted c.k to the probe:
// 75,605 entries for a page whose walk read 119.
func WalkBound(in Input, o *Ordered, i int, scoped bool, probe int64) int64 {
	if o.Term >= 0 && o.Term < len(in.Entries) && o.Undefined && !o.Absent {
		// A shorter walk makes more pages of the scan for the
		// documents without the path: its count decides.
		return probe
	}
	at := weighedAlone(in, o, i, scoped)
	walk := orderedPath
	if o == in.Stream {
		walk = streamPath
	}
	// The walk's cost falls as i holds more, the entries' rises.
	settled := func(e int64) bool {
		at.Entries[i] = e
		return walk(at, o).cost() <= float64(e)*costEntry
	}
	// The fewest entries that settle it, probe when none up to it does.
	e := int64(sort.Search(int(probe), func(k int) bool { return settled(int64(k) + 1) })) + 1
	return min(probe, e+1)
}

// weighedAlone is in as the bounds on the count of term i weigh it: the
// only term counted (its count scoped or not, none stopped) besides those
// the walk o meets itself, and o's own term not counted yet, so the walk
// is weighed as reading its whole path, the most it reads.
func weighedAlone(in Input, o *Ordered, i int, scoped bool) Input {
	at := in
	at.Entries = slices.Clone(in.Entries)
	at.Scoped = make([]bool, len(in.Entries))
	at.Scoped[i] = scoped
	at.Stopped = nil
	if o.Term >= 0 && o.Term < len(at.Entries) {
		at.Entries[o.Term] = -1
	}
	return at
}

// WalkPaceDocs is how many documents a walk tried first (before its
// filter terms are counted to WalkBound) may read once entries of them
// have been counted: as many as cost what counting them did.
func WalkPaceDocs(entries int64) int64 {
	return int64(float64(entries) * costEntry / (costEntry + costRecordPoint))
}

// WalkSample is how many documents a walk tried first reads before the
// rate at which they pass says anything (WalkSettled).
const WalkSample = 8

// WalkSettled reports whether a walk tried first that found hits of the
// read documents it read passing, over a scope whose filter term is
// counted among items, passes them at a rate that puts the term's entries at
// settle (WalkBound) or more: the walk is then the cheaper path by the
// planner's own estimate, and reads on without counting the term further.
func WalkSettled(hits, read, items, settle int64) bool {
	return read >= WalkSample && float64(hits)*float64(items) >= float64(settle)*float64(read)
}

// walkSpan returns how many entries a walk of o's path may read (those of
// its term, if it has one; of a walk of the scope's own entries, no more
// than the scope holds) and the selectivity of the other terms.
func walkSpan(in Input, o *Ordered) (total, sel float64) {
	total, sel = float64(in.WalkEntries), 1.0
	for i, e := range in.Entries {
		switch {
		case e < 0:
		case i == o.Term && o.Scoped:
			total = math.Min(float64(e), float64(in.WalkEntries))
		case i == o.Term:
			total = float64(e)
		case slices.Contains(o.Within, i):
		default:
			sel = math.Min(sel, in.selectivity(i))
		}
	}
	if len(in.Union) > 0 && len(in.UnionEntries) == len(in.Union) {
		// Every row is among the OR's items.
		sel = math.Min(sel, in.unionSelectivity())
	}
	return total, sel
}

// unionSelectivity is the part of the items the OR's terms (Input.Union)
// hold together, at most: the sum of each one's selectivity.
func (in Input) unionSelectivity() float64 {
	var sel float64
	for i, e := range in.UnionEntries {
		sel += float64(e) / in.countedAmong(in.UnionScoped != nil && in.UnionScoped[i])
	}
	return math.Min(math.Max(sel, 1/in.countedAmong(false)), 1)
}

// termShare is the part of Terms[i]'s counted entries that name items in
// the scope: all of them when the count is the scope's own (Scoped),
// else the scope's fraction of the container.
func (in Input) termShare(i int) float64 {
	if in.scoped(i) {
		return 1
	}
	return in.Scope.fraction()
}

func (in Input) scoped(i int) bool { return in.Scoped != nil && in.Scoped[i] }

// selectivity is the part of the items Terms[i] holds, at least one
// item's: its count over the items it was counted among (the scope's,
// or the container's).
func (in Input) selectivity(i int) float64 {
	return math.Max(float64(in.Entries[i]), 1) / in.countedAmong(in.scoped(i))
}

// countedAmong is how many items a count was made among: the scope's
// when scoped, else the container's; at least one.
func (in Input) countedAmong(scoped bool) float64 {
	n := float64(max(in.Scope.ContainerItems, 1))
	if scoped {
		n = math.Max(n*in.Scope.fraction(), 1)
	}
	return n
}

// OrderedBound is how many entries of the ORDER BY path's own term are
// worth counting for the ordered path o, given in's counts of the other
// terms and the bound probe on every count: at that many, the walk's
// estimate, Want/(fraction·selectivity) entries, no longer depends on the
// term's count. The index span of that term cannot beat the ordered path
// (it reads the same entries, all of them), so past this bound its count
// only weighs what the ordered path makes moot. Without it, the first
// page of an ORDER BY with a range on its path counted a share of the
// whole span: a third of a container with no other filter.
func OrderedBound(in Input, o *Ordered, probe int64) int64 {
	_, sel := walkSpan(in, o)
	want := float64(o.Want) / (o.share(in.Scope) * sel)
	if want >= float64(probe) {
		return probe
	}
	return int64(math.Ceil(want)) + 1
}

// WithinBound is how many entries of the other terms are worth counting
// when the ordered stream o's walk meets each of them itself (Within), so
// that it reads the entries of its page's rows alone: any other path
// reads the records of the same rows at least, and past that many entries
// of a term, more entries. Without it, the first page of an equality on
// two paths and an ORDER BY through their composite counted both
// equalities' entries, a share of the container.
func WithinBound(in Input, o *Ordered, probe int64) int64 {
	return min(probe, int64(math.Ceil(float64(o.Want)/o.share(in.Scope)))+1)
}

// PartnerBound is how many entries of a term's spans are worth counting
// once another term's spans are known to hold only narrowest entries,
// given the bound probe on every count. The wider term can then win only
// as the narrower one's partner in an intersection, which saves at most
// the narrower span's records (narrowest·fraction of them, each
// costRecordPoint) and costs the wider span's entries: past as many
// entries as those records are worth, its count changes no choice. It is
// never below narrowest, so that a count stopped there still reads as the
// wider. Without it, a query on an id and on a property most items have
// counted the property's entries up to the probe: 37,751 of them in a
// container of 10⁵ items, for one row.
//
// scoped says the narrowest count is the scope's own (Input.Scoped): its
// records are then all of its entries, not the scope's fraction of them,
// and a wider count of the container's must reach as many entries as
// cost what the narrower span does before it reads as the wider.
func PartnerBound(s Scope, probe, narrowest int64, scoped bool) int64 {
	f := s.fraction()
	share := f
	if scoped {
		share = 1
	}
	e := float64(narrowest)
	b := math.Max(e*(costEntry+share*costRecordPoint)/(costEntry+f*costRecordPoint), e*share*costRecordPoint/costEntry)
	return min(probe, int64(math.Ceil(b))+1)
}

// CountSettled reports whether counting term i on, past the count
// in.Entries[i] at which it stopped, can change no choice once the path
// chosen from in is chosen, a path that does not read i's entries; worth,
// when the count is short of that by its cost alone, is how far it is
// worth counting. Beside the walks of an
// ORDER BY (in.Stream, in.Ordered), i's count weighs two things: the walks,
// which take the narrowest of the other terms' shares (walkSpan), and the
// paths that read i's entries (its span, an intersection, the stream
// filtered by it), each costing at least its entries. Once another term
// counted to its end holds no larger a share, and i's entries so far cost
// what the chosen path does, neither depends on the rest of the count: a
// count that ends later only makes i's paths dearer. Without it, the first
// page of c.h IN (0, …, 8) AND c.m < 5 ORDER BY c.n (nine tenths and a
// twentieth of 10⁵ items) counted the IN list to the probe, 37,751 entries,
// for a stream filtered by c.m that cost 1,300.
func CountSettled(in Input, i int, chosen Path) (settled bool, worth int64) {
	if in.Stopped == nil || !in.Stopped[i] {
		return true, 0
	}
	met := func(j int) bool {
		for _, o := range []*Ordered{in.Stream, in.Ordered} {
			if o != nil && (j == o.Term || slices.Contains(o.Within, j)) {
				return true
			}
		}
		return false
	}
	if met(i) || slices.Contains(chosen.Terms, i) && chosen.Access != OrderedStream && chosen.Access != OrderedWalk {
		return false, 0
	}
	narrower := false
	for j, e := range in.Entries {
		if j != i && e >= 0 && !in.Stopped[j] && !met(j) && in.selectivity(j) <= in.selectivity(i) {
			narrower = true
		}
	}
	if !narrower {
		return false, 0
	}
	worth = EntriesCosting(chosen.Cost)
	if o := in.Stream; o != nil && slices.Contains(o.Filter, i) && in.filterRead(i) >= in.Entries[i] {
		// The count gathers the locations the entries name, which the
		// stream filtered by i goes on from: worth counting on as long
		// as, were it to end there, that stream would cost less than
		// the chosen path.
		at := in
		at.Entries, at.FilterRead = slices.Clone(in.Entries), make([]int64, len(in.Entries))
		pays := func(e int64) bool {
			at.Entries[i], at.FilterRead[i] = e, e
			return filteredPath(at, o, streamPath(at, o), i).cost() < chosen.Cost
		}
		from := in.Entries[i]
		k := sort.Search(int(max(int64(in.countedAmong(in.scoped(i)))-from, 0)), func(k int) bool { return !pays(from + int64(k)) })
		worth = max(worth, from+int64(k))
	}
	return in.Entries[i] >= worth, worth
}

// ScanFirstBounds says whether a page that ends after rows passing
// documents in scan order (a query without ORDER BY, aggregates or
// DISTINCT, or its TOP) should try a scan before counting its terms to
// the probe, and if so how far to count them first (wide) and how many
// records the scan may read (budget).
//
// A term whose spans hold e of the container's n items lets a scan fill
// the page in about rows·n/e records, if its items are spread evenly in
// scan order, and costs at least its e entries as an index path: past
// wide = √(rows·n·costRecordScan/costEntry) entries the scan is expected
// to be the cheaper. When every term holds that many, the scan is tried,
// for as many records as counting on to the probe would have cost; if the
// page is not full by then (the passing items lie elsewhere in the
// order), the page is planned again with the counts, so it costs at most
// what it cost before plus that budget.
func ScanFirstBounds(s Scope, rows, probe int64) (wide, budget int64, ok bool) {
	if rows <= 0 {
		return 0, 0, false
	}
	n := float64(max(s.ContainerItems, 1))
	wide = int64(math.Ceil(math.Sqrt(float64(rows)*n*costRecordScan/costEntry))) + 1
	budget = int64(float64(probe-wide) * costEntry / costRecordScan)
	return wide, budget, wide < probe && budget >= 2*rows
}

// PaceRecords is how many records a scan tried first may have read once
// entries index entries have been counted: as many as cost a paceShare
// of what counting them did. Counting a round at a time, with the scan
// keeping pace, a page whose terms hold most of the scope fills after a
// round or two rather than after counting every term to wide, and a page
// with a term that proves narrow has read few records for it.
func PaceRecords(entries int64) int64 {
	return int64(math.Ceil(float64(entries) * costEntry / costRecordScan / paceShare))
}

// EntriesCosting is the fewest index entries that cost more than cost:
// past them, a path that reads them all cannot beat one weighed at cost.
func EntriesCosting(cost float64) int64 {
	return int64(math.Ceil(cost/costEntry)) + 1
}

// SettledCost is the least cost of the paths whose estimates no count
// still to be made can change: a scan of the scope, and the spans and
// intersections of the terms counted to their end (not Stopped), term
// skip left out. A path that reads more than EntriesCosting(SettledCost)
// of skip's entries cannot be chosen, whatever its count would say.
func SettledCost(in Input, skip int) float64 {
	at := Input{Scope: in.Scope, Terms: in.Terms, Entries: slices.Clone(in.Entries), Scoped: in.Scoped}
	for i := range at.Entries {
		if i == skip || in.Stopped != nil && in.Stopped[i] {
			at.Entries[i] = -1
		}
	}
	return Choose(at).Chosen.Cost
}

// EntriesWorth is how many index entries cost what scanning records
// records does.
func EntriesWorth(records int64) int64 {
	return int64(float64(records) * costRecordScan / costEntry)
}

// paceShare is the part of the counting's cost a paced scan may spend on
// records. The costs above weigh a record read by a scan at 6.7 entries;
// measured over documents of 300 bytes (BenchmarkFirstPage), reading and
// judging a record took as long as 30 to 60 entries, so a scan given the
// counts' whole cost in records spent several times their time.
const paceShare = 4

// Thin reports whether a scan that found hits passing documents in read
// records of a scope of items finds too few for it to be the cheaper way
// to a page: at that rate the scope holds fewer than wide of them
// (ScanFirstBounds).
func Thin(hits, read, items, wide int64) bool {
	return float64(hits)*float64(items) < float64(wide)*float64(read)
}

// ScanBeatsCollect reports whether a page that resumes by scanning window
// records from its position, in the scope's scan order, costs less than
// one that collects entries index entries again, as a page does whose
// access path must sort its candidates, and reads rows records by their
// locations. A page that collected knows where in the scan order each of
// its candidates lies, so it can tell how far a scan would read for the
// pages after it.
func ScanBeatsCollect(entries, rows, window int64) bool {
	return float64(window)*costRecordScan < float64(entries)*costEntry+float64(rows)*costRecordPoint
}

// PaceStart is how far every term is counted before a scan tried first
// for a page that ends after rows passing documents reads its first
// record: as far as lets it read rows+1 records (PaceRecords), enough to
// fill the page, and see that more follow, if every record passed. A
// term whose spans end before then is known narrow with no record read.
func PaceStart(rows int64) int64 {
	return int64(math.Ceil(float64(rows+1) * costRecordScan / costEntry * paceShare))
}

// ScanFirst is the plan of a scan tried first (ScanFirstBounds): the
// counts in in stopped at wide, and the scan reads at most budget records.
func ScanFirst(in Input, budget int64) Plan {
	p := Choose(in)
	scan := Path{Access: Scan, Records: float64(budget), Budget: float64(budget), Cost: float64(budget) * costRecordScan}
	p.Considered[0] = scan
	p.Chosen = scan
	return p
}

// SpanFirst is the plan of a page of rows in scan order read through
// index entries that come in that order, chosen before they are counted:
// the index span of the one term weighed (terms), when its values'
// entries merge by sequence, or the scope's documents without a path
// (AbsentScan, in.Absent) through their absence entries. Such a path
// reads, in the scan's order, the records of the scope that pass its
// term, each after its one entry: only records the scan of the page
// would read too. Against the cheapest scan (a term that holds every
// item) the page costs at most an entry and a point read where the scan
// reads a record, (costEntry+costRecordPoint)/costRecordScan times as
// much. Counting the term to learn whether the scan is the cheaper costs
// up to the probe's entries whatever the page reads, more than that bound
// as soon as the term holds a few pages' rows: the choice is not worth
// its count. Nothing is counted, and the path is weighed for the page's
// rows alone.
func SpanFirst(in Input, access Access, terms []int, rows int64) Plan {
	p := Plan{Scope: in.Scope, terms: in.Terms, union: in.Union, absent: in.Absent, values: in.Values}
	scan := Path{Access: Scan, Records: float64(in.Scope.Items)}
	span := Path{Access: access, Terms: terms, Entries: float64(rows), Records: float64(rows), First: true}
	for _, path := range []Path{scan, span} {
		path.Cost = path.cost()
		p.Considered = append(p.Considered, path)
	}
	p.Chosen = p.Considered[1]
	return p
}

// share is the part of the entries o walks that lie in the scope.
func (o *Ordered) share(s Scope) float64 {
	if o.Scoped {
		return 1
	}
	return s.fraction()
}

func orderedTerms(o *Ordered) []int {
	if o.Term >= 0 {
		return []int{o.Term}
	}
	return nil
}

// PointPlan is the plan of a page whose whole partition key is known and
// whose ids are (ids of them): a point read each, which no other path
// can beat, so nothing else is weighed and nothing is counted (the
// scope's sizes are left at -1).
func PointPlan(kind ScopeKind, terms []Term, ids int) Plan {
	p := Path{Access: PointRead, Records: float64(ids), Cost: costPoint * float64(ids)}
	return Plan{Scope: Scope{Kind: kind, Items: -1, ContainerItems: -1}, Chosen: p, Considered: []Path{p}, terms: terms}
}

// WordBound is how many candidates a full-text filter's stored words may
// name for reading them to be worth it in scope s, for a page that ends
// after rows passing documents in scan order (0: one that reads every
// candidate): a quarter of the scope, and for such a page no more than
// ScanFirstBounds' wide, past which a scan is expected to fill the page
// from fewer records than the words' entries cost.
func WordBound(s Scope, rows int64) int64 {
	b := max(s.Items/4, 16)
	if rows > 0 {
		b = min(b, max(int64(math.Ceil(math.Sqrt(float64(rows)*float64(max(s.Items, 1))*costRecordScan/costEntry))), 16))
	}
	return b
}

// WordNarrowBound is how many entries of one more word of a full-text
// phrase are worth reading to narrow the candidates the words read before
// it name: the items that lack the word are records not read, so its
// entries may cost as much as a quarter of the candidates' records.
func WordNarrowBound(candidates int64) int64 {
	return int64(float64(candidates) * costRecordPoint / costEntry / 4)
}

// WordPlan is the plan of a page read through the stored words of a text
// path (WordSpan): the entries of the term's words read to name its
// candidates, and the candidates' records.
func WordPlan(kind ScopeKind, term Term, entries, candidates int64) Plan {
	p := Path{Access: WordSpan, Terms: []int{0}, Entries: float64(entries), Records: float64(candidates)}
	p.Cost = p.cost()
	return Plan{Scope: Scope{Kind: kind, Items: -1, ContainerItems: -1}, Chosen: p, Considered: []Path{p}, terms: []Term{term}}
}

// VectorPlan is the plan of a page ordered by VectorDistance from a path
// of a vector index (term) to a constant vector, within its first want
// rows: the scope's stored vectors of the path are scored, and the
// records of the best read until want of them make rows. Nothing else is
// weighed, and nothing counted: a scan reads every record, and scores
// each from its document.
func VectorPlan(kind ScopeKind, term Term, want int64) Plan {
	p := Path{Access: VectorTop, Terms: []int{0}, Records: float64(want)}
	p.Cost = p.cost()
	return Plan{Scope: Scope{Kind: kind, Items: -1, ContainerItems: -1}, Chosen: p, Considered: []Path{p}, terms: []Term{term}}
}

// CountersPlan is the plan of the count of a whole container, one of its
// ranges or one logical partition (kind), which the usage counters
// answer: nothing else is weighed or counted.
func CountersPlan(kind ScopeKind) Plan {
	p := Path{Access: Counters, Cost: costPoint}
	return Plan{Scope: Scope{Kind: kind, Items: -1, ContainerItems: -1}, Chosen: p, Considered: []Path{p}}
}

// KeyCountersPlan is the plan of a count over a scope of kind whose filter
// is term alone, an IN list of whole partition keys, which the counters of
// their logical partitions answer: read is how many counters (and, for a
// key that shares its counter, id entries) were read.
func KeyCountersPlan(kind ScopeKind, term Term, read int64) Plan {
	p := Path{Access: Counters, Terms: []int{0}, Entries: float64(read), Cost: float64(read) * costEntry}
	return Plan{Scope: Scope{Kind: kind, Items: -1, ContainerItems: -1}, Chosen: p, Considered: []Path{p}, terms: []Term{term}}
}

// IDEntriesPlan is the plan of the count of a logical partition, which
// its id entries answer: entries is how many were read, and nothing else
// is weighed.
func IDEntriesPlan(entries int64) Plan {
	p := Path{Access: IDEntries, Entries: float64(entries), Cost: float64(entries) * costEntry}
	return Plan{Scope: Scope{Kind: ScopePartition, Items: -1, ContainerItems: -1}, Chosen: p, Considered: []Path{p}}
}

// IndexCountPlan is the plan of a count over a scope of kind whose filter
// is terms alone, which their index entries in the scope answer: one
// term's, or with comp those of a composite index on the terms' paths (in
// the composite's order); entries is how many were read, and nothing else
// is weighed.
func IndexCountPlan(kind ScopeKind, terms []Term, comp *CompositeUse, entries int64) Plan {
	p := Path{Access: IndexCount, Composite: comp, Entries: float64(entries), Cost: float64(entries) * costEntry}
	for i := range terms {
		p.Terms = append(p.Terms, i)
	}
	return Plan{Scope: Scope{Kind: kind, Items: -1, ContainerItems: -1}, Chosen: p, Considered: []Path{p}, terms: terms}
}

// ValueCountPlan is the plan of a COUNT over a scope of kind whose WHERE
// clause is the value filter f, beside the exact term beside if not nil,
// counted from their entries (entries): the values tested among the
// term's items, and the records of the items whose entry holds no exact
// value read (an array's, an object's, a number of 2^53 or more).
func ValueCountPlan(kind ScopeKind, f *ValueFilter, beside *Term, entries, records int64) Plan {
	p := Path{Access: IndexCount, Terms: []int{0}, Entries: float64(entries), Records: float64(records)}
	p.Cost = p.cost()
	terms := []Term{{Path: f.Path, Label: f.Label}}
	if beside != nil {
		p.Beside, terms = []int{1}, append(terms, *beside)
	}
	return Plan{Scope: Scope{Kind: kind, Items: -1, ContainerItems: -1}, Chosen: p, Considered: []Path{p}, terms: terms}
}

// IndexSumPlan is the plan of a SUM or AVG of a path over a scope of kind,
// which the values its entries in the scope hold answer (term names the
// path and the aggregate): entries is how many were read, and no record.
func IndexSumPlan(kind ScopeKind, term Term, entries int64) Plan {
	p := Path{Access: IndexSum, Terms: []int{0}, Entries: float64(entries), Cost: float64(entries) * costEntry}
	return Plan{Scope: Scope{Kind: kind, Items: -1, ContainerItems: -1}, Chosen: p, Considered: []Path{p}, terms: []Term{term}}
}

// IndexExtremePlan is the plan of a MIN or MAX of a path over a scope of
// kind, which the path's first or last entry in the scope answers (term
// names the path and the aggregate): entries is how many were read, and
// one record is read for the value.
func IndexExtremePlan(kind ScopeKind, term Term, entries int64) Plan {
	p := Path{Access: IndexExtreme, Terms: []int{0}, Entries: float64(entries), Records: 1, Cost: float64(entries)*costEntry + costRecordPoint}
	return Plan{Scope: Scope{Kind: kind, Items: -1, ContainerItems: -1}, Chosen: p, Considered: []Path{p}, terms: []Term{term}}
}

// Explain describes the choice in one line per path, the chosen first:
//
//	scope=partition items=100 of 10000
//	chosen: scan records=100 cost=100
//	considered: index /n >= 10 entries=9000 records=90 cost=1575
func (p Plan) Explain() string {
	var b strings.Builder
	scope := p.Scope.Kind.String()
	if p.Scope.Parts > 1 {
		scope += fmt.Sprintf(" 1 of %d", p.Scope.Parts)
	}
	if p.Scope.ContainerItems < 0 {
		fmt.Fprintf(&b, "scope=%s (not counted)\n", scope)
	} else {
		fmt.Fprintf(&b, "scope=%s items=%d of %d\n", scope, p.Scope.Items, p.Scope.ContainerItems)
	}
	b.WriteString("chosen: " + p.describe(p.Chosen) + "\n")
	for _, c := range p.Considered {
		if c.Access == p.Chosen.Access && c.Composite == p.Chosen.Composite && c.ByUnion == p.Chosen.ByUnion && slices.Equal(c.Terms, p.Chosen.Terms) && slices.Equal(c.Beside, p.Chosen.Beside) {
			continue
		}
		b.WriteString("considered: " + p.describe(c) + "\n")
	}
	return b.String()
}

// Summary is the chosen path in a few words, for a response header.
func (p Plan) Summary() string {
	scope := p.Scope.Kind.String()
	if p.Scope.Parts > 1 {
		scope = fmt.Sprintf("%s:1:of:%d", scope, p.Scope.Parts)
	}
	return fmt.Sprintf("scope=%s;%s", scope, strings.ReplaceAll(p.describe(p.Chosen), " ", ";"))
}

// InParts returns p, the plan of the first of parts logical partitions a
// page reads one after another, labelled as such.
func InParts(p Plan, parts int) Plan {
	p.Scope.Parts = parts
	return p
}

func (p Plan) describe(c Path) string {
	var b strings.Builder
	b.WriteString(c.Access.String())
	if c.Composite != nil {
		b.WriteString(" " + c.Composite.Index.Label())
	}
	labels := p.terms
	if c.Access == Union {
		labels = p.union
	}
	for i, t := range c.Terms {
		if t >= len(labels) {
			continue
		}
		if c.Access == Union && i > 0 {
			b.WriteString(" OR")
		}
		b.WriteString(" [" + labels[t].Label + "]")
	}
	if c.Access == ValueScan && p.values != nil {
		b.WriteString(" [" + p.values.Label + "]")
	}
	for _, t := range c.Beside {
		if t < len(p.terms) {
			b.WriteString(" AND [" + p.terms[t].Label + "]")
		}
	}
	if c.Access == AbsentScan {
		b.WriteString(" [NOT IS_DEFINED(" + pathLabel(p.absent) + ")]")
	}
	if c.ByUnion {
		ors := make([]string, len(p.union))
		for i, t := range p.union {
			ors[i] = t.Label
		}
		b.WriteString(" [" + strings.Join(ors, " OR ") + "]")
	}
	if c.Absent {
		b.WriteString(" absent")
	}
	if c.Scoped {
		b.WriteString(" scoped")
	}
	if c.Entries > 0 {
		fmt.Fprintf(&b, " entries=%.0f", c.Entries)
	}
	fmt.Fprintf(&b, " records=%.0f", c.Records)
	if c.Scanned > 0 {
		fmt.Fprintf(&b, " scanned=%.0f", c.Scanned)
	}
	if c.Budget > 0 {
		fmt.Fprintf(&b, " first budget=%.0f", c.Budget)
	}
	if c.First {
		b.WriteString(" first")
	}
	fmt.Fprintf(&b, " cost=%.0f", c.Cost)
	return b.String()
}

// UsedPaths returns the paths whose single-path index the chosen access
// path reads (UsedComposite names a composite index).
func (p Plan) UsedPaths() [][]string {
	if p.Chosen.Access.Composite() || p.Chosen.Access == Counters {
		return nil
	}
	terms := p.terms
	if p.Chosen.Access == Union {
		terms = p.union
	}
	var out [][]string
	for _, t := range p.Chosen.Terms {
		if t < len(terms) {
			out = append(out, terms[t].Path)
		}
	}
	for _, t := range p.Chosen.Beside {
		if t < len(p.terms) {
			out = append(out, p.terms[t].Path)
		}
	}
	if p.Chosen.Access == ValueScan && p.values != nil {
		out = append(out, p.values.Path)
	}
	return out
}

// UsedComposite returns the composite index the chosen access path reads.
func (p Plan) UsedComposite() (CompositeIndex, bool) {
	if p.Chosen.Composite == nil {
		return CompositeIndex{}, false
	}
	return p.Chosen.Composite.Index, true
}

// Composite reports whether the access path reads a composite index.
func (a Access) Composite() bool { return a == CompositeSpan || a == CompositeWalk }

// Paged reports whether a token may name a: an access path a page reads
// and the next goes on in, not one that answers a count or an aggregate
// whole; IndexCount names the groups of a GROUP BY the index counts,
// which page through their values.
func (a Access) Paged() bool {
	return a <= OrderedStream || a == Union || a == FilteredStream || a == AbsentScan || a == IndexCount || a == ValueScan || a == VectorTop || a == WordSpan
}

// Streams reports whether a is the ordered stream, filtered or not, which
// pages itself and finds its terms in the query on every page.
func (a Access) Streams() bool { return a == OrderedStream || a == FilteredStream }

// Unordered reports whether a reads the scope's candidates in an order of
// their own, all of them on a page: a way a query whose rows need every
// candidate (a GROUP BY's) reads them in once.
func (a Access) Unordered() bool {
	switch a {
	case Scan, IndexSpan, Intersect, CompositeSpan, Union, AbsentScan, ValueScan:
		return true
	}
	return false
}

// GroupWalkBound returns how many entries of its path the stream page p
// (OrderedStream or FilteredStream) may walk before it costs other. A
// GROUP BY the stream feeds reads every document of its page's groups,
// which p, weighed for a page of rows, does not count: when the groups
// hold that many entries, a way that reads the candidates once and groups
// them costs less. p's records are taken to grow with its entries.
func GroupWalkBound(p Path, other float64) int64 {
	perEntry := costEntry + costRecordPoint
	if p.Entries > 0 {
		perEntry = costEntry + p.Records/p.Entries*costRecordPoint
	}
	left := other - p.Scanned*costRecordScan
	if left <= 0 {
		return 0
	}
	return int64(math.Ceil(left / perEntry))
}

// CollectPays reports whether the pages of a scan whose rows one term's
// index entries name should collect those entries instead, once, keeping
// them for the pages after (the engine's kept candidates): the drain has
// scanned scanned records, has left records still to scan, and the term
// holds entries. A client may stop at any page, so the scan goes on until
// it has cost what collecting does, and the collection is made only if the
// rest of the scan would cost that much again: what a drain pays is then
// at most about twice what the cheaper of the two would have cost it.
func CollectPays(scanned, left, entries int64) bool {
	collect := float64(entries) * costEntry
	return float64(scanned)*costRecordScan >= collect && float64(left)*costRecordScan >= collect
}

// FilterPays reports whether an ordered stream that has read extra
// records past its rows, each by its location, should collect the
// entries of its filter term, entries of them, and walk on filtered by
// the locations they name (FilteredStream): as CollectPays, once the
// records it read for nothing have cost what collecting costs.
func FilterPays(extra, entries int64) bool {
	return float64(extra)*costRecordPoint >= float64(entries)*costEntry
}

// FilterWorth is how many index entries cost what reading extra records
// by their locations does.
func FilterWorth(extra int64) int64 {
	return int64(float64(extra) * costRecordPoint / costEntry)
}
