package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/vector"
	"github.com/mayfly-db/mayfly/internal/script"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// A container's server-side scripts (stored procedures, triggers and
// user-defined functions) are records under the container:
//
//	'j'+collRid(8)+kind+id → scriptRecord
//
// so they go with the container when it is dropped (containerFamilies).
const famScript = 'j'

// ScriptKind names the three kinds of script, as their feeds are named.
type ScriptKind string

// The script kinds.
const (
	StoredProcedures ScriptKind = "sprocs"
	Triggers         ScriptKind = "triggers"
	Functions        ScriptKind = "udfs"
)

// known reports whether k is one of the three kinds.
func (k ScriptKind) known() bool {
	return k == StoredProcedures || k == Triggers || k == Functions
}

func (k ScriptKind) tag() byte {
	switch k {
	case Triggers:
		return 't'
	case Functions:
		return 'f'
	}
	return 's'
}

// noun is how messages name one script of the kind.
func (k ScriptKind) noun() string {
	switch k {
	case Triggers:
		return "Trigger"
	case Functions:
		return "User-defined function"
	}
	return "Stored procedure"
}

// scriptRid is the rid of a script made as the container's n-th rid, in
// the service's layout for what lives under a container: the container's
// 8 bytes and 8 more, a little-endian number whose last byte's high nibble
// names the type (8 a stored procedure, 7 a trigger, 6 a function; 0 a
// document). The DocumentDB-era SDKs parse the rid of each link they send
// to file session tokens by container, and throw, from inside the
// response's callback, on a rid of no shape they know. Scripts made
// before this layout keep their 12-byte rids.
func scriptRid(collRid []byte, kind ScriptKind, n uint64) []byte {
	rid := binary.LittleEndian.AppendUint64(bytes.Clone(collRid), n&(1<<56-1))
	rid[len(collRid)+7] |= kind.ridType() << 4
	return rid
}

// ridType is the kind's type nibble in a rid (scriptRid).
func (k ScriptKind) ridType() byte {
	switch k {
	case Triggers:
		return 7
	case Functions:
		return 6
	}
	return 8
}

// countScripts counts container c's scripts of each kind, in one walk of
// their records: a container holds few.
func countScripts(r storage.Reader, c *containerRecord) (map[ScriptKind]int, error) {
	prefix := collPrefix(famScript, c.Rid)
	counts := map[ScriptKind]int{}
	err := scanRange(r, prefix, prefixEnd(prefix), func(k, _ []byte) (bool, error) {
		for _, kind := range []ScriptKind{StoredProcedures, Triggers, Functions} {
			if len(k) > len(prefix) && k[len(prefix)] == kind.tag() {
				counts[kind]++
			}
		}
		return true, nil
	})
	return counts, err
}

func scriptPrefix(collRid []byte, kind ScriptKind) []byte {
	return append(collPrefix(famScript, collRid), kind.tag())
}

func scriptKey(collRid []byte, kind ScriptKind, id string) []byte {
	return append(scriptPrefix(collRid, kind), id...)
}

type scriptRecord struct {
	ID               string `json:"id"`
	Body             string `json:"body"`
	TriggerType      string `json:"triggerType,omitempty"`
	TriggerOperation string `json:"triggerOperation,omitempty"`
	Rid              []byte `json:"rid"` // scriptRid; container rid (8) + number (4) before it
	Ts               int64  `json:"ts"`
	Etag             string `json:"etag"`
}

func (s *scriptRecord) resource(kind ScriptKind, dbRid []byte) *Resource {
	fields := []document.Field{
		{Name: "id", Value: document.Str(s.ID)},
		{Name: "body", Value: document.Str(s.Body)},
	}
	if kind == Triggers {
		fields = append(fields,
			document.Field{Name: "triggerType", Value: document.Str(s.TriggerType)},
			document.Field{Name: "triggerOperation", Value: document.Str(s.TriggerOperation)})
	}
	rid := ridString(s.Rid)
	fields = append(fields,
		document.Field{Name: "_rid", Value: document.Str(rid)},
		document.Field{Name: "_self", Value: document.Str("dbs/" + ridString(dbRid) + "/colls/" + ridString(s.Rid[:8]) + "/" + string(kind) + "/" + rid + "/")},
		document.Field{Name: "_etag", Value: document.Str(s.Etag)},
		document.Field{Name: "_ts", Value: document.Int(s.Ts)},
	)
	return &Resource{Body: document.Obj(fields), Etag: s.Etag, Rid: rid}
}

