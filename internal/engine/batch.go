package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// Transactional batch and bulk (docs/protocol.md §7.1, §7.2).
//
// An atomic batch runs every operation in one storage transaction, in
// order, so each operation sees the writes of those before it. The first
// operation that fails aborts the transaction: nothing is committed, the
// failing operation reports its own error and every other operation
// FailedDependency. A non-atomic batch (the JavaScript SDK's bulk) runs
// each operation in a transaction of its own and reports each outcome.
//
// Every operation is judged with the batch's one "now" (ttl.md B6): an item
// that has expired is absent to every operation of the batch, and every
// write restarts the countdown of what it writes (ttl.md A2, A3).

// BatchOpType is what one operation of a batch does.
type BatchOpType uint8

// The batch operation types, named as on the wire ("operationType").
const (
	BatchCreate BatchOpType = iota + 1
	BatchUpsert
	BatchReplace
	BatchRead
	BatchDelete
	BatchPatch
)

var batchOpNames = [...]string{BatchCreate: "Create", BatchUpsert: "Upsert", BatchReplace: "Replace", BatchRead: "Read", BatchDelete: "Delete", BatchPatch: "Patch"}

func (t BatchOpType) String() string {
	if int(t) < len(batchOpNames) && batchOpNames[t] != "" {
		return batchOpNames[t]
	}
	return "Unknown"
}

// Batch limits, as the service's (docs/protocol.md §12).
const (
	MaxBatchOps   = 100
	MaxBatchBytes = 2 << 20
)

// BatchOp is one operation of a batch.
type BatchOp struct {
	Type    BatchOpType
	ID      string // the addressed item: Read, Replace, Delete, Patch
	IfMatch string
	// IfNoneMatch is for reads: a match answers NotModified. A read's
	// IfMatch that matches answers NotModified too, as the service answers
	// it in a batch (the .NET SDK's emulator tests read with IfMatchEtag in
	// a batch and expect 304); one that does not match is ignored.
	IfNoneMatch string
	// Body is "resourceBody": the item of a Create, Upsert or Replace, the
	// patch specification ({"operations":[…],"condition"?} or a bare array
	// of operations) of a Patch. Undefined when absent.
	Body document.Value
	// PartitionKey is the operation's own key ("partitionKey", which the
	// JavaScript SDK sends as a JSON string); HasKey says it was given.
	PartitionKey partition.Key
	HasKey       bool

	// pre and budget are a Patch's conditions judged before the
	// transaction and the budget of those judged in it (condition.go).
	pre    verdicts
	budget *eval.Budget
}

// BatchParams is a batch of operations on one container.
type BatchParams struct {
	// ItemRef carries the x-ms-documentdb-partitionkey header: in an atomic
	// batch every operation must be under that key.
	ItemRef
	Ops []BatchOp
	// Atomic is x-ms-cosmos-batch-atomic: all operations commit or none.
	Atomic bool
	// ContinueOnError is x-ms-cosmos-batch-continue-on-error, for a
	// non-atomic batch: when false, the operations after the first failure
	// are not run and report FailedDependency.
	ContinueOnError bool
	// Budget, when set on a non-atomic batch (a bulk request), is asked
	// before each operation whether it may run and told what each one
	// cost. The service throttles a bulk request's operations one by one:
	// those beyond the container's throughput are answered 429 and the
	// client retries them alone, while the others run.
	Budget OpBudget
}

// OpBudget is the provisioned throughput the operations of a bulk request
// draw on.
type OpBudget interface {
	// Admit reports whether an operation may run now, and if not, how
	// long until one may.
	Admit() (ok bool, retryAfter time.Duration)
	// Spend takes an operation's charge from the budget.
	Spend(ru float64)
}

