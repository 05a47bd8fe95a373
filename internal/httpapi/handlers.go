package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/engine"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// requestEndpoint advertises the request's own scheme and Host; the server
// configures a stricter choice.
func requestEndpoint(r *http.Request) string {
	scheme := "https"
	if r.TLS == nil {
		scheme = "http"
	}
	return scheme + "://" + r.Host + "/"
}

func (h *Handler) account(rq *request) {
	endpoint := h.endpoint(rq.r)
	loc := document.Arr([]document.Value{document.Obj([]document.Field{
		{Name: "name", Value: document.Str("South Central US")},
		{Name: "databaseAccountEndpoint", Value: document.Str(endpoint)},
	})})
	repl := document.Obj([]document.Field{{Name: "minReplicaSetSize", Value: document.Int(1)}, {Name: "maxReplicasetSize", Value: document.Int(4)}})
	body := document.Obj([]document.Field{
		{Name: "_self", Value: document.Str("")},
		{Name: "id", Value: document.Str("localhost")},
		{Name: "_rid", Value: document.Str("localhost")},
		{Name: "media", Value: document.Str("//media/")},
		{Name: "addresses", Value: document.Str("//addresses/")},
		{Name: "_dbs", Value: document.Str("//dbs/")},
		{Name: "writableLocations", Value: loc},
		{Name: "readableLocations", Value: loc},
		{Name: "enableMultipleWriteLocations", Value: document.BoolValue(false)},
		{Name: "continuousBackupEnabled", Value: document.BoolValue(false)},
		{Name: "enableNRegionSynchronousCommit", Value: document.BoolValue(false)},
		{Name: "enablePerPartitionFailoverBehavior", Value: document.BoolValue(false)},
		{Name: "userReplicationPolicy", Value: repl},
		{Name: "userConsistencyPolicy", Value: document.Obj([]document.Field{{Name: "defaultConsistencyLevel", Value: document.Str(h.consist)}})},
		{Name: "systemReplicationPolicy", Value: repl},
		{Name: "readPolicy", Value: document.Obj([]document.Field{{Name: "primaryReadCoefficient", Value: document.Int(1)}, {Name: "secondaryReadCoefficient", Value: document.Int(1)}})},
		{Name: "queryEngineConfiguration", Value: document.Str(`{"maxSqlQueryInputLength":524288,"maxJoinsPerSqlQuery":10,"maxLogicalAndPerSqlQuery":500,"maxLogicalOrPerSqlQuery":500,"maxUdfRefPerSqlQuery":10,"maxInExpressionItemsCount":16000,"queryMaxInMemorySortDocumentCount":100000,"maxQueryRequestTimeoutFraction":0.9,"sqlAllowNonFiniteNumbers":false,"sqlAllowAggregateFunctions":true,"sqlAllowSubQuery":true,"sqlAllowScalarSubQuery":true,"allowNewKeywords":true,"sqlAllowLike":true,"sqlAllowGroupByClause":true,"maxSpatialQueryCells":12,"spatialMaxGeometryPointCount":256,"sqlDisableOptimizationFlags":0,"sqlAllowTop":true,"enableSpatialIndexing":true}`)},
	})
	setHeader(rq.w.Header(), "x-ms-max-media-storage-usage-mb", "10240")
	setHeader(rq.w.Header(), "x-ms-media-storage-usage-mb", "0")
	h.reply(rq, http.StatusOK, 0, body.JSON())
}

func (h *Handler) resourceReply(rq *request, status int, res *engine.Resource) {
	setHeader(rq.w.Header(), "etag", res.Etag)
	if rq.r.Method == http.MethodGet && noneMatch(rq.r, res.Etag) {
		h.notModified(rq, engine.MetadataCharge)
		return
	}
	h.reply(rq, status, engine.MetadataCharge, res.Body.JSON())
}

