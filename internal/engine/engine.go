// Package engine is Mayfly's domain: databases, containers, items and their
// system properties, patch, transactional batch and bulk, offers, partition
// key ranges, queries over a range index, the change feed and request
// charges; and, as the TTL purger's Target, physical deletion of expired
// items. It knows nothing of HTTP and nothing of any one storage engine:
// it runs on a storage.Store and judges time with a clock.Clock.
//
// Every operation takes one "now" when it starts and decides every expiry in
// that operation with it (ttl.md B6). Errors are *Error values carrying a
// Code; the transport maps codes to statuses.
package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// Config configures an Engine.
type Config struct {
	Store storage.Store
	Clock clock.Clock // nil means the real clock
	// MaxItemSize is the largest item in bytes (default 2 MiB, as the service).
	MaxItemSize int
	// Partitions is how many partition key ranges every container is
	// split into (default 1). Items are placed by effective partition key.
	Partitions int
	// Charges receives every user request's charge, per container link, so
	// background work can yield to users (the purger's budget). May be nil.
	Charges ChargeSink
	// QueryPageTime bounds the evaluation time of one query page on the
	// engine's clock (default 5 s, the service's limit per page). A page
	// that can resume ends early with a continuation; one that cannot
	// fails with RequestTimeout. The request's context bounds it too.
	QueryPageTime time.Duration
	// QueryMemory bounds the estimated bytes of rows one query request
	// holds for ORDER BY, DISTINCT, GROUP BY and aggregates (default
	// eval.DefaultMaxMemory).
	QueryMemory int
	// MaxSortRows bounds the rows an ORDER BY sorted in memory holds at
	// once (eval.MaxSortRows when zero).
	MaxSortRows int
	// LeaseTerm is how long a gateway holds a container's background work
	// without renewing it (DefaultLeaseTerm when zero; lease.go).
	LeaseTerm time.Duration
	// EraseDeadline is how long after an item expires its bytes may stay
	// in the store's files, for containers that do not set their own
	// (ttl.DefaultEraseDeadline when zero; erasure.go).
	EraseDeadline time.Duration
	// ReadOnly: the store was opened for reading only (mayfly check), so
	// the engine writes nothing, not even its clock's floor.
	ReadOnly bool
}

// ChargeSink is told about request units spent by user requests.
type ChargeSink interface {
	Charge(container string, ru float64)
}

