package daemon

// One attempt at a pass: set it up through scavenger.Begin (the lock,
// the schema check), run it, shut it down gracefully if the daemon stops
// meanwhile, release the lock, and record the outcome.

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
)

// pass makes one attempt: take the lock, check the schema, run a pass,
// release the lock. Every outcome is recorded; none stops the daemon.
func (d *Daemon) pass(ctx context.Context) {
	id, cfg := d.startPass()
	log := d.log.With("pass", id)
	cfg.Logger = log
	// A scrape's lock probe (heldSeconds) waits while the pass takes the lock.
	d.lock.mu.Lock()
	p, err := scavenger.Begin(ctx, d.cfg.DB, cfg, scavenger.PassOptions{})
	d.lock.lockAttempt(d.clock.Now(), errors.Is(err, store.ErrLocked))
	d.lock.mu.Unlock()
	if err != nil {
		d.setupFailed(ctx, id, cfg.DryRun, log, err)
		return
	}
	defer release(p, log)
	// The pass starts once it holds the lock: replicas' passes never
	// overlap in their records (TestReplicasNeverOverlap).
	start := d.clock.Now()
	d.running(p, id, start, cfg)
	st, err := d.run(ctx, p, log)
	rec := passRecord(id, start, d.clock.Now(), st, err)
	rec.DryRun = cfg.DryRun
	d.finish(rec, 0)
}

// startPass numbers the pass and returns the configuration at its start:
// a reload during it changes only what Reconfigure says it does. The lock
// is the partition's of this snapshot, so the pass runs over the range it
// locked.
func (d *Daemon) startPass() (int64, scavenger.Config) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lastID++
	d.state = Running
	d.next = time.Time{}
	return d.lastID, d.cfg.Scavenger
}

// setupFailed records a pass Begin refused: skipped if the lock could not
// be taken (held by another tqscavenger, or an error), failed if the
// schema check failed (a dry run's not counted among passes started). A daemon stopping meanwhile records nothing.
func (d *Daemon) setupFailed(ctx context.Context, id int64, dryRun bool, log *slog.Logger, err error) {
	if ctx.Err() != nil {
		return
	}
	at := d.clock.Now()
	var se *scavenger.SetupError
	if errors.As(err, &se) && se.Step == scavenger.StepSchema {
		log.Error(MsgSchemaFailed, "err", err)
		d.mu.Lock()
		if !dryRun {
			d.totals.started++
		}
		d.mu.Unlock()
		d.finish(PassRecord{ID: id, Start: at, End: at, Outcome: Failed, Err: err.Error(), Cause: CauseSchema, DryRun: dryRun}, 0)
		return
	}
	rec := PassRecord{ID: id, Start: at, End: at, Outcome: Skipped, Err: err.Error()}
	if errors.Is(err, store.ErrLocked) {
		log.Info(MsgLockHeld)
		rec.Err = "lock held by another tqscavenger"
		d.finish(rec, skipLockHeld)
		return
	}
	log.Error(MsgLockError, "err", err)
	d.finish(rec, skipLockError)
}

// running makes p the daemon's current pass, the settings reloaded since
// cfg was read applied at once.
func (d *Daemon) running(p *scavenger.Pass, id int64, start time.Time, cfg scavenger.Config) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t := d.cfg.Scavenger; !sameTunables(t, cfg) {
		_ = p.Tune(t)
	}
	d.current, d.currentID, d.currentAt = p.Scavenger, id, start
	if !cfg.DryRun {
		d.totals.started++
	}
}

// release releases the pass's lock.
func release(p *scavenger.Pass, log *slog.Logger) {
	if err := p.Close(); err != nil {
		log.Warn("releasing the lock", "err", err)
		return
	}
	log.Debug("lock released")
}

// run runs the pass under a context that shutdown does not cancel: when
// ctx ends, the pass is shut down gracefully instead, its statements in
// flight given until the shutdown timeout.
func (d *Daemon) run(ctx context.Context, p *scavenger.Pass, log *slog.Logger) (scavenger.Stats, error) {
	type result struct {
		st  scavenger.Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := p.Run(context.WithoutCancel(ctx))
		done <- result{st, err}
	}()
	select {
	case r := <-done:
		return r.st, r.err
	case <-ctx.Done():
	}
	d.drain(p.Scavenger, log)
	r := <-done
	return r.st, r.err
}

// drain shuts the running pass down, cancelling its statements once the
// shutdown timeout (as a reload may have changed it) has passed.
func (d *Daemon) drain(sc *scavenger.Scavenger, log *slog.Logger) {
	d.setState(Stopping, time.Time{})
	d.log.Info(MsgShuttingDown)
	d.mu.Lock()
	shutdownTimeout := d.cfg.ShutdownTimeout
	d.mu.Unlock()
	log.Info(MsgDraining, "timeout", shutdownTimeout)
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timeout, stop := d.clock.NewTimer(shutdownTimeout)
	defer stop()
	go func() {
		select {
		case <-timeout:
			log.Warn(MsgShutdownTimeout)
			cancel()
		case <-sctx.Done():
		}
	}()
	if err := sc.Shutdown(sctx); err != nil {
		log.Warn("shutdown cut the pass short", "err", err)
	}
}

// passRecord is the record of pass id, run from start to end, that ended
// with st and err.
func passRecord(id int64, start, end time.Time, st scavenger.Stats, err error) PassRecord {
	rec := PassRecord{ID: id, Start: start, End: end, Outcome: Outcome(st.Outcome), Stats: st}
	rec.Stats.BadRows = nil
	switch {
	case rec.Outcome == Interrupted:
		rec.Err = "shutdown"
	case err != nil:
		rec.Outcome, rec.Err, rec.Cause = Failed, err.Error(), failureCause(err)
	}
	return rec
}

// sameTunables reports whether a and b have the same settings
// scavenger.Scavenger.Tune changes.
func sameTunables(a, b scavenger.Config) bool {
	return a.MaxDeletesPerSecond == b.MaxDeletesPerSecond && a.MaxStatementsPerSecond == b.MaxStatementsPerSecond &&
		a.RetryInitial == b.RetryInitial && a.RetryMax == b.RetryMax && a.RetryFor == b.RetryFor &&
		a.WithDefaults().Mode == b.WithDefaults().Mode
}
