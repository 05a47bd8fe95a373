package engine

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/parser"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// QueryParams is one page of an item query.
type QueryParams struct {
	ItemRef
	Query        string
	Params       map[string]document.Value
	MaxItemCount int
	Continuation string
	// RangeID is x-ms-documentdb-partitionkeyrangeid: the client scopes the
	// query to one range and merges ranges itself.
	RangeID string
	// CrossPartition is x-ms-documentdb-query-enablecrosspartition.
	CrossPartition bool
	// AllowScan lets range filters run on paths the index does not keep
	// (x-ms-documentdb-force-query-scan, x-ms-documentdb-query-enable-scan).
	AllowScan bool
}

// compileQuery parses and compiles a query, turning its errors into 400s.
func compileQuery(text string, params map[string]document.Value, now time.Time) (*eval.Program, error) {
	if len(text) > 512<<10 {
		return nil, errorf(BadRequest, "The SQL query text exceeds the maximum allowed length of 524288 characters.")
	}
	q, err := parser.Parse(text)
	if err != nil {
		return nil, queryError(err)
	}
	prog, err := eval.Compile(q, params, eval.Options{Now: now})
	if err != nil {
		return nil, queryError(err)
	}
	return prog, nil
}

func queryError(err error) error {
	var qe *ast.Error
	if errors.As(err, &qe) {
		return &Error{Code: BadRequest, Message: `Message: {"errors":[{"severity":"Error","code":"` + qe.Code + `","message":` + string(document.AppendString(nil, qe.Error())) + `}]}`}
	}
	return err
}

// QueryItems runs one page of a query over a container's items. Expired
// items never take part (ttl.md A3).
func (e *Engine) QueryItems(ctx context.Context, p QueryParams) (*FeedPage, error) {
	now, done := e.judging(ctx, p.DB, p.Coll)
	defer done()
	prog, err := compileQuery(p.Query, p.Params, now)
	if err != nil {
		return nil, err
	}
	var start uint64
	var skip int
	if p.Continuation != "" {
		var derr *Error
		if start, skip, derr = decodeContinuation(p.Continuation); derr != nil {
			return nil, derr
		}
	}
	page := &FeedPage{}
	var coll *containerRecord
	err = e.store.View(ctx, func(r storage.Reader) error {
		sc, err := e.openPage(r, p.ItemRef, p.RangeID, page)
		if err != nil {
			return err
		}
		c, match, inRange := sc.c, sc.match, sc.inRange
		coll = c
		if derr := checkIndexNeeds(c, prog.Query(), p.Params, p.AllowScan); derr != nil {
			return derr
		}
		single := p.HasKey || p.RangeID != "" || len(c.pk.paths) == 0
		if !single {
			// A WHERE clause that pins the partition key (or a prefix of a
			// hierarchical one) makes the query single-partition, as the
			// gateway routes it.
			if vals, _ := plan.PartitionKeyFilter(prog.Query(), p.Params, c.pk.paths); len(vals) > 0 {
				key := make(partition.Key, 0, len(vals))
				for _, v := range vals {
					comp, ok := componentOf(v)
					if !ok {
						break
					}
					key = append(key, comp)
				}
				if len(key) == len(vals) {
					ref := p.ItemRef
					ref.PartitionKey, ref.HasKey = key, true
					if m, derr := c.keyFilter(ref); derr == nil {
						match, single = m, true
					}
				}
			}
		}
		if !single && !prog.Streaming() {
			return e.crossPartitionRefusal(prog, p.Params)
		}
		if !single && !p.CrossPartition {
			return errorf(BadRequest, "Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception.")
		}
		limit := pageSize(p.MaxItemCount)
		src := itemSource{e: e, r: r, c: c}
		keep := func(rec *itemRecord) bool { return match(rec.pk) && inRange(rec.epk) }
		// A TOP … ORDER BY walk of the index, when it applies, reads the
		// fewest entries; otherwise the most selective filter's candidates.
		ordered := false
		if !prog.Streaming() {
			seqs, ok, err := e.orderedSource(r, c, prog, p.Params, now, keep)
			if err != nil {
				return err
			}
			if ok {
				src.seqs, src.indexed, ordered = seqs, true, true
			}
		}
		if !ordered {
			seqs, ok, err := indexCandidates(r, c, plan.Predicates(prog.Query(), p.Params))
			if err != nil {
				return err
			}
			if ok {
				src.seqs, src.indexed = seqs, true
			}
		}
		if prog.Streaming() {
			return e.streamQuery(src, prog, keep, now, start, skip, limit, !single, page)
		}
		return e.runQuery(src, prog, keep, now, skip, limit, page)
	})
	if err != nil {
		return nil, err
	}
	n := 0
	for _, it := range page.Items {
		n += len(it)
	}
	page.Charge = queryCharge(page.Examined, n)
	e.charge(coll, page.Charge)
	return page, nil
}

