package pebblestore

import (
	"bytes"
	"context"
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
		if err := s.tidy(); err != nil {
			s.log.Warn("compaction after writes paused", "err", err)
		}
		s.inflight.Done()
	}
}

// A store whose writes stop keeps, above its bottom level, the tables its
// last flushes and compactions left: level 0 below its compaction
// threshold, a base level below its target size. Nothing compacts them
// until writes come again, each spans a part of the key space, and every
// read that reaches into that part looks through them: a seek opens a
// table in each, a scan merges them. After a load of 10⁶ items the store
// held 4 level-0 tables of 304 KB and level 5 of 5.9 MB over level 6 of
// 156 MB, and the benchmark's scans and pages cost up to 1.5 times what
// they cost at 10⁵ items (docs/benchmarks.md, "A store whose writes
// stopped, tidied").
//
// So once writes pause, tidy compacts the key spans of the tables above
// the bottom level down into it. That rewrites the bottom level's tables
// over those spans, up to the whole store, so it is done only once the
// bytes flushed since the last tidy reach tidyMin and 1/tidyShare of the
// store, and only with room for that beside the reserve: a load is tidied
// once at its end, and a trickle of writes with
// pauses between makes the store rewrite at most tidyShare times what it
// flushed, beyond its own compactions.
const (
	tidyShare = 2       // the store's size over the bytes flushed that allow a tidy
	tidyMin   = 8 << 20 // bytes of tables flushed, compressed as stored
)

// tidy compacts the tables above the store's bottom level into it, when
// enough was flushed since the last tidy, taking spans one after another
// and pausing after each as long as it took, as Erase does. It stops when
// the store closes, and when writes come again, leaving the rest to the
// next pause.
func (s *Store) tidy() error {
	m := s.db.Metrics()
	flushed := m.Levels[0].BytesFlushed
	if flushed < s.tidied+s.tidyMin {
		return nil
	}
	var total uint64
	bottom := -1
	for l := range m.Levels {
		if m.Levels[l].NumFiles > 0 {
			bottom = l
		}
		total += uint64(m.Levels[l].Size)
	}
	if bottom < 0 || flushed < s.tidied+total/tidyShare || s.failedErr() != nil {
		return nil
	}
	// A compaction writes its output before it deletes its input, so the
	// bytes a tidy may rewrite, up to the store, must fit beside the
	// reserve kept for flushes and compactions.
	if s.freeSpace != nil {
		free, err := s.freeSpace()
		if err != nil || free < total+uint64(max(s.reserve, 0)) {
			return err
		}
	}
	levels, err := s.db.SSTables()
	if err != nil {
		return err
	}
	var spans [][2][]byte
	// Level 0 goes down even when nothing is below it: its tables overlap
	// one another, and a read looks through each that may hold its key.
	for _, tables := range levels[:max(bottom, 1)] {
		for _, t := range tables {
			end := append(bytes.Clone(t.Largest.UserKey), 0)
			spans = append(spans, [2][]byte{t.Smallest.UserKey, end})
		}
	}
	if len(spans) == 0 {
		return nil
	}
	commits := s.commits.Load()
	for _, sp := range mergeSpans(spans) {
		if s.commits.Load() != commits {
			return nil // writes came again: the next pause goes on
		}
		start := s.clock.Now()
		if err := s.db.Compact(sp[0], sp[1], false); err != nil {
			s.tidied = flushed // not tried again at every pause
			return err
		}
		if err := s.pause(context.Background(), s.clock.Now().Sub(start)); err != nil {
			return nil // closing
		}
	}
	s.tidied = flushed
	return nil
}
