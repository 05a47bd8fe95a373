package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// groupCountByIndex answers a GROUP BY of one indexed path whose only
// aggregates are COUNTs of a constant (`SELECT c.status, COUNT(1) AS n
// FROM c GROUP BY c.status`, or the SDKs' per-range rewrite of it), over
// the whole container, a range, or a logical partition that no other key
// shares its EPK with once the path's partition entries are built, from
// the path's index entries: each exact scalar value's live entries in the
// scope are its group's count, and the items without the path (the
// counters' count less those with it, once its absence entries are built,
// which the query asks for) the group of no value. It reads the entries
// and one record per group, for the value as written, where the
// evaluation read every record. The select list is then evaluated over one
// stand-in document per group, holding the group's value at the path and
// its count, with each COUNT read as the SUM of that count: its rows are
// the evaluation's, the groups in the order of their values rather than of
// their first items, an order the service leaves open.
//
// A WHERE clause of one exact term (loneExactTerm: `WHERE c.region =
// 'eu'`) is met by the locations its entries name: only the entries of
// the path at those count, and the items there without the path are the
// group of no value. It answers so only where the path's entries it steps
// through cost less than reading the records of the items that pass
// (groupEntriesPerRecord each), and the items that pass are at most
// maxFilterLocs.
//
// The groups page: a page answers up to limit of them and its token
// (next, with the access IndexCount) holds the last one's value, after
// which the next page goes on reading the entries (the group of no value
// comes first, on the first page). Under a filter the first page reads
// every entry of the path, as the group of no value is known only once
// every other is counted, and keeps the locations that pass for the
// pages after (kept), which read them again where items were written
// since. It leaves the query
// to the evaluation when an item of the scope (that passes the filter)
// holds an array or an object at the path (their groups are of whole
// values, which the index does not keep), when a value is one the index
// does not tell apart from others (a number of magnitude 2^53 or more),
// and when the select list reads anything of the document but the path;
// a first page whose groups do not fit looks for such entries past its
// own (scalarGroups), and a later page that meets one, written since,
// refuses the token.
//
// cur is the token's position on a later page, nil on a first.
func (e *Engine) groupCountByIndex(r storage.Reader, c *containerRecord, q *ast.Query, params map[string]document.Value, rangeID string, scope *itemScope, now time.Time, limit int, cur *cursor, next cursor, kept candidateKeeper, st *readStats, page *FeedPage) (bool, error) {
	if !c.Index.Ready || c.index.none || q.From == nil || q.From.Iterate || len(q.Joins) > 0 || len(q.GroupBy) != 1 ||
		len(q.OrderBy) > 0 || q.Select.Distinct || q.Select.Top != nil || q.Offset != nil || q.Limit != nil {
		return false, nil
	}
	resumed := cur != nil
	if resumed && cur.indexVer != c.Index.Version {
		return false, errorf(BadRequest, "Invalid Continuation Token: the container's indexing policy changed since the query began; run the query again.")
	}
	var filter *plan.Term
	if q.Where != nil {
		if !plan.Exact(q, params) {
			return false, nil
		}
		preds := plan.Predicates(q, params)
		if !oneTerm(preds) {
			return false, nil
		}
		if err := readPrefixParts(r, c, plan.Terms(preds), scope, st); err != nil {
			return false, err
		}
		t, ok := loneExactTerm(c, preds, scope)
		if !ok {
			return false, nil
		}
		filter = &t
	}
	path, ok := plan.DocPath(q, q.GroupBy[0])
	if !ok || len(path) == 0 || crossesArray(path) || systemPath(path) || !c.index.indexes(path) {
		return false, nil
	}
	countField := "\x00count"
	standIn, ok := groupStandIn(q, params, now, path, countField)
	if !ok {
		return false, nil
	}
	var base []byte
	merged := false // the entries are read through newPartsIter
	var err error
	switch scope.kind {
	case plan.ScopeAll, plan.ScopeRange:
		base = appendIndexPath(indexPrefix(c), path)
	case plan.ScopePartition:
		if !c.partsReady(path) {
			return false, nil
		}
		if alone, err := partitionAlone(r, c, scope, st); err != nil || !alone {
			return false, err
		}
		base = partsPrefix(c, path, scope.epk)
	case plan.ScopePrefix:
		// Under a prefix of a few partitions, their partition entries
		// merged (prefixparts.go), as the path's own entries under the
		// prefix; the own entries are the whole container's. A range
		// filter's entries are read so too (prefixRange).
		merged, err = mergesParts(r, c, path, scope, st)
		if err != nil || !merged || filter != nil && !singleValues(*filter) && !prefixRange(c, *filter, scope) {
			return false, err
		}
		base = appendIndexPath(indexPrefix(c), path)
	default:
		return false, nil
	}
	expired, err := expiredIn(r, c, scope, now, st)
	if err != nil {
		return false, err
	}
	var defined, without, read int64
	if !resumed {
		if defined, without, read, ok, err = e.definedCount(r, c, path, rangeID, scope, now, expired, st); err != nil || !ok {
			return false, err
		}
	}
	// passes, with a filter, tells the locations that pass it: of
	// passing, those its entries name, or of a set the page before kept
	// (on a later page, while nothing was written since: the kept
	// set's catching up with writes takes in every item written, a
	// candidate the count would take for one that passes).
	var passes func(loc []byte) bool
	var passing map[string]bool
	var set locSet
	if filter != nil && resumed {
		if k, err := kept.take(*cur, plan.IndexCount, scope, st); err != nil {
			return false, err
		} else if k != nil && k.set != nil && k.writes == kept.writes {
			set = k.set
		}
	}
	if filter != nil && set == nil {
		// Over a range, the path's entries stepped through are the
		// container's. A later page reads them again, however many.
		least := int64(1)
		if !resumed {
			stepped := defined
			if scope.kind == plan.ScopeRange {
				stepped *= int64(len(e.rangesOf(c)))
			}
			least = max(stepped/groupEntriesPerRecord, 1)
		}
		var n int64
		passing, n, err = filterPasses(r, c, *filter, scope, expired, least, st)
		read += n
		if err != nil {
			return false, err
		}
		if passing == nil && resumed {
			return false, errorf(BadRequest, "Invalid Continuation Token: more items pass the query's filter than its groups page through; run the query again.")
		}
		if passing == nil {
			return false, nil
		}
		set = make(locSet, len(passing))
		for l := range passing {
			set.add([]byte(l))
		}
	}
	if set != nil {
		passes = set.has
	}
	// The groups: each value's count and the location of one of its
	// items; arrays and objects (their marker entries) end it.
	type group struct {
		value, loc []byte
		n          int64
	}
	var groups []group
	var counted, matched int64
	whole, more := true, false
	// Without a filter the page's room is known before it reads: the
	// group of no value, then as many others as fit.
	room := limit
	if without > 0 && filter == nil {
		room--
	}
	from := append(bytes.Clone(base), tagNull)
	if resumed {
		from = prefixEnd(append(bytes.Clone(base), cur.pos...))
	}
	// A first page under a filter reads every entry of the path: the
	// group of no value, which comes first, is the items that pass less
	// those the entries name; past the page's groups it counts them
	// alone (full).
	full := false
	if passes != nil && len(set) == 0 {
		// Nothing passes the filter: no group.
		counted = defined
	} else {
		err = scanEntries(r, c, path, scope, merged, from, prefixEnd(base), func(k, _ []byte) (bool, error) {
			read++
			if err := st.entry(); err != nil {
				return false, err
			}
			l, ok := entryLoc(k, len(base))
			if !ok {
				return false, fmt.Errorf("index entry %x: malformed", k)
			}
			if !scope.holds(l) || expired[string(l)] {
				return true, nil
			}
			if counted++; passes != nil && !passes(l) {
				return true, nil
			}
			matched++
			v := k[len(base) : len(k)-len(l)]
			if v[0] == tagArray || v[0] == tagObject || !exactValue(v) {
				whole = false
				return false, nil
			}
			if full {
				return true, nil
			}
			if n := len(groups); n == 0 || !bytes.Equal(groups[n-1].value, v) {
				if n == room {
					more = true
					if filter == nil || resumed {
						return false, nil
					}
					full = true
					return true, nil
				}
				groups = append(groups, group{value: bytes.Clone(v), loc: bytes.Clone(l)})
			}
			groups[len(groups)-1].n++
			return true, nil
		})
	}
	switch {
	case err != nil:
		return false, err
	case resumed && !whole:
		return false, errorf(BadRequest, "Invalid Continuation Token: an item written since the query began holds a value its groups do not page through; run the query again.")
	case !whole || (!more || filter != nil) && !resumed && counted != defined:
		// A count that is not the counters' (an item with the value
		// twice cannot be: a path holds one value) leaves it too.
		return false, nil
	case more && !resumed && filter == nil:
		if ok, err := scalarGroups(r, c, path, scope, merged, base, expired, st); err != nil || !ok {
			return false, err
		}
	}
	if passes != nil && !resumed {
		if without = int64(len(passing)) - matched; without < 0 {
			return false, nil
		}
		if without > 0 && len(groups) == limit {
			// The group of no value takes the page's last place.
			groups, more = groups[:limit-1], true
		}
	}
	var docs []document.Value
	if without > 0 {
		docs = append(docs, standInDoc(nil, document.Undef, countField, without))
	}
	// The groups' records, read a run at a time (one round trip a run
	// over the network).
	var ahead readAhead
	for i, g := range groups {
		if i%aheadMax == 0 {
			locs := make([][]byte, 0, aheadMax)
			for _, h := range groups[i:min(i+aheadMax, len(groups))] {
				locs = append(locs, h.loc)
			}
			if err := ahead.fetch(r, c, locs, st); err != nil {
				return false, err
			}
		}
		rec, ok, err := ahead.read(r, c, g.loc, st)
		if err != nil || !ok {
			return false, err
		}
		doc, err := document.Parse(rec.json)
		if err != nil {
			return false, err
		}
		v := doc.At(path)
		if enc, ok := appendIndexValue(nil, v); !ok || !bytes.Equal(enc, g.value) {
			return false, nil // not what the entry says: let the evaluation answer
		}
		docs = append(docs, standInDoc(path, v, countField, g.n))
	}
	if len(docs) > limit {
		return false, nil
	}
	rows, err := standIn.RunDocs(docs)
	if err != nil {
		return false, queryError(err)
	}
	for _, row := range rows {
		page.Items = append(page.Items, row.JSON())
	}
	if more {
		// After the last group's value; a page that held only the
		// group of no value, before every value (prefixEnd of 0 is
		// tagNull).
		next.access, next.pos = plan.IndexCount, []byte{0}
		if len(groups) > 0 {
			next.pos = groups[len(groups)-1].value
		}
		if set != nil && kept.k != nil {
			next.kept = newKeptID()
			kept.keep(next, &keptCandidates{set: set})
		}
		page.Continuation = next.String()
	}
	terms := []plan.Term{{Path: path, Label: "GROUP BY /" + strings.Join(path, "/")}}
	if filter != nil {
		terms = append([]plan.Term{*filter}, terms...)
	}
	p := plan.IndexCountPlan(scope.kind, terms, nil, read)
	p.Chosen.Records = float64(len(groups)) // a record a group, for its value
	page.Plan = &p
	return true, nil
}