// Engine is safe for concurrent use.
type Engine struct {
	store   storage.Store
	clock   clock.Clock
	maxItem int
	charges ChargeSink
	// eraseDeadline is Config.EraseDeadline.
	eraseDeadline time.Duration
	// partitions is the number of ranges of a container whose record
	// does not say (Config.Partitions).
	partitions int

	pageTime time.Duration
	queryMem int
	maxSort  int

	mu      sync.Mutex
	cache   map[string]cachedContainer // by container key
	dbCache map[string]cachedDatabase  // by database id
	dbRids  map[string][]byte          // database id → rid, a hint
	// ridNames maps the rids of databases and containers to the names they
	// were last seen under: a hint for links addressed by rid (rids.go).
	ridNames map[string]string
	// locHints says where items were last found, by id (lochints.go).
	locHints *locHints
	// seen keeps the rows DISTINCT queries' pages returned (distinct.go).
	seen seenSets
	// held keeps the rows of whole results past their pages (heldrows.go).
	held *keeper[*heldRows]
	// kept keeps what pages keep of their candidates for their next
	// pages (kept.go, keptCandidates).
	kept    *keeper[*keptCandidates]
	indexer *Indexer
	// absentWanted are the absence entries queries asked for (absent.go).
	absentWanted map[string]absentWish
	// purgedTo is, per expiry index (by key prefix), the highest entry key
	// a committed purge took: where the next purge starts (purge.go).
	purgedTo map[string][]byte
	// worklist holds the containers with background work (worklist.go).
	worklist workList
	// leases are this engine's leases on background work (lease.go); nil
	// over a store of one process.
	leases *leases

	// Expiry judgements are ordered against TTL setting changes (ttl.md
	// B1) container by container, with each container's settingLock.
	// Every operation that judges a container's items holds its lock
	// shared from before it reads the container's history until it has
	// judged; a change of the container's setting holds it exclusively
	// while it takes its instant and commits. So any judgement made with
	// the old history used a "now" no later than the change's instant, and
	// the new history agrees with it. One container's work never waits for
	// another's: the lock is per container, not one for the engine.
	lockMu sync.Mutex
	locks  map[containerName]*settingLock // guarded by lockMu
	// everyMu orders the judgements that span every container (CheckIndexes)
	// against all setting changes: changes hold it shared, such a judgement
	// exclusively. No request on a container takes it.
	everyMu sync.RWMutex
	// lastStamp is the latest instant handed out by stamp, in Unix
	// nanoseconds: the engine's time never runs backwards, and a setting
	// change is always dated strictly after every judgement before it.
	lastStamp atomic.Int64
	// floor is the latest stamp recorded in the store, or whose record
	// was begun, in Unix nanoseconds (recordFloor); floorBusy is set
	// while a record is under way. readOnly: the store takes no writes,
	// and the floor is only read.
	floor       atomic.Int64
	floorWant   atomic.Int64 // the latest stamp asked to be recorded
	floorBusy   atomic.Bool
	floorWrites sync.WaitGroup // records under way, for tests
	// floorMu guards floorDone, the latest stamp whose record committed,
	// and floorSignal, closed and replaced at each commit (awaitFloor).
	floorMu     sync.Mutex
	floorDone   int64
	floorSignal chan struct{}
	readOnly    bool
	// shared is set when the store owns the clock (storage.Clocked): it is
	// shared by several gateways.
	shared bool
	// groups and groupedWrites count the write transactions committed in
	// groups over a shared store and the writes they held
	// (Engine.updateWriting).
	groups, groupedWrites atomic.Int64
	// noSavepoints is set once the store's transactions turned out to
	// have no savepoints, so that a bulk batch no longer tries to run in
	// one transaction (separateBatch).
	noSavepoints atomic.Bool
	// keyListsWide reads a query that lists partition keys across the
	// container rather than partition by partition (listedParts), and
	// walks an ORDER BY over them through the path's own entries rather
	// than the listed partitions' (listScope): the paths BenchmarkKeyList
	// and the tests compare with.
	keyListsWide bool
}

// WriteGroups returns how many grouped write transactions this engine ran
// over a shared store, and how many writes they held together.
func (e *Engine) WriteGroups() (groups, writes int64) {
	return e.groups.Load(), e.groupedWrites.Load()
}

// stamp returns the operation's "now": the clock's time, raised to the
// latest instant already handed out, and strictly after it when after is
// set (setting changes). Without it, a read and a change taken at the same
// clock reading would disagree about the instant between them (B1).
func (e *Engine) stamp(ctx context.Context, after bool) (time.Time, error) {
	t, err := e.Now(ctx)
	if err != nil {
		return time.Time{}, err
	}
	t = e.raise(t, after)
	if floor := e.floor.Load(); !e.shared && !e.readOnly && t.UnixNano() > floor+int64(floorLease) {
		e.recordFloor(t)
		if t.UnixNano() > floor+2*int64(floorLease) {
			e.awaitFloor(ctx, t.UnixNano())
		}
	}
	return t, nil
}

