package ttl

import (
	"sync"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// DefaultRUPerSecond is a container's throughput budget when none is set:
// generous, so that on a quiet server the purger is limited by the store,
// not by the budget.
const DefaultRUPerSecond = 10000

// budgetWindow is how much unused capacity a container may bank, and how
// much user overload it remembers: one second of its rate either way.
const budgetWindow = time.Second

// Budget is the request-unit capacity of each container, shared between
// user requests and the purger so that purging uses spare capacity only
// (ttl.md A4).
//
// Each container has a bucket that fills at its rate (request units per
// second) up to one second's worth. User requests charge it first, with no
// limit: the budget never delays or refuses a user request, it only
// measures. The purger takes only what is left, and nothing while user
// requests have driven the bucket empty or into debt. Debt is capped at one
// second's worth, so the purger resumes within about a second after a
// burst of load ends and then catches up at the container's full rate.
//
// A Budget is safe for concurrent use; the engine calls Charge from every
// request goroutine.
type Budget struct {
	clock clock.Clock
	rate  float64

	mu      sync.Mutex
	buckets map[string]*bucket
	// used holds the containers charged since the purger last took the
	// set (takeUsed): a user request, a write among them, may have added
	// an item that falls due sooner than the purger planned to look.
	used map[string]struct{}
}

type bucket struct {
	rate     float64   // request units per second
	tokens   float64   // may be negative: debt from user requests
	at       time.Time // when tokens was last brought up to date
	lastUser time.Time // when a user request last charged the bucket
}

// NewBudget returns a budget giving every container ruPerSecond request
// units per second (DefaultRUPerSecond when ruPerSecond <= 0), timed by c.
func NewBudget(c clock.Clock, ruPerSecond float64) *Budget {
	if c == nil {
		c = clock.Real{}
	}
	if ruPerSecond <= 0 {
		ruPerSecond = DefaultRUPerSecond
	}
	return &Budget{clock: c, rate: ruPerSecond, buckets: map[string]*bucket{}, used: map[string]struct{}{}}
}

// SetRate sets one container's rate, for example from its provisioned
// throughput; ruPerSecond <= 0 restores the default.
func (b *Budget) SetRate(container string, ruPerSecond float64) {
	if ruPerSecond <= 0 {
		ruPerSecond = b.rate
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.bucket(container)
	k.rate = ruPerSecond
	k.tokens = min(k.tokens, k.capacity())
}

// Charge records that a user request on container consumed ru request
// units. Only user requests are charged this way; the purger's own
// consumption never appears in any user request's charge.
//
// The engine charges a write after it has committed, so a charge also
// tells the purger that the container may hold a new expiry entry.
func (b *Budget) Charge(container string, ru float64) {
	if ru <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used[container] = struct{}{}
	k := b.bucket(container)
	k.tokens = max(k.tokens-ru, -k.capacity())
	k.lastUser = k.at
}

// Available returns the request units the purger could take from container
// now; negative while user requests are in debt.
func (b *Budget) Available(container string) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bucket(container).tokens
}

// Forget drops the state kept for a container that no longer exists.
func (b *Budget) Forget(container string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.buckets, container)
	delete(b.used, container)
}

// takeUsed returns the containers charged since the last call and starts
// a new set.
func (b *Budget) takeUsed() map[string]struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	used := b.used
	b.used = map[string]struct{}{}
	return used
}

// giveBackUsed returns containers taken by takeUsed that a pass did not
// get to, for the next pass.
func (b *Budget) giveBackUsed(used map[string]struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range used {
		b.used[id] = struct{}{}
	}
}

// take grants the purger up to n units of cost each from container's spare
// capacity and returns how many it granted. When it grants none, userLoad
// reports whether user requests used the capacity in the last window, as
// opposed to the purger itself.
func (b *Budget) take(container string, n int, cost float64) (granted int, userLoad bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.bucket(container)
	if cost <= 0 {
		return n, false
	}
	granted = min(n, int(max(k.tokens, 0)/cost))
	if granted == 0 {
		return 0, !k.lastUser.IsZero() && k.at.Sub(k.lastUser) < budgetWindow
	}
	k.tokens -= float64(granted) * cost
	return granted, false
}

// settle corrects a grant once the purger knows what it spent: it returns
// granted-spent units to the bucket (or takes more, if it spent more).
func (b *Budget) settle(container string, granted, spent float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.bucket(container)
	k.tokens = max(min(k.tokens+granted-spent, k.capacity()), -k.capacity())
}

// bucket returns container's bucket brought up to date; b.mu is held.
func (b *Budget) bucket(container string) *bucket {
	now := b.clock.Now()
	k := b.buckets[container]
	if k == nil {
		k = &bucket{rate: b.rate, at: now}
		k.tokens = k.capacity()
		b.buckets[container] = k
		return k
	}
	if d := now.Sub(k.at); d > 0 {
		k.tokens = min(k.tokens+k.rate*d.Seconds(), k.capacity())
		k.at = now
	}
	return k
}

func (k *bucket) capacity() float64 { return k.rate * budgetWindow.Seconds() }