// scanEntries calls fn for every key of path's entries in [lo, hi), keys
// of the path's own entries, in order, until fn returns false: read from
// the prefix scope's partitions' partition entries, merged, when merged.
func scanEntries(r storage.Reader, c *containerRecord, path []string, scope *itemScope, merged bool, lo, hi []byte, fn func(k, v []byte) (bool, error)) error {
	if !merged {
		return scanRange(r, lo, hi, fn)
	}
	it, err := newPartsIter(r, c, path, scope, appendIndexPath(indexPrefix(c), path), lo, hi, false)
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if more, err := fn(it.Key(), it.Value()); err != nil || !more {
			return err
		}
	}
	return it.Err()
}

// scalarGroups reports whether no live item of the scope holds, at path,
// a value whose group the index cannot count: an array or an object (a
// bare marker entry), or a number of magnitude 2^53 or more (whose entries
// it shares with its neighbours). Their entries lie apart, at the two ends
// of the numbers' and after the strings', so it seeks to each; where the
// entries are the container's (a range's), it steps through a few outside
// the scope and then takes the answer for no.
func scalarGroups(r storage.Reader, c *containerRecord, path []string, scope *itemScope, merged bool, base []byte, expired map[string]bool, st *readStats) (bool, error) {
	number := func(f float64) []byte {
		return binary.BigEndian.AppendUint64(append(bytes.Clone(base), tagNumber), orderedFloat(f))
	}
	spans := []keySpan{
		{lo: append(bytes.Clone(base), tagNumber), hi: prefixEnd(number(-(1 << 53)))},
		{lo: number(1 << 53), hi: prefixEnd(append(bytes.Clone(base), tagNumber))},
		{lo: append(bytes.Clone(base), tagArray), hi: prefixEnd(base)},
	}
	for _, sp := range spans {
		found, stepped := false, 0
		err := scanEntries(r, c, path, scope, merged, sp.lo, sp.hi, func(k, _ []byte) (bool, error) {
			if err := st.entry(); err != nil {
				return false, err
			}
			l, ok := entryLoc(k, len(base))
			if !ok {
				return false, fmt.Errorf("index entry %x: malformed", k)
			}
			if stepped++; scope.holds(l) && !expired[string(l)] || stepped > maxScalarSteps {
				found = true
				return false, nil
			}
			return true, nil
		})
		if err != nil || found {
			return false, err
		}
	}
	return true, nil
}