// BatchOpResult is the outcome of one operation.
type BatchOpResult struct {
	Type BatchOpType
	// Body is the item as stored or read; nil for deletes, failures and
	// reads answered NotModified.
	Body    []byte
	Etag    string
	Created bool // an upsert that created
	Charge  float64
	// Err is the operation's failure, nil on success. Operations an atomic
	// batch did not commit because another failed carry FailedDependency;
	// a read whose IfNoneMatch matched carries NotModified, which is not a
	// failure.
	Err *Error
	// RetryAfter is how long a throttled operation should wait.
	RetryAfter time.Duration
}

// Failed reports whether the operation failed.
func (r *BatchOpResult) Failed() bool { return r.Err != nil && r.Err.Code != NotModified }

// BatchResult is the outcome of a batch, one result per operation in order.
type BatchResult struct {
	Ops []BatchOpResult
	// Committed is false when an atomic batch was rolled back.
	Committed bool
	LSN       uint64 // the container's LSN once the batch is done
	Charge    float64
	CollRid   string
}

// Failed reports whether any operation failed.
func (r *BatchResult) Failed() bool {
	for i := range r.Ops {
		if r.Ops[i].Failed() {
			return true
		}
	}
	return false
}

// NotModified reports whether some read was answered NotModified. Such a
// batch is not a failure (it commits), but the service answers it 207, as
// any batch with an operation whose status is not a success.
func (r *BatchResult) NotModified() bool {
	for i := range r.Ops {
		if r.Ops[i].Err != nil && r.Ops[i].Err.Code == NotModified {
			return true
		}
	}
	return false
}

