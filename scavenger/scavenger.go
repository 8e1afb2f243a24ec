// Package scavenger decides what to delete from a Temporal task store: it
// walks every task queue, deletes expired tasks, and deletes queues that
// are empty and idle past a grace period, fenced on their range_id.
//
// It owns the policy only. Concurrency comes from package executor, and
// all I/O goes through the store.Store interface, so the same pass runs on
// any engine (package sqlstore) or on a test wrapper around one.
package scavenger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/executor"
	"github.com/tqscavenger/tqscavenger/store"
)

// ErrShutdown is returned by Run once Shutdown has been called: the pass
// stopped taking new work before it was done. What it did is in the Stats
// Run returns; every statement is atomic on its own, so nothing is half
// done, and the next pass goes on from the rows this one left.
var ErrShutdown = errors.New("scavenger: shut down")

// errBusy is returned by Run while another Run of the same Scavenger runs.
var errBusy = errors.New("scavenger: a pass is already running")

// Scavenger runs passes over one store. Run makes a pass in the caller's
// goroutine; Shutdown stops it gracefully, as http.Server.Shutdown stops a
// server.
type Scavenger struct {
	st  store.Store
	cfg Config
	// book is the rule book of cfg (rules.go) that every pass asks.
	book ruleBook
	// ident names the database for checkpoints: the PassDB of Begin, or
	// nil for New's store, which then must implement store.Identifier.
	ident store.Identifier
	// tune holds the settings Tune changes; cfg keeps those it was
	// created with.
	tune *tunables

	// closing is closed by the first Shutdown: no statement starts after
	// it, and no pass either.
	closing   chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	running bool
	c       *counters
	exec    *executor.Executor
	started time.Time
	// hard cancels the running pass's statements; done is closed when
	// its Run returns.
	hard context.CancelCauseFunc
	done chan struct{}
	// pacer is the running (or last) pass's controller.
	pacer *yielder
	// ckpt is the running pass's checkpointer (nil: none, or no pass).
	ckpt *checkpointer

	// onYielder, if set (by a test in this package, never by New),
	// receives the yielder of each pass with YieldToLoad, so the test can
	// read its counters; an injected hook, not a package global, so tests
	// running in parallel do not see each other's passes.
	onYielder func(*yielder)
}

// New returns a Scavenger for st. An invalid cfg is reported by Run. It
// takes no lock and checks no schema: it is NewUnlocked under its first
// name.
//
// Deprecated: Use Begin, which takes the lock and checks the schema
// before the pass; a host that means to run a pass without them calls
// NewUnlocked.
func New(st store.Store, cfg Config) *Scavenger {
	cfg = cfg.WithDefaults()
	return &Scavenger{st: st, cfg: cfg, book: cfg.Rules, tune: newTunables(cfg), closing: make(chan struct{})}
}

// Config returns the configuration in effect, defaults filled in, with the
// settings Tune changed.
func (s *Scavenger) Config() Config {
	c := s.cfg
	c.MaxStatementsPerSecond, c.MaxDeletesPerSecond = s.tune.stmts.currentRate(), s.tune.rows.currentRate()
	c.RetryInitial, c.RetryMax, c.RetryFor = s.tune.retry()
	c.Mode = s.tune.pace()
	return c
}

// Tune changes the settings that may change during a pass, on the running
// pass (if any) and the passes after it: the rate limits
// (MaxDeletesPerSecond, MaxStatementsPerSecond), the retry budget
// (RetryInitial, RetryMax, RetryFor) and the pace (Mode). A caller waiting
// on a limit sees a new one within a tenth of a second; a retry sees the
// new budget at its next attempt; the controller takes a new pace from the
// next statement (one waiting for a slot is woken), while the commit
// pattern (shared commits, pipelined deletes) stays the one the pass
// started with. The other fields of c are ignored: they decide what a pass
// deletes and how it is laid out, and a pass keeps them to its end (a
// daemon applies them from its next pass, with a new Scavenger). It is
// safe to call from any goroutine, at any time. c is checked as Validate
// does, and nothing changes if it is invalid.
func (s *Scavenger) Tune(c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	s.tune.set(c.WithDefaults())
	return nil
}