// parseScript checks a script's body as the service does: an id, a body
// that compiles, and for a trigger its type and operation.
func parseScript(kind ScriptKind, body document.Value) (*scriptRecord, *Error) {
	id, derr := userBodyID(body)
	if derr != nil {
		return nil, derr
	}
	src := body.Get("body")
	if src.Kind() != document.String {
		return nil, errorf(BadRequest, "The input content is invalid because the required property, 'body', is missing.")
	}
	// The body is not compiled here: the service keeps any string and
	// reports a body that does not compile when it runs (scriptFailed).
	rec := &scriptRecord{ID: id, Body: src.Str()}
	if kind == Triggers {
		rec.TriggerType = body.Get("triggerType").Str()
		rec.TriggerOperation = body.Get("triggerOperation").Str()
		if !oneOf(rec.TriggerType, "Pre", "Post") {
			return nil, errorf(BadRequest, "The value '%s' of triggerType is invalid: it must be Pre or Post.", rec.TriggerType)
		}
		if !oneOf(rec.TriggerOperation, "All", "Create", "Update", "Delete", "Replace") {
			return nil, errorf(BadRequest, "The value '%s' of triggerOperation is invalid: it must be All, Create, Update, Delete or Replace.", rec.TriggerOperation)
		}
	}
	return rec, nil
}

func oneOf(s string, set ...string) bool {
	for _, x := range set {
		if strings.EqualFold(s, x) {
			return true
		}
	}
	return false
}

// scriptNotFound is the 404 of a missing script.
func scriptNotFound(kind ScriptKind, id string) *Error {
	return errorf(NotFound, "Resource Not Found. %s '%s' does not exist.", kind.noun(), id)
}

// WriteScript creates a script (id == "") or replaces script id (a new id
// in the body renames it). ifMatch, when set and not "*", must be the
// script's etag.
func (e *Engine) WriteScript(ctx context.Context, db, coll string, kind ScriptKind, id string, body document.Value, ifMatch string) (*Resource, error) {
	res, _, err := e.writeScript(ctx, db, coll, kind, id, body, ifMatch, false)
	return res, err
}

// UpsertScript creates the script the body names, or replaces the one with
// its id; created says which.
func (e *Engine) UpsertScript(ctx context.Context, db, coll string, kind ScriptKind, body document.Value) (res *Resource, created bool, err error) {
	return e.writeScript(ctx, db, coll, kind, "", body, "", true)
}

func (e *Engine) writeScript(ctx context.Context, db, coll string, kind ScriptKind, target string, body document.Value, ifMatch string, upsert bool) (*Resource, bool, error) {
	rec, derr := parseScript(kind, body)
	if derr != nil {
		return nil, false, derr
	}
	now, err := e.Now(ctx)
	if err != nil {
		return nil, false, err
	}
	var dbRid []byte
	created := false
	err = e.store.Update(ctx, func(tx storage.Txn) error {
		c, err := e.loadContainer(tx, db, coll)
		if err != nil {
			return err
		}
		dbRid = c.DBRid
		id := target
		if upsert {
			found, err := getJSON(tx, scriptKey(c.Rid, kind, rec.ID), &scriptRecord{})
			if err != nil {
				return err
			}
			if found {
				id = rec.ID
			}
		}
		created = id == ""
		var old scriptRecord
		if id != "" {
			found, err := getJSON(tx, scriptKey(c.Rid, kind, id), &old)
			if err != nil {
				return err
			}
			if !found {
				return scriptNotFound(kind, id)
			}
			if staleMatch(ifMatch, old.Etag) {
				return preconditionFailed()
			}
		}
		if id == "" || rec.ID != id {
			if found, err := getJSON(tx, scriptKey(c.Rid, kind, rec.ID), &scriptRecord{}); err != nil {
				return err
			} else if found {
				return conflict()
			}
		}
		n, err := nextCounter(tx, "rid")
		if err != nil {
			return err
		}
		if id == "" {
			rec.Rid = scriptRid(c.Rid, kind, n)
		} else {
			rec.Rid = old.Rid
			if err := tx.Delete(scriptKey(c.Rid, kind, id)); err != nil {
				return err
			}
		}
		rec.Ts, rec.Etag = now.Unix(), etagFor(rec.Rid, n)
		return setJSON(tx, scriptKey(c.Rid, kind, rec.ID), rec)
	})
	if err != nil {
		return nil, false, err
	}
	return rec.resource(kind, dbRid), created, nil
}

