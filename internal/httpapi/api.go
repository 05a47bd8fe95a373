// Package httpapi is Mayfly's Cosmos DB REST transport. It parses requests
// (paths, headers, bodies), checks signatures, calls the engine and writes
// responses. It is the one place where engine errors become HTTP statuses
// and Cosmos-style bodies ({"code","message"}).
package httpapi

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mayfly-db/mayfly/internal/auth"
	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/engine"
	"github.com/mayfly-db/mayfly/internal/ratelimit"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// Engine is what the transport needs from the domain.
type Engine interface {
	CreateDatabase(ctx context.Context, body document.Value, tp *engine.Throughput) (*engine.Resource, error)
	ReadDatabase(ctx context.Context, id string) (*engine.Resource, error)
	ListDatabases(ctx context.Context) ([]document.Value, error)
	DeleteDatabase(ctx context.Context, id, ifMatch string) error

	CreateContainer(ctx context.Context, db string, body document.Value, tp *engine.Throughput) (*engine.Resource, error)
	ReadContainer(ctx context.Context, db, coll string) (*engine.Resource, *engine.ContainerUsage, error)
	ListContainers(ctx context.Context, db string) ([]document.Value, string, error)
	ReplaceContainer(ctx context.Context, db, coll string, body document.Value, ifMatch string) (*engine.Resource, error)
	DeleteContainer(ctx context.Context, db, coll, ifMatch string) error
	PartitionKeyRanges(ctx context.Context, db, coll string) ([]engine.KeyRange, *engine.Resource, error)
	ResolveRidLink(ctx context.Context, segs []string) (names []string, found bool, err error)
	ProvisionedFor(ctx context.Context, db, coll string) (engine.Provisioned, error)
	CreateAttachment(ctx context.Context, ref engine.AttachmentRef, body document.Value, upsert bool) (*engine.Resource, bool, error)
	ReadAttachment(ctx context.Context, ref engine.AttachmentRef, id string) (*engine.Resource, error)
	ReplaceAttachment(ctx context.Context, ref engine.AttachmentRef, id string, body document.Value, ifMatch string) (*engine.Resource, error)
	DeleteAttachment(ctx context.Context, ref engine.AttachmentRef, id, ifMatch string) error
	ListAttachments(ctx context.Context, ref engine.AttachmentRef) ([]document.Value, string, error)

	WriteItem(ctx context.Context, p engine.WriteItemParams) (*engine.ItemResult, error)
	ReadItem(ctx context.Context, p engine.ReadItemParams) (*engine.ItemResult, error)
	DeleteItem(ctx context.Context, p engine.DeleteItemParams) (*engine.ItemResult, error)
	PatchItem(ctx context.Context, p engine.PatchItemParams) (*engine.ItemResult, error)
	ReadFeed(ctx context.Context, p engine.FeedParams) (*engine.FeedPage, error)
	QueryItems(ctx context.Context, p engine.QueryParams) (*engine.FeedPage, error)
	DeleteAllItemsByPartitionKey(ctx context.Context, ref engine.ItemRef) (*engine.ItemResult, error)
	PlanFor(ctx context.Context, db, coll, text string, params map[string]document.Value, features string) ([]byte, error)
	QueryResources(ctx context.Context, p engine.ResourceQueryParams) (*engine.FeedPage, error)

	ListOffers(ctx context.Context) ([]document.Value, error)
	ReadOffer(ctx context.Context, rid string) (*engine.Resource, error)
	ReplaceOffer(ctx context.Context, rid string, body document.Value, ifMatch string, migrate engine.OfferMigration) (*engine.Resource, error)
}

// Authenticator checks a request's Authorization header (*auth.Verifier).
// Its errors are *auth.Error values carrying the status to answer.
type Authenticator interface {
	Verify(req auth.Request) (auth.Principal, error)
}

