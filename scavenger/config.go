package scavenger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// Compat selects whose behaviour a pass follows.
type Compat string

const (
	// CompatNone is tqscavenger's own mode: Temporal's deletion rule
	// (expired tasks; idle, empty queues, fenced on range_id) applied to
	// every subqueue and table, without Temporal's gaps.
	CompatNone Compat = ""
	// CompatTemporal is exactly what Temporal's scavenger deletes: the v1
	// tables, subqueue 0, batch by batch, with Temporal's knob values.
	CompatTemporal Compat = "temporal"
)

// Temporal's scavenger constants (service/worker/scanner/taskqueue).
const (
	TemporalWorkers       = 32
	TemporalListPageSize  = 32
	TemporalTaskBatchSize = 16
	TemporalTasksPerJob   = 256
	TemporalGrace         = 48 * time.Hour
	TemporalMaxDeferred   = 10000
	TemporalRetryInitial  = 250 * time.Millisecond
	TemporalRetryMax      = 30 * time.Second
	// TemporalProtectedPrefix is the queue-name prefix Temporal never
	// deletes. It matches no real queue: Temporal's own scanner queue is
	// named "temporal-sys-tq-scanner-taskqueue-0".
	TemporalProtectedPrefix = "temporal-sys-tl-scanner"
)

// tqscavenger's defaults, where they differ from Temporal's: large
// batches (scans and deletes of up to 1000 rows, adapting to the
// database), pages of 1000 queues, and fewer workers, since the database,
// not the scavenger, is the bottleneck.
const (
	DefaultWorkers       = 4
	DefaultListPageSize  = 1000
	DefaultTaskBatchSize = 1000
	DefaultTasksPerJob   = 20000
	// DefaultRetryFor bounds the retries of one operation. Temporal
	// retries forever.
	DefaultRetryFor = 5 * time.Minute
	// DefaultLockCheckInterval and DefaultLockCheckTimeout bound how long
	// a pass runs on after its lock is lost: at most their sum.
	DefaultLockCheckInterval = 5 * time.Second
	DefaultLockCheckTimeout  = 3 * time.Second
	// DefaultYieldFactor is Config.YieldFactor's default.
	DefaultYieldFactor = 2.0
)

// MinGrace is the shortest Grace allowed without UnsafeShortGrace: twice
// the 12 h after which matching rewrites the row of a queue it holds.
const MinGrace = 24 * time.Hour

// Config configures a Scavenger, in parts: the Rules that decide what is
// deleted, the Pace (and safety margins) of the work, and the Hooks an
// embedder plugs in; the part of the range_hash space to cover and the
// checkpoint to resume from stand alone. The parts are embedded, so
// cfg.Grace is cfg.Rules.Grace. The zero value of each field means its
// documented default.
type Config struct {
	Rules
	// Partition limits a pass to one part of the range_hash space (see
	// Partition). Default: the whole space.
	Partition Partition
	// Resume, if set, is the checkpoint of an earlier pass to go on from:
	// each walk starts after its position, and walks it marks done are
	// skipped. Run refuses (ErrCheckpointMismatch) a checkpoint of another
	// database (the store must implement store.Identifier), partition or
	// Rules.
	Resume *Checkpoint
	Pace
	Hooks
}