// maxScalarSteps bounds the entries outside the scope scalarGroups steps
// through in each place it looks.
const maxScalarSteps = 64

// groupEntriesPerRecord is how many index entries a group count by the
// index steps through, at most, for each record of an item that passes its
// filter: an entry is a short key, a record a whole document to find and
// parse (plan's costRecordPoint over costEntry, about 17).
const groupEntriesPerRecord = 16

// filterPasses returns the locations of the scope's live items (expired
// holds those expired and not purged yet) whose entries t's spans hold,
// and how many entries it read; nil when they are more than maxFilterLocs,
// or some but fewer than least (their records would cost less than the
// entries a group count steps through).
func filterPasses(r storage.Reader, c *containerRecord, t plan.Term, scope *itemScope, expired map[string]bool, least int64, st *readStats) (map[string]bool, int64, error) {
	spans, base := scopedSpans(c, t, scope)
	passing := map[string]bool{}
	var read int64
	many := false
	err := scanSpans(r, spans, func(k, _ []byte) (bool, error) {
		read++
		if err := st.entry(); err != nil {
			return false, err
		}
		l, ok := entryLoc(k, base)
		if !ok {
			return false, fmt.Errorf("index entry %x: malformed", k)
		}
		if scope.holds(l) && !expired[string(l)] {
			passing[string(l)] = true
		}
		many = len(passing) > maxFilterLocs
		return !many, nil
	})
	if err != nil || many || len(passing) > 0 && int64(len(passing)) < least {
		return nil, read, err
	}
	return passing, read, nil
}

