package scavenger

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// Reason says why a task was deleted.
type Reason string

// The reasons a task may be deleted.
const (
	// ReasonExpired: its expiry_time passed. Temporal's rule.
	ReasonExpired Reason = "expired"
	// ReasonBelowAckLevel: at or below its subqueue's persisted ack level,
	// so matching already dispatched it (Config.BelowAckLevel).
	ReasonBelowAckLevel Reason = "below_ack_level"
	// ReasonOrphan: no queue row owns it, and it is expired or, with
	// Config.Orphans = OrphansAll, older than the grace period.
	ReasonOrphan Reason = "orphan"
	// ReasonClosedWorkflow: its run's executions row is COMPLETED
	// (Rules.ClosedWorkflows).
	ReasonClosedWorkflow Reason = "closed_workflow"
	// ReasonRunDeleted: its run's executions row is gone and the task is
	// older than its namespace's retention and RunDeletedMargin
	// (Rules.ClosedWorkflows).
	ReasonRunDeleted Reason = "run_deleted"
)

// Reasons lists every Reason, in a fixed order.
var Reasons = []Reason{ReasonExpired, ReasonBelowAckLevel, ReasonOrphan, ReasonClosedWorkflow, ReasonRunDeleted}

// Stats are a pass's counts and how it went. Read them while a pass runs
// with Scavenger.Stats, or at the end from Run. The totals are the sums of
// Tables.
type Stats struct {
	Started time.Time
	Elapsed time.Duration

	// Counts are the pass's totals: Stats.TasksDeleted and the like.
	Counts

	// ListingDone: every queue table in scope has been listed, so
	// QueuesListed is the pass's total and progress can be estimated.
	ListingDone bool
	// TasksBacklog is the tasks the queue rows listed so far say they
	// hold: the sum of Temporal's approximate_backlog_count of their
	// subqueues (or of the row, where larger). Matching keeps it roughly
	// (85-100% of the task rows of the real 1.32 databases in
	// internal/fixture), so it serves the progress estimate, never a
	// decision.
	TasksBacklog int64
	// TasksBacklogDone is the part of TasksBacklog of the queues
	// processed: against the tasks examined, it says how far the counts
	// are off.
	TasksBacklogDone int64

	// DryRun: the pass was a dry run (Config.DryRun). Nothing was
	// deleted, so every *Deleted count is 0; WouldDeleteTasks and
	// WouldDeleteQueues count what a real pass would have deleted at the
	// same moment.
	DryRun bool

	// FailuresByCause counts the failed jobs (Errors) by Cause; Failures
	// names the first MaxFailures of them.
	FailuresByCause map[Cause]int64
	Failures        []Failure

	// Outcome is how the pass ended; set in the Stats Run returns, empty
	// while it runs.
	Outcome Outcome
	// Resumed: the pass went on from a checkpoint (Config.Resume), and
	// ResumedFrom are its positions: rows at or before them were not
	// examined by this pass. The outcome stays Completed for a resumed
	// pass that finished, so that what keys on it keeps working.
	Resumed     bool
	ResumedFrom []WalkPosition
	// Cause is why a Failed pass failed (CauseLockLost for a lost lock;
	// its jobs' causes are in FailuresByCause); empty for other outcomes.
	Cause Cause

	// Pace is the pace's controller's state, now (while the pass runs) or
	// at the end.
	Pace PaceState

	// Tables breaks the counts down by table version.
	Tables map[store.Table]TableStats

	// BadRows lists rows that could not be processed (undecodable blob,
	// unknown encoding); the first MaxBadRows are kept, BadRowCount counts
	// them all.
	BadRows []BadRow
}

// TableStats are the counts of one table version. In a dry run
// QueuesDeleted and TasksDeleted are 0 and the Would* fields count what
// would have been deleted.
type TableStats struct {
	QueuesListed, QueuesProcessed, QueuesDeleted int64
	TasksProcessed                               int64
	TasksDeleted                                 map[Reason]int64
	BadRows                                      int64

	WouldDeleteQueues int64
	WouldDeleteTasks  map[Reason]int64

	// TasksExpiredLeft is this table's share of Stats.TasksExpiredLeft.
	TasksExpiredLeft int64
	// TasksRunNotFound is this table's share of Stats.TasksRunNotFound.
	TasksRunNotFound int64
}

// Removed returns the tasks and queue rows the pass deleted or, in a dry
// run, would have deleted: what its progress is measured by.
func (s Stats) Removed() (tasks, queues int64) {
	if s.DryRun {
		return s.WouldDeleteTasks, s.WouldDeleteQueues
	}
	return s.TasksDeleted, s.QueuesDeleted
}

