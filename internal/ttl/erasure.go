package ttl

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// B4, the erasure deadline: within a deadline of an item's expiry, none of
// its bytes can be found in any file of the store. Purging (B3) deletes an
// item's keys; the store keeps their bytes until its own housekeeping
// drops them. The purge queues each item it deletes for erasure, with the
// instant it must be erased by; the Erasure loop here decides when to
// erase, and the EraseTarget (the engine) does it.
//
// When: a container's queue is erased once half of the deadline of its
// most urgent item has passed, so items expiring within half a deadline of
// each other are erased together (one compaction of the container, not one
// per item), and the other half is left for the erasure itself.

// EraseTarget is the store as the erasure loop sees it.
type EraseTarget interface {
	// ErasureBacklog lists the containers with items queued for erasure.
	ErasureBacklog(ctx context.Context, max int) ([]ErasureBacklog, error)
	// Erase erases every item queued for the containers named by IDs
	// before the call, then takes them off the queue.
	Erase(ctx context.Context, ids []string) (EraseResult, error)
}

// ErasureBacklog is one container's erasure queue.
type ErasureBacklog struct {
	ID    string // for Erase
	Label string // the container's link, for metrics and logs
	// Expired and By are the expiry instant and the erase-by instant of
	// the queue's most urgent item.
	Expired, By time.Time
	// Items and Bytes count the queue, up to the max asked for.
	Items int
	Bytes int64
	// Busy says the container's data is still being deleted (a dropped
	// container): it cannot be erased yet.
	Busy bool
}

// due reports whether the queue should be erased at now.
func (b ErasureBacklog) due(now time.Time) bool {
	return !b.Busy && !now.Before(b.Expired.Add(b.By.Sub(b.Expired)/2))
}

// pressing reports whether the queue's erasure can wait no longer for
// users to leave capacity: a quarter of its deadline is left.
func (b ErasureBacklog) pressing(now time.Time) bool {
	return !now.Before(b.By.Add(-b.By.Sub(b.Expired) / 4))
}

// EraseResult reports an Erase.
type EraseResult struct {
	// Expired has the expiry instant of each item erased.
	Expired []time.Time
	Bytes   int64
	// Physical is false when the store cannot erase deleted bytes from its
	// files (storage.Eraser): the items' keys and change-feed versions are
	// gone, their bytes may not be.
	Physical bool
}

// ErasureMetrics receives what the erasure loop measures.
type ErasureMetrics interface {
	// AwaitingErasure sets the items and bytes of a container queued for
	// erasure.
	AwaitingErasure(container string, items int, bytes int64)
	// Erased observes, for one erased item, the time from its expiry to
	// its erasure.
	Erased(lag time.Duration)
	// ForgetErasure drops the series of a container with nothing queued.
	ForgetErasure(container string)
}

// DefaultEraseDeadline is the erasure deadline of a container that does
// not set its own.
const DefaultEraseDeadline = time.Hour

// DefaultEraseInterval is how often the erasure loop looks at the most
// urgent entry of each queue; a look costs a read or two per container
// with a queue.
const DefaultEraseInterval = time.Second

// DefaultEraseCountInterval is how often it counts the queues for the
// metrics, a cost that grows with them.
const DefaultEraseCountInterval = 10 * time.Second

// MinEraseDeadline is the shortest erasure deadline: the purge (B3, a
// second), the loop's look (a second) and the erasure itself must fit in
// the half of it left after an item is due.
const MinEraseDeadline = 10 * time.Second

// ErasureConfig configures an Erasure. Only Target is required.
type ErasureConfig struct {
	Target   EraseTarget
	Clock    clock.Clock
	Interval time.Duration
	// Budget, when set, is the purge's: a due container whose users have
	// used its capacity is erased later, once they leave some or a
	// quarter of the deadline is left, whichever comes first.
	Budget *Budget
	// CountInterval spaces the counts for the metrics; CountMax caps the
	// items counted per container.
	CountInterval time.Duration
	CountMax      int
	Metrics       ErasureMetrics
	Logger        *slog.Logger
}

// Erasure is the erasure loop: one per store, beside the Purger.
type Erasure struct {
	cfg    ErasureConfig
	ctx    context.Context
	cancel context.CancelFunc
	donec  chan struct{}
	once   sync.Once

	pass    sync.Mutex // serialises passes; guards the fields below
	known   map[string]bool
	counted time.Time // the last counting pass
}

// NewErasure returns a stopped erasure loop.
func NewErasure(cfg ErasureConfig) *Erasure {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultEraseInterval
	}
	if cfg.CountInterval <= 0 {
		cfg.CountInterval = DefaultEraseCountInterval
	}
	if cfg.CountMax <= 0 {
		cfg.CountMax = DefaultCountMax
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Erasure{cfg: cfg, ctx: ctx, cancel: cancel, donec: make(chan struct{}), known: map[string]bool{}}
}

// Start starts the loop.
func (e *Erasure) Start() {
	e.once.Do(func() { go e.run() })
}

// Stop stops the loop and waits for it: an erasure in progress is
// cancelled and is done again from its queue after a restart.
func (e *Erasure) Stop() {
	e.cancel()
	started := true
	e.once.Do(func() { started = false })
	if started {
		<-e.donec
	}
}

func (e *Erasure) run() {
	defer close(e.donec)
	for {
		if err := e.look(e.ctx, false); err != nil && e.ctx.Err() == nil {
			e.cfg.Logger.Error("Erasure pass failed.", "err", err)
		}
		select {
		case <-e.ctx.Done():
			return
		case <-e.cfg.Clock.After(e.cfg.Interval):
		}
	}
}

// Pass looks at every erasure queue once, counts them for the metrics,
// and erases together the containers whose queues are due.
func (e *Erasure) Pass(ctx context.Context) error { return e.look(ctx, true) }

// look is a pass; it counts the queues when count is set or their last
// count is CountInterval old.
func (e *Erasure) look(ctx context.Context, count bool) error {
	e.pass.Lock()
	defer e.pass.Unlock()
	now := e.cfg.Clock.Now()
	count = count || now.Sub(e.counted) >= e.cfg.CountInterval
	max := 1
	if count {
		max, e.counted = e.cfg.CountMax, now
	}
	backlog, err := e.cfg.Target.ErasureBacklog(ctx, max)
	if err != nil {
		return err
	}
	var due []string
	var erasing []ErasureBacklog
	for _, b := range backlog {
		if !b.due(now) {
			continue
		}
		if e.cfg.Budget != nil && e.cfg.Budget.Available(b.Label) <= 0 && !b.pressing(now) {
			continue // users first (ttl.md A4)
		}
		due = append(due, b.ID)
		erasing = append(erasing, b)
	}
	if count {
		seen := map[string]bool{}
		for _, b := range backlog {
			seen[b.Label] = true
			e.cfg.Metrics.AwaitingErasure(b.Label, b.Items, b.Bytes)
		}
		for label := range e.known {
			if !seen[label] {
				e.cfg.Metrics.ForgetErasure(label)
			}
		}
		e.known = seen
	}
	if len(due) == 0 {
		return nil
	}
	res, err := e.cfg.Target.Erase(ctx, due)
	if err != nil {
		return err
	}
	done := e.cfg.Clock.Now()
	for _, t := range res.Expired {
		e.cfg.Metrics.Erased(done.Sub(t))
	}
	for _, b := range erasing {
		e.cfg.Metrics.AwaitingErasure(b.Label, 0, 0)
	}
	return nil
}
