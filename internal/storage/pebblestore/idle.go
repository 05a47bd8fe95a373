package pebblestore

import (
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// DefaultIdleFlush is how long commits must have stopped before the store
// flushes its memtable (Options.IdleFlush).
const DefaultIdleFlush = time.Second

// A memtable keeps every version of a key written since it began: after a
// burst of upserts over a working set, a scan of it steps over each key's
// older versions, and a point read searches among them. A flush writes only
// the newest version of each key to a table, so reads after the burst cost
// what they cost before it (a range query in one partition took 10% less
// CPU after make bench's write phase, docs/benchmarks.md). The store
// therefore flushes once writes have paused for a while, if the memtable
// holds enough (minIdleFlush of its size) to be worth a table: a steady
// trickle of writes with pauses between would otherwise make a table per
// pause.
const minIdleFlush = 8 // the memtable's share, as a divisor of its size

// idleWatch tells when the store's commits have stopped for idle.
type idleWatch struct {
	idle    time.Duration
	commits int64     // the count last seen
	since   time.Time // when the count was last seen to change
	told    bool      // this pause was reported already
}

// quiet reports, given the time and the count of commits so far, whether
// no commit was made for idle or longer, once per pause.
func (w *idleWatch) quiet(now time.Time, commits int64) bool {
	if commits != w.commits {
		w.commits, w.since, w.told = commits, now, false
		return false
	}
	if w.told || now.Sub(w.since) < w.idle {
		return false
	}
	w.told = true
	return true
}

// flushWhenIdle runs until the store closes: it looks at the commits four
// times per idle period and starts a flush when they paused and the
// memtable holds at least minSize bytes.
func (s *Store) flushWhenIdle(c clock.Clock, idle time.Duration, minSize uint64) {
	w := idleWatch{idle: idle, since: c.Now(), told: true}
	for {
		select {
		case <-s.closing:
			return
		case <-c.After(idle / 4):
		}
		if !w.quiet(c.Now(), s.commits.Load()) {
			continue
		}
		if err := s.enter(); err != nil {
			return
		}
		if s.db.Metrics().MemTable.Size >= minSize {
			if _, err := s.db.AsyncFlush(); err != nil {
				s.log.Warn("flush after writes paused", "err", err)
			}
		}
		s.inflight.Done()
	}
}
