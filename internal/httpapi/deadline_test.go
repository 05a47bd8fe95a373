package httpapi

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// A request's context ends when its time runs out on the handler's clock,
// with the cause the transport answers 408, and not before. The test runs
// in a synctest bubble, so "not yet" and "now" are decided by waiting for
// every goroutine of the bubble to block, not by sleeping.
func TestRequestDeadlineFollowsTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewManual(time.Unix(1_700_000_000, 0))
		h := &Handler{timeout: 10 * time.Second, clock: clk}
		r, release := h.withDeadline(httptest.NewRequest("GET", "/dbs", nil))
		defer release()
		ctx := r.Context()
		clk.Advance(9 * time.Second)
		synctest.Wait()
		if err := ctx.Err(); err != nil {
			t.Fatalf("context ended %v before its time", err)
		}
		clk.Advance(time.Second)
		synctest.Wait()
		if cause := context.Cause(ctx); !errors.Is(cause, context.DeadlineExceeded) {
			t.Errorf("cause %v, want context.DeadlineExceeded", cause)
		}
	})
}
