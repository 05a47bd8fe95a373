// Package pebblestore is Mayfly's default storage backend: an embedded
// Pebble database on local disk, or on an in-memory filesystem for tests
// and throwaway servers.
//
// # Transactions
//
// Update functions run one at a time. A writer holds the store's write lock
// while its function runs against an indexed Pebble batch (so its reads see
// its own writes, merged with the committed state) and while the batch is
// applied to the memtable and queued for the write-ahead log. It then
// releases the lock and waits for the fsync outside it, so writers that
// commit close together share one fsync (group commit). Because writers are
// serialised, every Update is trivially serializable and never conflicts:
// Update calls its function exactly once and never returns
// storage.ErrConflict.
//
// View runs against a Pebble snapshot. A snapshot may include a write whose
// Update has been applied but has not yet returned because its fsync is in
// flight; that write is lost if the machine fails before the fsync. Pebble
// makes writes visible before they are synced, and the engine never
// acknowledges a write to a client before Update returns, so no
// acknowledged write is ever lost.
//
// # Damage
//
// Open refuses a directory whose write-ahead log or MANIFEST holds a bad
// record followed by good ones, and, when the tables are small enough to
// read at start (Options.VerifyLimit), one with a table whose checksums
// fail; reads that meet a damaged block fail with an error wrapping
// storage.ErrCorrupt and naming the file (damage.go).
//
// # Lifetime
//
// Close stops new calls (they get storage.ErrClosed), makes writers still
// waiting for the write lock give up with storage.ErrClosed, waits for
// running View and Update functions to finish, and closes Pebble.
package pebblestore

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/memory"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/uring"
)

// The sampling of reads for read-triggered compactions (Open): a read
// per 64 KiB an iterator returns (Pebble multiplies this by 64 KiB), and a
// table compacted after as many samples as it has MiB, at least 100.
const (
	readSamplingMultiplier = 1
	readCompactionRate     = 1 << 20
)

// DefaultMemTableSize is for a server. Pebble's own defaults (8 MiB cache,
// 4 MiB memtables) are tuned for embedding many instances; Mayfly runs one.
// Every memtable that fills closes and syncs a write-ahead log file while
// commits wait, and becomes a level-0 table that compactions must merge
// down, so larger ones cost a write less CPU; but Pebble holds two of them
// whole under a steady write load (the mutable one, and a flushed one kept
// for reuse), and with 64 MiB ones a server under make bench's load
// peaked at 140-155 MB. At 16 MiB it stays near 95 MB; a create costs
// about a twentieth more CPU and the purge of a large container runs a
// little slower, with the level-0 thresholds scaled to match (l0Thresholds;
// docs/benchmarks.md, "The memtable size, after the transport"). Pebble
// starts small and doubles up to this size.
const DefaultMemTableSize = 16 << 20

// l0ReferenceMemTable is the memtable size the level-0 thresholds are
// scaled from: with it, Pebble's own threshold of 4 sublevels.
const l0ReferenceMemTable = 64 << 20

// l0Thresholds returns the level-0 sublevel counts at which compactions of
// level 0 begin and writes stop, for memtables of size bytes.
//
// Every flush adds a sublevel, and a level-0 compaction merges the
// sublevels with the part of the next level they overlap. The TTL purge's
// deletions overlap all of it, so a compaction costs about the same
// whatever level 0 holds, and its cost per item falls with the bytes it
// merges. Pebble's threshold (4 sublevels) merges 256 MiB at a time with
// 64 MiB memtables but 32 MiB with 8 MiB ones: the purge of 10^6 items then
// ran at 30,000 items/s against 51,000. Keeping the bytes near the
// default's, with at most 24 sublevels for a read to look through, gave
// 45,000 (docs/benchmarks.md, "Memory under load").
func l0Thresholds(size uint64) (compact, stop int) {
	compact = min(max(int(4*l0ReferenceMemTable/max(size, 1)), 4), 24)
	return compact, max(12, 2*compact)
}

