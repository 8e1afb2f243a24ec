package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

// paceCollector exports the pace's controller's state of the running pass
// (or of the last one): scavenger.Stats.Pace.
type paceCollector struct {
	d                                                       *Daemon
	pace, inFlight, allowed, share, batchCap, ratio, rebase *prometheus.Desc
	backoffs, floorHits                                     *prometheus.Desc
}

func newPaceCollector(d *Daemon) *paceCollector {
	return &paceCollector{
		d:         d,
		pace:      desc("pace", "The pace of the running pass (or of the last one): 1 for its pace, 0 for the other.", "pace"),
		inFlight:  desc("pace_in_flight", "Statements the running pass has in flight."),
		allowed:   desc("pace_in_flight_limit", "The most statements the pace's controller lets run at once (at the full pace: --workers)."),
		share:     desc("pace_share", "The fraction of its time a statement slot spends in the database (1: no pauses)."),
		batchCap:  desc("pace_batch_cap", "The controller's cap on batch sizes (--task-batch-size: none)."),
		ratio:     desc("pace_signal_ratio", "The last window's median latency over its quiet baseline (0 before the first); the gentle pace backs off above --yield-factor."),
		rebase:    desc("pace_rebasing", "1 while the gentle pace re-measures its quiet baselines."),
		backoffs:  desc("pace_backoffs", "Windows of the running (or last) pass that backed off."),
		floorHits: desc("pace_floor_hits", "Windows of the running (or last) pass that found harm with the pass at its floor: it could not be gentler."),
	}
}

// Describe implements prometheus.Collector.
func (c *paceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pace, c.inFlight, c.allowed, c.share, c.batchCap, c.ratio, c.rebase, c.backoffs, c.floorHits} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *paceCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.d.metricsView().pass.Pace
	gauge := func(d *prometheus.Desc, x float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, x, labels...)
	}
	mode := p.Mode
	if mode == "" { // no pass yet: the configured pace
		c.d.mu.Lock()
		mode = c.d.cfg.Scavenger.WithDefaults().Mode
		c.d.mu.Unlock()
	}
	for _, m := range []scavenger.PaceMode{scavenger.PaceGentle, scavenger.PaceFull} {
		gauge(c.pace, bool01(m == mode), string(m))
	}
	gauge(c.inFlight, float64(p.InFlight))
	gauge(c.allowed, float64(p.Allowed))
	gauge(c.share, p.Share)
	gauge(c.batchCap, float64(p.BatchCap))
	gauge(c.ratio, p.Ratio)
	gauge(c.rebase, bool01(p.Rebasing))
	gauge(c.backoffs, float64(p.Backoffs))
	gauge(c.floorHits, float64(p.FloorHits))
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
