package daemon

// Live reconfiguration: the settings a daemon takes without a restart, and
// the record of each reload for the status page and the metrics.

import (
	"fmt"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

// Reload results: the result label of tqscavenger_config_reloads_total.
const (
	// ReloadApplied is a reload whose settings are in effect.
	ReloadApplied = "applied"
	// ReloadInvalid is a reload refused for a bad file or value; the
	// settings in effect did not change.
	ReloadInvalid = "invalid"
	// ReloadNeedsRestart is a reload refused because it changes a setting
	// only a restart applies (the database, say); the settings in effect
	// did not change.
	ReloadNeedsRestart = "needs_restart"
)

var reloadResults = []string{ReloadApplied, ReloadInvalid, ReloadNeedsRestart}

// MsgReloaded and MsgReloadRefused are logged at each reload.
const (
	MsgReloaded      = "configuration reloaded"
	MsgReloadRefused = "configuration reload refused, the settings in effect are kept"
)

// Reconfig is what a running daemon's configuration may change to: see
// Reconfigure. The database, and so the lock, the listener and the
// history's length, stay as New set them: they change with a restart.
type Reconfig struct {
	// Scavenger configures the passes, as Config.Scavenger.
	Scavenger scavenger.Config
	// Schedule and Jitter replace Config's.
	Schedule Schedule
	Jitter   time.Duration
	// ShutdownTimeout replaces Config's; 0 keeps it.
	ShutdownTimeout time.Duration
	// Settings is the configuration now in effect, for the status page.
	Settings []Setting
}

// ReloadRecord is the last reload, for the status page.
type ReloadRecord struct {
	At     time.Time
	Result string // ReloadApplied, ReloadInvalid or ReloadNeedsRestart
	Err    string // why it was refused
}

// Reconfigure applies c to the running daemon:
//
//   - the rate limits and the retry budget at once, on the running pass
//     too (scavenger.Scavenger.Tune), and the pace from the running
//     pass's next statement (its commit pattern stays the one it started
//     with);
//   - every other pass setting (grace, modes, orphans, protected prefixes,
//     scope, batch sizes, workers) from the next pass: a running pass
//     keeps what it started with, so it never deletes by two rules;
//   - the schedule and jitter from now: the next pass is planned again
//     (one that is running finishes first);
//   - the shutdown timeout from the next shutdown.
//
// An invalid c is refused, counted as ReloadInvalid, and nothing changes.
// It is safe to call from any goroutine.
func (d *Daemon) Reconfigure(c Reconfig) error {
	err := c.Scavenger.Validate()
	switch {
	case err != nil:
	case c.Schedule == nil:
		err = fmt.Errorf("no schedule")
	case c.Jitter < 0:
		err = fmt.Errorf("negative jitter %s", c.Jitter)
	}
	if err != nil {
		err = fmt.Errorf("daemon: %w", err)
		d.ReloadRefused(ReloadInvalid, err)
		return err
	}
	d.mu.Lock()
	d.cfg.Scavenger, d.cfg.Schedule, d.cfg.Jitter, d.cfg.Settings = c.Scavenger, c.Schedule, c.Jitter, c.Settings
	if c.ShutdownTimeout > 0 {
		d.cfg.ShutdownTimeout = c.ShutdownTimeout
	}
	d.schedVersion++
	now := d.clock.Now()
	d.loaded = now
	d.reloads[ReloadApplied]++
	d.lastReload = &ReloadRecord{At: now, Result: ReloadApplied}
	if d.current != nil {
		// Under the lock, so that two reloads reach the pass in order.
		// Tune takes the limits, the retry budget and the pace alone; the config
		// was validated above.
		_ = d.current.Tune(c.Scavenger)
	}
	d.mu.Unlock()
	// Wake Run to plan the next pass on the new schedule.
	select {
	case d.replan <- struct{}{}:
	default:
	}
	return nil
}

// ReloadRefused records a reload its caller refused (result
// ReloadInvalid or ReloadNeedsRestart) with why, for the status page and
// the metrics. The settings in effect do not change.
func (d *Daemon) ReloadRefused(result string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reloads[result]++
	d.lastReload = &ReloadRecord{At: d.clock.Now(), Result: result, Err: err.Error()}
}
