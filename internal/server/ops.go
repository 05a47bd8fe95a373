package server

import (
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/mayfly-db/mayfly/internal/engine"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
	"github.com/mayfly-db/mayfly/internal/storage/pgstore"
)

// opsHandler serves the metrics listener: /metrics, and with withPprof Go's
// profiles under /debug/pprof/. The profiles' /cmdline is left out on
// purpose: the command line may hold the account key (--key).
func opsHandler(reg *prometheus.Registry, withPprof bool, h *health) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	for path, handler := range h.routes() {
		mux.Handle("GET "+path, handler)
	}
	if withPprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
		mux.HandleFunc("GET /debug/pprof/cmdline", http.NotFound)
	}
	return mux
}

// pgCollectors show a PostgreSQL store's connection pool and how often its
// transactions meet each other: round trips, serialization failures re-run
// and given up on.
func pgCollectors(st *pgstore.Store) []prometheus.Collector {
	counter := func(name, help string, f func(pgstore.Stats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(f(st.Stats())) })
	}
	gauge := func(name, help string, f func(pgstore.Stats) int32) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return float64(f(st.Stats())) })
	}
	return []prometheus.Collector{
		counter("mayfly_postgres_round_trips_total", "Statements and batches sent to PostgreSQL.",
			func(s pgstore.Stats) int64 { return s.RoundTrips }),
		counter("mayfly_postgres_retries_total", "Transactions re-run after a serialization failure or a late commit.",
			func(s pgstore.Stats) int64 { return s.Retries }),
		counter("mayfly_postgres_conflicts_total", "Transactions given up on after too many serialization failures (answered 449).",
			func(s pgstore.Stats) int64 { return s.Conflicts }),
		gauge("mayfly_postgres_pool_connections", "Most connections the pool opens (--postgres-pool).",
			func(s pgstore.Stats) int32 { return s.PoolSize }),
		gauge("mayfly_postgres_pool_in_use", "Connections in use now.",
			func(s pgstore.Stats) int32 { return s.PoolInUse }),
	}
}

// pebbleCollectors show what a Pebble store holds in memory outside the
// Go heap: most of the process's memory under writes.
func pebbleCollectors(st *pebblestore.Store) []prometheus.Collector {
	gauge := func(kind string, f func(pebblestore.MemoryUse) int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mayfly_store_memory_bytes", Help: "Memory the store holds outside the Go heap, by kind.",
			ConstLabels: prometheus.Labels{"kind": kind}},
			func() float64 { return float64(f(st.MemoryUse())) })
	}
	stat := func(name, help string, counter bool, f func(pebblestore.Stats) float64) prometheus.Collector {
		value := func() float64 { return f(st.Stats()) }
		if counter {
			return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, value)
		}
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, value)
	}
	return []prometheus.Collector{
		gauge("memtables", func(m pebblestore.MemoryUse) int64 { return m.MemTables }),
		gauge("recycled_memtables", func(m pebblestore.MemoryUse) int64 { return m.Recycled }),
		gauge("block_cache", func(m pebblestore.MemoryUse) int64 { return m.BlockCache }),
		stat("mayfly_store_compaction_debt_bytes", "Bytes compactions must still rewrite for the store's levels to be in shape (Pebble's estimate); it grows while writes outrun them.", false,
			func(s pebblestore.Stats) float64 { return float64(s.CompactionDebt) }),
		stat("mayfly_store_compactions_running", "Compactions running now.", false,
			func(s pebblestore.Stats) float64 { return float64(s.Compactions) }),
		stat("mayfly_store_read_amplification", "Tables a point read may look in: level 0's sublevels and the other levels that hold tables.", false,
			func(s pebblestore.Stats) float64 { return float64(s.ReadAmp) }),
		stat("mayfly_store_write_stalls_total", "Times the store stopped writes until a flush or compaction caught up.", true,
			func(s pebblestore.Stats) float64 { return float64(s.WriteStalls) }),
		stat("mayfly_store_write_stall_seconds_total", "Time writes were stopped so, one stall still going on included.", true,
			func(s pebblestore.Stats) float64 { return s.WriteStallTime.Seconds() }),
		fsyncCollector{st: st, desc: prometheus.NewDesc("mayfly_store_wal_fsync_seconds", "Latency of the write-ahead log's syncs.", nil, nil)},
	}
}

// fsyncCollector shows Pebble's histogram of the write-ahead log's sync
// latencies, kept in nanoseconds, in seconds; nothing for a store with no
// log.
type fsyncCollector struct {
	st   *pebblestore.Store
	desc *prometheus.Desc
}

func (c fsyncCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c fsyncCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.st.Stats().FsyncLatency
	if h == nil {
		return
	}
	var m dto.Metric
	if err := h.Write(&m); err != nil || m.GetHistogram() == nil {
		return
	}
	hist := m.GetHistogram()
	buckets := make(map[float64]uint64, len(hist.GetBucket()))
	for _, b := range hist.GetBucket() {
		buckets[b.GetUpperBound()/1e9] = b.GetCumulativeCount()
	}
	ch <- prometheus.MustNewConstHistogram(c.desc, hist.GetSampleCount(), hist.GetSampleSum()/1e9, buckets)
}

// groupCollectors show how a gateway over a shared store commits its
// writes to one container together (docs/design/storage.md, "Group
// commit"): writes per group is the second over the first.
func groupCollectors(e *engine.Engine) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "mayfly_write_groups_total",
			Help: "Write transactions that committed a container's queued writes together."},
			func() float64 { g, _ := e.WriteGroups(); return float64(g) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "mayfly_grouped_writes_total",
			Help: "Writes committed in those transactions."},
			func() float64 { _, w := e.WriteGroups(); return float64(w) }),
	}
}