// noneMatch reports whether a read's If-None-Match names the version it
// would return (its etag, or "*"): the reader has it, and is answered 304
// Not Modified without a body, for any resource (docs/protocol.md §4).
func noneMatch(r *http.Request, etag string) bool {
	inm := r.Header.Get("If-None-Match")
	return inm != "" && (inm == etag || inm == "*")
}

func (h *Handler) createDatabase(rq *request) {
	h.createResource(rq, func(body document.Value, tp *engine.Throughput) (*engine.Resource, error) {
		return h.eng.CreateDatabase(rq.r.Context(), body, tp)
	})
}

// createResource reads the body and throughput headers of a database or
// container create, runs it and answers 201 with the new resource.
func (h *Handler) createResource(rq *request, create func(document.Value, *engine.Throughput) (*engine.Resource, error)) {
	body, err := h.readJSON(rq)
	if err != nil {
		h.fail(rq, err)
		return
	}
	tp, err := throughput(rq.r)
	if err != nil {
		h.fail(rq, err)
		return
	}
	res, err := create(body, tp)
	if err != nil {
		h.fail(rq, err)
		return
	}
	h.resourceReply(rq, http.StatusCreated, res)
}

func (h *Handler) readDatabase(rq *request, id string) {
	res, err := h.eng.ReadDatabase(rq.r.Context(), id)
	if err != nil {
		h.fail(rq, err)
		return
	}
	h.resourceReply(rq, http.StatusOK, res)
}

func (h *Handler) deleteDatabase(rq *request, id string) {
	if err := h.eng.DeleteDatabase(rq.r.Context(), id, rq.r.Header.Get("If-Match")); err != nil {
		h.fail(rq, err)
		return
	}
	h.reply(rq, http.StatusNoContent, 0, nil)
}

func valuesJSON(vals []document.Value) [][]byte {
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = v.JSON()
	}
	return out
}

func (h *Handler) listDatabases(rq *request) {
	dbs, err := h.eng.ListDatabases(rq.r.Context())
	if err != nil {
		h.fail(rq, err)
		return
	}
	h.listReply(rq, "", "Databases", valuesJSON(dbs))
}

// listReply answers a read feed of databases, containers, offers, users,
// permissions or scripts: all of them, or, when the client asks for at most
// x-ms-max-item-count, that many from the position x-ms-continuation holds,
// with a continuation while more follow. The position is an offset in the
// list, as the pages of a query over these resources are.
func (h *Handler) listReply(rq *request, rid, key string, items [][]byte) {
	n, err := maxItemCount(rq.r)
	if err != nil {
		h.fail(rq, err)
		return
	}
	if c := strings.TrimSpace(rq.r.Header.Get("x-ms-continuation")); c != "" {
		after, ok := listPosition(c)
		if !ok {
			h.fail(rq, badRequest("Invalid continuation token '%s' for a read feed of %s.", c, key))
			return
		}
		items = items[listStart(items, after):]
	}
	if n > 0 && n < len(items) {
		items = items[:n]
		setHeader(rq.w.Header(), "x-ms-continuation", listToken(listID(items[n-1])))
	}
	setHeader(rq.w.Header(), "x-ms-item-count", strconv.Itoa(len(items)))
	h.replyPage(rq, 0, rid, key, items)
}

// A read feed of databases, containers, users, permissions, scripts or
// offers lists them in the order of their ids (each is stored under its
// id), and its continuation is the id of the last one returned: the next
// page starts after it, so one deleted or created meanwhile neither hides
// nor repeats another.
const listTokenPrefix = "id."

func listToken(id string) string {
	return listTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(id))
}

func listPosition(token string) (string, bool) {
	rest, ok := strings.CutPrefix(token, listTokenPrefix)
	if !ok {
		return "", false
	}
	id, err := base64.RawURLEncoding.DecodeString(rest)
	return string(id), err == nil
}

// listStart is the index of the first item whose id sorts after after.
func listStart(items [][]byte, after string) int {
	i, _ := slices.BinarySearchFunc(items, after, func(it []byte, id string) int {
		return strings.Compare(listID(it), id)
	})
	if i < len(items) && listID(items[i]) == after {
		i++
	}
	return i
}