// Options configures Open.
type Options struct {
	// Dir is the directory holding the database. It is created if missing.
	// Required unless InMemory is set.
	Dir string

	// InMemory keeps everything in memory (Pebble on an in-memory
	// filesystem). Nothing survives Close; writes are not synced.
	InMemory bool

	// Logger receives Pebble's messages: its routine chatter at debug
	// level, write stalls and slow disks as warnings, background errors as
	// errors. Nil discards everything.
	Logger *slog.Logger

	// CacheSize is the block cache size in bytes; 0 means an eighth of the
	// memory available to the process, between 64 MiB and 8 GiB. The
	// blocks get all of it: Pebble also charges its memtables to the
	// cache, so the cache is made larger by what they take.
	CacheSize int64

	// MemTableSize is the size of one memtable in bytes; 0 means
	// DefaultMemTableSize. Up to four may be in memory at once while
	// flushes catch up.
	MemTableSize uint64

	// IdleFlush is how long commits must pause before the memtable is
	// flushed (idle.go); 0 means DefaultIdleFlush, negative never. A
	// store in memory never flushes for it.
	IdleFlush time.Duration

	// Filter, if set, keeps the keys it skips out of the bloom filters;
	// nil puts every key in them.
	Filter *KeyFilter

	// Hot, if set, names keys that nearly every read reads and few writes
	// write; the store keeps their committed values in memory (hot.go).
	Hot func(key []byte) bool

	// VerifyLimit bounds the tables Open reads to check their checksums:
	// all of them when they hold at most this many bytes, none otherwise
	// (reads still check every block they touch). 0 means
	// DefaultVerifyLimit; a negative value checks them however large.
	VerifyLimit int64

	// ReadOnly opens an existing store for reading only: it must exist,
	// Update fails, and nothing in the directory changes.
	ReadOnly bool

	// Reserve is the free space, in bytes, that durable writes leave on
	// the store's filesystem for Pebble's flushes and compactions: a
	// write that finds less is refused with storage.ErrNoSpace (see
	// failure.go). 0 means DefaultReserve; a negative value disables the
	// check.
	Reserve int64

	// PlainSync syncs the write-ahead log with a blocking fdatasync(2)
	// even where io_uring is available. Without it the log syncs through
	// an io_uring ring where the kernel allows one (ringsync.go).
	PlainSync bool
}

// DefaultVerifyLimit is the largest total of tables Open reads in full to
// check their checksums: at disk speed, a few seconds of start-up.
const DefaultVerifyLimit = 1 << 30

// Store is a storage.Store on Pebble. Create it with Open.
type Store struct {
	db      *pebble.DB
	dir     string       // "" in memory
	lock    *pebble.Lock // the directory lock; nil in memory
	durable bool         // sync the write-ahead log on commit

	// writeLock is a one-slot semaphore rather than a mutex so that a
	// writer waiting for it can give up when its context is cancelled or
	// the store closes.
	writeLock chan struct{}
	// conflicts keeps what commits wrote while optimistic transactions
	// run (optimistic.go).
	conflicts conflicts

	reserve   int64                  // see Options.Reserve; 0 in memory
	freeSpace func() (uint64, error) // free bytes on the store's filesystem
	// spaceOK is when the free space was last found far above the
	// reserve (checkSpace); nil when it was not.
	spaceOK atomic.Pointer[time.Time]
	failed  atomic.Pointer[error] // why writes are refused for good, once a commit failed
	log     *slog.Logger

	// For Erase (erase.go): the open snapshots, the MANIFEST files
	// created so far, and the clock its pauses are timed by.
	snaps     snapshots
	manifests *atomic.Int64
	clock     clock.Clock

	// stalls counts Pebble's write stalls (Stats).
	stalls *writeStalls

	// flushSoon flushes the memtable shortly after a range deletion
	// (DeleteRange), and once after a burst of them.
	flushSoon func()

	hot *hotKeys // Options.Hot's committed values; nil without it

	ring *uring.Ring // syncs the logs (ringsync.go); nil without io_uring

	mu       sync.Mutex
	closed   bool
	closing  chan struct{} // closed by Close
	inflight sync.WaitGroup
	commits  atomic.Int64 // commits made, for flushWhenIdle

	// For tidy (idle.go), which only flushWhenIdle calls: the bytes
	// flushed when it last compacted, and the least it waits for.
	tidied  uint64
	tidyMin uint64
}

var (
	_ storage.Store        = (*Store)(nil)
	_ storage.Sizer        = (*Store)(nil)
	_ storage.Deferrer     = (*Store)(nil)
	_ storage.RangeDeleter = (*Store)(nil)
)