// Outcome is how a pass ended.
type Outcome string

// The outcomes of a pass. Only Completed and CompletedBadRows are a
// success.
const (
	// Completed: every queue was done.
	Completed Outcome = "completed"
	// CompletedBadRows: every queue was done, but some rows could not be
	// read (they are kept; see Stats.BadRows).
	CompletedBadRows Outcome = "completed_with_bad_rows"
	// Failed: a job failed after its retries, or the pass could not run.
	Failed Outcome = "failed"
	// Interrupted: the pass was shut down or its context ended first.
	Interrupted Outcome = "interrupted"
)

// Success reports whether o is a success: Completed or CompletedBadRows.
func (o Outcome) Success() bool { return o == Completed || o == CompletedBadRows }

// Cause classifies why a job failed.
type Cause string

// The causes of a failed job.
const (
	CauseReadOnly         Cause = "read_only"         // the database refused writes
	CauseDiskFull         Cause = "disk_full"         // the database's disk is full
	CauseStatementTimeout Cause = "statement_timeout" // statements kept running out of the statement timeout
	CauseRetriesExhausted Cause = "retries_exhausted" // transient errors outlasted Config.RetryFor
	CauseError            Cause = "error"             // any other error
	// CauseLockLost: the pass's lock was lost, or could not be confirmed
	// before success was reported (a pass's cause, never a job's).
	CauseLockLost Cause = "lock_lost"
)

// CauseOf classifies err, an error of a job or of a pass, as the
// failure counts do.
func CauseOf(err error) Cause { return causeOf(err) }

// causeOf classifies err.
func causeOf(err error) Cause {
	switch {
	case errors.Is(err, store.ErrLockLost):
		return CauseLockLost
	case errors.Is(err, store.ErrReadOnly):
		return CauseReadOnly
	case errors.Is(err, store.ErrDiskFull):
		return CauseDiskFull
	case errors.Is(err, ErrGaveUp) && isTimeout(err):
		return CauseStatementTimeout
	case errors.Is(err, ErrGaveUp):
		return CauseRetriesExhausted
	}
	return CauseError
}

// MaxFailures caps Stats.Failures.
const MaxFailures = 10

// Failure names a job that failed and why.
type Failure struct {
	Op    string // what it was doing: "scan tasks", "delete queues", …
	Table store.Table
	// Queue is the (first) queue of the job.
	Queue store.QueueKey
	Cause Cause
	Err   error
}

func (f Failure) String() string {
	return fmt.Sprintf("%s %s %s: %v", f.Op, f.Table, f.Queue, f.Err)
}

// MaxBadRows caps Stats.BadRows.
const MaxBadRows = 100

// BadRow names a row that could not be processed and why.
type BadRow struct {
	Table store.Table
	Queue store.QueueKey
	// Task is the task's key, or nil for a queue row.
	Task *store.TaskKey
	Err  error
}

func (b BadRow) String() string {
	var odd *OddHashError
	if errors.As(b.Err, &odd) {
		// Its Queue.RangeHash cannot hold the stored value.
		if b.Task != nil {
			return fmt.Sprintf("%s task %d/%x pass %d id %d: %v", b.Table, odd.RangeHash, b.Queue.ID, b.Task.Pass, b.Task.ID, b.Err)
		}
		return fmt.Sprintf("%s queue %d/%x: %v", b.Table, odd.RangeHash, b.Queue.ID, b.Err)
	}
	if b.Task != nil {
		if b.Table == store.V2 {
			return fmt.Sprintf("%s task %s pass %d id %d: %v", b.Table, b.Queue, b.Task.Pass, b.Task.ID, b.Err)
		}
		return fmt.Sprintf("%s task %s id %d: %v", b.Table, b.Queue, b.Task.ID, b.Err)
	}
	return fmt.Sprintf("%s queue %s: %v", b.Table, b.Queue, b.Err)
}

// tableCounters are the live counts of one table version.
type tableCounters struct {
	queuesListed, queuesProcessed, queuesDeleted, tasksProcessed, badRows atomic.Int64
	tasksDeleted                                                          [5]atomic.Int64 // by index in Reasons
	tasksExpiredLeft, tasksRunNotFound                                    atomic.Int64
}

// counters are the live, concurrently updated form of Stats. The
// deletion counters count what the pass deleted or, when dryRun, what it
// would have; snapshot reports them under the right name.
type counters struct {
	dryRun                                     bool
	tables                                     [3]tableCounters // by store.Table (1, 2)
	queuesKept, tasksExpiredLeft               atomic.Int64
	tasksRunNotFound                           atomic.Int64
	orphansFound, orphansLeft, errors, retries atomic.Int64
	tasksUnknown, queuesUnknown                atomic.Int64
	listingDone                                atomic.Bool
	tasksBacklog, tasksBacklogDone             atomic.Int64

	mu       sync.Mutex
	badRows  []BadRow
	failures []Failure
	byCause  map[Cause]int64
}