// Shutdown stops the running pass gracefully: once it is called no
// statement starts, the statements in flight may finish until ctx ends, and
// then they are cancelled. It returns when the pass has ended, with
// ctx.Err() if ctx ended first. A Run called after Shutdown returns
// ErrShutdown at once.
func (s *Scavenger) Shutdown(ctx context.Context) error {
	s.closeOnce.Do(func() { close(s.closing) })
	s.mu.Lock()
	hard, done := s.hard, s.done
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		hard(fmt.Errorf("%w: shutdown timeout", ErrShutdown))
		<-done
		return ctx.Err()
	}
}

// FlushCheckpoint hands the running pass's positions to Config.Checkpoint
// now if they moved since its last write, whatever
// Config.CheckpointInterval, and reports whether it did. A host that
// records the pass's counts beside its positions (a worker's periodic
// heartbeat) asks it before it reads Stats: counts read after the
// positions were taken are never behind them, and only the queues that
// finished in between are ahead.
func (s *Scavenger) FlushCheckpoint(ctx context.Context) bool {
	s.mu.Lock()
	c := s.ckpt
	s.mu.Unlock()
	return c.flush(ctx)
}

// Stats returns the counts of the running pass, or of the last one.
func (s *Scavenger) Stats() Stats {
	s.mu.Lock()
	c, ex, started, pacer := s.c, s.exec, s.started, s.pacer
	s.mu.Unlock()
	if c == nil {
		return Stats{}
	}
	st := c.snapshot()
	st.Started = started
	if pacer != nil {
		st.Pace = pacer.state()
	}
	if ex != nil {
		es := ex.Stats()
		st.Deferred, st.Dropped = es.Deferred, es.Dropped
	}
	if !started.IsZero() {
		st.Elapsed = time.Since(started)
	}
	return st
}

