package interop

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Temporal's own persistence latency, as its services measured it: the
// persistence_latency timer (common/metrics/metric_defs.go, "keyed by
// operation"; recorded per call by the persistence metrics client with
// the operation, namespace and service_name labels), which the suite's
// server exports through tally's Prometheus reporter as a histogram in
// seconds (timerType histogram, Temporal's default millisecond
// boundaries 1, 2, 5, 10, 20, 50, 100, … ms converted). A scrape at the
// start of phase 1 and one at its end give each operation's calls in the
// phase; the report puts the control's beside the scavenged run's. It is
// reported, not compared: both runs share a loaded 2-core machine, and a
// difference of a few milliseconds between them is as likely the
// machine's as tqscavenger's (the lab's live-load benchmark measures the
// pass's cost on matching's statements under control).

// latencyOps are the operations reported, by service: matching's calls on
// the task tables tqscavenger deletes from, and history's two largest
// users of the database (the ones --temporal-metrics watches too). In
// 1.32.1 history appends a workflow's events inside UpdateWorkflowExecution's
// transaction (the execution manager's internal append, not metered on its
// own), so AppendHistoryNodes shows few calls or none.
var latencyOps = []struct{ service, op string }{
	{"matching", "CreateTasks"},
	{"matching", "GetTasks"},
	{"matching", "CompleteTasksLessThan"},
	{"matching", "UpdateTaskQueue"},
	{"matching", "GetTaskQueue"},
	{"history", "UpdateWorkflowExecution"},
	{"history", "AppendHistoryNodes"},
}

// histogram is one Prometheus histogram: cumulative bucket counts by upper
// bound (seconds), the sum (seconds) and the count.
type histogram struct {
	buckets map[float64]float64
	sum     float64
	count   float64
}

// latencies are persistence_latency's histograms by "service operation",
// summed over their other labels (the caller's namespace).
type latencies map[string]*histogram

// persistenceLatencies reads persistence_latency from a scrape. The name
// may carry a unit suffix under another metrics config (the OpenTelemetry
// framework's _milliseconds): both are read, in seconds.
func persistenceLatencies(body string) latencies {
	out := latencies{}
	for _, m := range parseProm(body) {
		base, part, ok := strings.Cut(m.name, "persistence_latency")
		if !ok || base != "" {
			continue
		}
		scale := 1.0
		switch {
		case strings.HasPrefix(part, "_seconds"):
			part = strings.TrimPrefix(part, "_seconds")
		case strings.HasPrefix(part, "_milliseconds"):
			part, scale = strings.TrimPrefix(part, "_milliseconds"), 1e-3
		}
		key := m.labels["service_name"] + " " + m.labels["operation"]
		h := out[key]
		if h == nil {
			h = &histogram{buckets: map[float64]float64{}}
			out[key] = h
		}
		switch part {
		case "_bucket":
			le, err := strconv.ParseFloat(m.labels["le"], 64)
			if err != nil {
				continue
			}
			if !math.IsInf(le, 1) {
				le *= scale
			}
			h.buckets[le] += m.value
		case "_sum":
			h.sum += m.value * scale
		case "_count":
			h.count += m.value
		}
	}
	return out
}

// minus is l less an earlier scrape's histograms: the calls in between.
func (l latencies) minus(o latencies) latencies {
	out := latencies{}
	for k, h := range l {
		d := &histogram{buckets: map[float64]float64{}, sum: h.sum, count: h.count}
		if e := o[k]; e != nil {
			d.sum -= e.sum
			d.count -= e.count
			for le, c := range h.buckets {
				d.buckets[le] = c - e.buckets[le]
			}
		} else {
			for le, c := range h.buckets {
				d.buckets[le] = c
			}
		}
		out[k] = d
	}
	return out
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linear within the bucket that holds it; in the +Inf bucket, the
// highest finite bound.
func (h *histogram) quantile(q float64) time.Duration {
	if h == nil || h.count <= 0 {
		return 0
	}
	les := make([]float64, 0, len(h.buckets))
	for le := range h.buckets {
		les = append(les, le)
	}
	sort.Float64s(les)
	rank := q * h.count
	lower, below := 0.0, 0.0
	for _, le := range les {
		c := h.buckets[le]
		if c >= rank {
			if math.IsInf(le, 1) {
				return seconds(lower)
			}
			if c == below {
				return seconds(le)
			}
			return seconds(lower + (le-lower)*(rank-below)/(c-below))
		}
		lower, below = le, c
	}
	return seconds(lower)
}

func (h *histogram) mean() time.Duration {
	if h == nil || h.count <= 0 {
		return 0
	}
	return seconds(h.sum / h.count)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// latencyTable is the control's and the scavenged run's phase-1 latency
// side by side, with the ratios of the means and of the p99s.
func latencyTable(control, run latencies) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  Temporal's persistence latency in phase 1 (its persistence_latency histograms, the phase's calls; reported, not compared):\n")
	fmt.Fprintf(&b, "    %-32s %34s   %34s   %s\n", "", "without tqscavenger: calls, mean, p50, p99", "with: calls, mean, p50, p99", "with ÷ without: mean, p99")
	for _, o := range latencyOps {
		k := o.service + " " + o.op
		c, r := control[k], run[k]
		if c == nil && r == nil {
			fmt.Fprintf(&b, "    %-32s (no calls in either run)\n", k)
			continue
		}
		fmt.Fprintf(&b, "    %-32s %34s   %34s   %s, %s\n", k, latencyCells(c), latencyCells(r),
			ratio(r.mean(), c.mean()), ratio(r.quantile(0.99), c.quantile(0.99)))
	}
	return b.String()
}