// Config configures the handler.
type Config struct {
	Engine  Engine
	Auth    Authenticator
	Logger  *slog.Logger
	CertPEM []byte // served at /_explorer/emulator.pem
	// MaxBodyBytes bounds request bodies (default 2 MiB + 64 KiB of slack
	// for the envelope of batches and queries).
	MaxBodyBytes int64
	// Extra routes mounted beside the API (the explorer page).
	Extra map[string]http.Handler
	// Backup, when set, writes a consistent copy of the data into a new
	// directory on the server's machine: POST /_mayfly/backup, signed with
	// the read-write account key (mayfly backup).
	Backup func(ctx context.Context, dir string) error
	// AccessLog logs every request at info level rather than debug.
	AccessLog bool
	// RequestTimeout bounds each request (DefaultRequestTimeout when
	// zero), on Clock.
	RequestTimeout time.Duration
	// Clock dates responses, times requests for the log and bounds them
	// (default: the system clock).
	Clock clock.Clock
	// ComputeGateway splits request paths as the service's compute gateway
	// does (parseComputePath) instead of as its routing gateway does.
	ComputeGateway bool
	// Consistency is the account's default consistency level, as the
	// account resource reports it (default Session).
	Consistency string
	// Limiter, when set, enforces each container's provisioned throughput
	// on the requests for its items (429 with a retry delay); nil admits
	// everything.
	Limiter *ratelimit.Limiter
	// Endpoint is the account endpoint advertised to a request (GET /);
	// nil means the request's own scheme and Host.
	Endpoint func(r *http.Request) string
}

// Handler serves the Cosmos DB REST API.
type Handler struct {
	eng      Engine
	auth     Authenticator
	log      *slog.Logger
	certPEM  []byte
	maxBody  int64
	extra    map[string]http.Handler
	backup   func(ctx context.Context, dir string) error
	logLevel slog.Level // of the line each request served logs
	endpoint func(r *http.Request) string
	timeout  time.Duration
	clock    clock.Clock
	// parsePath is parseResourcePath, or parseComputePath for a compute
	// gateway.
	parsePath func(escaped string) (*resourcePath, error)
	limiter   *ratelimit.Limiter
	consist   string
}

// New returns the API handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Engine == nil || cfg.Auth == nil {
		return nil, errors.New("httpapi: engine and authenticator are required")
	}
	h := &Handler{eng: cfg.Engine, auth: cfg.Auth, log: cfg.Logger, certPEM: cfg.CertPEM, maxBody: cfg.MaxBodyBytes, extra: cfg.Extra,
		endpoint: cfg.Endpoint, clock: cfg.Clock, backup: cfg.Backup, logLevel: slog.LevelDebug}
	if cfg.AccessLog {
		h.logLevel = slog.LevelInfo
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.endpoint == nil {
		h.endpoint = requestEndpoint
	}
	if h.clock == nil {
		h.clock = clock.Real{}
	}
	h.limiter = cfg.Limiter
	h.consist = cmp.Or(cfg.Consistency, "Session")
	h.parsePath = parseResourcePath
	if cfg.ComputeGateway {
		h.parsePath = parseComputePath
	}
	if h.maxBody <= 0 {
		h.maxBody = 2<<20 + 64<<10
	}
	h.timeout = cfg.RequestTimeout
	if h.timeout <= 0 {
		h.timeout = DefaultRequestTimeout
	}
	return h, nil
}

// request carries one request through the handler.
type request struct {
	w        http.ResponseWriter
	r        *http.Request
	path     *resourcePath
	activity string
	status   int
	aad      bool
	charge   float64
	// grant is what the resource token the request was made with allows;
	// nil for a master key or AAD token.
	grant *engine.Grant
	// owner is set when the read-write account key signed the request.
	owner bool
	// budget is the throughput a bulk request's operations draw on one by
	// one, under --enforce-throughput; nil otherwise.
	budget engine.OpBudget
}

