package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/explorer"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// requestMetrics counts the API's requests: how long each took by
// operation and status, and how many are in flight.
type requestMetrics struct {
	clock    clock.Clock
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
}

func newRequestMetrics(reg *prometheus.Registry, clk clock.Clock) *requestMetrics {
	m := &requestMetrics{
		clock: clk,
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mayfly_request_duration_seconds",
			Help:    "Time to answer an API request, by operation and status.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"operation", "status"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "mayfly_requests_in_flight", Help: "API requests being answered now."}),
	}
	reg.MustRegister(m.duration, m.inFlight)
	return m
}

// wrap measures every request h answers.
func (m *requestMetrics) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		growStack()
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		start := m.clock.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		m.duration.WithLabelValues(operationOf(r), strconv.Itoa(sw.status)).Observe(m.clock.Now().Sub(start).Seconds())
	})
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// resourceKinds are the resource types an operation label names; any
// other path is "other", so the label's values stay few.
var resourceKinds = map[string]bool{"dbs": true, "colls": true, "docs": true, "offers": true, "pkranges": true,
	"users": true, "permissions": true, "sprocs": true, "triggers": true, "udfs": true, "attachments": true, "conflicts": true}

// operationOf names a request for the metrics: its method and the kind of
// resource it addresses ("GET docs", "POST docs query", "GET account"),
// from fixed sets, so that no request adds a series of its own.
func operationOf(r *http.Request) string {
	kind := "account"
	if path := strings.Trim(r.URL.Path, "/"); path != "" {
		// The kind is the last segment of a path with an odd number of
		// segments (a feed: dbs/x/colls) and the one before the last
		// otherwise (a resource: dbs/x/colls/y).
		last := strings.LastIndexByte(path, '/')
		kind = path[last+1:]
		if strings.Count(path, "/")%2 == 1 {
			kind = path[:last]
			kind = kind[strings.LastIndexByte(kind, '/')+1:]
		}
	}
	if kind != "account" && !resourceKinds[kind] {
		kind = "other"
	}
	method := r.Method
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
	default:
		// Any other name a client makes up would be a series of its own.
		method = "OTHER"
	}
	op := method + " " + kind
	if r.Method == http.MethodPost && (r.Header.Get("x-ms-documentdb-isquery") == "True" || r.Header.Get("x-ms-documentdb-isquery") == "true" ||
		strings.HasPrefix(r.Header.Get("Content-Type"), "application/query+json")) {
		op += " query"
	}
	return op
}

// health answers load balancers, without a key: /_health/live is 200 while
// the process serves; /_health/ready is 200 when the store answers a read
// (a PostgreSQL store that cannot be reached makes it 503) and 503 once the
// server is shutting down, so a balancer stops sending requests it would
// drain.
type health struct {
	store   storage.Store
	closing atomic.Bool
}

func (h *health) live(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("live\n"))
}

func (h *health) ready(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if h.closing.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("shutting down\n"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	err := h.store.View(ctx, func(rd storage.Reader) error {
		_, err := rd.Get([]byte("a"))
		if err == storage.ErrNotFound {
			return nil
		}
		return err
	})
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("the store does not answer\n"))
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}

// routes are the health endpoints, for the API and metrics listeners.
func (h *health) routes() map[string]http.Handler {
	return map[string]http.Handler{
		"/_health/live":  http.HandlerFunc(h.live),
		"/_health/ready": http.HandlerFunc(h.ready),
	}
}

// storeSize reports the bytes the store occupies, when it can tell.
func storeSize(st storage.Store) []prometheus.Collector {
	sz, ok := st.(storage.Sizer)
	if !ok {
		return nil
	}
	return []prometheus.Collector{prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mayfly_store_bytes", Help: "Bytes the store occupies on disk."},
		func() float64 {
			n, err := sz.DiskUsage()
			if err != nil {
				return 0
			}
			return float64(n)
		})}
}

// extraRoutes are the API listener's routes besides the API: the health
// endpoints and the Data Explorer, which is told the account key only
// when it is the well-known emulator key.
func extraRoutes(h *health, keys []string) map[string]http.Handler {
	out := h.routes()
	key := ""
	if hasEmulatorKey(keys) {
		key = EmulatorKey
	}
	for path, handler := range explorer.Routes(key) {
		out[path] = handler
	}
	return out
}
