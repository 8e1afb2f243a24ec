package scavenger

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/pace"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestYielderAIMD feeds windows of latencies to a yielder and checks its
// baseline, its multiplicative decreases and additive increases.
func TestYielderAIMD(t *testing.T) {
	ms := time.Millisecond
	y := newYielder(Config{Pace: Pace{Workers: 4, YieldFactor: 2}, Hooks: Hooks{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}, nil)
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
		for range yieldSamples {
			y.observe("ScanTasks", s.rows, s.lat, false)
		}
		w := y.kinds[yieldKind{method: "ScanTasks", size: bitsLen(s.rows)}]
		if y.allowed != s.wantAllowed || y.share != s.wantShare || w.baseline != s.wantBase {
			t.Fatalf("%s: allowed %d share %g baseline %s, want %d %g %s", s.name, y.allowed, y.share, w.baseline, s.wantAllowed, s.wantShare, s.wantBase)
		}
	}
	for range 12 * yieldSamples {
		y.observe("ScanTasks", 100, 5*ms, false)
	}
	if y.share != 1 || y.allowed != 4 {
		t.Fatalf("after quiet windows: allowed %d share %g, want back to 4 and 1", y.allowed, y.share)
	}
	if d, minAllowed, minShare := y.counters(); d != 3 || minAllowed != 1 || minShare != 0.25 {
		t.Fatalf("counters: %d decreases, least %d at once, least share %g; want 3, 1, 0.25", d, minAllowed, minShare)
	}
}

