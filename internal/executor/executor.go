// Package executor runs jobs on a fixed pool of workers fed from a bounded
// run queue and a bounded list of deferred jobs.
//
// An [Executor] owns its worker goroutines, the run queue, the deferred list
// and the context handed to every job; it knows nothing about what the jobs
// do. Because the run queue is bounded, [Executor.Submit] blocks while it is
// full: a producer that discovers work faster than the workers finish it is
// slowed down instead of buffering an unbounded amount of work in memory.
//
// Deferral exists for fairness. A job with much work to do (a large task
// queue, say) does a bounded slice of it and returns [Defer]; the executor
// then puts it at the back of the deferred list, so jobs queued in the
// meantime, and jobs deferred earlier, run before it runs again. A long job
// thus yields its worker instead of holding it while short jobs wait. The
// deferred list is bounded by [Config.MaxDeferred] so that it cannot grow
// without limit; a job that defers while the list is full is dropped, on the
// assumption that a later pass of the producer will submit it again.
//
// A free worker takes the next job from the run queue if there is one,
// otherwise the oldest deferred job, otherwise it sleeps until either appears.
// Deferred jobs therefore wait for as long as the run queue keeps refilling;
// they are the remainder of work that has already had its turn.
//
// The design follows the fixed pool executor of Temporal's scavengers.
package executor

import (
	"context"
	"errors"
	"strconv"
	"sync"
)

// Status is the outcome of one call of [Job.Run].
type Status int

const (
	// Done means the job finished.
	Done Status = iota
	// Defer means the job has more work: run it again later, after the jobs
	// queued now.
	Defer
	// Err means the job finished with an error. The executor only counts
	// it; reporting the error itself is up to the job.
	Err
)

