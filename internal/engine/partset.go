package engine

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// A query whose filter lists the partition keys its rows may have
// (c.pk IN ('a', 'b'), c.pk = 'a' OR c.pk = 'b', ARRAY_CONTAINS(['a',
// 'b'], c.pk)), or of a hierarchical key fixes every path, each by an
// equality or a list (c.tenant = 't1' AND c.user IN ('a', 'b'): the keys
// ['t1', 'a'] and ['t1', 'b']; plan.KeyLists), reads only those logical
// partitions, one after another, each as the query with the lists
// replaced by that partition's equalities: they pin the partition, so its
// plan is chosen within it. Read across the container instead, the
// filter's other terms are walked through every partition's entries, or
// the list's entries point-read a record each; under a hierarchical
// prefix, the prefix's every partition is scanned. A page goes on from
// its position in one partition to the next: its token is the
// partition's place in the list and that partition's own token.
//
// It serves the queries whose rows stream (no ORDER BY, GROUP BY,
// aggregate or DISTINCT), whose order across partitions the service does
// not define either, and a TOP or an OFFSET and LIMIT of them; the rows
// come a partition at a time, in the order of their effective partition
// keys, and an OFFSET skips the first of them. And a GROUP BY an SDK
// rewrote for a range, whose pages are partial groups the client merges:
// each partition's own.
// And a count with other terms than the list, the sum of the partitions'
// counts, and a MIN, MAX, SUM or AVG, from each partition's with its count
// (foldParts): within a partition each takes the partition's own plan (its
// counters, its partition entries), where across the container a MIN or
// MAX walks the path's entries of every partition to the first listed
// one's, and another term's entries are the container's. A list of more
// than maxMergedParts keys reads the container as before: each partition
// costs a plan and a seek at least.

// keyParts is the logical partitions a query's filter lists and the
// query within each: the filter with the list replaced by the equality
// with the partition's key, which pins it as a partition key header would.
type keyParts struct {
	keys []partition.Key
	eqs  []ast.Expr // keys[i]'s equality
	rest *ast.Query // the query without the list (and its TOP)
	prog *eval.Program
	// top is the query's TOP, which the partitions' rows share: each is
	// read with a TOP of what the ones before it left; -1 for none. An
	// OFFSET and LIMIT is the TOP of their sum whose first from rows the
	// pages drop.
	top, from int
	// fold, when not nil, combines the partitions' rows of a count or an
	// aggregate into the query's (foldParts).
	fold func() partsFold
	// groups is set for a GROUP BY an SDK rewrote, sent to a range: each
	// partition's pages are partial groups (partialGroups), which the
	// client merges with the other partitions' as with other pages'.
	groups bool
}

// within returns the program of the query within partition i, with made
// rows made in the partitions before it: with a TOP of what they left, or,
// windowed, the rest of the OFFSET and its LIMIT, which the partition's
// plan may skip by its entries where the TOP's rows are dropped as read.
func (kp *keyParts) within(i, made int, windowed bool) (*eval.Program, error) {
	f := *kp.rest
	switch {
	case windowed:
		f.Offset = &ast.Literal{Value: document.Int(int64(kp.from - made))}
		f.Limit = &ast.Literal{Value: document.Int(int64(kp.top - kp.from))}
	case kp.top >= 0:
		f.Select.Top = &ast.Literal{Value: document.Int(int64(kp.top - made))}
	}
	f.Where = kp.eqs[i]
	if kp.rest.Where != nil {
		f.Where = &ast.Binary{Op: ast.OpAnd, L: kp.eqs[i], R: kp.rest.Where}
	}
	sub, err := kp.prog.Derive(&f)
	if err != nil {
		return nil, queryError(err)
	}
	return sub, nil
}