func docMeta(c *containerRecord, seq uint64) eval.DocMeta {
	return eval.DocMeta{DocumentID: int64(seq)}
}

// streamQuery pages a filter-and-projection query by document position. On
// the single-partition path a continuation is returned only when more rows
// exist; on the cross-partition path whenever a page is full, as the
// gateway does (the SDKs' page counts depend on it).
func (e *Engine) streamQuery(src itemSource, prog *eval.Program, keep func(*itemRecord) bool, now time.Time, start uint64, skip, limit int, cross bool, page *FeedPage) error {
	size := 0
	c := src.c
	return src.each(start, func(seq uint64, rec *itemRecord) (bool, error) {
		if c.expired(rec, now) || !keep(rec) {
			return true, nil
		}
		page.Examined++
		doc, err := document.Parse(rec.json)
		if err != nil {
			return false, err
		}
		rows, err := prog.Rows(doc, docMeta(c, seq))
		if err != nil {
			return false, queryError(err)
		}
		first := 0
		if seq == start {
			first = skip
		}
		for i := first; i < len(rows); i++ {
			if len(page.Items) == limit || (size > maxPageBytes && len(page.Items) > 0) {
				page.Continuation = encodeContinuation(seq, i)
				return false, nil
			}
			b := rows[i].JSON()
			page.Items = append(page.Items, b)
			size += len(b)
			if cross && len(page.Items) == limit {
				if i+1 < len(rows) {
					page.Continuation = encodeContinuation(seq, i+1)
				} else {
					page.Continuation = encodeContinuation(seq+1, 0)
				}
				return false, nil
			}
		}
		return true, nil
	})
}

// runQuery evaluates a query that needs every document (ORDER BY,
// aggregates, DISTINCT, GROUP BY, TOP, OFFSET/LIMIT) and returns the page
// of its results that starts at offset.
func (e *Engine) runQuery(src itemSource, prog *eval.Program, keep func(*itemRecord) bool, now time.Time, offset, limit int, page *FeedPage) error {
	c := src.c
	type item struct {
		doc document.Value
		seq uint64
	}
	var docs []item
	err := src.each(0, func(seq uint64, rec *itemRecord) (bool, error) {
		if c.expired(rec, now) || !keep(rec) {
			return true, nil
		}
		page.Examined++
		doc, err := document.Parse(rec.json)
		if err != nil {
			return false, err
		}
		docs = append(docs, item{doc, seq})
		return true, nil
	})
	if err != nil {
		return err
	}
	i := 0
	rows, err := prog.Run(func() (document.Value, eval.DocMeta, bool, error) {
		if i == len(docs) {
			return document.Undef, eval.DocMeta{}, false, nil
		}
		i++
		return docs[i-1].doc, docMeta(c, docs[i-1].seq), true, nil
	})
	if err != nil {
		return queryError(err)
	}
	return pageRows(rows, offset, limit, page)
}

// itemSource walks a container's items in sequence order: all of them, or
// only the candidates an index produced.
type itemSource struct {
	e       *Engine
	r       storage.Reader
	c       *containerRecord
	indexed bool
	seqs    []uint64
}

