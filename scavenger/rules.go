package scavenger

// The rule book: every decision of what a pass may delete, as pure
// functions of the rules in force, a decoded row or queue, and the time.
// Walkers (queueJob's, windowJob's, Temporal's mode, orphanJob) read rows
// and delete what the book says; none of them compares an expiry, an ack
// level or an idle time itself.
//
//	row                  facts                                   verdict              deleted
//	task                 expired                                 WhyExpired           yes (ReasonExpired)
//	task                 at or below ack level, BelowAckLevel    WhyBelowAckLevel     yes (ReasonBelowAckLevel; if unreadable, also counted bad)
//	task                 unreadable                              WhyBad               no (counted bad, logged, reported)
//	task                 neither                                 WhyLive              no; stops the walk without PastLiveHead
//	task behind a live   without PastLiveHead, expired           WhyExpiredBehindHead no (Stats.TasksExpiredLeft)
//	task behind a live   without PastLiveHead, other/unreadable  WhyBehindHead        no (not decided, not counted)
//	task behind a live   with PastLiveHead, expired              WhyPastLiveHead      yes (ReasonExpired)
//	orphan task          unreadable                              WhyBad               no (counted bad, logged, reported)
//	orphan task          expired                                 WhyOrphanExpired     yes (ReasonOrphan)
//	orphan task          created ≥ Grace ago, OrphansAll         WhyOrphanOld         yes (ReasonOrphan)
//	orphan task          neither                                 WhyLive              no (Stats.OrphansLeft)
//	queue row            unreadable                              WhyBad               no (counted bad when read)
//	queue row            a task left in a subqueue               WhyNotEmpty          no
//	queue row            name has a protected prefix             WhyProtected         no
//	queue row            updated less than Grace ago             WhyBusy              no
//	queue row            other table still holds its tasks       WhyOtherTableTasks   no
//	queue row            empty, idle for Grace                   WhyIdle              yes (fenced on range_id)
//
// With ClosedWorkflows (never in CompatTemporal), a task the table above
// keeps is judged again by its run (closed): the pass looks the run up in
// Temporal's executions tables (closed.go reads the facts; this file
// decides on them). Its tasks may sit anywhere in a queue, so a kept task
// stops no walk.
//
//	facts of a kept task                                         verdict              deleted
//	blob unreadable, unknown fields, a component_ref, empty      WhyLive (not looked  no
//	  workflow or run id, ids that are no canonical UUID           up: closedCandidate)
//	global namespace (without ClosedWorkflowsGlobal)             WhyLive (not looked) no
//	lookup incomplete or failed                                  (the walk fails)     no
//	run's executions row: COMPLETED                              WhyClosedRun         yes (ReasonClosedWorkflow)
//	run's executions row: any other state, unreadable, unknown   as the table above   no
//	  fields
//	no executions row (every row below: Stats.TasksRunNotFound if kept)
//	  without ClosedDeletedRuns                                  as the table above   no
//	  current_executions points at the run                       as the table above   no
//	  the miss not proven (shard count unproven this pass, and   as the table above   no
//	    no current row in the shard pointing at another run)
//	  namespace unknown or its retention unreadable              as the table above   no
//	  task created less than retention + RunDeletedMargin ago    as the table above   no
//	    (or no create time)
//	  older                                                      WhyRunDeleted        yes (ReasonRunDeleted)
//
// A run found COMPLETED is positive evidence: a wrong shard count can only
// make a lookup miss (a run's row is in one shard, run ids are unique),
// never find a COMPLETED row that is not there. A miss is evidence of
// nothing by itself; closed.go proves it (proveShardCount) or it is kept.
//
// Which rows a pass reads at all (its scope) is decided here too: inScope
// and namespaceInScope.

