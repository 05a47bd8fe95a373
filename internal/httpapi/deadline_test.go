package httpapi

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// A request's context ends when its time runs out on the handler's clock,
// with the cause the transport answers 408, and not before.
func TestRequestDeadlineFollowsTheClock(t *testing.T) {
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	h := &Handler{timeout: 10 * time.Second, clock: clk}
	r, release := h.withDeadline(httptest.NewRequest("GET", "/dbs", nil))
	defer release()
	ctx := r.Context()
	clk.Advance(9 * time.Second)
	if err := ctx.Err(); err != nil {
		t.Fatalf("context ended %v before its time", err)
	}
	clk.Advance(time.Second)
	<-ctx.Done()
	if cause := context.Cause(ctx); !errors.Is(cause, context.DeadlineExceeded) {
		t.Errorf("cause %v, want context.DeadlineExceeded", cause)
	}
}

// A request the client abandons ends at once.
func TestRequestDeadlineEndsWithTheClient(t *testing.T) {
	h := &Handler{timeout: time.Hour, clock: clock.NewManual(time.Unix(0, 0))}
	parent, cancel := context.WithCancel(context.Background())
	r, release := h.withDeadline(httptest.NewRequest("GET", "/dbs", nil).WithContext(parent))
	defer release()
	cancel()
	<-r.Context().Done()
	if !errors.Is(r.Context().Err(), context.Canceled) {
		t.Errorf("err %v, want context.Canceled", r.Context().Err())
	}
}
