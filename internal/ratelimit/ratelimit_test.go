package ratelimit

import (
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

func TestLimiter(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	l := New(clk)
	admit := func(key string, rate float64) bool {
		ok, _ := l.Admit(key, rate)
		return ok
	}
	// A fresh budget holds one second of its rate.
	if !admit("c", 400) {
		t.Fatal("a fresh budget refused")
	}
	l.Spend("c", 400, 399)
	if !admit("c", 400) {
		t.Fatal("refused with 1 RU left")
	}
	l.Spend("c", 400, 101) // one expensive request drives it to -100
	ok, wait := l.Admit("c", 400)
	if ok || wait < 250*time.Millisecond || wait > 260*time.Millisecond {
		t.Fatalf("admit at -100 RU of 400/s = %v, retry after %v; want refused for about 250ms", ok, wait)
	}
	// Other budgets are independent, and no rate is no limit.
	if !admit("other", 400) || !admit("c", 0) {
		t.Fatal("an unrelated or unlimited budget was refused")
	}
	clk.Advance(wait)
	if !admit("c", 400) {
		t.Fatal("still refused after the retry delay")
	}
	// The refill stops at one second's worth.
	clk.Advance(time.Hour)
	l.Spend("c", 400, 400)
	if admit("c", 400) {
		t.Fatal("a budget refilled past one second of its rate")
	}
}
