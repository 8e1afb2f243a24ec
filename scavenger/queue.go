package scavenger

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/executor"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// queueJob scavenges one queue row and its subqueues. It holds keys and the
// few fields its decisions need, never blobs, so thousands of deferred jobs
// stay small.
type queueJob struct {
	p     *pass
	table store.Table
	key   store.QueueKey
	// rangeID is the lease seen when the queue was listed: the queue is
	// deleted only if it is still the same.
	rangeID    int64
	name       string
	lastUpdate time.Time
	// otherHasTasks: the row says the other table version may still hold
	// tasks this queue must drain.
	otherHasTasks bool
	// badBlob: the queue row did not decode. Its subqueue-0 tasks (whose
	// key is the row's own) are still scavenged; the row is kept.
	badBlob bool
	// backlog is the tasks the row says it holds (Stats.TasksBacklog).
	backlog int64

	subs []subqueue
	// si is the subqueue being walked, cursor the last task examined in
	// it, so a deferred job resumes where it stopped.
	si       int
	cursor   *store.TaskKey
	nonEmpty bool // a task was left in some subqueue
	// behind: the rule book kept a task of the subqueue being walked, so
	// the tasks after it are behind a live head. stopped: a windowJob
	// reached a live head of this queue and skips the rest of it.
	behind, stopped bool

	examined, deleted int
	// interrupted: the pass was stopped while it deleted the queue's row
	// (cancelled, or shut down): the queue is not processed, a resumed
	// pass does it again (doneAfter).
	interrupted bool
	// row is the walk's mark of this queue's row: finished once its
	// tasks are done and its row's delete, if any, has run.
	row rowMark
}

// subqueue is one subqueue of a queue row, as a pass uses it: the key of
// its tasks and its persisted ack level (wire owns the layout).
type subqueue struct {
	Key store.QueueKey
	// Ack is the ack level: every task at or below it was dispatched.
	// HasAck is false when none is recorded.
	Ack    store.TaskKey
	HasAck bool
}

// subqueuesOf lists the subqueues of the queue row key of table t.
func subqueuesOf(t store.Table, key store.QueueKey, info wire.TaskQueueInfo) []subqueue {
	ws := wire.Subqueues(key.ID, key.RangeHash, info, t == store.V2)
	out := make([]subqueue, len(ws))
	for i, w := range ws {
		out[i] = subqueue{
			Key:    store.QueueKey{RangeHash: w.RangeHash, ID: w.ID},
			Ack:    store.TaskKey{Pass: w.Ack.Pass, ID: w.Ack.TaskID},
			HasAck: w.HasAck,
		}
	}
	return out
}

func (p *pass) newQueueJob(t store.Table, r store.QueueRow) *queueJob {
	j := &queueJob{p: p, table: t, key: r.QueueKey, rangeID: r.RangeID}
	info, err := wire.DecodeTaskQueueInfo(r.Encoding, r.Data)
	if err != nil {
		j.badBlob = true
		p.c.bad(BadRow{Table: t, Queue: r.QueueKey, Err: err})
		p.cfg.Logger.Warn("bad queue row: kept, its subqueue-0 tasks still scavenged",
			"table", t.String(), "queue", r.QueueKey.String(), "err", err)
		if _, name, _, perr := wire.ParseQueueRowID(r.ID); perr == nil {
			j.name = name
		}
		j.subs = []subqueue{{Key: r.QueueKey}}
		return j
	}
	j.name = info.Name
	j.backlog = backlogOf(info)
	j.lastUpdate = info.LastUpdateTime
	j.otherHasTasks = info.OtherHasTasks
	j.subs = subqueuesOf(t, r.QueueKey, info)
	if p.cfg.Compat == CompatTemporal {
		j.subs = j.subs[:1]
	}
	return j
}

// Run implements executor.Job.
func (j *queueJob) Run(ctx context.Context) executor.Status {
	if j.p.cfg.Compat == CompatTemporal {
		return j.runTemporal(ctx)
	}
	return j.run(ctx)
}

// run is tqscavenger's mode: every subqueue, the whole expired prefix (and
// with PastLiveHead every expired run), tasks at or below the ack level
// with BelowAckLevel; the queue row goes only when no task is left in any
// subqueue.
func (j *queueJob) run(ctx context.Context) executor.Status {
	p := j.p
	budget := p.cfg.TasksPerJob
	for j.si < len(j.subs) {
		finished, err := j.walk(ctx, j.subs[j.si], &budget)
		if err != nil {
			return j.fail(ctx, "scavenge subqueue", err)
		}
		if !finished {
			return executor.Defer
		}
		j.si++
		j.cursor, j.behind = nil, false
	}
	p.walked(j)
	if !j.nonEmpty {
		has := false
		if j.otherHasTasks {
			var err error
			if has, err = j.otherTableHasTasks(ctx); err != nil {
				return j.fail(ctx, "check the other table version", err)
			}
		}
		return j.doneAfter(j.tryDeleteQueue(ctx, has))
	}
	return j.done()
}