// groupStandIn returns the program of q (with its parameters) over
// stand-in documents: each
// COUNT of a constant in its select list becomes the SUM of the stand-in's
// countField. ok is false when the select list has another aggregate, a
// subquery, or a reference to the document other than path.
func groupStandIn(q *ast.Query, params map[string]document.Value, now time.Time, path []string, countField string) (*eval.Program, bool) {
	if q.Select.Star || q.Select.Value == nil && len(q.Select.Items) == 0 {
		return nil, false
	}
	rewritten := *q
	// The stand-ins are of groups whose items met the filter already.
	rewritten.Where = nil
	rewritten.Select.Items = slices.Clone(q.Select.Items)
	sum := &ast.Call{Name: "SUM", Args: []ast.Expr{&ast.Member{X: &ast.Ident{Name: q.From.Alias}, Name: countField, Quoted: true}}}
	ok := true
	var rewrite func(e ast.Expr) ast.Expr
	rewrite = func(e ast.Expr) ast.Expr {
		if p, isPath := plan.DocPath(q, e); isPath {
			ok = ok && slices.Equal(p, path)
			return e
		}
		switch x := e.(type) {
		case *ast.Literal, *ast.Param:
			return e
		case *ast.Call:
			if x.UDF {
				ok = false
				return e
			}
			if gatewayplan.IsAggregate(x) {
				if len(x.Args) != 1 || !strings.EqualFold(x.Name, "COUNT") {
					ok = false
				} else if lit, isLit := x.Args[0].(*ast.Literal); !isLit || !lit.Value.IsDefined() {
					ok = false
				}
				return sum
			}
			y := *x
			y.Args = make([]ast.Expr, len(x.Args))
			for i, a := range x.Args {
				y.Args[i] = rewrite(a)
			}
			return &y
		case *ast.ObjectLit:
			y := &ast.ObjectLit{Fields: slices.Clone(x.Fields)}
			for i := range y.Fields {
				y.Fields[i].Value = rewrite(y.Fields[i].Value)
			}
			return y
		case *ast.ArrayLit:
			y := &ast.ArrayLit{Elems: make([]ast.Expr, len(x.Elems))}
			for i, el := range x.Elems {
				y.Elems[i] = rewrite(el)
			}
			return y
		case *ast.Binary:
			y := *x
			y.L, y.R = rewrite(x.L), rewrite(x.R)
			return &y
		case *ast.Unary:
			y := *x
			y.X = rewrite(x.X)
			return &y
		}
		// Anything else (the document itself, a subquery, an array
		// index, a conditional) is left to the evaluation.
		ok = false
		return e
	}
	if q.Select.Value != nil {
		rewritten.Select.Value = rewrite(q.Select.Value)
	}
	for i := range rewritten.Select.Items {
		rewritten.Select.Items[i].Expr = rewrite(rewritten.Select.Items[i].Expr)
	}
	if !ok {
		return nil, false
	}
	prog, err := eval.Compile(&rewritten, params, eval.Options{Now: now})
	return prog, err == nil
}

// standInDoc is a group's stand-in: v at path (none when path is nil) and
// the group's count n at countField.
func standInDoc(path []string, v document.Value, countField string, n int64) document.Value {
	fields := []document.Field{{Name: countField, Value: document.Int(n)}}
	if path != nil {
		for i := len(path) - 1; i > 0; i-- {
			v = document.Obj([]document.Field{{Name: path[i], Value: v}})
		}
		fields = append(fields, document.Field{Name: path[0], Value: v})
	}
	return document.Obj(fields)
}