// loadScript reads script id of container c.
func loadScript(r storage.Reader, c *containerRecord, kind ScriptKind, id string) (*scriptRecord, error) {
	var rec scriptRecord
	found, err := getJSON(r, scriptKey(c.Rid, kind, id), &rec)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, scriptNotFound(kind, id)
	}
	return &rec, nil
}

// ReadScript returns script id.
func (e *Engine) ReadScript(ctx context.Context, db, coll string, kind ScriptKind, id string) (*Resource, error) {
	var res *Resource
	err := e.store.View(ctx, func(r storage.Reader) error {
		c, err := e.loadContainer(r, db, coll)
		if err != nil {
			return err
		}
		rec, err := loadScript(r, c, kind, id)
		if err != nil {
			return err
		}
		res = rec.resource(kind, c.DBRid)
		return nil
	})
	return res, err
}

// DeleteScript removes script id.
func (e *Engine) DeleteScript(ctx context.Context, db, coll string, kind ScriptKind, id, ifMatch string) error {
	return e.store.Update(ctx, func(tx storage.Txn) error {
		c, err := e.loadContainer(tx, db, coll)
		if err != nil {
			return err
		}
		rec, err := loadScript(tx, c, kind, id)
		if err != nil {
			return err
		}
		if staleMatch(ifMatch, rec.Etag) {
			return preconditionFailed()
		}
		return tx.Delete(scriptKey(c.Rid, kind, id))
	})
}

// ListScripts returns the scripts of a kind in id order, and the
// container's rid.
func (e *Engine) ListScripts(ctx context.Context, db, coll string, kind ScriptKind) ([]document.Value, string, error) {
	var out []document.Value
	var collRid string
	err := e.store.View(ctx, func(r storage.Reader) error {
		c, err := e.loadContainer(r, db, coll)
		if err != nil {
			return err
		}
		collRid = c.ridString()
		return scanPrefix(r, scriptPrefix(c.Rid, kind), func(_, v []byte) (bool, error) {
			var rec scriptRecord
			if err := unmarshalRecord(v, &rec); err != nil {
				return false, err
			}
			out = append(out, rec.resource(kind, c.DBRid).Body)
			return true, nil
		})
	})
	return out, collRid, err
}

// ProcedureCharge is the request units one execution of a stored
// procedure may spend; past it, its document operations are not accepted
// (they return false), and a bulk import returns how far it got.
const ProcedureCharge = 10000

// ExecuteParams is a call of a stored procedure: in one logical
// partition (ItemRef's key), with its parameters as a JSON array.
type ExecuteParams struct {
	ItemRef
	ID     string
	Params []byte
	// Logging keeps what the procedure logs, for the client that asked
	// for it (script.Limits.Logging).
	Logging bool
}

// ProcedureResult is what a stored procedure answered.
type ProcedureResult struct {
	Body   []byte // JSON; nil when the procedure set none
	Logs   []string
	Charge float64
}

