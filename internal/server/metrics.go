package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mayfly-db/mayfly/internal/ttl"
)

// purgeMetrics exports the purger's measurements (ttl.md B5) to Prometheus.
type purgeMetrics struct {
	awaiting *prometheus.GaugeVec
	purged   *prometheus.CounterVec
	lag      *prometheus.HistogramVec
	deferred *prometheus.CounterVec
}

var _ ttl.Metrics = (*purgeMetrics)(nil)

func newPurgeMetrics(reg prometheus.Registerer) *purgeMetrics {
	m := &purgeMetrics{
		awaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mayfly_ttl_items_awaiting_purge",
			Help: "Expired items of a container still on disk, waiting for the purger.",
		}, []string{"container"}),
		purged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mayfly_ttl_items_purged_total",
			Help: "Expired items physically deleted by the purger.",
		}, []string{"container"}),
		lag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mayfly_ttl_purge_lag_seconds",
			Help:    "Time from an item's expiry to its physical deletion.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 0.75, 1, 2, 5, 10, 30, 60, 300},
		}, []string{"container"}),
		deferred: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mayfly_ttl_purge_batches_deferred_total",
			Help: "Purge batches put off because user requests had used the container's capacity.",
		}, []string{"container"}),
	}
	reg.MustRegister(m.awaiting, m.purged, m.lag, m.deferred)
	return m
}

func (m *purgeMetrics) AwaitingPurge(c string, n int) { m.awaiting.WithLabelValues(c).Set(float64(n)) }
func (m *purgeMetrics) Purged(c string, n int)        { m.purged.WithLabelValues(c).Add(float64(n)) }
func (m *purgeMetrics) Lag(c string, d time.Duration) { m.lag.WithLabelValues(c).Observe(d.Seconds()) }
func (m *purgeMetrics) Deferred(c string)             { m.deferred.WithLabelValues(c).Inc() }
func (m *purgeMetrics) Forget(c string) {
	m.awaiting.DeleteLabelValues(c)
	m.purged.DeleteLabelValues(c)
	m.lag.DeleteLabelValues(c)
	m.deferred.DeleteLabelValues(c)
}
