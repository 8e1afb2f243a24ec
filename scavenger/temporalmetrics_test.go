package scavenger

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
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

// TestPersistenceLatencyLines: the stream parser reads what the
// Prometheus parser read of the text format, for the series it keeps:
// labels in any order and escaped, a timestamp, CRLF; a family that is no
// histogram (a summary, or untyped: its _sum is a family of its own) is
// not read; a malformed line of a series read is an error.
func TestPersistenceLatencyLines(t *testing.T) {
	const typ = "# TYPE persistence_latency histogram\n"
	for _, c := range []struct {
		name, text string
		sum        float64
		count      uint64
		found      bool
		err        string
	}{
		{"plain", typ + "persistence_latency_sum{operation=\"GetTasks\"} 1.5\npersistence_latency_count{operation=\"GetTasks\"} 3\n", 1.5, 3, true, ""},
		{"labels around, escaped, timestamp, CRLF", typ + "persistence_latency_sum{a=\"x\\\"}\\\\\",operation=\"CreateTasks\" , z=\"\\n\"} 2 1700000000000\r\n", 2, 0, true, ""},
		{"other operation", typ + "persistence_latency_sum{operation=\"ListNamespaces\"} 9\n", 0, 0, false, ""},
		{"milliseconds", "# TYPE persistence_latency_milliseconds histogram\npersistence_latency_milliseconds_sum{operation=\"GetTasks\"} 1500\n", 1.5, 0, true, ""},
		{"summary", "# TYPE persistence_latency summary\npersistence_latency_sum{operation=\"GetTasks\"} 1.5\n", 0, 0, false, ""},
		{"untyped", "persistence_latency_sum{operation=\"GetTasks\"} 1.5\n", 0, 0, false, ""},
		{"no end of file newline", typ + "persistence_latency_count{operation=\"GetTasks\"} 7", 0, 7, true, ""},
		{"long other line", typ + "x{y=\"" + strings.Repeat("z", 2*maxScrapeLine) + "\"} 1\npersistence_latency_count{operation=\"GetTasks\"} 7\n", 0, 7, true, ""},
		{"long line of the series", typ + "persistence_latency_count{operation=\"GetTasks\",y=\"" + strings.Repeat("z", 2*maxScrapeLine) + "\"} 1\n", 0, 0, false, "longer than"},
		{"bad value", typ + "persistence_latency_count{operation=\"GetTasks\"} many\n", 0, 0, false, "not a value"},
		{"unclosed label", typ + "persistence_latency_count{operation=\"GetTasks} 1\n", 0, 0, false, "not closed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sum, count, found, err := persistenceLatency(strings.NewReader(c.text))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("err %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil || sum != c.sum || count != c.count || found != c.found {
				t.Errorf("sum %g count %d found %v (%v), want %g, %d, %v", sum, count, found, err, c.sum, c.count, c.found)
			}
		})
	}
}