// Open opens the store described by opts, creating it if it does not exist.
func Open(opts Options) (*Store, error) {
	if opts.Dir == "" && !opts.InMemory {
		return nil, errors.New("pebblestore: Options.Dir is required unless InMemory is set")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cacheSize := opts.CacheSize
	if cacheSize <= 0 {
		cacheSize = defaultCacheSize()
	}
	memTableSize := opts.MemTableSize
	if memTableSize == 0 {
		memTableSize = DefaultMemTableSize
	}

	l0Compact, l0Stop := l0Thresholds(memTableSize)
	cache := pebble.NewCache(cacheSize + memTableCharge(memTableSize))
	defer cache.Unref() // Pebble holds its own reference while open.

	manifests := new(atomic.Int64)
	listener := eventListener(log)
	listener.ManifestCreated = func(pebble.ManifestCreateInfo) { manifests.Add(1) }
	stalls := new(writeStalls)
	stallBegin, stallEnd := listener.WriteStallBegin, listener.WriteStallEnd
	listener.WriteStallBegin = func(info pebble.WriteStallBeginInfo) { stalls.begin(clock.Real{}.Now()); stallBegin(info) }
	listener.WriteStallEnd = func() { stalls.end(clock.Real{}.Now()); stallEnd() }
	// The C allocator keeps the pages of what the store frees unless told
	// to return them (memory.ReleaseFreed).
	release := callSoon(clock.Real{}, time.Second, memory.ReleaseFreed)
	listener.FlushEnd = func(pebble.FlushInfo) { release() }
	listener.CompactionEnd = func(pebble.CompactionInfo) { release() }
	listener.TableDeleted = func(pebble.TableDeleteInfo) { release() }
	// The default comparison, with a split that makes a whole key its own
	// prefix, so that pointGet may seek by prefix (and consult the bloom
	// filters, which hold whole keys either way).
	comparer := *pebble.DefaultComparer
	comparer.Split = func(k []byte) int { return len(k) }
	po := &pebble.Options{
		Comparer:                    &comparer,
		Cache:                       cache,
		MemTableSize:                memTableSize,
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       l0Compact,
		L0StopWritesThreshold:       l0Stop,
		// New stores get every on-disk format feature this Pebble has.
		FormatMajorVersion: pebble.FormatNewest,
		MaxConcurrentCompactions: func() int {
			return max(1, min(4, runtime.GOMAXPROCS(0)/2))
		},
		Logger:        pebbleLogger{log: log},
		EventListener: listener,
		// Deleted data must be erasable (erase.go): obsolete logs are
		// deleted rather than kept for reuse with their contents, and the
		// MANIFEST is rewritten whenever its edits outgrow the state they
		// describe rather than once it reaches 128 MiB.
		Cleaner:             eraseCleaner{},
		MaxManifestFileSize: 1,
	}
	// Reads compact the tables they look through. A store whose writes
	// stop keeps the level-0 tables of its last flushes, and its base
	// level above level 6, until writes come again, and every point read
	// looks up their filters and indexes. Pebble samples the reads of its
	// iterators (scans, and a page's reads after its first few: pointGet)
	// and compacts a table that the samples keep finding above another
	// level, once their count reaches its size over ReadCompactionRate (at
	// least 100). Its defaults sample a read per MiB an iterator returns
	// and allow a sample per 16 KB of the table: for a 64 MiB table, four
	// thousand samples, some eight million reads of small records. Here a
	// read is sampled per 64 KiB and a table of up to 100 MiB goes down
	// after 100 samples (docs/benchmarks.md, "Reads that compact").
	po.Experimental.ReadSamplingMultiplier = readSamplingMultiplier
	po.Experimental.ReadCompactionRate = readCompactionRate
	// Bloom filters make point lookups that miss (creates, unique-key
	// checks) skip tables without reading them.
	policy, known := filterPolicies(opts.Filter)
	po.Filters = known
	po.Levels = make([]pebble.LevelOptions, 7)
	for i := range po.Levels {
		l := &po.Levels[i]
		l.FilterPolicy = policy
		l.FilterType = pebble.TableFilter
		// 16 KiB blocks, not Pebble's 4 KiB: a quarter of the blocks to
		// index, checksum, cache and compress in compactions and scans,
		// while a cached point read costs the same (docs/benchmarks.md).
		l.BlockSize = 16 << 10
		if i > 0 {
			l.TargetFileSize = po.Levels[i-1].TargetFileSize * 2
		}
		l.EnsureDefaults()
	}

	if opts.InMemory {
		po.FS = vfs.NewMem()
		// A log in memory protects nothing: it goes when the process
		// does, with the memtables it would rebuild. Writing it cost an
		// in-memory store a ninth of its CPU under creates, most of it
		// regrowing the log's in-memory file (docs/benchmarks.md).
		po.DisableWAL = true
		db, err := pebble.Open("", po)
		if err != nil {
			return nil, fmt.Errorf("pebblestore: open in memory: %w", err)
		}
		st := newStore(db, "", nil, false, log, manifests, stalls)
		st.hot = newHotKeys(opts.Hot)
		return st, nil
	}
	dir := opts.Dir
	fs := privateFS{FS: vfs.Default}
	if !opts.ReadOnly && !opts.PlainSync {
		ring, err := uring.Open()
		if err != nil {
			log.Info("pebblestore: io_uring is unavailable; the log's syncs block a thread", "err", err)
		} else {
			fs.ring = ring
			// Closed here if Open fails; the store takes it otherwise.
			defer func() {
				if fs.ring != nil {
					_ = fs.ring.Close()
				}
			}()
		}
	}
	po.FS = fs
	if opts.ReadOnly {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("pebblestore: %w", err)
		}
		po.ReadOnly = true
		po.ErrorIfNotExists = true
	}
	// Lock first: the holder is named on refusal, and the logs are read
	// only once no other process can be writing them.
	lock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("pebblestore: %w", err)
	}
	po.Lock = lock
	db, err := open(dir, po, opts.VerifyLimit)
	if err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("pebblestore: open %q: %w", dir, err)
	}
	st := newStore(db, dir, lock, true, log, manifests, stalls)
	st.ring, fs.ring = fs.ring, nil // closed by Close from here on
	st.hot = newHotKeys(opts.Hot)
	if idle := cmp.Or(opts.IdleFlush, DefaultIdleFlush); idle > 0 && !opts.ReadOnly {
		go st.flushWhenIdle(clock.Real{}, idle, memTableSize/minIdleFlush)
	}
	st.reserve = opts.Reserve
	if st.reserve == 0 {
		st.reserve = DefaultReserve
	}
	st.freeSpace = func() (uint64, error) { return statfsFree(dir) }
	return st, nil
}

