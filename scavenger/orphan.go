package scavenger

import (
	"context"
	"errors"
	"fmt"

	"github.com/tqscavenger/tqscavenger/internal/executor"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// orphanPageSize is how many distinct task_queue_ids one listing reads.
const orphanPageSize = 1000

// scanOrphans walks the distinct task_queue_ids of task table t. An id with
// an exact queue row is subqueue 0 of a live queue. Any other id is
// resolved by point lookups of each queue row it could belong to (every
// valid split of the id into row id and subqueue index); if none exists
// its tasks are orphans and a job scavenges them. Memory stays one page of
// ids, whatever the number of queues. It starts from pos and skips the
// ids of its finished runs (a resumed walk: an earlier pass finished
// them).
func (p *pass) scanOrphans(ctx context.Context, t store.Table, pos WalkPosition, m *walkMark) error {
	after := p.start(pos)
	for {
		var refs []store.TaskQueueRef
		err := p.retry(ctx, "list task queue ids", func(ctx context.Context) (err error) {
			refs, err = p.st.ListTaskQueueIDs(ctx, t, after, orphanPageSize)
			return err
		})
		if err != nil {
			return fmt.Errorf("list %s task queue ids: %w", t, err)
		}
		n, more := p.clip(len(refs), orphanPageSize, func(i int) store.QueueKey { return refs[i].QueueKey })
		refs = refs[:n]
		if n == 0 {
			m.end(ctx)
			return nil
		}
		keys := make([]store.QueueKey, len(refs))
		for i, ref := range refs {
			keys[i] = ref.QueueKey
		}
		pg := m.open(keys, !more)
		for i, ref := range refs {
			row := m.row(pg, i)
			if ref.HasQueueRow || !p.book.namespaceInScope(ref.ID) || pos.finishedAt(ref.QueueKey) {
				row.finished(ctx)
				continue
			}
			parents, orphan, err := p.resolveParents(ctx, t, ref.QueueKey)
			if err != nil {
				return err
			}
			if !orphan {
				row.finished(ctx)
				continue
			}
			if err := p.ex.Submit(ctx, m.track(&orphanJob{p: p, table: t, key: ref.QueueKey, parents: parents}, row)); err != nil {
				return err
			}
		}
		k := refs[len(refs)-1].QueueKey
		m.seal(ctx, pg)
		if !more {
			return nil
		}
		after = &k
	}
}

// resolveParents is ResolveParents with the pass's retries and bad-row
// reporting.
func (p *pass) resolveParents(ctx context.Context, t store.Table, key store.QueueKey) ([]store.QueueKey, bool, error) {
	var (
		parents []store.QueueKey
		orphan  bool
	)
	err := p.retry(ctx, "look up queue rows", func(ctx context.Context) (err error) {
		parents, orphan, err = ResolveParents(ctx, p.st, t, key)
		return err
	})
	if errors.Is(err, ErrNoParentLayout) {
		p.c.bad(BadRow{Table: t, Queue: key, Err: err})
		p.cfg.Logger.Warn("bad task_queue_id: its tasks kept", "table", t.String(), "task_queue", key.String(), "err", err)
		return nil, false, nil
	}
	return parents, orphan, err
}

// ErrNoParentLayout reports a task_queue_id that no queue row could own.
var ErrNoParentLayout = errors.New("task_queue_id matches no queue id layout; tasks kept")

// ResolveParents returns the queue rows of table t that could own the
// tasks under key (one per valid split of the id into queue row id and
// subqueue index, see wire.CandidateParents), and whether none of them
// exists: then the tasks are orphans. It looks each candidate up, except
// key itself, which callers have already found absent. An id that no queue
// row could own gives ErrNoParentLayout: what it is cannot be proven.
func ResolveParents(ctx context.Context, st store.Store, t store.Table, key store.QueueKey) (parents []store.QueueKey, orphan bool, err error) {
	cands := wire.CandidateParents(key.ID)
	if len(cands) == 0 {
		return nil, false, ErrNoParentLayout
	}
	parents = make([]store.QueueKey, 0, len(cands))
	for _, c := range cands {
		pk := store.QueueKey{RangeHash: wire.RangeHash(c.QueueID), ID: c.QueueID}
		parents = append(parents, pk)
		if string(pk.ID) == string(key.ID) {
			continue
		}
		_, err := st.GetQueue(ctx, t, pk)
		switch {
		case err == nil:
			return nil, false, nil
		case !errors.Is(err, store.ErrNotFound):
			return nil, false, fmt.Errorf("look up queue %s %s: %w", t, pk, err)
		}
	}
	return parents, true, nil
}

// orphanJob scavenges the tasks of one task_queue_id that no queue row
// owns: expired ones, and with OrphansAll those created before the grace
// period. Every delete re-checks in its statement that no parent row
// appeared.
type orphanJob struct {
	p       *pass
	table   store.Table
	key     store.QueueKey
	parents []store.QueueKey
	cursor  *store.TaskKey
}

func (j *orphanJob) Run(ctx context.Context) executor.Status {
	p := j.p
	for budget := p.cfg.TasksPerJob; budget > 0; {
		tasks, err := p.readTasks(ctx, j.table, j.key, j.cursor, p.cfg.TaskBatchSize)
		if err != nil {
			return j.fail(ctx, err)
		}
		if len(tasks) == 0 {
			return executor.Done
		}
		now := p.cfg.Now()
		var del []store.TaskKey
		for _, task := range tasks {
			budget--
			p.c.table(j.table).tasksProcessed.Add(1)
			p.c.orphansFound.Add(1)
			v := p.book.orphan(task, now)
			if v.Err != nil {
				p.badTask(j.table, j.key, task.Key, v)
			}
			if v.Delete() {
				del = append(del, task.Key)
			} else {
				p.c.orphansLeft.Add(1)
			}
		}
		if len(del) > 0 {
			n := int64(len(del))
			if !p.cfg.DryRun {
				var err error
				n, err = p.deleting(ctx, "delete orphans", int64(len(del)), &p.c.tasksUnknown, false, func(ctx context.Context) (int64, error) {
					return p.st.DeleteOrphanTasks(ctx, j.table, j.key, j.parents, del)
				})
				if err != nil {
					p.c.deleted(j.table, ReasonOrphan, n)
					return j.fail(ctx, err)
				}
			}
			p.c.deleted(j.table, ReasonOrphan, n)
			if n < int64(len(del)) {
				p.cfg.Logger.Info("orphan's queue reappeared: tasks kept", "table", j.table.String(), "task_queue", j.key.String())
			}
		}
		last := tasks[len(tasks)-1].Key
		j.cursor = &last
		if len(tasks) < p.cfg.TaskBatchSize {
			return executor.Done
		}
	}
	return executor.Defer
}

func (j *orphanJob) fail(ctx context.Context, err error) executor.Status {
	if ctx.Err() == nil && !errors.Is(err, ErrShutdown) {
		c := causeOf(err)
		j.p.c.fail(Failure{Op: "delete orphans", Table: j.table, Queue: j.key, Cause: c, Err: err})
		j.p.cfg.Logger.Error("orphan job failed", "table", j.table.String(), "task_queue", j.key.String(), "cause", string(c), "err", err)
	}
	return executor.Err
}
