package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// maxGroup bounds the writes committed in one transaction: a larger group
// waits longer for its slowest write and, over a store shared with other
// gateways, holds more keys a conflict would make it run again.
const maxGroup = 32

// committer joins the write transactions one gateway makes on one
// container over a shared store into groups that commit as one
// transaction (group commit). Every write to a container updates its
// state record, so under serializable isolation such writes commit one
// at a time whatever the gateway does; committed singly, each waits for
// its own commit to become durable before the next may begin. A group
// pays for that wait once.
//
// The first writer to arrive leads: it takes every write queued (up to
// maxGroup), runs them and commits, and hands the lead to the first
// writer that queued meanwhile. The others wait for their result. Each
// write runs behind a savepoint (storage.Savepointer), so one that fails
// is taken back alone and the others still commit.
type committer struct {
	mu      sync.Mutex
	queue   []*groupWrite
	leading bool // some writer leads; the queue is empty otherwise
}

// groupWrite is one write transaction function waiting in a committer.
type groupWrite struct {
	ctx context.Context
	fn  func(tx storage.Txn) error
	// wake is signalled once: when the write's result is in, or when
	// the write is to lead the next group.
	wake chan struct{}
	// Guarded by committer.mu until wake is signalled.
	taken, done, lead bool
	err               error
}

// runGroup runs a group of writes and sets each one's err.
type runGroup func(group []*groupWrite)

// do runs fn as part of the next group and returns its result: fn's own
// error, or the group's when the group could not commit.
func (c *committer) do(ctx context.Context, fn func(tx storage.Txn) error, run runGroup) error {
	w := &groupWrite{ctx: ctx, fn: fn, wake: make(chan struct{}, 1)}
	c.mu.Lock()
	c.queue = append(c.queue, w)
	if !c.leading {
		c.leading, w.lead = true, true
	}
	lead := w.lead
	c.mu.Unlock()
	if !lead && !c.await(w) {
		return ctx.Err()
	}
	if !w.done {
		c.lead(run)
	}
	return w.err
}

// await waits until w's result is in or w is to lead, and reports false
// when w left the queue because its context ended first.
func (c *committer) await(w *groupWrite) bool {
	select {
	case <-w.wake:
		return true
	case <-w.ctx.Done():
	}
	c.mu.Lock()
	if !w.taken && !w.lead {
		c.queue = slices.DeleteFunc(c.queue, func(q *groupWrite) bool { return q == w })
		c.mu.Unlock()
		return false
	}
	c.mu.Unlock()
	// In a group already, or chosen to lead: either way others count on
	// it, so it waits for its turn.
	<-w.wake
	return true
}

// lead runs the next group, which begins with the leader's own write,
// then passes the lead on. When a write panics, the panic goes on in the
// leader's goroutine (and the HTTP handler answers the leader's request
// 500); its store committed nothing of the group, so the others are told
// to retry (errGroupAborted), and the lead passes on all the same: no
// writer waits for a group that is gone.
func (c *committer) lead(run runGroup) {
	c.mu.Lock()
	n := min(len(c.queue), maxGroup)
	group := slices.Clone(c.queue[:n])
	c.queue = slices.Delete(c.queue, 0, n)
	for _, w := range group {
		w.taken = true
	}
	c.mu.Unlock()

	ran := false
	defer func() {
		c.mu.Lock()
		var next *groupWrite
		if len(c.queue) > 0 {
			next = c.queue[0]
			next.lead = true
		} else {
			c.leading = false
		}
		for _, w := range group {
			if !ran {
				w.err = errGroupAborted
			}
			w.done = true
		}
		c.mu.Unlock()
		for _, w := range group[1:] {
			w.wake <- struct{}{}
		}
		if next != nil {
			next.wake <- struct{}{}
		}
	}()
	run(group)
	ran = true
}

// errGroupAborted is the result of a write whose group was abandoned
// because a write of it panicked; the write was not committed and may be
// sent again.
var errGroupAborted = fmt.Errorf("%w: a write committed with this one failed; nothing of it was committed", storage.ErrConflict)

// runGrouped runs group in one transaction of store, each write behind a
// savepoint. A group of one, or a store whose transactions have no
// savepoints, runs each write in a transaction of its own.
func runGrouped(store storage.Store, group []*groupWrite) {
	if len(group) == 1 {
		w := group[0]
		w.err = store.Update(w.ctx, w.fn)
		return
	}
	// No one writer's cancellation may fail the others: the group's
	// transaction ends when its work does, and a writer whose context
	// ended before its turn is skipped.
	ctx := context.WithoutCancel(group[0].ctx)
	var unsupported bool
	err := store.Update(ctx, func(tx storage.Txn) error {
		unsupported = false
		for _, w := range group {
			w.err = nil
		}
		for _, w := range group {
			if err := w.ctx.Err(); err != nil {
				w.err = err
				continue
			}
			sp, ok := storage.Savepoint(tx)
			if !ok {
				unsupported = true
				return errNoSavepoints
			}
			if w.err = w.fn(tx); w.err != nil {
				if err := tx.(storage.Savepointer).RollbackTo(sp); err != nil {
					return err
				}
			}
		}
		return nil
	})
	switch {
	case unsupported:
		for _, w := range group {
			w.err = store.Update(w.ctx, w.fn)
		}
		return
	case err == nil:
		return
	}
	for _, w := range group {
		w.err = err
	}
}

var errNoSavepoints = errors.New("the store's transactions have no savepoints")
