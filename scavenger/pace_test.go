package scavenger

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/pace"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// The pace's wiring (pacestore.go, pacestate.go): how Config, Tune and the
// store reach the pass's Pacer, and a pass under load. The controller
// itself is tested alone in package internal/pace.

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

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
	run := func(mode PaceMode) (Stats, *slowStore, *pace.Pacer) {
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
		var p *pace.Pacer
		cfg := Config{Pace: Pace{Mode: mode, Workers: 4, TaskBatchSize: 50, TasksPerJob: 100}, Hooks: Hooks{Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Middleware: []store.Middleware{func(next store.Store) store.Store { slow.Store = next; return slow }}}}
		start := time.Now()
		s := New(db, cfg)
		s.onPacer = func(got *pace.Pacer) { p = got }
		st, err := s.Run(ctx)
		t.Logf("pace %q: %s, %d calls", mode, time.Since(start), slow.calls.Load())
		if err != nil {
			t.Fatal(err)
		}
		return st, slow, p
	}
	full, _, pFull := run(PaceFull)
	if s := pFull.Snapshot(); s.Backoffs != 0 || s.Increases != 0 {
		t.Fatalf("the full pace's controller moved: %d decreases, %d increases", s.Backoffs, s.Increases)
	}
	gentle, _, p := run("") // the default
	if gentle.TasksDeleted != full.TasksDeleted || gentle.QueuesDeleted != full.QueuesDeleted || full.TasksDeleted != int64(spec.Queues*spec.TasksPerQueue*3/4) {
		t.Fatalf("deleted %d tasks and %d queues gently, %d and %d at full pace; want %d tasks",
			gentle.TasksDeleted, gentle.QueuesDeleted, full.TasksDeleted, full.QueuesDeleted, spec.Queues*spec.TasksPerQueue*3/4)
	}
	s := p.Snapshot()
	if s.Backoffs == 0 || s.MinAllowed != 1 || s.MinShare >= 1 {
		t.Fatalf("with the store slow: %d decreases, least %d at once, least share %g; want a back-off to 1 and a share under 1", s.Backoffs, s.MinAllowed, s.MinShare)
	}
	if s.Increases == 0 {
		t.Fatal("no increase after the store was fast again")
	}
}

// TestPaceTunedMidPass: a statement waiting for a slot at the gentle pace
// goes as soon as Tune sets the full pace (SIGHUP on serve), without a
// slot freed; set back to gentle, the Pacer is gentle again.
func TestPaceTunedMidPass(t *testing.T) {
	// Only the pace may let the waiter go: a held statement counts
	// against the slots for 2 × SlowStatement.
	cfg := Config{Pace: Pace{Workers: 4, SlowStatement: time.Hour}, Hooks: Hooks{Logger: quietLog()}}.WithDefaults()
	tune := newTunables(cfg)
	_, p := paceMiddleware(cfg, tune, nil, nil, nil, nil)
	ctx := context.Background()
	held, hold, first := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() { // the one slot of the slow start
		first <- p.Run(ctx, "Tables", func() (int, error) { close(held); <-hold; return 0, nil })
	}()
	<-held
	second := make(chan error)
	go func() { second <- p.Run(ctx, "Tables", func() (int, error) { return 0, nil }) }()
	full := cfg
	full.Mode = PaceFull
	tune.set(full)
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if !p.Snapshot().Full {
		t.Fatal("not full after Tune set full")
	}
	tune.set(cfg)
	if p.Snapshot().Full {
		t.Fatal("still full after Tune set gentle")
	}
	close(hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if n := p.Snapshot().InFlight; n != 0 {
		t.Fatalf("%d running after both returned", n)
	}
}

// TestPaceSQLiteDuty: on a whole-database writer (a real SQLite file) the
// Pacer runs one statement at a time at the duty cycle from the start; a
// store without such a lock starts with the whole share.
func TestPaceSQLiteDuty(t *testing.T) {
	db, err := sqlstore.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "t.db"), sqlstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := Config{Pace: Pace{Workers: 4, TaskBatchSize: 100}, Hooks: Hooks{Logger: quietLog()}}.WithDefaults()
	for _, c := range []struct {
		name          string
		st            store.Store
		share         float64
		allowedAtFull int
	}{
		{"SQLite", db, 0.25, 1},
		{"no whole-database lock", nil, 1, 4},
	} {
		tune := newTunables(cfg)
		_, p := paceMiddleware(cfg, tune, nil, nil, c.st, nil)
		if s := p.Snapshot(); s.Share != c.share || s.Allowed != 1 {
			t.Errorf("%s: share %g, %d at once; want %g and the slow start's one", c.name, s.Share, s.Allowed, c.share)
		}
		full := cfg
		full.Mode = PaceFull
		tune.set(full)
		if s := p.Snapshot(); s.Allowed != c.allowedAtFull {
			t.Errorf("%s at full: %d at once, want %d", c.name, s.Allowed, c.allowedAtFull)
		}
	}
}