func listID(item []byte) string {
	v, err := document.ParseTop(item, map[string]bool{"id": true})
	if err != nil {
		return ""
	}
	return v.Get("id").Str()
}

func (h *Handler) createContainer(rq *request, db string) {
	h.createResource(rq, func(body document.Value, tp *engine.Throughput) (*engine.Resource, error) {
		res, err := h.eng.CreateContainer(rq.r.Context(), db, body, tp)
		if err == nil {
			h.contentPath(rq, res.Rid, "dbs/"+db+"/colls/"+res.Body.Get("id").Str())
		}
		return res, err
	})
}

// contentPath sets the owner headers the JS SDK tracks sessions by.
func (h *Handler) contentPath(rq *request, rid, altPath string) {
	setHeader(rq.w.Header(), "x-ms-content-path", rid)
	setHeader(rq.w.Header(), "x-ms-alt-content-path", altPath)
}

func (h *Handler) readContainer(rq *request, db, coll string) {
	res, usage, err := h.eng.ReadContainer(rq.r.Context(), db, coll)
	if err != nil {
		h.fail(rq, err)
		return
	}
	hd := rq.w.Header()
	setHeader(hd, "x-ms-resource-quota", "functions=25;storedProcedures=100;triggers=25;documentSize=10240;documentsSize=10485760;documentsCount=-1;collectionSize=10485760;")
	setHeader(hd, "x-ms-resource-usage", "functions="+strconv.Itoa(usage.Scripts[engine.Functions])+
		";storedProcedures="+strconv.Itoa(usage.Scripts[engine.StoredProcedures])+";triggers="+strconv.Itoa(usage.Scripts[engine.Triggers])+
		";documentSize="+strconv.FormatInt(usage.DocumentsSize/1024, 10)+
		";documentsSize="+strconv.FormatInt(usage.DocumentsSize/1024, 10)+";documentsCount="+strconv.FormatInt(usage.DocumentsCount, 10)+
		";collectionSize="+strconv.FormatInt(usage.DocumentsSize/1024, 10)+";")
	setHeader(hd, "x-ms-documentdb-collection-index-transformation-progress", strconv.Itoa(usage.IndexProgress))
	if strings.EqualFold(res.Body.Get("indexingPolicy").Get("indexingMode").Str(), "lazy") {
		// Mayfly indexes every write as it commits, so a lazy container's
		// index is always complete.
		setHeader(hd, "x-ms-documentdb-collection-lazy-indexing-progress", "100")
	}
	if sr, ok := h.eng.(statisticsReader); ok && headerBool(rq.r, "x-ms-documentdb-populatepartitionstatistics") {
		stats, err := sr.PartitionStatistics(rq.r.Context(), db, coll)
		if err != nil {
			h.fail(rq, err)
			return
		}
		withStats := *res
		withStats.Body = res.Body.With("statistics", statisticsJSON(stats))
		res = &withStats
	}
	h.contentPath(rq, res.Rid, "dbs/"+db+"/colls/"+coll)
	h.resourceReply(rq, http.StatusOK, res)
}

// statisticsReader is the engine's per-range usage of a container.
type statisticsReader interface {
	PartitionStatistics(ctx context.Context, db, coll string) ([]engine.RangeStatistics, error)
}

var _ statisticsReader = (*engine.Engine)(nil)

// statisticsJSON is the "statistics" of a container read that asks for
// them: per partition key range, its id, size in KB and item count. The
// service adds the largest logical partitions of a range, sampled, under
// "partitionKeys"; Mayfly lists none.
func statisticsJSON(stats []engine.RangeStatistics) document.Value {
	out := make([]document.Value, len(stats))
	for i, st := range stats {
		out[i] = document.Obj([]document.Field{
			{Name: "id", Value: document.Str(st.ID)},
			{Name: "sizeInKB", Value: document.Int(st.SizeBytes / 1024)},
			{Name: "documentCount", Value: document.Int(st.DocumentCount)},
			{Name: "partitionKeys", Value: document.Arr(nil)},
		})
	}
	return document.Arr(out)
}

