// Package ratelimit enforces provisioned throughput the way the service
// does: each budget (a container's, or a database's shared by its
// containers) holds at most one second of its request units per second; a
// request is admitted while the budget is positive and pays its actual
// charge afterwards, so one expensive request may drive it negative, and
// requests are refused until the refill has paid that back.
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
	wait := time.Duration((-b.tokens/rate)*float64(time.Second)) + time.Millisecond
	return false, wait
}

// Spend takes ru from the budget key.
func (l *Limiter) Spend(key string, rate, ru float64) {
	if rate <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(key, rate).tokens -= ru
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
