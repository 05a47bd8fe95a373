package ttl

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

type fakeEraseTarget struct {
	backlog []ErasureBacklog
	erased  [][]string
}

func (f *fakeEraseTarget) ErasureBacklog(context.Context, int) ([]ErasureBacklog, error) {
	return f.backlog, nil
}

func (f *fakeEraseTarget) Erase(_ context.Context, ids []string) (EraseResult, error) {
	f.erased = append(f.erased, ids)
	var res EraseResult
	for _, b := range f.backlog {
		if slices.Contains(ids, b.ID) {
			res.Expired = append(res.Expired, b.Expired)
		}
	}
	return res, nil
}

type lagRecorder struct {
	nopMetrics
	lags []time.Duration
}

func (l *lagRecorder) Erased(lag time.Duration) { l.lags = append(l.lags, lag) }

// TestErasureErasesQueuesHalfwayToTheirDeadline: a queue is erased once
// half of its most urgent item's deadline has passed, never before, not
// while its container's data is still being deleted, and due queues are
// erased together in one call.
func TestErasureErasesQueuesHalfwayToTheirDeadline(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	clk := clock.NewManual(t0)
	target := &fakeEraseTarget{backlog: []ErasureBacklog{
		{ID: "a", Label: "a", Expired: t0, By: t0.Add(time.Hour), Items: 3},
		{ID: "b", Label: "b", Expired: t0.Add(-time.Minute), By: t0.Add(time.Minute), Items: 1},
		{ID: "c", Label: "c", Expired: t0.Add(-time.Hour), By: t0, Items: 1, Busy: true},
	}}
	lags := &lagRecorder{}
	er := NewErasure(ErasureConfig{Target: target, Clock: clk, Metrics: lags})
	ctx := context.Background()
	steps := []struct {
		advance time.Duration
		want    []string // nil: no Erase call
	}{
		{0, []string{"b"}},                // b: half of its two minutes passed
		{29 * time.Minute, []string{"b"}}, // a: not yet (29 of 60 minutes)
		{time.Minute, []string{"a", "b"}}, // a: half of the hour
		{time.Hour, []string{"a", "b"}},   // c stays busy
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		target.erased = nil
		if err := er.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if len(target.erased) != 1 || !slices.Equal(target.erased[0], s.want) {
			t.Errorf("step %d: Erase calls %v, want one with %v", i, target.erased, s.want)
		}
	}
	if len(lags.lags) == 0 || lags.lags[0] != time.Minute {
		t.Errorf("erasure lags %v, want the first to be b's minute since expiry", lags.lags)
	}
}

// TestErasureWaitsForSpareCapacity: a due queue whose container's users
// have used its capacity waits, until a quarter of its deadline is left.
func TestErasureWaitsForSpareCapacity(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	clk := clock.NewManual(t0)
	budget := NewBudget(clk, 100)
	target := &fakeEraseTarget{backlog: []ErasureBacklog{
		{ID: "a", Label: "a", Expired: t0, By: t0.Add(time.Hour), Items: 1},
	}}
	er := NewErasure(ErasureConfig{Target: target, Clock: clk, Budget: budget})
	ctx := context.Background()
	for _, s := range []struct {
		advance time.Duration
		erased  bool
	}{
		{30 * time.Minute, false}, // due, but users took the capacity
		{14 * time.Minute, false}, // still more than a quarter left
		{time.Minute, true},       // a quarter left: no more waiting
	} {
		clk.Advance(s.advance)
		budget.Charge("a", 1e6)
		target.erased = nil
		if err := er.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if got := len(target.erased) > 0; got != s.erased {
			t.Errorf("at +%v: erased %v, want %v", clk.Now().Sub(t0), got, s.erased)
		}
	}
}