func latencyCells(h *histogram) string {
	if h == nil || h.count <= 0 {
		return "0 calls"
	}
	return fmt.Sprintf("%.0f, %s, %s, %s", h.count, ms(h.mean()), ms(h.quantile(0.5)), ms(h.quantile(0.99)))
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + " ms"
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

// countLines is the number of lines of a log file that contain sub (0 for
// a file that cannot be read: the report says so by its count).
func countLines(path, sub string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// TestPersistenceLatencies reads histograms as Temporal's tally reporter
// exports them, takes the calls between two scrapes and estimates their
// quantiles as histogram_quantile does. It needs no server.
func TestPersistenceLatencies(t *testing.T) {
	scrape := func(n1, n2, n5, inf, sum float64) string {
		var b strings.Builder
		for _, ns := range []string{"default", "temporal-system"} { // summed over the caller's namespace
			fmt.Fprintf(&b, "persistence_latency_bucket{namespace=%q,operation=\"CreateTasks\",service_name=\"matching\",le=\"0.001\"} %g\n", ns, n1/2)
			fmt.Fprintf(&b, "persistence_latency_bucket{namespace=%q,operation=\"CreateTasks\",service_name=\"matching\",le=\"0.002\"} %g\n", ns, n2/2)
			fmt.Fprintf(&b, "persistence_latency_bucket{namespace=%q,operation=\"CreateTasks\",service_name=\"matching\",le=\"0.005\"} %g\n", ns, n5/2)
			fmt.Fprintf(&b, "persistence_latency_bucket{namespace=%q,operation=\"CreateTasks\",service_name=\"matching\",le=\"+Inf\"} %g\n", ns, inf/2)
			fmt.Fprintf(&b, "persistence_latency_sum{namespace=%q,operation=\"CreateTasks\",service_name=\"matching\"} %g\n", ns, sum/2)
			fmt.Fprintf(&b, "persistence_latency_count{namespace=%q,operation=\"CreateTasks\",service_name=\"matching\"} %g\n", ns, inf/2)
		}
		b.WriteString("persistence_latency_count{operation=\"GetTasks\",service_name=\"matching\"} 7\n")
		b.WriteString("persistence_requests{operation=\"CreateTasks\",service_name=\"matching\"} 999\n")
		return b.String()
	}
	before := persistenceLatencies(scrape(10, 10, 10, 10, 0.005))
	// 100 calls in between: 50 at ≤ 1 ms, 40 in (1, 2] ms, 8 in (2, 5] ms, 2 above.
	after := persistenceLatencies(scrape(60, 100, 108, 110, 0.005+0.2))
	d := after.minus(before)["matching CreateTasks"]
	if d == nil || d.count != 100 {
		t.Fatalf("calls between the scrapes: %+v, want 100", d)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{
		{0.25, 500 * time.Microsecond},  // 25 of the 50 in [0, 1 ms]
		{0.5, time.Millisecond},         // the 50th: the first bucket's bound
		{0.7, 1500 * time.Microsecond},  // 20 of the 40 in (1, 2]
		{0.94, 3500 * time.Microsecond}, // 4 of the 8 in (2, 5]
		{0.99, 5 * time.Millisecond},    // in +Inf: the highest finite bound
	} {
		if got := d.quantile(c.q); (got - c.want).Abs() > time.Microsecond {
			t.Errorf("quantile(%g) = %s, want %s", c.q, got, c.want)
		}
	}
	if got := d.mean(); (got - 2*time.Millisecond).Abs() > time.Microsecond {
		t.Errorf("mean = %s, want 2ms (0.2 s over 100 calls)", got)
	}
	if h := after["matching GetTasks"]; h == nil || h.count != 7 {
		t.Errorf("GetTasks: %+v, want a count of 7", h)
	}
	milli := persistenceLatencies("persistence_latency_milliseconds_sum{operation=\"GetTasks\",service_name=\"matching\"} 30\npersistence_latency_milliseconds_count{operation=\"GetTasks\",service_name=\"matching\"} 10\n")
	if got := milli["matching GetTasks"].mean(); (got - 3*time.Millisecond).Abs() > time.Microsecond {
		t.Errorf("a _milliseconds histogram's mean = %s, want 3ms", got)
	}
}