func newActivityID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if x, ok := h.extra[r.URL.Path]; ok {
		x.ServeHTTP(w, r)
		return
	}
	start := h.clock.Now()
	r, release := h.withDeadline(r)
	defer release()
	rq := &request{w: w, r: r, activity: r.Header.Get("x-ms-activity-id")}
	if rq.activity == "" {
		rq.activity = newActivityID()
	}
	defer func() {
		if p := recover(); p != nil {
			h.log.Error("request panicked", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p), "activity_id", rq.activity)
			h.fail(rq, fmt.Errorf("panic: %v", p))
		}
		// Checked first: the arguments cost allocations even when the
		// line is not written.
		if h.log.Enabled(r.Context(), h.logLevel) {
			h.log.Log(r.Context(), h.logLevel, "request served", "method", r.Method, "path", r.URL.EscapedPath(), "status", rq.status,
				"duration_ms", float64(h.clock.Now().Sub(start).Microseconds())/1000, "charge", rq.charge, "activity_id", rq.activity)
		}
	}()
	h.serve(rq)
}

func (h *Handler) serve(rq *request) {
	r := rq.r
	if r.URL.Path == "/_explorer/emulator.pem" && r.Method == http.MethodGet {
		if len(h.certPEM) == 0 {
			// --no-tls: there is no certificate to give.
			h.fail(rq, &engine.Error{Code: engine.NotFound, Message: "The server serves plain HTTP (--no-tls): it has no certificate."})
			return
		}
		setHeader(rq.w.Header(), "Content-Type", "application/x-pem-file")
		rq.status = http.StatusOK
		rq.w.WriteHeader(http.StatusOK)
		_, _ = rq.w.Write(h.certPEM)
		return
	}
	p, err := h.parsePath(r.URL.EscapedPath())
	if err != nil {
		h.fail(rq, &engine.Error{Code: engine.BadRequest, Message: err.Error()})
		return
	}
	rq.path = p
	date := r.Header.Get("x-ms-date")
	if date == "" {
		date = r.Header.Get("Date")
	}
	areq := auth.Request{
		Verb: r.Method, ResourceType: p.typ, ResourceLink: p.link,
		Authorization: r.Header.Get("Authorization"), Date: date,
		Query: queryRequest(r, p.segs),
	}
	principal, err := h.auth.Verify(areq)
	// A master-key signature over the path as names that differs from the
	// one over its rid says which the client meant: a database named like
	// another's rid is not that other database.
	signedAsNames := err == nil && principal.Method == auth.MethodMasterKey && p.link != p.ridLink
	if err != nil && p.ridLink != "" {
		areq.ResourceLink = p.ridLink
		principal, err = h.auth.Verify(areq)
	}
	if err != nil {
		h.fail(rq, err)
		return
	}
	rq.aad = principal.Method == auth.MethodAAD
	rq.owner = principal.Method == auth.MethodMasterKey && !principal.ReadOnly
	if err := h.checkConsistency(r); err != nil {
		h.fail(rq, err)
		return
	}
	if err := checkVersion(r); err != nil {
		h.fail(rq, err)
		return
	}
	if err := checkSessionToken(r); err != nil {
		h.fail(rq, err)
		return
	}
	if err := checkIndexingDirective(r); err != nil {
		h.fail(rq, err)
		return
	}
	if p.ridLink != "" && !signedAsNames {
		names, byRid, err := h.eng.ResolveRidLink(r.Context(), p.segs)
		if err != nil {
			h.fail(rq, err)
			return
		}
		if byRid {
			p.segs = names
		}
	}
	if rq.aad {
		if err := authorizeAAD(rq); err != nil {
			h.fail(rq, err)
			return
		}
	}
	if principal.Method == auth.MethodResource {
		g, err := h.grantOf(rq, principal.Token)
		if err == nil {
			err = authorizeGrant(rq, g)
		}
		if err != nil {
			h.fail(rq, err)
			return
		}
		rq.grant = g
	}
	if h.limiter != nil && spendsThroughput(r, p.segs) {
		prov, err := h.eng.ProvisionedFor(r.Context(), p.segs[1], p.segs[3])
		switch {
		case err != nil || prov.RUPerSecond <= 0:
		case isBulk(r):
			// The service throttles a bulk request's operations one by
			// one (docs/protocol.md §7.2), so the batch admits each.
			rq.budget = opBudget{h.limiter, prov.Key, prov.RUPerSecond}
		default:
			if ok, wait := h.limiter.Admit(prov.Key, prov.RUPerSecond); !ok {
				setHeader(rq.w.Header(), "x-ms-retry-after-ms", strconv.FormatInt(max(wait.Milliseconds(), 1), 10))
				h.fail(rq, engine.RequestRateTooLarge())
				return
			}
			defer func() { h.limiter.Spend(prov.Key, prov.RUPerSecond, rq.charge) }()
		}
		// A container that cannot be found is the route's to report.
	}
	h.route(rq)
}

