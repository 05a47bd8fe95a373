package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/engine"
	"github.com/mayfly-db/mayfly/internal/query/plan"
)

// querySpec reads a query body: {"query": "...", "parameters":
// [{"name","value"}], "resumeFilter"?}.
func (h *Handler) querySpec(rq *request) (string, map[string]document.Value, *engine.ResumeFilter, error) {
	body, err := h.readJSON(rq)
	if err != nil {
		return "", nil, nil, err
	}
	q := body.Get("query")
	if q.Kind() != document.String {
		return "", nil, nil, badRequest("The query body must have a 'query' string.")
	}
	params := map[string]document.Value{}
	ps := body.Get("parameters")
	if ps.IsDefined() && !ps.IsNull() && ps.Kind() != document.Array {
		return "", nil, nil, badRequest("The query 'parameters' must be an array.")
	}
	for _, p := range ps.Array() {
		name := p.Get("name")
		if name.Kind() != document.String || !strings.HasPrefix(name.Str(), "@") {
			return "", nil, nil, badRequest("Every query parameter needs a 'name' starting with '@'.")
		}
		if _, dup := params[name.Str()]; dup {
			return "", nil, nil, badRequest("Invalid query. Specified duplicate parameter name '%s'.", name.Str())
		}
		params[name.Str()] = p.Get("value")
	}
	resume, err := resumeFilter(body.Get("resumeFilter"))
	if err != nil {
		return "", nil, nil, err
	}
	return q.Str(), params, resume, nil
}

// resumeFilter reads the .NET SDK's resumeFilter: {"value": [...],
// "rid"?, "exclude"?}, an array's or object's value given as a hash,
// {"type": "array" or "object", "low", "high"} (docs/protocol.md §6.3).
func resumeFilter(v document.Value) (*engine.ResumeFilter, error) {
	if !v.IsDefined() || v.IsNull() {
		return nil, nil
	}
	vals := v.Get("value")
	if v.Kind() != document.Object || vals.Kind() != document.Array || len(vals.Array()) == 0 {
		return nil, badRequest("The query's 'resumeFilter' must be an object with a 'value' array.")
	}
	f := &engine.ResumeFilter{Exclude: v.Get("exclude").Bool()}
	switch rid := v.Get("rid"); rid.Kind() {
	case document.Undefined, document.Null:
	case document.String:
		f.Rid = rid.Str()
	default:
		return nil, badRequest("The query's 'resumeFilter' has a 'rid' that is not a string.")
	}
	for _, x := range vals.Array() {
		hashed := false
		if x.Kind() == document.Object {
			switch x.Get("type").Str() {
			case "array":
				x, hashed = document.Arr(nil), true
			case "object":
				hashed = true
			default:
				return nil, badRequest("A 'resumeFilter' value that is an object must be a hash of an array or an object.")
			}
		}
		f.Values = append(f.Values, x)
		f.Hashed = append(f.Hashed, hashed)
	}
	return f, nil
}

