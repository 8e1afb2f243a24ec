package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/pflag"

	progressline "github.com/tqscavenger/tqscavenger/internal/progress"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// scavengeFlags are the flags that make a scavenger.Config, shared by run
// and serve.
type scavengeFlags struct {
	compat   string
	dryRun   bool
	now      string
	workers  int
	page     int
	batch    int
	perJob   int
	deferred int
	grace    time.Duration
	unsafe   bool
	retryMin time.Duration
	retryMax time.Duration
	retryFor time.Duration
	protect  multiFlag
	tables   string
	stmtTO   time.Duration
	slow     time.Duration
	maxConns int

	maxDeletes, maxStatements float64
	paceMode                  string
	temporalMetrics           multiFlag
	yield                     bool
	yieldFactor               float64

	pastLiveHead  bool
	closed        closedFlags
	belowAckLevel bool
	orphans       string
	namespaces    multiFlag
	queueGlob     string
	partition     string
}

// maxClockSkew is how far --now may be ahead of the real clock.
const maxClockSkew = time.Minute

// register registers the flags of a pass in their help groups.
func (f *scavengeFlags) register(g *flagGroups) {
	s, p := g.Scope, g.Pace
	s.StringVar(&f.compat, "compat", "", `"temporal": exactly Temporal's scavenger, with Temporal's knob values`)
	s.BoolVar(&f.dryRun, "dry-run", false, "report what would be deleted; delete nothing")
	durationVar(s, &f.grace, "grace", 0, "idle time before an empty queue may be deleted "+byMode(defaults.Grace, temporalConfig.Grace))
	s.BoolVar(&f.unsafe, "unsafe-short-grace", false, "allow a --grace under "+shortDuration(scavenger.MinGrace)+": only for a copy of a database no Temporal server uses (matching rewrites the row of a queue it holds only every 12h)")
	s.StringVar(&f.tables, "tables", "", "table versions to scavenge: v1, v2 or all (default all present; v1 with --compat=temporal)")
	s.Var(&f.namespaces, "namespace", "limit the pass to this namespace, by name (read from Temporal's namespaces table at the start of each pass) or id (UUID), repeatable")
	s.StringVar(&f.queueGlob, "queue", "", "limit the pass to queues whose name matches this glob (skips the orphan scan)")
	s.StringVar(&f.partition, "partition", "", "scavenge only part I of N of the range_hash space, as I/N (0/4 is the first of 4): disjoint parts run at once, overlapping ones exclude each other (default the whole space)")
	s.Var(&f.protect, "protect", `queue-name prefix never deleted, repeatable; "none" protects nothing (default "`+strings.Join(defaults.ProtectedPrefixes, ",")+`")`)
	s.BoolVar(&f.pastLiveHead, "past-live-head", false, "also delete expired tasks behind a live one (not with --compat=temporal)")
	f.closed.register(s)
	s.BoolVar(&f.belowAckLevel, "below-ack-level", false, "also delete tasks at or below their subqueue's ack level: already dispatched")
	s.StringVar(&f.orphans, "orphans", "expired", "orphaned tasks (no queue row) to delete: expired, all (also live ones older than --grace) or none (no orphan scan)")
	s.StringVar(&f.now, "now", "", "pretend the time is this RFC 3339 instant (reruns on fixtures, tests)")
	p.IntVar(&f.workers, "workers", 0, "jobs run at once "+byMode(defaults.Workers, temporalConfig.Workers))
	p.Float64Var(&f.maxDeletes, "max-deletes-per-second", 0, "cap on rows deleted per second, to protect the database (default unlimited)")
	p.Float64Var(&f.maxStatements, "max-statements-per-second", 0, "cap on statements per second (default unlimited)")
	durationVar(p, &f.stmtTO, "statement-timeout", 0, "bound on each statement; a timed-out statement is retried (default none)")
	p.IntVar(&f.maxConns, "max-conns", 0, "connections to PostgreSQL/MySQL (default "+strconv.Itoa(storeDefaults.MaxConns)+"; SQLite uses one); a gentle pass's probe and the lock take one more each, outside it")
	p.IntVar(&f.page, "list-page-size", 0, "queue rows read per listing statement "+byMode(defaults.ListPageSize, temporalConfig.ListPageSize))
	p.IntVar(&f.batch, "task-batch-size", 0, "most tasks read or deleted per statement; adapts below it "+byMode(defaults.TaskBatchSize, temporalConfig.TaskBatchSize))
	p.IntVar(&f.perJob, "tasks-per-job", 0, "tasks a job examines before yielding its worker "+byMode(defaults.TasksPerJob, temporalConfig.TasksPerJob))
	p.IntVar(&f.deferred, "max-deferred", 0, "cap of the deferred job list; beyond it jobs are dropped for the pass "+byMode(defaults.MaxDeferred, temporalConfig.MaxDeferred))
	durationVar(p, &f.slow, "slow-statement", 0, "a scan or delete slower than this halves the batch size "+byMode(defaults.SlowStatement, temporalConfig.SlowStatement))
	durationVar(p, &f.retryFor, "retry-for", 0, "how long one operation may retry transient errors, busy waits included, before its job fails "+byMode(defaults.RetryFor, temporalConfig.RetryFor))
	durationVar(p, &f.retryMin, "retry-initial", 0, "first backoff after a transient error "+byMode(defaults.RetryInitial, temporalConfig.RetryInitial))
	durationVar(p, &f.retryMax, "retry-max", 0, "backoff cap for transient errors "+byMode(defaults.RetryMax, temporalConfig.RetryMax))
	p.StringVar(&f.paceMode, "pace", string(scavenger.PaceGentle), paceHelp)
	p.Var(&f.temporalMetrics, "temporal-metrics", "Temporal's Prometheus endpoint (matching's, history's; repeatable): the gentle pace backs off on its persistence_latency of CreateTasks, GetTasks, UpdateWorkflowExecution and AppendHistoryNodes, scraped every second (default none)")
	p.BoolVar(&f.yield, "yield-to-load", false, "deprecated: the gentle pace, the default")
	p.Float64Var(&f.yieldFactor, "yield-factor", 0, fmt.Sprintf("how much slower than its quiet baseline a statement may get before the gentle pace backs off (default %g)", scavenger.DefaultYieldFactor))
	deprecate(p, "yield-to-load", "the gentle pace it asked for is the default (--pace gentle)")
	deprecate(p, "yield-factor", "the gentle pace (--pace gentle, the default) still reads it; it will go")
}

