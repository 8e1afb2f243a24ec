package pace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/redact"
)

// The gentle pace's best signal, where the operator gives Temporal's
// metrics endpoints (scavenger's Pace.TemporalMetrics,
// --temporal-metrics): the latency the cluster's own services see from
// the database. Every temporalScrapeEvery the pass scrapes each endpoint
// and reads
// persistence_latency (common/metrics/metric_defs.go: a timer "keyed by
// operation", exported as a Prometheus histogram; the name may carry a
// unit suffix, _seconds or _milliseconds, by the server's metrics
// config) for the operations that use the task and history tables most:
// matching's CreateTasks and GetTasks, history's UpdateWorkflowExecution
// and AppendHistoryNodes. The mean latency between two scrapes (Δsum ÷
// Δcount over them all) is one sample of the "temporal" signal; the
// controller compares windows of them with their baseline as it does its
// other signals (signals.go). An endpoint that fails temporalFailures
// times in a row is dropped for the pass, with a log line. The text of a
// scrape is read in promtext.go.
const (
	temporalScrapeEvery = time.Second
	temporalFailures    = 3
)

// scrape reads one endpoint's persistence latency.
func scrape(ctx context.Context, client *http.Client, endpoint string) (sum float64, count uint64, err error) {
	name := redact.URL(endpoint)
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
	sum, count, found, err := persistenceLatency(resp.Body)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", name, err)
	}
	if !found {
		return 0, 0, fmt.Errorf("%s: no persistence_latency histogram of %s", name, strings.Join([]string{"CreateTasks", "GetTasks", "UpdateWorkflowExecution", "AppendHistoryNodes"}, ", "))
	}
	return sum, count, nil
}

// StartTemporalMetrics scrapes endpoints, if any, for p until the
// returned func is called, which returns once the scraping has stopped.
// log receives the endpoints dropped, their URLs redacted.
func StartTemporalMetrics(ctx context.Context, endpoints []string, p *Pacer, log *slog.Logger, stop <-chan struct{}) (wait func()) {
	if len(endpoints) == 0 || p == nil {
		return func() {}
	}
	return background(ctx, func(ctx context.Context) {
		runTemporalMetrics(ctx, endpoints, p, log, stop, temporalScrapeEvery)
	})
}

// runTemporalMetrics scrapes every every until ctx ends, stop closes or
// every endpoint was dropped.
func runTemporalMetrics(ctx context.Context, endpoints []string, p *Pacer, log *slog.Logger, stop <-chan struct{}, every time.Duration) {
	client := &http.Client{Timeout: temporalScrapeEvery}
	type endpoint struct {
		url    string
		failed int
		sum    float64
		count  uint64
		seen   bool
	}
	var eps []*endpoint
	for _, u := range endpoints {
		eps = append(eps, &endpoint{url: u})
	}
	t := time.NewTicker(every)
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
					log.Warn("pace gentle: Temporal's metrics endpoint dropped for the pass", "url", redact.URL(e.url), "err", err)
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
			p.observeSignal("temporal", time.Duration(dSum/float64(dCount)*float64(time.Second)))
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