// Rules are the settings that decide what a pass deletes: what a
// checkpoint's settings digest covers, what a Temporal workflow's pass
// description carries, what the command's flags of "what to delete" set.
// The JSON names are those of the pass description.
type Rules struct {
	// Compat selects the mode; see CompatTemporal.
	Compat Compat `json:"compat,omitempty"`
	// The opt-in rules of the default mode. CompatTemporal ignores them.

	// PastLiveHead deletes expired tasks behind a live one. Safe: expiry
	// is per task, and matching drops an expired task when it reaches it
	// anyway; Temporal stops at the first live task only because it
	// deletes by "task_id below", which must not cross a live task. Here
	// only the expired runs between live tasks are deleted.
	PastLiveHead bool `json:"past_live_head,omitempty"`
	// BelowAckLevel deletes tasks at or below their subqueue's persisted
	// ack level (v2: fair ack level on (pass, task_id)). Safe: matching
	// has dispatched or dropped every such task and deletes them itself,
	// but only while the queue is loaded.
	BelowAckLevel bool `json:"below_ack_level,omitempty"`
	// Orphans says which orphaned tasks (no queue row owns them) are
	// deleted. Default OrphansExpired.
	Orphans OrphanPolicy `json:"orphans,omitempty"`
	// Grace is how long a queue must have been idle (by its
	// last_update_time) before it may be deleted. Default 48h. A grace
	// under MinGrace is refused unless UnsafeShortGrace is set.
	Grace time.Duration `json:"grace,omitempty"`
	// UnsafeShortGrace allows a Grace under MinGrace. Matching rewrites
	// the row of a queue it holds only when something changed or every
	// 12 h (so that a 48 h grace never sees a held queue as idle), and the
	// range_id fence does not stop the deletion of a queue whose owner
	// leased it before the listing: with a shorter grace, a pass can
	// delete the row of a queue a matching host still holds. Tests with
	// an injected clock and copies of a database with no Temporal running
	// may set it.
	UnsafeShortGrace bool `json:"unsafe_short_grace,omitempty"`
	// DryRun reads and decides as usual but deletes nothing; the stats
	// count what would have been deleted.
	DryRun bool `json:"dry_run,omitempty"`
	// Namespaces limits a pass to queues (and orphans) of these
	// namespaces. Default: all.
	Namespaces []wire.NamespaceID `json:"namespaces,omitempty"`
	// NamespaceNames adds namespaces by name: Begin resolves them through
	// Temporal's namespaces table (store.NamespaceLister) at the start of
	// each pass and adds their ids to Namespaces, so that checkpoints'
	// settings digests and pass descriptions carry ids only. A name
	// matches exactly: a deleted namespace, renamed by Temporal to
	// "<name>-deleted-…", is not found by its old name. Run refuses a
	// config whose names were not resolved (ErrUnresolvedNamespaces):
	// left out, they would widen the pass to every namespace.
	NamespaceNames []string `json:"namespace_names,omitempty"`
	// ProtectedPrefixes lists queue-name prefixes never deleted. nil
	// means Temporal's list (TemporalProtectedPrefix); an empty non-nil
	// slice protects nothing.
	ProtectedPrefixes []string `json:"protected_prefixes"`
	// QueueGlob limits a pass to queues whose name matches this
	// path.Match pattern. Default: all. Orphans have no name: a pass with
	// a QueueGlob skips the orphan scan.
	QueueGlob string `json:"queue_glob,omitempty"`
	// Tables limits a pass to these table versions. Default: v1 in
	// CompatTemporal; every table present otherwise.
	Tables []store.Table `json:"tables,omitempty"`

	// ClosedWorkflows deletes the tasks of closed runs, found through
	// Temporal's executions tables (closed.go; decided in rules.go),
	// anywhere in a queue: only on positive evidence, a run found with
	// state COMPLETED. A run missing from executions keeps its tasks
	// (counted in Stats.TasksRunNotFound) unless ClosedDeletedRuns. Off by
	// default; refused in CompatTemporal.
	ClosedWorkflows bool `json:"closed_workflows,omitempty"`
	// ClosedDeletedRuns adds to ClosedWorkflows the inference from
	// absence: the tasks of a run missing from executions, older than its
	// namespace's retention and RunDeletedMargin, go as deleted by
	// retention. A miss is evidence only once the history shard count is
	// proven at the start of the pass (MinProofWorkflows workflows found
	// where the count puts them; a count that fails the proof refuses the
	// pass with ErrClosedWorkflowsRefused, fewer workflows turn the
	// inference off for the pass), or where the workflow's
	// current_executions row, found in the same shard, points at another
	// run.
	ClosedDeletedRuns bool `json:"closed_deleted_runs,omitempty"`
	// ClosedWorkflowsGlobal applies ClosedWorkflows to global namespaces
	// too: there conflict resolution can rebuild a completed run from
	// another cluster's branch (regenerating its tasks), the one case in
	// which a closed run does not stay closed. Default: their tasks are
	// kept.
	ClosedWorkflowsGlobal bool `json:"closed_workflows_global,omitempty"`
	// ClusterName names the current cluster's cluster_metadata_info row,
	// whose history shard count ClosedWorkflows uses. Default: the only
	// row (several rows without a name are refused).
	ClusterName string `json:"cluster_name,omitempty"`
}

