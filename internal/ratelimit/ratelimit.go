// Package ratelimit enforces provisioned throughput the way the service
// does: each budget (a container's, or a database's shared by its
// containers) holds at most one second of its request units per second; a
// request is admitted while the budget is positive and pays its actual
// charge afterwards, so one expensive request may drive it negative, and
// requests are refused until the refill has paid that back.
//
// A refused request is told when to come back (x-ms-retry-after-ms), and
// the SDKs come back then. Requests refused together are told instants a
// typical charge apart, the first when the budget turns positive: told
// the same instant, they would all come back at once, one would get in,
// and the rest would be refused again, each retry spent for nothing, until
// an SDK gave up and the application saw the 429.
package ratelimit

import (
	"sync"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// Limiter holds one budget per key. It is safe for concurrent use.
type Limiter struct {
	clock clock.Clock
	mu    sync.Mutex
	bkts  map[string]*bucket
}

type bucket struct {
	rate   float64 // request units per second
	tokens float64 // may go negative
	at     time.Time
	charge float64   // a moving average of the charges spent: what a request costs
	next   time.Time // the latest instant a refused request was told to come back at
}

// New returns a limiter on the clock.
func New(c clock.Clock) *Limiter {
	return &Limiter{clock: c, bkts: map[string]*bucket{}}
}

// Admit reports whether a request may run against the budget key with rate
// request units per second; when not, it says how long until it may. A rate
// of zero or less is no limit.
func (l *Limiter) Admit(key string, rate float64) (ok bool, retryAfter time.Duration) {
	if rate <= 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.refill(key, rate)
	if b.tokens > 0 {
		return true, 0
	}
	now := l.clock.Now()
	positive := now.Add(time.Duration((-b.tokens/rate)*float64(time.Second)) + time.Millisecond)
	back := positive
	if after := b.next.Add(time.Duration(b.charge / rate * float64(time.Second))); b.next.After(now) && after.After(back) {
		// Behind those told to come back before it, but not behind
		// more than a queue's worth of them: refused requests whose
		// clients gave up never come back to be admitted.
		back = after
		if limit := positive.Add(maxQueue); back.After(limit) {
			back = limit
		}
	}
	b.next = back
	return false, back.Sub(now)
}

// maxQueue bounds how far behind the instant the budget turns positive a
// refused request is told to come back.
const maxQueue = 5 * time.Second

// Spend takes ru from the budget key.
func (l *Limiter) Spend(key string, rate, ru float64) {
	if rate <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.refill(key, rate)
	b.tokens -= ru
	if b.charge == 0 {
		b.charge = ru
	} else {
		b.charge += (ru - b.charge) / 8
	}
}

// refill brings the budget up to now; a changed rate applies from now on.
func (l *Limiter) refill(key string, rate float64) *bucket {
	now := l.clock.Now()
	b, ok := l.bkts[key]
	if !ok {
		b = &bucket{rate: rate, tokens: rate, at: now}
		l.bkts[key] = b
		return b
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(b.tokens+b.rate*d.Seconds(), rate)
		b.at = now
	}
	b.rate = rate
	return b
}
