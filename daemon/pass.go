package daemon

// One attempt at a pass: take the lock, check the schema, run the pass,
// shut it down gracefully if the daemon stops meanwhile, release the lock,
// and record the outcome.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
)

// pass makes one attempt: take the lock, check the schema, run a pass,
// release the lock. Every outcome is recorded; none stops the daemon.
func (d *Daemon) pass(ctx context.Context) {
	d.mu.Lock()
	d.lastID++
	id := d.lastID
	d.state = Running
	d.next = time.Time{}
	// The configuration at the pass's start: a reload during it changes
	// only what Reconfigure says it does. The lock is the partition's of
	// this snapshot, so the pass runs over the range it locked.
	cfg, shutdownTimeout := d.cfg.Scavenger, d.cfg.ShutdownTimeout
	d.mu.Unlock()
	log := d.log.With("pass", id)

	lock, err := d.lock(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		at := d.clock.Now()
		rec := PassRecord{ID: id, Start: at, End: at, Outcome: Skipped, Err: err.Error()}
		if errors.Is(err, store.ErrLocked) {
			log.Info(MsgLockHeld)
			rec.Err = "lock held by another tqscavenger"
			d.finish(rec, skipLockHeld)
		} else {
			log.Error(MsgLockError, "err", err)
			d.finish(rec, skipLockError)
		}
		return
	}
	defer func() {
		if err := lock.Unlock(); err != nil {
			log.Warn("releasing the lock", "err", err)
			return
		}
		log.Debug("lock released")
	}()

	cfg.Logger = log
	if !cfg.DryRun {
		// The pass checks the lock as it goes, and stops if it is lost.
		cfg.Lock = lock
	}
	start := d.clock.Now()
	if cfg.Tables == nil {
		info, err := d.cfg.DB.Check(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Error(MsgSchemaFailed, "err", err)
			d.mu.Lock()
			if !cfg.DryRun {
				d.totals.started++
			}
			d.mu.Unlock()
			d.finish(PassRecord{ID: id, Start: start, End: d.clock.Now(), Outcome: Failed, Err: err.Error(), DryRun: cfg.DryRun}, 0)
			return
		}
		cfg.Tables = info.Tables
	}

	sc := scavenger.New(d.cfg.DB, cfg)
	d.mu.Lock()
	if t := d.cfg.Scavenger; !sameTunables(t, cfg) {
		// Reloaded since cfg was read: the tunables apply at once.
		_ = sc.Tune(t)
	}
	d.current, d.currentID, d.currentAt = sc, id, start
	if !cfg.DryRun {
		d.totals.started++
	}
	d.mu.Unlock()

	// The pass runs under a context that shutdown does not cancel: when ctx
	// ends, the pass is shut down gracefully instead, its statements in
	// flight given until the shutdown timeout.
	type result struct {
		st  scavenger.Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := sc.Run(context.WithoutCancel(ctx))
		done <- result{st, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		d.setState(Stopping, time.Time{})
		d.log.Info(MsgShuttingDown)
		d.mu.Lock()
		shutdownTimeout = d.cfg.ShutdownTimeout // a reload may have changed it
		d.mu.Unlock()
		log.Info(MsgDraining, "timeout", shutdownTimeout)
		sctx, cancel := context.WithCancel(context.Background())
		timeout, stop := d.clock.NewTimer(shutdownTimeout)
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
		stop()
		cancel()
		r = <-done
	}
	rec := PassRecord{ID: id, Start: start, End: d.clock.Now(), Outcome: Outcome(r.st.Outcome), Stats: r.st, DryRun: cfg.DryRun}
	rec.Stats.BadRows = nil
	switch {
	case rec.Outcome == Interrupted:
		rec.Err = "shutdown"
	case r.err != nil:
		rec.Outcome, rec.Err = Failed, r.err.Error()
	}
	d.finish(rec, 0)
}

// lock takes the lock of the pass's part of the hash space: the whole
// pass's lock, or the partition's range lock. A dry run takes none: its
// store refuses every write, so it neither waits for a real pass nor keeps
// one out.
func (d *Daemon) lock(ctx context.Context, cfg scavenger.Config) (store.Lock, error) {
	p := cfg.Partition
	if cfg.DryRun {
		return noLock{}, nil
	}
	if p.Whole() {
		return d.cfg.DB.Lock(ctx, false)
	}
	rl, ok := d.cfg.DB.(store.RangeLocker)
	if !ok {
		return nil, fmt.Errorf("partition %s: the database (%T) has no range locks", p, d.cfg.DB)
	}
	return rl.LockRange(ctx, p.Range(), false)
}

// noLock is the lock of a pass that takes none: a dry run's.
type noLock struct{}

func (noLock) Unlock() error               { return nil }
func (noLock) Check(context.Context) error { return nil }

// sameTunables reports whether a and b have the same settings
// scavenger.Scavenger.Tune changes.
func sameTunables(a, b scavenger.Config) bool {
	return a.MaxDeletesPerSecond == b.MaxDeletesPerSecond && a.MaxStatementsPerSecond == b.MaxStatementsPerSecond &&
		a.RetryInitial == b.RetryInitial && a.RetryMax == b.RetryMax && a.RetryFor == b.RetryFor
}