// Pace is how fast and how carefully a pass works: none of it changes what
// is deleted. The fields with a JSON name are those a scheduled pass
// carries (temporalworker.PassDescription embeds Pace); the others stay
// with each worker.
type Pace struct {
	// Workers is the number of jobs run at once. Default 4 (Temporal: 32).
	Workers int `json:"workers,omitempty"`
	// ListPageSize is how many queue rows one listing statement reads.
	// Default 1000 (Temporal: 32).
	ListPageSize int `json:"list_page_size,omitempty"`
	// TaskBatchSize is how many tasks one read returns: in tqscavenger's
	// mode the most, as it adapts to the database. Default 1000
	// (Temporal: 16).
	TaskBatchSize int `json:"task_batch_size,omitempty"`
	// TasksPerJob is how many tasks a job examines before it yields its
	// worker to others (it is deferred and resumes later). Default 20000
	// (Temporal: 256).
	TasksPerJob int `json:"tasks_per_job,omitempty"`
	// MaxDeferred caps the deferred list; a job deferred beyond it is
	// dropped for this pass and counted. Default 10000.
	MaxDeferred int `json:"-"`
	// SlowStatement is how long a scan or delete may take before the
	// batch size is halved (tqscavenger's mode). Default 1s.
	SlowStatement time.Duration `json:"-"`
	// RetryInitial and RetryMax bound the backoff between retries of a
	// transient store error. Defaults 250ms and 30s.
	RetryInitial, RetryMax time.Duration `json:"-"`
	// RetryFor is how long one operation may keep retrying transient
	// errors before its job fails (ErrGaveUp), so that an outage or a
	// statement timeout set too low for the table shows as a failed pass
	// instead of a pass that never ends. Default 5m.
	RetryFor time.Duration `json:"-"`

	// LockCheckInterval is how often Hooks.Lock is checked. Default 5s.
	LockCheckInterval time.Duration `json:"-"`
	// LockCheckTimeout bounds one check; a check that does not answer in
	// time counts as a lost lock. Default 3s.
	LockCheckTimeout time.Duration `json:"-"`
	// CheckpointInterval bounds how often Hooks.Checkpoint is called.
	// Default 1s.
	CheckpointInterval time.Duration `json:"-"`

	// MaxDeletesPerSecond caps the rows (tasks and queue rows) deleted
	// per second, averaged over a second; 0 means unlimited, as Temporal.
	MaxDeletesPerSecond float64 `json:"max_deletes_per_second,omitempty"`
	// MaxStatementsPerSecond caps the store calls (each one statement,
	// or a few for batched forms) per second; 0 means unlimited.
	MaxStatementsPerSecond float64 `json:"max_statements_per_second,omitempty"`
	// Mode is the pace: PaceGentle (the default; PaceFull with
	// CompatTemporal) watches for harm and
	// backs off; PaceFull runs the fastest safe pass, for a maintenance
	// window or a copy. See PaceMode. Scavenger.Tune changes it on a
	// running pass, from its next statement.
	Mode PaceMode `json:"pace,omitempty"`
	// TemporalMetrics are Temporal's Prometheus endpoints (matching's,
	// history's) whose persistence_latency the gentle pace watches as its
	// best signal (internal/pace/temporal.go). Default: none.
	TemporalMetrics []string `json:"-"`
	// YieldToLoad is deprecated: it asks for PaceGentle, which is the
	// default. With Mode PaceFull it is refused.
	YieldToLoad bool `json:"-"`
	// YieldFactor is how much slower than its quiet baseline a statement
	// kind's median may get before PaceGentle backs off. Default 2; it
	// must be more than 1.
	YieldFactor float64 `json:"-"`
}

