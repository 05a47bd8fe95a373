package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// Indexer builds a container's range index after its indexing policy
// changed. It is the one owner of that work per engine: Start runs its
// loop, Close stops it and waits. It keeps nothing in memory that matters:
// the container record holds the version and the cursor, so a build
// resumes where it stopped after a crash.
type Indexer struct {
	e        *Engine
	interval time.Duration
	batch    int
	log      *slog.Logger

	kickc   chan struct{}
	stopc   chan struct{}
	donec   chan struct{}
	once    sync.Once
	started atomic.Bool
}

// NewIndexer returns a stopped indexer for e.
func (e *Engine) NewIndexer(log *slog.Logger) *Indexer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	x := &Indexer{e: e, interval: time.Second, batch: 500, log: log,
		kickc: make(chan struct{}, 1), stopc: make(chan struct{}), donec: make(chan struct{})}
	e.mu.Lock()
	e.indexer = x
	e.mu.Unlock()
	return x
}

func (e *Engine) kickIndexer() {
	e.mu.Lock()
	x := e.indexer
	e.mu.Unlock()
	if x != nil {
		select {
		case x.kickc <- struct{}{}:
		default:
		}
	}
}

// Start runs the loop in the background.
func (x *Indexer) Start() {
	if x.started.Swap(true) {
		return
	}
	go func() {
		defer close(x.donec)
		t := time.NewTicker(x.interval)
		defer t.Stop()
		for {
			more, err := x.Pass(context.Background())
			if err != nil {
				x.log.Error("index build failed", "err", err)
			}
			if more {
				select {
				case <-x.stopc:
					return
				default:
					continue
				}
			}
			select {
			case <-x.stopc:
				return
			case <-x.kickc:
			case <-t.C:
			}
		}
	}()
}

// Close stops the loop and waits for it. Closing an indexer that was never
// started is fine.
func (x *Indexer) Close() error {
	x.once.Do(func() { close(x.stopc) })
	if x.started.Load() {
		<-x.donec
	}
	return nil
}

// Pass does one batch of work for every container whose index is not
// ready, and reports whether work remains. It first drops what queries
// kept for pages not asked for (forgetIdleKept).
func (x *Indexer) Pass(ctx context.Context) (bool, error) {
	x.e.forgetIdleKept()
	// Data whose metadata is gone, left by a crash or another gateway
	// (cleanup.go).
	if err := x.e.cleanupPass(ctx); err != nil {
		return false, err
	}
	if err := x.e.listAbsent(ctx); err != nil {
		return false, err
	}
	pending, err := x.e.buildWork(ctx)
	if err != nil {
		return false, err
	}
	more := false
	for _, c := range pending {
		build := x.e.buildIndexBatch
		if c.Index.Ready {
			build = x.e.buildAbsentBatch
		}
		m, err := build(ctx, c.DBID, c.ID, x.batch)
		if err != nil && !isNotFound(err) {
			return false, err
		}
		more = more || m
	}
	return more, nil
}

// buildIndexBatch indexes up to n items from the container's cursor under
// the current index version, in one transaction with the cursor's advance;
// at the end it drops the entries of older versions and marks the index
// ready.
func (e *Engine) buildIndexBatch(ctx context.Context, db, coll string, n int) (bool, error) {
	var stale *containerRecord
	more, err := e.buildBatch(ctx, db, coll, n, buildStep{
		cursor: func(c *containerRecord) ([]byte, bool) {
			// Every attempt of the transaction starts here: one the
			// store re-runs must not keep an earlier attempt's end.
			stale = nil
			return c.Index.Cursor, !c.Index.Ready
		},
		// Kept beside the container's record, not in it: every write
		// reads the record, and over PostgreSQL a batch that wrote it
		// failed against any write into the span it read (a cycle of
		// read-write dependencies), so under a steady stream of writes
		// the build made no progress.
		cursorKey: indexCursorKey,
		visit:     e.putIndexEntries,
		advance: func(tx storage.Txn, c *containerRecord, cursor []byte) error {
			next := *c
			if cursor != nil {
				next.Index.Cursor = cursor
				return setJSON(tx, containerKey(c.DBRid, c.ID), &next)
			}
			next.Index = indexState{Version: c.Index.Version, Ready: true, Absent: c.Index.Absent}
			stale = c
			// Entries of older versions are unreachable now; their
			// bytes go once this commits (cleanup.go).
			lo := collPrefix(famIndex, c.Rid)
			hi := binary.BigEndian.AppendUint32(bytes.Clone(lo), c.Index.Version)
			if err := scheduleCleanup(tx, staleIndexID(c), [][2][]byte{{lo, hi}}); err != nil {
				return err
			}
			return setJSON(tx, containerKey(c.DBRid, c.ID), &next)
		},
	})
	if err != nil || stale == nil {
		return more, err
	}
	return false, e.runCleanup(ctx, staleIndexID(stale))
}

