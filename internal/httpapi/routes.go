package httpapi

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/engine"
	"github.com/mayfly-db/mayfly/internal/partition"
)

func badRequest(format string, args ...any) *engine.Error {
	e := &engine.Error{Code: engine.BadRequest}
	e.Message = sprintf(format, args...)
	return e
}

// route dispatches on the resource path and verb.
func (h *Handler) route(rq *request) {
	s := rq.path.segs
	m := rq.r.Method
	switch {
	case len(s) == 0:
		if m == http.MethodGet {
			h.account(rq)
			return
		}
	case s[0] == "dbs":
		h.routeDatabases(rq, s[1:])
		return
	case s[0] == "offers":
		h.routeOffers(rq, s[1:])
		return
	case len(s) == 2 && s[0] == "_mayfly" && s[1] == "backup":
		if m == http.MethodPost {
			h.runBackup(rq)
		} else {
			h.methodNotAllowed(rq)
		}
		return
	}
	h.fail(rq, &engine.Error{Code: engine.NotFound, Message: "The requested resource does not exist: " + rq.r.URL.Path})
}

func (h *Handler) routeDatabases(rq *request, s []string) {
	m := rq.r.Method
	switch len(s) {
	case 0:
		switch {
		case m == http.MethodPost && isQuery(rq.r):
			h.queryResources(rq, engine.ResourceDatabases, "")
		case m == http.MethodPost:
			h.createDatabase(rq)
		case m == http.MethodGet:
			h.listDatabases(rq)
		default:
			h.methodNotAllowed(rq)
		}
		return
	case 1:
		switch m {
		case http.MethodGet:
			h.readDatabase(rq, s[0])
		case http.MethodDelete:
			h.deleteDatabase(rq, s[0])
		default:
			h.methodNotAllowed(rq)
		}
		return
	}
	db := s[0]
	if s[1] == "users" {
		h.routeUsers(rq, db, s[2:])
		return
	}
	if s[1] != "colls" {
		h.fail(rq, &engine.Error{Code: engine.NotFound, Message: "Unknown resource type '" + s[1] + "'."})
		return
	}
	h.routeContainers(rq, db, s[2:])
}

func (h *Handler) routeContainers(rq *request, db string, s []string) {
	m := rq.r.Method
	switch len(s) {
	case 0:
		switch {
		case m == http.MethodPost && isQuery(rq.r):
			h.queryResources(rq, engine.ResourceContainers, db)
		case m == http.MethodPost:
			h.createContainer(rq, db)
		case m == http.MethodGet:
			h.listContainers(rq, db)
		default:
			h.methodNotAllowed(rq)
		}
		return
	case 1:
		switch m {
		case http.MethodGet:
			h.readContainer(rq, db, s[0])
		case http.MethodPut:
			h.replaceContainer(rq, db, s[0])
		case http.MethodDelete:
			h.deleteContainer(rq, db, s[0])
		default:
			h.methodNotAllowed(rq)
		}
		return
	}
	coll := s[0]
	switch s[1] {
	case "docs":
		h.routeItems(rq, db, coll, s[2:])
	case "pkranges":
		if m != http.MethodGet || len(s) > 2 {
			h.methodNotAllowed(rq)
			return
		}
		h.pkranges(rq, db, coll)
	case "sprocs":
		h.routeScripts(rq, db, coll, engine.StoredProcedures, s[2:])
	case "udfs":
		h.routeScripts(rq, db, coll, engine.Functions, s[2:])
	case "triggers":
		h.routeScripts(rq, db, coll, engine.Triggers, s[2:])
	case "conflicts":
		h.conflicts(rq, db, coll, s[2:])
	case "operations":
		if len(s) != 3 || !strings.EqualFold(s[2], "partitionkeydelete") {
			h.fail(rq, &engine.Error{Code: engine.NotFound, Message: "Resource Not Found."})
			return
		}
		if m != http.MethodPost {
			h.methodNotAllowed(rq)
			return
		}
		h.deletePartition(rq, db, coll)
	case "_mayfly":
		if len(s) != 3 || s[2] != "ttl" || m != http.MethodGet {
			h.fail(rq, &engine.Error{Code: engine.NotFound, Message: "Resource Not Found."})
			return
		}
		h.ttlStatus(rq, db, coll)
	default:
		h.fail(rq, &engine.Error{Code: engine.NotFound, Message: "Unknown resource type '" + s[1] + "'."})
	}
}