// spendsThroughput tells the requests a container's provisioned RU/s pays
// for: those on its items, and a stored procedure's run, whose reads and
// writes of items are charged to the request that ran it.
func spendsThroughput(r *http.Request, segs []string) bool {
	if len(segs) < 5 || segs[0] != "dbs" || segs[2] != "colls" {
		return false
	}
	return segs[4] == "docs" || segs[4] == "sprocs" && len(segs) == 6 && r.Method == http.MethodPost
}

// consistencyStrength orders the consistency levels, strongest last.
var consistencyStrength = map[string]int{"eventual": 0, "consistentprefix": 1, "session": 2, "boundedstaleness": 3, "strong": 4}

// checkConsistency refuses an x-ms-consistency-level the service refuses: a
// request may relax the account's level but not strengthen it, and the
// value must name a level. One node serves every level as strongly as
// Strong, so an accepted level changes nothing.
func (h *Handler) checkConsistency(r *http.Request) error {
	v := strings.TrimSpace(r.Header.Get("x-ms-consistency-level"))
	if v == "" {
		return nil
	}
	want, ok := consistencyStrength[strings.ToLower(v)]
	if !ok {
		return badRequest("Invalid value '%s' for header x-ms-consistency-level: use Strong, BoundedStaleness, Session, ConsistentPrefix or Eventual.", v)
	}
	if want > consistencyStrength[strings.ToLower(h.consist)] {
		return badRequest("ConsistencyLevel %s specified in the request is invalid when service is configured with consistency level %s. Ensure the request consistency level is not stronger than the service consistency level.", v, h.consist)
	}
	return nil
}

// checkIndexingDirective refuses an x-ms-indexing-directive that names no
// directive. Every item is indexed whatever it names (README, "Not served
// yet").
func checkIndexingDirective(r *http.Request) error {
	v := strings.TrimSpace(r.Header.Get("x-ms-indexing-directive"))
	switch strings.ToLower(v) {
	case "", "include", "exclude", "default":
		return nil
	}
	return badRequest("Invalid value '%s' for header x-ms-indexing-directive: use Include, Exclude or Default.", v)
}

// checkVersion refuses an x-ms-version that is not an API version: the
// service answers such a request with this 400. A version is a date; one
// newer than the service knows is served as the newest, and one missing is
// served as the newest, as the REST reference says.
func checkVersion(r *http.Request) error {
	v := strings.TrimSpace(r.Header.Get("x-ms-version"))
	if v == "" {
		return nil
	}
	if _, err := time.Parse(time.DateOnly, v); err != nil {
		return badRequest("Invalid API version. Ensure a valid x-ms-version header value is passed.")
	}
	return nil
}

