package pace

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/redact"
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
			t.Errorf("%s: %v, want an error without the password", redact.URL(u), err)
		}
	}
}

// TestScrapeHugeBody: issue 39's finding 7. An endpoint that serves a
// large body (a busy cluster's many series, or a hostile one) is read as
// a stream, a line at a time, and only the series the pace needs are
// kept: 50 MiB of other series (with a line of 8 MiB and no end among
// them) cost a few MiB, where reading then parsing the whole body cost
// about 375 MB; the needed series are still found, wherever they are. A
// body past maxScrapeBytes is an error, read no further.
//
// Invariant: the allocations of one scrape are bounded by a constant, not
// by the body; the sum and count are those of the needed series.
func TestScrapeHugeBody(t *testing.T) {
	junk := []byte("temporal_other_series_total{namespace=\"ns-0123456789\",task_queue=\"queue-0123456789abcdef\",operation=\"CreateTasks\"} 12345\n")
	longLine := []byte("a_long_line{x=\"" + strings.Repeat("y", 8<<20) + "\"} 1\n")
	needed := temporalText("_seconds", 2, 100)
	for _, c := range []struct {
		name      string
		junkBytes int
		long      bool
		wantErr   string
	}{
		{"50 MiB around the series", 50 << 20, true, ""},
		{"past the bound", maxScrapeBytes + 1<<20, false, "more than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// Written from the same few buffers: the server itself
				// allocates next to nothing.
				if c.long {
					w.Write(longLine)
				}
				for n := 0; n < c.junkBytes/2; n += len(junk) {
					w.Write(junk)
				}
				fmt.Fprint(w, needed)
				for n := 0; n < c.junkBytes/2; n += len(junk) {
					w.Write(junk)
				}
			}))
			defer srv.Close()
			client := &http.Client{}
			defer client.CloseIdleConnections()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			sum, count, err := scrape(context.Background(), client, srv.URL+"/metrics")
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			// The longLine above is allocated before; the server's and
			// client's buffers, and the scrape's own, are a few MiB.
			if allocated > 16<<20 {
				t.Errorf("a scrape of a %d MiB body allocated %d MiB, want at most 16", (c.junkBytes+len(longLine))>>20, allocated>>20)
			}
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("err %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil || sum != 4 || count != 200 {
				t.Errorf("sum %g count %d (%v), want 4 and 200 (two operations of 100)", sum, count, err)
			}
			t.Logf("%d MiB body: %d KiB allocated", (c.junkBytes+len(longLine))>>20, allocated>>10)
		})
	}
}

// TestRunTemporalMetrics: the mean latency between two scrapes of the
// endpoints is one sample of the "temporal" signal; an endpoint whose
// counters went back (a restarted server) adds nothing that round, and
// takes nothing from the others'; an endpoint that keeps failing is
// dropped with a log line that keeps its password out, and the scraping
// ends once none is left.
func TestRunTemporalMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	served := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		served[r.URL.Path]++
		k := served[r.URL.Path]
		mu.Unlock()
		switch {
		case r.URL.Path == "/b" && k == 5: // restarted: its counters start again
			k = 1
		case r.URL.Path == "/a" && k == 11:
			cancel()
		}
		// Two operations read, each k × 0.5 s over k × 100 calls: 5ms a
		// call between any two scrapes.
		fmt.Fprint(w, temporalText("_seconds", 0.5*float64(k), 100*k))
	}))
	defer srv.Close()
	p := New(Config{Workers: 4, Factor: 2, Logger: quietLog()})
	runTemporalMetrics(ctx, []string{srv.URL + "/a", srv.URL + "/b"}, p, quietLog(), nil, time.Millisecond)
	// Rounds 2 to 10 (the fifth of /a alone): nine samples, a window
	// (the baseline) and one more.
	if w := p.signals["temporal"]; w == nil || w.baseline != 5*time.Millisecond || len(w.samples) != 1 {
		t.Fatalf("temporal signal %+v, want a baseline of 5ms and one sample more", w)
	}

	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	secret := strings.Replace(srv.URL, "http://", "http://scraper:hunter2@", 1)
	runTemporalMetrics(context.Background(), []string{secret + "/fail"}, p, log, nil, time.Millisecond)
	if !strings.Contains(logs.String(), "dropped for the pass") || strings.Contains(logs.String(), "hunter2") {
		t.Fatalf("log %q, want the endpoint dropped, without its password", logs.String())
	}
	StartTemporalMetrics(context.Background(), nil, p, log, nil)() // none: nothing to stop
}
