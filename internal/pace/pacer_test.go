package pace

import (
	"testing"
	"time"
)

// The Pacer's levers on injected signals: no test here waits on time.

// TestPacerAIMD feeds windows of latencies to a Pacer and checks its
// baseline, its multiplicative decreases and additive increases.
func TestPacerAIMD(t *testing.T) {
	ms := time.Millisecond
	p := New(Config{Workers: 4, Factor: 2, Logger: quietLog()})
	steps := []struct {
		name        string
		lat         time.Duration // every statement of the window
		rows        int
		wantAllowed int
		wantShare   float64
		wantBase    time.Duration
	}{
		{"first window sets the baseline, slow start", 10 * ms, 100, 1, 1, 10 * ms},
		{"quiet: one more at once", 12 * ms, 100, 2, 1, 10*ms + 2*ms/8},
		{"quiet", 10 * ms, 100, 3, 1, 10 * ms},
		{"quiet", 10 * ms, 100, 4, 1, 10 * ms},
		{"quiet at the pool's size", 10 * ms, 100, 4, 1, 10 * ms},
		{"exactly the factor is still quiet", 20 * ms, 100, 4, 1, 10*ms + 10*ms/8},
		{"over the factor: halve", 30 * ms, 100, 2, 0.5, 10*ms + 10*ms/8},
		{"over the factor: halve again", 30 * ms, 100, 1, 0.25, 10*ms + 10*ms/8},
		{"a floor of one at once and a quarter of the time", 30 * ms, 100, 1, 0.25, 10*ms + 10*ms/8},
		{"quieter: the baseline follows down, the share grows", 5 * ms, 100, 1, 0.375, 5 * ms},
		{"another size of result has a baseline of its own", 50 * ms, 1000, 1, 0.375, 50 * ms},
	}
	for _, s := range steps {
		for range windowSize {
			p.observe("ScanTasks", s.rows, s.lat, false)
		}
		w := p.kinds[kind{method: "ScanTasks", size: bitsLen(s.rows)}]
		if p.lv.allowed != s.wantAllowed || p.lv.share != s.wantShare || w.baseline != s.wantBase {
			t.Fatalf("%s: allowed %d share %g baseline %s, want %d %g %s", s.name, p.lv.allowed, p.lv.share, w.baseline, s.wantAllowed, s.wantShare, s.wantBase)
		}
	}
	for range 12 * windowSize {
		p.observe("ScanTasks", 100, 5*ms, false)
	}
	if p.lv.share != 1 || p.lv.allowed != 4 {
		t.Fatalf("after quiet windows: allowed %d share %g, want back to 4 and 1", p.lv.allowed, p.lv.share)
	}
	if s := p.Snapshot(); s.Backoffs != 3 || s.MinAllowed != 1 || s.MinShare != 0.25 {
		t.Fatalf("tallies: %d decreases, least %d at once, least share %g; want 3, 1, 0.25", s.Backoffs, s.MinAllowed, s.MinShare)
	}
	if got := p.Methods(); len(got) != 1 || got[0] != "ScanTasks" {
		t.Fatalf("methods %v, want ScanTasks", got)
	}
}

// TestPacerPaceSwitchBatchCap: the batch cap gentle set while backing
// off does not outlive a switch to full pace, and comes back with gentle;
// at full the Pacer's snapshot says so, with every lever at its limit.
func TestPacerPaceSwitchBatchCap(t *testing.T) {
	ms := time.Millisecond
	b := NewBatcher(1000, time.Second)
	p := New(Config{Workers: 4, Factor: 2, BatchSize: 1000, Batch: b, Logger: quietLog()})
	for _, lat := range []time.Duration{10 * ms, 30 * ms, 30 * ms, 30 * ms} { // a baseline, then three back-offs
		for range windowSize {
			p.observe("ScanTasks", 100, lat, false)
		}
	}
	gentle := b.Size()
	if gentle >= 1000 {
		t.Fatalf("after backing off the batch size is %d, want below 1000", gentle)
	}
	for _, c := range []struct {
		name string
		full bool
		want int
		snap Snapshot
	}{
		{"full: no cap", true, 1000, Snapshot{Full: true, Allowed: 4, Share: 1, BatchCap: 1000}},
		{"gentle again: its cap", false, gentle, Snapshot{Allowed: 1, Share: 0.25, BatchCap: gentle}},
		{"full again", true, 1000, Snapshot{Full: true, Allowed: 4, Share: 1, BatchCap: 1000}},
	} {
		p.SetFull(c.full)
		if got := b.Size(); got != c.want {
			t.Errorf("%s: batch size %d, want %d", c.name, got, c.want)
		}
		s := p.Snapshot()
		if s.Full != c.snap.Full || s.Allowed != c.snap.Allowed || s.Share != c.snap.Share || s.BatchCap != c.snap.BatchCap {
			t.Errorf("%s: snapshot %+v, want %+v", c.name, s, c.snap)
		}
	}
	// At full, nothing moves the levers.
	feed(p, 4, 30*ms)
	if s := p.Snapshot(); s.Backoffs != 3 {
		t.Errorf("%d back-offs after harm at full, want the 3 of gentle", s.Backoffs)
	}
}