// checkSessionToken refuses an x-ms-session-token that is not a session
// token, as the service does. A token is a comma-separated list of
// entries, each "rangeId:" (optional) and then an LSN ("12") or a vector
// ("version#globalLSN#region=LSN…"). One node is always caught up, so a
// well-formed token is honoured whatever it says.
func checkSessionToken(r *http.Request) error {
	v := r.Header.Get("x-ms-session-token")
	if v == "" {
		return nil
	}
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		if i := strings.IndexByte(entry, ':'); i >= 0 {
			if i == 0 {
				return invalidSessionToken(v)
			}
			entry = entry[i+1:]
		}
		parts := strings.Split(entry, "#")
		if !isLSN(parts[0]) || len(parts) > 1 && !isLSN(parts[1]) {
			return invalidSessionToken(v)
		}
		for _, region := range parts[min(len(parts), 2):] {
			id, lsn, ok := strings.Cut(region, "=")
			if !ok || !isLSN(id) || !isLSN(lsn) {
				return invalidSessionToken(v)
			}
		}
	}
	return nil
}

// isLSN reports whether s is a decimal integer (-1 stands for none).
func isLSN(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

func invalidSessionToken(v string) error {
	return badRequest("The session token provided '%s' is invalid.", v)
}

// statusOf maps engine codes to HTTP statuses: the only place this happens.
func statusOf(c engine.Code) (int, string) {
	switch c {
	case engine.BadRequest:
		return http.StatusBadRequest, "BadRequest"
	case engine.Unauthorized:
		return http.StatusUnauthorized, "Unauthorized"
	case engine.Forbidden:
		return http.StatusForbidden, "Forbidden"
	case engine.NotFound:
		return http.StatusNotFound, "NotFound"
	case engine.Conflict:
		return http.StatusConflict, "Conflict"
	case engine.PreconditionFailed:
		return http.StatusPreconditionFailed, "PreconditionFailed"
	case engine.RequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge, "RequestEntityTooLarge"
	case engine.NotModified:
		return http.StatusNotModified, "NotModified"
	case engine.FailedDependency:
		return http.StatusFailedDependency, "FailedDependency"
	case engine.TooManyRequests:
		return http.StatusTooManyRequests, "TooManyRequests"
	case engine.ServiceUnavailable:
		return http.StatusServiceUnavailable, "ServiceUnavailable"
	case engine.Gone:
		return http.StatusGone, "Gone"
	case engine.RequestTimeout:
		return http.StatusRequestTimeout, "RequestTimeout"
	}
	return http.StatusInternalServerError, "InternalServerError"
}

// fail writes err as a Cosmos-style error response.
func (h *Handler) fail(rq *request, err error) {
	var status int
	var code, msg string
	var sub int
	var extra []byte
	var ae *auth.Error
	var ee *engine.Error
	switch {
	case errors.As(err, &ae):
		status, code, msg, sub = ae.Status, ae.Code, ae.Message, ae.Substatus
	case errors.As(err, &ee):
		status, code = statusOf(ee.Code)
		msg, sub, extra = ee.Message, ee.SubStatus, ee.Additional
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		status, code, msg = http.StatusRequestTimeout, "RequestTimeout", "The request was cancelled or timed out."
	case errors.Is(err, storage.ErrCorrupt):
		// Damage is never answered with what could still be read: the
		// request fails, and the log names the damaged file.
		status, code = http.StatusInternalServerError, "InternalServerError"
		msg = "The data directory is damaged: stored data failed its checksum or a file is missing. The server log names the file; stop the server and run mayfly check --data-dir."
		h.log.Error("request met damaged data", "method", rq.r.Method, "path", rq.r.URL.EscapedPath(), "err", err, "activity_id", rq.activity)
	case errors.Is(err, storage.ErrConflict):
		// Another gateway's transaction won, and the store gave up
		// retrying: the service's answer to a write that lost a race
		// is 449 RetryWith, which every SDK retries.
		status, code = 449, "RetryWith"
		msg = "The request conflicted with a concurrent one; retry it."
	case errors.Is(err, storage.ErrNoSpace):
		// Nothing of the request was written; it succeeds once the
		// operator frees space.
		status, code = http.StatusInsufficientStorage, "InsufficientStorage"
		msg = "The server's disk is full: the write was refused and nothing of it was stored. Writes succeed again once space is freed; reads go on."
		h.log.Error("write refused: disk full", "method", rq.r.Method, "path", rq.r.URL.EscapedPath(), "err", err, "activity_id", rq.activity)
	case errors.Is(err, storage.ErrUnavailable):
		status, code = http.StatusServiceUnavailable, "ServiceUnavailable"
		msg = "The store could not complete the request; retry it. The server log says why."
		setHeader(rq.w.Header(), "x-ms-retry-after-ms", "1000")
		h.log.Error("store unavailable", "method", rq.r.Method, "path", rq.r.URL.EscapedPath(), "err", err, "activity_id", rq.activity)
	default:
		status, code = http.StatusInternalServerError, "InternalServerError"
		msg = "An internal error occurred; the activity id identifies it in the server log."
		h.log.Error("request failed", "method", rq.r.Method, "path", rq.r.URL.EscapedPath(), "err", err, "activity_id", rq.activity)
	}
	// Over HTTP/1, a body left unread in the socket turns the server's
	// close after the reply (the client's Connection: close, or a body
	// too long for Go's server to skip) into a reset, and the client,
	// still sending, never reads the reply: a 429 it would wait out and
	// retry becomes a failed write it cannot judge. What is left of the
	// body is read first, up to the most a request may carry: not when
	// the declared length is past what a read of the body (readBody) and
	// this one can take, since the reset then comes anyway, and a client
	// that declared more than it sends would hold the reply until the
	// read timeout.
	if rq.r.ProtoMajor == 1 && rq.r.Body != nil && rq.r.ContentLength <= 2*(h.maxBody+1) {
		_, _ = io.Copy(io.Discard, io.LimitReader(rq.r.Body, h.maxBody+1))
	}
	hd := rq.w.Header()
	h.commonHeaders(rq, 0)
	setHeader(hd, "x-ms-substatus", strconv.Itoa(sub))
	if status == http.StatusNotModified {
		rq.status = status
		rq.w.WriteHeader(status)
		return
	}
	setHeader(hd, "Content-Type", "application/json")
	body := []byte(`{"code":`)
	body = document.AppendString(body, code)
	body = append(body, `,"message":`...)
	body = document.AppendString(body, capMessage(msg)+"\r\nActivityId: "+rq.activity+", Mayfly")
	if len(extra) > 0 {
		body = append(body, `,"additionalErrorInfo":`...)
		body = document.AppendString(body, string(extra))
	}
	body = append(body, '}')
	rq.status = status
	rq.w.WriteHeader(status)
	_, _ = rq.w.Write(body)
}

// maxMessageBytes bounds an error message. Messages echo what the client
// sent (paths, ids, query text, the signed payload), and an echo as large
// as the request would double what a failed request costs to answer.
const maxMessageBytes = 1024

// capMessage cuts msg to maxMessageBytes at a character boundary.
func capMessage(msg string) string {
	if len(msg) <= maxMessageBytes {
		return msg
	}
	cut := maxMessageBytes
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "… (message truncated)"
}

func (h *Handler) commonHeaders(rq *request, charge float64) {
	hd := rq.w.Header()
	setHeader(hd, "x-ms-activity-id", rq.activity)
	if charge <= 0 {
		charge = engine.MetadataCharge
	}
	rq.charge = charge
	setHeader(hd, "x-ms-request-charge", string(appendCharge(nil, charge)))
	if headerValue(hd, "x-ms-session-token") == "" {
		setHeader(hd, "x-ms-session-token", "0:-1#1")
	}
	if v := strings.TrimSpace(rq.r.Header.Get("x-ms-version")); v != "" && v < vectorSessionVersion {
		setHeader(hd, "x-ms-session-token", simpleSessionToken(headerValue(hd, "x-ms-session-token")))
	}
	setHeader(hd, "x-ms-schemaversion", "1.18")
	setHeader(hd, "x-ms-serviceversion", "version=2.14.0.0")
	setHeader(hd, "x-ms-gatewayversion", "version=2.14.0")
	setHeader(hd, "Date", h.clock.Now().UTC().Format(http.TimeFormat))
}

// appendCharge appends a request charge as the service reports one: to two
// decimals, so that a sum of weights reads 3.06 rather than
// 3.0599999999999996.
func appendCharge(b []byte, charge float64) []byte {
	return strconv.AppendFloat(b, math.Round(charge*100)/100, 'f', -1, 64)
}

// reply writes a JSON body with the common headers. It reports whether
// the body was written whole, after which the caller may reuse it: both
// HTTP/1 and HTTP/2 response writers have copied or sent the bytes by
// the time Write returns without an error.
func (h *Handler) reply(rq *request, status int, charge float64, body []byte) bool {
	h.commonHeaders(rq, charge)
	hd := rq.w.Header()
	if body != nil {
		setHeader(hd, "Content-Type", "application/json")
		setHeader(hd, "Content-Length", strconv.Itoa(len(body)))
	}
	rq.status = status
	rq.w.WriteHeader(status)
	if body == nil {
		return true
	}
	_, err := rq.w.Write(body)
	return err == nil
}

// pageBodies holds the buffers feed and query pages are rendered into. A
// page of a hundred documents is some 70 KB, written once and dropped: a
// fifth of all a range query allocated, and the collector's work with it
// (docs/benchmarks.md, "A page's body from a pool").
var pageBodies sync.Pool // of *[]byte

// maxPooledBody bounds the buffers kept for reuse: a page may be
// megabytes, and a pool of such buffers would hold them between requests.
const maxPooledBody = 256 << 10

// replyPage answers 200 with a feed or query page's envelope, rendered
// into a reused buffer.
func (h *Handler) replyPage(rq *request, charge float64, rid, key string, items [][]byte) {
	bp, _ := pageBodies.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	body := appendFeedBody((*bp)[:0], rid, key, items)
	if h.reply(rq, http.StatusOK, charge, body) && cap(body) <= maxPooledBody {
		*bp = body
		pageBodies.Put(bp)
	}
}

// appendFeedBody renders the envelope of a feed or query page onto b.
func appendFeedBody(b []byte, rid, key string, items [][]byte) []byte {
	// Grown once to the final size: a page may hold megabytes, and
	// growing the buffer as it filled copied them over and over.
	size := len(rid) + len(key) + 48
	for _, it := range items {
		size += len(it) + 1
	}
	b = slices.Grow(b, size)
	b = append(b, `{"_rid":`...)
	b = document.AppendString(b, rid)
	b = append(b, ',')
	b = document.AppendString(b, key)
	b = append(b, ":["...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, `],"_count":`...)
	b = strconv.AppendInt(b, int64(len(items)), 10)
	return append(b, '}')
}

// vectorSessionVersion is the first API version whose session tokens are
// vectors, {range}:{version}#{globalLSN}[#{region}={LSN}...]; clients of
// earlier versions (the documentdb 1.x SDK sends 2017-11-15) read the
// simple form {range}:{globalLSN}, and documentdb 1.x throws, from inside
// the response callback, on a token it cannot read as an integer.
const vectorSessionVersion = "2018-06-18"

// simpleSessionToken turns a vector session token (each comma-separated
// part) into the simple form.
func simpleSessionToken(tok string) string {
	parts := strings.Split(tok, ",")
	for i, p := range parts {
		rng, vec, ok := strings.Cut(p, ":")
		if !ok {
			continue
		}
		if _, lsn, ok := strings.Cut(vec, "#"); ok {
			lsn, _, _ = strings.Cut(lsn, "#")
			parts[i] = rng + ":" + lsn
		}
	}
	return strings.Join(parts, ",")
}