// listedParts returns, for query prog over container c with parameters p,
// the logical partitions its filter lists when it lists between 2 and
// maxMergedParts and the page may read them one by one: sorted by their
// scopes' spans, those outside p's range left out; nil otherwise. It does
// no I/O.
func (e *Engine) listedParts(c *containerRecord, p QueryParams, prog *eval.Program) *keyParts {
	if e.keyListsWide || p.HasKey || len(c.pk.paths) == 0 || p.MinEPK != "" || p.MaxEPK != "" || p.Resume != nil || p.inScript ||
		!p.CrossPartition && p.RangeID == "" && !p.Whole || prog.Ranked() {
		return nil
	}
	// The list first: most queries have none, and a TOP's rows below
	// are a program derived for them.
	terms, values, eqs, ok := plan.KeyLists(prog.Query(), p.Params, c.pk.paths, maxMergedParts)
	if !ok || len(values) < 2 {
		return nil
	}
	top, from, count := -1, 0, false
	var fold func() partsFold
	var agg *partAgg
	groups := p.RangeID != "" && gatewayplan.PartialGroups(prog.Query())
	if !prog.Streaming() && !groups {
		// A TOP of rows that stream: the partitions' rows, up to it; or
		// a count or an aggregate, from the partitions' (foldParts), on
		// its first page. Across partitions without a range, the gateway
		// refuses the TOP for the SDK to run range by range, and serves
		// the count whole (queryIn).
		whole := p.RangeID != "" || p.Whole
		var boxed bool
		count, boxed = countShape(prog.Query())
		if !count {
			agg = aggregateParts(prog.Query())
		}
		if count || agg != nil {
			if p.Continuation != "" || !whole && !gatewayplan.ServedWhole(prog.Query()) {
				return nil
			}
			fold = func() partsFold { return &countFold{boxed: boxed} }
			if agg != nil {
				fold = func() partsFold { return &aggFold{partAgg: agg} }
			}
		} else {
			rows, w, err := windowed(prog, p.Params)
			if err != nil || rows == nil || !rows.Streaming() || w.to < 0 || !whole {
				return nil
			}
			prog, top, from = rows, w.to, w.from // its WHERE clause, and so term, are the query's
		}
	}
	q := prog.Query()
	if keyLedComposite(c, q, p) {
		return nil
	}
	type part struct {
		key    partition.Key
		eq     ast.Expr
		lo, pk []byte
	}
	parts := make([]part, 0, len(values))
	for i, v := range values {
		k, ok := keyOfValues(v)
		if !ok {
			return nil
		}
		s, derr := e.scopeFor(c, k, true, p.RangeID)
		if derr != nil {
			return nil
		}
		if bytes.Compare(s.lo, s.hi) < 0 { // in the range given
			parts = append(parts, part{key: k, eq: eqs[i], lo: s.lo, pk: s.pk})
		}
	}
	rest := plan.WithoutTerms(q, terms)
	if count && rest.Where == nil {
		return nil // the partitions' counters, which countByKeys reads
	}
	if agg != nil {
		rest.Select.Value = agg.within
	}
	slices.SortStableFunc(parts, func(a, b part) int {
		return cmp.Or(bytes.Compare(a.lo, b.lo), bytes.Compare(a.pk, b.pk))
	})
	parts = slices.CompactFunc(parts, func(a, b part) bool { return bytes.Equal(a.lo, b.lo) && bytes.Equal(a.pk, b.pk) })
	// No key in the range given: no item of the range has one of them,
	// and the page has no rows (noParts).
	kp := &keyParts{rest: rest, prog: prog, top: top, from: from, fold: fold, groups: groups}
	for _, pt := range parts {
		kp.keys, kp.eqs = append(kp.keys, pt.key), append(kp.eqs, pt.eq)
	}
	return kp
}

// noParts answers a page of a query whose listed keys all lie outside its
// range, with its rows (none, or a count of 0) already in page: only the
// LSN of its scope is read.
func (e *Engine) noParts(r storage.Reader, c *containerRecord, p QueryParams, page *FeedPage) error {
	state, err := readTotals(r, c, c.seqOfScope(p.ItemRef, p.RangeID))
	page.LSN = state.lsn
	return err
}

// keyLedComposite reports whether a composite index of c's policy leads
// with the partition key's path and has a term of q on its second: its
// spans hold each listed key's items of the term together, in one walk
// across partitions, which the container-wide plan weighs.
func keyLedComposite(c *containerRecord, q *ast.Query, p QueryParams) bool {
	terms := plan.Terms(plan.Predicates(q, p.Params))
	return slices.ContainsFunc(c.index.composites, func(comp compositeIndex) bool {
		return comp.kept && len(comp.paths) > 1 && c.isKeyPath(comp.paths[0]) && c.compReady(&comp) &&
			slices.ContainsFunc(terms, func(t plan.Term) bool { return slices.Equal(t.Path, comp.paths[1]) })
	})
}

