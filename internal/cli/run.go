package cli

// tqscavenger run: one pass, its lock, its progress line and its exit
// status.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/tqscavenger/tqscavenger/daemon"
	progressline "github.com/tqscavenger/tqscavenger/internal/progress"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// runStatus is the exit status of a run that ended with the outcome o.
func runStatus(o scavenger.Outcome) int {
	switch o {
	case scavenger.Completed:
		return ExitOK
	case scavenger.CompletedBadRows:
		return ExitBadRows
	}
	return ExitFailed
}

// openChecked opens the store the flags name and refuses a database
// without usable task tables. Only the tables present and usable are
// scavenged.
func (c *connFlags) openChecked(ctx context.Context, inv *invocation, opts sqlstore.Options, warn func(string)) (*sqlstore.DB, store.SchemaInfo, error) {
	db, err := c.open(ctx, inv.fs, inv.origins, opts, warn)
	return checked(ctx, db, err)
}

// checked checks the task tables of db, just opened (unless err), and
// closes it if they cannot be used.
func checked(ctx context.Context, db *sqlstore.DB, err error) (*sqlstore.DB, store.SchemaInfo, error) {
	if err != nil {
		return nil, store.SchemaInfo{}, err
	}
	// Retried as a pass's is: a connection killed while the check runs is
	// no reason to refuse the database (logged by the default logger).
	info, err := scavenger.CheckSchema(ctx, db, scavenger.Config{})
	if err != nil {
		db.Close()
		return nil, info, err
	}
	return db, info, nil
}

// runCmd is run's flags: a pass's, and how the CLI shows it.
type runCmd struct {
	sf                          scavengeFlags
	cf                          connFlags
	lf                          logFlags
	cp                          checkpointFlags
	progress, statsJSON, output string
	waitLock, lockHeldOK        bool
}

// runFlags are run's flags; it returns the pass.
func runFlags(g *flagGroups) runFunc {
	var r runCmd
	r.cf.register(g.Conn)
	r.sf.register(g)
	g.Pace.BoolVar(&r.waitLock, "wait-lock", false, "wait for another running tqscavenger to finish instead of exiting")
	g.Pace.BoolVar(&r.lockHeldOK, "lock-held-ok", false, "exit 0, not 5, when another tqscavenger holds the lock: for a CronJob whose next run will try again")
	r.cp.register(g.Pace)
	r.lf.register(g.Output)
	outputFlag(g.Output, &r.output, "the pass's outcome and counts on stdout: text or json (logs go to stderr)")
	g.Output.StringVar(&r.progress, "progress", "auto", "progress line on stderr: auto (when a terminal), always or never")
	g.Output.StringVar(&r.statsJSON, "stats-json", "", "also write the pass's counts as JSON to this file (for scripts and the lab)")
	configFlag(g.Other)
	return r.run
}

// run makes one pass: the flags checked, the database opened, the pass
// set up by scavenger.Begin (lock, schema check), run under its progress
// line, its outcome printed and turned into the exit status.
func (r *runCmd) run(ctx context.Context, inv *invocation) error {
	cfg, err := r.config()
	if err != nil {
		return err
	}
	line, log, err := r.logger(inv.env.stderr)
	if err != nil {
		return err
	}
	cfg.Logger = log
	db, err := r.cf.open(ctx, inv.fs, inv.origins, r.sf.storeOptions(), func(w string) { log.Warn(w) })
	if err != nil {
		return r.failedStart(ctx, inv.env, cfg.DryRun, stepConnect, err)
	}
	defer db.Close()
	if err := r.cp.apply(&cfg); err != nil {
		return err
	}
	p, err := scavenger.Begin(ctx, db, cfg, scavenger.PassOptions{WaitLock: r.waitLock})
	if err != nil && r.lockHeldOK && errors.Is(err, store.ErrLocked) {
		return r.lockHeld(inv.env, log, cfg.DryRun, err)
	}
	if err != nil {
		var se *scavenger.SetupError
		step := "set-up"
		if errors.As(err, &se) {
			step = string(se.Step)
		}
		return r.failedStart(ctx, inv.env, cfg.DryRun, step, r.cp.refused(explainLocked(err, cfg.Partition)))
	}
	defer p.Close()
	if cfg.DryRun {
		log.Info("dry run: no lock taken, nothing is deleted")
	}
	st, err := r.runShown(ctx, inv.env, p, db, line)
	if err = r.cp.finish(st, err); err != nil {
		return err
	}
	inv.env.exit = runStatus(st.Outcome)
	return nil
}

