package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// The database side of the live load: what the server spent on each
// round's pass, measured by a cost sampler (dbcost.go) over the round's
// window, and the phase's figures from its rounds'.
//
// The server's CPU and log are server-wide: the workload's and the
// background's too. A phase's figure is what a round spent beyond the
// no-pass phase's rate in the same repetition (the median of its rounds'
// figure per second), over the round's span.

// LiveRoundCost is the database side of one round's window.
type LiveRoundCost struct {
	// Cost is the sampler's (nil figures unavailable, see Cost.Why).
	// On SQLite its WorkloadBusyCommits is BusyOps.
	Cost Cost
	// FailedOps is how many of the workload's operations due within the
	// window failed; BusyOps how many of them failed on SQLITE_BUSY
	// (SQLite's lab workloads only: 0 elsewhere).
	FailedOps, BusyOps int64
}

// LiveDB is a phase's database-side figures in one repetition, each
// from its rounds (livecost.go): the pass's, and on SQLite the
// workload's failures.
type LiveDB struct {
	// PassCPU is the CPU time of the pass's sessions, seconds
	// (PostgreSQL, MariaDB).
	PassCPU LiveDBFigure
	// ServerCPU is the whole server's CPU time beyond the no-pass rate,
	// seconds (PostgreSQL, MariaDB).
	ServerCPU LiveDBFigure
	// LogMB is the WAL (PostgreSQL) or redo log (MariaDB) written beyond
	// the no-pass rate, MB (10⁶ bytes).
	LogMB LiveDBFigure
	// Blocked is the time other sessions spent waiting on the pass's
	// locks, seconds, sampled (PostgreSQL, MariaDB).
	Blocked LiveDBFigure
	// RunDelay is the time the server's processes or threads other than
	// the pass's waited for a CPU beyond the no-pass rate, seconds
	// (PostgreSQL, MariaDB).
	RunDelay LiveDBFigure
	// WALWait is the time the other sessions spent waiting on the WAL
	// (its insert locks, writes and flushes) beyond the no-pass rate,
	// seconds, sampled (PostgreSQL).
	WALWait LiveDBFigure
	// WriteLock is the share of the window the pass held the write lock,
	// 0 to 1 (SQLite).
	WriteLock LiveDBFigure
	// BusyOps and FailedOps are the workload's operations that failed on
	// SQLITE_BUSY, and that failed at all, within the window (SQLite).
	BusyOps, FailedOps LiveDBFigure
}

// LiveDBFigure is one database-side figure of a phase in one repetition.
type LiveDBFigure struct {
	// Rounds holds each round's value, where it was measured.
	Rounds []float64
	// Median is the median of Rounds, when there are any.
	Median float64
	// Why says why a round's value is missing (the first reason); "" if
	// none is.
	Why string
}

// ok reports whether any round measured the figure.
func (f LiveDBFigure) ok() bool { return len(f.Rounds) > 0 }

// add keeps a round's value v, or why it is missing when why is not "".
func (f *LiveDBFigure) add(v float64, why string) {
	if why != "" {
		if f.Why == "" {
			f.Why = why
		}
		return
	}
	f.Rounds = append(f.Rounds, v)
	f.Median = medianOf(f.Rounds)
}

