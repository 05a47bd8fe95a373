package ttlmetrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// value returns the sample of family name labelled container=c.
func value(mf *dto.MetricFamily, c string) (float64, bool) {
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "container" && l.GetValue() == c {
				switch {
				case m.Gauge != nil:
					return m.GetGauge().GetValue(), true
				case m.Counter != nil:
					return m.GetCounter().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.AwaitingPurge("db/a", 42)
	m.Purged("db/a", 10)
	m.Purged("db/a", 5)
	m.Deferred("db/a")
	m.Lag("db/a", 300*time.Millisecond)
	m.Lag("db/a", 2*time.Second)
	m.Purged("db/b", 1)

	got := gather(t, reg)
	for _, tc := range []struct {
		name string
		c    string
		want float64
	}{
		{"mayfly_ttl_items_awaiting_purge", "db/a", 42},
		{"mayfly_ttl_items_purged_total", "db/a", 15},
		{"mayfly_ttl_items_purged_total", "db/b", 1},
		{"mayfly_ttl_purge_batches_deferred_total", "db/a", 1},
	} {
		if v, ok := value(got[tc.name], tc.c); !ok || v != tc.want {
			t.Errorf("%s{container=%q} = %v, %v; want %v", tc.name, tc.c, v, ok, tc.want)
		}
	}
	h := got["mayfly_ttl_purge_lag_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 2 || h.GetSampleSum() != 2.3 {
		t.Errorf("lag histogram: %d samples, sum %v", h.GetSampleCount(), h.GetSampleSum())
	}

	m.Forget("db/a")
	got = gather(t, reg)
	if _, ok := value(got["mayfly_ttl_items_purged_total"], "db/a"); ok {
		t.Error("forgotten container still exported")
	}
	if _, ok := value(got["mayfly_ttl_items_purged_total"], "db/b"); !ok {
		t.Error("other container forgotten too")
	}
}

func TestNew_Registration(t *testing.T) {
	m, err := New(nil)
	if err != nil || m == nil {
		t.Fatalf("New(nil) = %v, %v", m, err)
	}
	m.Purged("x", 1) // usable unregistered
	reg := prometheus.NewRegistry()
	if _, err := New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg); err == nil {
		t.Error("registering twice succeeded")
	}
}
