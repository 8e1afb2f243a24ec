package pace

import (
	"testing"
	"time"
)

// TestTemporalSignal: Temporal's persistence latency is a signal like the
// others: a first window sets its baseline, a window over the factor backs
// off.
func TestTemporalSignal(t *testing.T) {
	ms := time.Millisecond
	p := New(Config{Workers: 4, Factor: 2, BatchSize: 1000, Logger: quietLog()})
	feed(p, 4, 10*ms) // the baseline, then 1 → 4 at once
	for range windowSize {
		p.observeSignal("temporal", 4*ms)
	}
	if p.lv.allowed != 4 || p.signals["temporal"].baseline != 4*ms {
		t.Fatalf("after the first window: %d at once, baseline %s; want 4 and 4ms", p.lv.allowed, p.signals["temporal"].baseline)
	}
	for range windowSize {
		p.observeSignal("temporal", 12*ms)
	}
	if p.lv.allowed != 2 || p.lastSignal != "temporal" || p.lastRatio != 3 {
		t.Fatalf("after a slow window: %d at once, signal %q at %g; want 2, temporal at 3", p.lv.allowed, p.lastSignal, p.lastRatio)
	}
}