// paceHelp is --pace's help: the trade of each pace.
const paceHelp = `gentle: back off (fewer statements at once, pauses) while the database is slower than its quiet baseline, within a floor that keeps the pass moving; full: no controller, the fastest safe pass, for a maintenance window or a copy: on a rollback-journal SQLite file it also shares commits and pipelines deletes, which beside a live Temporal server made its workflows 70-130% slower. Both delete the same rows; serve takes a new pace at SIGHUP from the next statement`

// writeTxBudget is the shared write transaction's bound on a
// rollback-journal SQLite file (sqlstore.Options.WriteTxBudget), used only
// by passes at the full pace: the bound measured in docs/benchmarks.md.
const writeTxBudget = 100 * time.Millisecond

func nonNegative(name string, v int) error {
	if v < 0 {
		return usagef("--%s %d: must be positive (or 0 for the default)", name, v)
	}
	return nil
}

// config returns the pass's config the flags make, or a usage error: its
// parts each built in one place, the Rules (what is deleted: rules), the
// partition, the clock and the Pace.
func (f *scavengeFlags) config() (scavenger.Config, error) {
	var c scavenger.Config
	if err := f.checkNumbers(); err != nil {
		return c, err
	}
	var err error
	if c.Rules, err = f.rules(); err != nil {
		return c, err
	}
	if c.Partition, err = f.partitionOf(); err != nil {
		return c, err
	}
	if c.Now, err = f.clock(); err != nil {
		return c, err
	}
	if c.Pace, err = f.pace(); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, usageError{err}
	}
	return c, nil
}

