package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind, which
// covers every executor the tests start: each is stopped by a t.Cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var bg = context.Background()

func start(t *testing.T, cfg Config) *Executor {
	t.Helper()
	e := New(context.Background(), cfg)
	t.Cleanup(e.Stop)
	return e
}

func submit(t *testing.T, e *Executor, j Job) {
	t.Helper()
	if err := e.Submit(bg, j); err != nil {
		t.Fatalf("Submit: %v", err)
	}
}

func wait(t *testing.T, e *Executor) {
	t.Helper()
	if err := e.Wait(bg); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

func checkStats(t *testing.T, e *Executor, want Stats) {
	t.Helper()
	if got := e.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

// signal returns a channel with room for n signals and a non-blocking
// function that sends one, suitable for the test hooks.
func signal(n int) (chan struct{}, func()) {
	c := make(chan struct{}, n)
	return c, func() {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// gate is a job that occupies a worker until released, so that a test can
// fill the run queue in a known state before anything else runs.
type gate struct {
	started chan struct{}
	release chan struct{}
}

func newGate() *gate {
	return &gate{started: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) Run(ctx context.Context) Status {
	close(g.started)
	select {
	case <-g.release:
	case <-ctx.Done(): // so that a failed test can still stop the executor
	}
	return Done
}

// startGated starts an executor and occupies one of its workers with a gate.
func startGated(t *testing.T, cfg Config) (*Executor, *gate) {
	t.Helper()
	e := start(t, cfg)
	g := newGate()
	submit(t, e, g)
	<-g.started
	return e, g
}

func TestConfigDefaults(t *testing.T) {
	for _, cfg := range []Config{{}, {Workers: -1, QueueSize: -1, MaxDeferred: -1}} {
		e := start(t, cfg)
		want := Config{Workers: 32, QueueSize: 32, MaxDeferred: 10000}
		if e.cfg != want {
			t.Errorf("New(%+v) config = %+v, want %+v", cfg, e.cfg, want)
		}
	}
}

func TestAllJobsRunOnce(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		jobs int
	}{
		{"one worker, queue of one", Config{Workers: 1, QueueSize: 1}, 10},
		{"few workers, small queue", Config{Workers: 4, QueueSize: 2}, 100},
		{"defaults", Config{}, 1000},
		{"no jobs", Config{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, tt.cfg)
			runs := make([]atomic.Int32, tt.jobs)
			for i := range runs {
				submit(t, e, JobFunc(func(context.Context) Status {
					runs[i].Add(1)
					return Done
				}))
			}
			wait(t, e)
			for i := range runs {
				if n := runs[i].Load(); n != 1 {
					t.Errorf("job %d ran %d times, want 1", i, n)
				}
			}
			n := int64(tt.jobs)
			checkStats(t, e, Stats{Submitted: n, Done: n})
		})
	}
}

func TestDeferRunsAgain(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		jobs   int
		defers int
	}{
		{"never defers", Config{Workers: 1}, 1, 0},
		{"defers once", Config{Workers: 1}, 1, 1},
		{"defers many times", Config{Workers: 1}, 1, 100},
		{"several jobs, several workers", Config{Workers: 4, QueueSize: 2}, 20, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, tt.cfg)
			runs := make([]atomic.Int32, tt.jobs)
			for i := range runs {
				submit(t, e, JobFunc(func(context.Context) Status {
					if int(runs[i].Add(1)) <= tt.defers {
						return Defer
					}
					return Done
				}))
			}
			wait(t, e)
			for i := range runs {
				if n := runs[i].Load(); int(n) != tt.defers+1 {
					t.Errorf("job %d ran %d times, want %d", i, n, tt.defers+1)
				}
			}
			n := int64(tt.jobs)
			checkStats(t, e, Stats{Submitted: n, Done: n, Deferred: n * int64(tt.defers)})
		})
	}
}

// orderLog records the order in which jobs run.
type orderLog struct {
	mu   sync.Mutex
	runs []string
}

func (l *orderLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, s)
}

func (l *orderLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.runs)
}

// fairJob logs each run as name#run, defers the first defers runs and, if
// spawn is set, submits a new job named spawn+run on each run that defers.
type fairJob struct {
	t      *testing.T
	e      *Executor
	log    *orderLog
	name   string
	defers int
	spawn  string
	runs   int // only touched by Run, which never runs concurrently with itself
}