// ExecuteProcedure runs stored procedure p.ID in one transaction: every
// document operation of the script commits together when it returns, and
// none does when it throws, runs out of time or fails.
func (e *Engine) ExecuteProcedure(ctx context.Context, p ExecuteParams) (*ProcedureResult, error) {
	now, done, err := e.judging(ctx, p.DB, p.Coll)
	if err != nil {
		return nil, err
	}
	defer done()
	var res *ProcedureResult
	var coll *containerRecord
	err = e.updateScripted(ctx, p.ItemRef, func(tx storage.Txn) error {
		c, err := e.loadContainer(tx, p.DB, p.Coll)
		if err != nil {
			return err
		}
		coll = c
		rec, err := loadScript(tx, c, StoredProcedures, p.ID)
		if err != nil {
			return err
		}
		pk, derr := c.pointKey(p.ItemRef)
		if derr != nil {
			return derr
		}
		sc := &scriptCollection{e: e, tx: tx, c: c, ref: p.ItemRef, pk: pk, now: now, ctx: ctx}
		out, err := script.RunProcedure(ctx, rec.Body, p.Params, sc, script.Limits{Charge: ProcedureCharge, Spent: func() float64 { return sc.charge }, Logging: p.Logging})
		var se *script.ScriptError
		switch {
		case errors.As(err, &se):
			return scriptFailed(se)
		case errors.Is(err, script.ErrTimeout):
			return errorf(RequestTimeout, "The stored procedure '%s' ran past its time limit; none of its writes were kept.", p.ID)
		case err != nil:
			return err
		}
		res = &ProcedureResult{Body: out.Body, Logs: out.Logs, Charge: sc.charge}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Charge = max(res.Charge, 1)
	e.charge(coll, res.Charge)
	return res, nil
}

// scriptCollection is a script's collection: the engine's item operations
// in the script's transaction, limited to its logical partition.
type scriptCollection struct {
	e      *Engine
	ctx    context.Context
	tx     storage.Txn
	c      *containerRecord
	ref    ItemRef
	pk     []byte
	now    time.Time
	charge float64
}

var _ script.Collection = (*scriptCollection)(nil)

func (s *scriptCollection) SelfLink() string {
	return "dbs/" + ridString(s.c.DBRid) + "/colls/" + s.c.ridString() + "/"
}

func (s *scriptCollection) AltLink() string { return "dbs/" + s.ref.DB + "/colls/" + s.ref.Coll }

// scriptError turns an engine error into one the script can catch, with
// the number the server-side API gives it (the service's error numbers,
// which are its HTTP statuses); other errors end the script.
func scriptError(err error) error {
	var ee *Error
	if !errors.As(err, &ee) {
		return err
	}
	numbers := map[Code]int{BadRequest: 400, Forbidden: 403, NotFound: 404, Conflict: 409, PreconditionFailed: 412,
		RequestEntityTooLarge: 413, TooManyRequests: 429, RequestTimeout: 408}
	n, ok := numbers[ee.Code]
	if !ok {
		return err
	}
	return &script.Error{Status: n, Message: ee.Message}
}

func (s *scriptCollection) Create(doc []byte, upsert bool) ([]byte, error) {
	mode := ModeCreate
	if upsert {
		mode = ModeUpsert
	}
	return s.write(doc, WriteItemParams{ItemRef: s.ref, Mode: mode})
}

func (s *scriptCollection) Replace(link string, doc []byte, ifMatch string) ([]byte, error) {
	id, err := s.idOf(link)
	if err != nil {
		return nil, err
	}
	return s.write(doc, WriteItemParams{ItemRef: s.ref, Mode: ModeReplace, ID: id, IfMatch: ifMatch})
}

// write stores a document as WriteItem would, inside the transaction.
func (s *scriptCollection) write(doc []byte, p WriteItemParams) ([]byte, error) {
	if len(doc) > s.e.maxItem {
		return nil, scriptError(errorf(RequestEntityTooLarge, "Request size is too large."))
	}
	body, err := document.Parse(doc)
	if err != nil {
		return nil, scriptError(errorf(BadRequest, "The document is invalid: %v", err))
	}
	if id := body.Get("id"); p.Mode != ModeReplace && (id.Kind() == document.Undefined || id.Kind() == document.Null || id.Kind() == document.String && id.Str() == "") {
		// createDocument names a document without an id (or with a null
		// or empty one) with a new GUID, as the service does unless told
		// not to.
		body = body.With("id", document.Str(newGUID()))
	}
	id, derr := bodyID(body)
	if derr == nil {
		derr = validateItemID(id)
	}
	if derr == nil && p.Mode == ModeReplace && id != p.ID {
		derr = errorf(BadRequest, "The id '%s' in the body does not match the id '%s' addressed.", id, p.ID)
	}
	if derr != nil {
		return nil, scriptError(derr)
	}
	res, err := s.e.writeItemTx(s.tx, s.c, p, id, body.Without(itemSystemProps...), s.now)
	if err != nil {
		return nil, scriptError(err)
	}
	s.charge += writeCharge(len(res.Body))
	return res.Body, nil
}

func (s *scriptCollection) Read(link string) ([]byte, error) {
	id, err := s.idOf(link)
	if err != nil {
		return nil, err
	}
	live, _, err := s.e.findItem(s.tx, s.c, s.pk, id, s.now)
	if err != nil {
		return nil, err
	}
	if live == nil {
		return nil, scriptError(notFound())
	}
	s.charge += readCharge(len(live.rec.json))
	return bytes.Clone(live.rec.json), nil
}

func (s *scriptCollection) Delete(link, ifMatch string) error {
	id, err := s.idOf(link)
	if err != nil {
		return err
	}
	if _, err := s.e.deleteItemTx(s.tx, s.c, DeleteItemParams{ItemRef: s.ref, ID: id, IfMatch: ifMatch}, s.now); err != nil {
		return scriptError(err)
	}
	s.charge += writeCharge(0)
	return nil
}

func (s *scriptCollection) Query(text string, params map[string]any, pageSize int, continuation string) ([][]byte, string, error) {
	vals := make(map[string]document.Value, len(params))
	for name, v := range params {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, "", scriptError(errorf(BadRequest, "query parameter %s: %v", name, err))
		}
		dv, err := document.Parse(b)
		if err != nil {
			return nil, "", scriptError(errorf(BadRequest, "query parameter %s: %v", name, err))
		}
		vals[name] = dv
	}
	st := readStats{budget: s.e.budget(s.ctx)}
	fns := &udfs{}
	fns.bind(s.tx, s.c)
	defer fns.close()
	prog, err := compileQueryWith(text, vals, s.now, st.budget, fns)
	if err != nil {
		return nil, "", scriptError(err)
	}
	page := &FeedPage{}
	p := QueryParams{ItemRef: s.ref, Query: text, Params: vals, MaxItemCount: pageSize, Continuation: continuation, inScript: true}
	if err := s.e.queryIn(s.tx, s.c, p, prog, s.now, &st, page); err != nil {
		return nil, "", scriptError(err)
	}
	s.charge += queryCharge(st.records, st.entries, len(page.Items))
	return page.Items, page.Continuation, nil
}

// idOf takes the document id out of a link to it: by name
// (dbs/db/colls/c/docs/id) or by the container's self link and the
// document's rid, which is looked up. A link into another collection is
// an error: the script's collection is the only one it reaches.
func (s *scriptCollection) idOf(link string) (string, error) {
	i := strings.LastIndex(strings.TrimSuffix(link, "/"), "/docs/")
	if i < 0 {
		return "", scriptError(errorf(BadRequest, "'%s' is not a link to a document.", link))
	}
	prefix, last := strings.Trim(link[:i], "/"), strings.TrimSuffix(link[i+len("/docs/"):], "/")
	if prefix == s.AltLink() {
		return last, nil // by name
	}
	if prefix != strings.Trim(s.SelfLink(), "/") {
		return "", scriptError(errorf(BadRequest, "'%s' is not a link to a document of the script's collection (%s or %s).", link, s.AltLink(), s.SelfLink()))
	}
	itemRid, ok := parseRid(last)
	if !ok || len(itemRid) != itemRidLen || !bytes.Equal(itemRid[:collRidLen], s.c.Rid) {
		return "", scriptError(notFound())
	}
	rec, err := itemByRid(s.tx, s.c, itemSeq(s.c.Rid, itemRid))
	if err != nil {
		return "", scriptError(err)
	}
	return rec.id, nil
}

func newGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:])
}

