package ttl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// Target is the store as the purger sees it. The engine implements it: it
// knows the key layout of items and of the two expiry indexes.
//
// The purger is the only caller, from one goroutine; Target methods need
// not be safe for concurrent use by it, but they run concurrently with user
// requests.
type Target interface {
	// Containers lists the containers of the store in which an item may
	// expire (History.NeedsPurge), with their committed History; it may
	// list others too. The purger forgets its state for containers no
	// longer listed. It is called once per pass, so its cost should grow
	// with the containers it lists, not with every container of the store.
	// The purger does not modify the slice, so a Target may hand out the
	// same one while its list is unchanged.
	Containers(ctx context.Context) ([]Container, error)

	// PurgeDue physically deletes up to p.Limit items of p.Container that
	// are expired at p.Now, lowest index keys first, and reports them.
	//
	// Expiry must be judged with the History read in the same transaction
	// as the deletion, through History.Horizon(p.Now), never with a copy
	// held across transactions, so a setting change that commits during a
	// pass is respected. Each item goes in one atomic write together with
	// its index entries, its expiry index entry and, when the change feed
	// keeps deletes, its expiry record (B5). An entry whose item was
	// rewritten since it was read is no longer in the index and is skipped.
	//
	// More reports that expired items may remain. On error, Items lists
	// what was deleted before it.
	PurgeDue(ctx context.Context, p PurgeParams) (PurgeResult, error)

	// SweepHistory replaces the container's History h with
	// h.Swept(p.Through) in one transaction, reading h in it. The purger
	// calls it after a pass left no expired item behind, so the epochs it
	// drops have no expired item left on disk.
	SweepHistory(ctx context.Context, p SweepParams) error
}

// DueCounter is an optional interface of a Target that can count a
// container's expired items still on disk, for the items-awaiting-purge
// metric. Without it the metric reads 0 after a pass that left nothing
// behind and keeps its last value otherwise.
type DueCounter interface {
	// CountDue counts items of p.Container expired at p.Now, stopping at
	// p.Max. Its cost must grow with expired items only.
	CountDue(ctx context.Context, p CountDueParams) (int, error)
}

// FirstEntries is an optional interface of a Target that can read the
// lowest entry of each expiry index of a container. With it, after a pass
// that left nothing expired in a container, the purger knows when the
// container's next stored item falls due (History.NextDue) and leaves the
// container alone until then, unless its setting changes or a user
// request is charged to it (a write may add an item due sooner). Without
// it, the purger looks at every listed container whose horizon moved,
// which with TTL on is every container once a second.
type FirstEntries interface {
	// FirstEntries returns the lowest key of each expiry index of
	// p.Container, NoKey for an empty index. Its cost must not grow with
	// the live items.
	FirstEntries(ctx context.Context, p FirstEntriesParams) (Keys, error)
}

// FirstEntriesParams asks a FirstEntries Target about one container.
type FirstEntriesParams struct {
	Container string
}

// Keys are index keys, one per expiry index: a due second (DueIndex) and
// a _ts (InheritIndex); NoKey for none.
type Keys struct {
	OwnDue    int64
	InheritTS int64
}

// Container is one container as listed by Target.Containers.
type Container struct {
	// ID identifies the container for the budget, the metrics and the
	// Target: the same string the engine passes to Budget.Charge.
	ID      string
	History History
}

// PurgeParams asks a Target to purge one batch.
type PurgeParams struct {
	Container string
	Now       time.Time
	Limit     int
}

// PurgeResult reports one batch.
type PurgeResult struct {
	// Items has one entry per item deleted.
	Items []PurgedItem
	// More reports that expired items may remain.
	More bool
	// RU is what the batch cost in request units, when the Target measures
	// it; 0 means len(Items) × Config.ItemCost.
	RU float64
	// Elsewhere, when positive, reports that another purger sharing the
	// store (another gateway) owns the container's purge for at least that
	// long: nothing was done, and the purger leaves the container to it
	// until then.
	Elsewhere time.Duration
}