// ParseBatch decodes a batch request body: a JSON array of operations.
// Whatever makes the request as a whole unreadable is an error here; what
// makes one operation fail (a missing id, a bad item or patch) is left to
// that operation.
func ParseBatch(body []byte) ([]BatchOp, error) {
	if len(body) > MaxBatchBytes {
		return nil, errorf(RequestEntityTooLarge, "Request size is too large.")
	}
	v, err := document.Parse(body)
	if err != nil {
		return nil, errorf(BadRequest, "The batch request payload is invalid: %v", err)
	}
	if v.Kind() != document.Array {
		return nil, errorf(BadRequest, "The batch request payload must be a JSON array of operations.")
	}
	ops := make([]BatchOp, 0, v.Len())
	for i, o := range v.Array() {
		op, derr := parseBatchOp(o, i)
		if derr != nil {
			return nil, derr
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func parseBatchOp(o document.Value, i int) (BatchOp, *Error) {
	var op BatchOp
	if o.Kind() != document.Object {
		return op, errorf(BadRequest, "Batch operation %d must be a JSON object.", i)
	}
	t := o.Get("operationType")
	if t.Kind() != document.String {
		return op, errorf(BadRequest, "Batch operation %d has no operationType.", i)
	}
	for typ, name := range batchOpNames {
		if name != "" && strings.EqualFold(name, t.Str()) {
			op.Type = BatchOpType(typ)
		}
	}
	if op.Type == 0 {
		return op, errorf(BadRequest, "Batch operation %d has an unknown operationType '%s'.", i, t.Str())
	}
	str := func(name string) (string, *Error) {
		switch f := o.Get(name); f.Kind() {
		case document.Undefined, document.Null:
			return "", nil
		case document.String:
			return f.Str(), nil
		}
		return "", errorf(BadRequest, "The property '%s' of batch operation %d must be a string.", name, i)
	}
	var derr *Error
	if op.ID, derr = str("id"); derr != nil {
		return op, derr
	}
	if op.IfMatch, derr = str("ifMatch"); derr != nil {
		return op, derr
	}
	if op.IfNoneMatch, derr = str("ifNoneMatch"); derr != nil {
		return op, derr
	}
	op.Body = o.Get("resourceBody")
	switch pk := o.Get("partitionKey"); pk.Kind() {
	case document.Undefined, document.Null:
	case document.String, document.Array:
		text := pk.Str()
		if pk.Kind() == document.Array {
			text = string(pk.JSON())
		}
		k, err := partition.ParseHeader(text)
		if err != nil {
			return op, errorf(BadRequest, "The partition key of batch operation %d is invalid: %v", i, err)
		}
		op.PartitionKey, op.HasKey = k, true
	default:
		return op, errorf(BadRequest, "The partition key of batch operation %d must be a JSON string.", i)
	}
	return op, nil
}

// errBatchAborted ends the transaction of an atomic batch whose operation
// failed; the failure itself is kept beside it.
var errBatchAborted = errors.New("batch aborted")

// Batch runs a batch of operations on one container.
func (e *Engine) Batch(ctx context.Context, p BatchParams) (*BatchResult, error) {
	switch {
	case len(p.Ops) == 0:
		return nil, errorf(BadRequest, `Message: {"Errors":["Batch request has no operations."]}`)
	case len(p.Ops) > MaxBatchOps:
		return nil, errorf(BadRequest, `Message: {"Errors":["Batch request has more operations than what is supported."]}`)
	}
	now, done, err := e.judging(ctx, p.DB, p.Coll)
	if err != nil {
		return nil, err
	}
	defer done()
	e.prejudgeBatch(ctx, p, now)
	var (
		res  *BatchResult
		coll *containerRecord
	)
	if p.Atomic {
		res, coll, err = e.atomicBatch(ctx, p, now)
	} else {
		res, coll, err = e.separateBatch(ctx, p, now)
	}
	if err != nil {
		return nil, err
	}
	for i := range res.Ops {
		res.Charge += res.Ops[i].Charge
	}
	e.charge(coll, res.Charge)
	return res, nil
}

// prejudgeBatch judges the conditions of the batch's patches before any
// transaction, and hands the verdicts and the request's budget to them.
func (e *Engine) prejudgeBatch(ctx context.Context, p BatchParams, now time.Time) {
	var targets []condTarget
	var patches []int
	for i := range p.Ops {
		op := &p.Ops[i]
		if op.Type != BatchPatch || !op.Body.IsDefined() {
			continue
		}
		_, cond, err := ParsePatch(op.Body.JSON())
		if err != nil || cond == "" {
			continue
		}
		targets = append(targets, condTarget{ref: batchOpRef(p, op), id: op.ID, cond: cond})
		patches = append(patches, i)
	}
	if len(targets) == 0 {
		return
	}
	b := e.budget(ctx)
	pre := e.prejudge(ctx, p.DB, p.Coll, targets, now, b)
	for _, i := range patches {
		p.Ops[i].pre, p.Ops[i].budget = pre, b
	}
}

// batchOpRef is the item reference an operation runs under: its own key,
// else the batch's (the header's, or in an atomic batch the first
// operation's that has one, as batchKey decides).
func batchOpRef(p BatchParams, op *BatchOp) ItemRef {
	ref := p.ItemRef
	switch {
	case op.HasKey:
		ref.PartitionKey, ref.HasKey = op.PartitionKey, true
	case !ref.HasKey && p.Atomic:
		for _, o := range p.Ops {
			if o.HasKey {
				ref.PartitionKey, ref.HasKey = o.PartitionKey, true
				break
			}
		}
	}
	return ref
}

// batchPoint is the item op names, for prefetchPoints: a create's or an
// upsert's by the id in its body (none when the body has no valid one,
// which the operation refuses). A batch answers with its LSN.
func batchPoint(p BatchParams, op *BatchOp) pointAt {
	id := op.ID
	if op.Type == BatchCreate || op.Type == BatchUpsert {
		id, _ = bodyID(op.Body)
	}
	return pointAt{ref: batchOpRef(p, op), id: id, write: op.Type != BatchRead, lsn: true}
}

// atomicBatch runs every operation in one transaction, or in one snapshot
// when none writes, so a batch of reads writes nothing.
func (e *Engine) atomicBatch(ctx context.Context, p BatchParams, now time.Time) (*BatchResult, *containerRecord, error) {
	readOnly := true
	for i := range p.Ops {
		if p.Ops[i].Type != BatchRead {
			readOnly = false
		}
	}
	var (
		res     *BatchResult
		coll    *containerRecord
		failed  int
		failure *Error
	)
	points := make([]pointAt, len(p.Ops))
	for i := range p.Ops {
		points[i] = batchPoint(p, &p.Ops[i])
	}
	run := func(r storage.Reader, tx storage.Txn) error {
		res = &BatchResult{Ops: make([]BatchOpResult, len(p.Ops)), Committed: true}
		failed, failure = -1, nil
		e.prefetchPoints(r, p.DB, p.Coll, points...)
		c, err := e.loadContainer(r, p.DB, p.Coll)
		if err != nil {
			return err
		}
		coll = c
		res.CollRid = c.ridString()
		ref, derr := c.batchKey(p)
		if derr != nil {
			return derr
		}
		if res.LSN, err = e.currentLSN(r, c, c.seqOfRef(ref)); err != nil {
			return err
		}
		size := 0
		for i := range p.Ops {
			op, err := e.batchOp(r, tx, c, ref, &p.Ops[i], now)
			if err != nil {
				var oe *Error
				if errors.As(err, &oe) {
					failed, failure = i, oe
					return errBatchAborted
				}
				return err
			}
			if size += len(op.Body); size > maxBatchResponse {
				return responseTooLarge() // the whole batch, so nothing commits
			}
			res.Ops[i] = op
		}
		res.LSN, err = e.currentLSN(r, c, c.seqOfRef(ref))
		return err
	}
	var err error
	if readOnly {
		err = e.store.View(ctx, func(r storage.Reader) error { return run(r, nil) })
	} else {
		err = e.updateWriting(ctx, batchScope(p), func(tx storage.Txn) error { return run(tx, tx) })
	}
	if errors.Is(err, errBatchAborted) {
		// The LSN read before the first operation is still the
		// container's: nothing was committed.
		res.Committed = false
		for i := range res.Ops {
			res.Ops[i] = BatchOpResult{Type: p.Ops[i].Type, Err: failedDependency()}
		}
		res.Ops[failed] = BatchOpResult{Type: p.Ops[failed].Type, Err: failure, Charge: failedOpCharge}
		return res, coll, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return res, coll, nil
}

// separateBatch runs the operations one after another, each committed or
// failed on its own: all in one transaction, each behind a savepoint so
// that one that fails is taken back alone (one commit, and over a store
// across the network a few round trips, for the whole batch), or, when
// the store's transactions have no savepoints or a budget paces the
// operations, each in a transaction of its own. A batch that only reads
// reads in one snapshot.
func (e *Engine) separateBatch(ctx context.Context, p BatchParams, now time.Time) (*BatchResult, *containerRecord, error) {
	var coll *containerRecord
	res := &BatchResult{Ops: make([]BatchOpResult, len(p.Ops)), Committed: true}
	// The container must exist for the request to make sense at all.
	err := e.store.View(ctx, func(r storage.Reader) error {
		c, err := e.loadContainer(r, p.DB, p.Coll)
		if err != nil {
			return err
		}
		coll = c
		res.CollRid = c.ridString()
		res.LSN, err = e.currentLSN(r, c, c.seqOfRef(p.ItemRef))
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	points := make([]pointAt, len(p.Ops))
	writes := false
	for i := range p.Ops {
		points[i] = batchPoint(p, &p.Ops[i])
		writes = writes || points[i].write
	}
	lsn := res.LSN
	// runOp runs the i-th operation and reads the LSN after it.
	runOp := func(r storage.Reader, tx storage.Txn, c *containerRecord, i int) (BatchOpResult, uint64, error) {
		out, err := e.batchOp(r, tx, c, points[i].ref, &p.Ops[i], now)
		if err != nil {
			return BatchOpResult{}, 0, err
		}
		at, err := e.currentLSN(r, c, c.seqOfRef(points[i].ref))
		return out, at, err
	}
	if !writes {
		// Reads only: one snapshot for them all.
		err := e.store.View(ctx, func(r storage.Reader) error {
			e.prefetchPoints(r, p.DB, p.Coll, points...)
			c, err := e.loadContainer(r, p.DB, p.Coll)
			if err != nil {
				return err
			}
			return bulkOps(p, res, lsn, func(i int) (BatchOpResult, uint64, error) {
				return runOp(r, nil, c, i)
			})
		})
		if err != nil {
			return nil, nil, err
		}
		return res, coll, nil
	}
	if p.Budget == nil && !e.noSavepoints.Load() {
		unsupported := false
		err := e.updateWriting(ctx, batchScope(p), func(tx storage.Txn) error {
			unsupported = false
			e.prefetchPoints(tx, p.DB, p.Coll, points...)
			c, err := e.loadContainer(tx, p.DB, p.Coll)
			if err != nil {
				return err
			}
			return bulkOps(p, res, lsn, func(i int) (BatchOpResult, uint64, error) {
				sp, ok := storage.Savepoint(tx)
				if !ok {
					unsupported = true
					return BatchOpResult{}, 0, errNoSavepoints
				}
				out, at, err := runOp(tx, tx, c, i)
				if err != nil {
					if rerr := tx.(storage.Savepointer).RollbackTo(sp); rerr != nil {
						return BatchOpResult{}, 0, rerr
					}
				}
				return out, at, err
			})
		})
		if !unsupported {
			if err != nil {
				return nil, nil, err
			}
			return res, coll, nil
		}
		e.noSavepoints.Store(true)
	}
	err = bulkOps(p, res, lsn, func(i int) (BatchOpResult, uint64, error) {
		var out BatchOpResult
		var at uint64
		run := func(r storage.Reader, tx storage.Txn) error {
			e.prefetchPoints(r, p.DB, p.Coll, points[i])
			c, err := e.loadContainer(r, p.DB, p.Coll)
			if err != nil {
				return err
			}
			out, at, err = runOp(r, tx, c, i)
			return err
		}
		if !points[i].write {
			return out, at, e.store.View(ctx, func(r storage.Reader) error { return run(r, nil) })
		}
		return out, at, e.updateWriting(ctx, points[i].ref, func(tx storage.Txn) error { return run(tx, tx) })
	})
	if err != nil {
		return nil, nil, err
	}
	return res, coll, nil
}

// bulkOps runs p's operations in order through run, which runs the i-th
// and returns its result and the LSN after it, into res (its LSN from
// lsn up): an operation's *Error fails it alone, and unless p continues
// on error the operations after it do not run; once the documents
// returned would pass the response's bound the operations after do not
// run either; p's budget, if any, refuses operations as it runs out. Any
// other error ends the whole request.
func bulkOps(p BatchParams, res *BatchResult, lsn uint64, run func(i int) (BatchOpResult, uint64, error)) error {
	res.LSN = lsn
	stopped, full := false, false
	throttled, throttledFor := false, time.Duration(0)
	size := 0
	for i := range p.Ops {
		op := &p.Ops[i]
		if stopped {
			res.Ops[i] = BatchOpResult{Type: op.Type, Err: failedDependency()}
			continue
		}
		if full {
			// The operations run so far have committed; the rest do not
			// run, and the client sends them again.
			res.Ops[i] = BatchOpResult{Type: op.Type, Err: responseTooLarge()}
			continue
		}
		if p.Budget != nil {
			if !throttled {
				var ok bool
				ok, throttledFor = p.Budget.Admit()
				throttled = !ok
			}
			if throttled {
				// Not a failure that stops the rest: the client retries
				// it. Every operation refused in one request is told the
				// same wait, the first's: the JavaScript SDK sleeps
				// through each refused operation's wait in turn, and
				// waits that grew by a charge each summed to minutes.
				res.Ops[i] = BatchOpResult{Type: op.Type, Err: RequestRateTooLarge(), RetryAfter: throttledFor}
				continue
			}
		}
		out, at, err := run(i)
		var oe *Error
		switch {
		case errors.As(err, &oe):
			out = BatchOpResult{Type: op.Type, Err: oe, Charge: failedOpCharge}
			stopped = !p.ContinueOnError
		case err != nil:
			return err
		case at > res.LSN:
			res.LSN = at
		}
		if p.Budget != nil {
			p.Budget.Spend(out.Charge)
		}
		if size+len(out.Body) > maxBatchResponse {
			// The document does not fit: a read is refused as the
			// operations after it are; a write has committed, and its
			// status says so without the document.
			full = true
			if op.Type == BatchRead {
				out = BatchOpResult{Type: op.Type, Err: responseTooLarge()}
			} else {
				out.Body = nil
			}
		}
		size += len(out.Body)
		res.Ops[i] = out
	}
	return nil
}

// failedOpCharge is what an operation that failed costs: finding out.
const failedOpCharge = 1.0

// maxBatchResponse bounds the documents a batch returns, as the service
// bounds a response to 4 MB: 100 reads of a 2 MB item would otherwise
// build a response of 200 MB from a request of a few kilobytes.
const maxBatchResponse = 4 << 20

func responseTooLarge() *Error {
	return &Error{Code: RequestEntityTooLarge, SubStatus: SubResponseTooLarge,
		Message: fmt.Sprintf("The documents this batch returns would make a response larger than %d bytes; send its operations in smaller batches.", maxBatchResponse)}
}

// RequestRateTooLarge is the refusal of a request, or of one operation of a
// bulk request, beyond the provisioned throughput.
func RequestRateTooLarge() *Error {
	return &Error{Code: TooManyRequests, SubStatus: SubRequestRateTooLarge,
		Message: "Message: {\"Errors\":[\"Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later. Learn more: http://aka.ms/cosmosdb-error-429\"]}"}
}

func failedDependency() *Error {
	return errorf(FailedDependency, "The operation did not run because another operation in the batch failed.")
}

// batchScope is the logical partition a batch names: the request's, or
// else the first its operations name.
func batchScope(p BatchParams) ItemRef {
	ref := p.ItemRef
	if !ref.HasKey {
		for _, op := range p.Ops {
			if op.HasKey {
				ref.PartitionKey, ref.HasKey = op.PartitionKey, true
				break
			}
		}
	}
	return ref
}

// batchKey checks the partition keys of an atomic batch: the header's, or
// when it is absent the first operation's, and every operation's own key
// must be that one.
func (c *containerRecord) batchKey(p BatchParams) (ItemRef, *Error) {
	ref := batchScope(p)
	want, derr := c.pointKey(ref)
	if derr != nil {
		return ref, derr
	}
	for i, op := range p.Ops {
		if !op.HasKey {
			continue
		}
		got, derr := c.headerKeyBytes(op.PartitionKey)
		if derr != nil {
			return ref, derr
		}
		if !bytes.Equal(got, want) {
			return ref, errorf(BadRequest, "The partition key of batch operation %d does not match the partition key of the batch; every operation of a transactional batch must be in the same logical partition.", i)
		}
	}
	return ref, nil
}

// batchOp runs one operation. tx is nil when the batch only reads. An
// *Error return is the operation's own failure; any other error ends the
// whole request.
func (e *Engine) batchOp(r storage.Reader, tx storage.Txn, c *containerRecord, ref ItemRef, op *BatchOp, now time.Time) (BatchOpResult, error) {
	if op.Type == BatchRead {
		return e.batchRead(r, c, ref, op, now)
	}
	if tx == nil {
		return BatchOpResult{}, errors.New("batch: a write outside a transaction")
	}
	switch op.Type {
	case BatchCreate, BatchUpsert, BatchReplace:
		return e.batchWrite(tx, c, ref, op, now)
	case BatchDelete:
		return e.batchDelete(tx, c, ref, op, now)
	case BatchPatch:
		return e.batchPatch(tx, c, ref, op, now)
	}
	return BatchOpResult{}, errorf(BadRequest, "The batch operation type %d is not supported.", op.Type)
}

func (e *Engine) batchRead(r storage.Reader, c *containerRecord, ref ItemRef, op *BatchOp, now time.Time) (BatchOpResult, error) {
	if derr := validateItemID(op.ID); derr != nil {
		return BatchOpResult{}, derr
	}
	pk, derr := c.pointKey(ref)
	if derr != nil {
		return BatchOpResult{}, derr
	}
	live, _, err := e.findItem(r, c, pk, op.ID, now)
	if err != nil {
		return BatchOpResult{}, err
	}
	if live == nil {
		return BatchOpResult{}, notFound()
	}
	out := BatchOpResult{Type: op.Type, Body: bytes.Clone(live.rec.json), Etag: etagFor(c.Rid, live.rec.lsn)}
	out.Charge = readCharge(len(out.Body))
	if (op.IfNoneMatch != "" && (op.IfNoneMatch == out.Etag || op.IfNoneMatch == "*")) || (op.IfMatch != "" && op.IfMatch == out.Etag) {
		out.Body = nil
		out.Err = &Error{Code: NotModified, Message: "Not modified."}
	}
	return out, nil
}

// batchWrite is a create, upsert or replace, checked as WriteItem checks
// its body.
func (e *Engine) batchWrite(tx storage.Txn, c *containerRecord, ref ItemRef, op *BatchOp, now time.Time) (BatchOpResult, error) {
	body := op.Body
	if derr := checkDepth(body); derr != nil {
		return BatchOpResult{}, derr
	}
	id, derr := bodyID(body)
	if derr != nil {
		return BatchOpResult{}, derr
	}
	if derr := validateItemID(id); derr != nil {
		return BatchOpResult{}, derr
	}
	mode := ModeCreate
	switch op.Type {
	case BatchUpsert:
		mode = ModeUpsert
	case BatchReplace:
		mode = ModeReplace
		if id != op.ID {
			return BatchOpResult{}, errorf(BadRequest, "The id '%s' in the body does not match the id '%s' addressed.", id, op.ID)
		}
	}
	w := WriteItemParams{ItemRef: ref, Mode: mode, ID: op.ID, IfMatch: op.IfMatch}
	res, err := e.writeItemTx(tx, c, w, id, body.Without(itemSystemProps...), now)
	if err != nil {
		return BatchOpResult{}, err
	}
	return BatchOpResult{Type: op.Type, Body: res.Body, Etag: res.Etag, Created: res.Created, Charge: writeCharge(len(res.Body))}, nil
}

// batchDelete is a delete inside the batch's transaction.
func (e *Engine) batchDelete(tx storage.Txn, c *containerRecord, ref ItemRef, op *BatchOp, now time.Time) (BatchOpResult, error) {
	if derr := validateItemID(op.ID); derr != nil {
		return BatchOpResult{}, derr
	}
	if _, err := e.deleteItemTx(tx, c, DeleteItemParams{ItemRef: ref, ID: op.ID, IfMatch: op.IfMatch}, now); err != nil {
		return BatchOpResult{}, err
	}
	return BatchOpResult{Type: op.Type, Charge: writeCharge(0)}, nil
}

// batchPatch is a patch inside the batch's transaction.
func (e *Engine) batchPatch(tx storage.Txn, c *containerRecord, ref ItemRef, op *BatchOp, now time.Time) (BatchOpResult, error) {
	if derr := validateItemID(op.ID); derr != nil {
		return BatchOpResult{}, derr
	}
	if !op.Body.IsDefined() {
		return BatchOpResult{}, errorf(BadRequest, "The patch request must contain an 'operations' array.")
	}
	ops, cond, err := ParsePatch(op.Body.JSON())
	if err != nil {
		return BatchOpResult{}, err
	}
	res, err := e.patchItemTx(tx, c, PatchItemParams{ItemRef: ref, ID: op.ID, Ops: ops, Condition: cond, IfMatch: op.IfMatch, pre: op.pre, budget: op.budget}, now)
	if err != nil {
		return BatchOpResult{}, err
	}
	return BatchOpResult{Type: op.Type, Body: res.Body, Etag: res.Etag, Charge: writeCharge(len(res.Body))}, nil
}
