package engine

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
	"time"

	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// A query whose filter lists the partition keys its rows may have
// (c.pk IN ('a', 'b'), or c.pk = 'a' OR c.pk = 'b') reads only those
// logical partitions, one after another, each as the query scoped to it
// would: its plan is chosen within the partition, and the key term holds
// for every item there. Read across the container instead, the filter's
// other terms are walked through every partition's entries (an index of a
// path the keys' partitions share with all the others), or the key term's
// entries point-read record by record. A page goes on from its position
// in one partition to the next: its token is the partition's place in the
// list and that partition's own token.
//
// It serves the queries whose rows stream (no ORDER BY, GROUP BY,
// aggregate, DISTINCT, TOP or OFFSET), whose order across partitions the
// service does not define either; the rows come a partition at a time, in
// the order of their effective partition keys. More keys than
// maxMergedParts read the container as before, each partition costing a
// plan and a seek at least.

// keyPart is a logical partition a query's filter names, and the query
// within it: the filter's list of keys replaced by the equality with the
// partition's, which scopes it as a partition key header would.
type keyPart struct {
	key  partition.Key
	prog *eval.Program
}

// keyParts returns, for query prog over container c with parameters p,
// the logical partitions its filter names when it names between 2 and
// maxMergedParts and the page may read them one by one: sorted by their
// scopes' spans, those outside p's range left out. It does no I/O.
func (e *Engine) keyParts(c *containerRecord, p QueryParams, prog *eval.Program) ([]keyPart, error) {
	if e.keyListsWide || p.HasKey || len(c.pk.paths) != 1 || p.MinEPK != "" || p.MaxEPK != "" || p.Resume != nil || p.inScript ||
		!p.CrossPartition && p.RangeID == "" && !p.Whole || !prog.Streaming() || prog.Ranked() {
		return nil, nil
	}
	q := prog.Query()
	term, values, eqs, ok := plan.KeyChoices(q, p.Params, c.pk.paths[0])
	if !ok || len(values) < 2 || len(values) > maxMergedParts {
		return nil, nil
	}
	type part struct {
		key    partition.Key
		eq     ast.Expr
		lo, pk []byte
	}
	parts := make([]part, 0, len(values))
	for i, v := range values {
		k, ok := keyOf(v)
		if !ok {
			return nil, nil
		}
		s, derr := e.scopeFor(c, k, true, p.RangeID)
		if derr != nil {
			return nil, nil
		}
		if bytes.Compare(s.lo, s.hi) < 0 { // in the range given
			parts = append(parts, part{key: k, eq: eqs[i], lo: s.lo, pk: s.pk})
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	slices.SortStableFunc(parts, func(a, b part) int {
		return cmp.Or(bytes.Compare(a.lo, b.lo), bytes.Compare(a.pk, b.pk))
	})
	parts = slices.CompactFunc(parts, func(a, b part) bool { return bytes.Equal(a.lo, b.lo) && bytes.Equal(a.pk, b.pk) })
	rest := plan.WithoutTerms(q, []ast.Expr{term})
	out := make([]keyPart, len(parts))
	for i, pt := range parts {
		f := *rest
		f.Where = pt.eq
		if rest.Where != nil {
			f.Where = &ast.Binary{Op: ast.OpAnd, L: pt.eq, R: rest.Where}
		}
		sub, err := prog.Derive(&f)
		if err != nil {
			return nil, queryError(err)
		}
		out[i] = keyPart{key: pt.key, prog: sub}
	}
	return out, nil
}

// queryParts runs one page of query p over the logical partitions keys
// (keyParts) into page, reporting false, having read nothing, when p's
// token is not one of such pages: a token of the container-wide path's,
// which that path judges.
func (e *Engine) queryParts(r storage.Reader, c *containerRecord, p QueryParams, now time.Time, st *readStats, page *FeedPage, keys []keyPart) (bool, error) {
	fp := fingerprint(p.Params, "query", string(c.Rid), "partitions "+p.Query, p.RangeID)
	at, inner := 0, ""
	if p.Continuation != "" {
		k, derr := parseCursor(p.Continuation, fp)
		if derr != nil {
			return false, nil
		}
		i, n := binary.Uvarint(k.pos)
		if n <= 0 || i >= uint64(len(keys)) {
			return true, errBadContinuation
		}
		at, inner = int(i), string(k.pos[n:])
	}
	token := func(i int, inner string) string {
		pos := binary.AppendUvarint(nil, uint64(i))
		return cursor{fingerprint: fp, text: textHash(p.Query), access: plan.Scan, pos: append(pos, inner...)}.String()
	}
	limit := pageSize(p.MaxItemCount)
	var first *plan.Plan
	var lsn uint64
	for i := at; i < len(keys); i++ {
		sub := p
		sub.PartitionKey, sub.HasKey, sub.Continuation = keys[i].key, true, inner
		inner = ""
		page.Continuation, page.Plan = "", nil
		made := len(page.Items)
		err := e.queryIn(r, c, sub, keys[i].prog, now, st, page)
		lsn = max(lsn, page.LSN)
		if first == nil && page.Plan != nil {
			pl := plan.InParts(*page.Plan, len(keys))
			first = &pl
		}
		if err != nil {
			if made > 0 && (err == errPageTime || eval.Exhausted(err)) {
				// Out of time or work before this partition's first
				// row: the page ends with the rows it has.
				page.Items = page.Items[:made]
				page.Continuation = token(i, "")
				break
			}
			return true, err
		}
		if page.Continuation != "" {
			page.Continuation = token(i, page.Continuation)
			break
		}
		if len(page.Items) >= limit {
			if i+1 < len(keys) {
				page.Continuation = token(i+1, "")
			}
			break
		}
	}
	page.Plan, page.LSN = first, lsn
	return true, nil
}
