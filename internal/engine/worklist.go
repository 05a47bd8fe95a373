package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// The background jobs (the TTL purger and the index builder) look for
// containers with work for them several times a second. Reading and
// decoding every container record each time made an idle store with many
// containers busy (10,000 empty containers kept a core three-quarters
// busy), so the engine keeps the short list of containers that have such
// work in memory:
//
//   - the purge list: containers whose TTL history may expire an item
//     (TTL on, or past epochs not yet swept);
//   - the build list: containers whose range index is being rebuilt.
//
// The lists are filled by one scan of the container records when a job
// first asks, and then kept up to date by the engine itself: every write
// of a container record (create, replace, delete, a database delete, the
// builder's progress, a sweep of TTL epochs) re-reads that one record
// after its commit. A re-read happens under workList.mu from after the
// commit, so the last one to run reads the last committed record, and the
// lists never keep a state older than a committed one.
//
// A store shared with other gateways can change without this engine
// writing: the lists are therefore rebuilt from a full scan every
// rescanInterval (sharedRescanInterval over a shared store), which decodes
// only the records whose bytes changed (decodeCachedContainer). A setting
// changed through another gateway thus reaches this engine's jobs within
// that interval.
type workList struct {
	mu sync.Mutex
	// scanned is when the last full scan ran; zero forces one.
	scanned time.Time
	purge   map[string]*containerRecord // by container key
	build   map[string]*containerRecord // by container key
	// listed is the purge list as the purger reads it, built once per
	// change of the list rather than once per pass; nil when stale.
	listed []ttl.Container
}

// rescanInterval spaces the full scans that pick up changes made through
// another gateway. Over a store of one process there is none, and the scan
// only guards against a missed refiling; over a shared store it bounds how
// long a container created or changed elsewhere waits for this gateway's
// jobs, which take over a dead gateway's work (lease.go).
const (
	rescanInterval       = time.Minute
	sharedRescanInterval = 2 * time.Second
)

// file puts container c, stored under key, in the lists it belongs to; a
// nil c (a removed container) in none.
func (w *workList) file(key string, c *containerRecord) {
	w.listed = nil
	delete(w.purge, key)
	delete(w.build, key)
	if c == nil {
		return
	}
	if c.TTL.NeedsPurge() {
		w.purge[key] = c
	}
	if !c.Index.Ready || c.Index.building() {
		w.build[key] = c
	}
}

// fresh scans every container record when the lists are unknown or older
// than rescanInterval. w.mu is held.
func (e *Engine) fresh(ctx context.Context) error {
	w := &e.worklist
	now := e.clock.Now()
	every := rescanInterval
	if e.leases != nil {
		every = sharedRescanInterval
	}
	if w.scanned.IsZero() || now.Sub(w.scanned) >= every || now.Before(w.scanned) {
		return e.scanWork(ctx, now)
	}
	return nil
}

// purgeWork returns the containers in which an item may expire, with
// their histories, as the purger lists them.
func (e *Engine) purgeWork(ctx context.Context) ([]ttl.Container, error) {
	w := &e.worklist
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := e.fresh(ctx); err != nil {
		return nil, err
	}
	if w.listed == nil {
		w.listed = make([]ttl.Container, 0, len(w.purge))
		for _, c := range w.purge {
			w.listed = append(w.listed, ttl.Container{ID: c.link(), History: c.TTL})
		}
	}
	// Shared, not copied: the purger only reads it (ttl.Target), and a
	// change builds a new slice rather than writing into this one.
	return w.listed, nil
}

// buildWork returns the containers whose index is being rebuilt.
func (e *Engine) buildWork(ctx context.Context) ([]*containerRecord, error) {
	w := &e.worklist
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := e.fresh(ctx); err != nil {
		return nil, err
	}
	build := make([]*containerRecord, 0, len(w.build))
	for _, c := range w.build {
		build = append(build, c)
	}
	return build, nil
}

// scanWork rebuilds the lists from every container record. w.mu is held.
func (e *Engine) scanWork(ctx context.Context, now time.Time) error {
	w := &e.worklist
	purge, build := map[string]*containerRecord{}, map[string]*containerRecord{}
	err := e.store.View(ctx, func(r storage.Reader) error {
		return scanPrefix(r, []byte{famContainer}, func(k, v []byte) (bool, error) {
			c, err := e.decodeCachedContainer(k, v)
			if err != nil {
				return false, err
			}
			if c.TTL.NeedsPurge() {
				purge[string(k)] = c
			}
			if !c.Index.Ready || c.Index.building() {
				build[string(k)] = c
			}
			return true, nil
		})
	})
	if err != nil {
		return err
	}
	w.purge, w.build, w.scanned, w.listed = purge, build, now, nil
	return nil
}

// containerChanged re-reads the record of container c after a committed
// write of it (or its removal) and refiles it in the work lists. It is
// called after the commit, never inside the transaction: a re-read inside
// could see the record before the commit and keep that.
func (e *Engine) containerChanged(ctx context.Context, c *containerRecord) {
	w := &e.worklist
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.scanned.IsZero() {
		return // the first scan will read it
	}
	key := containerKey(c.DBRid, c.ID)
	var cur *containerRecord
	err := e.store.View(context.WithoutCancel(ctx), func(r storage.Reader) error {
		raw, err := r.Get(key)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		cur, err = e.decodeCachedContainer(key, raw)
		return err
	})
	if err != nil {
		// The lists may be stale now: the next job's look rescans.
		w.scanned = time.Time{}
		return
	}
	w.file(string(key), cur)
}

// containerGone is containerChanged for a container whose record a
// committed transaction removed. It also lets the charge sink drop what it
// keeps for the container (the purger's budget keeps a bucket for every
// container a user request was charged to).
func (e *Engine) containerGone(ctx context.Context, c *containerRecord) {
	e.containerChanged(ctx, c)
	e.leases.forget(c.Rid)
	if f, ok := e.charges.(interface{ Forget(container string) }); ok {
		f.Forget(c.link())
	}
}
