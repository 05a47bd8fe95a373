// Package ttlmetrics exports the TTL purger's measurements (ttl.md B5) to
// Prometheus: items awaiting purge, purge lag, items purged and batches
// deferred by user load.
//
// It is apart from package ttl because the Prometheus client reaches
// net/http, which the domain must not import; package ttl declares the
// Metrics interface and this package implements it. The server assembles
// them: ttl.Config{Metrics: m} with m from New.
package ttlmetrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mayfly-db/mayfly/internal/ttl"
)

// Metrics implements ttl.Metrics with Prometheus collectors. It is safe for
// concurrent use.
type Metrics struct {
	awaiting *prometheus.GaugeVec
	purged   *prometheus.CounterVec
	deferred *prometheus.CounterVec
	lag      prometheus.Histogram

	// Erasure (ttl.md B4).
	erasureItems *prometheus.GaugeVec
	erasureBytes *prometheus.GaugeVec
	erasureLag   prometheus.Histogram
	erasable     prometheus.Gauge
}

var _ ttl.ErasureMetrics = (*Metrics)(nil)

// ErasureLagBuckets are the erasure-lag histogram's upper bounds in
// seconds: a minute to a day, the default deadline (an hour) among them.
var ErasureLagBuckets = []float64{60, 300, 900, 1800, 2700, 3600, 5400, 7200, 14400, 43200, 86400}

var _ ttl.Metrics = (*Metrics)(nil)

// LagBuckets are the purge-lag histogram's upper bounds in seconds, dense
// below the one-second target of B3.
var LagBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 10, 30, 60, 300, 3600}

// New returns the collectors, registered with reg unless reg is nil.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		awaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "mayfly", Subsystem: "ttl", Name: "items_awaiting_purge",
			Help: "Expired items still on disk, per container, as of the purger's last look.",
		}, []string{"container"}),
		purged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mayfly", Subsystem: "ttl", Name: "items_purged_total",
			Help: "Expired items physically deleted, per container.",
		}, []string{"container"}),
		deferred: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mayfly", Subsystem: "ttl", Name: "purge_batches_deferred_total",
			Help: "Purge batches put off because user requests had used the container's capacity.",
		}, []string{"container"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "mayfly", Subsystem: "ttl", Name: "purge_lag_seconds",
			Help:    "Time from an item's expiry to its physical deletion.",
			Buckets: LagBuckets,
		}),
		erasureItems: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "mayfly", Subsystem: "ttl", Name: "items_awaiting_erasure",
			Help: "Purged or deleted items whose bytes are still to be erased from the store's files, per container.",
		}, []string{"container"}),
		erasureBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "mayfly", Subsystem: "ttl", Name: "bytes_awaiting_erasure",
			Help: "Bytes of the items awaiting erasure, per container.",
		}, []string{"container"}),
		erasureLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "mayfly", Subsystem: "ttl", Name: "erasure_lag_seconds",
			Help:    "Time from an item's expiry (or delete) to the erasure of its bytes from the store's files.",
			Buckets: ErasureLagBuckets,
		}),
		erasable: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "mayfly", Subsystem: "ttl", Name: "erasure_supported",
			Help: "1 when the store can erase deleted bytes from its files (the erasure deadline holds), 0 when it cannot.",
		}),
	}
	if reg != nil {
		var errs []error
		for _, c := range []prometheus.Collector{m.awaiting, m.purged, m.deferred, m.lag,
			m.erasureItems, m.erasureBytes, m.erasureLag, m.erasable} {
			errs = append(errs, reg.Register(c))
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// AwaitingPurge sets the container's backlog.
func (m *Metrics) AwaitingPurge(container string, items int) {
	m.awaiting.WithLabelValues(container).Set(float64(items))
}

// Purged counts deleted items.
func (m *Metrics) Purged(container string, items int) {
	m.purged.WithLabelValues(container).Add(float64(items))
}

// Lag observes one item's purge lag. The histogram has no container label:
// lag is a property of the purger, and per-container histograms would
// multiply series by the number of buckets.
func (m *Metrics) Lag(_ string, lag time.Duration) { m.lag.Observe(lag.Seconds()) }

// Deferred counts a deferred batch.
func (m *Metrics) Deferred(container string) { m.deferred.WithLabelValues(container).Inc() }

// Forget deletes a dropped container's series.
func (m *Metrics) Forget(container string) {
	m.awaiting.DeleteLabelValues(container)
	m.purged.DeleteLabelValues(container)
	m.deferred.DeleteLabelValues(container)
}

// AwaitingErasure sets a container's erasure queue.
func (m *Metrics) AwaitingErasure(container string, items int, bytes int64) {
	m.erasureItems.WithLabelValues(container).Set(float64(items))
	m.erasureBytes.WithLabelValues(container).Set(float64(bytes))
}

// Erased observes one item's erasure lag.
func (m *Metrics) Erased(lag time.Duration) { m.erasureLag.Observe(lag.Seconds()) }

// ForgetErasure deletes the erasure series of a container with nothing
// queued.
func (m *Metrics) ForgetErasure(container string) {
	m.erasureItems.DeleteLabelValues(container)
	m.erasureBytes.DeleteLabelValues(container)
}

// Erasable records whether the store can erase deleted bytes.
func (m *Metrics) Erasable(ok bool) {
	v := 0.0
	if ok {
		v = 1
	}
	m.erasable.Set(v)
}