// Run makes one pass and returns its stats. When ctx ends the pass stops at
// once, its statements cancelled; use Shutdown to let them finish. The
// error is non-nil if the pass could not complete: the listing failed, ctx
// ended (ctx.Err()), or Shutdown was called (ErrShutdown). Rows that could
// not be processed do not fail a pass: they are in Stats.BadRows and
// Stats.Errors. Run must not be called while another Run of s runs.
func (s *Scavenger) Run(ctx context.Context) (Stats, error) {
	if err := s.cfg.Validate(); err != nil {
		return Stats{Outcome: Failed}, err
	}
	if len(s.cfg.NamespaceNames) > 0 {
		return Stats{Outcome: Failed}, ErrUnresolvedNamespaces
	}
	// caller is the caller's context: only its end, or Shutdown, makes a
	// pass Interrupted. ctx also ends when the pass is stopped from within
	// (a lost lock, a shutdown timeout), with a cause that says why.
	caller := ctx
	ctx, hard := context.WithCancelCause(ctx)
	defer hard(nil)
	done := make(chan struct{})
	defer close(done)
	c := &counters{dryRun: s.cfg.DryRun}
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return Stats{Outcome: Failed}, errBusy
	}
	select {
	case <-s.closing:
		s.mu.Unlock()
		return Stats{Outcome: Interrupted}, ErrShutdown
	default:
	}
	ex := executor.New(ctx, executor.Config{
		Workers:     s.cfg.Workers,
		QueueSize:   s.cfg.Workers,
		MaxDeferred: s.cfg.MaxDeferred,
	})
	s.running, s.c, s.exec, s.started, s.hard, s.done = true, c, ex, time.Now(), hard, done
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
	}()
	defer ex.Stop()

	p := &pass{cfg: s.cfg, book: s.book, tune: s.tune, c: c, ex: ex, batch: newBatcher(s.cfg.TaskBatchSize, s.cfg.SlowStatement), retries: retryLog{log: s.cfg.Logger}}
	p.st, p.pacer = s.stack(ctx, &p.refused, p.batch)
	s.mu.Lock()
	s.pacer = p.pacer
	s.mu.Unlock()
	p.rng = s.cfg.Partition.Range()
	p.spread, p.pipeline = s.commitPattern()
	log := s.cfg.Logger
	if s.cfg.Resume != nil || s.cfg.Checkpoint != nil {
		id, err := s.identity(ctx)
		if err != nil {
			return Stats{Outcome: Failed}, err
		}
		if s.cfg.Resume != nil {
			if err := s.cfg.Resume.Fits(s.cfg, id); err != nil {
				return Stats{Outcome: Failed}, err
			}
			log.Info("resuming from checkpoint", "partition", s.cfg.Partition.String(), "positions", s.cfg.Resume.Walks, "checksum", "verified")
		}
		p.ckpt = newCheckpointer(s.cfg, id)
		s.mu.Lock()
		s.ckpt = p.ckpt
		s.mu.Unlock()
	}
	log.Info("scavenger pass started", "compat", string(s.cfg.Compat), "dry_run", s.cfg.DryRun, "partition", s.cfg.Partition.String())
	stopWatch := func() {}
	if s.cfg.Lock != nil {
		stopWatch = watchLock(ctx, s.cfg, hard)
	}
	stopProbe := startProbe(ctx, s.st, p.pacer, s.Config(), s.closing)
	stopTemporal := startTemporalMetrics(ctx, p.pacer, s.cfg, s.closing)
	err := p.run(ctx)
	stopTemporal()
	stopProbe()
	if err == nil || errors.Is(err, ErrShutdown) {
		// After a shutdown too: the jobs' statements in flight may finish
		// (their next ones are refused) until Shutdown's context ends.
		if werr := ex.Wait(ctx); err == nil {
			err = werr
		}
	}
	ex.Stop()
	stopWatch()
	if s.cfg.Lock != nil && ctx.Err() == nil && err == nil {
		// Every statement has finished: one more check, so that a lock
		// lost since the watcher's last one fails the pass instead of
		// being reported as success.
		err = confirmLock(ctx, s.cfg)
	}
	// What the jobs finished since the last checkpoint, for a pass that
	// ends before it is done; a completed pass's caller clears it.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	p.ckpt.stop()
	p.ckpt.flush(fctx)
	cancel()
	s.mu.Lock()
	s.ckpt = nil
	s.mu.Unlock()
	st := s.Stats()
	st.Elapsed = time.Since(st.Started)
	if s.cfg.Resume != nil {
		st.Resumed, st.ResumedFrom = true, slices.Clone(s.cfg.Resume.Walks)
	}
	st.Outcome, err = outcome(caller, ctx, st, err, s.closed() && (err != nil || p.refused.Load() > 0))
	if st.Outcome == Failed {
		st.Cause = causeOf(err)
	}
	switch {
	case errors.Is(err, ErrCheckpointMismatch):
		// Refused before any work (checkPositions): no pass ran.
		log.Error("checkpoint refused: the pass did not start", "err", err)
		return Stats{Outcome: Failed}, err
	}
	switch st.Outcome {
	case Interrupted:
		log.Info("scavenger pass interrupted", append([]any{"err", err, "elapsed", st.Elapsed,
			"queues_processed", st.QueuesProcessed}, deletedAttrs(st)...)...)
	case Failed:
		log.Error("scavenger pass failed", append([]any{"cause", string(st.Cause), "err", err, "elapsed", st.Elapsed,
			"failed_jobs", st.Errors, "queues_processed", st.QueuesProcessed}, deletedAttrs(st)...)...)
	default:
		log.Info("scavenger pass completed", append([]any{"outcome", string(st.Outcome),
			"queues_processed", st.QueuesProcessed, "tasks_processed", st.TasksProcessed},
			append(deletedAttrs(st), "bad_rows", st.BadRowCount, "resumed", st.Resumed, "resumed_from", st.ResumedFrom, "elapsed", st.Elapsed)...)...)
	}
	return st, err
}

// deletedAttrs are the log attributes of what a pass deleted. A dry run's
// say so: its deleted counts are 0, and what it would have deleted is a
// group of its own (would_delete.tasks=750), never under a *_deleted key.
func deletedAttrs(st Stats) []any {
	attrs := []any{"queues_deleted", st.QueuesDeleted, "tasks_deleted", st.TasksDeleted}
	if st.DryRun {
		attrs = append(attrs, "dry_run", true, slog.Group("would_delete", "queues", st.WouldDeleteQueues, "tasks", st.WouldDeleteTasks))
	}
	return attrs
}