// udfs gives a query what it needs of its container once the container is
// read: its user-defined functions, bound to the reader and container the
// query runs in and loaded by name on first use, and its vector embedding
// policy.
type udfs struct {
	r       storage.Reader
	c       *containerRecord
	fns     *script.Functions
	vectors vector.Policy
	planar  bool
}

func (u *udfs) bind(r storage.Reader, c *containerRecord) {
	u.r, u.c, u.vectors, u.planar = r, c, c.vectors, c.planar
}

// call is the query evaluator's UDF hook. A function that throws, or one
// that does not exist, fails the query with a 400.
func (u *udfs) call(name string, args []document.Value) (document.Value, error) {
	if u.r == nil {
		return document.Undef, fmt.Errorf("no container to find udf.%s in", name)
	}
	if u.fns == nil {
		u.fns = script.NewFunctions(func(name string) (string, error) {
			rec, err := loadScript(u.r, u.c, Functions, name)
			if err != nil {
				return "", err
			}
			return rec.Body, nil
		}, 0)
	}
	in := make([][]byte, len(args))
	for i, a := range args {
		if a.Kind() != document.Undefined {
			in[i] = a.JSON()
		}
	}
	out, err := u.fns.Call(name, in)
	if err != nil {
		var se *script.ScriptError
		if errors.As(err, &se) {
			return document.Undef, fmt.Errorf("%s", se.Message)
		}
		return document.Undef, err
	}
	if out == nil {
		return document.Undef, nil
	}
	return document.Parse(out)
}