// checkNumbers refuses negative counts and durations.
func (f *scavengeFlags) checkNumbers() error {
	for name, v := range map[string]int{"workers": f.workers, "list-page-size": f.page, "task-batch-size": f.batch, "tasks-per-job": f.perJob, "max-deferred": f.deferred, "max-conns": f.maxConns} {
		if err := nonNegative(name, v); err != nil {
			return err
		}
	}
	for name, v := range map[string]time.Duration{"slow-statement": f.slow, "grace": f.grace, "retry-initial": f.retryMin, "retry-max": f.retryMax, "retry-for": f.retryFor, "statement-timeout": f.stmtTO} {
		if v < 0 {
			return usagef("--%s %s: must not be negative", name, v)
		}
	}
	if f.maxDeletes < 0 || f.maxStatements < 0 {
		return usagef("--max-deletes-per-second and --max-statements-per-second must not be negative")
	}
	return nil
}

// rules returns the Rules the flags make: everything that decides what
// a pass deletes (the mode, the grace, the protected prefixes, the
// opt-in rules, the orphan policy, dry run) and which rows it looks at
// (the tables, the namespaces, the queue glob). It is the one place the
// command builds a scavenger.Rules: run, serve and a schedule's pass
// description all take theirs from it.
func (f *scavengeFlags) rules() (scavenger.Rules, error) {
	var r scavenger.Rules
	switch f.compat {
	case "", "none", "tqscavenger":
	case "temporal":
		r.Compat = scavenger.CompatTemporal
	default:
		return r, usagef("--compat %q: use \"temporal\" or leave it out", f.compat)
	}
	r.Grace, r.UnsafeShortGrace, r.DryRun = f.grace, f.unsafe, f.dryRun
	r.PastLiveHead, r.BelowAckLevel, r.QueueGlob = f.pastLiveHead, f.belowAckLevel, f.queueGlob
	r.ProtectedPrefixes = f.protected()
	switch scavenger.OrphanPolicy(f.orphans) {
	case scavenger.OrphansExpired, scavenger.OrphansAll, scavenger.OrphansNone:
		r.Orphans = scavenger.OrphanPolicy(f.orphans)
	default:
		return r, usagef("--orphans %q: use expired, all or none", f.orphans)
	}
	if r.Compat == scavenger.CompatTemporal && (r.PastLiveHead || r.BelowAckLevel || f.orphans == string(scavenger.OrphansAll)) {
		return r, usagef("--past-live-head, --below-ack-level and --orphans=all are tqscavenger's rules: leave out --compat=temporal to use them")
	}
	var err error
	if r.Tables, err = tablesOf(f.tables); err != nil {
		return r, err
	}
	if err := namespaceScope(&r, f.namespaces.vals); err != nil {
		return r, err
	}
	return r, f.closed.apply(&r)
}

// protected returns --protect's prefixes: nil (the default list) unless
// it is given; "none" protects nothing.
func (f *scavengeFlags) protected() []string {
	if !f.protect.set {
		return nil
	}
	out := []string{}
	for _, p := range f.protect.vals {
		if p != "none" {
			out = append(out, p)
		}
	}
	return out
}

// tablesOf returns --tables' table versions: nil for all present.
func tablesOf(v string) ([]store.Table, error) {
	switch v {
	case "", "all":
		return nil, nil
	case "v1":
		return []store.Table{store.V1}, nil
	case "v2":
		return []store.Table{store.V2}, nil
	}
	return nil, usagef("--tables %q: use v1, v2 or all", v)
}