// queryParts runs one page of query p over the logical partitions kp
// (listedParts) into page, reporting false, having read nothing, when p's
// token is not one of such pages: a token of the container-wide path's,
// which that path judges.
func (e *Engine) queryParts(r storage.Reader, c *containerRecord, p QueryParams, now time.Time, st *readStats, page *FeedPage, kp *keyParts) (bool, error) {
	if len(kp.keys) == 0 && p.Continuation == "" {
		return true, e.noParts(r, c, p, page)
	}
	fp := fingerprint(p.Params, "query", string(c.Rid), "partitions "+p.Query, p.RangeID)
	// A token's position: the partition's place in the list, the rows
	// the partitions before it made and those it made on pages before
	// (which a TOP counts), then the partition's own token.
	at, before, made, inner := 0, 0, 0, ""
	if p.Continuation != "" {
		k, derr := parseCursor(p.Continuation, fp)
		if derr != nil {
			return false, nil
		}
		var nums [3]uint64
		b := k.pos
		for j := range nums {
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return true, errBadContinuation
			}
			nums[j], b = v, b[n:]
		}
		if nums[0] >= uint64(len(kp.keys)) || kp.top >= 0 && nums[1]+nums[2] > uint64(kp.top) {
			return true, errBadContinuation
		}
		at, before, made, inner = int(nums[0]), int(nums[1]), int(nums[2]), string(b)
	}
	token := func(i, before, made int, inner string) string {
		pos := binary.AppendUvarint(nil, uint64(i))
		pos = binary.AppendUvarint(pos, uint64(before))
		pos = binary.AppendUvarint(pos, uint64(made))
		return cursor{fingerprint: fp, text: textHash(p.Query), access: plan.Scan, pos: append(pos, inner...)}.String()
	}
	// Each partition's plan reads its count: over the network, in the
	// round trip of the first partition's first read.
	reads := make([]storage.Read, 0, len(kp.keys)-at)
	for _, k := range kp.keys[at:] {
		reads = append(reads, storage.Read{Key: partitionCountKey(c.Rid, c.epk(k))})
	}
	storage.Prefetch(r, reads...)
	limit := pageSize(p.MaxItemCount)
	var first *plan.Plan
	var lsn uint64
	skipped := false // rows an OFFSET skips made on this page
parts:
	for i := at; i < len(kp.keys); i++ {
		// windowed: the partition the OFFSET's window starts in, read
		// with the rest of the OFFSET as its own (windowedPart).
		windowed := false
		if i == at && strings.HasPrefix(inner, windowedPart) {
			windowed, inner = true, inner[len(windowedPart):]
		}
		sub := p
		sub.PartitionKey, sub.HasKey = kp.keys[i], true
		if skip := kp.from - before; skip > 0 && made == 0 && inner == "" && !windowed {
			// A partition whose rows the OFFSET skips, all of them, is
			// passed over by its count; one with more rows than that
			// is windowed.
			n, pl, err := e.partRows(r, c, sub, now, st, kp, i)
			if err != nil {
				return true, err
			}
			if n >= 0 && n <= skip {
				if i == 0 && p.Continuation == "" {
					first = pl
				}
				before += n
				continue
			}
			if n > skip {
				windowed, made = true, skip
			}
		}
		partToken := func(inner string) string {
			if windowed {
				inner = windowedPart + inner
			}
			return token(i, before, made, inner)
		}
		prog, err := kp.within(i, before, windowed)
		if err != nil {
			return true, err
		}
		for {
			// The rows an OFFSET still skips come first, on a page as
			// many rows longer, and are dropped; no row was returned
			// before them, so the page holds none but theirs.
			skip := max(0, kp.from-before-made)
			sub.MaxItemCount = p.MaxItemCount
			switch {
			case skip > 0:
				sub.MaxItemCount = limit + skip
			case kp.groups:
				// A page of partial groups counts its own rows only.
				sub.MaxItemCount = limit - len(page.Items)
			}
			sub.Continuation, inner = inner, ""
			page.Continuation, page.Plan = "", nil
			rows := len(page.Items)
			err = e.queryIn(r, c, sub, prog, now, st, page)
			lsn = max(lsn, page.LSN)
			if i == 0 && p.Continuation == "" && page.Plan != nil && first == nil {
				// The plan of a query's first page: its first partition's.
				first = inParts(page.Plan, len(kp.keys))
			}
			if err != nil {
				// Not a page of partial groups, which fails instead: the
				// next could be empty (partialGroupsPage).
				if (rows > 0 || skipped) && !kp.groups && (err == errPageTime || eval.Exhausted(err)) {
					// Out of time or work before this partition's next
					// row: the page ends with the rows it has.
					page.Items = page.Items[:rows]
					page.Continuation = partToken(sub.Continuation)
					break parts
				}
				return true, err
			}
			n := len(page.Items) - rows
			made += n
			if d := min(skip, n); d > 0 {
				page.Items = slices.Delete(page.Items, rows, rows+d)
				if len(page.Items) == 0 {
					page.Release() // the copies of the rows skipped
				}
				skipped = true
			}
			if page.Continuation == "" {
				break
			}
			if len(page.Items) > 0 || n == 0 {
				page.Continuation = partToken(page.Continuation)
				break parts
			}
			inner = page.Continuation // every row skipped: on in the partition
		}
		before, made = before+made, 0
		if kp.top >= 0 && before >= kp.top {
			break
		}
		if len(page.Items) >= limit {
			next := i + 1
			if kp.groups {
				if next, err = e.partWithGroups(r, c, p, now, st, kp, next); err != nil {
					return true, err
				}
			}
			if next < len(kp.keys) {
				page.Continuation = token(next, before, 0, "")
			}
			break
		}
	}
	page.Plan, page.LSN = first, lsn
	return true, nil
}

