package pace

import (
	"context"
	"testing"
	"time"
)

// TestPacerRebase: every rebaseEvery the pass drains, pauses once (the
// probe's samples in the pause become its baseline), and runs quiet
// statements one at a time whose medians replace their kinds' baselines;
// then the pace is what it was.
func TestPacerRebase(t *testing.T) {
	ms := time.Millisecond
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	p := New(Config{Workers: 4, Factor: 2, BatchSize: 1000, Logger: quietLog()})
	p.now = func() time.Time { return now }
	p.rb.last = now
	pauses := 0
	p.sleep = func(context.Context, time.Duration) {
		pauses++
		for range 5 {
			p.observeProbe(3 * ms) // the database without the pass
		}
	}
	feed(p, 1, 10*ms) // baseline 10ms
	feed(p, 3, 10*ms) // 4 at once
	if p.lv.allowed != 4 {
		t.Fatalf("%d at once before the re-measure, want 4", p.lv.allowed)
	}
	ctx := context.Background()
	now = now.Add(rebaseEvery)
	for i := range rebaseStatements {
		tk, err := p.acquire(ctx)
		if err != nil || !tk.quiet {
			t.Fatalf("statement %d of the re-measure: quiet %v, %v", i, tk.quiet, err)
		}
		if !p.rb.on || p.slots.running() != 1 {
			t.Fatalf("statement %d: rebasing %v, %d running; want one at a time", i, p.rb.on, p.slots.running())
		}
		if s := p.Snapshot(); !s.Rebasing {
			t.Fatalf("statement %d: the snapshot does not say it re-measures", i)
		}
		p.observe("ScanTasks", 100, 4*ms, true)
		p.release(ctx, 4*ms, tk)
	}
	if pauses != 1 {
		t.Fatalf("%d pauses in a re-measure, want 1", pauses)
	}
	if p.rb.on || p.lv.allowed != 4 || p.lv.share != 1 {
		t.Fatalf("after the re-measure: rebasing %v, %d at once, share %g; want done, 4, 1", p.rb.on, p.lv.allowed, p.lv.share)
	}
	if w := p.kinds[kind{"ScanTasks", bitsLen(100)}]; w.baseline != 4*ms {
		t.Fatalf("baseline %s after the re-measure, want its quiet median 4ms", w.baseline)
	}
	if p.probe.baseline != 3*ms {
		t.Fatalf("probe baseline %s, want the pause's 3ms", p.probe.baseline)
	}
	// The probe is now a signal: reads at 4× their quiet time back off.
	for range windowSize {
		p.observeProbe(12 * ms)
	}
	if p.lv.allowed != 2 || p.lastSignal != "probe" {
		t.Fatalf("after slow probes: %d at once, last signal %q; want 2, probe", p.lv.allowed, p.lastSignal)
	}
}

// TestProbeSlowStart: before any pause, the probe's first window, taken
// with the pass at its slow start, stands in as its baseline.
func TestProbeSlowStart(t *testing.T) {
	ms := time.Millisecond
	p := New(Config{Workers: 4, Factor: 2, Logger: quietLog()})
	for i := range windowSize {
		if p.probe.baseline != 0 {
			t.Fatalf("a probe baseline after %d samples", i)
		}
		p.observeProbe(time.Duration(i+1) * ms)
	}
	if p.probe.baseline != 5*ms || len(p.probe.quiet) != 0 {
		t.Fatalf("probe baseline %s (%d quiet samples kept), want the median 5ms and none", p.probe.baseline, len(p.probe.quiet))
	}
}