// open checks dir's logs, opens Pebble and checks its tables.
func open(dir string, po *pebble.Options, verifyLimit int64) (*pebble.DB, error) {
	if err := checkLogs(dir); err != nil {
		return nil, err
	}
	db, err := pebble.Open(dir, po)
	if err != nil {
		if strings.Contains(err.Error(), "unknown to the objstorage provider") || strings.Contains(err.Error(), "object size mismatch") {
			// The MANIFEST lists tables the directory lacks, or holds
			// them at another size: tables were deleted or cut short, or
			// the MANIFEST lost its later records.
			manifest := "the MANIFEST"
			if desc, perr := pebble.Peek(dir, vfs.Default); perr == nil && desc.ManifestFilename != "" {
				manifest = desc.ManifestFilename
			}
			return nil, fmt.Errorf("%w: %s lists tables that are missing or of the wrong size: %w", storage.ErrCorrupt, manifest, err)
		}
		return nil, corrupt(dir, err)
	}
	if verifyLimit == 0 {
		verifyLimit = DefaultVerifyLimit
	}
	if _, err := verifyTables(db, dir, verifyLimit); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

func newStore(db *pebble.DB, dir string, lock *pebble.Lock, durable bool, log *slog.Logger, manifests *atomic.Int64, stalls *writeStalls) *Store {
	s := &Store{
		manifests: manifests,
		stalls:    stalls,
		clock:     clock.Real{},
		log:       log,
		db:        db,
		dir:       dir,
		lock:      lock,
		durable:   durable,
		writeLock: make(chan struct{}, 1),
		closing:   make(chan struct{}),
		tidyMin:   tidyMin,
	}
	s.flushSoon = callSoon(s.clock, rangeFlushDelay, s.flushRangeDeletions)
	return s
}

// rangeFlushDelay is how long after a range deletion the memtable is
// flushed: long enough for the next span of a dropped container.
const rangeFlushDelay = 100 * time.Millisecond

// flushRangeDeletions flushes the memtable, so that the range deletions in
// it reach a table: Pebble drops the tables a deletion covers whole (a
// delete-only compaction) only then, and would otherwise wait for the
// memtable to fill.
func (s *Store) flushRangeDeletions() {
	if s.enter() != nil {
		return
	}
	defer s.inflight.Done()
	if _, err := s.db.AsyncFlush(); err != nil {
		s.log.Warn("pebblestore: flush after a range deletion", "err", err)
	}
}

// Checkpoint writes a consistent copy of the store into dir, which must
// not exist, while it serves (storage.Checkpointer): Pebble hard-links the
// tables and copies the rest, write-ahead log flushed first.
func (s *Store) Checkpoint(dir string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.inflight.Done()
	if s.dir == "" {
		return errors.New("pebblestore: a store kept in memory has no files to back up")
	}
	if err := s.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("pebblestore: checkpoint into %s: %w", dir, err)
	}
	return nil
}

