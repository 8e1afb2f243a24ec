// Package scavenger decides what to delete from a Temporal task store: it
// walks every task queue, deletes expired tasks, and deletes queues that
// are empty and idle past a grace period, fenced on their range_id.
//
// It owns the policy only. Concurrency comes from package executor; the
// pace (the gentle pace's controller and its signals, the rate limits, the
// adaptive batch size) from package internal/pace, which this package
// wires into every pass (pacestore.go); and every statement goes through
// the store.Store interface, so the same pass runs on any engine (package
// sqlstore) or on a test wrapper around one.
package scavenger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/executor"
	"github.com/tqscavenger/tqscavenger/internal/pace"
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
	pacer *pace.Pacer
	// ckpt is the running pass's checkpointer (nil: none, or no pass).
	ckpt *checkpointer

	// onPacer, if set (by a test in this package, never by New),
	// receives the Pacer of each pass, so the test can read its counters;
	// an injected hook, not a package global, so tests running in
	// parallel do not see each other's passes.
	onPacer func(*pace.Pacer)
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
	c.MaxStatementsPerSecond, c.MaxDeletesPerSecond = s.tune.stmts.Rate(), s.tune.rows.Rate()
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
		st.Pace = paceState(pacer.Snapshot())
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

	p := &pass{cfg: s.cfg, book: s.book, tune: s.tune, c: c, ex: ex, batch: pace.NewBatcher(s.cfg.TaskBatchSize, s.cfg.SlowStatement), retries: retryLog{log: s.cfg.Logger}}
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
	stopSignals := s.startSignals(ctx, p.pacer)
	err := p.run(ctx)
	stopSignals()
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

// closed reports whether Shutdown has been called.
func (s *Scavenger) closed() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
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
