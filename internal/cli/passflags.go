package cli

// The flags of a pass, shared by run, serve, config and schedule create
// and update: what they register, and the scavenger.Config they make.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

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

func (f *scavengeFlags) storeOptions() sqlstore.Options {
	// A pass shares commits only at the full pace (scavenger.PaceFull
	// turns group commit on, per pass): the budget makes it possible.
	return sqlstore.Options{StatementTimeout: f.stmtTO, MaxConns: f.maxConns, WriteTxBudget: writeTxBudget}
}
