package ttl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// fakeTarget is an in-memory store: per container a History and items,
// judged with the History as committed, as the contract requires.
type fakeTarget struct {
	mu         sync.Mutex
	order      []string
	containers map[string]*fakeContainer

	lists  int
	purges []PurgeParams
	sweeps []SweepParams
	counts int

	fail map[string]error // PurgeDue fails for these containers
	// elsewhere: another purger owns these containers for that long.
	elsewhere map[string]time.Duration
	block     chan struct{} // when set, PurgeDue signals it and waits for ctx
}

type fakeContainer struct {
	h     History
	items map[string]PurgedItem
}

func newFakeTarget() *fakeTarget {
	return &fakeTarget{containers: map[string]*fakeContainer{}, fail: map[string]error{}}
}

func (f *fakeTarget) add(id string, h History) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.order = append(f.order, id)
	f.containers[id] = &fakeContainer{h: h, items: map[string]PurgedItem{}}
}

func (f *fakeTarget) drop(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.order = slices.DeleteFunc(f.order, func(s string) bool { return s == id })
	delete(f.containers, id)
}

func (f *fakeTarget) write(container, id string, ts int64, item ItemTTL) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.containers[container].items[id] = PurgedItem{TS: ts, TTL: item}
}

func (f *fakeTarget) change(container string, s Setting, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[container]
	c.h = c.h.Change(s, at)
}

func (f *fakeTarget) history(container string) History {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.containers[container].h
}

func (f *fakeTarget) left(container string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.containers[container].items)
}

func (f *fakeTarget) calls() (lists, purges, sweeps int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists, len(f.purges), len(f.sweeps)
}

func (f *fakeTarget) Containers(ctx context.Context) ([]Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	var out []Container
	for _, id := range f.order {
		out = append(out, Container{ID: id, History: f.containers[id].h})
	}
	return out, nil
}

// expired lists a container's expired items, lowest index key first.
func (c *fakeContainer) expired(now time.Time) []string {
	z := c.h.Horizon(now)
	var ids []string
	for id, it := range c.items {
		if z.Expired(it.TS, it.TTL) {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := c.items[ids[i]], c.items[ids[j]]
		return cmp.Or(cmp.Compare(EntryFor(a.TS, a.TTL).Key, EntryFor(b.TS, b.TTL).Key), strings.Compare(ids[i], ids[j])) < 0
	})
	return ids
}

func (f *fakeTarget) PurgeDue(ctx context.Context, p PurgeParams) (PurgeResult, error) {
	f.mu.Lock()
	block := f.block
	f.purges = append(f.purges, p)
	f.mu.Unlock()
	if block != nil {
		block <- struct{}{}
		<-ctx.Done()
		return PurgeResult{}, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail[p.Container]; err != nil {
		return PurgeResult{}, err
	}
	if d := f.elsewhere[p.Container]; d > 0 {
		return PurgeResult{Elsewhere: d}, nil
	}
	c := f.containers[p.Container]
	ids := c.expired(p.Now)
	var res PurgeResult
	for _, id := range ids {
		if len(res.Items) == p.Limit {
			res.More = true
			break
		}
		res.Items = append(res.Items, c.items[id])
		delete(c.items, id)
	}
	return res, nil
}

func (f *fakeTarget) SweepHistory(ctx context.Context, p SweepParams) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweeps = append(f.sweeps, p)
	c := f.containers[p.Container]
	c.h = c.h.Swept(p.Through)
	return nil
}

// countingTarget adds the optional DueCounter.
type countingTarget struct{ *fakeTarget }

func (f countingTarget) CountDue(ctx context.Context, p CountDueParams) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts++
	return min(len(f.containers[p.Container].expired(p.Now)), p.Max), nil
}

var (
	_ Target     = (*fakeTarget)(nil)
	_ DueCounter = countingTarget{}
)

type fakeMetrics struct {
	mu        sync.Mutex
	awaiting  map[string]int
	purged    map[string]int
	deferred  map[string]int
	lags      []time.Duration
	forgotten []string
}