// config checks run's own flags and returns the pass's config.
func (r *runCmd) config() (scavenger.Config, error) {
	if err := r.cp.check(); err != nil {
		return scavenger.Config{}, err
	}
	cfg, err := r.sf.config()
	if err != nil {
		return cfg, err
	}
	if cfg.DryRun && r.cp.file != "" {
		// A checkpoint is for resuming deletions; a dry run's would be
		// refused by the real pass (its settings differ), and writing or
		// removing the file would change what a real pass resumes from.
		return cfg, usagef("--checkpoint with --dry-run: a dry run never writes or removes a checkpoint; leave one of them out")
	}
	switch r.progress {
	case "auto", "always", "never":
	default:
		return cfg, usagef("--progress %q: use auto, always or never", r.progress)
	}
	return cfg, checkOutput(r.output)
}

// logger returns the progress line on stderr (nil: none) and the pass's
// logger. With a progress line, the log goes through it: the line is
// cleared before each log line and drawn again below it.
func (r *runCmd) logger(stderr io.Writer) (*progressline.Line, *slog.Logger, error) {
	line := progressLine(stderr, r.progress)
	logOut := stderr
	if line != nil {
		logOut = line
	}
	log, err := r.lf.logger(logOut)
	return line, log, err
}

// explainLocked says what to do about a lock another tqscavenger holds.
func explainLocked(err error, p scavenger.Partition) error {
	switch {
	case !errors.Is(err, store.ErrLocked):
		return err
	case !p.Whole():
		return fmt.Errorf("%w: another tqscavenger is running against partition %s of this database (a whole pass, or a partition that overlaps it); wait for it, or pass --wait-lock", err, p)
	}
	return fmt.Errorf("%w: another tqscavenger is running against this database; wait for it, or pass --wait-lock", err)
}

// lockHeld ends a run that found the lock held by another tqscavenger,
// with --lock-held-ok: a skipped pass, exit status 0. A scheduler that
// will run the pass again soon (a CronJob) need not count it as a failed
// run; the log says what holds the lock, and --output json and
// --stats-json get an outcome "skipped" with reason "lock_held", as
// serve's skipped passes are counted.
func (r *runCmd) lockHeld(e *env, log *slog.Logger, dryRun bool, err error) error {
	log.Info(daemon.MsgLockHeld, "lock", oneLine(err))
	m := statsMap(scavenger.Stats{Outcome: skipped, DryRun: dryRun}, 0)
	m["reason"] = "lock_held"
	m["lock"] = oneLine(err)
	m["exit_status"] = ExitOK
	if r.output == "json" {
		if werr := writeJSON(e.stdout, m); werr != nil {
			return werr
		}
	} else {
		fmt.Fprintln(e.stdout, "outcome: skipped (lock held by another tqscavenger)")
	}
	if r.statsJSON != "" {
		return writeStatsDoc(r.statsJSON, m)
	}
	return nil
}

// skipped is the outcome of a run --lock-held-ok that found the lock
// held: no pass ran. It is run's alone, never a pass's (scavenger.Outcome
// has no such value), and serve's word for the same.
const skipped scavenger.Outcome = scavenger.Outcome(daemon.Skipped)

// runShown runs the pass under its progress line and prints its outcome
// and counts (stdout, --stats-json).
func (r *runCmd) runShown(ctx context.Context, e *env, p *scavenger.Pass, db *sqlstore.DB, line *progressline.Line) (scavenger.Stats, error) {
	cfg := p.Config()
	var tables []string // names: a []store.Table would log as bytes
	for _, t := range cfg.Tables {
		tables = append(tables, t.String())
	}
	cfg.Logger.Info("scavenging", "db", db.DSN().String(), "tables", tables, "dry_run", cfg.DryRun)
	stopProgress := startProgress(line, p.Scavenger, cfg.DryRun)
	st, err := p.Run(ctx)
	stopProgress()
	if errors.Is(err, scavenger.ErrCheckpointMismatch) {
		// Bad input (a position past its table's last row), refused
		// before any work: no pass ran, so none is reported (no
		// "outcome":"failed" beside exit status 2).
		return st, err
	}
	if r.output == "json" {
		if werr := writeJSON(e.stdout, statsMap(st, db.Stats().Statements)); werr != nil && err == nil {
			err = werr
		}
	} else {
		printSummary(e.stdout, st)
	}
	if r.statsJSON != "" {
		if werr := writeStatsJSON(r.statsJSON, st, db.Stats().Statements); werr != nil && err == nil {
			err = werr
		}
	}
	return st, err
}
