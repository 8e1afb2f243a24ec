package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// epoch is the fake clock's start.
var epoch = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fakeClock is a Clock that moves only when the test advances it. Tests
// wait for the daemon to arm a timer (waitTimers) instead of sleeping.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever timers change
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: epoch, changed: make(chan struct{})} }

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{at: f.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- f.now
		return t.c, func() bool { return false }
	}
	f.timers = append(f.timers, t)
	f.notify()
	return t.c, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.remove(t)
	}
}

func (f *fakeClock) remove(t *fakeTimer) bool {
	for i, x := range f.timers {
		if x == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			f.notify()
			return true
		}
	}
	return false
}

// Advance moves the clock on and fires the timers that are due.
func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	for _, t := range append([]*fakeTimer(nil), f.timers...) {
		if !t.at.After(f.now) {
			t.c <- f.now
			f.remove(t)
		}
	}
}

// waitTimers waits until exactly n timers are armed: the daemon is idle
// until its next pass (or waiting out the shutdown timeout).
func (f *fakeClock) waitTimers(t *testing.T, n int) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		got, ch := len(f.timers), f.changed
		f.mu.Unlock()
		if got == n {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %d armed timers (have %d)", n, got)
		}
	}
}

// logBuffer collects log output for checks on stable messages.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// hookDB wraps a database so a test can hold a pass at a chosen
// statement, and counts the statements a pass makes. It spells out every
// method of scavenger.PassDB, so a method added to the contract cannot bypass it.
type hookDB struct {
	DB *sqlstore.DB
	// listQueues, readTasks (ReadTasks and ScanTasks: whichever a pass
	// reads tasks with) and check run before the real call; a non-nil
	// error is returned instead of it.
	listQueues func(ctx context.Context, after *store.QueueKey) error
	readTasks  func(ctx context.Context) error
	check      func() error
	calls      atomic.Int64 // store calls made
}

func (h *hookDB) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	h.calls.Add(1)
	if h.listQueues != nil {
		if err := h.listQueues(ctx, after); err != nil {
			return nil, err
		}
	}
	return h.DB.ListQueues(ctx, t, after, limit)
}

func (h *hookDB) read(ctx context.Context) error {
	h.calls.Add(1)
	if h.readTasks != nil {
		return h.readTasks(ctx)
	}
	return nil
}

func (h *hookDB) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	if err := h.read(ctx); err != nil {
		return nil, err
	}
	return h.DB.ReadTasks(ctx, t, q, after, limit)
}

func (h *hookDB) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	if err := h.read(ctx); err != nil {
		return nil, err
	}
	return h.DB.ScanTasks(ctx, t, after, through, limit)
}

func (h *hookDB) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (int64, error) {
	h.calls.Add(1)
	return h.DB.DeleteTasks(ctx, t, q, r, limit)
}

func (h *hookDB) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (int64, error) {
	h.calls.Add(1)
	return h.DB.DeleteTaskSets(ctx, t, sets)
}

func (h *hookDB) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	h.calls.Add(1)
	return h.DB.GetQueue(ctx, t, q)
}

func (h *hookDB) DeleteQueues(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
	h.calls.Add(1)
	return h.DB.DeleteQueues(ctx, t, fences)
}

func (h *hookDB) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	h.calls.Add(1)
	return h.DB.ListTaskQueueIDs(ctx, t, after, limit)
}

func (h *hookDB) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	h.calls.Add(1)
	return h.DB.DeleteOrphanTasks(ctx, t, q, parents, keys)
}

var _ scavenger.PassDB = (*hookDB)(nil)

func (h *hookDB) Tables(ctx context.Context) ([]store.Table, error) {
	h.calls.Add(1)
	return h.DB.Tables(ctx)
}

func (h *hookDB) LockRange(ctx context.Context, r store.HashRange, wait bool) (store.Lock, error) {
	return h.DB.LockRange(ctx, r, wait)
}

func (h *hookDB) Identity(ctx context.Context) (string, error) { return h.DB.Identity(ctx) }

func (h *hookDB) Check(ctx context.Context) (store.SchemaInfo, error) {
	if h.check != nil {
		if err := h.check(); err != nil {
			return store.SchemaInfo{}, err
		}
	}
	return h.DB.Check(ctx)
}

