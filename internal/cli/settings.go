package cli

// The settings of a pass: one row per setting, from which every command
// that runs or describes a pass derives its flag, help, bound, default,
// config-file key, environment variable and whether a schedule carries
// it. Adding a pass setting is a row here (binding a field of
// scavenger.Pace, which pace() takes as it is; a setting of another kind
// also needs its field in scavengeFlags and its use in passflags.go) and
// its row of docs/running.md's flag table, which TestDocsFlagTables holds
// to the flags.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// setting is one setting of a pass. Its config-file key is its flag name
// (readConfigFile) and its environment variable TQSCAVENGER_ and the name
// in upper case with '_' for '-' (envName): both derived from flag, as
// for every flag.
type setting struct {
	flag  string
	group string // the help group: groupScope or groupPace
	// bind returns the field of f the flag sets: *bool, *int, *float64,
	// *string, *time.Duration or *multiFlag.
	bind  func(f *scavengeFlags) any
	value string // the flag's default as it would be typed; "" for the zero value
	short string // a one-letter name, as other tools have it (-n, make's and rsync's dry run)
	help  string
	// max is the most the flag takes (0: no bound but non-negative, for a
	// number or a duration).
	max float64
	// zeroDefault: 0 means the default (scavenger.Config's zero value),
	// shown by `config` and the status page as the value a pass uses.
	zeroDefault bool
	// zeroWord is what 0 means where it means no bound ("unlimited",
	// "none"), as help and `config` say it.
	zeroWord string
	// effective is the value a pass uses when the flag is left at its
	// default (or at 0, with zeroDefault), as the flag takes it back; nil
	// where the flag's own value is what a pass uses.
	effective func(c scavenger.Config) string
	// schedule is the field of temporalworker.ScheduleSpec a schedule
	// carries the setting in, as a path of field names; notScheduled,
	// where a schedule carries none, says what to do instead: given to
	// schedule create or update, such a flag is refused.
	schedule, notScheduled string
	// deprecated hides the flag and says what to use instead.
	deprecated string
}