func (j *fairJob) Run(ctx context.Context) Status {
	j.runs++
	j.log.add(fmt.Sprintf("%s#%d", j.name, j.runs))
	if j.runs > j.defers {
		return Done
	}
	if j.spawn != "" {
		child := &fairJob{t: j.t, e: j.e, log: j.log, name: fmt.Sprint(j.spawn, j.runs)}
		if err := j.e.Submit(ctx, child); err != nil {
			j.t.Errorf("Submit from %s: %v", j.name, err)
		}
	}
	return Defer
}

func TestFairness(t *testing.T) {
	type spec struct {
		name   string
		defers int
		spawn  string
	}
	tests := []struct {
		name string
		jobs []spec // submitted in order behind a gate, so all are queued
		want []string
	}{
		{
			name: "deferred job runs after jobs queued before its defer",
			jobs: []spec{{name: "D", defers: 1}, {name: "A"}, {name: "B"}, {name: "C"}},
			want: []string{"D#1", "A#1", "B#1", "C#1", "D#2"},
		},
		{
			name: "deferred job yields to work submitted while it ran",
			jobs: []spec{{name: "D", defers: 3, spawn: "X"}, {name: "A"}, {name: "B"}},
			want: []string{"D#1", "A#1", "B#1", "X1#1", "D#2", "X2#1", "D#3", "X3#1", "D#4"},
		},
		{
			name: "deferred jobs take turns in FIFO order",
			jobs: []spec{{name: "D", defers: 2}, {name: "E", defers: 2}, {name: "F", defers: 1}},
			want: []string{"D#1", "E#1", "F#1", "D#2", "E#2", "F#2", "D#3", "E#3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One worker makes the order deterministic.
			e, g := startGated(t, Config{Workers: 1, QueueSize: 8})
			log := &orderLog{}
			for _, s := range tt.jobs {
				submit(t, e, &fairJob{t: t, e: e, log: log, name: s.name, defers: s.defers, spawn: s.spawn})
			}
			close(g.release)
			wait(t, e)
			if got := log.get(); !slices.Equal(got, tt.want) {
				t.Errorf("run order:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestDeferredCap(t *testing.T) {
	tests := []struct {
		maxDeferred int
		jobs        int
	}{
		{maxDeferred: 2, jobs: 5},
		{maxDeferred: 1, jobs: 3},
		{maxDeferred: 5, jobs: 5},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("MaxDeferred=%d,jobs=%d", tt.maxDeferred, tt.jobs), func(t *testing.T) {
			// With one worker and every job queued behind a gate, the
			// jobs' first runs come one after another, each deferring:
			// the first maxDeferred fill the deferred list and the rest
			// are dropped. Only then does job 0 run a second time, which
			// it reports and then holds the worker until Stop.
			e, g := startGated(t, Config{Workers: 1, QueueSize: tt.jobs, MaxDeferred: tt.maxDeferred})
			runs := make([]atomic.Int32, tt.jobs)
			second := make(chan struct{})
			for i := range runs {
				submit(t, e, JobFunc(func(ctx context.Context) Status {
					if runs[i].Add(1) == 2 && i == 0 {
						close(second)
						<-ctx.Done()
					}
					return Defer
				}))
			}
			close(g.release)
			<-second

			dropped := int64(max(tt.jobs-tt.maxDeferred, 0))
			kept := int64(tt.jobs) - dropped
			checkStats(t, e, Stats{
				Submitted:   int64(tt.jobs) + 1,
				Done:        1, // the gate
				Deferred:    int64(tt.jobs),
				Dropped:     dropped,
				Outstanding: kept,
			})
			e.Stop()
			// Job 0's second Defer came after Stop: counted, not requeued.
			checkStats(t, e, Stats{
				Submitted:   int64(tt.jobs) + 1,
				Done:        1,
				Deferred:    int64(tt.jobs) + 1,
				Dropped:     dropped,
				Outstanding: kept,
			})
			for i := range runs {
				want := int32(1)
				if i == 0 {
					want = 2
				}
				if n := runs[i].Load(); n != want {
					t.Errorf("job %d ran %d times, want %d", i, n, want)
				}
			}
		})
	}
}

func TestSubmitBlocksWhenQueueFull(t *testing.T) {
	e := New(context.Background(), Config{Workers: 1, QueueSize: 1})
	t.Cleanup(e.Stop)
	blocked, hook := signal(1)
	e.testHookSubmitWait = hook

	g := newGate()
	submit(t, e, g)
	<-g.started
	submit(t, e, JobFunc(func(context.Context) Status { return Done })) // fills the queue

	ran := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- e.Submit(bg, JobFunc(func(context.Context) Status {
			close(ran)
			return Done
		}))
	}()
	<-blocked // the Submit found the queue full and is about to wait
	select {
	case err := <-done:
		t.Fatalf("Submit returned %v while the queue was full", err)
	default:
	}
	if got := e.Stats().Submitted; got != 2 {
		t.Errorf("Stats().Submitted = %d while blocked, want 2", got)
	}

	close(g.release)
	if err := <-done; err != nil {
		t.Fatalf("Submit: %v", err)
	}
	<-ran
	wait(t, e)
	checkStats(t, e, Stats{Submitted: 3, Done: 3})
}

func TestSubmitContext(t *testing.T) {
	tests := []struct {
		name string
		// ctx returns the context for the Submit under test and a
		// function the test calls once that Submit is blocked.
		ctx       func() (context.Context, func())
		queueFull bool
		want      error
	}{
		{
			name: "cancelled while blocked",
			ctx: func() (context.Context, func()) {
				ctx, cancel := context.WithCancel(bg)
				return ctx, cancel
			},
			queueFull: true,
			want:      context.Canceled,
		},
		{
			name: "deadline expires while blocked",
			ctx: func() (context.Context, func()) {
				ctx, cancel := context.WithTimeout(bg, time.Millisecond)
				// Cancel only after the deadline, which keeps the
				// error DeadlineExceeded.
				return ctx, func() { <-ctx.Done(); cancel() }
			},
			queueFull: true,
			want:      context.DeadlineExceeded,
		},
		{
			name: "already cancelled, queue full",
			ctx: func() (context.Context, func()) {
				ctx, cancel := context.WithCancel(bg)
				cancel()
				return ctx, func() {}
			},
			queueFull: true,
			want:      context.Canceled,
		},
		{
			name: "already cancelled, queue has room",
			ctx: func() (context.Context, func()) {
				ctx, cancel := context.WithCancel(bg)
				cancel()
				return ctx, func() {}
			},
			want: context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(context.Background(), Config{Workers: 1, QueueSize: 1})
			t.Cleanup(e.Stop)
			blocked, hook := signal(1)
			e.testHookSubmitWait = hook
			g := newGate()
			submit(t, e, g)
			<-g.started
			submitted := int64(1)
			if tt.queueFull {
				submit(t, e, JobFunc(func(context.Context) Status { return Done }))
				submitted++
			}

			ctx, unblock := tt.ctx()
			done := make(chan error, 1)
			go func() {
				done <- e.Submit(ctx, JobFunc(func(context.Context) Status {
					t.Error("job submitted with a done context ran")
					return Done
				}))
			}()
			if tt.queueFull && ctx.Err() == nil {
				select {
				case <-blocked:
				case <-ctx.Done(): // the deadline may beat the hook
				}
			}
			unblock()
			if err := <-done; !errors.Is(err, tt.want) {
				t.Errorf("Submit = %v, want %v", err, tt.want)
			}

			// The executor is unaffected: the other jobs still run.
			close(g.release)
			wait(t, e)
			checkStats(t, e, Stats{Submitted: submitted, Done: submitted})
		})
	}
}

// A Submit that gives up must not keep a freed slot from another blocked
// Submit.
func TestSubmitCancelledLeavesSlotToOthers(t *testing.T) {
	e := New(context.Background(), Config{Workers: 1, QueueSize: 1})
	t.Cleanup(e.Stop)
	blocked, hook := signal(2)
	e.testHookSubmitWait = hook
	g := newGate()
	submit(t, e, g)
	<-g.started
	submit(t, e, JobFunc(func(context.Context) Status { return Done }))

	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	job := JobFunc(func(context.Context) Status { return Done })
	cancelled := make(chan error, 1)
	go func() { cancelled <- e.Submit(ctx, job) }()
	<-blocked
	patient := make(chan error, 1)
	go func() { patient <- e.Submit(bg, job) }()
	<-blocked

	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Submit = %v, want %v", err, context.Canceled)
	}
	close(g.release)
	if err := <-patient; err != nil {
		t.Errorf("patient Submit = %v, want nil", err)
	}
	wait(t, e)
	checkStats(t, e, Stats{Submitted: 3, Done: 3})
}

func TestSubmitNilPanics(t *testing.T) {
	e := start(t, Config{Workers: 1})
	defer func() {
		if recover() == nil {
			t.Error("Submit(nil) did not panic")
		}
	}()
	e.Submit(bg, nil)
}

func TestStop(t *testing.T) {
	e := New(context.Background(), Config{Workers: 2, QueueSize: 2})
	t.Cleanup(e.Stop)
	submitBlocked, hook := signal(1)
	e.testHookSubmitWait = hook

	// Two running jobs that return only when their ctx is cancelled.
	started := make(chan struct{}, 2)
	ctxErrs := make(chan error, 2)
	for _, s := range []Status{Done, Err} {
		submit(t, e, JobFunc(func(ctx context.Context) Status {
			started <- struct{}{}
			<-ctx.Done()
			ctxErrs <- ctx.Err()
			return s
		}))
	}
	<-started
	<-started

	// Two queued jobs, which must be discarded, and a blocked Submit.
	for range 2 {
		submit(t, e, JobFunc(func(context.Context) Status {
			t.Error("queued job ran after Stop")
			return Done
		}))
	}
	blockedErr := make(chan error, 1)
	go func() {
		blockedErr <- e.Submit(bg, JobFunc(func(context.Context) Status { return Done }))
	}()
	<-submitBlocked

	e.Stop() // returns only once both running jobs have returned
	for range 2 {
		select {
		case err := <-ctxErrs:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("running job's ctx.Err() = %v, want %v", err, context.Canceled)
			}
		default:
			t.Fatal("Stop returned before a running job returned")
		}
	}
	if err := <-blockedErr; !errors.Is(err, ErrStopped) {
		t.Errorf("blocked Submit = %v, want %v", err, ErrStopped)
	}
	checkStats(t, e, Stats{Submitted: 4, Done: 1, Err: 1, Outstanding: 2})

	if err := e.Submit(bg, JobFunc(func(context.Context) Status { return Done })); !errors.Is(err, ErrStopped) {
		t.Errorf("Submit after Stop = %v, want %v", err, ErrStopped)
	}
	if err := e.Wait(bg); !errors.Is(err, ErrStopped) {
		t.Errorf("Wait after Stop = %v, want %v", err, ErrStopped)
	}

	// Idempotent, also when called concurrently.
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(e.Stop)
	}
	wg.Wait()
	checkStats(t, e, Stats{Submitted: 4, Done: 1, Err: 1, Outstanding: 2})
}