// medianOf is the median of vs (the lower middle one of an even count, as
// the tables' other medians); 0 for none.
func medianOf(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// costFigures are the figures a sampler fails to start without: every
// one it has.
var costFigures = []string{"PassCPU", "ServerCPU", "WALBytes", "BlockedSeconds", "PassBlockedSeconds", "RunDelay", "Waits", "WriteLockSeconds"}

// roundCost watches the database side of one round's window.
type roundCost struct {
	engine sqlstore.Engine
	s      *costSampler
	err    error // startCost's: every figure unavailable
}

// watchCost starts a sampler on t's database for the pass of its phase:
// the processes under the lab that run the binary under test; no one in
// the no-pass phase, where only the server's figures count.
func (lr *liveRun) watchCost(ctx context.Context, t roundTarget) *roundCost {
	var id passIdent
	if t.phase != LiveNone {
		id.Exe = lr.r.o.Binaries[0].Path
	}
	dsn := t.adminDSN
	if t.engine == sqlstore.SQLite {
		dsn = t.dsn // the copy's file
	}
	rc := &roundCost{engine: t.engine}
	rc.s, rc.err = startCost(ctx, t.engine, dsn, id)
	return rc
}

// stop ends the sampling and returns the window's cost.
func (rc *roundCost) stop() Cost {
	if rc.err == nil {
		c, err := rc.s.stop()
		if err == nil {
			return c
		}
		rc.err = err
	}
	c := Cost{Engine: rc.engine}
	for _, f := range costFigures {
		c.unavailable(f, rc.err)
	}
	return c
}

// roundCostOf is the round's cost c with the workload's failures among
// ss, its samples due within the window.
func roundCostOf(c Cost, ss []sample) *LiveRoundCost {
	rc := &LiveRoundCost{Cost: c}
	for _, s := range ss {
		if !s.ok {
			rc.FailedOps++
		}
		if s.busy {
			rc.BusyOps++
		}
	}
	if c.Engine == sqlstore.SQLite {
		busy := rc.BusyOps
		rc.Cost.WorkloadBusyCommits = &busy
	}
	return rc
}

// setDB sets the database-side figures of one repetition's phases, figs,
// from their rounds' costs: the server's CPU and log beyond the rates of
// the repetition's no-pass phase.
func setDB(figs []LiveFigure) {
	var cpuRate, logRate, delayRate, walRate LiveDBFigure
	if i := slices.IndexFunc(figs, func(f LiveFigure) bool { return f.Phase == LiveNone }); i >= 0 {
		cpuRate = baseRate(figs[i], "ServerCPU", serverCPU)
		logRate = baseRate(figs[i], "WALBytes", walBytes)
		delayRate = baseRate(figs[i], "RunDelay", runDelay)
		walRate = baseRate(figs[i], "Waits", walWait)
	} else {
		why := "no no-pass phase ran to take the server's rate without a pass from"
		cpuRate.Why, logRate.Why, delayRate.Why, walRate.Why = why, why, why, why
	}
	for j := range figs {
		f := &figs[j]
		f.DB = LiveDB{}
		for _, rc := range f.Costs {
			c := rc.Cost
			if f.Phase != LiveNone {
				f.DB.PassCPU.add(value(c.PassCPU, c, "PassCPU"))
				f.DB.ServerCPU.add(beyond(serverCPU(c), c, "ServerCPU", cpuRate, 1))
				f.DB.LogMB.add(beyond(walBytes(c), c, "WALBytes", logRate, 1e6))
				f.DB.Blocked.add(value(c.BlockedSeconds, c, "BlockedSeconds"))
				f.DB.RunDelay.add(beyond(runDelay(c), c, "RunDelay", delayRate, 1))
				f.DB.WALWait.add(beyond(walWait(c), c, "Waits", walRate, 1))
				if share, ok := c.WriteLockShare(); ok {
					f.DB.WriteLock.add(share, "")
				} else {
					f.DB.WriteLock.add(0, why(c, "WriteLockSeconds"))
				}
			}
			f.DB.BusyOps.add(float64(rc.BusyOps), "")
			f.DB.FailedOps.add(float64(rc.FailedOps), "")
		}
	}
}

// The server-wide figures of a Cost, nil where it has none, that a
// phase counts beyond the no-pass phase's rate.
func serverCPU(c Cost) *float64 { return c.ServerCPU }
func runDelay(c Cost) *float64  { return c.RunDelay }
func walBytes(c Cost) *float64 {
	if c.WALBytes == nil {
		return nil
	}
	b := float64(*c.WALBytes)
	return &b
}
func walWait(c Cost) *float64 {
	if c.Waits == nil {
		return nil
	}
	s := c.Waits["WAL"]
	return &s
}

// baseRate is figure name (read by get) per second over the rounds of f,
// the no-pass phase.
func baseRate(f LiveFigure, name string, get func(Cost) *float64) LiveDBFigure {
	var rate LiveDBFigure
	for _, rc := range f.Costs {
		c := rc.Cost
		if v, secs := get(c), c.Span.Seconds(); v != nil && secs > 0 {
			rate.add(*v/secs, "")
		} else {
			rate.add(0, "no pass: "+why(c, name))
		}
	}
	if len(f.Costs) == 0 {
		rate.Why = "the no-pass phase measured no round"
	}
	return rate
}

// value is figure v of c, or why it is missing.
func value(v *float64, c Cost, name string) (float64, string) {
	if v == nil {
		return 0, why(c, name)
	}
	return *v, ""
}

// beyond is figure v of c less rate over c's span, divided by unit; or
// why it is missing.
func beyond(v *float64, c Cost, name string, rate LiveDBFigure, unit float64) (float64, string) {
	switch {
	case v == nil:
		return 0, why(c, name)
	case !rate.ok():
		return 0, rate.Why
	}
	return (*v - rate.Median*c.Span.Seconds()) / unit, ""
}

// why is c's reason for figure name's absence.
func why(c Cost, name string) string {
	if w := c.Why[name]; w != "" {
		return w
	}
	return fmt.Sprintf("%s does not measure it", c.Engine)
}

// isSQLiteBusy reports whether err is SQLite's SQLITE_BUSY, or one of its
// extended codes: the driver's error has the code (the lab does not
// import the driver itself).
func isSQLiteBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 5 // SQLITE_BUSY
}