// passSettings are a pass's settings, in help's order within each group.
var passSettings = []setting{
	// What to delete.
	{flag: "compat", group: groupScope, bind: func(f *scavengeFlags) any { return &f.compat }, schedule: "Pass.Compat",
		help: `"temporal": exactly Temporal's scavenger, with Temporal's knob values at Temporal's pace (no controller: --pace full unless set)`},
	{flag: "dry-run", short: "n", group: groupScope, bind: func(f *scavengeFlags) any { return &f.dryRun }, schedule: "Pass.DryRun",
		help: "report what would be deleted; delete nothing"},
	{flag: "grace", group: groupScope, bind: func(f *scavengeFlags) any { return &f.grace }, schedule: "Pass.Grace", zeroDefault: true,
		effective: func(c scavenger.Config) string { return shortDuration(c.Grace) },
		help:      "idle time before an empty queue may be deleted " + byMode(defaults.Grace, temporalConfig.Grace)},
	{flag: "unsafe-short-grace", group: groupScope, bind: func(f *scavengeFlags) any { return &f.unsafe }, schedule: "Pass.UnsafeShortGrace",
		help: "allow a --grace under " + shortDuration(scavenger.MinGrace) + ": only for a copy of a database no Temporal server uses (matching rewrites the row of a queue it holds only every 12h)"},
	{flag: "tables", group: groupScope, bind: func(f *scavengeFlags) any { return &f.tables }, schedule: "Pass.Tables",
		effective: func(c scavenger.Config) string {
			if c.Compat == scavenger.CompatTemporal {
				return store.V1.String()
			}
			return "all"
		},
		help: "table versions to scavenge: v1, v2 or all (default all present; v1 with --compat=temporal)"},
	{flag: "namespace", group: groupScope, bind: func(f *scavengeFlags) any { return &f.namespaces }, schedule: "Pass.Namespaces",
		help: "limit the pass to this namespace, by name (read from Temporal's namespaces table at the start of each pass) or id (UUID), repeatable"},
	{flag: "queue", group: groupScope, bind: func(f *scavengeFlags) any { return &f.queueGlob }, schedule: "Pass.QueueGlob",
		help: "limit the pass to queues whose name matches this glob (skips the orphan scan)"},
	{flag: "partition", group: groupScope, bind: func(f *scavengeFlags) any { return &f.partition },
		notScheduled: "a scheduled pass covers the whole space: --partitions N runs it as N partition activities",
		help:         "scavenge only part I of N of the range_hash space, as I/N (0/4 is the first of 4): disjoint parts run at once, overlapping ones exclude each other (default the whole space)"},
	{flag: "protect", group: groupScope, bind: func(f *scavengeFlags) any { return &f.protect }, schedule: "Pass.ProtectedPrefixes",
		effective: func(c scavenger.Config) string {
			if len(c.ProtectedPrefixes) == 0 {
				return "none"
			}
			return strings.Join(c.ProtectedPrefixes, ",")
		},
		help: `queue-name prefix never deleted, repeatable; "none" protects nothing (default "` + strings.Join(defaults.ProtectedPrefixes, ",") + `")`},
	{flag: "past-live-head", group: groupScope, bind: func(f *scavengeFlags) any { return &f.pastLiveHead }, schedule: "Pass.PastLiveHead",
		help: "also delete expired tasks behind a live one (not with --compat=temporal)"},
	{flag: "closed-workflows", group: groupScope, bind: func(f *scavengeFlags) any { return &f.closed.on }, schedule: "Pass.ClosedWorkflows",
		help: "also delete tasks whose own run is found closed (its executions row COMPLETED), anywhere in a queue; a run not found keeps its tasks (counted as run_not_found); reads Temporal's executions, cluster_metadata_info and namespaces tables (not with --compat=temporal)"},
	{flag: "closed-deleted-runs", group: groupScope, bind: func(f *scavengeFlags) any { return &f.closed.deleted }, schedule: "Pass.ClosedDeletedRuns",
		help: "with --closed-workflows: also delete the tasks of runs missing from executions (deleted by retention) once the task is older than the namespace's retention + " + shortDuration(scavenger.RunDeletedMargin) + "; each pass first proves the history shard count (" + strconv.Itoa(scavenger.MinProofWorkflows) + " workflows found where it puts them) and refuses to run (exit 2) if it fails; with fewer workflows, a miss counts only where the workflow's current row points at another run; also reads current_executions and shards"},
	{flag: "closed-global", group: groupScope, bind: func(f *scavengeFlags) any { return &f.closed.global }, schedule: "Pass.ClosedWorkflowsGlobal",
		help: "with --closed-workflows: global (multi-cluster) namespaces too, where conflict resolution can rebuild a closed run (default: their tasks are kept)"},
	{flag: "closed-cluster", group: groupScope, bind: func(f *scavengeFlags) any { return &f.closed.cluster }, schedule: "Pass.ClusterName",
		help: "with --closed-workflows: the name of the current cluster's cluster_metadata_info row (default: its only row)"},
	{flag: "below-ack-level", group: groupScope, bind: func(f *scavengeFlags) any { return &f.belowAckLevel }, schedule: "Pass.BelowAckLevel",
		help: "also delete tasks at or below their subqueue's ack level: already dispatched"},
	{flag: "orphans", group: groupScope, bind: func(f *scavengeFlags) any { return &f.orphans }, value: string(scavenger.OrphansExpired), schedule: "Pass.Orphans",
		help: "orphaned tasks (no queue row) to delete: expired, all (also live ones older than --grace) or none (no orphan scan)"},
	{flag: "now", group: groupScope, bind: func(f *scavengeFlags) any { return &f.now },
		notScheduled: "each pass uses its worker's clock",
		help:         "pretend the time is this RFC 3339 instant (reruns on fixtures, tests)"},

	// Pace and safety.
	{flag: "workers", group: groupPace, bind: func(f *scavengeFlags) any { return &f.knobs.Workers }, schedule: "Pass.Workers",
		max: scavenger.MaxWorkers, zeroDefault: true, effective: func(c scavenger.Config) string { return strconv.Itoa(c.Workers) },
		help: "jobs run at once " + byMode(defaults.Workers, temporalConfig.Workers)},
	{flag: "max-deletes-per-second", group: groupPace, bind: func(f *scavengeFlags) any { return &f.knobs.MaxDeletesPerSecond }, schedule: "Pass.MaxDeletesPerSecond",
		max: scavenger.MaxRate, zeroWord: "unlimited",
		help: "cap on rows deleted per second, to protect the database (default unlimited)"},
	{flag: "max-statements-per-second", group: groupPace, bind: func(f *scavengeFlags) any { return &f.knobs.MaxStatementsPerSecond }, schedule: "Pass.MaxStatementsPerSecond",
		max: scavenger.MaxRate, zeroWord: "unlimited",
		help: "cap on statements per second (default unlimited)"},
	{flag: "statement-timeout", group: groupPace, bind: func(f *scavengeFlags) any { return &f.stmtTO }, zeroWord: "none",
		notScheduled: "give it to `tqscavenger worker`: each worker's connection pool has its own",
		help:         "bound on each statement; a timed-out statement is retried (default none)"},
	{flag: "max-conns", group: groupPace, bind: func(f *scavengeFlags) any { return &f.maxConns },
		max: sqlstore.MaxMaxConns, zeroDefault: true, effective: func(scavenger.Config) string { return strconv.Itoa(storeDefaults.MaxConns) },
		notScheduled: "give it to `tqscavenger worker`: each worker's connection pool has its own",
		help:         "connections to PostgreSQL/MySQL (default " + strconv.Itoa(storeDefaults.MaxConns) + "; SQLite uses one); a gentle pass's probe and the lock take one more each, outside it"},
	{flag: "list-page-size", group: groupPace, bind: func(f *scavengeFlags) any { return &f.knobs.ListPageSize }, schedule: "Pass.ListPageSize",
		max: scavenger.MaxListPageSize, zeroDefault: true, effective: func(c scavenger.Config) string { return strconv.Itoa(c.ListPageSize) },
		help: "queue rows read per listing statement " + byMode(defaults.ListPageSize, temporalConfig.ListPageSize)},
	{flag: "task-batch-size", group: groupPace, bind: func(f *scavengeFlags) any { return &f.knobs.TaskBatchSize }, schedule: "Pass.TaskBatchSize",
		max: scavenger.MaxTaskBatchSize, zeroDefault: true, effective: func(c scavenger.Config) string { return strconv.Itoa(c.TaskBatchSize) },
		help: "most tasks read or deleted per statement; adapts below it " + byMode(defaults.TaskBatchSize, temporalConfig.TaskBatchSize)},
	{flag: "tasks-per-job", group: groupPace, bind: func(f *scavengeFlags) any { return &f.knobs.TasksPerJob }, schedule: "Pass.TasksPerJob",
		max: scavenger.MaxTasksPerJob, zeroDefault: true, effective: func(c scavenger.Config) string { return strconv.Itoa(c.TasksPerJob) },
		help: "tasks a job examines before yielding its worker " + byMode(defaults.TasksPerJob, temporalConfig.TasksPerJob)},
	{flag: "max-deferred", group: groupPace, bind: func(f *scavengeFlags) any { return &f.knobs.MaxDeferred },
		max: scavenger.MaxMaxDeferred, zeroDefault: true, effective: func(c scavenger.Config) string { return strconv.Itoa(c.MaxDeferred) },
		notScheduled: "a scheduled pass uses the default",
		help:         "cap of the deferred job list; beyond it jobs are dropped for the pass " + byMode(defaults.MaxDeferred, temporalConfig.MaxDeferred)},
	{flag: "slow-statement", group: groupPace, bind: func(f *scavengeFlags) any { return &f.knobs.SlowStatement },
		zeroDefault: true, effective: func(c scavenger.Config) string { return shortDuration(c.SlowStatement) },
		notScheduled: "a scheduled pass uses the default",
		help:         "a scan or delete slower than this halves the batch size " + byMode(defaults.SlowStatement, temporalConfig.SlowStatement)},
	{flag: "retry-for", group: groupPace, bind: func(f *scavengeFlags) any { return &f.knobs.RetryFor },
		zeroDefault: true, effective: func(c scavenger.Config) string { return shortDuration(c.RetryFor) },
		notScheduled: "a scheduled pass uses the default retry budget",
		help:         "how long one operation may retry transient errors, busy waits included, before its job fails " + byMode(defaults.RetryFor, temporalConfig.RetryFor)},
	{flag: "retry-initial", group: groupPace, bind: func(f *scavengeFlags) any { return &f.knobs.RetryInitial },
		zeroDefault: true, effective: func(c scavenger.Config) string { return shortDuration(c.RetryInitial) },
		notScheduled: "a scheduled pass uses the default retry budget",
		help:         "first backoff after a transient error " + byMode(defaults.RetryInitial, temporalConfig.RetryInitial)},
	{flag: "retry-max", group: groupPace, bind: func(f *scavengeFlags) any { return &f.knobs.RetryMax },
		zeroDefault: true, effective: func(c scavenger.Config) string { return shortDuration(c.RetryMax) },
		notScheduled: "a scheduled pass uses the default retry budget",
		help:         "backoff cap for transient errors " + byMode(defaults.RetryMax, temporalConfig.RetryMax)},
	{flag: "lock-check-interval", group: groupPace, bind: func(f *scavengeFlags) any { return &f.knobs.LockCheckInterval },
		zeroDefault: true, effective: func(c scavenger.Config) string { return shortDuration(c.LockCheckInterval) },
		notScheduled: "a scheduled pass uses the default",
		help:         "how often a pass checks that it still holds its lock: one that lost it stops within this and one check (" + shortDuration(scavenger.DefaultLockCheckTimeout) + ") " + byMode(defaults.LockCheckInterval, temporalConfig.LockCheckInterval)},
	{flag: "pace", group: groupPace, bind: func(f *scavengeFlags) any { return &f.paceMode }, schedule: "Pass.Mode",
		effective: func(c scavenger.Config) string { return string(c.Mode) },
		help:      paceHelp + " " + byMode(defaults.Mode, temporalConfig.Mode)},
	{flag: "temporal-metrics", group: groupPace, bind: func(f *scavengeFlags) any { return &f.temporalMetrics },
		notScheduled: "a scheduled pass does not carry it",
		help:         "Temporal's Prometheus endpoint (matching's, history's; repeatable): the gentle pace backs off on its persistence_latency of CreateTasks, GetTasks, UpdateWorkflowExecution and AppendHistoryNodes, scraped every second (default none)"},
	{flag: "yield-to-load", group: groupPace, bind: func(f *scavengeFlags) any { return &f.knobs.YieldToLoad },
		notScheduled: "a scheduled pass does not carry it (the gentle pace it asked for is the default)",
		deprecated:   "the gentle pace it asked for is the default (--pace gentle)",
		help:         "deprecated: the gentle pace, the default"},
	{flag: "yield-factor", group: groupPace, bind: func(f *scavengeFlags) any { return &f.knobs.YieldFactor },
		max: scavenger.MaxYieldFactor, zeroDefault: true, effective: func(c scavenger.Config) string { return strconv.FormatFloat(c.YieldFactor, 'g', -1, 64) },
		notScheduled: "a scheduled pass does not carry it",
		deprecated:   "the gentle pace (--pace gentle, the default) still reads it; it will go",
		help:         fmt.Sprintf("how much slower than its quiet baseline a statement may get before the gentle pace backs off (default %g)", scavenger.DefaultYieldFactor)},
}

