package scavenger

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// temporalText is a scrape of a Temporal service: persistence_latency
// histograms of matching's operations (and one the signal ignores), with
// the sum and count given, in the unit of the name's suffix.
func temporalText(suffix string, sum float64, count int) string {
	name := "persistence_latency" + suffix
	var b strings.Builder
	fmt.Fprintf(&b, "# HELP %s Persistence latency, keyed by operation\n# TYPE %s histogram\n", name, name)
	for _, op := range []string{"CreateTasks", "GetTasks", "ListNamespaces"} {
		fmt.Fprintf(&b, "%s_bucket{operation=%q,service_name=\"matching\",le=\"+Inf\"} %d\n", name, op, count)
		fmt.Fprintf(&b, "%s_sum{operation=%q,service_name=\"matching\"} %g\n", name, op, sum)
		fmt.Fprintf(&b, "%s_count{operation=%q,service_name=\"matching\"} %d\n", name, op, count)
	}
	return b.String()
}

// TestScrapeTemporalMetrics: a scrape of a real HTTP endpoint sums the
// read operations' histograms (CreateTasks and GetTasks, not
// ListNamespaces) in seconds, whatever the unit suffix; an endpoint
// without the histogram, or that fails, is an error that never shows the
// URL's password.
func TestScrapeTemporalMetrics(t *testing.T) {
	var body atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, body.Load())
	}))
	defer srv.Close()
	ctx := context.Background()
	for _, c := range []struct {
		suffix string
		sum    float64
		want   float64
	}{{"", 2, 4}, {"_seconds", 2, 4}, {"_milliseconds", 2000, 4}} {
		body.Store(temporalText(c.suffix, c.sum, 100))
		sum, count, err := scrape(ctx, srv.Client(), srv.URL+"/metrics")
		if err != nil || count != 200 || sum != c.want {
			t.Errorf("suffix %q: sum %g count %d (%v), want %g and 200 (two operations of 100)", c.suffix, sum, count, err, c.want)
		}
	}
	body.Store("# TYPE other counter\nother 1\n")
	secret := strings.Replace(srv.URL, "http://", "http://scraper:hunter2@", 1)
	for _, u := range []string{secret + "/metrics", secret + "/fail", "http://scraper:hunter2@127.0.0.1:1/metrics"} {
		_, _, err := scrape(ctx, srv.Client(), u)
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v, want an error without the password", redactURL(u), err)
		}
	}
	if err := (Config{Pace: Pace{TemporalMetrics: []string{"scraper:hunter2@host:9090/metrics"}}}).Validate(); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a metrics endpoint that is no URL: %v, want refused without the password", err)
	}
}

// TestTemporalSignal: Temporal's persistence latency is a signal like the
// others: a first window sets its baseline, a window over the factor backs
// off.
func TestTemporalSignal(t *testing.T) {
	ms := time.Millisecond
	y := newYielder(Config{Pace: Pace{Workers: 4, YieldFactor: 2, TaskBatchSize: 1000}, Hooks: Hooks{Logger: quietLog()}}, nil)
	feed(y, 4, 10*ms) // the baseline, then 1 → 4 at once
	for range yieldSamples {
		y.observeSignal("temporal", 4*ms)
	}
	if y.allowed != 4 || y.signals["temporal"].baseline != 4*ms {
		t.Fatalf("after the first window: %d at once, baseline %s; want 4 and 4ms", y.allowed, y.signals["temporal"].baseline)
	}
	for range yieldSamples {
		y.observeSignal("temporal", 12*ms)
	}
	if y.allowed != 2 || y.lastSignal != "temporal" || y.lastRatio != 3 {
		t.Fatalf("after a slow window: %d at once, signal %q at %g; want 2, temporal at 3", y.allowed, y.lastSignal, y.lastRatio)
	}
}