func (h *Handler) routeItems(rq *request, db, coll string, s []string) {
	m := rq.r.Method
	if len(s) == 0 {
		switch {
		case m == http.MethodPost && isQuery(rq.r):
			h.queryItems(rq, db, coll)
		case m == http.MethodPost && headerBool(rq.r, "x-ms-cosmos-is-batch-request"):
			h.batch(rq, db, coll)
		case m == http.MethodPost:
			mode := engine.ModeCreate
			if headerBool(rq.r, "x-ms-documentdb-is-upsert") {
				mode = engine.ModeUpsert
			}
			h.writeItem(rq, db, coll, mode, "")
		case m == http.MethodGet && rq.r.Header.Get("A-IM") != "":
			h.changeFeed(rq, db, coll)
		case m == http.MethodGet:
			h.readFeed(rq, db, coll)
		default:
			h.methodNotAllowed(rq)
		}
		return
	}
	if len(s) >= 2 && s[1] == "attachments" {
		h.routeAttachments(rq, db, coll, s[0], s[2:])
		return
	}
	if len(s) != 1 {
		h.fail(rq, &engine.Error{Code: engine.NotFound, Message: "The requested resource does not exist."})
		return
	}
	id := s[0]
	switch m {
	case http.MethodGet:
		h.readItem(rq, db, coll, id)
	case http.MethodPut:
		h.writeItem(rq, db, coll, engine.ModeReplace, id)
	case http.MethodDelete:
		h.deleteItem(rq, db, coll, id)
	case http.MethodPatch:
		h.patchItem(rq, db, coll, id)
	default:
		h.methodNotAllowed(rq)
	}
}

func (h *Handler) methodNotAllowed(rq *request) {
	h.fail(rq, badRequest("The verb %s is not supported on this resource.", rq.r.Method))
}

// unsupportedFeed answers the resource types not built yet: their feeds
// are empty, anything else is refused.
func (h *Handler) unsupportedFeed(rq *request, rest []string, key string) {
	if rq.r.Method == http.MethodGet && len(rest) == 0 {
		h.replyPage(rq, 0, "", key, nil)
		return
	}
	if rq.r.Method == http.MethodGet {
		h.fail(rq, &engine.Error{Code: engine.NotFound, Message: "Resource Not Found."})
		return
	}
	h.fail(rq, badRequest("%s are not supported yet.", key))
}

// conflicts answers the conflicts feed, which is empty: a single-region
// account has no write conflicts. It belongs to an existing container.
func (h *Handler) conflicts(rq *request, db, coll string, rest []string) {
	res, _, err := h.eng.ReadContainer(rq.r.Context(), db, coll)
	if err != nil {
		h.fail(rq, err)
		return
	}
	switch {
	case len(rest) == 0 && (rq.r.Method == http.MethodGet || rq.r.Method == http.MethodPost && isQuery(rq.r)):
		setHeader(rq.w.Header(), "x-ms-item-count", "0")
		h.replyPage(rq, 0, res.Rid, "Conflicts", nil)
	case len(rest) == 1 && (rq.r.Method == http.MethodGet || rq.r.Method == http.MethodDelete):
		// A conflict is addressed in its logical partition, as an item is.
		ref, err := itemRef(rq.r, db, coll)
		switch {
		case err != nil:
			h.fail(rq, err)
		case !ref.HasKey && res.Body.Get("partitionKey").Get("paths").Len() > 0:
			h.fail(rq, badRequest("PartitionKey value must be supplied for this operation."))
		default:
			h.fail(rq, &engine.Error{Code: engine.NotFound, Message: "Resource Not Found. Conflict '" + rest[0] + "' does not exist."})
		}
	default:
		h.methodNotAllowed(rq)
	}
}

// readBody reads the request body within the size limit. A body that
// stops coming is a 408, which the SDKs retry, as the service answers a
// request it waited for too long.
func (h *Handler) readBody(rq *request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(rq.r.Body, h.maxBody+1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, &engine.Error{Code: engine.RequestTimeout, Message: "The request body did not arrive in time."}
	}
	if err != nil {
		return nil, badRequest("The request body could not be read: %v", err)
	}
	if int64(len(b)) > h.maxBody {
		return nil, &engine.Error{Code: engine.RequestEntityTooLarge, Message: "Request size is too large."}
	}
	return b, nil
}

