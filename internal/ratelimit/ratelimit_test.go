package ratelimit

import (
	"math/rand/v2"
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

// Clients that come back when told to get in within a few refusals each:
// those refused together are told instants a charge apart, not all the
// instant the budget turns positive, where one would get in and the rest
// be refused again. Each client sends its requests one after another, each
// costing 10 RU and taking 2 to 8 ms, against 400 RU/s (one request in 25 ms).
func TestRefusedClientsComeBackInTurn(t *testing.T) {
	for _, clients := range []int{2, 10, 50} {
		clk := clock.NewManual(time.Unix(1000, 0))
		l := New(clk)
		// A request's round trip varies by up to 3 ms.
		rnd := rand.New(rand.NewPCG(1, uint64(clients)))
		jitter := func() time.Duration { return time.Duration(rnd.Int64N(int64(3 * time.Millisecond))) }
		type client struct {
			at      time.Time // when its next attempt is due
			refused int       // refusals of its current request
			pays    bool      // its last request ran and is to be paid for
		}
		cs := make([]*client, clients)
		for i := range cs {
			cs[i] = &client{at: clk.Now().Add(time.Duration(i) * time.Microsecond)}
		}
		worst, total := 0, 0
		for total < 40*clients {
			var c *client
			for _, x := range cs {
				if c == nil || x.at.Before(c.at) {
					c = x
				}
			}
			if d := c.at.Sub(clk.Now()); d > 0 {
				clk.Advance(d)
			}
			if c.pays {
				l.Spend("c", 400, 10)
				c.pays = false
			}
			ok, wait := l.Admit("c", 400)
			if !ok {
				c.refused++
				c.at = clk.Now().Add(max(wait, time.Millisecond) + jitter())
				continue
			}
			// It pays when it has run, as the server charges a request.
			c.pays = true
			worst = max(worst, c.refused)
			c.refused = 0
			total++
			c.at = clk.Now().Add(2*time.Millisecond + 2*jitter())
		}
		t.Logf("%d clients: at most %d refusals in a row", clients, worst)
		// The Go SDK retries a 429 three times by default, the others nine.
		if limit := 3; worst > limit {
			t.Errorf("%d clients: a request was refused %d times in a row, want at most %d", clients, worst, limit)
		}
	}
}

// Refusals whose clients never come back do not push later ones out past
// the queue's bound.
func TestRefusalQueueBounded(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	l := New(clk)
	l.Spend("c", 400, 410) // 10 RU short: positive again in 25 ms
	var wait time.Duration
	for range 10_000 {
		_, wait = l.Admit("c", 400)
	}
	if wait > 25*time.Millisecond+maxQueue+time.Millisecond {
		t.Fatalf("the 10,000th refusal waits %v, past the bound of %v", wait, maxQueue)
	}
}
