package scavenger

// Listing the queue table a page at a time, and dispatching its queues
// to jobs.

import (
	"context"
	"fmt"

	"github.com/tqscavenger/tqscavenger/store"
)

// listQueues walks the queue table t in primary-key order from pos and
// submits one job per row, but for the rows of pos's finished runs (a
// resumed walk: an earlier pass finished them). Submit blocks while the
// workers are busy, so at most a page and the run queue of rows are in
// memory.
func (p *pass) listQueues(ctx context.Context, t store.Table, pos WalkPosition, m *walkMark) error {
	after := p.start(pos)
	for {
		var rows []store.QueueRow
		err := p.retry(ctx, "list queues", func(ctx context.Context) (err error) {
			rows, err = p.st.ListQueues(ctx, t, after, p.cfg.ListPageSize)
			return err
		})
		if err != nil {
			return fmt.Errorf("list %s queues: %w", t, err)
		}
		n, more := p.clip(len(rows), p.cfg.ListPageSize, func(i int) store.QueueKey { return rows[i].QueueKey })
		rows = rows[:n]
		if n == 0 {
			m.end(ctx)
			return nil
		}
		keys := make([]store.QueueKey, len(rows))
		for i, r := range rows {
			keys[i] = r.QueueKey
		}
		pg := m.open(keys, !more)
		// In tqscavenger's mode, queues with one subqueue are scavenged a
		// page at a time by a windowJob; the rest, and every queue in
		// Temporal's mode, by a queueJob each. Each queue moves the
		// walk's mark when it is finished (a window's queues one by one).
		var window []*queueJob
		for i, r := range rows {
			if pos.finishedAt(r.QueueKey) {
				m.row(pg, i).finished(ctx)
				continue
			}
			j := p.newQueueJob(t, r)
			j.row = m.row(pg, i)
			if !p.book.inScope(j.key, j.name) {
				j.row.finished(ctx)
				continue
			}
			p.c.table(t).queuesListed.Add(1)
			p.c.tasksBacklog.Add(j.backlog)
			if p.cfg.Compat != CompatTemporal && len(j.subs) == 1 && p.closed == nil {
				window = append(window, j)
				continue
			}
			if err := p.ex.Submit(ctx, m.track(j, j.row)); err != nil {
				return err
			}
		}
		for _, w := range p.windows(window) {
			if err := p.ex.Submit(ctx, p.newWindowJob(t, w)); err != nil {
				return err
			}
		}
		k := rows[len(rows)-1].QueueKey
		m.seal(ctx, pg)
		if !more {
			return nil
		}
		after = &k
	}
}
