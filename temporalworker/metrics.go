package temporalworker

// A Temporal SDK metrics handler that exports the partition activity's own
// counters to a Prometheus registry, for a worker's /metrics.

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
)

// NewPrometheusMetrics returns an SDK metrics handler (for
// client.Options.MetricsHandler) that counts the partition activity's
// metrics (MetricPartitionsResumed, MetricCheckpointsRefused) in reg, as
// Prometheus counters named with a _total suffix, registered at zero so
// that a scrape finds them before the first event. The SDK's own metrics
// (requests, polls, latencies) go nowhere: their tags vary by call, and
// Temporal's server and SDK dashboards already read them elsewhere. Tags
// are dropped: a worker's namespace and task queue are the same for every
// partition it runs.
func NewPrometheusMetrics(reg prometheus.Registerer) (client.MetricsHandler, error) {
	h := promHandler{counters: map[string]prometheus.Counter{}}
	for name, help := range map[string]string{
		MetricPartitionsResumed:  "Partition attempts that resumed from the last heartbeat's checkpoint.",
		MetricCheckpointsRefused: "Partition attempts that left the last heartbeat's checkpoint (it did not fit the pass or the tables) and started from the partition's first hash.",
	} {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name + "_total", Help: help})
		if err := reg.Register(c); err != nil {
			return nil, err
		}
		h.counters[name] = c
	}
	return h, nil
}

type promHandler struct {
	counters map[string]prometheus.Counter // by the SDK metric's name; read-only once made
}

func (h promHandler) WithTags(map[string]string) client.MetricsHandler { return h }

func (h promHandler) Counter(name string) client.MetricsCounter {
	if c, ok := h.counters[strings.TrimSuffix(name, "_total")]; ok {
		return promCounter{c}
	}
	return client.MetricsNopHandler.Counter(name)
}

func (h promHandler) Gauge(name string) client.MetricsGauge {
	return client.MetricsNopHandler.Gauge(name)
}

func (h promHandler) Timer(name string) client.MetricsTimer {
	return client.MetricsNopHandler.Timer(name)
}

type promCounter struct{ c prometheus.Counter }

func (p promCounter) Inc(d int64) {
	if d > 0 { // a Prometheus counter never goes down
		p.c.Add(float64(d))
	}
}