func (u *udfs) close() {
	if u.fns != nil {
		u.fns.Close()
	}
}

// TriggerNames are the triggers a write names
// (x-ms-documentdb-pre-trigger-include, …-post-trigger-include).
type TriggerNames struct {
	Pre, Post []string
}

func (t TriggerNames) empty() bool { return len(t.Pre) == 0 && len(t.Post) == 0 }

// operationName is how a trigger sees the write mode.
func operationName(m WriteMode) string {
	switch m {
	case ModeReplace:
		return "Replace"
	case ModeUpsert:
		return "Upsert"
	}
	return "Create"
}

// triggerFor loads trigger id and checks that it may run as typ ("Pre" or
// "Post") for operation op.
func triggerFor(r storage.Reader, c *containerRecord, id, typ, op string) (*scriptRecord, error) {
	rec, err := loadScript(r, c, Triggers, id)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(rec.TriggerType, typ) {
		return nil, errorf(BadRequest, "Trigger '%s' is a %s-trigger and cannot be used as a %s-trigger.", id, strings.ToLower(rec.TriggerType), strings.ToLower(typ))
	}
	switch to := rec.TriggerOperation; {
	case strings.EqualFold(to, "All"), strings.EqualFold(to, op):
	case op == "Upsert" && (strings.EqualFold(to, "Create") || strings.EqualFold(to, "Replace")):
	default:
		return nil, errorf(BadRequest, "Trigger '%s' runs on %s operations and cannot be used with a %s.", id, to, strings.ToLower(op))
	}
	return rec, nil
}

// scriptFailed is the 400 of a stored procedure or trigger that threw or
// did not compile.
func scriptFailed(se *script.ScriptError) *Error {
	if se.Compile {
		return errorf(BadRequest, "Encountered exception while compiling Javascript. Exception = %s", se.Message)
	}
	return errorf(BadRequest, "Encountered exception while executing Javascript. Exception = %s", se.Message)
}