// PurgedItem is a deleted item as it was stored.
type PurgedItem struct {
	TS  int64 // its _ts
	TTL ItemTTL
}

// SweepParams asks a Target to drop swept epochs.
type SweepParams struct {
	Container string
	Through   uint64
}

// CountDueParams asks a DueCounter for a count.
type CountDueParams struct {
	Container string
	Now       time.Time
	Max       int
}

// Metrics receives what the purger measures (B5). Package ttlmetrics
// exports it to Prometheus; this package stays free of it because the
// Prometheus client reaches net/http.
type Metrics interface {
	// AwaitingPurge sets the number of expired items of a container still
	// on disk.
	AwaitingPurge(container string, items int)
	// Purged counts items physically deleted.
	Purged(container string, items int)
	// Lag observes, for one purged item, the time from its expiry to its
	// physical deletion.
	Lag(container string, lag time.Duration)
	// Deferred counts a batch put off because user requests had used the
	// container's capacity.
	Deferred(container string)
	// Forget drops the series of a container that no longer exists.
	Forget(container string)
}

// Defaults for Config.
const (
	// DefaultInterval keeps purge lag well under a second (B3). A pass
	// costs store work only for containers that have some: with a
	// FirstEntries Target, a container with nothing expired is skipped
	// until its next item falls due or a request is charged to it.
	DefaultInterval = 200 * time.Millisecond
	// DefaultBatchSize bounds the work of one atomic step, so a pass
	// yields to user requests often. Committing a batch is one stretch of
	// work the purge cannot interrupt for a user request; at 100 items it
	// showed in user reads' p99 while a backlog drained (ratios 1.01–1.26
	// against 0.86–1.04 at 25, docs/benchmarks.md), for 8% more items per
	// second when nothing else runs.
	DefaultBatchSize = 25
	// DefaultItemCost is the request units charged to the budget per
	// purged item when the Target does not measure it: of the order of
	// what Cosmos DB charges for a point delete of a small item, so that a
	// container's budget means about the same for user deletes and for
	// expiry.
	DefaultItemCost = 5
	// DefaultCountInterval spaces DueCounter calls per container.
	DefaultCountInterval = time.Second
	// DefaultCountMax caps a DueCounter count.
	DefaultCountMax = 1_000_000
)

// Config configures a Purger. Only Target is required.
type Config struct {
	Target Target
	// Clock gives now for expiry and drives the wake-up timer; it must be
	// the store's authoritative clock (B6). Default clock.Real.
	Clock clock.Clock
	// Budget is shared with the engine, which charges user requests to it.
	// Default NewBudget(Clock, DefaultRUPerSecond).
	Budget *Budget
	// Interval is the longest the purger sleeps between passes.
	Interval time.Duration
	// BatchSize is the most items one PurgeDue call deletes.
	BatchSize int
	// ItemCost is the request units one purged item costs the budget.
	ItemCost float64
	// CountInterval spaces DueCounter calls per container; CountMax caps
	// them.
	CountInterval time.Duration
	CountMax      int
	// Metrics receives measurements; nil discards them.
	Metrics Metrics
	// Logger reports failed passes, which have no caller to return to;
	// nil discards.
	Logger *slog.Logger
}