// outcome decides how a pass ended, and the error Run returns for it, by
// what ended it, not by the type of the error it ended with: a lost lock
// reaches the pass as a cancellation (its statements cancelled, a check's
// deadline exceeded) and is a failure all the same. caller is the caller's
// context, ctx the pass's own (caller's, cancelled from within with a
// cause); shutDown: Shutdown stopped work the pass had yet to do.
//
//   - a lost lock (the watcher's cause, or the final check's error): Failed
//   - Shutdown, or the caller's context ended: Interrupted
//   - anything else that stopped the pass or failed a job: Failed
func outcome(caller, ctx context.Context, st Stats, err error, shutDown bool) (Outcome, error) {
	var cause error
	if ctx.Err() != nil {
		cause = context.Cause(ctx)
	}
	switch {
	case errors.Is(cause, store.ErrLockLost):
		return Failed, cause
	case errors.Is(err, store.ErrLockLost):
		return Failed, err
	case shutDown:
		return Interrupted, ErrShutdown
	case caller.Err() != nil:
		return Interrupted, context.Cause(caller)
	case errors.Is(cause, ErrShutdown):
		// Shutdown's context ended: the pass was shut down.
		return Interrupted, cause
	case cause != nil:
		// Stopped from within for a reason of its own.
		return Failed, cause
	case err != nil:
		return Failed, err
	case st.Errors > 0:
		return Failed, &JobsFailedError{Count: st.Errors, ByCause: st.FailuresByCause, First: st.Failures}
	case st.BadRowCount > 0:
		return CompletedBadRows, nil
	}
	return Completed, nil
}

// ErrJobsFailed is wrapped by Run's error when jobs failed after their
// retries (see JobsFailedError).
var ErrJobsFailed = errors.New("jobs failed")

// JobsFailedError reports the jobs of a pass that failed. It wraps
// ErrJobsFailed and the first failure's error.
type JobsFailedError struct {
	Count   int64
	ByCause map[Cause]int64
	First   []Failure
}

func (e *JobsFailedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d jobs failed", e.Count)
	causes := slices.Sorted(maps.Keys(e.ByCause))
	for i, c := range causes {
		sep := ", "
		if i == 0 {
			sep = " ("
		}
		fmt.Fprintf(&b, "%s%d %s", sep, e.ByCause[c], c)
	}
	if len(causes) > 0 {
		b.WriteString(")")
	}
	if len(e.First) > 0 {
		fmt.Fprintf(&b, "; first: %s", e.First[0])
	}
	return b.String()
}

func (e *JobsFailedError) Unwrap() []error {
	errs := []error{ErrJobsFailed}
	if len(e.First) > 0 {
		errs = append(errs, e.First[0].Err)
	}
	return errs
}

// closed reports whether Shutdown has been called.
func (s *Scavenger) closed() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// pass is the state of one Run.
type pass struct {
	cfg  Config
	book ruleBook
	// closed is the closed-workflow rule's state (closed.go); nil when
	// the rule is off.
	closed *closedRule
	// tune is what may change during the pass: see Scavenger.Tune.
	tune *tunables
	// refused counts the statements the shutdown gate refused.
	refused atomic.Int64
	retries retryLog
	// st is the store through the pass's middleware (stack), its optional
	// interfaces too.
	st passStore
	// spread is how many window jobs a page's queues go to, and pipeline
	// how many deletes a window keeps running while it scans on: the
	// workers and windowPipeline where the store shares the commits of
	// concurrent writes, else one and one.
	spread, pipeline int
	c                *counters
	ex               *executor.Executor
	// pacer is the pace's controller (yield.go).
	pacer *yielder
	// present lists the task tables that exist, whether or not this pass
	// scavenges them.
	present []store.Table
	batch   *batcher
	// rng is the part of the range_hash space the pass covers.
	rng store.HashRange
	// ckpt keeps the walks' low-water marks; nil without Config.Checkpoint.
	ckpt *checkpointer
}

