package scavenger

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/pace"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// The gentle controller's floor, batch lever, re-measure, probe signal
// and SQLite duty cycle, on an injected clock and injected signals: no
// test here waits on time.

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// feed observes n windows of ScanTasks statements of 100 rows at lat.
func feed(y *yielder, n int, lat time.Duration) {
	for range n * yieldSamples {
		y.observe("ScanTasks", 100, lat, false)
	}
}

// TestYielderFloor: however long the harm lasts, the gentle pace keeps one
// statement in flight, a share of at least 1/4, pauses of at most a
// second and batches of at least a quarter of the task batch size, and
// counts the windows it could not be gentler.
func TestYielderFloor(t *testing.T) {
	ms := time.Millisecond
	y := newYielder(Config{Pace: Pace{Workers: 4, YieldFactor: 2, TaskBatchSize: 1000}, Hooks: Hooks{Logger: quietLog()}}, nil)
	feed(y, 1, 10*ms)  // the baseline
	feed(y, 20, 50*ms) // harm, for good
	if y.allowed != 1 || y.share != yieldMinShare || y.batchCap != 250 {
		t.Fatalf("after long harm: %d at once, share %g, batch cap %d; want the floor 1, %g, 250", y.allowed, y.share, y.batchCap, yieldMinShare)
	}
	if y.floorHits == 0 || y.floorHits >= 20 {
		t.Fatalf("%d floor hits, want some (the windows after the floor was reached) and fewer than the 20 windows", y.floorHits)
	}
	for _, c := range []struct {
		d     time.Duration
		share float64
		want  time.Duration
	}{
		{10 * ms, 1, 0},
		{10 * ms, 0.5, 10 * ms},
		{10 * ms, yieldMinShare, 30 * ms},
		{500 * ms, yieldMinShare, yieldMaxPause},
	} {
		if got := pauseFor(c.d, c.share); got != c.want {
			t.Errorf("pause after %s at share %g: %s, want %s", c.d, c.share, got, c.want)
		}
	}
}

// TestYielderBatchLever: each decrease halves the cap of the pass's batch
// sizes (down to a quarter of the task batch size), and quiet windows
// raise it back by an eighth of it once share and statements at once are
// back.
func TestYielderBatchLever(t *testing.T) {
	ms := time.Millisecond
	b := pace.NewBatcher(1000, time.Second)
	y := newYielder(Config{Pace: Pace{Workers: 2, YieldFactor: 2, TaskBatchSize: 1000}, Hooks: Hooks{Logger: quietLog()}}, nil)
	y.batch = b
	feed(y, 1, 10*ms)
	for _, want := range []int{500, 250, 250} {
		feed(y, 1, 30*ms)
		if b.Size() != want {
			t.Fatalf("batch size %d after a decrease, want %d", b.Size(), want)
		}
	}
	feed(y, 7, 10*ms) // share 1/4 → 1, then 2 at once
	if y.share != 1 || y.allowed != 2 || b.Size() != 250 {
		t.Fatalf("share %g, %d at once, batch %d: want 1, 2 and still 250 (the batch grows last)", y.share, y.allowed, b.Size())
	}
	feed(y, 1, 10*ms)
	if b.Size() != 250+125 {
		t.Fatalf("batch %d after a quiet window, want %d", b.Size(), 250+125)
	}
}

