package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// DefaultRequestTimeout is how long one request may take when
// Config.RequestTimeout is zero: under the SDKs' own 60-second timeout, so
// the server answers 408 before a client gives up on it, and well over
// the 5 seconds a query page may evaluate.
const DefaultRequestTimeout = 30 * time.Second

// withDeadline returns r with a context that ends when the request's time
// on the handler's clock runs out (its cause context.DeadlineExceeded,
// answered 408) or when the client goes away, and the function that
// releases it. The engine's loops watch that context, so neither a slow
// request nor an abandoned one keeps working.
func (h *Handler) withDeadline(r *http.Request) (*http.Request, func()) {
	if _, real := h.clock.(clock.Real); real {
		ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
		return r.WithContext(ctx), cancel
	}
	// Another clock (a test's) decides by its own timers.
	ctx, cancel := context.WithCancelCause(r.Context())
	fire := h.clock.After(h.timeout)
	go func() {
		select {
		case <-fire:
			cancel(context.DeadlineExceeded)
		case <-ctx.Done():
		}
	}()
	return r.WithContext(ctx), func() { cancel(context.Canceled) }
}