// identity names the store's database for checkpoints.
func (s *Scavenger) identity(ctx context.Context) (string, error) {
	idr := s.ident
	if idr == nil {
		idr, _ = s.st.(store.Identifier)
	}
	if idr == nil {
		return "", fmt.Errorf("checkpoints: the store (%T) cannot tell which database it is (store.Identifier)", s.st)
	}
	id, err := idr.Identity(ctx)
	if err != nil {
		return "", fmt.Errorf("checkpoints: identify the database: %w", err)
	}
	return id, nil
}

func (p *pass) run(ctx context.Context) error {
	var err error
	if err = p.retry(ctx, "find task tables", func(ctx context.Context) error { p.present, err = p.st.Tables(ctx); return err }); err != nil {
		return fmt.Errorf("find task tables: %w", err)
	}
	tables := p.cfg.Tables
	if len(tables) == 0 {
		tables = p.present
	}
	// The fairness tables go first, and finish before v1 starts: a v1 row
	// whose other_has_tasks flag points at v2 is then judged by what this
	// pass left in v2, not by tasks it was about to delete.
	tables = slices.Clone(tables)
	slices.SortFunc(tables, func(a, b store.Table) int { return int(b) - int(a) })
	if err := checkPositions(ctx, p.st, p.cfg.Resume, tables, func(op string, f func(context.Context) error) error { return p.retry(ctx, op, f) }); err != nil {
		return err
	}
	if err := p.reportOddHashes(ctx, tables); err != nil {
		return err
	}
	if err := p.setupClosed(ctx); err != nil {
		return err
	}
	// Every walk's mark exists from the start, so that each checkpoint
	// holds every position, the resumed ones of walks not yet reached
	// included.
	orphans := p.cfg.Orphans != OrphansNone && p.cfg.QueueGlob == ""
	marks := make([]*walkMark, len(tables))
	orphanMarks := make([]*walkMark, len(tables))
	for i, t := range tables {
		marks[i] = p.ckpt.walk(p.cfg.Resume.position(WalkQueues, t))
	}
	for i, t := range tables {
		if orphans {
			orphanMarks[i] = p.ckpt.walk(p.cfg.Resume.position(WalkOrphans, t))
		}
	}
	for i, t := range tables {
		if i > 0 {
			if err := p.ex.Wait(ctx); err != nil {
				return err
			}
			marks[i-1].done(ctx)
		}
		pos := p.cfg.Resume.position(WalkQueues, t)
		if pos.Done {
			continue
		}
		if err := p.listQueues(ctx, t, pos, marks[i]); err != nil {
			return err
		}
	}
	p.c.listingDone.Store(true)
	if err := p.ex.Wait(ctx); err != nil {
		return err
	}
	if len(marks) > 0 {
		marks[len(marks)-1].done(ctx)
	}
	if !orphans {
		return nil
	}
	// Orphans are looked for once every queue job is done, so a queue
	// deleted by this pass is judged by the rows it left.
	for i, t := range tables {
		pos := p.cfg.Resume.position(WalkOrphans, t)
		if pos.Done {
			continue
		}
		if err := p.scanOrphans(ctx, t, pos, orphanMarks[i]); err != nil {
			return err
		}
		if err := p.ex.Wait(ctx); err != nil {
			return err
		}
		orphanMarks[i].done(ctx)
	}
	return nil
}

// start is where a walk from pos begins: after its position, or at the
// first hash of the pass's range.
func (p *pass) start(pos WalkPosition) *store.QueueKey {
	if pos.After != nil {
		k := *pos.After
		return &k
	}
	return p.rng.Start()
}

// clip drops the keys past the pass's range from a page of n listed keys,
// key(i) giving the i-th, and reports how many remain and whether the
// listing goes on after them.
func (p *pass) clip(n, limit int, key func(i int) store.QueueKey) (keep int, more bool) {
	for i := 0; i < n; i++ {
		if key(i).RangeHash > p.rng.Hi {
			return i, false
		}
	}
	return n, n >= limit
}