func TestStopIdle(t *testing.T) {
	e := New(context.Background(), Config{})
	e.Stop()
	if err := e.Wait(bg); !errors.Is(err, ErrStopped) {
		t.Errorf("Wait after Stop = %v, want %v", err, ErrStopped)
	}
}

func TestWait(t *testing.T) {
	tests := []struct {
		name string
		// act is called once Wait is blocked behind a running gate.
		act  func(e *Executor, g *gate, cancel context.CancelFunc)
		want error
	}{
		{
			name: "returns when the last job ends",
			act:  func(_ *Executor, g *gate, _ context.CancelFunc) { close(g.release) },
			want: nil,
		},
		{
			name: "returns ErrStopped on Stop",
			act:  func(e *Executor, _ *gate, _ context.CancelFunc) { e.Stop() },
			want: ErrStopped,
		},
		{
			name: "returns ctx error on cancel",
			act:  func(_ *Executor, _ *gate, cancel context.CancelFunc) { cancel() },
			want: context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(context.Background(), Config{Workers: 1})
			t.Cleanup(e.Stop)
			blocked, hook := signal(1)
			e.testHookWaitWait = hook
			g := newGate()
			submit(t, e, g)
			<-g.started

			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- e.Wait(ctx) }()
			<-blocked
			select {
			case err := <-done:
				t.Fatalf("Wait returned %v while a job was running", err)
			default:
			}
			tt.act(e, g, cancel)
			if err := <-done; !errors.Is(err, tt.want) {
				t.Errorf("Wait = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestWaitNothingSubmitted(t *testing.T) {
	e := start(t, Config{})
	wait(t, e)
	// Nothing to wait for, so a done ctx does not matter.
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := e.Wait(ctx); err != nil {
		t.Errorf("Wait with done ctx and nothing outstanding = %v, want nil", err)
	}
}

func TestErrCounted(t *testing.T) {
	tests := []struct {
		name     string
		statuses []Status // one job per status, each returning it on its first run
		want     Stats
	}{
		{"single error", []Status{Err}, Stats{Submitted: 1, Err: 1}},
		{"mixed", []Status{Done, Err, Done, Err, Err}, Stats{Submitted: 5, Done: 2, Err: 3}},
		{"unknown status counts as error", []Status{Status(42), Done}, Stats{Submitted: 2, Done: 1, Err: 1}},
		{"error after defer", []Status{Defer}, Stats{Submitted: 1, Deferred: 1, Err: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, Config{Workers: 2})
			for _, s := range tt.statuses {
				var runs atomic.Int32
				submit(t, e, JobFunc(func(context.Context) Status {
					if runs.Add(1) > 1 {
						return Err // a deferred job fails on its next run
					}
					return s
				}))
			}
			wait(t, e)
			checkStats(t, e, tt.want)
		})
	}
}

func TestStatusString(t *testing.T) {
	for s, want := range map[Status]string{Done: "Done", Defer: "Defer", Err: "Err", Status(7): "Status(7)"} {
		if got := s.String(); got != want {
			t.Errorf("Status(%d).String() = %q, want %q", int(s), got, want)
		}
	}
}

// TestConcurrentUse exercises the executor from many goroutines at once for
// the race detector, and checks that the counters add up.
func TestConcurrentUse(t *testing.T) {
	e := start(t, Config{Workers: 8, QueueSize: 4, MaxDeferred: 16})
	const producers, perProducer = 8, 200
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range perProducer {
				var runs atomic.Int32
				n := int32((p + i) % 4) // defers 0..3 times
				err := e.Submit(bg, JobFunc(func(context.Context) Status {
					switch r := runs.Add(1); {
					case r <= n:
						return Defer
					case i%7 == 0:
						return Err
					default:
						return Done
					}
				}))
				if err != nil {
					t.Errorf("Submit: %v", err)
					return
				}
			}
		})
	}
	stop := make(chan struct{})
	var reader sync.WaitGroup
	reader.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				_ = e.Stats()
			}
		}
	})
	wg.Wait()
	wait(t, e)
	close(stop)
	reader.Wait()

	s := e.Stats()
	if s.Submitted != producers*perProducer {
		t.Errorf("Submitted = %d, want %d", s.Submitted, producers*perProducer)
	}
	if s.Outstanding != 0 || s.Done+s.Err+s.Dropped != s.Submitted {
		t.Errorf("Stats() = %+v: want Outstanding 0 and Done+Err+Dropped = Submitted", s)
	}
}