// PaceMode names how a pass paces itself. Neither pace changes what is
// deleted: the same rows go, by the same statements' rules (the range_id
// fence, the orphan re-check); only how many statements run at once, the
// pauses between them and the commit pattern differ.
type PaceMode string

const (
	// PaceGentle, the default (the zero value means it, except with
	// CompatTemporal, where it means PaceFull: Temporal's knobs and no
	// controller, as Temporal's scavenger runs), runs the
	// controller of package internal/pace: it watches its own
	// statements' latency against a quiet baseline and runs fewer
	// statements at once, with pauses, while the database is slower,
	// within a floor that keeps the pass moving (see its
	// controller.go). A pass beside a live Temporal cluster should use
	// it.
	PaceGentle PaceMode = "gentle"
	// PaceFull runs no controller: every worker at once, no pauses, and,
	// on a store that can share commits (a rollback-journal SQLite file
	// opened with sqlstore.Options.WriteTxBudget), shared commits with
	// pipelined deletes. The trade: beside a live Temporal server on such
	// a file, shared commits made its workflows 70-130 % slower
	// (sqlstore/groupcommit.go); for a maintenance window or a copy.
	PaceFull PaceMode = "full"
)

// ParsePaceMode returns the pace named s, or an error naming the paces.
// "" is the zero PaceMode: the default, which Config.WithDefaults makes
// PaceGentle, or PaceFull with CompatTemporal.
func ParsePaceMode(s string) (PaceMode, error) {
	switch PaceMode(s) {
	case "", PaceGentle, PaceFull:
		return PaceMode(s), nil
	}
	return "", fmt.Errorf("unknown pace %q: use gentle or full", s)
}

// Hooks are what an embedder plugs into a pass: the clock, the logger, the
// lock it holds, where checkpoints go, store middleware.
type Hooks struct {
	// Now is the clock. Default time.Now. It exists for tests and
	// embedders: reruns on copies of a database pin it, and tests move it
	// to prove that their checks catch a scavenger with a wrong clock.
	Now func() time.Time

	// Logger receives the pass's logs. Default slog.Default().
	Logger *slog.Logger

	// Lock, if set, is the one-scavenger-at-a-time lock the caller holds
	// for this pass. The pass checks it every Pace.LockCheckInterval;
	// when it is lost, the pass stops taking new work, cancels its
	// statements in flight and fails with an error wrapping
	// store.ErrLockLost. So two scavengers never work at once for longer
	// than the interval plus one check (LockCheckInterval +
	// LockCheckTimeout).
	Lock store.Lock

	// Checkpoint, if set, receives the pass's positions as they advance
	// (at most every Pace.CheckpointInterval, at once when a walk is
	// done, and when the pass ends before it completes), one call at a
	// time. An error is logged and the pass goes on. A pass that
	// completes has nothing left to resume: the caller clears what it
	// saved.
	Checkpoint func(ctx context.Context, cp Checkpoint) error

	// Middleware wraps the store of every pass, outermost first, inside
	// the pass's own shutdown gate and rate limits. It exists for tests
	// and embedders: to inject faults, hold a call until something has
	// happened, trace or count calls. A middleware must pass each call on
	// unchanged to keep the pass's guarantees. The calls of the optional
	// interfaces the pass uses (store.ExecutionReader, store.OddHashFinder)
	// reach a middleware whose store implements them, and go past one
	// whose store does not (see store.Middleware).
	Middleware []store.Middleware
	// OnTasksDeleted, if set, is told of the tasks of one queue a queue
	// job deleted (in a dry run: would have deleted) for a reason, for
	// counts per queue (report's closed-workflow breakdown). It is called
	// from the pass's workers, concurrently, and must be quick. Window
	// jobs (small queues in the default mode without ClosedWorkflows) and
	// the orphan scan do not call it.
	OnTasksDeleted func(t store.Table, queue store.QueueKey, r Reason, n int64)
}