func (h *Handler) replaceContainer(rq *request, db, coll string) {
	body, err := h.readJSON(rq)
	if err != nil {
		h.fail(rq, err)
		return
	}
	res, err := h.eng.ReplaceContainer(rq.r.Context(), db, coll, body, rq.r.Header.Get("If-Match"))
	if err != nil {
		h.fail(rq, err)
		return
	}
	h.resourceReply(rq, http.StatusOK, res)
}

func (h *Handler) deleteContainer(rq *request, db, coll string) {
	if err := h.eng.DeleteContainer(rq.r.Context(), db, coll, rq.r.Header.Get("If-Match")); err != nil {
		h.fail(rq, err)
		return
	}
	h.reply(rq, http.StatusNoContent, 0, nil)
}

func (h *Handler) listContainers(rq *request, db string) {
	colls, rid, err := h.eng.ListContainers(rq.r.Context(), db)
	if err != nil {
		h.fail(rq, err)
		return
	}
	h.listReply(rq, rid, "DocumentCollections", valuesJSON(colls))
}

func (h *Handler) pkranges(rq *request, db, coll string) {
	ranges, c, err := h.eng.PartitionKeyRanges(rq.r.Context(), db, coll)
	if err != nil {
		h.fail(rq, err)
		return
	}
	// The range set changes only on a split, which Mayfly does not do; its
	// version is therefore fixed per container.
	etag := `"` + c.Rid + `-ranges-` + strconv.Itoa(len(ranges)) + `"`
	setHeader(rq.w.Header(), "etag", etag)
	if noneMatch(rq.r, etag) {
		h.notModified(rq, 0)
		return
	}
	items := make([][]byte, len(ranges))
	for i, r := range ranges {
		rid := c.Rid + "-pkr-" + r.ID
		items[i] = document.Obj([]document.Field{
			{Name: "_rid", Value: document.Str(rid)},
			{Name: "id", Value: document.Str(r.ID)},
			{Name: "_etag", Value: document.Str(etag)},
			{Name: "minInclusive", Value: document.Str(r.Min)},
			{Name: "maxExclusive", Value: document.Str(r.Max)},
			{Name: "ridPrefix", Value: document.Int(int64(i))},
			{Name: "_self", Value: document.Str(c.Body.Get("_self").Str() + "pkranges/" + rid + "/")},
			{Name: "throughputFraction", Value: document.Float(1 / float64(len(ranges)))},
			{Name: "status", Value: document.Str("online")},
			{Name: "parents", Value: document.Arr(nil)},
			{Name: "ownedArchivalPKRangeIds", Value: document.Arr(nil)},
			{Name: "_ts", Value: c.Body.Get("_ts")},
			{Name: "_lsn", Value: document.Int(1)},
		}).JSON()
	}
	setHeader(rq.w.Header(), "x-ms-item-count", strconv.Itoa(len(items)))
	h.replyPage(rq, 0, c.Rid, "PartitionKeyRanges", items)
}

// itemHeaders sets what every item response carries.
func (h *Handler) itemHeaders(rq *request, res *engine.ItemResult) {
	hd := rq.w.Header()
	if res.Etag != "" {
		setHeader(hd, "etag", res.Etag)
	}
	setHeader(hd, "x-ms-session-token", engine.SessionToken(res.LSN))
	setHeader(hd, "lsn", strconv.FormatUint(res.LSN, 10))
	setHeader(hd, "x-ms-documentdb-partitionkeyrangeid", engine.SessionRange(res.LSN))
	if res.CollRid != "" {
		setHeader(hd, "x-ms-content-path", res.CollRid)
	}
	if s := rq.path.segs; len(s) >= 4 {
		setHeader(hd, "x-ms-alt-content-path", "dbs/"+s[1]+"/colls/"+s[3])
	}
}