func (s itemSource) each(start uint64, fn func(seq uint64, rec *itemRecord) (bool, error)) error {
	if !s.indexed {
		return s.e.scanItems(s.r, s.c, start, fn)
	}
	for _, seq := range s.seqs {
		if seq < start {
			continue
		}
		raw, err := s.r.Get(itemKey(s.c.Rid, seq))
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		rec, err := decodeItemRecord(raw)
		if err != nil {
			return err
		}
		more, err := fn(seq, &rec)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

func pageRows(rows []document.Value, offset, limit int, page *FeedPage) error {
	if offset > len(rows) {
		return errorf(BadRequest, "Invalid Continuation Token")
	}
	end := offset + limit
	if end > len(rows) {
		end = len(rows)
	}
	size := 0
	for i := offset; i < end; i++ {
		b := rows[i].JSON()
		if size+len(b) > maxPageBytes && i > offset {
			end = i
			break
		}
		page.Items = append(page.Items, b)
		size += len(b)
	}
	if end < len(rows) {
		page.Continuation = encodeContinuation(0, end)
	}
	return nil
}

// crossPartitionRefusal is the gateway's answer to a cross-partition query
// it cannot serve directly: 400/1004 with the query plan, so the SDK runs
// the query range by range and merges (protocol §6.3).
func (e *Engine) crossPartitionRefusal(prog *eval.Program, params map[string]document.Value) error {
	plan, err := QueryPlan(prog.Query(), params)
	if err != nil {
		return err
	}
	return &Error{Code: BadRequest, SubStatus: SubCrossPartitionNotServed, Additional: plan,
		Message: "The provided cross partition query can not be directly served by the gateway. This is a first chance (internal) exception that all newer clients will know how to handle gracefully. This exception is traced, but unless you see it bubble up as an exception (which only happens on older SDK clients), then you can safely ignore this message."}
}

// ResourceKind names what a resource query runs over.
type ResourceKind int

// The queryable resource feeds besides items.
const (
	ResourceDatabases ResourceKind = iota
	ResourceContainers
	ResourceOffers
)

// ResourceQueryParams is a query over databases, containers or offers.
type ResourceQueryParams struct {
	Kind         ResourceKind
	DB           string // for containers
	Query        string
	Params       map[string]document.Value
	MaxItemCount int
	Continuation string
}

// QueryResources runs a query over databases, containers or offers with
// the same engine as item queries.
func (e *Engine) QueryResources(ctx context.Context, p ResourceQueryParams) (*FeedPage, error) {
	prog, err := compileQuery(p.Query, p.Params, e.Now(ctx))
	if err != nil {
		return nil, err
	}
	var vals []document.Value
	page := &FeedPage{}
	switch p.Kind {
	case ResourceDatabases:
		vals, err = e.ListDatabases(ctx)
	case ResourceContainers:
		vals, page.CollRid, err = e.ListContainers(ctx, p.DB)
	case ResourceOffers:
		vals, err = e.ListOffers(ctx)
	}
	if err != nil {
		return nil, err
	}
	i := 0
	rows, err := prog.Run(func() (document.Value, eval.DocMeta, bool, error) {
		if i == len(vals) {
			return document.Undef, eval.DocMeta{}, false, nil
		}
		i++
		return vals[i-1], eval.DocMeta{DocumentID: int64(i)}, true, nil
	})
	if err != nil {
		return nil, queryError(err)
	}
	offset := 0
	if p.Continuation != "" {
		_, skip, derr := decodeContinuation(p.Continuation)
		if derr != nil {
			return nil, derr
		}
		offset = skip
	}
	if err := pageRows(rows, offset, pageSize(p.MaxItemCount), page); err != nil {
		return nil, err
	}
	page.Examined = len(vals)
	page.Charge = queryCharge(len(vals), 0)
	return page, nil
}

// ConditionEvaluator returns a patch-condition evaluator over the query
// engine: the condition "FROM c WHERE …" holds when the item passes it.
func conditionHolds(cond string, doc document.Value, now time.Time) (bool, error) {
	text := strings.TrimSpace(cond)
	if !strings.HasPrefix(strings.ToUpper(text), "SELECT") {
		text = "SELECT * " + text
	}
	prog, err := compileQuery(text, nil, now)
	if err != nil {
		return false, err
	}
	if !prog.Streaming() {
		return false, errorf(BadRequest, "A patch condition must be a simple filter.")
	}
	rows, err := prog.Rows(doc, eval.DocMeta{})
	if err != nil {
		return false, queryError(err)
	}
	return len(rows) > 0, nil
}

func parseOnly(text string) (*ast.Query, error) {
	q, err := parser.Parse(text)
	if err != nil {
		return nil, queryError(err)
	}
	return q, nil
}