// recv waits for ch to be closed (or to deliver), failing the test after
// a deadline instead of hanging it.
func recv(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// seeded returns a SQLite store with queues of expired and live tasks,
// idle long enough to be deleted once empty.
func seeded(t *testing.T, spec seed.Spec) *sqlstore.DB {
	t.Helper()
	db := testdb.Open(t, sqlstore.SQLite)
	mustSeed(t, db, spec)
	return db
}

func mustSeed(t *testing.T, db *sqlstore.DB, spec seed.Spec) {
	t.Helper()
	if spec.IdleAge == 0 {
		spec.IdleAge = 72 * time.Hour
	}
	if _, err := seed.Write(context.Background(), db, spec); err != nil {
		t.Fatal(err)
	}
}

// start runs d until the test ends (or stop is called) and returns stop,
// which cancels it and returns Run's error.
func start(t *testing.T, d *daemon.Daemon) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				err = errors.New("Run did not return within 30s of cancellation")
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

func newDaemon(t *testing.T, cfg daemon.Config) *daemon.Daemon {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	if cfg.Schedule == nil {
		cfg.Schedule = mustEvery(t, time.Hour)
	}
	d, err := daemon.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustEvery(t *testing.T, d time.Duration) daemon.Schedule {
	t.Helper()
	s, err := daemon.Every(d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// metric returns the value of the series name{labels} in reg.
func metric(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want[lp.GetName()] != lp.GetValue() {
					continue series
				}
			}
			return value(mf, m)
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

func value(mf *dto.MetricFamily, m *dto.Metric) float64 {
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}

// waitFor polls cond until it holds; for conditions no event signals,
// such as a worker finishing a queue.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestSchedules(t *testing.T) {
	e, err := daemon.Every(12 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Next(epoch); !got.Equal(epoch.Add(12 * time.Hour)) {
		t.Errorf("every 12h: next %s", got)
	}
	if got := daemon.Interval(e, epoch); got != 12*time.Hour {
		t.Errorf("every 12h: interval %s", got)
	}
	if _, err := daemon.Every(0); err == nil {
		t.Error("every 0: no error")
	}
	c, err := daemon.Cron("TZ=UTC 0 */12 * * *")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Next(epoch.Add(-5 * time.Hour)); !got.Equal(epoch) {
		t.Errorf("cron: next after 07:00 is %s, want 12:00", got)
	}
	if got := daemon.Interval(c, epoch); got != 12*time.Hour {
		t.Errorf("cron: interval %s", got)
	}
	for _, bad := range []string{"not a cron", "0 0 30 2 *"} {
		if _, err := daemon.Cron(bad); err == nil {
			t.Errorf("cron %q: no error", bad)
		}
	}
}

// TestPassesOnSchedule runs passes at start and on the interval, holds the
// lock only during a pass, and counts into the metrics.
func TestPassesOnSchedule(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 10, TasksPerQueue: 40, Expired: 0.5, NoExpiry: 0.5})
	clock := newFakeClock()
	var logs logBuffer
	d := newDaemon(t, daemon.Config{DB: db, RunAtStart: true, Clock: clock, Logger: logs.logger()})
	stop := start(t, d)

	clock.waitTimers(t, 1) // the first pass is over, the next one armed
	ps := d.Passes()
	if len(ps) != 1 || ps[0].Outcome != daemon.Completed {
		t.Fatalf("after the first pass: %+v", ps)
	}
	if got := ps[0].Stats.TasksDeleted; got != 200 {
		t.Errorf("first pass deleted %d tasks, want 200", got)
	}
	st := d.Status()
	if st.State != daemon.Idle || !st.Next.Equal(epoch.Add(time.Hour)) {
		t.Errorf("between passes: state %s, next %s; want idle, %s", st.State, st.Next, epoch.Add(time.Hour))
	}
	// The lock is free between passes: replicas can take it.
	unlock, err := db.Lock(context.Background(), false)
	if err != nil {
		t.Fatalf("lock between passes: %v", err)
	}
	unlock.Unlock()

	reg := d.Registry()
	if got := metric(t, reg, "tqscavenger_tasks_deleted_total", "table", "v1", "reason", "expired"); got != 200 {
		t.Errorf("tasks_deleted_total{v1,expired} = %v, want 200", got)
	}
	if got := metric(t, reg, "tqscavenger_last_success_timestamp_seconds"); got != float64(epoch.Unix()) {
		t.Errorf("last_success_timestamp_seconds = %v, want %d", got, epoch.Unix())
	}
	if got := metric(t, reg, "tqscavenger_next_pass_timestamp_seconds"); got != float64(epoch.Add(time.Hour).Unix()) {
		t.Errorf("next_pass_timestamp_seconds = %v", got)
	}
	examined := metric(t, reg, "tqscavenger_tasks_processed_total", "table", "v1")

	clock.Advance(time.Hour)
	clock.waitTimers(t, 1)
	if ps := d.Passes(); len(ps) != 2 || ps[1].Outcome != daemon.Completed || !ps[1].Start.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("after the second pass: %+v", ps)
	}
	if got := metric(t, reg, "tqscavenger_passes_completed_total"); got != 2 {
		t.Errorf("passes_completed_total = %v, want 2", got)
	}
	if got := metric(t, reg, "tqscavenger_tasks_processed_total", "table", "v1"); got != examined+10 {
		// A pass stops at the first live task of each queue.
		t.Errorf("tasks_processed_total grew from %v to %v, want +10 (the head task of each queue, examined again)", examined, got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if st := d.Status(); st.State != daemon.Stopped {
		t.Errorf("after stop: state %s", st.State)
	}
	for _, msg := range []string{daemon.MsgNextPass, "scavenger pass completed", "pass=2"} {
		if !strings.Contains(logs.String(), msg) {
			t.Errorf("log lacks %q:\n%s", msg, logs.String())
		}
	}
}

// TestLockHeldSkipsPass: a replica that does not get the lock logs it,
// counts it and tries at the next tick.
func TestLockHeldSkipsPass(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 3, TasksPerQueue: 10, Expired: 1})
	other := testdb.OpenDSN(t, "sqlite:"+db.DSN().Path)
	unlock, err := other.Lock(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	var logs logBuffer
	d := newDaemon(t, daemon.Config{DB: db, RunAtStart: true, Clock: clock, Logger: logs.logger()})
	start(t, d)

	clock.waitTimers(t, 1)
	if ps := d.Passes(); len(ps) != 1 || ps[0].Outcome != daemon.Skipped {
		t.Fatalf("with the lock held elsewhere: %+v", ps)
	}
	if !strings.Contains(logs.String(), `msg="`+daemon.MsgLockHeld+`"`) {
		t.Errorf("log lacks %q:\n%s", daemon.MsgLockHeld, logs.String())
	}
	reg := d.Registry()
	if got := metric(t, reg, "tqscavenger_passes_skipped_total", "reason", "lock_held"); got != 1 {
		t.Errorf("passes_skipped_total{lock_held} = %v", got)
	}
	if got := metric(t, reg, "tqscavenger_passes_started_total"); got != 0 {
		t.Errorf("passes_started_total = %v, want 0", got)
	}
	unlock.Unlock()
	clock.Advance(time.Hour)
	clock.waitTimers(t, 1)
	if ps := d.Passes(); len(ps) != 2 || ps[1].Outcome != daemon.Completed || ps[1].Stats.TasksDeleted != 30 {
		t.Fatalf("after the lock was freed: %+v", ps)
	}
}

// blockReads makes the first ReadTasks wait for release (or its context)
// and reports that it waits on entered.
func blockReads(h *hookDB) (entered <-chan struct{}, release func()) {
	in := make(chan struct{})
	rel := make(chan struct{})
	var once sync.Once
	h.readTasks = func(ctx context.Context) error {
		first := false
		once.Do(func() { first = true })
		if !first {
			return nil
		}
		close(in)
		select {
		case <-rel:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return in, sync.OnceFunc(func() { close(rel) })
}

// TestShutdownDrains: at shutdown the pass takes no new work, the
// statement in flight finishes, the lock is released and Run returns nil.
func TestShutdownDrains(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 5, TasksPerQueue: 20, Expired: 1})
	h := &hookDB{DB: db}
	entered, release := blockReads(h)
	defer release()
	clock := newFakeClock()
	var logs logBuffer
	d := newDaemon(t, daemon.Config{DB: h, RunAtStart: true, Clock: clock, Logger: logs.logger(),
		Scavenger: scavenger.Config{Pace: scavenger.Pace{Workers: 1}}, ShutdownTimeout: time.Minute})
	stop := start(t, d)
	recv(t, entered, "the pass to read tasks")

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	clock.waitTimers(t, 1) // the shutdown timeout is armed: the drain began
	if st := d.Status(); st.State != daemon.Stopping {
		t.Errorf("draining: state %s, want stopping", st.State)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Run returned (%v) while a statement was in flight", err)
	default:
	}
	before := h.calls.Load()
	release()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if n := h.calls.Load() - before; n != 0 {
		t.Errorf("%d store calls after the in-flight one finished; want none", n)
	}
	ps := d.Passes()
	if len(ps) != 1 || ps[0].Outcome != daemon.Interrupted {
		t.Fatalf("passes: %+v", ps)
	}
	unlock, err := db.Lock(context.Background(), false)
	if err != nil {
		t.Fatalf("lock after shutdown: %v", err)
	}
	unlock.Unlock()
	if !strings.Contains(logs.String(), daemon.MsgDraining) {
		t.Errorf("log lacks %q", daemon.MsgDraining)
	}
	// Work refused at shutdown is a cancellation, not a failed job.
	if strings.Contains(logs.String(), "queue job failed") || ps[0].Stats.Errors != 0 {
		t.Errorf("shutdown counted as queue job errors (%d):\n%s", ps[0].Stats.Errors, logs.String())
	}
}

// TestShutdownTimeout: a statement still running at the shutdown timeout
// is cancelled.
func TestShutdownTimeout(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 2, TasksPerQueue: 20, Expired: 1})
	h := &hookDB{DB: db}
	entered, release := blockReads(h)
	defer release()
	clock := newFakeClock()
	var logs logBuffer
	d := newDaemon(t, daemon.Config{DB: h, RunAtStart: true, Clock: clock, Logger: logs.logger(), ShutdownTimeout: 10 * time.Second})
	stop := start(t, d)
	recv(t, entered, "the pass to read tasks")
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	clock.waitTimers(t, 1)
	clock.Advance(10 * time.Second)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), daemon.MsgShutdownTimeout) {
		t.Errorf("log lacks %q:\n%s", daemon.MsgShutdownTimeout, logs.String())
	}
	unlock, err := db.Lock(context.Background(), false)
	if err != nil {
		t.Fatalf("lock after shutdown: %v", err)
	}
	unlock.Unlock()
}

