package pebblestore

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Stats is what an operator watches of the store's tree: whether
// compactions keep up with writes, and what waiting for the disk costs.
type Stats struct {
	// CompactionDebt is Pebble's estimate of the bytes compactions must
	// still rewrite for the levels to be in shape; it grows when writes
	// outrun them.
	CompactionDebt uint64
	// Compactions is how many are running now.
	Compactions int64
	// ReadAmp is the tables a point read may look in: level 0's
	// sublevels and the other levels that hold tables.
	ReadAmp int
	// WriteStalls counts the times Pebble stopped writes until a flush or
	// compaction caught up, and WriteStallTime is how long they lasted,
	// one still going on included.
	WriteStalls    int64
	WriteStallTime time.Duration
	// FsyncLatency is the write-ahead log's sync latencies, in
	// nanoseconds; nil for a store with no log (in memory).
	FsyncLatency prometheus.Histogram
}

// Stats reports the store's tree, as of now.
func (s *Store) Stats() Stats {
	m := s.db.Metrics()
	count, stalled := s.stalls.read(s.clock.Now())
	st := Stats{
		CompactionDebt: m.Compact.EstimatedDebt,
		Compactions:    m.Compact.NumInProgress,
		ReadAmp:        m.ReadAmp(),
		WriteStalls:    count,
		WriteStallTime: stalled,
	}
	if s.dir != "" {
		// In memory the store writes no log (Pebble keeps an empty
		// histogram all the same).
		st.FsyncLatency = m.LogWriter.FsyncLatency
	}
	return st
}

// writeStalls counts Pebble's write stalls from its events.
type writeStalls struct {
	count atomic.Int64
	nanos atomic.Int64 // of the stalls that ended
	began atomic.Int64 // unix nanoseconds of the stall going on; 0 when none
}

func (w *writeStalls) begin(now time.Time) {
	w.count.Add(1)
	w.began.Store(now.UnixNano())
}

func (w *writeStalls) end(now time.Time) {
	if b := w.began.Swap(0); b != 0 {
		w.nanos.Add(max(now.UnixNano()-b, 0))
	}
}

// read returns how many stalls began and how long they lasted by now.
func (w *writeStalls) read(now time.Time) (int64, time.Duration) {
	d := w.nanos.Load()
	if b := w.began.Load(); b != 0 {
		d += max(now.UnixNano()-b, 0)
	}
	return w.count.Load(), time.Duration(d)
}