// A deferred job must not wait for the worker that deferred it: here that
// worker or the other one is held by a job that finishes only once the
// deferred job has run again, so the executor deadlocks unless an idle worker
// picks the deferred job up.
func TestDeferredJobRunsOnIdleWorker(t *testing.T) {
	e := start(t, Config{Workers: 2})
	again := make(chan struct{})
	var runs atomic.Int32
	submit(t, e, JobFunc(func(ctx context.Context) Status {
		if runs.Add(1) > 1 {
			close(again)
			return Done
		}
		if err := e.Submit(ctx, JobFunc(func(context.Context) Status {
			<-again
			return Done
		})); err != nil {
			t.Errorf("Submit: %v", err)
		}
		return Defer
	}))
	wait(t, e)
	checkStats(t, e, Stats{Submitted: 2, Done: 2, Deferred: 1})
}

// TestJobContextFromNew: the context of every job derives from New's, so a
// caller that cancels its context stops the jobs without calling Stop.
func TestJobContextFromNew(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "caller"))
	e := New(parent, Config{Workers: 1})
	defer e.Stop()
	started := make(chan struct{})
	ended := make(chan any, 1)
	if err := e.Submit(context.Background(), JobFunc(func(ctx context.Context) Status {
		close(started)
		<-ctx.Done()
		ended <- ctx.Value(key{})
		return Done
	})); err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	if v := <-ended; v != "caller" {
		t.Errorf("the job's context carries %v, want the caller's value", v)
	}
}
