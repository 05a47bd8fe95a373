package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/engine"
)

// scriptStore is the engine's side of server-side scripts.
type scriptStore interface {
	WriteScript(ctx context.Context, db, coll string, kind engine.ScriptKind, id string, body document.Value, ifMatch string) (*engine.Resource, error)
	UpsertScript(ctx context.Context, db, coll string, kind engine.ScriptKind, body document.Value) (*engine.Resource, bool, error)
	ReadScript(ctx context.Context, db, coll string, kind engine.ScriptKind, id string) (*engine.Resource, error)
	DeleteScript(ctx context.Context, db, coll string, kind engine.ScriptKind, id, ifMatch string) error
	ListScripts(ctx context.Context, db, coll string, kind engine.ScriptKind) ([]document.Value, string, error)
	ExecuteProcedure(ctx context.Context, p engine.ExecuteParams) (*engine.ProcedureResult, error)
}

// scriptFeeds are the feed keys and resource kinds of the script kinds.
var scriptFeeds = map[engine.ScriptKind]struct {
	key  string
	kind engine.ResourceKind
}{
	engine.StoredProcedures: {"StoredProcedures", engine.ResourceStoredProcedures},
	engine.Triggers:         {"Triggers", engine.ResourceTriggers},
	engine.Functions:        {"UserDefinedFunctions", engine.ResourceFunctions},
}

// routeScripts serves /dbs/{db}/colls/{coll}/{sprocs|triggers|udfs}/…, and
// the execution of a stored procedure (POST …/sprocs/{id}).
func (h *Handler) routeScripts(rq *request, db, coll string, kind engine.ScriptKind, s []string) {
	ss, ok := h.eng.(scriptStore)
	feed := scriptFeeds[kind]
	if !ok {
		h.unsupportedFeed(rq, s, feed.key)
		return
	}
	ctx := rq.r.Context()
	m := rq.r.Method
	ifMatch := rq.r.Header.Get("If-Match")
	switch {
	case len(s) == 0 && m == http.MethodPost && isQuery(rq.r):
		h.queryResourcesOf(rq, engine.ResourceQueryParams{Kind: feed.kind, DB: db, Coll: coll})
	case len(s) == 0 && m == http.MethodPost:
		body, err := h.readJSON(rq)
		var res *engine.Resource
		created := true
		switch {
		case err != nil:
		case headerBool(rq.r, "x-ms-documentdb-is-upsert"):
			res, created, err = ss.UpsertScript(ctx, db, coll, kind, body)
		default:
			res, err = ss.WriteScript(ctx, db, coll, kind, "", body, "")
		}
		h.answer(rq, createdStatus(created), res, err)
	case len(s) == 0 && m == http.MethodGet:
		vals, rid, err := ss.ListScripts(ctx, db, coll, kind)
		if err != nil {
			h.fail(rq, err)
			return
		}
		h.listReply(rq, rid, feed.key, valuesJSON(vals))
	case len(s) == 1 && m == http.MethodGet:
		res, err := ss.ReadScript(ctx, db, coll, kind, s[0])
		h.answer(rq, http.StatusOK, res, err)
	case len(s) == 1 && m == http.MethodPut:
		body, err := h.readJSON(rq)
		var res *engine.Resource
		if err == nil {
			res, err = ss.WriteScript(ctx, db, coll, kind, s[0], body, ifMatch)
		}
		h.answer(rq, http.StatusOK, res, err)
	case len(s) == 1 && m == http.MethodDelete:
		if err := ss.DeleteScript(ctx, db, coll, kind, s[0], ifMatch); err != nil {
			h.fail(rq, err)
			return
		}
		h.reply(rq, http.StatusNoContent, 0, nil)
	case len(s) == 1 && m == http.MethodPost && kind == engine.StoredProcedures:
		h.executeProcedure(rq, ss, db, coll, s[0])
	case len(s) == 1:
		h.methodNotAllowed(rq)
	default:
		h.fail(rq, &engine.Error{Code: engine.NotFound, Message: "Resource Not Found."})
	}
}

// executeProcedure runs a stored procedure: the body is the JSON array of
// its parameters, the partition key header its logical partition.
func (h *Handler) executeProcedure(rq *request, ss scriptStore, db, coll, id string) {
	ref, err := itemRef(rq.r, db, coll)
	if err != nil {
		h.fail(rq, err)
		return
	}
	params, err := h.readBody(rq)
	if err != nil {
		h.fail(rq, err)
		return
	}
	if len(strings.TrimSpace(string(params))) == 0 {
		params = nil
	}
	logging := headerBool(rq.r, "x-ms-documentdb-script-enable-logging")
	res, err := ss.ExecuteProcedure(rq.r.Context(), engine.ExecuteParams{ItemRef: ref, ID: id, Params: params, Logging: logging})
	if err != nil {
		h.fail(rq, err)
		return
	}
	if logging && len(res.Logs) > 0 {
		setHeader(rq.w.Header(), "x-ms-documentdb-script-log-results", url.PathEscape(strings.Join(res.Logs, "\n")))
	}
	body := res.Body
	if body == nil {
		body = []byte(`""`)
	}
	h.reply(rq, http.StatusOK, res.Charge, body)
}

// triggerNames reads the triggers a write names: comma-separated ids in
// x-ms-documentdb-pre-trigger-include and …-post-trigger-include.
func triggerNames(r *http.Request) engine.TriggerNames {
	split := func(h string) []string {
		var out []string
		for _, v := range r.Header.Values(h) {
			for _, name := range strings.Split(v, ",") {
				if name = strings.TrimSpace(name); name != "" {
					out = append(out, name)
				}
			}
		}
		return out
	}
	return engine.TriggerNames{Pre: split("x-ms-documentdb-pre-trigger-include"), Post: split("x-ms-documentdb-post-trigger-include")}
}

// ttlStatus answers GET …/colls/{coll}/_mayfly/ttl, for the Data Explorer:
// how many expired items still wait for the purger (they are invisible
// already), and how many purged or deleted items, and bytes, still wait
// for their erasure from the store's files (ttl.md B4), with the
// container's erasure deadline.
func (h *Handler) ttlStatus(rq *request, db, coll string) {
	type backlogger interface {
		TTLBacklog(ctx context.Context, db, coll string, max int) (int, bool, error)
		ErasureQueue(ctx context.Context, db, coll string, max int) (int, int64, time.Duration, error)
	}
	b, ok := h.eng.(backlogger)
	if !ok {
		h.fail(rq, &engine.Error{Code: engine.NotFound, Message: "Resource Not Found."})
		return
	}
	const max = 100000
	n, capped, err := b.TTLBacklog(rq.r.Context(), db, coll, max)
	if err != nil {
		h.fail(rq, err)
		return
	}
	items, bytes, deadline, err := b.ErasureQueue(rq.r.Context(), db, coll, max)
	if err != nil {
		h.fail(rq, err)
		return
	}
	body, _ := json.Marshal(map[string]any{"expiredAwaitingPurge": n, "capped": capped,
		"awaitingErasure": items, "awaitingErasureBytes": bytes, "erasureCapped": items >= max,
		"eraseDeadlineSeconds": int64(deadline / time.Second)})
	h.reply(rq, http.StatusOK, 0, body)
}