// clock returns the pretend clock of --now, never ahead of the real one;
// nil without --now.
func (f *scavengeFlags) clock() (func() time.Time, error) {
	if f.now == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, f.now)
	if err != nil {
		return nil, usagef("--now %q: use RFC 3339, e.g. 2026-11-30T12:00:00Z", f.now)
	}
	// A time ahead makes tasks that are not expired look expired.
	if real := time.Now(); t.After(real.Add(maxClockSkew)) {
		return nil, usagef("--now %s is %s ahead of the clock: a pretend time in the future would delete tasks that have not expired", f.now, t.Sub(real).Round(time.Second))
	}
	return func() time.Time { return t }, nil
}

// partitionOf returns the part of the range_hash space of --partition
// (the whole space without it).
func (f *scavengeFlags) partitionOf() (scavenger.Partition, error) {
	if f.partition == "" {
		return scavenger.Partition{}, nil
	}
	p, err := scavenger.ParsePartition(f.partition)
	if err != nil {
		return p, usagef("--partition: %v", err)
	}
	return p, nil
}

// pace returns how fast a pass goes: workers, batch sizes, limits,
// retries, the pace mode.
func (f *scavengeFlags) pace() (scavenger.Pace, error) {
	p := scavenger.Pace{
		Workers: f.workers, ListPageSize: f.page, TaskBatchSize: f.batch, TasksPerJob: f.perJob, MaxDeferred: f.deferred,
		RetryInitial: f.retryMin, RetryMax: f.retryMax, RetryFor: f.retryFor, SlowStatement: f.slow,
		MaxDeletesPerSecond: f.maxDeletes, MaxStatementsPerSecond: f.maxStatements,
		YieldToLoad: f.yield, YieldFactor: f.yieldFactor,
	}
	mode, err := scavenger.ParsePaceMode(f.paceMode)
	if err != nil {
		return p, usagef("--pace: %v", err)
	}
	if f.yield && mode == scavenger.PaceFull {
		return p, usagef("--yield-to-load (deprecated) asks for the gentle pace: it cannot go with --pace full")
	}
	p.Mode = mode
	p.TemporalMetrics = f.temporalMetrics.vals
	return p, nil
}

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

func (f *scavengeFlags) storeOptions() sqlstore.Options {
	// A pass shares commits only at the full pace (scavenger.PaceFull
	// turns group commit on, per pass): the budget makes it possible.
	return sqlstore.Options{StatementTimeout: f.stmtTO, MaxConns: f.maxConns, WriteTxBudget: writeTxBudget}
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
	waitLock                    bool
}

// runFlags are run's flags; it returns the pass.
func runFlags(g *flagGroups) runFunc {
	var r runCmd
	r.cf.register(g.Conn)
	r.sf.register(g)
	g.Pace.BoolVar(&r.waitLock, "wait-lock", false, "wait for another running tqscavenger to finish instead of exiting")
	r.cp.register(g.Pace)
	r.lf.register(g.Output)
	outputFlag(g.Output, &r.output, "the pass's outcome and counts on stdout: text or json (logs go to stderr)")
	g.Output.StringVar(&r.progress, "progress", "auto", "progress line on stderr: auto (when a terminal), always or never")
	g.Output.StringVar(&r.statsJSON, "stats-json", "", "also write the pass's counts as JSON to this file (for scripts and the lab)")
	configFlag(g.Other)
	return r.run
}

// checkpointFlags are run's --checkpoint, --fresh and --checkpoint-interval.
type checkpointFlags struct {
	file  string
	fresh bool
	every time.Duration
}

func (f *checkpointFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.file, "checkpoint", "", "resume from this checkpoint file if it exists, and keep it up to date while the pass runs; a completed pass removes it")
	fs.BoolVar(&f.fresh, "fresh", false, "with --checkpoint: ignore the file's positions and start from the first row")
	durationVar(fs, &f.every, "checkpoint-interval", 0, "with --checkpoint: write it at most this often while the positions advance (default "+shortDuration(defaults.CheckpointInterval)+")")
}

// check refuses --fresh and --checkpoint-interval without a file.
func (f *checkpointFlags) check() error {
	if (f.fresh || f.every != 0) && f.file == "" {
		return usagef("--fresh and --checkpoint-interval need --checkpoint FILE")
	}
	if f.every < 0 {
		return usagef("--checkpoint-interval %s: must not be negative", f.every)
	}
	if f.file != "" {
		return checkCheckpointPath(f.file)
	}
	return nil
}

