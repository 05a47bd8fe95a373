package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/engine"
	"github.com/mayfly-db/mayfly/internal/ratelimit"
)

// batcher is the engine's batch capability (docs/protocol.md §7.1, §7.2).
type batcher interface {
	Batch(ctx context.Context, p engine.BatchParams) (*engine.BatchResult, error)
}

var _ batcher = (*engine.Engine)(nil)

// batch serves a transactional batch (x-ms-cosmos-batch-atomic: true, the
// default) or a bulk request (atomic false).
func (h *Handler) batch(rq *request, db, coll string) {
	b, ok := h.eng.(batcher)
	if !ok {
		h.fail(rq, badRequest("Transactional batch is not supported by this server."))
		return
	}
	ref, body, ok := h.itemInput(rq, db, coll)
	if !ok {
		return
	}
	if len(body) > 0 && body[0] == hybridRowV1 {
		h.fail(rq, badRequest("This batch is in the binary HybridRow format, which the .NET SDK sends; Mayfly takes batches in JSON, as the Go, JavaScript, Java and Python SDKs send them."))
		return
	}
	ops, err := engine.ParseBatch(body)
	if err != nil {
		h.fail(rq, err)
		return
	}
	if err := authorizeBatch(rq.grant, ops); err != nil {
		h.fail(rq, err)
		return
	}
	p := engine.BatchParams{
		ItemRef:         ref,
		Ops:             ops,
		Atomic:          !headerFalse(rq.r, "x-ms-cosmos-batch-atomic"),
		ContinueOnError: headerBool(rq.r, "x-ms-cosmos-batch-continue-on-error"),
	}
	if rq.budget != nil && !p.Atomic {
		p.Budget = rq.budget
	}
	res, err := b.Batch(rq.r.Context(), p)
	if err != nil {
		h.fail(rq, err)
		return
	}
	// 207 when an operation failed, and also when a read was answered 304:
	// the service counts any status that is not a success, though such a
	// batch commits.
	status := http.StatusOK
	if res.Failed() || res.NotModified() {
		status = http.StatusMultiStatus
	}
	h.itemHeaders(rq, &engine.ItemResult{LSN: res.LSN, CollRid: res.CollRid})
	h.reply(rq, status, res.Charge, batchBody(res, preferMinimal(rq.r)))
}

// hybridRowV1 is the first byte of a batch body in the HybridRow format.
const hybridRowV1 = 0x81

// isBulk reports whether r is a bulk request: a batch of operations that
// run and fail one by one.
func isBulk(r *http.Request) bool {
	return r.Method == http.MethodPost && headerBool(r, "x-ms-cosmos-is-batch-request") && headerFalse(r, "x-ms-cosmos-batch-atomic")
}

// opBudget is a container's throughput as a bulk request's operations
// draw on it.
type opBudget struct {
	limiter *ratelimit.Limiter
	key     string
	rate    float64
}

func (b opBudget) Admit() (bool, time.Duration) { return b.limiter.Admit(b.key, b.rate) }
func (b opBudget) Spend(ru float64)             { b.limiter.Spend(b.key, b.rate, ru) }

// headerFalse reports whether a boolean header is present and false.
func headerFalse(r *http.Request, name string) bool {
	return strings.EqualFold(strings.TrimSpace(r.Header.Get(name)), "false")
}

// batchBody renders the per-operation results. Under Prefer:
// return=minimal, writes leave "resourceBody" out altogether (the Go SDK
// takes a present key, even null, for a body); reads always carry it and
// deletes never do.
func batchBody(res *engine.BatchResult, minimal bool) []byte {
	b := []byte{'['}
	for i := range res.Ops {
		op := &res.Ops[i]
		if i > 0 {
			b = append(b, ',')
		}
		status, sub := batchStatus(op)
		b = append(b, `{"statusCode":`...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, `,"requestCharge":`...)
		b = appendCharge(b, op.Charge)
		if op.Etag != "" {
			b = append(b, `,"eTag":`...)
			b = document.AppendString(b, op.Etag)
		}
		if op.Body != nil && (op.Type == engine.BatchRead || !minimal) {
			b = append(b, `,"resourceBody":`...)
			b = append(b, op.Body...)
		}
		if op.Failed() {
			b = append(b, `,"subStatusCode":`...)
			b = strconv.AppendInt(b, int64(sub), 10)
			b = append(b, `,"message":`...)
			b = document.AppendString(b, op.Err.Message)
			if status == http.StatusTooManyRequests {
				b = append(b, `,"retryAfterMilliseconds":`...)
				wait := int64(retryAfterMs)
				if op.RetryAfter > 0 {
					wait = max(op.RetryAfter.Milliseconds(), 1)
				}
				b = strconv.AppendInt(b, wait, 10)
			}
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// retryAfterMs is the back-off suggested to a throttled operation whose
// wait is not known.
const retryAfterMs = 100

// batchStatus is the HTTP status an operation reports.
func batchStatus(op *engine.BatchOpResult) (status, sub int) {
	if op.Err != nil {
		status, _ = statusOf(op.Err.Code)
		return status, op.Err.SubStatus
	}
	switch op.Type {
	case engine.BatchCreate:
		return http.StatusCreated, 0
	case engine.BatchUpsert:
		if op.Created {
			return http.StatusCreated, 0
		}
	case engine.BatchDelete:
		return http.StatusNoContent, 0
	}
	return http.StatusOK, 0
}