func (h *Handler) queryItems(rq *request, db, coll string) {
	text, params, resume, err := h.querySpec(rq)
	if err != nil {
		h.fail(rq, err)
		return
	}
	if headerBool(rq.r, "x-ms-cosmos-is-query-plan-request") {
		plan, err := h.eng.PlanFor(rq.r.Context(), db, coll, text, params, rq.r.Header.Get("x-ms-cosmos-supported-query-features"))
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
	minEPK, maxEPK, err := epkSpan(rq.r)
	if err != nil {
		h.fail(rq, err)
		return
	}
	cross := true
	if v := rq.r.Header.Get("x-ms-documentdb-query-enablecrosspartition"); v == "" || !strings.EqualFold(strings.TrimSpace(v), "true") {
		cross = false
	}
	page, err := h.eng.QueryItems(rq.r.Context(), engine.QueryParams{
		ItemRef: ref, Query: text, Params: params, MaxItemCount: n,
		Continuation:   rq.r.Header.Get("x-ms-continuation"),
		RangeID:        rangeIDHeader(rq.r),
		CrossPartition: cross,
		AllowScan:      headerBool(rq.r, "x-ms-documentdb-force-query-scan") || headerBool(rq.r, "x-ms-documentdb-query-enable-scan"),
		Features:       rq.r.Header.Get("x-ms-cosmos-supported-query-features"),
		Whole:          headerBool(rq.r, "x-ms-mayfly-query-whole"),
		MinEPK:         minEPK,
		MaxEPK:         maxEPK,
		Resume:         resume,
	})
	if err != nil {
		h.fail(rq, err)
		return
	}
	h.queryMetrics(rq, page)
	h.pageReply(rq, "Documents", page)
}

// queryMetrics sets the metrics headers when the client asked for them.
// The counts are the engine's: every record and index entry the page read.
// Timings are not measured and read as small constants.
func (h *Handler) queryMetrics(rq *request, page *engine.FeedPage) {
	hd := rq.w.Header()
	if headerBool(rq.r, "x-ms-documentdb-populatequerymetrics") {
		size := 0
		for _, it := range page.Items {
			size += len(it)
		}
		ratio := 1.0
		if page.Examined > 0 {
			ratio = min(1, float64(len(page.Items))/float64(page.Examined))
		}
		setHeader(hd, "x-ms-documentdb-query-metrics", "totalExecutionTimeInMs=0.10;queryCompileTimeInMs=0.01;queryLogicalPlanBuildTimeInMs=0.01;queryPhysicalPlanBuildTimeInMs=0.01;queryOptimizationTimeInMs=0.00;VMExecutionTimeInMs=0.05;indexLookupTimeInMs=0.00;documentLoadTimeInMs=0.02;systemFunctionExecuteTimeInMs=0.00;userFunctionExecuteTimeInMs=0.00;retrievedDocumentCount="+
			strconv.Itoa(page.Examined)+";retrievedDocumentSize="+strconv.Itoa(page.ExaminedBytes)+";outputDocumentCount="+strconv.Itoa(len(page.Items))+
			";outputDocumentSize="+strconv.Itoa(size)+";writeOutputTimeInMs=0.00;indexUtilizationRatio="+strconv.FormatFloat(ratio, 'f', 2, 64))
		if page.Plan != nil {
			setHeader(hd, "x-ms-mayfly-query-plan", headerSafe(page.Plan.Summary()))
		}
		setHeader(hd, "x-ms-mayfly-index-entries-read", strconv.Itoa(page.IndexEntries))
	}
	if headerBool(rq.r, "x-ms-cosmos-populateindexmetrics") || headerBool(rq.r, "x-ms-cosmos-populateindexmetrics-V2") {
		setHeader(hd, "x-ms-cosmos-index-utilization", url.QueryEscape(indexUtilization(page.Plan)))
	}
	setHeader(hd, "x-ms-cosmos-query-execution-info", `{"reverseRidEnabled":false,"reverseIndexScan":false}`)
}

// indexUtilization is the index metrics document: the single-path or
// composite index the chosen access path read.
func indexUtilization(p *plan.Plan) string {
	type index struct {
		FilterExpression string
		IndexSpec        string   `json:",omitempty"`
		IndexSpecs       []string `json:",omitempty"`
		FilterPreciseSet bool
		IndexPreciseSet  bool
		IndexImpactScore string
	}
	doc := struct {
		UtilizedSingleIndexes     []index
		PotentialSingleIndexes    []index
		UtilizedCompositeIndexes  []index
		PotentialCompositeIndexes []index
	}{[]index{}, []index{}, []index{}, []index{}}
	if p != nil {
		for _, path := range p.UsedPaths() {
			doc.UtilizedSingleIndexes = append(doc.UtilizedSingleIndexes, index{IndexSpec: "/" + strings.Join(path, "/") + "/?", FilterPreciseSet: true, IndexPreciseSet: true, IndexImpactScore: "High"})
		}
		if comp, ok := p.UsedComposite(); ok {
			doc.UtilizedCompositeIndexes = append(doc.UtilizedCompositeIndexes, index{IndexSpecs: comp.Spec(), FilterPreciseSet: true, IndexPreciseSet: true, IndexImpactScore: "High"})
		}
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

// headerSafe keeps a header value to printable ASCII.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}

func (h *Handler) queryResources(rq *request, kind engine.ResourceKind, db string) {
	h.queryResourcesOf(rq, engine.ResourceQueryParams{Kind: kind, DB: db})
}

// queryResourcesOf runs the request's query over the resources p names.
func (h *Handler) queryResourcesOf(rq *request, p engine.ResourceQueryParams) {
	text, params, _, err := h.querySpec(rq)
	if err != nil {
		h.fail(rq, err)
		return
	}
	n, err := maxItemCount(rq.r)
	if err != nil {
		h.fail(rq, err)
		return
	}
	p.Query, p.Params, p.MaxItemCount = text, params, n
	p.Continuation = rq.r.Header.Get("x-ms-continuation")
	page, err := h.eng.QueryResources(rq.r.Context(), p)
	if err != nil {
		h.fail(rq, err)
		return
	}
	key := map[engine.ResourceKind]string{engine.ResourceDatabases: "Databases", engine.ResourceContainers: "DocumentCollections",
		engine.ResourceOffers: "Offers", engine.ResourceAttachments: "Attachments", engine.ResourceUsers: "Users",
		engine.ResourcePermissions: "Permissions", engine.ResourceStoredProcedures: "StoredProcedures",
		engine.ResourceTriggers: "Triggers", engine.ResourceFunctions: "UserDefinedFunctions"}[p.Kind]
	h.queryMetrics(rq, page)
	h.pageReply(rq, key, page)
}
