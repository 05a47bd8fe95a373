package eval

import (
	"math"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
)

type aggKind uint8

const (
	aggCount aggKind = iota
	aggSum
	aggAvg
	aggMin
	aggMax
	aggCountIf
	aggMakeList
	aggMakeSet
)

// aggregateKinds maps the lower-case aggregate names to their kinds.
var aggregateKinds = map[string]aggKind{
	"count": aggCount, "sum": aggSum, "avg": aggAvg, "min": aggMin, "max": aggMax,
	"countif": aggCountIf, "makelist": aggMakeList, "makeset": aggMakeSet,
}

// aggState accumulates one aggregate over one group.
type aggState struct {
	kind    aggKind
	n       int64
	isInt   bool // sum so far is exact in i
	i       int64
	f       float64
	invalid bool // a value the aggregate refuses was seen: result undefined
	best    document.Value
	list    []document.Value
	seen    map[string]bool
}

func newAggState(k aggKind) *aggState { return &aggState{kind: k, isInt: true} }

func (a *aggState) add(v document.Value) {
	switch a.kind {
	case aggCount:
		if v.IsDefined() {
			a.n++
		}
	case aggCountIf:
		if v.Kind() == document.Bool && v.Bool() {
			a.n++
		}
	case aggSum, aggAvg:
		if !v.IsDefined() {
			return
		}
		if v.Kind() != document.Number {
			a.invalid = true
			return
		}
		a.n++
		if a.isInt && v.IsInt() {
			s := a.i + v.Int()
			if (s > a.i) == (v.Int() > 0) {
				a.i = s
				return
			}
		}
		if a.isInt {
			a.f = float64(a.i)
			a.isInt = false
		}
		a.f += v.Float()
	case aggMin, aggMax:
		switch v.Kind() {
		case document.Undefined:
			return
		case document.Array, document.Object:
			a.invalid = true
			return
		}
		if !a.best.IsDefined() {
			a.best = v
			return
		}
		d := document.Compare(v, a.best)
		if (a.kind == aggMin && d < 0) || (a.kind == aggMax && d > 0) {
			a.best = v
		}
	case aggMakeList, aggMakeSet:
		if !v.IsDefined() {
			return
		}
		if a.kind == aggMakeSet {
			if a.seen == nil {
				a.seen = map[string]bool{}
			}
			k := string(CanonicalKey(nil, v))
			if a.seen[k] {
				return
			}
			a.seen[k] = true
		}
		a.list = append(a.list, v)
	}
}

func (a *aggState) result() document.Value {
	switch a.kind {
	case aggCount, aggCountIf:
		return document.Int(a.n)
	case aggSum:
		if a.invalid {
			return undef
		}
		if a.isInt {
			return document.Int(a.i)
		}
		return number(a.f)
	case aggAvg:
		if a.invalid || a.n == 0 {
			return undef
		}
		sum := a.f
		if a.isInt {
			sum = float64(a.i)
		}
		return number(sum / float64(a.n))
	case aggMin, aggMax:
		if a.invalid {
			return undef
		}
		return a.best
	case aggMakeList, aggMakeSet:
		return document.Arr(a.list)
	}
	return undef
}

type group struct {
	first scope
	aggs  []*aggState
}

// groups evaluates a grouped query: one output row per GROUP BY key, or a
// single row over the whole input for aggregates without GROUP BY.
func (c *ctx) groups(cq *compiled, produce func(emit func(scope) error) error, hold func(int) error) ([]sortRow, error) {
	q := cq.q
	index := map[string]*group{}
	var order []*group
	newGroup := func(s scope) *group {
		g := &group{first: s}
		for _, call := range cq.aggs {
			g.aggs = append(g.aggs, newAggState(aggregateKinds[lower(call.Name)]))
		}
		order = append(order, g)
		return g
	}
	var single *group
	if len(q.GroupBy) == 0 {
		single = newGroup(nil)
	}
	var key []byte
	err := produce(func(s scope) error {
		g := single
		if g == nil {
			key = key[:0]
			for _, ge := range q.GroupBy {
				v, err := c.eval(ge, s)
				if err != nil {
					return err
				}
				key = CanonicalKey(key, v)
				key = append(key, 0)
			}
			g = index[string(key)]
			if g == nil {
				// A group keeps its key, its first row's bindings and
				// its aggregates' state.
				size := len(key) + 64*(len(s)+len(cq.aggs)+1)
				if err := hold(size); err != nil {
					return err
				}
				g = newGroup(s)
				index[string(key)] = g
			}
		}
		for i, call := range cq.aggs {
			v, err := c.eval(call.Args[0], s)
			if err != nil {
				return err
			}
			a := g.aggs[i]
			n := len(a.list)
			a.add(v)
			if len(a.list) > n {
				// MakeList and MakeSet keep what they are given.
				if err := hold(sizeOf(v)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rows := make([]sortRow, 0, len(order))
	for _, g := range order {
		vals := make([]document.Value, len(g.aggs))
		for i, a := range g.aggs {
			vals[i] = a.result()
		}
		saveVals, saveOf := c.aggVals, c.aggOf
		c.aggVals, c.aggOf = vals, cq
		v, err := c.project(cq, g.first)
		c.aggVals, c.aggOf = saveVals, saveOf
		if err != nil {
			return nil, err
		}
		rows = append(rows, sortRow{val: v})
	}
	return rows, nil
}

// aggregateValue returns the result of an aggregate call while a group is
// being projected.
func (c *ctx) aggregateValue(call *ast.Call) (document.Value, bool) {
	if c.aggOf == nil {
		return undef, false
	}
	i, ok := c.aggOf.aggIndex[call]
	if !ok {
		return undef, false
	}
	return c.aggVals[i], true
}

var _ = math.MaxInt64
