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
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tqscavenger/tqscavenger/executor"
	"github.com/tqscavenger/tqscavenger/store"
)

// ErrRunning is returned by Start while a pass is running.
var ErrRunning = errors.New("scavenger: a pass is already running")

// Scavenger runs passes over one store. Use Run for one pass in the
// caller's goroutine, or Start, Stop and Wait to run it in the background.
type Scavenger struct {
	st  store.Store
	cfg Config

	mu      sync.Mutex
	c       *counters
	exec    *executor.Executor
	started time.Time
	cancel  context.CancelFunc
	done    chan struct{}
	result  Stats
	err     error
}

// New returns a Scavenger for st. It panics on nothing: an invalid cfg is
// reported by Run.
func New(st store.Store, cfg Config) *Scavenger {
	return &Scavenger{st: st, cfg: cfg.withDefaults()}
}

// Config returns the configuration in effect, defaults filled in.
func (s *Scavenger) Config() Config { return s.cfg }

// Start begins a pass in the background. Stop cancels it; Wait waits for
// its end.
func (s *Scavenger) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		select {
		case <-s.done:
		default:
			return ErrRunning
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.cancel, s.done = cancel, done
	go func() {
		defer close(done)
		defer cancel()
		st, err := s.Run(ctx)
		s.mu.Lock()
		s.result, s.err = st, err
		s.mu.Unlock()
	}()
	return nil
}

