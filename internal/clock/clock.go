// Package clock gives Mayfly one injectable notion of "now".
//
// Every expiry decision (ttl.md A2, B6) is judged against a Clock. The
// server uses Real; tests use Manual and move time by hand, so nothing in a
// test sleeps waiting for an item to expire.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time and makes timers that follow it.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives the time once d has passed on
	// this clock.
	After(d time.Duration) <-chan time.Time
}

// Real is the system clock.
type Real struct{}

// Now returns the current system time.
func (Real) Now() time.Time { return time.Now() }

// After waits on the system clock.
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Manual is a clock that moves only when told to. It is safe for concurrent
// use.
type Manual struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewManual returns a Manual clock set to t.
func NewManual(t time.Time) *Manual { return &Manual{now: t} }

// Now returns the clock's current time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// After fires once the clock has been advanced by at least d.
func (m *Manual) After(d time.Duration) <-chan time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := make(chan time.Time, 1)
	at := m.now.Add(d)
	if d <= 0 {
		ch <- m.now
		return ch
	}
	m.waiters = append(m.waiters, waiter{at: at, ch: ch})
	return ch
}

// Advance moves the clock forward by d and fires every timer that is due.
func (m *Manual) Advance(d time.Duration) { m.Set(m.Now().Add(d)) }

// Set moves the clock to t (never backwards) and fires due timers.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.After(m.now) {
		m.now = t
	}
	kept := m.waiters[:0]
	for _, w := range m.waiters {
		if !w.at.After(m.now) {
			w.ch <- m.now
			continue
		}
		kept = append(kept, w)
	}
	m.waiters = kept
}

// Skewed is a clock running Offset ahead of another (behind, when Offset is
// negative): a gateway whose clock disagrees with its peers', for tests of
// the rule that expiry is judged by the store's clock, not the gateway's.
type Skewed struct {
	Clock  Clock
	Offset time.Duration
}

// Now returns the underlying clock's time plus the offset.
func (s Skewed) Now() time.Time { return s.Clock.Now().Add(s.Offset) }

// After waits on the underlying clock: durations are not skewed.
func (s Skewed) After(d time.Duration) <-chan time.Time { return s.Clock.After(d) }
