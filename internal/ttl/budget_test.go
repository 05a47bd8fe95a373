package ttl

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

func TestA4_BudgetGivesThePurgerWhatUsersLeave(t *testing.T) {
	clk := clock.NewManual(sec(0))
	b := NewBudget(clk, 1000) // one second banks 1000 RU

	// A quiet container: the purger may take a full second's worth.
	if got, _ := b.take("c", 1000, 5); got != 200 {
		t.Fatalf("quiet: granted %d items, want 200", got)
	}
	if got, load := b.take("c", 1, 5); got != 0 || load {
		t.Fatalf("after taking everything: granted %d, user load %v; want 0, false", got, load)
	}
	// Half a second refills half.
	clk.Advance(500 * time.Millisecond)
	if got := b.Available("c"); got != 500 {
		t.Fatalf("after 0.5 s available = %v, want 500", got)
	}
	// Users take it first; the purger gets the rest, and nothing once
	// users have used it all.
	b.Charge("c", 300)
	if got, _ := b.take("c", 1000, 5); got != 40 {
		t.Fatalf("after users took 300: granted %d, want 40", got)
	}
	b.Charge("c", 50)
	if got, load := b.take("c", 1000, 5); got != 0 || !load {
		t.Fatalf("under user load: granted %d, user load %v; want 0, true", got, load)
	}
	// Overload is remembered for one second's worth at most.
	b.Charge("c", 1e9)
	if got := b.Available("c"); got != -1000 {
		t.Fatalf("debt = %v, want capped at -1000", got)
	}
	clk.Advance(1500 * time.Millisecond)
	if got, _ := b.take("c", 1000, 5); got != 100 {
		t.Fatalf("1.5 s after the overload: granted %d, want 100", got)
	}
	// User load is not blamed once a window has passed without it.
	clk.Advance(2 * time.Second)
	b.take("c", 1000, 5)
	if got, load := b.take("c", 1000, 5); got != 0 || load {
		t.Fatalf("purger's own use: granted %d, user load %v; want 0, false", got, load)
	}
}

func TestBudget_SettleRatesAndForget(t *testing.T) {
	clk := clock.NewManual(sec(0))
	b := NewBudget(clk, 0)
	if got := b.Available("x"); got != DefaultRUPerSecond {
		t.Fatalf("default budget = %v", got)
	}
	got, _ := b.take("x", 100, 5)
	b.settle("x", float64(got)*5, 120) // 24 items at 5 RU were spent
	if want := float64(DefaultRUPerSecond - 120); b.Available("x") != want {
		t.Errorf("after settle available = %v, want %v", b.Available("x"), want)
	}
	b.SetRate("x", 10)
	if got := b.Available("x"); got != 10 {
		t.Errorf("after SetRate(10) available = %v, want 10", got)
	}
	clk.Advance(time.Hour)
	if got := b.Available("x"); got != 10 {
		t.Errorf("bucket overflowed: %v", got)
	}
	b.Charge("x", -5) // ignored
	b.Forget("x")
	if got := b.Available("x"); got != DefaultRUPerSecond {
		t.Errorf("forgotten container available = %v", got)
	}
	if got, _ := b.take("y", 7, 0); got != 7 {
		t.Errorf("free items: granted %d", got)
	}
}

func TestBudget_ConcurrentCharges(t *testing.T) {
	clk := clock.NewManual(sec(0))
	b := NewBudget(clk, 1e6)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				b.Charge("c", 1)
				b.take("c", 1, 1)
			}
		})
	}
	wg.Wait()
	if got := b.Available("c"); got != 1e6-16000 {
		t.Errorf("available = %v, want %v", got, 1e6-16000)
	}
	if math.IsNaN(b.Available("c")) {
		t.Fatal("NaN")
	}
}