// otherTableHasTasks checks what other_has_tasks claims: whether the other
// table version holds a task in any subqueue of this queue. Matching keeps
// the flag set after the other table is drained, so taken alone it would
// keep idle rows forever (100 of the 139 v1 rows of a real 1.32 database).
// Only matching's active table is written to; if the other table becomes
// active, its own row tracks its tasks. So an empty other table now means
// this row's flag guards nothing, and the row may go like any other.
func (j *queueJob) otherTableHasTasks(ctx context.Context) (bool, error) {
	p := j.p
	other := other(j.table)
	present := false
	for _, t := range p.present {
		present = present || t == other
	}
	if !present {
		return false, nil
	}
	subs := j.subs
	var row store.QueueRow
	err := p.retry(ctx, "read the other queue row", func(ctx context.Context) (err error) { row, err = p.st.GetQueue(ctx, other, j.key); return err })
	switch {
	case err == nil:
		info, derr := wire.DecodeTaskQueueInfo(row.Encoding, row.Data)
		if derr != nil {
			return true, nil // cannot tell: keep the row
		}
		os := subqueuesOf(other, j.key, info)
		if len(os) > len(subs) {
			subs = os
		}
		// A dry run deleted nothing: a queue its walk of the other
		// table would have emptied is empty for the pass it predicts
		// (converge.go), when that walk covered every subqueue asked.
		if p.cfg.DryRun && len(os) >= len(j.subs) && p.emptiedByPass(other, j.key) {
			return false, nil
		}
	case !errors.Is(err, store.ErrNotFound):
		return false, err
	}
	for _, sq := range subs {
		tasks, err := p.readTasks(ctx, other, sq.Key, nil, 1)
		if err != nil {
			return false, err
		}
		if len(tasks) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// walk scavenges one subqueue from the job's cursor until it is done
// (finished) or the budget of tasks to examine is spent.
func (j *queueJob) walk(ctx context.Context, sq subqueue, budget *int) (finished bool, err error) {
	p := j.p
	for *budget > 0 {
		var (
			tasks []store.TaskRow
			batch int
		)
		err := p.timed(ctx, "read tasks", 0, func(ctx context.Context, size int) (err error) {
			batch = size
			tasks, err = p.st.ReadTasks(ctx, j.table, sq.Key, j.cursor, size)
			return err
		})
		if err != nil {
			return false, err
		}
		if len(tasks) == 0 {
			return true, nil
		}
		now := p.cfg.Now()
		runs, err := p.closedPage(ctx, tasks)
		if err != nil {
			return false, err
		}
		var (
			run    []store.TaskKey // consecutive deletable tasks
			reason = ReasonExpired
			stop   bool
		)
		flush := func() error {
			if len(run) == 0 {
				return nil
			}
			err := j.deleteRun(ctx, sq.Key, run, reason)
			run = run[:0]
			return err
		}
		for i, task := range tasks {
			j.examined++
			*budget--
			behind := j.behind
			v := j.judge(sq, task, now)
			if runs != nil {
				v = j.judgeRun(v, runs[i], behind, now)
			}
			if v.Delete() {
				r := v.Reason()
				if len(run) > 0 && r != reason {
					if err := flush(); err != nil {
						return false, err
					}
				}
				reason = r
				run = append(run, task.Key)
				continue
			}
			j.nonEmpty = true
			if err := flush(); err != nil {
				return false, err
			}
			if v.Stop {
				j.leftBehind(sq, tasks[i+1:], now)
				stop = true
				break
			}
		}
		if err := flush(); err != nil {
			return false, err
		}
		last := tasks[len(tasks)-1].Key
		j.cursor = &last
		if stop {
			return true, nil
		}
		if len(tasks) < batch {
			return true, nil
		}
	}
	return false, nil
}

// judge asks the rule book about a task of subqueue sq, counts it as
// processed, and reports it if it could not be read.
func (j *queueJob) judge(sq subqueue, task store.TaskRow, now time.Time) Verdict {
	p := j.p
	v := p.book.task(sq, task, j.behind, now)
	p.c.table(j.table).tasksProcessed.Add(1)
	if v.Err != nil {
		p.badTask(j.table, j.key, task.Key, v)
	}
	if !v.Delete() {
		j.behind = true
	}
	return v
}

// judgeRun asks the rule book about a task again, by its run (the
// closed-workflow rule is on). With the rule a walk reads the whole queue:
// an expired task the book keeps behind a live head is counted as left,
// as a stopped walk counts it.
func (j *queueJob) judgeRun(v Verdict, f runFacts, behind bool, now time.Time) Verdict {
	w := j.p.book.closed(v, f, now)
	if runNotFound(f, w) {
		j.p.c.runNotFound(j.table, 1)
	}
	switch {
	case w.Delete():
		j.behind = behind // a deleted task is no live head
	case v.Why == WhyExpiredBehindHead:
		j.p.c.expiredLeft(j.table, 1)
	}
	return w
}

// badTask reports a task row that did not decode, once, where a walker
// decided on it.
func (p *pass) badTask(t store.Table, q store.QueueKey, k store.TaskKey, v Verdict) {
	p.c.bad(BadRow{Table: t, Queue: q, Task: &k, Err: v.Err})
	msg := "bad task row: kept"
	if v.Delete() {
		msg = "bad task row: deleted, " + v.Why.String()
	}
	p.cfg.Logger.Warn(msg, "table", t.String(), "queue", q.String(), "pass", k.Pass, "task_id", k.ID, "err", v.Err)
}

// leftBehind counts the expired tasks of a batch that stay behind a live
// one, for Stats.TasksExpiredLeft. Nothing is decided on them: one that
// does not decode is not reported.
func (j *queueJob) leftBehind(sq subqueue, rest []store.TaskRow, now time.Time) {
	var n int64
	for _, t := range rest {
		if j.expiredBehind(sq, t, now) {
			n++
		}
	}
	j.p.c.expiredLeft(j.table, n)
}

// expiredBehind reports whether a task read behind a live head is one the
// rule book would have deleted as expired.
func (j *queueJob) expiredBehind(sq subqueue, t store.TaskRow, now time.Time) bool {
	return j.p.book.task(sq, t, true, now).Why == WhyExpiredBehindHead
}

// deleteRun deletes consecutive deletable tasks of one subqueue. In v1 a
// key range is exact (matching appends only above the ids it has used); in
// v2 a new task may sort between old ones, so exactly the keys go.
func (j *queueJob) deleteRun(ctx context.Context, q store.QueueKey, run []store.TaskKey, r Reason) error {
	if j.table == store.V1 {
		return j.deleteRange(ctx, q, store.TaskRange{Min: run[0], Max: run[len(run)-1]}, 0, len(run), r)
	}
	p := j.p
	if p.cfg.DryRun {
		j.countDeleted(int64(len(run)), r)
		return nil
	}
	n, err := p.deleting(ctx, "delete tasks", int64(len(run)), &p.c.tasksUnknown, false, func(ctx context.Context) (int64, error) {
		return p.st.DeleteTaskSets(ctx, j.table, []store.TaskSet{{Queue: q, Keys: run}})
	})
	j.countDeleted(n, r)
	return err
}

// deleteRange deletes the tasks of q in rg, at most limit (0: all); read
// is how many tasks the caller read in rg, what a dry run counts.
func (j *queueJob) deleteRange(ctx context.Context, q store.QueueKey, rg store.TaskRange, limit, read int, r Reason) error {
	p := j.p
	if p.cfg.DryRun {
		j.countDeleted(int64(read), r)
		return nil
	}
	n, err := p.deleting(ctx, "delete tasks", int64(read), &p.c.tasksUnknown, false, func(ctx context.Context) (int64, error) {
		if limit > 0 {
			return p.st.DeleteTasks(ctx, j.table, q, rg, limit)
		}
		return p.st.DeleteTaskSets(ctx, j.table, []store.TaskSet{{Queue: q, Range: rg}})
	})
	j.countDeleted(n, r)
	return err
}

func (j *queueJob) countDeleted(n int64, r Reason) {
	j.p.c.deleted(j.table, r, n)
	j.deleted += int(n)
	if h := j.p.cfg.OnTasksDeleted; h != nil && n > 0 {
		h(j.table, j.key, r, n)
	}
}

// queueVerdict asks the rule book whether the queue row may go;
// otherTasks is what otherTableHasTasks found.
func (j *queueJob) queueVerdict(otherTasks bool) Verdict {
	return j.p.book.queue(queueFacts{bad: j.badBlob, name: j.name, lastUpdate: j.lastUpdate, empty: !j.nonEmpty, otherTasks: otherTasks}, j.p.cfg.Now())
}

// tryDeleteQueue deletes the queue row if the rule book says so (empty,
// idle for the grace period: see rules.go), fenced on the range_id seen
// when it was listed. otherTasks: the other table version holds tasks of
// this queue.
func (j *queueJob) tryDeleteQueue(ctx context.Context, otherTasks bool) bool {
	p := j.p
	if v := j.queueVerdict(otherTasks); !v.Delete() {
		if v.Why == WhyOtherTableTasks {
			p.keptForOther(j)
		}
		return true
	}
	tc := p.c.table(j.table)
	if p.cfg.DryRun {
		tc.queuesDeleted.Add(1)
		return true
	}
	n, err := p.deleting(ctx, "delete queue", 1, &p.c.queuesUnknown, false, func(ctx context.Context) (int64, error) {
		return p.st.DeleteQueues(ctx, j.table, []store.QueueFence{{QueueKey: j.key, RangeID: j.rangeID}})
	})
	if err == nil && n == 0 {
		err = store.ErrConditionFailed
	}
	switch {
	case err == nil:
		tc.queuesDeleted.Add(1)
		p.cfg.Logger.Debug("queue deleted", "table", j.table.String(), "queue", j.key.String(), "name", j.name)
	case errors.Is(err, store.ErrConditionFailed):
		// A matching host took the queue (or deleted it) since it was
		// listed: it is alive, keep it.
		p.c.queuesKept.Add(1)
		p.cfg.Logger.Debug("queue changed since listed: kept", "table", j.table.String(), "queue", j.key.String(), "name", j.name)
	default:
		j.interrupted = interrupted(ctx, err)
		j.fail(ctx, "delete queue", err)
		return false
	}
	return true
}

// doneAfter ends the job once its row delete was tried: done, or an error
// (already recorded) that holds the walk's mark before the row. A queue
// whose row delete the pass's stop interrupted is not counted as
// processed: its row's work is not done, a resumed pass does it and counts
// it, so that the counts a checkpoint is recorded with (a worker's
// heartbeat) count no queue its positions do not pass.
func (j *queueJob) doneAfter(settled bool) executor.Status {
	if !settled && j.interrupted {
		return executor.Err
	}
	s := j.done()
	if !settled {
		return executor.Err
	}
	return s
}

func (j *queueJob) done() executor.Status {
	j.p.c.table(j.table).queuesProcessed.Add(1)
	j.p.c.tasksBacklogDone.Add(j.backlog)
	if log := j.p.cfg.Logger; log.Enabled(context.Background(), slog.LevelDebug) {
		log.Debug("queue processed", "table", j.table.String(), "queue", j.key.String(), "name", j.name,
			"tasks_examined", j.examined, "tasks_deleted", j.deleted)
	}
	return executor.Done
}

// interrupted reports whether err ended a job because the pass was
// stopped (cancelled, or shut down), not because of the job.
func interrupted(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, ErrShutdown)
}

// fail records a job that could not finish. A cancelled pass is not an
// error of the job.
func (j *queueJob) fail(ctx context.Context, op string, err error) executor.Status {
	if interrupted(ctx, err) {
		return executor.Err
	}
	c := causeOf(err)
	j.p.c.fail(Failure{Op: op, Table: j.table, Queue: j.key, Cause: c, Err: err})
	j.p.cfg.Logger.Error("queue job failed", "op", op, "table", j.table.String(), "queue", j.key.String(), "name", j.name, "cause", string(c), "err", err)
	return executor.Err
}

// readTasks reads a batch with retries.
func (p *pass) readTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	var tasks []store.TaskRow
	err := p.retry(ctx, "read tasks", func(ctx context.Context) (err error) {
		tasks, err = p.st.ReadTasks(ctx, t, q, after, limit)
		return err
	})
	return tasks, err
}

// backlogOf is the tasks a queue row says it holds: Temporal's
// approximate_backlog_count, summed over its subqueues or the row's own,
// whichever is larger; never negative.
func backlogOf(info wire.TaskQueueInfo) int64 {
	var subs int64
	for _, s := range info.Subqueues {
		subs += min(max(0, s.ApproximateBacklogCount), maxBacklog)
	}
	return min(max(subs, info.ApproximateBacklogCount, 0), maxBacklog)
}

// maxBacklog bounds one row's backlog in the sum, so that no row, however
// corrupt its count, makes the sum overflow.
const maxBacklog = 1 << 32