// runTrigger runs one trigger in the operation's transaction.
func (e *Engine) runTrigger(ctx context.Context, tx storage.Txn, c *containerRecord, ref ItemRef, now time.Time, rec *scriptRecord, call *script.TriggerCall) (*script.Result, error) {
	pk, derr := c.pointKey(ref)
	if derr != nil {
		return nil, derr
	}
	sc := &scriptCollection{e: e, tx: tx, c: c, ref: ref, pk: pk, now: now, ctx: ctx}
	res, err := script.RunTrigger(ctx, rec.Body, call, sc, script.Limits{})
	var se *script.ScriptError
	switch {
	case errors.As(err, &se):
		return nil, scriptFailed(se)
	case errors.Is(err, script.ErrTimeout):
		return nil, errorf(RequestTimeout, "Trigger '%s' ran past its time limit; the operation was not kept.", rec.ID)
	}
	return res, err
}

// writeWithTriggers is writeItemTx with the write's pre-triggers run on
// its document first and its post-triggers after, all in its transaction:
// a failure in any of them keeps nothing.
func (e *Engine) writeWithTriggers(ctx context.Context, tx storage.Txn, c *containerRecord, p WriteItemParams, id string, body document.Value, now time.Time) (*ItemResult, error) {
	op := operationName(p.Mode)
	for _, name := range p.Triggers.Pre {
		rec, err := triggerFor(tx, c, name, "Pre", op)
		if err != nil {
			return nil, err
		}
		res, err := e.runTrigger(ctx, tx, c, p.ItemRef, now, rec, &script.TriggerCall{Operation: op, Request: body.JSON()})
		if err != nil {
			return nil, err
		}
		if body, err = document.Parse(res.Body); err != nil || body.Kind() != document.Object {
			shown := bytes.TrimSpace(res.Body)
			if len(shown) > 100 {
				shown = append(shown[:100:100], "…"...)
			}
			return nil, errorf(BadRequest, "Trigger '%s' left a request body that is not a document: %s", name, shown)
		}
		body = body.Without(itemSystemProps...)
		// A create or upsert stores the document under the id the trigger
		// leaves; a replace is addressed by its id, which may not change.
		newID, derr := bodyID(body)
		switch {
		case derr != nil || (newID != id && p.Mode == ModeReplace):
			return nil, errorf(BadRequest, "Trigger '%s' changed the document's id.", name)
		case newID != id:
			if derr := validateItemID(newID); derr != nil {
				return nil, derr
			}
			id = newID
		}
	}
	out, err := e.writeItemTx(tx, c, p, id, body, now)
	if err != nil {
		return nil, err
	}
	for _, name := range p.Triggers.Post {
		rec, err := triggerFor(tx, c, name, "Post", op)
		if err != nil {
			return nil, err
		}
		res, err := e.runTrigger(ctx, tx, c, p.ItemRef, now, rec, &script.TriggerCall{Operation: op, Request: body.JSON(), Response: out.Body})
		if err != nil {
			return nil, err
		}
		// A post-trigger's getResponse().setBody() replaces what the
		// client is answered with, not what is stored.
		if res.Body != nil {
			out.Body = res.Body
		}
	}
	return out, nil
}

// deleteWithTriggers is deleteItemTx with the delete's triggers.
func (e *Engine) deleteWithTriggers(ctx context.Context, tx storage.Txn, c *containerRecord, p DeleteItemParams, now time.Time) (*ItemResult, error) {
	for _, name := range p.Triggers.Pre {
		rec, err := triggerFor(tx, c, name, "Pre", "Delete")
		if err != nil {
			return nil, err
		}
		if _, err := e.runTrigger(ctx, tx, c, p.ItemRef, now, rec, &script.TriggerCall{Operation: "Delete"}); err != nil {
			return nil, err
		}
	}
	out, err := e.deleteItemTx(tx, c, p, now)
	if err != nil {
		return nil, err
	}
	for _, name := range p.Triggers.Post {
		rec, err := triggerFor(tx, c, name, "Post", "Delete")
		if err != nil {
			return nil, err
		}
		if _, err := e.runTrigger(ctx, tx, c, p.ItemRef, now, rec, &script.TriggerCall{Operation: "Delete", Response: []byte("{}")}); err != nil {
			return nil, err
		}
	}
	return out, nil
}
