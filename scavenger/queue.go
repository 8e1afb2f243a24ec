package scavenger

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/tqscavenger/tqscavenger/executor"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// queueJob scavenges one queue row. It holds keys and the few fields its
// decisions need, never blobs, so thousands of deferred jobs stay small.
type queueJob struct {
	p     *pass
	table store.Table
	key   store.QueueKey
	// rangeID is the lease seen when the queue was listed: the queue is
	// deleted only if it is still the same.
	rangeID    int64
	name       string
	lastUpdate time.Time
	// badBlob: the queue row did not decode. Its subqueue-0 tasks (whose
	// key is the row's own) are still scavenged; the row is kept.
	badBlob bool

	// cursor is the last task examined in subqueue 0, so a deferred job
	// resumes where it stopped instead of rereading.
	cursor   *store.TaskKey
	examined int
	deleted  int
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
		return j
	}
	j.name = info.Name
	j.lastUpdate = info.LastUpdateTime
	return j
}

// Run implements executor.Job with Temporal's algorithm: read a batch of
// the oldest tasks; stop at the first live one; if all are expired delete
// them and go on; an empty queue may be deleted; after TasksPerJob tasks,
// yield the worker.
func (j *queueJob) Run(ctx context.Context) executor.Status {
	p := j.p
	batch := p.cfg.TaskBatchSize
	for i := 0; i < p.cfg.TasksPerJob/batch; i++ {
		var tasks []store.TaskRow
		err := p.retry(ctx, func() (err error) {
			tasks, err = p.st.ReadTasks(ctx, j.table, j.key, j.cursor, batch)
			return err
		})
		if err != nil {
			return j.fail(ctx, "read tasks", err)
		}
		if len(tasks) == 0 {
			j.tryDeleteQueue(ctx)
			return j.done()
		}
		now := p.cfg.Now()
		for _, task := range tasks {
			p.c.tasksProcessed.Add(1)
			j.examined++
			times, err := wire.DecodeTaskTimes(task.Encoding, task.Data)
			if err != nil {
				// An undecodable task counts as live: it ends the
				// expired prefix and is never deleted.
				k := task.Key
				p.c.bad(BadRow{Table: j.table, Queue: j.key, Task: &k, Err: err})
				p.cfg.Logger.Warn("bad task row: kept", "table", j.table.String(), "queue", j.key.String(), "task_id", k.ID, "err", err)
				return j.done()
			}
			if !wire.Expired(times.ExpiryTime, now) {
				return j.done()
			}
		}
		last := tasks[len(tasks)-1].Key
		if !p.cfg.DryRun {
			var n int64
			err = p.retry(ctx, func() (err error) {
				n, err = p.st.DeleteTasks(ctx, j.table, j.key, store.TaskRange{Max: last}, len(tasks))
				return err
			})
			if err != nil {
				return j.fail(ctx, "delete tasks", err)
			}
			p.c.tasksDeleted.Add(n)
			j.deleted += int(n)
		} else {
			p.c.tasksDeleted.Add(int64(len(tasks)))
			j.deleted += len(tasks)
		}
		j.cursor = &last
		if len(tasks) < batch {
			j.tryDeleteQueue(ctx)
			return j.done()
		}
	}
	return executor.Defer
}

// tryDeleteQueue deletes the queue row if it has been idle for the grace
// period, fenced on the range_id seen when it was listed.
func (j *queueJob) tryDeleteQueue(ctx context.Context) {
	p := j.p
	if j.badBlob || p.protected(j.name) {
		return
	}
	if p.cfg.Now().Sub(j.lastUpdate) < p.cfg.Grace {
		return
	}
	if p.cfg.DryRun {
		p.c.queuesDeleted.Add(1)
		return
	}
	err := p.retry(ctx, func() error { return p.st.DeleteQueue(ctx, j.table, j.key, j.rangeID) })
	switch {
	case err == nil:
		p.c.queuesDeleted.Add(1)
		p.cfg.Logger.Debug("queue deleted", "table", j.table.String(), "queue", j.key.String(), "name", j.name)
	case errors.Is(err, store.ErrConditionFailed):
		// A matching host took the queue (or deleted it) since it was
		// listed: it is alive, keep it.
		p.c.queuesKept.Add(1)
		p.cfg.Logger.Debug("queue changed since listed: kept", "table", j.table.String(), "queue", j.key.String(), "name", j.name)
	default:
		j.fail(ctx, "delete queue", err)
	}
}

func (j *queueJob) done() executor.Status {
	j.p.c.queuesProcessed.Add(1)
	if log := j.p.cfg.Logger; log.Enabled(context.Background(), slog.LevelDebug) {
		log.Debug("queue processed", "table", j.table.String(), "queue", j.key.String(), "name", j.name,
			"tasks_examined", j.examined, "tasks_deleted", j.deleted)
	}
	return executor.Done
}

// fail records a job that could not finish. A cancelled pass is not an
// error of the job.
func (j *queueJob) fail(ctx context.Context, op string, err error) executor.Status {
	if ctx.Err() != nil {
		return executor.Err
	}
	j.p.c.errors.Add(1)
	j.p.cfg.Logger.Error("queue job failed", "op", op, "table", j.table.String(), "queue", j.key.String(), "name", j.name, "err", err)
	return executor.Err
}
