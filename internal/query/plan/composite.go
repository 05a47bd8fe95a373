package plan

import (
	"slices"
	"strings"
)

// CompositeIndex is one composite index of the container's indexing
// policy: property paths, each ascending or descending. Its entries sort
// by the first path, then the next, each in its own direction.
type CompositeIndex struct {
	Ordinal int // its position in the policy
	Paths   [][]string
	Desc    []bool
}

// Label names the composite as a policy writes it: (/a ASC, /b DESC).
func (c CompositeIndex) Label() string {
	parts := make([]string, len(c.Paths))
	for i, p := range c.Paths {
		parts[i] = pathLabel(p) + " ASC"
		if c.Desc[i] {
			parts[i] = pathLabel(p) + " DESC"
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// Spec is how the service's index metrics name the composite's paths:
// "/a ASC", "/b DESC".
func (c CompositeIndex) Spec() []string {
	l := strings.TrimSuffix(strings.TrimPrefix(c.Label(), "("), ")")
	return strings.Split(l, ", ")
}

// OrderKey is one ORDER BY item that reads a document path.
type OrderKey struct {
	Path []string
	Desc bool
}

// MaxCompositeSpans is the most spans of fixed leading values a composite
// use reads: the product of the numbers of values of its Eq terms.
const MaxCompositeSpans = 256

// CompositeUse is one way to read a composite index: the spans of entries
// whose leading paths equal values of the terms Eq (one per path, in
// order: an equality's value, or each value of an IN list, every
// combination of them a span) and whose next path lies in the term
// Next's spans (-1: any). For
// CompositeSpan the span's items are read in _rid order; for
// CompositeWalk (Ordered) the span is walked in key order, backwards when
// Reverse, which is the query's ORDER BY order, until Want rows pass the
// WHERE clause.
type CompositeUse struct {
	Index   CompositeIndex
	Eq      []int
	Next    int
	Ordered bool
	Reverse bool
	Want    int64
	// Entries is how many entries the span holds, counted by the engine up
	// to its bound like a term's (Input.Entries); -1 when the index
	// cannot be used (being rebuilt).
	Entries int64
	// Scoped is set by the engine when the span's items all lie in the
	// page's scope (its equalities pin the whole partition key of a
	// partition scope), so every entry costs a record.
	Scoped bool
}

// Terms are the terms whose spans the use reads, in the composite's order.
func (u CompositeUse) Terms() []int {
	out := slices.Clone(u.Eq)
	if u.Next >= 0 {
		out = append(out, u.Next)
	}
	return out
}

// CompositeUses returns how the composite indexes comps can answer a query
// with the given terms and ORDER BY keys (nil when the query has no ORDER
// BY a walk can serve, want being how many rows it needs).
//
// A composite index holds only the items whose every path has a scalar
// value. So a composite is used only when every one of its paths has a
// term that holds only for scalars (an equality, IN, STARTSWITH, a range
// with a scalar, or a type check of scalars such as IS_NUMBER), so every
// item the query can return is in the index, and the span is exact, not a
// guess. Then:
//
//   - the longest run of leading paths with one equality each, and the
//     term on the next path, give one span per value span of that term;
//     its items are a CompositeSpan;
//   - when the ORDER BY keys are the composite's paths from some position
//     on, those before it being among the equalities, in the composite's
//     directions or all reversed (directions of the keys the equalities
//     fix do not matter), walking the span in key order (or backwards)
//     meets the rows in the ORDER BY's order: a CompositeWalk.
func CompositeUses(comps []CompositeIndex, terms []Term, order []OrderKey, want int64) []CompositeUse {
	var out []CompositeUse
	for _, comp := range comps {
		at := make([]int, len(comp.Paths))
		complete := true
		for i, p := range comp.Paths {
			at[i] = slices.IndexFunc(terms, func(t Term) bool { return slices.Equal(t.Path, p) })
			complete = complete && at[i] >= 0 && !slices.ContainsFunc(terms[at[i]].Spans, func(s Span) bool { return !s.Scalars() })
		}
		if !complete {
			continue
		}
		u := CompositeUse{Index: comp, Next: -1, Entries: -1}
		values, spans := []int(nil), 1
		for _, t := range at {
			s := terms[t].Spans
			if slices.ContainsFunc(s, func(sp Span) bool { return sp.Kind != SpanValue }) || spans*len(s) > MaxCompositeSpans {
				break
			}
			u.Eq, values, spans = append(u.Eq, t), append(values, len(s)), spans*len(s)
		}
		if len(u.Eq) < len(at) {
			u.Next = at[len(u.Eq)]
		}
		out = append(out, u)
		if rev, ok := walkOrder(comp, values, order); ok && want >= 0 {
			w := u
			w.Eq = slices.Clone(u.Eq)
			w.Ordered, w.Reverse, w.Want = true, rev, want
			out = append(out, w)
		}
	}
	return out
}

// walkOrder reports whether the ORDER BY keys follow the composite's paths
// from some position j on, with its leading j paths fixed by equalities
// of one value each, and whether the walk goes backwards. values holds
// how many values the terms of the composite's first paths have (an
// equality one, an IN list its values): the spans of several values of
// a path are walked in its order, so a key on it must follow it.
func walkOrder(comp CompositeIndex, values []int, order []OrderKey) (reverse, ok bool) {
	if len(order) == 0 {
		return false, false
	}
	for j := 0; j <= len(values) && j+len(order) <= len(comp.Paths); j++ {
		if j > 0 && values[j-1] != 1 {
			break // a path of several values before the keys
		}
		same, opposite, match := true, true, true
		for i, k := range order {
			p := j + i
			if !slices.Equal(k.Path, comp.Paths[p]) {
				match = false
				break
			}
			if p < len(values) && values[p] == 1 {
				continue // a fixed value: its direction does not matter
			}
			same = same && k.Desc == comp.Desc[p]
			opposite = opposite && k.Desc != comp.Desc[p]
		}
		if match && (same || opposite) {
			return !same, true
		}
	}
	return false, false
}