// apply makes the pass of cfg resume from the checkpoint file, if any, and
// keep it up to date.
func (f *checkpointFlags) apply(cfg *scavenger.Config) error {
	if f.file == "" {
		return nil
	}
	var err error
	if cfg.Resume, err = loadCheckpoint(f.file, f.fresh); err != nil {
		return err
	}
	cfg.Checkpoint = func(_ context.Context, c scavenger.Checkpoint) error { return saveCheckpoint(f.file, c) }
	cfg.CheckpointInterval = f.every
	return nil
}

// refused returns the error of a pass scavenger.Begin or Run refused
// before any work: a checkpoint of another pass (scavenger.Checkpoint.Fits,
// at Begin) or whose positions lie past its tables' last rows (at Run) is
// a usage error.
func (f *checkpointFlags) refused(err error) error {
	if errors.Is(err, scavenger.ErrCheckpointMismatch) {
		return usagef("--checkpoint %s: %v (pass --fresh to start over, or point --checkpoint at another file)", f.file, err)
	}
	return err
}

// finish returns the error of a pass that ended with st and err: a
// checkpoint refused is a usage error, and a completed pass's checkpoint
// file is removed, as nothing is left to resume.
func (f *checkpointFlags) finish(st scavenger.Stats, err error) error {
	if errors.Is(err, scavenger.ErrCheckpointMismatch) {
		return f.refused(err)
	}
	if err == nil && f.file != "" && (st.Outcome == scavenger.Completed || st.Outcome == scavenger.CompletedBadRows) {
		if rerr := os.Remove(f.file); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = fmt.Errorf("remove the completed pass's checkpoint: %w", rerr)
		}
	}
	return err
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

// progressLine returns the progress line drawn on w, or nil if mode and
// w call for none: by default (auto) there is one only on a terminal.
func progressLine(w io.Writer, mode string) *progressline.Line {
	if mode == "never" || (mode == "auto" && !isTerminal(w)) {
		return nil
	}
	width := func() int { return 0 }
	if f, ok := w.(*os.File); ok {
		width = func() int { return progressline.TerminalWidth(f.Fd()) }
	}
	return progressline.NewLine(w, width)
}

// startProgress draws the pass's progress on line every half second while
// the pass runs, and erases it when stop is called.
func startProgress(line *progressline.Line, s *scavenger.Scavenger, dryRun bool) (stop func()) {
	if line == nil {
		return func() {}
	}
	return line.Show(500*time.Millisecond, func(width int) string {
		return progressline.Text(s.Stats(), dryRun, width)
	})
}

// isTerminal reports whether w is a terminal. A character device is not
// enough: /dev/null is one too, and a progress line written there by a
// service manager would be wasted work at best.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