func (c *Config) fill() {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Budget == nil {
		c.Budget = NewBudget(c.Clock, DefaultRUPerSecond)
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.ItemCost <= 0 {
		c.ItemCost = DefaultItemCost
	}
	if c.CountInterval <= 0 {
		c.CountInterval = DefaultCountInterval
	}
	if c.CountMax <= 0 {
		c.CountMax = DefaultCountMax
	}
	if c.Metrics == nil {
		c.Metrics = nopMetrics{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Purger physically deletes expired items in the background. There is one
// per store: it owns the purge of every container, so no two purgers race
// over the same index (several gateways over one store will elect one with
// a lease; see docs/design/ttl.md).
//
// It keeps nothing that matters in memory. The expiry indexes are its
// queue, so after a crash or restart it resumes where the committed state
// says it stopped.
//
// The loop, modelled on etcd's lessor: run a pass; if some container has
// expired items left and budget to purge them, run the next pass at once,
// else sleep for Interval or until Kick; stop when Stop is called. A pass
// purges one batch per container, so containers share the store fairly.
type Purger struct {
	cfg Config

	kickc  chan struct{}
	stopc  chan struct{}
	donec  chan struct{}
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	started bool
	stopped bool

	// pass serialises passes, whether run by the loop or by Pass; it
	// guards the fields below.
	pass    sync.Mutex
	done    map[string]idle      // containers a pass left with nothing expired
	counted map[string]time.Time // last DueCounter call
	away    map[string]time.Time // containers another purger owns, until when
	known   map[string]bool      // containers listed by the last pass
	spare   map[string]bool      // the map before known, reused for the next pass
}

// idle is what the purger knows of a container that the last pass left
// with nothing expired on disk.
type idle struct {
	// z is that pass's horizon: while the horizon stays the same nothing
	// new can be expired, since entries are written above the horizon of
	// their instant.
	z Horizon
	// seq is the current epoch's Seq then: a change of setting makes a
	// new one.
	seq uint64
	// scheduled says wake is known (the Target has FirstEntries): no
	// stored entry falls due before wake, or ever with time alone when
	// wake is zero.
	scheduled bool
	wake      time.Time
}

// New returns a stopped Purger.
func New(cfg Config) *Purger {
	cfg.fill()
	ctx, cancel := context.WithCancel(context.Background())
	return &Purger{
		cfg:     cfg,
		kickc:   make(chan struct{}, 1),
		stopc:   make(chan struct{}),
		donec:   make(chan struct{}),
		ctx:     ctx,
		cancel:  cancel,
		done:    map[string]idle{},
		counted: map[string]time.Time{},
		away:    map[string]time.Time{},
		known:   map[string]bool{},
	}
}

// Budget returns the budget user requests must be charged to.
func (p *Purger) Budget() *Budget { return p.cfg.Budget }

// Start starts the loop. It does nothing if the purger was started or
// stopped before.
func (p *Purger) Start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started || p.stopped {
		return
	}
	p.started = true
	go p.run()
}

// Stop asks the loop to stop and returns at once. A batch in flight is
// cancelled through its context; being atomic per item, it leaves nothing
// half done. Stop may be called more than once.
func (p *Purger) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	close(p.stopc)
	p.cancel()
}

// Close stops the loop and waits until it has exited. It always returns
// nil; it may be called more than once.
func (p *Purger) Close() error {
	p.Stop()
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if started {
		<-p.donec
	}
	return nil
}

// Kick wakes the loop for a pass now instead of at the end of the
// interval: for example after a setting change that made items expire.
// It never blocks.
func (p *Purger) Kick() {
	select {
	case p.kickc <- struct{}{}:
	default:
	}
}

func (p *Purger) run() {
	defer close(p.donec)
	// A failure that persists is logged once a minute, not every pass.
	var lastErr string
	var loggedAt time.Time
	for {
		res, err := p.Pass(p.ctx)
		if p.ctx.Err() != nil {
			return
		}
		if err != nil {
			now := p.cfg.Clock.Now()
			if err.Error() != lastErr || now.Sub(loggedAt) >= time.Minute {
				p.cfg.Logger.Warn("Expired items could not all be purged.", "err", err)
				lastErr, loggedAt = err.Error(), now
			}
		} else {
			lastErr = ""
		}
		if res.More {
			select {
			case <-p.stopc:
				return
			default:
				continue
			}
		}
		select {
		case <-p.stopc:
			return
		case <-p.kickc:
		case <-p.cfg.Clock.After(p.cfg.Interval):
		}
	}
}

// PassResult reports one pass.
type PassResult struct {
	// Purged is the number of items deleted.
	Purged int
	// Deferred is the number of containers whose batch was put off
	// because user requests had used their capacity.
	Deferred int
	// More reports that some container has expired items left and
	// capacity to purge them: the loop runs again at once.
	More bool
}

// Pass runs one pass over every container synchronously: one batch each.
// The loop calls it; tests and tools may too. Passes never overlap.
func (p *Purger) Pass(ctx context.Context) (PassResult, error) {
	p.pass.Lock()
	defer p.pass.Unlock()
	var res PassResult
	if p.cfg.Target == nil {
		return res, errors.New("ttl: purger has no target")
	}
	// Taken before the containers are read: a write charged after this
	// committed after it too, and is seen by this pass or the next.
	used := p.cfg.Budget.takeUsed()
	cs, err := p.cfg.Target.Containers(ctx)
	if err != nil {
		p.cfg.Budget.giveBackUsed(used)
		return res, fmt.Errorf("list containers: %w", err)
	}
	var errs []error
	seen := p.spare
	if seen == nil {
		seen = make(map[string]bool, len(cs))
	}
	clear(seen)
	for _, c := range cs {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			// The containers not reached keep their mark for the next
			// pass.
			p.cfg.Budget.giveBackUsed(used)
			break
		}
		seen[c.ID] = true
		_, wasUsed := used[c.ID]
		delete(used, c.ID)
		if err := p.purge(ctx, c, wasUsed, &res); err != nil {
			errs = append(errs, fmt.Errorf("purge container %q: %w", c.ID, err))
		}
	}
	if ctx.Err() == nil {
		for id := range p.known {
			if !seen[id] {
				p.forget(id)
			}
		}
		p.known, p.spare = seen, p.known
	}
	return res, errors.Join(errs...)
}

// purge runs one batch for container c; used reports that a user request
// was charged to it since the previous pass.
func (p *Purger) purge(ctx context.Context, c Container, used bool, res *PassResult) error {
	now := p.cfg.Clock.Now()
	h := c.History
	if !h.NeedsPurge() {
		// TTL is off and nothing expired under an earlier setting is left
		// (A5): no work.
		if _, ok := p.done[c.ID]; !ok {
			p.done[c.ID] = idle{z: Horizon{OwnDue: NoKey, InheritTS: NoKey}, seq: h.Current().Seq}
			p.cfg.Metrics.AwaitingPurge(c.ID, 0)
		}
		return nil
	}
	if until, ok := p.away[c.ID]; ok {
		if now.Before(until) {
			return nil // another gateway's purger owns it
		}
		delete(p.away, c.ID)
	}
	z := h.Horizon(now)
	sweep := h.sweepable(now)
	if last, ok := p.done[c.ID]; ok && sweep == 0 {
		if last.z == z {
			// Nothing has fallen due since the last pass that left
			// nothing behind: entries written since lie above that
			// horizon.
			return nil
		}
		if last.scheduled && !used && last.seq == h.Current().Seq && (last.wake.IsZero() || now.Before(last.wake)) {
			// No stored entry falls due before wake, no write added one
			// since, and the setting is the same.
			return nil
		}
	}
	// Until a pass leaves it with nothing expired again, the container is
	// looked at every pass: a batch that fails or is put off must not
	// leave a schedule that a write it consumed would have changed.
	delete(p.done, c.ID)

	granted, userLoad := p.cfg.Budget.take(c.ID, p.cfg.BatchSize, p.cfg.ItemCost)
	if granted == 0 {
		if userLoad {
			res.Deferred++
			p.cfg.Metrics.Deferred(c.ID)
		}
		p.count(ctx, c.ID, now)
		return nil
	}
	out, err := p.cfg.Target.PurgeDue(ctx, PurgeParams{Container: c.ID, Now: now, Limit: granted})
	spent := out.RU
	if spent <= 0 {
		spent = float64(len(out.Items)) * p.cfg.ItemCost
	}
	p.cfg.Budget.settle(c.ID, float64(granted)*p.cfg.ItemCost, spent)
	if out.Elsewhere > 0 && err == nil {
		// Not this purger's to do; it looks again when the owner's
		// lease would lapse unless renewed.
		p.away[c.ID] = now.Add(out.Elsewhere)
		return nil
	}
	p.record(c, out.Items)
	res.Purged += len(out.Items)
	if err != nil {
		// The items it could not purge are still waiting: the metric
		// must say so, not keep what it said before.
		p.count(ctx, c.ID, now)
		return err
	}
	if out.More {
		if len(out.Items) > 0 {
			res.More = true
		}
		p.count(ctx, c.ID, now)
		return nil
	}

	// Nothing expired at now is left on disk.
	p.done[c.ID] = p.idleAfter(ctx, c, z)
	p.cfg.Metrics.AwaitingPurge(c.ID, 0)
	if sweep != 0 {
		if err := p.cfg.Target.SweepHistory(ctx, SweepParams{Container: c.ID, Through: sweep}); err != nil {
			return fmt.Errorf("sweep epochs through %d: %w", sweep, err)
		}
	}
	return nil
}

// idleAfter returns the state of container c after a pass at horizon z
// left nothing expired in it: with a FirstEntries Target, when its next
// stored entry falls due. It reads the entries after the pass's deletions,
// so an entry written before that is counted, and one written after it is
// announced by the write's charge.
func (p *Purger) idleAfter(ctx context.Context, c Container, z Horizon) idle {
	st := idle{z: z, seq: c.History.Current().Seq}
	fe, ok := p.cfg.Target.(FirstEntries)
	if !ok {
		return st
	}
	first, err := fe.FirstEntries(ctx, FirstEntriesParams{Container: c.ID})
	if err != nil {
		// Without a schedule the container is looked at whenever its
		// horizon moves, as without FirstEntries.
		p.cfg.Logger.Warn("The next expiry could not be read.", "container", c.ID, "err", err)
		return st
	}
	st.wake, _ = c.History.NextDue(first)
	st.scheduled = true
	return st
}

// record measures purged items: count and lag from expiry to now.
func (p *Purger) record(c Container, items []PurgedItem) {
	if len(items) == 0 {
		return
	}
	deleted := p.cfg.Clock.Now()
	for _, it := range items {
		if at, ok := c.History.ExpiresAt(it.TS, it.TTL); ok {
			p.cfg.Metrics.Lag(c.ID, max(deleted.Sub(at), 0))
		}
	}
	p.cfg.Metrics.Purged(c.ID, len(items))
}

// count refreshes the awaiting-purge metric of a container with a backlog,
// at most once per CountInterval.
func (p *Purger) count(ctx context.Context, id string, now time.Time) {
	dc, ok := p.cfg.Target.(DueCounter)
	if !ok {
		return
	}
	if last, ok := p.counted[id]; ok && now.Sub(last) < p.cfg.CountInterval {
		return
	}
	p.counted[id] = now
	n, err := dc.CountDue(ctx, CountDueParams{Container: id, Now: now, Max: p.cfg.CountMax})
	if err != nil {
		p.cfg.Logger.Warn("Expired items could not be counted.", "container", id, "err", err)
		return
	}
	p.cfg.Metrics.AwaitingPurge(id, n)
}

// forget drops the state of a container that no longer exists.
func (p *Purger) forget(id string) {
	delete(p.done, id)
	delete(p.counted, id)
	delete(p.away, id)
	p.cfg.Budget.Forget(id)
	p.cfg.Metrics.Forget(id)
}

type nopMetrics struct{}

func (nopMetrics) AwaitingPurge(string, int) {}
func (nopMetrics) Purged(string, int)        {}
func (nopMetrics) Lag(string, time.Duration) {}
func (nopMetrics) Deferred(string)           {}
func (nopMetrics) Forget(string)             {}

var _ Metrics = nopMetrics{}

func (nopMetrics) AwaitingErasure(string, int, int64) {}
func (nopMetrics) Erased(time.Duration)               {}
func (nopMetrics) ForgetErasure(string)               {}

var _ ErasureMetrics = nopMetrics{}