// String returns the name of the status, for logs and test failures.
func (s Status) String() string {
	switch s {
	case Done:
		return "Done"
	case Defer:
		return "Defer"
	case Err:
		return "Err"
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// A Job is one unit of work.
//
// Run may be called several times if it returns [Defer], never concurrently
// with itself. Its ctx ends with the context given to [New] or with
// [Executor.Stop]; a job should return
// promptly when that happens, because Stop waits for it. Any Status other
// than Done, Defer and Err is counted as Err.
type Job interface {
	Run(ctx context.Context) Status
}

// JobFunc adapts a function to the [Job] interface.
type JobFunc func(ctx context.Context) Status

// Run calls f(ctx).
func (f JobFunc) Run(ctx context.Context) Status { return f(ctx) }

// Config configures an [Executor]. A zero or negative field means its
// default, so the zero Config is a valid configuration.
type Config struct {
	// Workers is the number of worker goroutines, and so the number of jobs
	// that run at once. Default 32.
	Workers int
	// QueueSize is the capacity of the run queue. Submit blocks while the
	// queue is full, which is what applies back pressure. Default 32.
	QueueSize int
	// MaxDeferred bounds the deferred list. A job that returns Defer when
	// the list already holds MaxDeferred jobs is dropped and counted in
	// Stats.Dropped. Default 10000.
	MaxDeferred int
}

const (
	defaultWorkers     = 32
	defaultQueueSize   = 32
	defaultMaxDeferred = 10000
)

// Stats is a snapshot of an executor's counters.
type Stats struct {
	// Submitted counts jobs accepted by Submit.
	Submitted int64
	// Done counts runs that returned Done.
	Done int64
	// Deferred counts runs that returned Defer, including those whose job
	// was then dropped.
	Deferred int64
	// Dropped counts jobs dropped because they deferred while the deferred
	// list was full.
	Dropped int64
	// Err counts runs that returned Err (or an unknown Status).
	Err int64
	// Outstanding counts jobs submitted and not yet finished, that is, not
	// yet done, failed or dropped. Jobs discarded by Stop stay in it.
	Outstanding int64
}

// ErrStopped is returned by [Executor.Submit] and [Executor.Wait] once
// [Executor.Stop] has been called.
var ErrStopped = errors.New("executor stopped")

// An Executor runs submitted jobs on a fixed pool of workers. Create one with
// [New]; its methods are safe for concurrent use.
type Executor struct {
	cfg Config // with defaults applied

	ctx    context.Context // passed to every Run; derived from New's, cancelled by Stop
	cancel context.CancelFunc
	wg     sync.WaitGroup // the workers, so that Stop can wait for them

	// One mutex guards all state: the critical sections are a few
	// instructions long, and a single lock lets the three conditions below
	// be checked and waited on without lost wakeups.
	mu       sync.Mutex
	work     sync.Cond // a job was queued or deferred, or Stop was called
	space    sync.Cond // the run queue has room, or Stop was called
	drained  sync.Cond // Outstanding reached zero, or Stop was called
	runq     ring
	deferred ring
	stopped  bool
	stats    Stats

	// Test hooks, called with mu held just before Submit and Wait block, so
	// that tests can tell "blocked" from "not yet there" without sleeping.
	// They must not block. Set them before the first Submit or Wait.
	testHookSubmitWait func()
	testHookWaitWait   func()
}

// New returns an executor configured by cfg, with its workers started.
// The context passed to every job is derived from ctx: it ends when ctx
// ends or [Executor.Stop] is called. Call Stop to release the workers.
func New(ctx context.Context, cfg Config) *Executor {
	if cfg.Workers <= 0 {
		cfg.Workers = defaultWorkers
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = defaultQueueSize
	}
	if cfg.MaxDeferred <= 0 {
		cfg.MaxDeferred = defaultMaxDeferred
	}
	ctx, cancel := context.WithCancel(ctx)
	e := &Executor{cfg: cfg, ctx: ctx, cancel: cancel}
	e.work.L = &e.mu
	e.space.L = &e.mu
	e.drained.L = &e.mu
	for range cfg.Workers {
		e.wg.Go(e.worker)
	}
	return e
}

// Submit queues j to be run. It blocks while the run queue is full.
//
// Submit returns ctx.Err() if ctx is done before j is queued (including when
// it is already done on entry, even if the queue has room), and ErrStopped
// once Stop has been called. A job may call Submit from its Run, but if every
// worker blocks that way on a full queue, nothing drains it.
func (e *Executor) Submit(ctx context.Context, j Job) error {
	if j == nil {
		panic("executor: Submit of nil Job")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var stopWake func() bool
	for {
		if e.stopped {
			return ErrStopped
		}
		if err := ctx.Err(); err != nil {
			// A worker may have signalled this goroutine about a free
			// slot that it will not take; pass the wakeup on to another
			// blocked Submit, or that one could sleep with room free.
			if e.runq.len() < e.cfg.QueueSize {
				e.space.Signal()
			}
			return err
		}
		if e.runq.len() < e.cfg.QueueSize {
			break
		}
		if stopWake == nil {
			// A Cond cannot select on ctx.Done, so have ctx wake us.
			// Registered only when about to block, so that the common
			// path costs nothing; stopWake runs before the Unlock above.
			stopWake = context.AfterFunc(ctx, e.wake(&e.space))
			defer stopWake()
		}
		if e.testHookSubmitWait != nil {
			e.testHookSubmitWait()
		}
		e.space.Wait()
	}
	e.runq.push(j)
	e.stats.Submitted++
	e.stats.Outstanding++
	e.work.Signal()
	return nil
}

// Wait blocks until no job is outstanding: every submitted job is done,
// failed or dropped. It returns as soon as the last one finishes. Call it
// after the last Submit; jobs submitted concurrently with Wait may or may not
// be waited for.
//
// Wait returns ctx.Err() if ctx is done first, and ErrStopped once Stop has
// been called, even if no job is outstanding, because jobs that finished
// with a cancelled context did not necessarily finish their work.
func (e *Executor) Wait(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var stopWake func() bool
	for {
		if e.stopped {
			return ErrStopped
		}
		if e.stats.Outstanding == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if stopWake == nil {
			stopWake = context.AfterFunc(ctx, e.wake(&e.drained))
			defer stopWake()
		}
		if e.testHookWaitWait != nil {
			e.testHookWaitWait()
		}
		e.drained.Wait()
	}
}

// Stop cancels the context passed to running jobs, stops the workers and
// waits for them to exit, which is once the running jobs return. Blocked
// Submit and Wait calls return ErrStopped.
//
// Jobs still queued or deferred are discarded without being run; they are
// counted nowhere and stay in Stats.Outstanding, as does a running job that
// returns Defer after Stop. Results of other running jobs are counted as
// usual.
//
// Stop is idempotent and safe to call concurrently. It must not be called
// from a job's Run, which would wait for itself.
func (e *Executor) Stop() {
	e.mu.Lock()
	if !e.stopped {
		// Set before cancelling, so that a job returning Defer in
		// response to the cancellation is discarded, not requeued.
		e.stopped = true
		e.runq = ring{}
		e.deferred = ring{}
		e.work.Broadcast()
		e.space.Broadcast()
		e.drained.Broadcast()
	}
	e.mu.Unlock()
	e.cancel()
	e.wg.Wait()
}

// Stats returns a snapshot of the counters. It is safe to call at any time.
func (e *Executor) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// wake returns a function that broadcasts c, for context.AfterFunc. It takes
// mu so that the broadcast cannot fall between a waiter's check of ctx.Err
// and its call of Wait.
func (e *Executor) wake(c *sync.Cond) func() {
	return func() {
		e.mu.Lock()
		c.Broadcast()
		e.mu.Unlock()
	}
}

func (e *Executor) worker() {
	for {
		j, ok := e.next()
		if !ok {
			return
		}
		// Run without the lock held, and with no deferred unlock around
		// it, so that a panicking job surfaces as its own panic rather
		// than as a misuse of the mutex.
		e.finish(j, j.Run(e.ctx))
	}
}

// next blocks until there is a job to run and returns it, preferring the run
// queue to the deferred list. It reports false once Stop has been called.
func (e *Executor) next() (Job, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for !e.stopped && e.runq.len() == 0 && e.deferred.len() == 0 {
		e.work.Wait()
	}
	if e.stopped {
		return nil, false
	}
	if e.runq.len() > 0 {
		// One slot freed, so one blocked Submit can proceed.
		e.space.Signal()
		return e.runq.pop(), true
	}
	return e.deferred.pop(), true
}

// finish records the outcome s of a run of j and requeues j if it deferred.
func (e *Executor) finish(j Job, s Status) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch s {
	case Done:
		e.stats.Done++
	case Defer:
		e.stats.Deferred++
		if e.stopped {
			return // discarded like the queued jobs; stays outstanding
		}
		if e.deferred.len() < e.cfg.MaxDeferred {
			e.deferred.push(j)
			// This worker may be about to take another job from the
			// run queue, so wake an idle one for the deferred job.
			e.work.Signal()
			return
		}
		e.stats.Dropped++
	default:
		e.stats.Err++
	}
	e.stats.Outstanding--
	if e.stats.Outstanding == 0 {
		e.drained.Broadcast()
	}
}

// ring is a FIFO of jobs in a circular buffer that grows as needed. The
// buffer is not allocated up front because QueueSize and MaxDeferred bound
// the queues' lengths, not their typical size.
type ring struct {
	buf  []Job
	head int // index of the oldest job
	n    int // number of jobs
}

func (r *ring) len() int { return r.n }

func (r *ring) push(j Job) {
	if r.n == len(r.buf) {
		buf := make([]Job, max(2*len(r.buf), 16))
		k := copy(buf, r.buf[r.head:])
		copy(buf[k:], r.buf[:r.head])
		r.buf, r.head = buf, 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = j
	r.n++
}

func (r *ring) pop() Job {
	j := r.buf[r.head]
	r.buf[r.head] = nil // so that the job can be collected once finished
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return j
}
