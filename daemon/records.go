package daemon

// What the daemon remembers of its passes: the record of each attempt, the
// totals the metrics read, and the snapshot the status page shows.

import (
	"cmp"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

// Outcome is how an attempted pass ended.
type Outcome string

// The outcomes of a pass.
const (
	Completed Outcome = Outcome(scavenger.Completed)
	// CompletedBadRows: completed, but some rows could not be read.
	CompletedBadRows Outcome = Outcome(scavenger.CompletedBadRows)
	Failed           Outcome = Outcome(scavenger.Failed)
	// Interrupted: shutdown began during the pass. It is neither a
	// success nor a failure.
	Interrupted Outcome = Outcome(scavenger.Interrupted)
	// Skipped: the lock was held by another scavenger or could not be
	// taken; no pass ran.
	Skipped Outcome = "skipped"
)

// PassRecord is one attempted pass.
type PassRecord struct {
	// ID numbers the attempts of this daemon from 1.
	ID int64
	// Start and End bound the pass, and lie inside the time the lock was
	// held. For a skipped pass they are the time of the attempt.
	Start, End time.Time
	Outcome    Outcome
	// Err says why a pass failed or was skipped.
	Err string
	// Cause classifies a failed pass's error (see failureCause); "" for
	// any other outcome.
	Cause string
	// Stats are the pass's counts (BadRows left out; see the log).
	Stats scavenger.Stats
	// DryRun: the pass was a dry run. It deleted nothing (Stats count
	// what it would have) and is counted apart from real passes.
	DryRun bool
}

// Duration is how long the pass ran.
func (r PassRecord) Duration() time.Duration { return r.End.Sub(r.Start) }

// skip reasons, for the skipped-passes counter.
type skipReason int

const (
	skipLockHeld skipReason = iota + 1
	skipLockError
)

// finish records an attempt and folds a pass's counts into the totals, in
// one critical section with clearing the current pass, so that a scrape
// counts them exactly once.
func (d *Daemon) finish(rec PassRecord, skip skipReason) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.current = nil
	switch skip {
	case skipLockHeld:
		d.totals.skippedLockHeld++
	case skipLockError:
		d.totals.skippedLockError++
	case 0:
		if rec.DryRun {
			d.totals.add(rec.Stats)
			d.totals.dryRuns[rec.Outcome]++
			if rec.Outcome == Completed || rec.Outcome == CompletedBadRows {
				d.lastDryOK = &rec
			}
			d.lastRun = &rec
			break
		}
		d.totals.add(rec.Stats)
		switch rec.Outcome {
		case Completed, CompletedBadRows:
			d.totals.completed++
			d.lastOK = &rec
		case Interrupted:
			d.totals.interrupted++
		default:
			d.totals.failed++
			d.failedByCause[cmp.Or(rec.Cause, string(scavenger.CauseError))]++
		}
		d.lastRun = &rec
	}
	d.passes = append(d.passes, rec)
	if n := len(d.passes) - d.cfg.History; n > 0 {
		d.passes = append(d.passes[:0:0], d.passes[n:]...)
	}
}

// Passes returns the attempts the daemon remembers, oldest first.
func (d *Daemon) Passes() []PassRecord {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]PassRecord(nil), d.passes...)
}

// Progress is the state of the running pass.
type Progress struct {
	ID      int64
	Started time.Time
	Stats   scavenger.Stats
}

// Status is a snapshot of the daemon, for the status page and tests.
type Status struct {
	State State
	// Since is when the daemon was created.
	Since time.Time
	// Current is the running pass, or nil.
	Current *Progress
	// Next is when the next pass is due; zero while a pass runs or after
	// the daemon stopped.
	Next time.Time
	// Passes lists the last attempts, newest first.
	Passes []PassRecord
	// LastSuccess is the end of the last completed pass; zero if none.
	// Dry runs do not count: LastDryRun is the end of the last completed
	// dry run.
	LastSuccess, LastDryRun time.Time
	// DryRun: the passes are dry runs (the configuration in effect).
	DryRun   bool
	Schedule string
	Jitter   time.Duration
	DSN      string
	Settings []Setting
	// ConfigLoaded is when the settings in effect were loaded: at start or
	// at the last applied reload.
	ConfigLoaded time.Time
	// LastReload is the last reload, applied or refused; nil if none.
	LastReload *ReloadRecord
	Build      Build
}

// Status returns a snapshot of the daemon.
func (d *Daemon) Status() Status {
	d.mu.Lock()
	s := Status{
		State:    d.state,
		Since:    d.created,
		Next:     d.next,
		Schedule: d.cfg.Schedule.String(),
		Jitter:   d.cfg.Jitter,
		DSN:      d.cfg.DSN,
		Settings: d.cfg.Settings,
		Build:    d.cfg.Build,

		ConfigLoaded: d.loaded,
		LastReload:   d.lastReload,
	}
	for i := len(d.passes) - 1; i >= 0; i-- {
		s.Passes = append(s.Passes, d.passes[i])
	}
	if d.lastOK != nil {
		s.LastSuccess = d.lastOK.End
	}
	if d.lastDryOK != nil {
		s.LastDryRun = d.lastDryOK.End
	}
	s.DryRun = d.cfg.Scavenger.DryRun
	cur, id, at := d.current, d.currentID, d.currentAt
	d.mu.Unlock()
	if cur != nil {
		s.Current = &Progress{ID: id, Started: at, Stats: cur.Stats()}
	}
	return s
}