// itemInput reads the partition key header and the body of an item
// request; on failure it has answered and reports false.
func (h *Handler) itemInput(rq *request, db, coll string) (engine.ItemRef, []byte, bool) {
	ref, err := itemRef(rq.r, db, coll)
	if err != nil {
		h.fail(rq, err)
		return ref, nil, false
	}
	body, err := h.readBody(rq)
	if err != nil {
		h.fail(rq, err)
		return ref, nil, false
	}
	return ref, body, true
}

// pageInput reads the partition key and page size headers of a feed or
// query; on failure it has answered and reports false.
func (h *Handler) pageInput(rq *request, db, coll string) (engine.ItemRef, int, bool) {
	ref, err := itemRef(rq.r, db, coll)
	if err != nil {
		h.fail(rq, err)
		return ref, 0, false
	}
	n, err := maxItemCount(rq.r)
	if err != nil {
		h.fail(rq, err)
		return ref, 0, false
	}
	return ref, n, true
}

// itemWritten answers a write with the item, or without it under
// Prefer: return=minimal; the headers are the same either way.
func (h *Handler) itemWritten(rq *request, status int, res *engine.ItemResult) {
	h.itemHeaders(rq, res)
	out := res.Body
	if preferMinimal(rq.r) {
		out = nil
	}
	h.reply(rq, status, res.Charge, out)
}

// notModified answers 304: the common headers and no body.
func (h *Handler) notModified(rq *request, charge float64) {
	h.commonHeaders(rq, charge)
	rq.status = http.StatusNotModified
	rq.w.WriteHeader(http.StatusNotModified)
}

func preferMinimal(r *http.Request) bool {
	return strings.Contains(strings.ToLower(r.Header.Get("Prefer")), "return=minimal")
}

func (h *Handler) writeItem(rq *request, db, coll string, mode engine.WriteMode, id string) {
	ref, body, ok := h.itemInput(rq, db, coll)
	if !ok {
		return
	}
	res, err := h.eng.WriteItem(rq.r.Context(), engine.WriteItemParams{ItemRef: ref, Mode: mode, ID: id, Body: body, IfMatch: rq.r.Header.Get("If-Match"), Triggers: triggerNames(rq.r), KeyRequired: true})
	if err != nil {
		h.fail(rq, err)
		return
	}
	status := http.StatusOK
	if mode == engine.ModeCreate || (mode == engine.ModeUpsert && res.Created) {
		status = http.StatusCreated
	}
	h.itemWritten(rq, status, res)
}

func (h *Handler) readItem(rq *request, db, coll, id string) {
	ref, err := itemRef(rq.r, db, coll)
	if err != nil {
		h.fail(rq, err)
		return
	}
	res, err := h.eng.ReadItem(rq.r.Context(), engine.ReadItemParams{ItemRef: ref, ID: id, IfNoneMatch: rq.r.Header.Get("If-None-Match")})
	if res != nil {
		h.itemHeaders(rq, res)
	}
	var ee *engine.Error
	if errors.As(err, &ee) && ee.Code == engine.NotModified {
		h.notModified(rq, res.Charge)
		return
	}
	if err != nil {
		h.fail(rq, err)
		return
	}
	h.reply(rq, http.StatusOK, res.Charge, res.Body)
}

func (h *Handler) deleteItem(rq *request, db, coll, id string) {
	ref, err := itemRef(rq.r, db, coll)
	if err != nil {
		h.fail(rq, err)
		return
	}
	res, err := h.eng.DeleteItem(rq.r.Context(), engine.DeleteItemParams{ItemRef: ref, ID: id, IfMatch: rq.r.Header.Get("If-Match"), Triggers: triggerNames(rq.r)})
	if err != nil {
		h.fail(rq, err)
		return
	}
	h.itemHeaders(rq, res)
	h.reply(rq, http.StatusNoContent, res.Charge, nil)
}

