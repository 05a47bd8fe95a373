package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/engine"
)

// querySpec reads a query body: {"query": "...", "parameters": [{"name","value"}]}.
func (h *Handler) querySpec(rq *request) (string, map[string]document.Value, error) {
	body, err := h.readJSON(rq)
	if err != nil {
		return "", nil, err
	}
	q := body.Get("query")
	if q.Kind() != document.String {
		return "", nil, badRequest("The query body must have a 'query' string.")
	}
	params := map[string]document.Value{}
	ps := body.Get("parameters")
	if ps.IsDefined() && !ps.IsNull() && ps.Kind() != document.Array {
		return "", nil, badRequest("The query 'parameters' must be an array.")
	}
	for _, p := range ps.Array() {
		name := p.Get("name")
		if name.Kind() != document.String || !strings.HasPrefix(name.Str(), "@") {
			return "", nil, badRequest("Every query parameter needs a 'name' starting with '@'.")
		}
		params[name.Str()] = p.Get("value")
	}
	return q.Str(), params, nil
}

func (h *Handler) queryItems(rq *request, db, coll string) {
	text, params, err := h.querySpec(rq)
	if err != nil {
		h.fail(rq, err)
		return
	}
	if headerBool(rq.r, "x-ms-cosmos-is-query-plan-request") {
		plan, err := engine.PlanForText(text, params)
		if err != nil {
			h.fail(rq, err)
			return
		}
		h.reply(rq, http.StatusOK, 0, plan)
		return
	}
	ref, n, ok := h.pageInput(rq, db, coll)
	if !ok {
		return
	}
	cross := true
	if v := rq.r.Header.Get("x-ms-documentdb-query-enablecrosspartition"); v == "" || !strings.EqualFold(strings.TrimSpace(v), "true") {
		cross = false
	}
	page, err := h.eng.QueryItems(rq.r.Context(), engine.QueryParams{
		ItemRef: ref, Query: text, Params: params, MaxItemCount: n,
		Continuation:   rq.r.Header.Get("x-ms-continuation"),
		RangeID:        rq.r.Header.Get("x-ms-documentdb-partitionkeyrangeid"),
		CrossPartition: cross,
		AllowScan:      headerBool(rq.r, "x-ms-documentdb-force-query-scan") || headerBool(rq.r, "x-ms-documentdb-query-enable-scan"),
	})
	if err != nil {
		h.fail(rq, err)
		return
	}
	h.queryMetrics(rq, page)
	h.pageReply(rq, "Documents", page)
}

// queryMetrics sets the metrics headers when the client asked for them.
func (h *Handler) queryMetrics(rq *request, page *engine.FeedPage) {
	hd := rq.w.Header()
	if headerBool(rq.r, "x-ms-documentdb-populatequerymetrics") {
		size := 0
		for _, it := range page.Items {
			size += len(it)
		}
		hd.Set("x-ms-documentdb-query-metrics", "totalExecutionTimeInMs=0.10;queryCompileTimeInMs=0.01;queryLogicalPlanBuildTimeInMs=0.01;queryPhysicalPlanBuildTimeInMs=0.01;queryOptimizationTimeInMs=0.00;VMExecutionTimeInMs=0.05;indexLookupTimeInMs=0.00;documentLoadTimeInMs=0.02;systemFunctionExecuteTimeInMs=0.00;userFunctionExecuteTimeInMs=0.00;retrievedDocumentCount="+
			strconv.Itoa(page.Examined)+";retrievedDocumentSize="+strconv.Itoa(size)+";outputDocumentCount="+strconv.Itoa(len(page.Items))+
			";outputDocumentSize="+strconv.Itoa(size)+";writeOutputTimeInMs=0.00;indexUtilizationRatio=1.00")
	}
	if headerBool(rq.r, "x-ms-cosmos-populateindexmetrics") || headerBool(rq.r, "x-ms-cosmos-populateindexmetrics-V2") {
		hd.Set("x-ms-cosmos-index-utilization", "%7B%22UtilizedSingleIndexes%22%3A%5B%5D%2C%22PotentialSingleIndexes%22%3A%5B%5D%2C%22UtilizedCompositeIndexes%22%3A%5B%5D%2C%22PotentialCompositeIndexes%22%3A%5B%5D%7D")
	}
	hd.Set("x-ms-cosmos-query-execution-info", `{"reverseRidEnabled":false,"reverseIndexScan":false}`)
}

func (h *Handler) queryResources(rq *request, kind engine.ResourceKind, db string) {
	text, params, err := h.querySpec(rq)
	if err != nil {
		h.fail(rq, err)
		return
	}
	n, err := maxItemCount(rq.r)
	if err != nil {
		h.fail(rq, err)
		return
	}
	page, err := h.eng.QueryResources(rq.r.Context(), engine.ResourceQueryParams{
		Kind: kind, DB: db, Query: text, Params: params, MaxItemCount: n,
		Continuation: rq.r.Header.Get("x-ms-continuation"),
	})
	if err != nil {
		h.fail(rq, err)
		return
	}
	key := map[engine.ResourceKind]string{engine.ResourceDatabases: "Databases", engine.ResourceContainers: "DocumentCollections", engine.ResourceOffers: "Offers"}[kind]
	h.queryMetrics(rq, page)
	h.pageReply(rq, key, page)
}