// TestPacerFloor: however long the harm lasts, the gentle pace keeps one
// statement in flight, a share of at least 1/4 and batches of at least a
// quarter of the batch size, and counts the windows it could not be
// gentler.
func TestPacerFloor(t *testing.T) {
	ms := time.Millisecond
	p := New(Config{Workers: 4, Factor: 2, BatchSize: 1000, Logger: quietLog()})
	feed(p, 1, 10*ms)  // the baseline
	feed(p, 20, 50*ms) // harm, for good
	if p.lv.allowed != 1 || p.lv.share != minShare || p.lv.batchCap != 250 {
		t.Fatalf("after long harm: %d at once, share %g, batch cap %d; want the floor 1, %g, 250", p.lv.allowed, p.lv.share, p.lv.batchCap, minShare)
	}
	if p.floorHits == 0 || p.floorHits >= 20 {
		t.Fatalf("%d floor hits, want some (the windows after the floor was reached) and fewer than the 20 windows", p.floorHits)
	}
	if s := p.Snapshot(); s.FloorHits != p.floorHits || s.Backoffs != 20 || s.Signal != "ScanTasks" || s.Ratio != 5 {
		t.Fatalf("snapshot %+v: want the floor hits, 20 back-offs, the last signal ScanTasks at 5", s)
	}
}

// TestPacerBatchLever: each decrease halves the cap of the pass's batch
// sizes (down to a quarter of the batch size), and quiet windows raise
// it back by an eighth of it once share and statements at once are back.
func TestPacerBatchLever(t *testing.T) {
	ms := time.Millisecond
	b := NewBatcher(1000, time.Second)
	p := New(Config{Workers: 2, Factor: 2, BatchSize: 1000, Batch: b, Logger: quietLog()})
	feed(p, 1, 10*ms)
	for _, want := range []int{500, 250, 250} {
		feed(p, 1, 30*ms)
		if b.Size() != want {
			t.Fatalf("batch size %d after a decrease, want %d", b.Size(), want)
		}
	}
	feed(p, 7, 10*ms) // share 1/4 → 1, then 2 at once
	if p.lv.share != 1 || p.lv.allowed != 2 || b.Size() != 250 {
		t.Fatalf("share %g, %d at once, batch %d: want 1, 2 and still 250 (the batch grows last)", p.lv.share, p.lv.allowed, b.Size())
	}
	feed(p, 1, 10*ms)
	if b.Size() != 250+125 {
		t.Fatalf("batch %d after a quiet window, want %d", b.Size(), 250+125)
	}
}

// TestPacerSQLiteDuty: on a whole-database writer the pass runs one
// statement at a time and its share never grows above the duty cycle, so
// it leaves the database free three quarters of the time; a store
// without such a lock grows to 1.
func TestPacerSQLiteDuty(t *testing.T) {
	p := New(Config{Workers: 4, Factor: 2, BatchSize: 100, WholeDatabase: true, Logger: quietLog()})
	feed(p, 30, time.Millisecond)
	if p.lv.share != sqliteDuty || p.lv.allowed != 1 {
		t.Fatalf("SQLite: share %g, %d at once; want the duty %g and one at a time", p.lv.share, p.lv.allowed, sqliteDuty)
	}
	if got := pauseFor(10*time.Millisecond, p.lv.share); got != 30*time.Millisecond {
		t.Fatalf("pause after a 10ms statement on SQLite: %s, want 30ms", got)
	}
	if s := (New(Config{Workers: 4, WholeDatabase: true, Full: true})).Snapshot(); s.Allowed != 1 {
		t.Fatalf("SQLite at full: %d at once, want 1", s.Allowed)
	}
	p = New(Config{Workers: 4, Factor: 2, BatchSize: 100, Logger: quietLog()})
	feed(p, 30, time.Millisecond)
	if p.lv.share != 1 {
		t.Fatalf("no whole-database lock: share %g, want 1", p.lv.share)
	}
}
