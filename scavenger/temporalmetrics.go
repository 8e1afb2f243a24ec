package scavenger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tqscavenger/tqscavenger/internal/redact"
)

// The gentle pace's best signal, where the operator gives Temporal's
// metrics endpoints (Pace.TemporalMetrics, --temporal-metrics): the
// latency the cluster's own services see from the database. Every
// temporalScrapeEvery the pass scrapes each endpoint and reads
// persistence_latency (common/metrics/metric_defs.go: a timer "keyed by
// operation", exported as a Prometheus histogram; the name may carry a
// unit suffix, _seconds or _milliseconds, by the server's metrics
// config) for the operations that use the task and history tables most:
// matching's CreateTasks and GetTasks, history's UpdateWorkflowExecution
// and AppendHistoryNodes. The mean latency between two scrapes (Δsum ÷
// Δcount over them all) is one sample of the "temporal" signal; the
// controller compares windows of them with their baseline as it does its
// other signals (yield.go). An endpoint that fails temporalFailures times
// in a row is dropped for the pass, with a log line.
const (
	temporalScrapeEvery = time.Second
	temporalFailures    = 3
)

// temporalOperations are the persistence operations read.
var temporalOperations = map[string]bool{
	"CreateTasks": true, "GetTasks": true, "UpdateWorkflowExecution": true, "AppendHistoryNodes": true,
}

// persistenceLatency sums the histograms' sums (in seconds) and counts of
// the operations read, over the metric families of one scrape.
func persistenceLatency(mfs map[string]*dto.MetricFamily) (sum float64, count uint64, found bool) {
	for name, scale := range map[string]float64{"persistence_latency": 1, "persistence_latency_seconds": 1, "persistence_latency_milliseconds": 1e-3} {
		mf := mfs[name]
		if mf == nil {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			if h == nil || !temporalOperations[label(m, "operation")] {
				continue
			}
			sum += h.GetSampleSum() * scale
			count += h.GetSampleCount()
			found = true
		}
	}
	return sum, count, found
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// redactURL is u with its secrets masked (user info, token-like
// parameters), for logs and errors: internal/redact's rules, as every
// other output's.
func redactURL(u string) string { return redact.URL(u) }

// scrape reads one endpoint's persistence latency.
func scrape(ctx context.Context, client *http.Client, endpoint string) (sum float64, count uint64, err error) {
	name := redactURL(endpoint)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", name, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("%s: %s", name, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", name, err)
	}
	sum, count, found := persistenceLatency(mfs)
	if !found {
		return 0, 0, fmt.Errorf("%s: no persistence_latency histogram of %s", name, strings.Join([]string{"CreateTasks", "GetTasks", "UpdateWorkflowExecution", "AppendHistoryNodes"}, ", "))
	}
	return sum, count, nil
}

// startTemporalMetrics scrapes cfg.TemporalMetrics, if any, for the
// pass's controller until the returned func is called.
func startTemporalMetrics(ctx context.Context, y *yielder, cfg Config, stop <-chan struct{}) (wait func()) {
	if len(cfg.TemporalMetrics) == 0 || y == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runTemporalMetrics(ctx, y, cfg, stop)
	}()
	return func() {
		cancel()
		<-done
	}
}

// runTemporalMetrics scrapes every temporalScrapeEvery until ctx ends,
// stop closes or every endpoint was dropped.
func runTemporalMetrics(ctx context.Context, y *yielder, cfg Config, stop <-chan struct{}) {
	client := &http.Client{Timeout: temporalScrapeEvery}
	type endpoint struct {
		url    string
		failed int
		sum    float64
		count  uint64
		seen   bool
	}
	var eps []*endpoint
	for _, u := range cfg.TemporalMetrics {
		eps = append(eps, &endpoint{url: u})
	}
	t := time.NewTicker(temporalScrapeEvery)
	defer t.Stop()
	for len(eps) > 0 {
		var dSum float64
		var dCount uint64
		live := eps[:0]
		for _, e := range eps {
			sum, count, err := scrape(ctx, client, e.url)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				if e.failed++; e.failed >= temporalFailures {
					cfg.Logger.Warn("pace gentle: Temporal's metrics endpoint dropped for the pass", "url", redactURL(e.url), "err", err)
					continue
				}
				live = append(live, e)
				continue
			}
			if e.seen && count >= e.count { // a restarted server resets its counters
				dSum += sum - e.sum
				dCount += count - e.count
			}
			e.failed, e.sum, e.count, e.seen = 0, sum, count, true
			live = append(live, e)
		}
		eps = live
		if dCount > 0 {
			y.observeSignal("temporal", time.Duration(dSum/float64(dCount)*float64(time.Second)))
		}
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
		}
	}
}