// Stop cancels a running pass, including its in-flight database calls,
// and returns when it has ended. It is a no-op when no pass runs.
func (s *Scavenger) Stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// Alive reports whether a pass started with Start is running.
func (s *Scavenger) Alive() bool {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Wait waits for the pass started with Start to end and returns its result.
func (s *Scavenger) Wait(ctx context.Context) (Stats, error) {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return Stats{}, errors.New("scavenger: no pass started")
	}
	select {
	case <-done:
	case <-ctx.Done():
		return s.Stats(), ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.result, s.err
}

// Stats returns the counts of the running pass, or of the last one.
func (s *Scavenger) Stats() Stats {
	s.mu.Lock()
	c, ex, started := s.c, s.exec, s.started
	s.mu.Unlock()
	if c == nil {
		return Stats{}
	}
	st := c.snapshot()
	st.Started = started
	if ex != nil {
		es := ex.Stats()
		st.Deferred, st.Dropped = es.Deferred, es.Dropped
	}
	if !started.IsZero() {
		st.Elapsed = time.Since(started)
	}
	return st
}

// Run makes one pass and returns its stats. The error is non-nil if the
// pass could not complete (the listing failed, or ctx ended); rows that
// could not be processed do not fail a pass: they are in Stats.BadRows and
// Stats.Errors.
func (s *Scavenger) Run(ctx context.Context) (Stats, error) {
	if err := s.cfg.Validate(); err != nil {
		return Stats{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ex := executor.New(executor.Config{
		Workers:     s.cfg.Workers,
		QueueSize:   s.cfg.Workers,
		MaxDeferred: s.cfg.MaxDeferred,
	})
	defer ex.Stop()
	c := &counters{}
	s.mu.Lock()
	s.c, s.exec, s.started = c, ex, time.Now()
	s.mu.Unlock()

	p := &pass{s: s, cfg: s.cfg, st: s.st, c: c, ex: ex, batch: newBatcher(s.cfg.TaskBatchSize, s.cfg.SlowStatement)}
	p.st = store.Chain(s.st, limit(s.cfg))
	log := s.cfg.Logger
	log.Info("scavenger pass started", "compat", string(s.cfg.Compat), "dry_run", s.cfg.DryRun)
	err := p.run(ctx)
	if err == nil {
		err = ex.Wait(ctx)
	}
	ex.Stop()
	st := s.Stats()
	st.Elapsed = time.Since(st.Started)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, executor.ErrStopped) {
			err = ctx.Err()
		}
		log.Error("scavenger pass failed", "err", err, "elapsed", st.Elapsed)
		return st, err
	}
	log.Info("scavenger pass completed",
		"queues_processed", st.QueuesProcessed, "queues_deleted", st.QueuesDeleted,
		"tasks_processed", st.TasksProcessed, "tasks_deleted", st.TasksDeleted,
		"bad_rows", st.BadRowCount, "errors", st.Errors, "elapsed", st.Elapsed)
	return st, nil
}

// pass is the state of one Run.
type pass struct {
	s   *Scavenger
	cfg Config
	st  store.Store
	c   *counters
	ex  *executor.Executor
	// present lists the task tables that exist, whether or not this pass
	// scavenges them.
	present []store.Table
	batch   *batcher
}

// timed runs a store call with retries and feeds its duration to the
// adaptive batch size.
func (p *pass) timed(ctx context.Context, f func() error) error {
	return p.retry(ctx, func() error {
		start := time.Now()
		err := f()
		p.batch.observe(time.Since(start), errors.Is(err, context.DeadlineExceeded))
		return err
	})
}

func (p *pass) run(ctx context.Context) error {
	var err error
	if err = p.retry(ctx, func() error { p.present, err = p.st.Tables(ctx); return err }); err != nil {
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
	for i, t := range tables {
		if i > 0 {
			if err := p.ex.Wait(ctx); err != nil {
				return err
			}
		}
		if err := p.listQueues(ctx, t); err != nil {
			return err
		}
	}
	if p.cfg.Orphans == OrphansNone || p.cfg.QueueGlob != "" {
		return nil
	}
	// Orphans are looked for once every queue job is done, so a queue
	// deleted by this pass is judged by the rows it left.
	if err := p.ex.Wait(ctx); err != nil {
		return err
	}
	for _, t := range tables {
		if err := p.scanOrphans(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// listQueues walks the queue table t in primary-key order and submits one
// job per row. Submit blocks while the workers are busy, so at most a page
// and the run queue of rows are in memory.
func (p *pass) listQueues(ctx context.Context, t store.Table) error {
	var after *store.QueueKey
	for {
		var rows []store.QueueRow
		err := p.retry(ctx, func() (err error) {
			rows, err = p.st.ListQueues(ctx, t, after, p.cfg.ListPageSize)
			return err
		})
		if err != nil {
			return fmt.Errorf("list %s queues: %w", t, err)
		}
		// In tqscavenger's mode, queues with one subqueue are scavenged a
		// page at a time by a windowJob; the rest, and every queue in
		// Temporal's mode, by a queueJob each.
		var window []*queueJob
		for _, r := range rows {
			j := p.newQueueJob(t, r)
			if !p.inScope(j) {
				continue
			}
			p.c.table(t).queuesListed.Add(1)
			if p.cfg.Compat != CompatTemporal && len(j.subs) == 1 {
				window = append(window, j)
				continue
			}
			if err := p.ex.Submit(ctx, j); err != nil {
				return err
			}
		}
		if len(window) > 0 {
			if err := p.ex.Submit(ctx, p.newWindowJob(t, window)); err != nil {
				return err
			}
		}
		if len(rows) < p.cfg.ListPageSize {
			return nil
		}
		k := rows[len(rows)-1].QueueKey
		after = &k
	}
}

// retry calls f until it succeeds, fails with an error that is not
// transient, or ctx ends. Transient errors back off exponentially with
// jitter, as Temporal's scavenger does, from RetryInitial to RetryMax.
func (p *pass) retry(ctx context.Context, f func() error) error {
	wait := p.cfg.RetryInitial
	for {
		err := f()
		if err == nil || !errors.Is(err, store.ErrTransient) || ctx.Err() != nil {
			return err
		}
		p.c.retries.Add(1)
		p.cfg.Logger.Debug("transient store error, retrying", "err", err, "backoff", wait)
		// Full jitter in [wait/2, wait) spreads retries of many workers.
		d := wait/2 + rand.N(wait/2+1)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(wait*2, p.cfg.RetryMax)
	}
}

func (p *pass) protected(name string) bool {
	for _, pre := range p.cfg.ProtectedPrefixes {
		if strings.HasPrefix(name, pre) {
			return true
		}
	}
	return false
}