// paceHelp is --pace's help: the trade of each pace.
const paceHelp = `gentle: back off (fewer statements at once, pauses) while the database is slower than its quiet baseline, within a floor that keeps the pass moving; full: no controller, the fastest safe pass, for a maintenance window or a copy: on a rollback-journal SQLite file it also shares commits and pipelines deletes (not with --compat=temporal, which commits each statement as Temporal does), which beside a live Temporal server made its workflows 70-130% slower. Both delete the same rows; serve takes a new pace at SIGHUP from the next statement`

// passSetting returns the row of the pass setting whose flag is name.
func passSetting(name string) (setting, bool) {
	for _, s := range passSettings {
		if s.flag == name {
			return s, true
		}
	}
	return setting{}, false
}

// The pflag annotations that carry a row's facts on its flag, so that the
// code that checks, shows and schedules flags reads them from the flag
// set, and the few flags outside passSettings (serve's --history, say)
// state theirs where they are registered, with the same helpers.
const (
	maxKey          = "tqscavenger_max"
	zeroDefaultKey  = "tqscavenger_zero_default"
	scheduleKey     = "tqscavenger_schedule"
	notScheduledKey = "tqscavenger_not_scheduled"
)

// register adds s's flag to fs, bound to its field of f.
func (s setting) register(fs *pflag.FlagSet, f *scavengeFlags) {
	switch p := s.bind(f).(type) {
	case *bool:
		fs.BoolVarP(p, s.flag, s.short, s.value == "true", s.help)
	case *int:
		fs.IntVar(p, s.flag, 0, s.help)
	case *float64:
		fs.Float64Var(p, s.flag, 0, s.help)
	case *string:
		fs.StringVar(p, s.flag, s.value, s.help)
	case *time.Duration:
		durationVar(fs, p, s.flag, 0, s.help)
	case *multiFlag:
		fs.Var(p, s.flag, s.help)
	default:
		panic(fmt.Sprintf("setting %s: bind returns %T", s.flag, p)) // TestPassSettings checks every row
	}
	if s.short != "" && fs.Lookup(s.flag).Shorthand == "" {
		panic(fmt.Sprintf("setting %s: a one-letter name on a flag that is not a bool", s.flag)) // TestPassSettings
	}
	if s.max > 0 {
		capFlag(fs, s.flag, s.max)
	}
	if s.zeroDefault {
		zeroMeansDefault(fs, s.flag)
	}
	switch {
	case s.schedule != "":
		annotate(fs, s.flag, scheduleKey, s.schedule)
	case s.notScheduled != "":
		annotate(fs, s.flag, notScheduledKey, s.notScheduled)
	}
	if s.deprecated != "" {
		deprecate(fs, s.flag, s.deprecated)
	}
}