// commitPattern sets the store's commit sharing for a pass at the pace in
// effect, and returns how many window jobs a page's queues go to and how
// many deletes a window keeps running. Only PaceFull shares commits
// (store.CommitSwitch): beside a live Temporal server on a rollback-journal
// SQLite file they made its workflows 70-130 % slower. The pattern holds
// for the whole pass, whatever pace Tune sets later.
func (s *Scavenger) commitPattern() (spread, pipeline int) {
	full := s.tune.pace() == PaceFull
	if sw, ok := s.st.(store.CommitSwitch); ok {
		sw.ShareCommits(full)
	}
	if cs, ok := s.st.(store.CommitSharer); ok && full && cs.SharesCommits() {
		return s.cfg.Workers, windowPipeline
	}
	return 1, 1
}

// windowPipeline is how many deletes a window keeps running while it
// scans on where the store shares commits: with two, the next delete joins
// the commit the last one waits for. Elsewhere a window runs one: on
// MariaDB beside a live workload at half its capacity, two (a second
// connection per window) took the workload's p99 from 77ms to 684ms for
// the same pass time (bench --live-load).
const windowPipeline = 2

// minWindow is the fewest queues a page is split into a window of: a
// window costs a few statements whatever its size.
const minWindow = 16

// windows splits a page's window queues into p.spread windows of at least
// minWindow queues each (none for no queues).
func (p *pass) windows(queues []*queueJob) [][]*queueJob {
	n := min(p.spread, len(queues)/minWindow)
	if n <= 1 {
		if len(queues) == 0 {
			return nil
		}
		return [][]*queueJob{queues}
	}
	out := make([][]*queueJob, 0, n)
	for i := range n {
		out = append(out, queues[i*len(queues)/n:(i+1)*len(queues)/n])
	}
	return out
}

// listQueues walks the queue table t in primary-key order from pos and
// submits one job per row, but for the rows of pos's finished runs (a
// resumed walk: an earlier pass finished them). Submit blocks while the
// workers are busy, so at most a page and the run queue of rows are in
// memory.
func (p *pass) listQueues(ctx context.Context, t store.Table, pos WalkPosition, m *walkMark) error {
	after := p.start(pos)
	for {
		var rows []store.QueueRow
		err := p.retry(ctx, "list queues", func(ctx context.Context) (err error) {
			rows, err = p.st.ListQueues(ctx, t, after, p.cfg.ListPageSize)
			return err
		})
		if err != nil {
			return fmt.Errorf("list %s queues: %w", t, err)
		}
		n, more := p.clip(len(rows), p.cfg.ListPageSize, func(i int) store.QueueKey { return rows[i].QueueKey })
		rows = rows[:n]
		if n == 0 {
			m.end(ctx)
			return nil
		}
		keys := make([]store.QueueKey, len(rows))
		for i, r := range rows {
			keys[i] = r.QueueKey
		}
		pg := m.open(keys, !more)
		// In tqscavenger's mode, queues with one subqueue are scavenged a
		// page at a time by a windowJob; the rest, and every queue in
		// Temporal's mode, by a queueJob each. Each queue moves the
		// walk's mark when it is finished (a window's queues one by one).
		var window []*queueJob
		for i, r := range rows {
			if pos.finishedAt(r.QueueKey) {
				m.row(pg, i).finished(ctx)
				continue
			}
			j := p.newQueueJob(t, r)
			j.row = m.row(pg, i)
			if !p.book.inScope(j.key, j.name) {
				j.row.finished(ctx)
				continue
			}
			p.c.table(t).queuesListed.Add(1)
			if p.cfg.Compat != CompatTemporal && len(j.subs) == 1 && p.closed == nil {
				window = append(window, j)
				continue
			}
			if err := p.ex.Submit(ctx, m.track(j, j.row)); err != nil {
				return err
			}
		}
		for _, w := range p.windows(window) {
			if err := p.ex.Submit(ctx, p.newWindowJob(t, w)); err != nil {
				return err
			}
		}
		k := rows[len(rows)-1].QueueKey
		m.seal(ctx, pg)
		if !more {
			return nil
		}
		after = &k
	}
}