// windowedPart starts a token's partition token when the partition is
// read with the rest of the OFFSET as its own (keyParts.within); no
// partition's own token starts with it.
const windowedPart = "\x01"

// partRows returns how many rows partition i of kp makes, from a count of
// them in the partition (sub, its key in the header) by its counters or
// its index, with the count's plan; -1 when rows and documents need not
// be one to one (a SELECT VALUE, whose undefined values make no row; a
// JOIN; FROM … IN), or only the partition's documents would count them
// (which its rows' pages read anyway).
func (e *Engine) partRows(r storage.Reader, c *containerRecord, sub QueryParams, now time.Time, st *readStats, kp *keyParts, i int) (int, *plan.Plan, error) {
	q := *kp.rest
	if q.Select.Value != nil || len(q.Joins) > 0 || q.From == nil || q.From.Iterate {
		return -1, nil, nil
	}
	q.Select = ast.Select{Value: &ast.Call{Name: "COUNT", Args: []ast.Expr{&ast.Literal{Value: document.Int(1)}}}}
	q.Where = kp.eqs[i]
	if kp.rest.Where != nil {
		q.Where = &ast.Binary{Op: ast.OpAnd, L: kp.eqs[i], R: kp.rest.Where}
	}
	prog, err := kp.prog.Derive(&q)
	if err != nil {
		return 0, nil, queryError(err)
	}
	sub.MaxItemCount, sub.countOnly = 0, true
	var part FeedPage
	defer part.Release()
	if err := e.queryIn(r, c, sub, prog, now, st, &part); err != nil {
		return 0, nil, err
	}
	n, ok := partialCount(part.Items, false)
	if !ok || part.Continuation != "" {
		return -1, nil, nil
	}
	return int(n), inParts(part.Plan, len(kp.keys)), nil
}

// inParts is plan.InParts of a page's plan, nil for none.
func inParts(pl *plan.Plan, parts int) *plan.Plan {
	if pl == nil {
		return nil
	}
	in := plan.InParts(*pl, parts)
	return &in
}

// partWithGroups returns the first of kp's partitions from i on that has
// a group of a GROUP BY's partial groups (keyParts.groups), len(kp.keys)
// for none. A page full at the end of a partition goes on from it: the
// SDKs' GROUP BY stage takes an empty page for the end of the query
// (partialGroupsPage), and the partitions after it may have no rows. It
// reads up to a group of that partition, which its page reads again.
func (e *Engine) partWithGroups(r storage.Reader, c *containerRecord, p QueryParams, now time.Time, st *readStats, kp *keyParts, i int) (int, error) {
	for ; i < len(kp.keys); i++ {
		prog, err := kp.within(i, 0, false)
		if err != nil {
			return 0, err
		}
		sub := p
		sub.PartitionKey, sub.HasKey, sub.Continuation, sub.MaxItemCount = kp.keys[i], true, "", 1
		var probe FeedPage
		err = e.queryIn(r, c, sub, prog, now, st, &probe)
		n := len(probe.Items)
		probe.Release()
		if err != nil || n > 0 {
			return i, err
		}
	}
	return i, nil
}