// indexCursorKey is where the build of c's index keeps its cursor: beside
// the build's lease, so that it goes with the container's data.
func indexCursorKey(c *containerRecord) []byte {
	return binary.BigEndian.AppendUint32(append(leaseKey(jobIndex, c.Rid), 'c'), c.Index.Version)
}

// buildStep is one kind of build over a container's items.
type buildStep struct {
	// cursor is the location the build resumes at; ok is false when the
	// container has nothing to build.
	cursor func(c *containerRecord) (cursor []byte, ok bool)
	// visit writes what the build makes of one item.
	visit func(tx storage.Txn, c *containerRecord, doc document.Value, loc []byte) error
	// advance writes the container's record with the cursor moved to
	// cursor, or with the build done when cursor is nil.
	advance func(tx storage.Txn, c *containerRecord, cursor []byte) error
	// cursorKey, when set, names the key the build keeps its cursor
	// under until it is done, read in place of cursor's when present;
	// advance is then called only when the build is done.
	cursorKey func(c *containerRecord) []byte
}

// buildBatch runs up to n items of a build, in one transaction with the
// cursor's advance, under the build's lease: another gateway building the
// container's index goes on alone, and this one looks again on its next
// pass. It reports whether items remain.
func (e *Engine) buildBatch(ctx context.Context, db, coll string, n int, step buildStep) (bool, error) {
	more := false
	var changed *containerRecord
	var g grant
	var now time.Time
	if e.leases != nil {
		var err error
		if now, err = e.Now(ctx); err != nil {
			return false, err
		}
	}
	err := e.store.Update(ctx, func(tx storage.Txn) error {
		more, changed, g = false, nil, grant{}
		c, err := e.loadContainer(tx, db, coll)
		if err != nil {
			return err
		}
		from, ok := step.cursor(c)
		if !ok {
			return nil
		}
		if g, err = e.leases.hold(tx, leaseKey(jobIndex, c.Rid), now); err != nil || !g.ok {
			return err
		}
		var cursorKey []byte
		if step.cursorKey != nil {
			cursorKey = step.cursorKey(c)
			switch kept, err := tx.Get(cursorKey); {
			case err == nil:
				from = kept
			case !errors.Is(err, storage.ErrNotFound):
				return err
			}
		}
		changed = c
		done := 0
		var last []byte
		err = scanItems(tx, c, wholeContainer(), from, &readStats{}, func(loc []byte, rec *itemRecord) (bool, error) {
			if done == n {
				more = true
				return false, nil
			}
			doc, err := document.Parse(rec.json)
			if err != nil {
				return false, err
			}
			if err := step.visit(tx, c, doc, loc); err != nil {
				return false, err
			}
			done++
			last = bytes.Clone(loc)
			return true, nil
		})
		if err != nil {
			return err
		}
		var next []byte
		if more {
			next = append(last, 0) // just after last
		}
		if cursorKey != nil {
			if next != nil {
				return tx.Set(cursorKey, next)
			}
			if err := tx.Delete(cursorKey); err != nil {
				return err
			}
		}
		return step.advance(tx, c, next)
	})
	if err == nil {
		e.leases.commit(g)
	}
	if err == nil && changed != nil && g.ok {
		e.containerChanged(ctx, changed)
	}
	return more, err
}

// staleIndexID names the cleanup of the index versions of c older than its
// current one.
func staleIndexID(c *containerRecord) []byte {
	return binary.BigEndian.AppendUint32(bytes.Clone(c.Rid), c.Index.Version)
}

// deleteRange removes every key in [lo, hi) in bounded transactions.
func (e *Engine) deleteRange(ctx context.Context, lo, hi []byte) error {
	for {
		empty, err := storage.DeleteRange(ctx, e.store, lo, hi, 1000)
		if err != nil || empty {
			return err
		}
	}
}