func printSummary(w io.Writer, st scavenger.Stats) {
	verb := "deleted"
	if st.DryRun {
		verb = "would delete"
		fmt.Fprintln(w, "dry run: nothing was deleted")
	}
	tasks, queues := st.Removed()
	fmt.Fprintf(w, "queues: %d processed, %s %d", st.QueuesProcessed, verb, queues)
	if st.QueuesKept > 0 {
		fmt.Fprintf(w, ", %d kept (taken by a matching host since listed)", st.QueuesKept)
	}
	fmt.Fprintf(w, "\ntasks:  %d examined, %s %d\n", st.TasksProcessed, verb, tasks)
	if st.TasksRunNotFound > 0 {
		fmt.Fprintf(w, "kept:   %d tasks whose run is not in executions (run_not_found: without --closed-deleted-runs, or not proven deleted by retention)\n", st.TasksRunNotFound)
	}
	if st.Deferred > 0 || st.Dropped > 0 || st.Retries > 0 {
		fmt.Fprintf(w, "jobs:   %d deferred, %d dropped; %d transient errors retried\n", st.Deferred, st.Dropped, st.Retries)
	}
	if st.TasksUnknown > 0 || st.QueuesUnknown > 0 {
		fmt.Fprintf(w, "unknown: %d tasks and %d queues whose delete lost its connection: they may or may not be gone\n", st.TasksUnknown, st.QueuesUnknown)
	}
	if st.Errors > 0 {
		var causes []string
		for _, c := range slices.Sorted(maps.Keys(st.FailuresByCause)) {
			causes = append(causes, fmt.Sprintf("%d %s", st.FailuresByCause[c], c))
		}
		fmt.Fprintf(w, "failed: %d jobs (%s); the first:\n", st.Errors, strings.Join(causes, ", "))
		for _, f := range st.Failures {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	if st.BadRowCount > 0 {
		fmt.Fprintf(w, "bad rows: %d could not be processed and were kept:\n", st.BadRowCount)
		for _, b := range st.BadRows {
			fmt.Fprintf(w, "  %s\n", b)
		}
		if int64(len(st.BadRows)) < st.BadRowCount {
			fmt.Fprintf(w, "  … and %d more (see the log)\n", st.BadRowCount-int64(len(st.BadRows)))
		}
	}
	if st.Resumed {
		fmt.Fprintf(w, "resumed: from a checkpoint; rows at or before its positions were not examined by this run: %v\n", st.ResumedFrom)
	}
	if st.Outcome != "" {
		if st.Cause != "" {
			fmt.Fprintf(w, "outcome: %s (%s)\n", st.Outcome, st.Cause)
		} else {
			fmt.Fprintf(w, "outcome: %s\n", st.Outcome)
		}
	}
	fmt.Fprintf(w, "time:   %s\n", st.Elapsed.Round(time.Millisecond))
}

// statsMap is the pass's counts for scripts: --output json and
// --stats-json. A dry run's *_deleted counts are 0 (nothing was deleted)
// and what it would have deleted is under would_delete, so that no script
// reads a dry run as deletions; dry_run says which it was.
func statsMap(st scavenger.Stats, statements int64) map[string]any {
	causes := st.FailuresByCause
	if causes == nil {
		causes = map[scavenger.Cause]int64{}
	}
	m := map[string]any{
		"dry_run":             st.DryRun,
		"outcome":             string(st.Outcome),
		"cause":               string(st.Cause),
		"resumed":             st.Resumed,
		"resumed_from":        st.ResumedFrom,
		"failures_by_cause":   causes,
		"tasks_unknown":       st.TasksUnknown,
		"queues_unknown":      st.QueuesUnknown,
		"statements":          statements,
		"queues_listed":       st.QueuesListed,
		"queues_processed":    st.QueuesProcessed,
		"queues_deleted":      st.QueuesDeleted,
		"queues_kept":         st.QueuesKept,
		"tasks_processed":     st.TasksProcessed,
		"tasks_deleted":       st.TasksDeleted,
		"tasks_expired_left":  st.TasksExpiredLeft,
		"tasks_run_not_found": st.TasksRunNotFound,
		"orphans_found":       st.OrphansFound,
		"deferred":            st.Deferred,
		"dropped":             st.Dropped,
		"errors":              st.Errors,
		"retries":             st.Retries,
		"bad_rows":            st.BadRowCount,
		"elapsed_seconds":     st.Elapsed.Seconds(),
		"pace":                st.Pace,
	}
	if st.DryRun {
		m["would_delete"] = map[string]int64{"tasks": st.WouldDeleteTasks, "queues": st.WouldDeleteQueues}
	}
	return m
}

// writeStatsJSON writes the pass's counts for scripts.
func writeStatsJSON(path string, st scavenger.Stats, statements int64) error {
	return writeStatsDoc(path, statsMap(st, statements))
}

// writeStatsDoc writes the document m of --stats-json.
func writeStatsDoc(path string, m map[string]any) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("--stats-json: %w", err)
	}
	return nil
}