func newFakeMetrics() *fakeMetrics {
	return &fakeMetrics{awaiting: map[string]int{}, purged: map[string]int{}, deferred: map[string]int{}}
}

func (m *fakeMetrics) AwaitingPurge(c string, n int) { m.mu.Lock(); m.awaiting[c] = n; m.mu.Unlock() }
func (m *fakeMetrics) Purged(c string, n int)        { m.mu.Lock(); m.purged[c] += n; m.mu.Unlock() }
func (m *fakeMetrics) Deferred(c string)             { m.mu.Lock(); m.deferred[c]++; m.mu.Unlock() }
func (m *fakeMetrics) Forget(c string) {
	m.mu.Lock()
	m.forgotten = append(m.forgotten, c)
	m.mu.Unlock()
}
func (m *fakeMetrics) Lag(c string, d time.Duration) {
	m.mu.Lock()
	m.lags = append(m.lags, d)
	m.mu.Unlock()
}

func (m *fakeMetrics) snapshot() (purged map[string]int, lags []time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps(m.purged), slices.Clone(m.lags)
}

func maps(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// fill writes n inheriting items with _ts from ts, one per second.
func fill(f *fakeTarget, container, prefix string, n int, ts int64, item ItemTTL) {
	for i := range n {
		f.write(container, fmt.Sprintf("%s%04d", prefix, i), ts+int64(i%10), item)
	}
}

func TestPurger_Batches(t *testing.T) {
	clk := clock.NewManual(sec(100))
	f := newFakeTarget()
	f.add("c", NewHistory(Enabled(10), sec(0)))
	fill(f, "c", "old", 250, t0, ItemTTL{})        // due at 10…19
	fill(f, "c", "own", 30, t0, OwnTTL(50))        // due at 50…59
	fill(f, "c", "live", 50, t0+95, ItemTTL{})     // due at 105…
	fill(f, "c", "never", 10, t0, NeverTTL())      // never
	fill(f, "c", "later", 10, t0+60, OwnTTL(1000)) // due at 1060…
	m := newFakeMetrics()
	p := New(Config{Target: f, Clock: clk, BatchSize: 100, Metrics: m})

	var got []int
	for {
		res, err := p.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res.Purged)
		if !res.More {
			break
		}
	}
	if want := []int{100, 100, 80}; !slices.Equal(got, want) {
		t.Errorf("batches = %v, want %v", got, want)
	}
	if left := f.left("c"); left != 70 {
		t.Errorf("%d items left, want 70", left)
	}
	for _, pp := range f.purges {
		if pp.Limit > 100 || !pp.Now.Equal(sec(100)) {
			t.Errorf("PurgeDue(%+v)", pp)
		}
	}
	purged, lags := m.snapshot()
	if purged["c"] != 280 || len(lags) != 280 {
		t.Errorf("metrics: purged %v, %d lags", purged, len(lags))
	}
	for _, l := range lags {
		if l < 41*time.Second || l > 90*time.Second {
			t.Fatalf("lag %v, want between 41 s and 90 s", l)
		}
	}
	// Nothing new is due: the next passes in the same second do not ask.
	_, before, _ := f.calls()
	for range 3 {
		if _, err := p.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, after, _ := f.calls(); after != before {
		t.Errorf("%d PurgeDue calls with nothing due", after-before)
	}
	clk.Advance(6 * time.Second) // 106: the first "live" items fall due
	res, _ := p.Pass(context.Background())
	if res.Purged != 10 {
		t.Errorf("at 106 purged %d, want the 10 items written at 95", res.Purged)
	}
}

func TestA4_PurgeDefersUnderUserLoadThenCatchesUp(t *testing.T) {
	clk := clock.NewManual(sec(100))
	f := newFakeTarget()
	f.add("busy", NewHistory(Enabled(10), sec(0)))
	fill(f, "busy", "x", 1000, t0, ItemTTL{})
	m := newFakeMetrics()
	budget := NewBudget(clk, 1000) // 200 items a second at 5 RU
	p := New(Config{Target: f, Clock: clk, Budget: budget, ItemCost: 5, BatchSize: 100, Metrics: m})

	// Three seconds of user load at twice the capacity, which has already
	// used the capacity banked before: no purge at all.
	step := 100 * time.Millisecond
	budget.Charge("busy", 1000)
	for range 30 {
		budget.Charge("busy", 200)
		res, err := p.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Purged != 0 {
			t.Fatalf("purged %d under load", res.Purged)
		}
		clk.Advance(step)
	}
	if _, purges, _ := f.calls(); purges != 0 {
		t.Errorf("%d PurgeDue calls under load", purges)
	}
	m.mu.Lock()
	deferred := m.deferred["busy"]
	m.mu.Unlock()
	if deferred != 30 {
		t.Errorf("deferred batches = %d, want 30", deferred)
	}

	// Load stops: within about a second purging resumes, then runs at the
	// container's full rate, 200 items a second, until caught up.
	var purgedAt []int
	for sec := 0; sec < 8; sec++ {
		n := 0
		for range 10 {
			for {
				res, err := p.Pass(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				n += res.Purged
				if !res.More {
					break
				}
			}
			clk.Advance(step)
		}
		purgedAt = append(purgedAt, n)
	}
	if f.left("busy") != 0 {
		t.Fatalf("%d items left after catching up", f.left("busy"))
	}
	// The first second pays back the overload (one second's worth at
	// most); then full speed.
	if want := []int{0, 200, 200, 200, 200, 200, 0, 0}; !slices.Equal(purgedAt, want) {
		t.Errorf("items purged per second after the load = %v", purgedAt)
	}
}

func TestA4_PurgeTakesOnlySpareCapacity(t *testing.T) {
	clk := clock.NewManual(sec(100))
	f := newFakeTarget()
	f.add("c", NewHistory(Enabled(10), sec(0)))
	fill(f, "c", "x", 1500, t0, ItemTTL{})
	budget := NewBudget(clk, 1000)
	p := New(Config{Target: f, Clock: clk, Budget: budget, ItemCost: 5, BatchSize: 20})
	// Users steadily use 60 % of the capacity for ten seconds.
	total := 0
	for range 100 {
		budget.Charge("c", 60)
		res, _ := p.Pass(context.Background())
		total += res.Purged
		clk.Advance(100 * time.Millisecond)
	}
	// The purger gets the other 40 %: 80 items a second, plus the first
	// second's bank.
	if total < 750 || total > 1050 {
		t.Errorf("purged %d items in 10 s beside 60 %% user load, want about 800", total)
	}
}

func TestA5_NoPurgeWhileTTLOff(t *testing.T) {
	clk := clock.NewManual(sec(1000))
	f := newFakeTarget()
	f.add("off", NewHistory(Setting{}, sec(0)))
	fill(f, "off", "own", 20, t0, OwnTTL(5)) // stored, not interpreted
	fill(f, "off", "inh", 20, t0, ItemTTL{})
	m := newFakeMetrics()
	p := New(Config{Target: f, Clock: clk, Metrics: m})
	for range 5 {
		if _, err := p.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	if _, purges, _ := f.calls(); purges != 0 || f.left("off") != 40 {
		t.Errorf("TTL off: %d PurgeDue calls, %d items left", purges, f.left("off"))
	}

	// Enabled: the own ttl comes into force measured from _ts.
	f.change("off", Enabled(NoDefault), clk.Now())
	if res, _ := p.Pass(context.Background()); res.Purged != 20 {
		t.Errorf("after enabling: purged %d, want the 20 items with ttl 5", res.Purged)
	}
}

// Disabling TTL after items expired: they stay expired (B1), so they are
// still purged (B4); then the old epoch is swept and the purger does no
// more work for the container.
func TestB1_PurgeAfterDisableThenSweep(t *testing.T) {
	clk := clock.NewManual(sec(12.5))
	f := newFakeTarget()
	f.add("c", NewHistory(Enabled(10), sec(0)))
	fill(f, "c", "x", 10, t0, ItemTTL{}) // due 10…19: 10, 11, 12 expired at 12.5
	f.change("c", Setting{}, clk.Now())
	clk.Advance(time.Hour)
	p := New(Config{Target: f, Clock: clk})
	res, err := p.Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Purged != 3 || f.left("c") != 7 {
		t.Errorf("purged %d, left %d; want 3 and 7", res.Purged, f.left("c"))
	}
	if h := f.history("c"); h.NeedsPurge() || len(h.Epochs()) != 1 {
		t.Errorf("history after the sweep: %v", h.Epochs())
	}
	_, purges, sweeps := f.calls()
	for range 5 {
		clk.Advance(time.Second)
		p.Pass(context.Background())
	}
	if _, p2, s2 := f.calls(); p2 != purges || s2 != sweeps {
		t.Errorf("work after the sweep: %d purges, %d sweeps", p2-purges, s2-sweeps)
	}
}

func TestPurger_CountsAwaitingItems(t *testing.T) {
	clk := clock.NewManual(sec(100))
	f := newFakeTarget()
	f.add("c", NewHistory(Enabled(10), sec(0)))
	fill(f, "c", "x", 500, t0, ItemTTL{})
	m := newFakeMetrics()
	p := New(Config{Target: countingTarget{f}, Clock: clk, BatchSize: 100, Metrics: m})
	p.Pass(context.Background())
	m.mu.Lock()
	if m.awaiting["c"] != 400 {
		t.Errorf("awaiting after one batch = %d, want 400", m.awaiting["c"])
	}
	m.mu.Unlock()
	for {
		if res, _ := p.Pass(context.Background()); !res.More {
			break
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.awaiting["c"] != 0 {
		t.Errorf("awaiting after catching up = %d", m.awaiting["c"])
	}
	if f.counts != 1 {
		t.Errorf("%d counts within one CountInterval, want 1", f.counts)
	}
}

func TestPurger_ErrorsAreContainedAndReturned(t *testing.T) {
	clk := clock.NewManual(sec(100))
	f := newFakeTarget()
	f.add("bad", NewHistory(Enabled(10), sec(0)))
	f.add("good", NewHistory(Enabled(10), sec(0)))
	fill(f, "bad", "x", 5, t0, ItemTTL{})
	fill(f, "good", "x", 5, t0, ItemTTL{})
	f.fail["bad"] = errors.New("disk on fire")
	p := New(Config{Target: f, Clock: clk})
	res, err := p.Pass(context.Background())
	if err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("error = %v", err)
	}
	if res.Purged != 5 || f.left("good") != 0 {
		t.Errorf("the good container was not purged: %+v", res)
	}
	if _, err := New(Config{}).Pass(context.Background()); err == nil {
		t.Error("a purger without a target passed")
	}
}

// TestPurger_FailingPurgeShowsItsBacklog: a container whose purge keeps
// failing shows its expired items as awaiting purge, not zero.
func TestPurger_FailingPurgeShowsItsBacklog(t *testing.T) {
	clk := clock.NewManual(sec(100))
	f := newFakeTarget()
	f.add("bad", NewHistory(Enabled(10), sec(0)))
	fill(f, "bad", "x", 5, t0, ItemTTL{})
	f.fail["bad"] = errors.New("disk on fire")
	m := newFakeMetrics()
	p := New(Config{Target: countingTarget{f}, Clock: clk, Metrics: m})
	if _, err := p.Pass(context.Background()); err == nil {
		t.Fatal("the failing purge passed")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.awaiting["bad"]; !ok || n != 5 {
		t.Fatalf("awaiting = %d (set: %v), want 5", n, ok)
	}
}

func TestPurger_ForgetsDroppedContainers(t *testing.T) {
	clk := clock.NewManual(sec(100))
	f := newFakeTarget()
	f.add("a", NewHistory(Enabled(10), sec(0)))
	f.add("b", NewHistory(Enabled(10), sec(0)))
	m := newFakeMetrics()
	p := New(Config{Target: f, Clock: clk, Metrics: m})
	p.Pass(context.Background())
	f.drop("a")
	p.Pass(context.Background())
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Equal(m.forgotten, []string{"a"}) {
		t.Errorf("forgotten = %v", m.forgotten)
	}
}

// A restart loses nothing: the indexes are the queue.
func TestPurger_ResumesAfterRestart(t *testing.T) {
	clk := clock.NewManual(sec(100))
	f := newFakeTarget()
	f.add("c", NewHistory(Enabled(10), sec(0)))
	fill(f, "c", "x", 300, t0, ItemTTL{})
	first := New(Config{Target: f, Clock: clk, BatchSize: 100})
	first.Pass(context.Background())
	first.Close()
	if f.left("c") != 200 {
		t.Fatalf("left %d", f.left("c"))
	}
	second := New(Config{Target: f, Clock: clk, BatchSize: 100})
	for {
		if res, _ := second.Pass(context.Background()); !res.More {
			break
		}
	}
	if f.left("c") != 0 {
		t.Errorf("left %d after the restart", f.left("c"))
	}
}

// sleepClock reports every time the loop goes to sleep, so a test can move
// time exactly when the loop waits.
type sleepClock struct {
	*clock.Manual
	sleeps chan time.Duration
}

func (c *sleepClock) After(d time.Duration) <-chan time.Time {
	ch := c.Manual.After(d)
	// A sleep the test does not wait for (after a last Kick, say) must
	// not block the loop, or Close would wait for it for ever; one not
	// yet taken already says that the loop went to sleep.
	select {
	case c.sleeps <- d:
	default:
	}
	return ch
}

func newSleepClock(at time.Time) *sleepClock {
	return &sleepClock{Manual: clock.NewManual(at), sleeps: make(chan time.Duration, 1)}
}

func (c *sleepClock) waitSleep(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.sleeps:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("the loop never went to sleep")
		return 0
	}
}

func TestB3_PurgeLagUnderOneSecond(t *testing.T) {
	clk := newSleepClock(sec(0))
	f := newFakeTarget()
	f.add("c", NewHistory(Enabled(NoDefault), sec(0)))
	// 600 items falling due over 30 s.
	for i := range 600 {
		f.write("c", fmt.Sprintf("x%03d", i), t0+int64(i%20), OwnTTL(int32(1+i%11)))
	}
	m := newFakeMetrics()
	p := New(Config{Target: f, Clock: clk, Metrics: m})
	p.Start()
	defer p.Close()
	for clk.Now().Before(sec(32)) {
		if d := clk.waitSleep(t); d != DefaultInterval {
			t.Fatalf("slept %v", d)
		}
		clk.Advance(DefaultInterval)
	}
	clk.waitSleep(t)
	if left := f.left("c"); left != 0 {
		t.Fatalf("%d items left", left)
	}
	_, lags := m.snapshot()
	slices.Sort(lags)
	if len(lags) != 600 {
		t.Fatalf("%d lags observed", len(lags))
	}
	p99 := lags[len(lags)*99/100]
	if p99 >= time.Second || lags[len(lags)-1] > DefaultInterval {
		t.Errorf("lag p99 %v, max %v", p99, lags[len(lags)-1])
	}
}

func TestPurger_Kick(t *testing.T) {
	clk := newSleepClock(sec(100))
	f := newFakeTarget()
	f.add("c", NewHistory(Enabled(1000), sec(0)))
	fill(f, "c", "x", 5, t0, ItemTTL{})
	p := New(Config{Target: f, Clock: clk, Interval: time.Hour})
	p.Start()
	defer p.Close()
	clk.waitSleep(t)
	if f.left("c") != 5 {
		t.Fatal("purged items not due")
	}
	// A shorter default makes them expired at once; Kick purges them
	// without waiting for the interval.
	f.change("c", Enabled(10), clk.Now())
	p.Kick()
	clk.waitSleep(t)
	if f.left("c") != 0 {
		t.Errorf("kick did not purge: %d left", f.left("c"))
	}
	p.Kick()
	p.Kick() // never blocks
}

func TestPurger_StopAndClose(t *testing.T) {
	t.Run("close waits for the loop", func(t *testing.T) {
		clk := newSleepClock(sec(100))
		f := newFakeTarget()
		f.add("c", NewHistory(Enabled(10), sec(0)))
		fill(f, "c", "x", 5, t0, ItemTTL{})
		f.block = make(chan struct{})
		p := New(Config{Target: f, Clock: clk})
		p.Start()
		<-f.block // a batch is in flight
		done := make(chan struct{})
		go func() {
			p.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not return")
		}
		// Closed: the loop has exited, so nothing more happens.
		lists, _, _ := f.calls()
		p.Start()
		p.Kick()
		p.Stop()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if l, _, _ := f.calls(); l != lists {
			t.Errorf("%d passes after Close", l-lists)
		}
	})
	t.Run("stop then close", func(t *testing.T) {
		clk := newSleepClock(sec(100))
		f := newFakeTarget()
		p := New(Config{Target: f, Clock: clk})
		p.Start()
		p.Start() // once only
		clk.waitSleep(t)
		p.Stop()
		p.Stop()
		p.Close()
		select {
		case d := <-clk.sleeps:
			t.Errorf("the loop slept again (%v) after Stop", d)
		default:
		}
	})
	t.Run("close without start", func(t *testing.T) {
		p := New(Config{Target: newFakeTarget()})
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		p.Start()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPurger_BudgetIsShared(t *testing.T) {
	b := NewBudget(clock.NewManual(sec(0)), 5)
	if New(Config{Target: newFakeTarget(), Budget: b}).Budget() != b {
		t.Error("Budget() is not the configured budget")
	}
	if New(Config{Target: newFakeTarget()}).Budget() == nil {
		t.Error("no default budget")
	}
}

// lockedBuffer is a log sink the loop and the test can share.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestPurger_LogsAPersistentFailureOncePerMinute(t *testing.T) {
	clk := newSleepClock(sec(100))
	f := newFakeTarget()
	f.add("c", NewHistory(Enabled(10), sec(0)))
	fill(f, "c", "x", 5, t0, ItemTTL{})
	f.fail["c"] = errors.New("disk on fire")
	var logs lockedBuffer
	p := New(Config{Target: f, Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	p.Start()
	defer p.Close()
	for range 10 {
		clk.waitSleep(t)
		clk.Advance(DefaultInterval)
	}
	clk.waitSleep(t)
	if n := strings.Count(logs.String(), "disk on fire"); n != 1 {
		t.Errorf("logged %d times in 2 s:\n%s", n, logs.String())
	}
	clk.Advance(time.Minute)
	clk.waitSleep(t)
	if n := strings.Count(logs.String(), "disk on fire"); n != 2 {
		t.Errorf("logged %d times after a minute", n)
	}
}

// A container whose purge another gateway owns is left to it until the
// owner's lease would lapse: no batch, no charge to the budget, and no
// "nothing left" state that would stop this purger from taking over.
func TestPurger_LeavesAContainerOwnedElsewhere(t *testing.T) {
	clk := clock.NewManual(sec(100))
	f := newFakeTarget()
	f.add("c", NewHistory(Enabled(10), sec(0)))
	fill(f, "c", "old", 30, t0, ItemTTL{})
	f.elsewhere = map[string]time.Duration{"c": 3 * time.Second}
	p := New(Config{Target: f, Clock: clk, BatchSize: 100})
	pass := func() PassResult {
		t.Helper()
		res, err := p.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := pass(); res.Purged != 0 || res.More {
		t.Fatalf("first pass: %+v", res)
	}
	_, asked, _ := f.calls()
	clk.Advance(2 * time.Second)
	pass()
	if _, n, _ := f.calls(); n != asked {
		t.Fatalf("asked again %d times while another purger owns the container", n-asked)
	}
	// The owner stops renewing: its lease lapses, this purger takes over.
	f.mu.Lock()
	f.elsewhere = nil
	f.mu.Unlock()
	clk.Advance(time.Second + time.Millisecond)
	if res := pass(); res.Purged != 30 {
		t.Fatalf("after the lease lapsed purged %d, want 30", res.Purged)
	}
}