// OrphanPolicy selects which orphaned tasks a pass deletes.
type OrphanPolicy string

const (
	// OrphansExpired deletes expired orphans and reports the rest.
	OrphansExpired OrphanPolicy = "expired"
	// OrphansAll also deletes orphans created longer than Grace ago,
	// expired or not. Safe: no queue row means no matching host can ever
	// dispatch them; a re-created queue gets a fresh row, and every
	// delete re-checks in the same statement that the row is absent.
	OrphansAll OrphanPolicy = "all"
	// OrphansNone skips the orphan scan.
	OrphansNone OrphanPolicy = "none"
)

// orDefault returns v, or d where v is not positive: a zero knob means
// its default.
func orDefault[T int | time.Duration](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

// WithDefaults returns c with every zero field set to its default: the
// configuration a pass runs with. Help texts and the configuration the
// command prints read their defaults from here.
func (c Config) WithDefaults() Config {
	c.Rules = c.Rules.withDefaults()
	c.Pace = c.Pace.withDefaults(c.Compat)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// withDefaults returns r with every zero field set to its default.
// CompatTemporal turns the opt-in rules off and keeps to the v1 tables.
func (r Rules) withDefaults() Rules {
	r.Grace = orDefault(r.Grace, TemporalGrace)
	if r.ProtectedPrefixes == nil {
		r.ProtectedPrefixes = []string{TemporalProtectedPrefix}
	}
	if r.Orphans == "" {
		r.Orphans = OrphansExpired
	}
	if r.Compat == CompatTemporal {
		r.Tables = []store.Table{store.V1}
		r.PastLiveHead, r.BelowAckLevel, r.Orphans = false, false, OrphansNone
	}
	return r
}

// withDefaults returns p with every zero field set to its default in the
// mode compat.
func (p Pace) withDefaults(compat Compat) Pace {
	workers, page, batch, perJob := DefaultWorkers, DefaultListPageSize, DefaultTaskBatchSize, DefaultTasksPerJob
	if compat == CompatTemporal {
		workers, page, batch, perJob = TemporalWorkers, TemporalListPageSize, TemporalTaskBatchSize, TemporalTasksPerJob
	}
	p.Workers = orDefault(p.Workers, workers)
	p.ListPageSize = orDefault(p.ListPageSize, page)
	p.TaskBatchSize = orDefault(p.TaskBatchSize, batch)
	p.TasksPerJob = orDefault(p.TasksPerJob, perJob)
	p.SlowStatement = orDefault(p.SlowStatement, time.Second)
	p.MaxDeferred = orDefault(p.MaxDeferred, TemporalMaxDeferred)
	p.RetryInitial = orDefault(p.RetryInitial, TemporalRetryInitial)
	p.RetryMax = orDefault(p.RetryMax, TemporalRetryMax)
	p.RetryFor = orDefault(p.RetryFor, DefaultRetryFor)
	p.LockCheckInterval = orDefault(p.LockCheckInterval, DefaultLockCheckInterval)
	p.LockCheckTimeout = orDefault(p.LockCheckTimeout, DefaultLockCheckTimeout)
	p.CheckpointInterval = orDefault(p.CheckpointInterval, DefaultCheckpointInterval)
	if p.Mode == "" {
		p.Mode = PaceGentle
		if compat == CompatTemporal {
			// Temporal's knobs at Temporal's pace: no controller.
			p.Mode = PaceFull
		}
	}
	if p.YieldFactor <= 0 {
		p.YieldFactor = DefaultYieldFactor
	}
	return p
}

// ErrShortGrace is wrapped by Validate's error for a Grace under MinGrace
// without UnsafeShortGrace.
var ErrShortGrace = errors.New("grace too short")

// Validate reports a configuration that cannot work, or that is unsafe
// beside a live Temporal cluster.
func (c Config) Validate() error {
	switch c.Compat {
	case CompatNone, CompatTemporal:
	default:
		return fmt.Errorf("unknown compat mode %q: use \"temporal\" or leave it empty", c.Compat)
	}
	if c.Grace > 0 && c.Grace < MinGrace && !c.UnsafeShortGrace {
		return fmt.Errorf("%w: grace %s is under %s: matching rewrites the row of a queue it holds only every 12 h, so a shorter grace can delete a queue a matching host still holds", ErrShortGrace, c.Grace, MinGrace)
	}
	if c.Compat == CompatTemporal && (c.ClosedWorkflows || c.ClosedWorkflowsGlobal || c.ClosedDeletedRuns) {
		return fmt.Errorf("%w: not in compat mode temporal, which deletes what Temporal's scavenger deletes and nothing else", ErrClosedWorkflowsRefused)
	}
	if c.ClosedWorkflowsGlobal && !c.ClosedWorkflows {
		return fmt.Errorf("closed workflows in global namespaces: set only with the closed-workflow rule")
	}
	if c.ClosedDeletedRuns && !c.ClosedWorkflows {
		return fmt.Errorf("runs deleted by retention: set only with the closed-workflow rule")
	}
	if c.Grace < 0 || c.RetryFor < 0 {
		return fmt.Errorf("grace and retry budget must not be negative")
	}
	if err := c.checkRanges(); err != nil {
		return err
	}
	if c.MaxDeletesPerSecond < 0 || c.MaxStatementsPerSecond < 0 {
		return fmt.Errorf("rate limits must not be negative")
	}
	if _, err := ParsePaceMode(string(c.Mode)); err != nil {
		return err
	}
	for _, u := range c.TemporalMetrics {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			// Not echoed: a malformed URL may hold a password where
			// redaction cannot find it.
			return fmt.Errorf("a temporal metrics endpoint is not an http:// or https:// URL")
		}
	}
	if c.YieldToLoad && c.Mode == PaceFull {
		return fmt.Errorf("yield to load (deprecated) asks for the gentle pace; it cannot go with pace full")
	}
	if c.YieldFactor < 0 || (c.YieldFactor > 0 && c.YieldFactor <= 1) {
		return fmt.Errorf("yield factor %g: must be more than 1 (or 0 for the default %g)", c.YieldFactor, DefaultYieldFactor)
	}
	// Knobs that bound each other are checked as the pass will run them,
	// defaults filled in, so that a bad value is refused before any work.
	d := c.WithDefaults()
	if d.RetryInitial > d.RetryMax {
		return fmt.Errorf("retry initial backoff %s exceeds the maximum %s", d.RetryInitial, d.RetryMax)
	}
	if d.TaskBatchSize > d.TasksPerJob {
		return fmt.Errorf("task batch size %d exceeds tasks per job %d", d.TaskBatchSize, d.TasksPerJob)
	}
	switch c.Orphans {
	case "", OrphansExpired, OrphansAll, OrphansNone:
	default:
		return fmt.Errorf("unknown orphan policy %q: use expired, all or none", c.Orphans)
	}
	for _, n := range c.NamespaceNames {
		if n == "" {
			return errors.New("namespace name is empty")
		}
	}
	if c.QueueGlob != "" {
		if _, err := path.Match(c.QueueGlob, ""); err != nil {
			return fmt.Errorf("queue glob %q: %w", c.QueueGlob, err)
		}
	}
	if err := c.Partition.Validate(); err != nil {
		return err
	}
	for _, t := range c.Tables {
		if t != store.V1 && t != store.V2 {
			return fmt.Errorf("unknown table version %d", t)
		}
	}
	return nil
}