// TestYielderRebase: every rebaseEvery the pass drains, pauses once (the
// probe's samples in the pause become its baseline), and runs quiet
// statements one at a time whose medians replace their kinds' baselines;
// then the pace is what it was.
func TestYielderRebase(t *testing.T) {
	ms := time.Millisecond
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	y := newYielder(Config{Pace: Pace{Workers: 4, YieldFactor: 2, TaskBatchSize: 1000}, Hooks: Hooks{Logger: quietLog()}}, nil)
	y.now = func() time.Time { return now }
	y.lastRebase = now
	pauses := 0
	y.sleep = func(context.Context, time.Duration) {
		pauses++
		for range 5 {
			y.observeProbe(3 * ms) // the database without the pass
		}
	}
	feed(y, 1, 10*ms) // baseline 10ms
	feed(y, 3, 10*ms) // 4 at once
	if y.allowed != 4 {
		t.Fatalf("%d at once before the re-measure, want 4", y.allowed)
	}
	ctx := context.Background()
	now = now.Add(rebaseEvery)
	for i := range rebaseStatements {
		tk, err := y.acquire(ctx)
		if err != nil || !tk.quiet {
			t.Fatalf("statement %d of the re-measure: quiet %v, %v", i, tk.quiet, err)
		}
		if !y.rebasing || y.running != 1 {
			t.Fatalf("statement %d: rebasing %v, %d running; want one at a time", i, y.rebasing, y.running)
		}
		y.observe("ScanTasks", 100, 4*ms, true)
		y.release(ctx, 4*ms, tk)
	}
	if pauses != 1 {
		t.Fatalf("%d pauses in a re-measure, want 1", pauses)
	}
	if y.rebasing || y.allowed != 4 || y.share != 1 {
		t.Fatalf("after the re-measure: rebasing %v, %d at once, share %g; want done, 4, 1", y.rebasing, y.allowed, y.share)
	}
	if w := y.kinds[yieldKind{"ScanTasks", bitsLen(100)}]; w.baseline != 4*ms {
		t.Fatalf("baseline %s after the re-measure, want its quiet median 4ms", w.baseline)
	}
	if y.probe.baseline != 3*ms {
		t.Fatalf("probe baseline %s, want the pause's 3ms", y.probe.baseline)
	}
	// The probe is now a signal: reads at 4× their quiet time back off.
	for range yieldSamples {
		y.observeProbe(12 * ms)
	}
	if y.allowed != 2 || y.lastSignal != "probe" {
		t.Fatalf("after slow probes: %d at once, last signal %q; want 2, probe", y.allowed, y.lastSignal)
	}
}

// TestYielderSQLiteDuty: on a whole-database writer (a real SQLite file)
// the pass runs one statement at a time and its share never grows above
// the duty cycle, so it leaves the database free three quarters of the
// time; a store without such a lock grows to 1.
func TestYielderSQLiteDuty(t *testing.T) {
	db, err := sqlstore.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "t.db"), sqlstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := Config{Pace: Pace{Workers: 4, TaskBatchSize: 100}, Hooks: Hooks{Logger: quietLog()}}.WithDefaults()
	var y *yielder
	yieldMiddleware(cfg, newTunables(cfg), nil, nil, db, func(got *yielder) { y = got })
	feed(y, 30, time.Millisecond)
	if y.share != yieldSQLiteDuty || y.allowed != 1 {
		t.Fatalf("SQLite: share %g, %d at once; want the duty %g and one at a time", y.share, y.allowed, yieldSQLiteDuty)
	}
	if got := pauseFor(10*time.Millisecond, y.share); got != 30*time.Millisecond {
		t.Fatalf("pause after a 10ms statement on SQLite: %s, want 30ms", got)
	}
	yieldMiddleware(cfg, newTunables(cfg), nil, nil, nil, func(got *yielder) { y = got })
	feed(y, 30, time.Millisecond)
	if y.share != 1 {
		t.Fatalf("no whole-database lock: share %g, want 1", y.share)
	}
}

// TestYielderStuckStatement: a statement in flight for stuckAfter (waiting
// on a lock, say) no longer counts against the slots, so one blocked
// statement does not stall a gentle pass; before that it does.
func TestYielderStuckStatement(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	y := newYielder(Config{Pace: Pace{Workers: 4, YieldFactor: 2, SlowStatement: time.Second}, Hooks: Hooks{Logger: quietLog()}}, nil)
	y.now = func() time.Time { return now }
	y.lastRebase = now
	ctx := context.Background()
	held, err := y.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := y.active(); n != 1 || n < y.allowed {
		t.Fatalf("%d active of %d allowed: a second statement would not wait", n, y.allowed)
	}
	now = now.Add(2 * time.Second) // 2 × the slow statement
	next, err := y.acquire(ctx)    // goes at once: the held one no longer counts
	if err != nil {
		t.Fatal(err)
	}
	if y.running != 2 {
		t.Fatalf("%d running, want the held statement and the next", y.running)
	}
	y.release(ctx, 0, next)
	y.release(ctx, 0, held)
	if y.running != 0 || len(y.starts) != 0 {
		t.Fatalf("%d running, %d starts kept after both released", y.running, len(y.starts))
	}
}