import (
	"path"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// Why is the reason of a verdict.
type Why uint8

// The reasons of verdicts; see the table at the top of rules.go.
const (
	WhyLive Why = iota
	WhyBad
	WhyBehindHead
	WhyExpiredBehindHead
	WhyExpired
	WhyPastLiveHead
	WhyBelowAckLevel
	WhyOrphanExpired
	WhyOrphanOld
	WhyNotEmpty
	WhyProtected
	WhyBusy
	WhyOtherTableTasks
	WhyIdle
	// WhyClosedRun and WhyRunDeleted are the closed-workflow rule's: the
	// task's run is COMPLETED, or gone past retention.
	WhyClosedRun
	WhyRunDeleted
)

var whyNames = [...]string{
	WhyLive: "live", WhyBad: "bad row", WhyBehindHead: "behind a live head", WhyExpiredBehindHead: "expired behind a live head",
	WhyExpired: "expired", WhyPastLiveHead: "expired past the live head", WhyBelowAckLevel: "below the ack level",
	WhyOrphanExpired: "expired orphan", WhyOrphanOld: "orphan older than the grace period",
	WhyNotEmpty: "not empty", WhyProtected: "protected", WhyBusy: "updated within the grace period",
	WhyOtherTableTasks: "the other table version holds its tasks", WhyIdle: "idle and empty",
	WhyClosedRun: "its run is closed", WhyRunDeleted: "its run was deleted by retention",
}

func (w Why) String() string {
	if int(w) < len(whyNames) {
		return whyNames[w]
	}
	return "unknown"
}

// A Verdict is the rule book's decision on one row.
type Verdict struct {
	Why Why
	// Stop: every later task of the subqueue is behind a live head and
	// kept; a walker may skip them (it still asks for each one it has
	// read, for the count of expired tasks left behind).
	Stop bool
	// Err is why the row could not be read: a WhyBad row, or a task the
	// ack level alone proves dispatched (WhyBelowAckLevel). A walker
	// reports it as a bad row.
	Err error
}

// Delete reports whether the row goes.
func (v Verdict) Delete() bool {
	switch v.Why {
	case WhyExpired, WhyPastLiveHead, WhyBelowAckLevel, WhyOrphanExpired, WhyOrphanOld, WhyIdle, WhyClosedRun, WhyRunDeleted:
		return true
	}
	return false
}

// Decided reports whether the verdict was taken on the row itself: a row
// behind a live head is only read.
func (v Verdict) Decided() bool { return v.Why != WhyBehindHead && v.Why != WhyExpiredBehindHead }

// Reason is the Stats reason of a task the verdict deletes.
func (v Verdict) Reason() Reason {
	switch v.Why {
	case WhyBelowAckLevel:
		return ReasonBelowAckLevel
	case WhyOrphanExpired, WhyOrphanOld:
		return ReasonOrphan
	case WhyClosedRun:
		return ReasonClosedWorkflow
	case WhyRunDeleted:
		return ReasonRunDeleted
	}
	return ReasonExpired
}

// queueFacts is what the rule book needs of a queue row.
type queueFacts struct {
	bad        bool // the row did not decode
	name       string
	lastUpdate time.Time
	// empty: no task is left in any subqueue; otherTasks: the other table
	// version, which the row says may hold tasks, does.
	empty, otherTasks bool
}

// ruleBook is what walkers ask. Rules, defaults filled in, is the book;
// tests wrap it to prove that every walker defers to it.
type ruleBook interface {
	// task judges a task of subqueue sq; behind: a task before it in the
	// subqueue was kept (as live or bad) by this pass.
	task(sq subqueue, row store.TaskRow, behind bool, now time.Time) Verdict
	// orphan judges a task no queue row owns.
	orphan(row store.TaskRow, now time.Time) Verdict
	// queue judges a queue row.
	queue(q queueFacts, now time.Time) Verdict
	// inScope reports whether a queue row is within the pass's scope.
	inScope(key store.QueueKey, name string) bool
	// namespaceInScope reports whether a task_queue_id is within the
	// pass's namespaces.
	namespaceInScope(id []byte) bool
	// closedCandidate reports whether the closed-workflow rule may judge
	// a task by its run: only then is the run looked up.
	closedCandidate(t taskRun) bool
	// closed judges again, by its run, a task that task judged v.
	closed(v Verdict, f runFacts, now time.Time) Verdict
}

// taskRun is what the closed-workflow rule needs of a task's blob.
type taskRun struct {
	run wire.TaskRun
	err error // the blob did not decode
	// canonical: the namespace and run ids are UUIDs in their canonical
	// spelling (the shard formula hashes the text).
	canonical bool
	ns        nsFacts
	nsKnown   bool // the namespaces table has the task's namespace
}

// nsFacts is what the closed-workflow rule reads of a namespaces row.
type nsFacts struct {
	retention time.Duration
	readable  bool // the retention could be read
	global    bool
}

// runFacts is what a pass knows of a task's run once the closed-workflow
// rule has looked it up.
type runFacts struct {
	// looked: a complete, error-free lookup answered for this run.
	// Absence is inferred from nothing else.
	looked bool
	// found: the run's executions row; stateOK: its state decoded, with
	// no field this build does not know.
	found, stateOK bool
	state          wire.ExecutionState
	// currentIsRun: the workflow's current_executions row points at this
	// run (looked up only when the executions row is missing and
	// ClosedDeletedRuns is on).
	currentIsRun bool
	// missProven: a missing executions row is evidence that the run is
	// gone: the pass proved the shard count, or the workflow's
	// current_executions row, found in the same shard, points at another
	// run (so the workflow's rows are in that shard).
	missProven bool
	ns         nsFacts
	nsKnown    bool
	create     time.Time // the task's create time
}

func (r Rules) task(sq subqueue, row store.TaskRow, behind bool, now time.Time) Verdict {
	times, err := wire.DecodeTaskTimes(row.Encoding, row.Data)
	expired := err == nil && wire.Expired(times.ExpiryTime, now)
	if behind && !r.PastLiveHead {
		if expired {
			return Verdict{Why: WhyExpiredBehindHead, Stop: true}
		}
		return Verdict{Why: WhyBehindHead, Stop: true}
	}
	switch {
	case expired && behind:
		return Verdict{Why: WhyPastLiveHead}
	case expired:
		return Verdict{Why: WhyExpired}
	case r.BelowAckLevel && sq.HasAck && !sq.Ack.Less(row.Key):
		// Its position alone proves it dispatched: it goes even if its
		// blob does not decode (and is reported as a bad row).
		return Verdict{Why: WhyBelowAckLevel, Err: err}
	case err != nil:
		return Verdict{Why: WhyBad, Err: err, Stop: !r.PastLiveHead}
	}
	return Verdict{Why: WhyLive, Stop: !r.PastLiveHead}
}

func (r Rules) orphan(row store.TaskRow, now time.Time) Verdict {
	times, err := wire.DecodeTaskTimes(row.Encoding, row.Data)
	switch {
	case err != nil:
		return Verdict{Why: WhyBad, Err: err}
	case wire.Expired(times.ExpiryTime, now):
		return Verdict{Why: WhyOrphanExpired}
	case r.Orphans == OrphansAll && !times.CreateTime.IsZero() && times.CreateTime.Unix() > 0 && now.Sub(times.CreateTime) >= r.Grace:
		return Verdict{Why: WhyOrphanOld}
	}
	return Verdict{Why: WhyLive}
}

func (r Rules) queue(q queueFacts, now time.Time) Verdict {
	switch {
	case q.bad:
		return Verdict{Why: WhyBad}
	case !q.empty:
		return Verdict{Why: WhyNotEmpty}
	case r.isProtected(q.name):
		return Verdict{Why: WhyProtected}
	case now.Sub(q.lastUpdate) < r.Grace:
		return Verdict{Why: WhyBusy}
	case q.otherTasks:
		return Verdict{Why: WhyOtherTableTasks}
	}
	return Verdict{Why: WhyIdle}
}

func (r Rules) closedCandidate(t taskRun) bool {
	switch {
	case !r.ClosedWorkflows || r.Compat == CompatTemporal:
		return false
	case t.err != nil, t.run.Unknown, t.run.ComponentRef, t.run.WorkflowID == "", t.run.RunID == "", !t.canonical:
		return false
	case t.nsKnown && t.ns.global && !r.ClosedWorkflowsGlobal:
		// Conflict resolution can rebuild a closed run of a global
		// namespace from another cluster's branch (see docs/rules.md).
		return false
	}
	return true
}

func (r Rules) closed(v Verdict, f runFacts, now time.Time) Verdict {
	if !r.ClosedWorkflows || r.Compat == CompatTemporal || v.Delete() {
		return v
	}
	if w := r.closedRun(f, now); w != WhyLive {
		return Verdict{Why: w}
	}
	// Dead tasks may sit anywhere in a queue: a kept one stops nothing.
	v.Stop = false
	return v
}

// closedRun is the verdict on a task by its run alone: WhyClosedRun,
// WhyRunDeleted or WhyLive (kept).
func (r Rules) closedRun(f runFacts, now time.Time) Why {
	switch {
	case !f.looked:
		return WhyLive
	case f.found && f.stateOK && f.state == wire.StateCompleted:
		return WhyClosedRun
	case f.found, f.currentIsRun:
		// Any other state; or a current row pointing at a run whose row is
		// gone: odd, kept.
		return WhyLive
	case !r.ClosedDeletedRuns, !f.missProven:
		// A miss proves nothing by itself: kept, counted as not found.
		return WhyLive
	case !f.nsKnown || !f.ns.readable || f.create.IsZero() || f.create.Unix() <= 0:
		return WhyLive
	case now.Sub(f.create) < f.ns.retention+RunDeletedMargin:
		return WhyLive
	}
	return WhyRunDeleted
}

// runNotFound reports whether a task the closed-workflow rule kept was
// kept with its run missing from executions (Stats.TasksRunNotFound).
func runNotFound(f runFacts, v Verdict) bool {
	return f.looked && !f.found && !v.Delete()
}

// isProtected reports whether a queue of this name must never be deleted.
func (r Rules) isProtected(name string) bool {
	for _, pre := range r.ProtectedPrefixes {
		if strings.HasPrefix(name, pre) {
			return true
		}
	}
	return false
}

// inScope applies Namespaces and QueueGlob to a queue row.
func (r Rules) inScope(key store.QueueKey, name string) bool {
	if !r.namespaceInScope(key.ID) {
		return false
	}
	if r.QueueGlob != "" {
		ok, _ := path.Match(r.QueueGlob, name)
		return ok
	}
	return true
}

// namespaceInScope reports whether a task_queue_id starts with one of the
// Namespaces.
func (r Rules) namespaceInScope(id []byte) bool {
	if len(r.Namespaces) == 0 {
		return true
	}
	for _, ns := range r.Namespaces {
		if len(id) >= 16 && string(id[:16]) == string(ns[:]) {
			return true
		}
	}
	return false
}