// TestOverrunSkipsMissedPasses: a pass longer than the interval is never
// overlapped; the ticks it covered are skipped.
func TestOverrunSkipsMissedPasses(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 2, TasksPerQueue: 10, Expired: 1})
	h := &hookDB{DB: db}
	entered, release := blockReads(h)
	clock := newFakeClock()
	var logs logBuffer
	d := newDaemon(t, daemon.Config{DB: h, RunAtStart: true, Clock: clock, Logger: logs.logger()})
	start(t, d)
	recv(t, entered, "the pass to read tasks")
	clock.Advance(3*time.Hour + 30*time.Minute)
	if st := d.Status(); st.State != daemon.Running || st.Current == nil {
		t.Fatalf("during the long pass: %+v", st)
	}
	release()
	clock.waitTimers(t, 1)
	if got, want := d.Status().Next, epoch.Add(4*time.Hour); !got.Equal(want) {
		t.Errorf("next pass %s, want %s", got, want)
	}
	if !strings.Contains(logs.String(), daemon.MsgMissed) || !strings.Contains(logs.String(), "missed=3") {
		t.Errorf("log lacks %q with missed=3:\n%s", daemon.MsgMissed, logs.String())
	}
	if ps := d.Passes(); len(ps) != 1 {
		t.Errorf("%d passes, want 1", len(ps))
	}
}

