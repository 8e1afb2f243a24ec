package scavenger

// Temporal's own algorithm, for CompatTemporal: exactly the rows Temporal's
// scavenger deletes, batch by batch.

import (
	"context"

	"github.com/tqscavenger/tqscavenger/internal/executor"
	"github.com/tqscavenger/tqscavenger/store"
)

// runTemporal is Temporal's algorithm, batch by batch: read a batch of the
// oldest tasks of subqueue 0; stop at the first live one; if all are
// expired delete "task_id <= last" limited to the batch, and go on; an
// empty queue may be deleted; after TasksPerJob tasks, yield the worker.
func (j *queueJob) runTemporal(ctx context.Context) executor.Status {
	p := j.p
	batch := p.cfg.TaskBatchSize
	sq := j.subs[0]
	for i := 0; i < p.cfg.TasksPerJob/batch; i++ {
		tasks, err := p.readTasks(ctx, j.table, sq.Key, j.cursor, batch)
		if err != nil {
			return j.fail(ctx, "read tasks", err)
		}
		if len(tasks) == 0 {
			return j.doneAfter(j.tryDeleteQueue(ctx, false))
		}
		now := p.cfg.Now()
		for i, task := range tasks {
			j.examined++
			// Temporal deletes "task_id <= last": a batch goes only if
			// the book deletes every task of it.
			if !j.judge(sq, task, now).Delete() {
				j.leftBehind(sq, tasks[i+1:], now)
				return j.done()
			}
		}
		last := tasks[len(tasks)-1].Key
		if err := j.deleteRange(ctx, sq.Key, store.TaskRange{Max: last}, len(tasks), len(tasks), ReasonExpired); err != nil {
			return j.fail(ctx, "delete tasks", err)
		}
		j.cursor = &last
		if len(tasks) < batch {
			return j.doneAfter(j.tryDeleteQueue(ctx, false))
		}
	}
	return executor.Defer
}