// TestYielderPaceSwitchBatchCap: the batch cap gentle set while backing
// off does not outlive a switch to full pace, and comes back with gentle.
func TestYielderPaceSwitchBatchCap(t *testing.T) {
	ms := time.Millisecond
	b := pace.NewBatcher(1000, time.Second)
	y := newYielder(Config{Pace: Pace{Workers: 4, YieldFactor: 2, TaskBatchSize: 1000}, Hooks: Hooks{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}, nil)
	y.batch = b
	for _, lat := range []time.Duration{10 * ms, 30 * ms, 30 * ms, 30 * ms} { // a baseline, then three back-offs
		for range yieldSamples {
			y.observe("ScanTasks", 100, lat, false)
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
	}{
		{"full: no cap", true, 1000},
		{"gentle again: its cap", false, gentle},
		{"full again", true, 1000},
	} {
		y.setFull(c.full)
		if got := b.Size(); got != c.want {
			t.Errorf("%s: batch size %d, want %d", c.name, got, c.want)
		}
	}
}

func bitsLen(n int) int {
	k := 0
	for ; n > 0; n >>= 1 {
		k++
	}
	return k
}

// TestYielderSlots: no more than allowed calls run at once, and a waiter
// leaves at shutdown.
func TestYielderSlots(t *testing.T) {
	stop := make(chan struct{})
	y := newYielder(Config{Pace: Pace{Workers: 4, YieldFactor: 2}, Hooks: Hooks{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}, stop)
	ctx := context.Background()
	first, err := y.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// allowed is 1: a second caller waits until shutdown.
	done := make(chan error)
	go func() { _, err := y.acquire(ctx); done <- err }()
	close(stop)
	if err := <-done; err != ErrShutdown {
		t.Fatalf("waiter after shutdown: %v, want ErrShutdown", err)
	}
	y.release(ctx, 0, first)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	y.allowed = 0 // nothing may start: only the context ends the wait
	if _, err := y.acquire(cctx); err != context.Canceled {
		t.Fatalf("acquire with a cancelled context: %v", err)
	}
}

// slowStore adds latency to every call from the from-th to the to-th:
// load that starts and ends while a pass runs.
type slowStore struct {
	store.Store
	from, to int64
	delay    time.Duration
	calls    atomic.Int64
}

func (s *slowStore) wrap(f func()) {
	n := s.calls.Add(1)
	if n > s.from && n <= s.to {
		time.Sleep(s.delay) // the injected fault: a slower database
	}
	f()
}

func (s *slowStore) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) (r []store.ScannedTask, err error) {
	s.wrap(func() { r, err = s.Store.ScanTasks(ctx, t, after, through, limit) })
	return r, err
}

func (s *slowStore) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) (r []store.TaskRow, err error) {
	s.wrap(func() { r, err = s.Store.ReadTasks(ctx, t, q, after, limit) })
	return r, err
}

func (s *slowStore) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (n int64, err error) {
	s.wrap(func() { n, err = s.Store.DeleteTaskSets(ctx, t, sets) })
	return n, err
}

func (s *slowStore) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (n int64, err error) {
	s.wrap(func() { n, err = s.Store.DeleteTasks(ctx, t, q, r, limit) })
	return n, err
}

// TestGentlePace runs a pass on a real SQLite file through a store that
// turns slow for a while: at the gentle pace (the default) the pass backs
// off to one statement at a time with pauses, grows back once the latency
// is gone, and deletes exactly what a pass at the full pace deletes, whose
// controller never moves.
func TestGentlePace(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	spec := seed.Spec{Queues: 20, TasksPerQueue: 200, Expired: 0.75, IdleAge: 72 * time.Hour, Now: now}
	run := func(mode PaceMode) (Stats, *slowStore, *yielder) {
		ctx := context.Background()
		db, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "t.db"), sqlstore.Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Setup(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := seed.Write(ctx, db, spec); err != nil {
			t.Fatal(err)
		}
		slow := &slowStore{from: 40, to: 80, delay: 20 * time.Millisecond}
		var y *yielder
		cfg := Config{Pace: Pace{Mode: mode, Workers: 4, TaskBatchSize: 50, TasksPerJob: 100}, Hooks: Hooks{Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Middleware: []store.Middleware{func(next store.Store) store.Store { slow.Store = next; return slow }}}}
		start := time.Now()
		s := New(db, cfg)
		s.onYielder = func(got *yielder) { y = got }
		st, err := s.Run(ctx)
		t.Logf("pace %q: %s, %d calls", mode, time.Since(start), slow.calls.Load())
		if err != nil {
			t.Fatal(err)
		}
		return st, slow, y
	}
	full, _, yFull := run(PaceFull)
	if d, _, _ := yFull.counters(); d != 0 || yFull.increases != 0 {
		t.Fatalf("the full pace's controller moved: %d decreases, %d increases", d, yFull.increases)
	}
	gentle, _, y := run("") // the default
	if gentle.TasksDeleted != full.TasksDeleted || gentle.QueuesDeleted != full.QueuesDeleted || full.TasksDeleted != int64(spec.Queues*spec.TasksPerQueue*3/4) {
		t.Fatalf("deleted %d tasks and %d queues gently, %d and %d at full pace; want %d tasks",
			gentle.TasksDeleted, gentle.QueuesDeleted, full.TasksDeleted, full.QueuesDeleted, spec.Queues*spec.TasksPerQueue*3/4)
	}
	decreases, minAllowed, minShare := y.counters()
	if decreases == 0 || minAllowed != 1 || minShare >= 1 {
		t.Fatalf("with the store slow: %d decreases, least %d at once, least share %g; want a back-off to 1 and a share under 1", decreases, minAllowed, minShare)
	}
	if y.increases == 0 {
		t.Fatal("no increase after the store was fast again")
	}
}

// TestPaceTunedMidPass: a statement waiting for a slot at the gentle pace
// goes as soon as Tune sets the full pace (SIGHUP on serve), without a
// slot freed; set back to gentle, the cap holds again.
func TestPaceTunedMidPass(t *testing.T) {
	cfg := Config{Pace: Pace{Workers: 4}, Hooks: Hooks{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}.WithDefaults()
	tune := newTunables(cfg)
	var y *yielder
	yieldMiddleware(cfg, tune, nil, nil, nil, func(got *yielder) { y = got })
	y.stuckAfter = time.Hour // only the pace may let the waiter go
	waiting := make(chan struct{})
	y.onWait = func() { close(waiting) }
	ctx := context.Background()
	first, err := y.acquire(ctx) // the one slot of the slow start
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan ticket, 1)
	go func() { tk, _ := y.acquire(ctx); got <- tk }()
	<-waiting
	full := cfg
	full.Mode = PaceFull
	tune.set(full)
	second := <-got
	tune.set(cfg)
	if y.full {
		t.Fatal("still full after Tune set gentle")
	}
	y.release(ctx, 0, first)
	y.release(ctx, 0, second)
	if y.running != 0 {
		t.Fatalf("%d running after both released", y.running)
	}
}