// readJSON reads and parses a JSON request body.
func (h *Handler) readJSON(rq *request) (document.Value, error) {
	b, err := h.readBody(rq)
	if err != nil {
		return document.Undef, err
	}
	v, perr := document.Parse(b)
	if perr != nil {
		return document.Undef, badRequest("The request payload is invalid: %v", perr)
	}
	if v.Kind() != document.Object {
		return document.Undef, badRequest("The request payload must be a JSON object.")
	}
	return v, nil
}

func headerBool(r *http.Request, name string) bool {
	return strings.EqualFold(strings.TrimSpace(r.Header.Get(name)), "true")
}

// queryRequest reports whether a request is a query, which a read-only key
// or a Read grant may make: a POST of a query to a feed, whose path has an
// odd number of segments (/dbs, …/docs, …/sprocs). Elsewhere the query
// headers mean nothing: a stored procedure run or a delete by partition
// key that carries them is still a write.
func queryRequest(r *http.Request, segs []string) bool {
	return r.Method == http.MethodPost && len(segs)%2 == 1 && isQuery(r)
}

func isQuery(r *http.Request) bool {
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	return strings.HasPrefix(ct, "application/query+json") || headerBool(r, "x-ms-documentdb-isquery") || headerBool(r, "x-ms-documentdb-query")
}

// itemRef reads the container address and partition key header.
func itemRef(r *http.Request, db, coll string) (engine.ItemRef, error) {
	ref := engine.ItemRef{DB: db, Coll: coll}
	hv, ok := r.Header["X-Ms-Documentdb-Partitionkey"]
	if !ok || len(hv) == 0 {
		return ref, nil
	}
	k, err := partition.ParseHeader(hv[0])
	if err != nil {
		return ref, badRequest("The partition key header is invalid: %v", err)
	}
	ref.PartitionKey, ref.HasKey = k, true
	return ref, nil
}

// maxItemCount reads x-ms-max-item-count.
func maxItemCount(r *http.Request) (int, error) {
	v := strings.TrimSpace(r.Header.Get("x-ms-max-item-count"))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < -1 {
		return 0, badRequest("Invalid value '%s' for header x-ms-max-item-count.", v)
	}
	return n, nil
}

// offerMigration reads the headers with which an offer replace asks to
// change the offer's kind.
func offerMigration(r *http.Request) (engine.OfferMigration, error) {
	toAuto := headerBool(r, "x-ms-cosmos-migrate-offer-to-autopilot")
	toManual := headerBool(r, "x-ms-cosmos-migrate-offer-to-manual-throughput")
	switch {
	case toAuto && toManual:
		return engine.KeepKind, badRequest("An offer replace may migrate to autoscale or to manual throughput, not both.")
	case toAuto:
		return engine.ToAutoscale, nil
	case toManual:
		return engine.ToManual, nil
	}
	return engine.KeepKind, nil
}

// throughput reads the offer headers of a database or container create.
func throughput(r *http.Request) (*engine.Throughput, error) {
	if r.Header.Get("x-ms-offer-throughput") != "" && r.Header.Get("x-ms-cosmos-offer-autopilot-settings") != "" {
		// The service's create references: "These headers cannot be
		// specified together."
		return nil, badRequest("Only one of x-ms-offer-throughput or x-ms-cosmos-offer-autopilot-settings may be specified.")
	}
	if v := strings.TrimSpace(r.Header.Get("x-ms-offer-throughput")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, badRequest("Invalid value '%s' for header x-ms-offer-throughput.", v)
		}
		return &engine.Throughput{Manual: n}, nil
	}
	if v := strings.TrimSpace(r.Header.Get("x-ms-cosmos-offer-autopilot-settings")); v != "" {
		s, err := document.Parse([]byte(v))
		if err != nil || s.Kind() != document.Object || !s.Get("maxThroughput").IsInt() {
			return nil, badRequest("Invalid value for header x-ms-cosmos-offer-autopilot-settings.")
		}
		tp, err := engine.ParseAutoscale(s)
		if err != nil {
			return nil, err
		}
		return &tp, nil
	}
	return nil, nil
}