func TestJitter(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 1})
	clock := newFakeClock()
	d := newDaemon(t, daemon.Config{DB: db, Clock: clock, Jitter: 10 * time.Minute,
		Rand: func(n int64) int64 { return n - 1 }})
	start(t, d)
	clock.waitTimers(t, 1)
	if got, want := d.Status().Next, epoch.Add(time.Hour+10*time.Minute-1); !got.Equal(want) {
		t.Errorf("next pass %s, want %s (interval plus jitter)", got, want)
	}
	if len(d.Passes()) != 0 {
		t.Error("a pass ran at start without RunAtStart")
	}
}

// TestMetricsLive: counters move while a pass runs, and the names pass
// Prometheus's lint.
func TestMetricsLive(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 12, TasksPerQueue: 30, Expired: 1})
	h := &hookDB{DB: db}
	release := make(chan struct{})
	h.listQueues = func(ctx context.Context, after *store.QueueKey) error {
		if after == nil {
			return nil
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	clock := newFakeClock()
	d := newDaemon(t, daemon.Config{DB: h, RunAtStart: true, Clock: clock,
		Scavenger: scavenger.Config{Pace: scavenger.Pace{ListPageSize: 10, Workers: 2}}})
	start(t, d)
	// A page's queues count as processed as the scan passes them, before
	// the page's empty queue rows are deleted: wait for both.
	waitFor(t, "the first page of queues to be done and its queue rows deleted", func() bool {
		c := d.Status().Current
		return c != nil && c.Stats.QueuesProcessed == 10 && c.Stats.QueuesDeleted == 10 && c.Stats.TasksDeleted == 300
	})
	reg := d.Registry()
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"tqscavenger_pass_in_progress", nil, 1},
		{"tqscavenger_passes_started_total", nil, 1},
		{"tqscavenger_passes_completed_total", nil, 0},
		{"tqscavenger_pass_queues_listed", nil, 10},
		{"tqscavenger_pass_queues_processed", nil, 10},
		{"tqscavenger_queues_processed_total", []string{"table", "v1"}, 10},
		{"tqscavenger_queues_deleted_total", []string{"table", "v1"}, 10},
		{"tqscavenger_tasks_deleted_total", []string{"table", "v1", "reason", "expired"}, 300},
		{"tqscavenger_tasks_deleted_total", []string{"table", "v2", "reason", "orphan"}, 0},
		{"tqscavenger_next_pass_timestamp_seconds", nil, 0},
		{"tqscavenger_pace", []string{"pace", "gentle"}, 1},
		{"tqscavenger_pace", []string{"pace", "full"}, 0},
	} {
		if got := metric(t, reg, c.name, c.labels...); got != c.want {
			t.Errorf("during the pass: %s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// The held statement is in flight, within the controller's limit.
	if n, limit := metric(t, reg, "tqscavenger_pace_in_flight"), metric(t, reg, "tqscavenger_pace_in_flight_limit"); n < 1 || limit < 1 {
		t.Errorf("during the pass: pace_in_flight %v, limit %v; want the held statement in flight within a limit of at least 1", n, limit)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	close(release)
	clock.waitTimers(t, 1)
	if got := metric(t, reg, "tqscavenger_tasks_deleted_total", "table", "v1", "reason", "expired"); got != 360 {
		t.Errorf("after the pass: tasks_deleted_total = %v, want 360", got)
	}
	if got := metric(t, reg, "tqscavenger_pass_in_progress"); got != 0 {
		t.Errorf("after the pass: pass_in_progress = %v", got)
	}
}

func TestHTTP(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 1})
	h := &hookDB{DB: db}
	var broken atomic.Bool
	h.check = func() error {
		if broken.Load() {
			return fmt.Errorf("%w: database unreachable", sqlstore.ErrUnavailable)
		}
		return nil
	}
	d := newDaemon(t, daemon.Config{DB: h, Clock: newFakeClock(), DSN: "postgres://tq:xxxxx@db:5432/temporal",
		Settings: []daemon.Setting{{Name: "workers", Value: "32", Source: "default"}}})
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		path string
		code int
		body string
	}{
		{"/healthz", 200, "ok"},
		{"/readyz", 200, "ok: sqlite"},
		{"/metrics", 200, "tqscavenger_passes_started_total 0"},
		{"/", 200, "postgres://tq:xxxxx@db:5432/temporal"},
		{"/nope", 404, ""},
	} {
		code, body := get(c.path)
		if code != c.code || !strings.Contains(body, c.body) {
			t.Errorf("GET %s: %d %q; want %d containing %q", c.path, code, body, c.code, c.body)
		}
	}
	broken.Store(true)
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "unreachable") {
		t.Errorf("GET /readyz with the database down: %d %q", code, body)
	}
}

// TestBuildInfo: the running build is a metric and on the status page.
func TestBuildInfo(t *testing.T) {
	db := testdb.Open(t, sqlstore.SQLite)
	d := newDaemon(t, daemon.Config{DB: db, Build: daemon.Build{Version: "v1.2.3", Revision: "abc123", GoVersion: "go1.26.8"}})
	if v := metric(t, d.Registry(), "tqscavenger_build_info", "version", "v1.2.3", "revision", "abc123", "goversion", "go1.26.8"); v != 1 {
		t.Errorf("tqscavenger_build_info = %v, want 1", v)
	}
	rec := httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if body := rec.Body.String(); !strings.Contains(body, "v1.2.3") || !strings.Contains(body, "abc123") {
		t.Errorf("the status page does not show the build:\n%s", body)
	}
}