// annotate sets the annotation key of the flag name of fs to v.
func annotate(fs *pflag.FlagSet, name, key, v string) {
	f := fs.Lookup(name)
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[key] = []string{v}
}

// annotation returns the annotation key of f, or "".
func annotation(f *pflag.Flag, key string) string {
	if a := f.Annotations[key]; len(a) == 1 {
		return a[0]
	}
	return ""
}

// capFlag sets the most the numeric flag name of fs takes (checkRanges).
func capFlag(fs *pflag.FlagSet, name string, max float64) {
	annotate(fs, name, maxKey, strconv.FormatFloat(max, 'f', -1, 64))
}

// capOf returns the most f takes, or 0 for no cap.
func capOf(f *pflag.Flag) float64 {
	n, _ := strconv.ParseFloat(annotation(f, maxKey), 64)
	return n
}

// zeroMeansDefault marks the flag name of fs as one whose 0 means its
// default: `config` and the status page show the value used instead.
func zeroMeansDefault(fs *pflag.FlagSet, name string) {
	annotate(fs, name, zeroDefaultKey, "true")
}

// carried marks the flag name of fs as a setting a schedule carries in
// the field at path of temporalworker.ScheduleSpec (schedule update
// changes it when a layer sets the flag).
func carried(fs *pflag.FlagSet, name, path string) {
	annotate(fs, name, scheduleKey, path)
}