// foldParts answers a count or an aggregate over the logical partitions kp
// (listedParts) from each partition's answer, which the counters, the
// index or the evaluation give within the partition (kp.fold). It reports
// false when a partition's answer did not come whole in one page (the
// query's evaluation ran out of time): the container-wide plan then
// answers, the work done so far counted with its own.
func (e *Engine) foldParts(r storage.Reader, c *containerRecord, p QueryParams, now time.Time, st *readStats, page *FeedPage, kp *keyParts) (bool, error) {
	fold := kp.fold()
	if len(kp.keys) == 0 {
		page.Items = fold.rows(page.Items)
		return true, e.noParts(r, c, p, page)
	}
	var first *plan.Plan
	var lsn uint64
	for i := range kp.keys {
		prog, err := kp.within(i, 0, false)
		if err != nil {
			return true, err
		}
		sub := p
		sub.PartitionKey, sub.HasKey = kp.keys[i], true
		var part FeedPage
		err = e.queryIn(r, c, sub, prog, now, st, &part)
		if err != nil {
			return true, err
		}
		if i == 0 {
			first = inParts(part.Plan, len(kp.keys))
		}
		lsn = max(lsn, part.LSN)
		ok := part.Continuation == "" && fold.add(part.Items)
		part.Release()
		if !ok {
			return false, nil
		}
	}
	page.Items = fold.rows(page.Items)
	page.Plan, page.LSN = first, lsn
	return true, nil
}

// partsFold combines the rows of the listed partitions' queries into the
// query's, for a query whose one row sums up the items it passes.
type partsFold interface {
	// add takes one partition's rows, and reports false when they are
	// not a whole answer.
	add(rows [][]byte) bool
	// rows appends the query's rows over the partitions added to items.
	rows(items [][]byte) [][]byte
}

// countFold adds up the partitions' counts (countShape).
type countFold struct {
	boxed bool
	total int64
}

func (f *countFold) add(rows [][]byte) bool {
	n, ok := partialCount(rows, f.boxed)
	f.total += n
	return ok
}

func (f *countFold) rows(items [][]byte) [][]byte {
	return append(items, partialRow(document.Int(f.total), f.boxed))
}

// partialCount returns the count a count's rows hold (partialRow), and
// false when they hold no whole one.
func partialCount(rows [][]byte, boxed bool) (int64, bool) {
	if len(rows) != 1 {
		return 0, false
	}
	v, err := document.Parse(rows[0])
	if err != nil {
		return 0, false
	}
	if boxed {
		if v.Kind() != document.Array || len(v.Array()) != 1 {
			return 0, false
		}
		v = v.Array()[0].Get("item")
	}
	if v.Kind() != document.Number || !v.IsInt() {
		return 0, false
	}
	return v.Int(), true
}

// partAgg is a MIN, MAX, SUM or AVG (aggregateShape) of a query over listed
// partitions, or the SDKs' rewrite of one with its count
// (indexAggregateShape), read in each partition with the count of the
// values it saw: the count tells a partition without values, which the
// aggregate ignores, from one whose MIN or MAX or SUM is undefined because
// of a value it refuses (an object, a string to sum), which makes the
// query's undefined too.
type partAgg struct {
	name         string         // MIN, MAX, SUM or AVG
	obj          *ast.ObjectLit // the rewrite's object, or nil
	boxed        bool           // the SDKs' [{"item": …}]
	vName, nName string         // the aggregate's and the count's names in within's rows
	within       *ast.ObjectLit // the value a partition's query selects
}

// aggregateParts returns the partAgg of q, nil when q is not such an
// aggregate.
func aggregateParts(q *ast.Query) *partAgg {
	call, obj, boxed := indexAggregateShape(q)
	if call == nil {
		return nil
	}
	a := &partAgg{name: strings.ToUpper(call.Name), obj: obj, boxed: boxed, within: obj}
	if obj == nil {
		// An average is the sum of the partitions' sums over the sum of
		// their counts.
		f := *call
		if a.name == "AVG" {
			f.Name = "SUM"
		}
		a.within = &ast.ObjectLit{Fields: []ast.ObjectField{
			{Name: "v", Value: &f},
			{Name: "n", Value: &ast.Call{Name: "COUNT", Args: call.Args}},
		}}
	}
	a.vName, a.nName = a.within.Fields[0].Name, a.within.Fields[1].Name
	return a
}