// awaitFloor waits, at most floorWait, until a record of a stamp at or
// after n has committed.
func (e *Engine) awaitFloor(ctx context.Context, n int64) {
	limit := time.NewTimer(floorWait)
	defer limit.Stop()
	for {
		e.floorMu.Lock()
		done, signal := e.floorDone, e.floorSignal
		e.floorMu.Unlock()
		if done >= n {
			return
		}
		select {
		case <-signal:
		case <-limit.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// An engine's stamps never go back while it runs (raise); across a
// restart they start from the clock's floor, a stamp recorded in the
// store. Without it, a restart with the clock set back (by hand, or by a
// time server correcting it) judged by an earlier instant than judgements
// already answered, and items that had expired, and were not yet purged,
// came back (ttl.md B1). A store with a clock of its own (storage.Clocked)
// orders judgements by that clock.
//
// A stamp more than floorLease past the last record is recorded in the
// background, so a busy engine writes the floor about once a lease, and
// the floor trails the latest stamp by about a lease. A stamp more than two
// leases past it (the first after a quiet spell, when no stamp was being
// recorded) waits up to floorWait for its record, so that it is not
// answered before anything recorded it: a crash then, and a restart with
// the clock set back, would judge by an instant before the one the answer
// was judged by. No request waits longer (a write transaction can hold
// the store's writes for a while). So an item that had been expired for
// longer than a lease stays expired through a restart whatever the clock
// then reads; and a restart with the clock as it was stamps by the clock,
// not ahead of it.
const (
	floorLease = time.Second
	floorWait  = 100 * time.Millisecond
)

var floorKey = counterKey("clock-floor")

// recordFloor records t, or a later stamp, as the floor, in the
// background: one writer at a time, which records the latest stamp asked
// for until no later one is. The floor is the engine's, not a request's:
// it is written whatever becomes of the request that passed it. A store
// that refuses the write (its disk full, or failing) fails no request, and
// is asked again a lease later, not by every request meanwhile.
func (e *Engine) recordFloor(t time.Time) {
	n := t.UnixNano()
	for {
		w := e.floorWant.Load()
		if n <= w || e.floorWant.CompareAndSwap(w, n) {
			break
		}
	}
	if !e.floorBusy.CompareAndSwap(false, true) {
		return
	}
	e.floorWrites.Add(1)
	go func() {
		defer e.floorWrites.Done()
		for {
			n := e.floorWant.Load()
			e.floor.Store(n)
			err := e.store.Update(context.Background(), func(tx storage.Txn) error {
				return tx.Set(floorKey, binary.BigEndian.AppendUint64(nil, uint64(n)))
			})
			if err != nil {
				e.floorBusy.Store(false)
				if !errors.Is(err, storage.ErrClosed) {
					slog.Warn("the clock's floor was not recorded", "error", err)
				}
				return
			}
			e.floorMu.Lock()
			e.floorDone = max(e.floorDone, n)
			close(e.floorSignal)
			e.floorSignal = make(chan struct{})
			e.floorMu.Unlock()
			if e.floorWant.Load() > n {
				continue
			}
			e.floorBusy.Store(false)
			// A stamp that asked while this writer was finishing
			// found it busy and left the record to it.
			if e.floorWant.Load() <= n || !e.floorBusy.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// loadFloor starts the engine's stamps at the floor a previous run
// recorded.
func (e *Engine) loadFloor(ctx context.Context) error {
	return e.store.View(ctx, func(r storage.Reader) error {
		v, err := r.Get(floorKey)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			return nil
		case err != nil:
			return fmt.Errorf("read the clock's floor: %w", err)
		case len(v) != 8:
			return fmt.Errorf("the clock's floor is %d bytes, not 8", len(v))
		}
		n := int64(binary.BigEndian.Uint64(v))
		e.floor.Store(n)
		e.lastStamp.Store(n)
		e.floorMu.Lock()
		e.floorDone = n
		e.floorMu.Unlock()
		return nil
	})
}

// raise returns t raised to the latest instant stamp handed out, and
// strictly after it when after is set, and records it as handed out.
func (e *Engine) raise(t time.Time, after bool) time.Time {
	for {
		last := e.lastStamp.Load()
		n := t.UnixNano()
		switch {
		case after && n <= last:
			n = last + 1
		case n < last:
			n = last
		}
		if e.lastStamp.CompareAndSwap(last, n) {
			if n == t.UnixNano() {
				return t
			}
			return time.Unix(0, n)
		}
	}
}

// containerName is a container's key among the setting locks: its
// database and container ids, as requests name it. A container deleted and
// recreated under the same name shares the lock of its predecessor, which
// only orders more than it needs to.
type containerName struct{ db, coll string }

// settingLock is one container's lock between expiry judgements and TTL
// setting changes (see Engine.locks). It lives in the engine's map while
// some operation holds or waits for it, so every operation on a container
// at a given time uses the same one, and the map holds only the containers
// in use.
type settingLock struct {
	sync.RWMutex
	name  containerName
	users int // holders and waiters; guarded by Engine.lockMu
	// writes holds a token while one of this gateway's write transactions
	// on the container runs over a shared store (Engine.writing).
	writes chan struct{}
	// group joins this gateway's writes to the container over a shared
	// store (Engine.updateWriting).
	group committer
	// writers is held shared by each write transaction on the container
	// over a store of the engine's own, and exclusively by a script's
	// transaction run again after a conflict (Engine.updateScripted).
	writers sync.RWMutex
}

// lockOf returns container db/coll's setting lock, counting the caller as
// a user until it calls releaseLock.
func (e *Engine) lockOf(db, coll string) *settingLock {
	name := containerName{db, coll}
	e.lockMu.Lock()
	defer e.lockMu.Unlock()
	l := e.locks[name]
	if l == nil {
		l = &settingLock{name: name, writes: make(chan struct{}, 1)}
		e.locks[name] = l
	}
	l.users++
	return l
}

// releaseLock ends a use of l, begun with lockOf.
func (e *Engine) releaseLock(l *settingLock) {
	e.lockMu.Lock()
	defer e.lockMu.Unlock()
	if l.users--; l.users == 0 {
		delete(e.locks, l.name)
	}
}

// sharing takes the shared side of container db/coll's setting lock and
// returns its release.
func (e *Engine) sharing(db, coll string) func() {
	l := e.lockOf(db, coll)
	l.RLock()
	return func() {
		l.RUnlock()
		e.releaseLock(l)
	}
}

// judging takes the shared side of container db/coll's setting lock and
// the operation's one "now".
func (e *Engine) judging(ctx context.Context, db, coll string) (time.Time, func(), error) {
	done := e.sharing(db, coll)
	now, err := e.stamp(ctx, false)
	if err != nil {
		done()
		return time.Time{}, nil, err
	}
	return now, done, nil
}

// judgingIn is judging for an operation of one transaction that can take
// its "now" inside it, with nowIn. Over a shared store (storage.Clocked)
// the now returned is zero: the transaction reads the store's clock as it
// begins, in the round trip that carries its first reads
// (storage.TxClock), which saves the round trip of a separate reading.
// The setting lock is taken as judging takes it.
func (e *Engine) judgingIn(ctx context.Context, db, coll string) (time.Time, func(), error) {
	if e.shared {
		return time.Time{}, e.sharing(db, coll), nil
	}
	return e.judging(ctx, db, coll)
}

// nowIn returns now when it is set, and otherwise the operation's "now"
// taken in r's transaction: the store's clock as the transaction began when
// r can tell it, else a separate reading, as stamp takes it.
func (e *Engine) nowIn(ctx context.Context, r storage.Reader, now time.Time) (time.Time, error) {
	if !now.IsZero() {
		return now, nil
	}
	t, ok, err := storage.TxNow(r)
	switch {
	case !ok:
		return e.stamp(ctx, false)
	case err != nil:
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return time.Time{}, err
		}
		return time.Time{}, fmt.Errorf("%w: read the store's clock: %w", storage.ErrUnavailable, err)
	}
	// Not raised to the latest stamp: that could date the judgement after
	// the snapshot it reads. The store's clock orders judgements across
	// gateways, and so within this one.
	return t, nil
}

// writing waits until no other write transaction of this gateway runs on
// container db/coll, over a shared store, and returns the release; over a
// store of one process it does nothing. Every write to a container updates
// the state record of a sequence (its LSN and totals), and under
// serializable isolation two transactions that update one record cannot
// both commit: the later fails and runs again, and with many writers a
// transaction can lose every attempt. Queued here, this gateway's writers
// take turns instead, and only writers on other gateways still conflict.
func (e *Engine) writing(ctx context.Context, db, coll string) (func(), error) {
	if !e.shared {
		return func() {}, nil
	}
	l := e.lockOf(db, coll)
	select {
	case l.writes <- struct{}{}:
		return func() {
			<-l.writes
			e.releaseLock(l)
		}, nil
	case <-ctx.Done():
		e.releaseLock(l)
		return nil, ctx.Err()
	}
}

// updateWriting runs fn in a write transaction on the container ref
// names. Over a shared store this gateway's writes to the container are
// committed in groups, in the container's turn (writing): the writes that
// queue while one transaction runs commit together in the next
// (committer). One turn per container, not per sequence: over PostgreSQL,
// writers into different ranges of one container still fail each other
// (docs/design/storage.md, "A sequence per range"), and a turn per
// sequence made the groups smaller and the retries more.
func (e *Engine) updateWriting(ctx context.Context, ref ItemRef, fn func(tx storage.Txn) error) error {
	locked := func(tx storage.Txn) error {
		e.lockState(tx, ref.DB, ref.Coll)
		return fn(tx)
	}
	l := e.lockOf(ref.DB, ref.Coll)
	defer e.releaseLock(l)
	if !e.shared {
		l.writers.RLock()
		defer l.writers.RUnlock()
		return e.store.Update(ctx, locked)
	}
	return l.group.do(ctx, locked, func(group []*groupWrite) {
		// The purge takes the same turn; it holds it for one bounded
		// batch, so the group waits for it without a context.
		l.writes <- struct{}{}
		defer func() { <-l.writes }()
		e.groups.Add(1)
		e.groupedWrites.Add(int64(len(group)))
		runGrouped(e.store, group)
	})
}

// optimisticTries is how many times updateScripted runs a transaction
// optimistically while it holds its container's writers back, before it
// runs it while it holds every writer back.
const optimisticTries = 3

// updateScripted is updateWriting for a transaction that runs a script (a
// stored procedure, or a write's triggers), which may take seconds. A
// store of the engine's own runs one Update at a time, so a script run in
// an Update would hold back every write of every container. It runs
// optimistically instead (storage.Optimist): other writers go on while it
// runs, and it commits only if none of them wrote what it read. After a
// conflict it runs again while it holds back the writers of its own
// container (settingLock.writers), which are what a script's reads
// usually meet (every write updates its sequence's state record), so that
// it does not lose to them again and again. Over a shared store, writers
// run side by side already: updateWriting.
func (e *Engine) updateScripted(ctx context.Context, ref ItemRef, fn func(tx storage.Txn) error) error {
	if e.shared {
		return e.updateWriting(ctx, ref, fn)
	}
	err := storage.UpdateOptimistic(ctx, e.store, fn)
	if !errors.Is(err, storage.ErrConflict) {
		return err
	}
	l := e.lockOf(ref.DB, ref.Coll)
	defer e.releaseLock(l)
	l.writers.Lock()
	defer l.writers.Unlock()
	for range optimisticTries {
		err = storage.UpdateOptimistic(ctx, e.store, fn)
		if !errors.Is(err, storage.ErrConflict) {
			return err
		}
	}
	return e.store.Update(ctx, fn)
}

// lockState names the state records of container db/coll's sequences to
// tx's store as ones the transaction will write (storage.Read.Lock), in
// key order. Every write writes the record of its sequence, so over a
// shared store two gateways' writes to one sequence cannot both commit:
// taken as the transaction begins, the records make the second wait
// before it does its work, rather than fail at its commit after all of
// it. All of them, since a group's writes go to any sequence. The records'
// rids are the engine's cached guess; a wrong one locks nothing and costs
// nothing.
func (e *Engine) lockState(tx storage.Txn, db, coll string) {
	if _, ok := tx.(storage.Prefetcher); !ok {
		return
	}
	if _, c := e.cachedContainer(db, coll); c != nil {
		storage.Prefetch(tx, stateReads(c, true)...)
	}
}

// judgingEvery is judging for an operation that judges the items of every
// container (CheckIndexes): it waits for the setting changes in progress
// and holds off new ones, but never a request. It is for tests and tools,
// not for serving: while it waits, new setting changes wait too.
func (e *Engine) judgingEvery(ctx context.Context) (time.Time, func(), error) {
	e.everyMu.Lock()
	now, err := e.stamp(ctx, false)
	if err != nil {
		e.everyMu.Unlock()
		return time.Time{}, nil, err
	}
	return now, e.everyMu.Unlock, nil
}

// changingSetting takes container db/coll's setting lock exclusively, for
// a change of its TTL setting, and returns its release.
func (e *Engine) changingSetting(db, coll string) func() {
	e.everyMu.RLock()
	l := e.lockOf(db, coll)
	l.Lock()
	return func() {
		l.Unlock()
		e.releaseLock(l)
		e.everyMu.RUnlock()
	}
}

type cachedContainer struct {
	raw []byte
	c   *containerRecord
}

// New returns an engine over cfg.Store.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil {
		return nil, errors.New("engine: no store")
	}
	e := &Engine{store: cfg.Store, clock: cfg.Clock, maxItem: cfg.MaxItemSize, charges: cfg.Charges, cache: map[string]cachedContainer{}, locks: map[containerName]*settingLock{}, dbCache: map[string]cachedDatabase{}, dbRids: map[string][]byte{}, absentWanted: map[string]absentWish{}, ridNames: map[string]string{}, locHints: newLocHints(defaultLocHints), seen: newSeenSets(seenSetsMax), held: newKeeper[*heldRows](heldRowsMax), kept: newKeeper[*keptCandidates](keptCandidatesMax), floorSignal: make(chan struct{})}
	if e.clock == nil {
		e.clock = clock.Real{}
	}
	e.eraseDeadline = cfg.EraseDeadline
	if e.eraseDeadline <= 0 {
		e.eraseDeadline = ttl.DefaultEraseDeadline
	}
	if e.maxItem <= 0 {
		e.maxItem = 2 << 20
	}
	e.pageTime, e.queryMem, e.maxSort = cfg.QueryPageTime, cfg.QueryMemory, cfg.MaxSortRows
	if e.pageTime <= 0 {
		e.pageTime = DefaultQueryPageTime
	}
	e.partitions = min(max(cfg.Partitions, 1), maxRanges)
	if _, e.shared = cfg.Store.(storage.Clocked); e.shared {
		e.leases = newLeases(cfg.LeaseTerm)
	}
	if err := checkLayout(context.Background(), cfg.Store); err != nil {
		return nil, err
	}
	e.readOnly = cfg.ReadOnly
	if !e.shared {
		if err := e.loadFloor(context.Background()); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// DefaultQueryPageTime is the evaluation time of one query page, as the
// service's 5-second limit per page.
const DefaultQueryPageTime = 5 * time.Second

// budget returns the evaluation budget of one request: the engine's page
// time on its clock, its memory bound, and the request's context.
func (e *Engine) budget(ctx context.Context) *eval.Budget {
	return eval.NewBudget(eval.BudgetParams{Ctx: ctx, Now: e.clock.Now, Deadline: e.clock.Now().Add(e.pageTime), MaxMemory: e.queryMem, MaxSortRows: e.maxSort})
}

// layoutVersion names the key layout (keys.go) this engine reads and
// writes. Version 2 keys items and index entries by location (EPK, then
// sequence); version 1 stores, which keyed them by sequence alone and
// carried no marker, are refused rather than misread.
const layoutVersion = "2"

// ErrLayout is wrapped by the error New returns for a store written with
// another key layout.
var ErrLayout = errors.New("the data directory was written by a Mayfly with another key layout")

// layoutError is the refusal of a store in layout v, telling the operator
// which Mayfly can read it. There is no migration between layouts.
func layoutError(v string) error {
	n, err := strconv.Atoi(v)
	want, _ := strconv.Atoi(layoutVersion)
	switch {
	case err == nil && n > want:
		return fmt.Errorf("%w: it is in key layout %d, newer than layout %s, the one this version reads; run the newer Mayfly that wrote it", ErrLayout, n, layoutVersion)
	case err == nil && n > 0:
		return fmt.Errorf("%w: it is in key layout %d, older than layout %s, the one this version reads, and there is no migration; start with an empty data directory, or keep running the earlier Mayfly for this one", ErrLayout, n, layoutVersion)
	}
	return fmt.Errorf("%w: its key layout marker reads %q, which no Mayfly wrote; the directory is damaged or not a Mayfly data directory", ErrLayout, v)
}

// checkLayout records the layout in a new store and refuses a store that
// holds data in another layout.
func checkLayout(ctx context.Context, s storage.Store) error {
	key := counterKey("layout")
	// Read first: a directory opened read-only (mayfly check) is judged
	// without a write.
	var v []byte
	err := s.View(ctx, func(r storage.Reader) error {
		got, err := r.Get(key)
		v = bytes.Clone(got)
		return err
	})
	switch {
	case err == nil && string(v) == layoutVersion:
		return nil
	case err == nil:
		return layoutError(string(v))
	case !errors.Is(err, storage.ErrNotFound):
		return fmt.Errorf("read the key layout marker: %w", err)
	}
	return s.Update(ctx, func(tx storage.Txn) error {
		v, err := tx.Get(key)
		switch {
		case err == nil && string(v) == layoutVersion:
			return nil
		case err == nil:
			return layoutError(string(v))
		case !errors.Is(err, storage.ErrNotFound):
			return fmt.Errorf("read the key layout marker: %w", err)
		}
		empty := true
		if err := scanPrefix(tx, nil, func(_, _ []byte) (bool, error) {
			empty = false
			return false, nil
		}); err != nil {
			return err
		}
		if !empty {
			return layoutError("1")
		}
		return tx.Set(key, []byte(layoutVersion))
	})
}

// Now is the engine's current time: the store's clock when the store owns
// one (several gateways over one store then agree, ttl.md B6), else the
// engine's. A store clock that cannot be read is an error wrapping
// storage.ErrUnavailable, never a fall-back to the local clock, which
// could judge an expiry differently from the other gateways.
func (e *Engine) Now(ctx context.Context) (time.Time, error) {
	if c, ok := e.store.(storage.Clocked); ok {
		t, err := c.Now(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return time.Time{}, err
			}
			return time.Time{}, fmt.Errorf("%w: read the store's clock: %w", storage.ErrUnavailable, err)
		}
		return t, nil
	}
	return e.clock.Now(), nil
}

// nextCounter increments a named counter inside tx and returns the new value.
func nextCounter(tx storage.Txn, name string) (uint64, error) {
	return increment(tx, counterKey(name))
}

// increment adds one to the big-endian counter stored under key (absent
// reads as zero) and returns the new value.
func increment(tx storage.Txn, key []byte) (uint64, error) {
	return add(tx, key, 1)
}

// add adds d to the big-endian counter stored under key (absent reads as
// zero) and returns the new value.
func add(tx storage.Txn, key []byte, d uint64) (uint64, error) {
	var n uint64
	v, err := tx.Get(key)
	switch {
	case err == nil && len(v) == 8:
		n = binary.BigEndian.Uint64(v)
	case err == nil || errors.Is(err, storage.ErrNotFound):
	default:
		return 0, err
	}
	n += d
	if err := tx.Set(key, binary.BigEndian.AppendUint64(nil, n)); err != nil {
		return 0, err
	}
	return n, nil
}

// getJSON reads key and decodes it into v. It reports false when missing.
func getJSON(r storage.Reader, key []byte, v any) (bool, error) {
	raw, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("decode %q: %w", key, err)
	}
	return true, nil
}

func setJSON(tx storage.Txn, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.Set(key, raw)
}

// scanPrefix calls fn for every key under prefix, in order, stopping early
// when fn returns false.
func scanPrefix(r storage.Reader, prefix []byte, fn func(k, v []byte) (bool, error)) error {
	return scanRange(r, prefix, prefixEnd(prefix), fn)
}

func (e *Engine) charge(c *containerRecord, ru float64) {
	if e.charges != nil && c != nil {
		e.charges.Charge(c.link(), ru)
	}
}

// etagFor makes an opaque, quoted etag that changes with every write.
func etagFor(rid []byte, lsn uint64) string {
	var h uint32 = 2166136261
	for _, b := range rid {
		h = (h ^ uint32(b)) * 16777619
	}
	// "hhhhhhhh-0000-0000-eeee-llllllllllll", quoted, built by hand: every
	// write and point read makes one, and fmt's formatting cost more than
	// the rest of this.
	var b [38]byte
	b[0], b[37] = '"', '"'
	putHex(b[1:9], uint64(h))
	copy(b[9:20], "-0000-0000-")
	putHex(b[20:24], lsn>>48)
	b[24] = '-'
	putHex(b[25:37], lsn)
	return string(b[:])
}

// putHex writes the low 4*len(dst) bits of v into dst as lower-case hex
// digits, zero-padded.
func putHex(dst []byte, v uint64) {
	const digits = "0123456789abcdef"
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = digits[v&15]
		v >>= 4
	}
}