// VerifyTables reads every block of every table and checks its checksum,
// whatever their size, and returns the first damage it finds. It runs
// beside requests; for a large store it takes as long as reading it all.
func (s *Store) VerifyTables() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.inflight.Done()
	if s.dir == "" {
		return nil
	}
	_, err := verifyTables(s.db, s.dir, -1)
	return err
}

// enter registers an in-flight call; the caller must call s.inflight.Done.
func (s *Store) enter() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return storage.ErrClosed
	}
	s.inflight.Add(1)
	return nil
}

// View runs fn against a consistent snapshot of the committed state.
func (s *Store) View(ctx context.Context, fn func(r storage.Reader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.inflight.Done()

	n := s.snaps.take()
	r := &reader{dir: s.dir, snapshot: true}
	if s.hot != nil {
		// Before the snapshot: see hotKeys.
		r.hot = s.hot
		r.hotStamp, r.hotOK = s.hot.now()
	}
	snap := s.db.NewSnapshot()
	r.src = snap
	defer func() {
		r.finish()
		_ = snap.Close() // Closing a snapshot only releases memory.
		s.snaps.release(n)
	}()
	return fn(r)
}

// Update runs fn in a transaction and commits it durably when fn returns
// nil. fn runs exactly once, while no other Update function runs.
func (s *Store) Update(ctx context.Context, fn func(tx storage.Txn) error) error {
	return s.update(ctx, fn, true)
}

// UpdateDeferred is Update without waiting for the fsync: the commit is in
// the write-ahead log, which is synced in order, by the next synced commit
// if not sooner.
func (s *Store) UpdateDeferred(ctx context.Context, fn func(tx storage.Txn) error) error {
	return s.update(ctx, fn, false)
}

func (s *Store) update(ctx context.Context, fn func(tx storage.Txn) error, sync bool) error {
	if err := s.enterWrite(ctx, sync); err != nil {
		return err
	}
	defer s.inflight.Done()

	unlock, err := s.lockWrites(ctx)
	if err != nil {
		return err
	}
	defer unlock() // also when fn panics

	b := s.db.NewIndexedBatch()
	tx := &txn{reader: reader{src: b, dir: s.dir, hot: s.hot}, b: b, db: s.db}
	// Runs after SyncWait: Pebble forbids closing a batch whose sync is
	// pending.
	defer tx.close()
	err = func() error {
		defer tx.finish()
		return fn(tx)
	}()
	// A rollback to a savepoint replaced the batch (RollbackTo).
	if err != nil || tx.b.Empty() {
		return err
	}
	return s.commit(tx, tx.b, sync, unlock)
}

// enterWrite admits a write transaction: the context is live, the store
// open and accepting writes, with room for them (checkSpace; a deferred
// commit when sync is false). On nil the caller is counted in flight and
// must call s.inflight.Done.
func (s *Store) enterWrite(ctx context.Context, sync bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	if err := s.failedErr(); err != nil {
		s.inflight.Done()
		return err
	}
	if err := s.checkSpace(!sync); err != nil {
		s.inflight.Done()
		return err
	}
	return nil
}

// lockWrites takes the write lock and returns its release, which may be
// called more than once.
func (s *Store) lockWrites(ctx context.Context) (func(), error) {
	select {
	case s.writeLock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.closing:
		return nil, storage.ErrClosed
	}
	locked := true
	unlock := func() {
		if locked {
			locked = false
			<-s.writeLock
		}
	}
	// The lock may have been granted in the same instant as cancellation.
	if err := ctx.Err(); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// commit applies tx's batch b, which is not empty, under the write lock,
// which unlock releases: at once when the commit is synced, so that
// writers that queued behind this one share its fsync.
func (s *Store) commit(tx *txn, b *pebble.Batch, sync bool, unlock func()) error {
	s.conflicts.record(b)
	if tx.wroteHot {
		// Until this returns, committed or not, no read uses or keeps
		// a hot key's value (hotKeys).
		s.hot.begin()
		defer s.hot.end()
	}

	if !s.durable || !sync {
		return s.apply(b, pebble.NoSync, false)
	}
	// Apply under the lock, so the next writer reads this one's writes;
	// wait for the fsync after releasing it, so writers that queued
	// behind this one share its fsync.
	err := s.apply(b, pebble.Sync, true)
	unlock()
	if err != nil {
		return err
	}
	if err := b.SyncWait(); err != nil {
		return s.fail("sync", err)
	}
	return nil
}

// DeleteRange deletes every key of [lower, upper) with one range deletion
// (storage.RangeDeleter), whatever limit says: one small write that reads
// none of the keys it deletes, where deleting them one by one read every
// key and wrote a tombstone for each (dropping a container of 200,000
// items took 27 s; docs/benchmarks.md). Once the deletion is in a table
// (flushSoon), compactions drop the tables it covers whole without reading
// them and merge the rest away as they would point deletions; Erase's
// compaction of the span does the same. Pebble has no unbounded range
// deletion, so with upper nil the range ends at its last key, which is
// deleted on its own.
func (s *Store) DeleteRange(ctx context.Context, lower, upper []byte, _ int) (bool, error) {
	deleted := false
	err := s.Update(ctx, func(tx storage.Txn) error {
		t := tx.(*txn)
		// The last key of the range, read backwards: whether there is
		// anything to delete, and where an unbounded range ends.
		it, err := t.NewIter(storage.IterParams{Lower: lower, Upper: upper, Reverse: true})
		if err != nil {
			return err
		}
		var last []byte
		if it.First() {
			last = bytes.Clone(it.Key())
		}
		if err := errors.Join(it.Err(), it.Close()); err != nil || last == nil {
			return err
		}
		deleted = true
		// Whatever the range holds, hot keys among it or not.
		t.wroteHot = t.hot != nil
		if upper != nil {
			return t.b.DeleteRange(lower, upper, nil)
		}
		if err := t.b.DeleteRange(lower, last, nil); err != nil {
			return err
		}
		return t.b.Delete(last, nil)
	})
	if err != nil {
		return false, err
	}
	if deleted {
		s.flushSoon()
	}
	return true, nil
}

// DiskUsage reports the bytes the store occupies on its filesystem:
// tables, write-ahead log, manifest and files awaiting deletion. In
// memory, where there is no log, the memtables count in its place: they
// hold what it would.
func (s *Store) DiskUsage() (uint64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.inflight.Done()
	m := s.db.Metrics()
	if s.dir == "" {
		return m.DiskSpaceUsage() + m.MemTable.Size, nil
	}
	return m.DiskSpaceUsage(), nil
}

// Close waits for running calls to finish and closes the database. Calls
// made after Close has begun, including a second Close, return
// storage.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return storage.ErrClosed
	}
	s.closed = true
	close(s.closing)
	s.mu.Unlock()

	s.inflight.Wait()
	if ferr := s.failedErr(); ferr != nil {
		// Pebble's commit pipeline may be left locked by the failure,
		// and its Close would wait on it forever: release the directory
		// and leave the rest to the end of the process.
		if s.lock != nil {
			_ = s.lock.Close()
		}
		return fmt.Errorf("pebblestore: close after a failed write: %w", ferr)
	}
	err := s.db.Close()
	if s.ring != nil {
		// After the database: its last log sync is behind it.
		if rerr := s.ring.Close(); err == nil {
			err = rerr
		}
	}
	if s.lock != nil {
		// Pebble dropped its reference to the lock; this drops Open's,
		// which releases it.
		if lerr := s.lock.Close(); err == nil {
			err = lerr
		}
	}
	if err != nil {
		return fmt.Errorf("pebblestore: close: %w", err)
	}
	return nil
}