// TestPaceState: Stats.Pace is the Pacer's snapshot, its mode named.
func TestPaceState(t *testing.T) {
	for _, c := range []struct {
		s    pace.Snapshot
		want PaceState
	}{
		{pace.Snapshot{InFlight: 1, Allowed: 2, Share: 0.25, BatchCap: 250, Signal: "probe", Ratio: 1.5, Rebasing: true, Backoffs: 3, FloorHits: 1, Increases: 9, MinAllowed: 1, MinShare: 0.25},
			PaceState{Mode: PaceGentle, InFlight: 1, Allowed: 2, Share: 0.25, BatchCap: 250, Signal: "probe", Ratio: 1.5, Rebasing: true, Backoffs: 3, FloorHits: 1}},
		{pace.Snapshot{Full: true, InFlight: 4, Allowed: 4, Share: 1, BatchCap: 1000},
			PaceState{Mode: PaceFull, InFlight: 4, Allowed: 4, Share: 1, BatchCap: 1000}},
	} {
		if got := paceState(c.s); got != c.want {
			t.Errorf("paceState(%+v) = %+v, want %+v", c.s, got, c.want)
		}
	}
}

// TestTemporalMetricsRefused: a metrics endpoint that is no http(s) URL
// is refused before any pass, without echoing a password it may hold.
func TestTemporalMetricsRefused(t *testing.T) {
	if err := (Config{Pace: Pace{TemporalMetrics: []string{"scraper:hunter2@host:9090/metrics"}}}).Validate(); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a metrics endpoint that is no URL: %v, want refused without the password", err)
	}
}

// probeStore is a store whose probe counts how often it was opened.
type probeStore struct {
	store.Store
	opened atomic.Int32
}

func (s *probeStore) OpenProbe(context.Context) (store.Probe, error) {
	s.opened.Add(1)
	return nopProbe{}, nil
}

type nopProbe struct{}

func (nopProbe) Probe(context.Context) error { return nil }
func (nopProbe) Close() error                { return nil }

// waitTables holds the pass's first statement until ready is closed, or
// its context ends.
type waitTables struct {
	store.Store
	ready <-chan struct{}
}

func (s waitTables) Tables(ctx context.Context) ([]store.Table, error) {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Store.Tables(ctx)
}

// TestPaceSignalsWired: a pass opens its store's probe at the gentle pace
// and not at the full one, and scrapes Config.TemporalMetrics from its
// start.
func TestPaceSignalsWired(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "t.db"), sqlstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Write(ctx, db, seed.Spec{Queues: 2, TasksPerQueue: 10, Expired: 1, IdleAge: 72 * time.Hour, Now: now}); err != nil {
		t.Fatal(err)
	}
	scraped := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(scraped) })
		http.Error(w, "no metrics here", http.StatusNotFound)
	}))
	defer srv.Close()
	for _, c := range []struct {
		mode   PaceMode
		opened int32
	}{{PaceGentle, 1}, {PaceFull, 0}} {
		st := &probeStore{Store: db}
		cfg := Config{Pace: Pace{Mode: c.mode}, Hooks: Hooks{Now: func() time.Time { return now }, Logger: quietLog()}}
		if c.mode == PaceGentle {
			// Its first statement waits for the first scrape.
			cfg.TemporalMetrics = []string{srv.URL + "/metrics"}
			cfg.Middleware = []store.Middleware{func(next store.Store) store.Store { return waitTables{Store: next, ready: scraped} }}
		}
		pctx, cancel := context.WithTimeout(ctx, time.Minute) // a guard: a pass that never scrapes fails, not hangs
		st2, err := New(st, cfg).Run(pctx)
		cancel()
		if err != nil || st2.Outcome != Completed {
			t.Fatalf("%s: %s %v", c.mode, st2.Outcome, err)
		}
		if got := st.opened.Load(); got != c.opened {
			t.Errorf("%s: the probe opened %d times, want %d", c.mode, got, c.opened)
		}
	}
}

// unprovenStore is a whole-database writer that cannot prove that its
// database is alone: a SQLite store behind a wrapper.
type unprovenStore struct{ store.Store }

func (unprovenStore) WritesLockDatabase() bool { return true }

// TestPaceSQLiteAlone: a gentle pass on a SQLite file in WAL mode that no
// other process has open proves it (store.AloneProver) and lifts the duty
// cycle; one that cannot prove it keeps it. (sqlstore's TestAlone holds
// the proof to another process that has the file open.)
func TestPaceSQLiteAlone(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "t.db"), sqlstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Write(ctx, db, seed.Spec{Queues: 20, TasksPerQueue: 50, Expired: 1, IdleAge: 72 * time.Hour, Now: now}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		st       store.Store
		alone    bool
		maxShare float64
	}{
		{"proven alone", db, true, 1},
		{"not proven", unprovenStore{db}, false, 0.25},
	} {
		s := New(c.st, Config{Hooks: Hooks{Now: func() time.Time { return now }, Logger: quietLog()}})
		var p *pace.Pacer
		s.onPacer = func(got *pace.Pacer) { p = got }
		st, err := s.Run(ctx)
		if err != nil || st.Outcome != Completed {
			t.Fatalf("%s: %s %v", c.name, st.Outcome, err)
		}
		if snap := p.Snapshot(); snap.Alone != c.alone || snap.Share > c.maxShare || st.Pace.Alone != c.alone {
			t.Errorf("%s: alone %v (stats %v), share %g; want alone %v, share at most %g", c.name, snap.Alone, st.Pace.Alone, snap.Share, c.alone, c.maxShare)
		}
	}
}