// aggFold combines the partitions' aggregates as the evaluation would
// over all their values (eval's aggState): the least or greatest value,
// or the sum, exact while it is an integer, and the count.
type aggFold struct {
	*partAgg
	n       int64
	best    document.Value
	isInt   bool // the sum so far is exact in i
	i       int64
	f       float64
	invalid bool
	added   bool
}

func (f *aggFold) add(rows [][]byte) bool {
	if len(rows) != 1 {
		return false
	}
	row, err := document.Parse(rows[0])
	if err != nil || row.Kind() != document.Object {
		return false
	}
	v, n := row.Get(f.vName), row.Get(f.nName)
	if n.Kind() != document.Number || !n.IsInt() {
		return false
	}
	if !f.added {
		f.added, f.isInt = true, true
	}
	f.n += n.Int()
	switch {
	case !v.IsDefined():
		// A partition with values whose aggregate is undefined saw one
		// the aggregate refuses.
		f.invalid = f.invalid || n.Int() > 0
	case f.name == "MIN" || f.name == "MAX":
		if d := document.Compare(v, f.best); !f.best.IsDefined() || f.name == "MIN" && d < 0 || f.name == "MAX" && d > 0 {
			f.best = v
		}
	case v.Kind() != document.Number:
		return false
	default:
		if f.isInt && v.IsInt() {
			if s := f.i + v.Int(); (s > f.i) == (v.Int() > 0) {
				f.i = s
				return true
			}
		}
		if f.isInt {
			f.f, f.isInt = float64(f.i), false
		}
		f.f += v.Float()
	}
	return true
}

// result is the aggregate over the partitions added.
func (f *aggFold) result() document.Value {
	if f.invalid {
		return document.Value{}
	}
	sum := func() float64 {
		if f.isInt {
			return float64(f.i)
		}
		return f.f
	}
	switch f.name {
	case "MIN", "MAX":
		return f.best
	case "AVG":
		if f.n == 0 {
			return document.Value{}
		}
		return finite(sum() / float64(f.n))
	}
	if f.isInt || !f.added {
		return document.Int(f.i)
	}
	return finite(f.f)
}

// finite is x as a number, undefined when it is not finite (as the
// evaluation's arithmetic gives it).
func finite(x float64) document.Value {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return document.Value{}
	}
	return document.Float(x)
}

func (f *aggFold) rows(items [][]byte) [][]byte {
	v := f.result()
	if f.obj != nil {
		var fields []document.Field
		if v.IsDefined() {
			fields = append(fields, document.Field{Name: f.obj.Fields[0].Name, Value: v})
		}
		v = document.Obj(append(fields, document.Field{Name: f.obj.Fields[1].Name, Value: document.Int(f.n)}))
	}
	if f.boxed {
		var item []document.Field
		if v.IsDefined() {
			item = []document.Field{{Name: "item", Value: v}}
		}
		return append(items, document.Arr([]document.Value{document.Obj(item)}).JSON())
	}
	if !v.IsDefined() {
		return items // SELECT VALUE of an undefined aggregate has no row
	}
	return append(items, v.JSON())
}

// An ORDER BY whose filter lists partition keys, across a range or the
// container, has its rows in one order across the listed partitions: read
// one by one, they would have to be merged row by row, a page's worth from
// each. The walks of the ORDER BY path (orderstream.go, orderindex.go)
// merge the listed partitions' partition entries of the path instead, as
// they do a hierarchical prefix's (prefixparts.go), in the path's order,
// and the documents without the path their absence entries, in _rid order
// (eachAbsent): a page reads its rows' entries and a seek a partition,
// where the path's own entries hold every partition's. The scope stays the
// range's, so ties come in its scan order, _rid order, as before.