// deletePartition deletes every item of the logical partition the
// partition key header names, and answers 200 without a body.
func (h *Handler) deletePartition(rq *request, db, coll string) {
	ref, err := itemRef(rq.r, db, coll)
	if err != nil {
		h.fail(rq, err)
		return
	}
	res, err := h.eng.DeleteAllItemsByPartitionKey(rq.r.Context(), ref)
	if err != nil {
		h.fail(rq, err)
		return
	}
	h.itemHeaders(rq, res)
	h.reply(rq, http.StatusOK, res.Charge, nil)
}

func (h *Handler) patchItem(rq *request, db, coll, id string) {
	ref, body, ok := h.itemInput(rq, db, coll)
	if !ok {
		return
	}
	ops, cond, err := engine.ParsePatch(body)
	if err != nil {
		h.fail(rq, err)
		return
	}
	res, err := h.eng.PatchItem(rq.r.Context(), engine.PatchItemParams{ItemRef: ref, ID: id, Ops: ops, Condition: cond, IfMatch: rq.r.Header.Get("If-Match")})
	if err != nil {
		h.fail(rq, err)
		return
	}
	h.itemWritten(rq, http.StatusOK, res)
}

func (h *Handler) pageReply(rq *request, key string, page *engine.FeedPage) {
	hd := rq.w.Header()
	setHeader(hd, "x-ms-item-count", strconv.Itoa(len(page.Items)))
	if page.Continuation != "" {
		setHeader(hd, "x-ms-continuation", page.Continuation)
	}
	if page.LSN > 0 {
		setHeader(hd, "x-ms-session-token", engine.SessionToken(page.LSN))
	}
	if page.CollRid != "" {
		setHeader(hd, "x-ms-content-path", page.CollRid)
	}
	h.replyPage(rq, page.Charge, page.CollRid, key, page.Items)
	// The body is a copy of the page's documents.
	page.Release()
}

func (h *Handler) readFeed(rq *request, db, coll string) {
	ref, n, ok := h.pageInput(rq, db, coll)
	if !ok {
		return
	}
	minEPK, maxEPK, err := epkSpan(rq.r)
	if err != nil {
		h.fail(rq, err)
		return
	}
	page, err := h.eng.ReadFeed(rq.r.Context(), engine.FeedParams{ItemRef: ref, MaxItemCount: n,
		Continuation: rq.r.Header.Get("x-ms-continuation"), RangeID: rangeIDHeader(rq.r),
		MinEPK: minEPK, MaxEPK: maxEPK})
	if err != nil {
		h.fail(rq, err)
		return
	}
	h.pageReply(rq, "Documents", page)
}

func (h *Handler) routeOffers(rq *request, s []string) {
	m := rq.r.Method
	switch {
	case len(s) == 0 && m == http.MethodPost && isQuery(rq.r):
		h.queryResources(rq, engine.ResourceOffers, "")
	case len(s) == 0 && m == http.MethodGet:
		offers, err := h.eng.ListOffers(rq.r.Context())
		if err != nil {
			h.fail(rq, err)
			return
		}
		h.listReply(rq, "", "Offers", valuesJSON(offers))
	case len(s) == 1 && m == http.MethodGet:
		res, err := h.eng.ReadOffer(rq.r.Context(), s[0])
		if err != nil {
			h.fail(rq, err)
			return
		}
		h.resourceReply(rq, http.StatusOK, res)
	case len(s) == 1 && m == http.MethodPut:
		body, err := h.readJSON(rq)
		if err != nil {
			h.fail(rq, err)
			return
		}
		migrate, err := offerMigration(rq.r)
		if err != nil {
			h.fail(rq, err)
			return
		}
		res, err := h.eng.ReplaceOffer(rq.r.Context(), s[0], body, rq.r.Header.Get("If-Match"), migrate)
		if err != nil {
			h.fail(rq, err)
			return
		}
		h.resourceReply(rq, http.StatusOK, res)
	default:
		h.methodNotAllowed(rq)
	}
}