// fail records a failed job.
func (c *counters) fail(f Failure) {
	c.errors.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byCause == nil {
		c.byCause = map[Cause]int64{}
	}
	c.byCause[f.Cause]++
	if len(c.failures) < MaxFailures {
		c.failures = append(c.failures, f)
	}
}

func (c *counters) table(t store.Table) *tableCounters { return &c.tables[t] }

// expiredLeft counts n expired tasks of table t left in place.
func (c *counters) expiredLeft(t store.Table, n int64) {
	c.tasksExpiredLeft.Add(n)
	c.tables[t].tasksExpiredLeft.Add(n)
}

// runNotFound counts n tasks of table t kept with their run missing from
// executions.
func (c *counters) runNotFound(t store.Table, n int64) {
	c.tasksRunNotFound.Add(n)
	c.tables[t].tasksRunNotFound.Add(n)
}

func (c *counters) deleted(t store.Table, r Reason, n int64) {
	for i, x := range Reasons {
		if x == r {
			c.tables[t].tasksDeleted[i].Add(n)
		}
	}
}

func (c *counters) bad(b BadRow) {
	c.tables[b.Table].badRows.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.badRows) < MaxBadRows {
		c.badRows = append(c.badRows, b)
	}
}

// badMore counts n more bad rows of table t that are not listed.
func (c *counters) badMore(t store.Table, n int64) {
	if n > 0 {
		c.tables[t].badRows.Add(n)
	}
}

func (c *counters) snapshot() Stats {
	c.mu.Lock()
	bad := append([]BadRow(nil), c.badRows...)
	failures := append([]Failure(nil), c.failures...)
	byCause := maps.Clone(c.byCause)
	c.mu.Unlock()
	s := Stats{
		Counts: Counts{
			QueuesKept:       c.queuesKept.Load(),
			TasksExpiredLeft: c.tasksExpiredLeft.Load(),
			TasksRunNotFound: c.tasksRunNotFound.Load(),
			OrphansFound:     c.orphansFound.Load(),
			OrphansLeft:      c.orphansLeft.Load(),
			Errors:           c.errors.Load(),
			Retries:          c.retries.Load(),
			TasksUnknown:     c.tasksUnknown.Load(),
			QueuesUnknown:    c.queuesUnknown.Load(),
		},
		ListingDone:      c.listingDone.Load(),
		TasksBacklog:     c.tasksBacklog.Load(),
		TasksBacklogDone: c.tasksBacklogDone.Load(),
		Failures:         failures,
		FailuresByCause:  byCause,
		BadRows:          bad,
		Tables:           map[store.Table]TableStats{},
		DryRun:           c.dryRun,
	}
	if s.FailuresByCause == nil {
		s.FailuresByCause = map[Cause]int64{}
	}
	for _, t := range []store.Table{store.V1, store.V2} {
		tc := &c.tables[t]
		ts := TableStats{
			QueuesListed:     tc.queuesListed.Load(),
			QueuesProcessed:  tc.queuesProcessed.Load(),
			TasksProcessed:   tc.tasksProcessed.Load(),
			BadRows:          tc.badRows.Load(),
			TasksExpiredLeft: tc.tasksExpiredLeft.Load(),
			TasksRunNotFound: tc.tasksRunNotFound.Load(),
			TasksDeleted:     map[Reason]int64{},
			WouldDeleteTasks: map[Reason]int64{},
		}
		tasks, queues := ts.TasksDeleted, &ts.QueuesDeleted
		if c.dryRun {
			tasks, queues = ts.WouldDeleteTasks, &ts.WouldDeleteQueues
		}
		*queues = tc.queuesDeleted.Load()
		for i, r := range Reasons {
			n := tc.tasksDeleted[i].Load()
			ts.TasksDeleted[r], ts.WouldDeleteTasks[r] = 0, 0
			tasks[r] = n
			s.TasksDeleted += ts.TasksDeleted[r]
			s.WouldDeleteTasks += ts.WouldDeleteTasks[r]
		}
		s.QueuesListed += ts.QueuesListed
		s.QueuesProcessed += ts.QueuesProcessed
		s.QueuesDeleted += ts.QueuesDeleted
		s.WouldDeleteQueues += ts.WouldDeleteQueues
		s.TasksProcessed += ts.TasksProcessed
		s.BadRowCount += ts.BadRows
		s.Tables[t] = ts
	}
	return s
}