// listScope marks s with the logical partitions q's filter lists
// (itemScope.listed) when q orders its rows, s is a range or the whole
// container, and the filter lists 2 to maxMergedParts whole keys
// (plan.KeyLists: every path of the key fixed or listed). Under a
// hierarchical prefix a header names (c.tenant = 't1' AND c.user IN ('a',
// 'b'), sent with the key ['t1']), whose walks merge its partitions'
// entries already, in the order of their locations, the listed partitions
// are the ones merged (itemScope.parts): every row of q is in one of
// them. A prefix the WHERE clause pins is read as its range with its
// partitions listed instead (ridOrderedPrefix). Over a store across the
// network each partition's seek is a round trip: there the walk reads the
// path's own entries, as before.
func (e *Engine) listScope(r storage.Reader, c *containerRecord, q *ast.Query, p QueryParams, pinned bool, s *itemScope, st *readStats) error {
	if pinned {
		rs, ok, err := e.ridOrderedPrefix(r, c, q, p, s, st)
		if err != nil {
			return err
		}
		if ok {
			*s = *rs
		}
	}
	if e.keyListsWide || len(q.OrderBy) == 0 || len(c.pk.paths) == 0 || storage.IsNetworked(r) ||
		s.kind != plan.ScopeAll && s.kind != plan.ScopeRange && s.kind != plan.ScopePrefix {
		return nil
	}
	// A list of keys, narrower than a prefix's partitions.
	_, keys, _, ok := plan.KeyLists(q, p.Params, c.pk.paths, maxMergedParts)
	if !ok || len(keys) < 2 {
		return nil
	}
	span := *s
	span.listed = nil
	listed := make([][]byte, 0, len(keys))
	for _, vs := range keys {
		k, ok := keyOfValues(vs)
		if !ok {
			return nil
		}
		if loc := appendEPK(nil, c.epk(k), true); span.holds(loc) {
			listed = append(listed, loc)
		}
	}
	slices.SortFunc(listed, bytes.Compare)
	listed = slices.CompactFunc(listed, bytes.Equal)
	s.listedItems = -1
	if s.kind == plan.ScopePrefix {
		s.parts, s.partsListed = listed, true
		return nil
	}
	s.listed = listed
	return nil
}

// ridOrderedPrefix returns, for an ORDER BY under a hierarchical prefix s
// its WHERE clause pins, the scope of its range (or the whole container),
// which lists the prefix's logical partitions (itemScope.listed) when they
// are at most maxMergedParts and the store is local; false for any other
// query. Under the prefix, rows tied at equal values came in the order of
// their locations, partition by partition; the SDKs that resume a range's
// ORDER BY from a token (the JavaScript SDK's RidSkipCountFilter, .NET's)
// skip the rows of a tie they returned by comparing _rids, as the service
// keeps a range's ties in _rid order, and with the prefix's order they
// skipped rows they had not returned. Over the range, ties come in _rid
// order: the walks of the listed partitions merge their entries by
// sequence, and without a list the terms that pinned the prefix, which
// stay in the filter, are read as any other term.
func (e *Engine) ridOrderedPrefix(r storage.Reader, c *containerRecord, q *ast.Query, p QueryParams, s *itemScope, st *readStats) (*itemScope, bool, error) {
	if s.kind != plan.ScopePrefix || len(q.OrderBy) == 0 || p.HasKey || p.MinEPK != "" || p.MaxEPK != "" {
		return nil, false, nil
	}
	rs, derr := e.scopeFor(c, nil, false, p.RangeID)
	if derr != nil {
		return nil, false, derr
	}
	parts, few, err := prefixParts(r, c, s, st) // none over the network
	if err != nil || !few {
		return rs, err == nil, err
	}
	listed := make([][]byte, 0, len(parts))
	for _, epk := range parts {
		if rs.holds(epk) {
			listed = append(listed, epk)
		}
	}
	rs.listed, rs.listedItems = listed, -1
	return rs, true, nil
}

// listedItems returns how many items the partitions s lists hold (listed,
// or under a prefix parts), from their counts, read once for the scope:
// the entries a walk of a path's partition entries reads at most.
func listedItems(r storage.Reader, c *containerRecord, s *itemScope, st *readStats) (int64, error) {
	if s.listedItems >= 0 {
		return s.listedItems, nil
	}
	listed := s.listed
	if s.partsListed {
		listed = s.parts
	}
	prefix := collPrefix(famUsage, c.Rid)
	reads := make([]storage.Read, len(listed))
	for i, epk := range listed {
		reads[i] = storage.Read{Key: append(bytes.Clone(prefix), epk...)}
	}
	storage.Prefetch(r, reads...)
	var items int64
	for _, rd := range reads {
		n, err := readCount(r, rd.Key)
		if err != nil {
			return 0, err
		}
		st.entries++
		items += n
	}
	s.listedItems = items
	return items, nil
}
