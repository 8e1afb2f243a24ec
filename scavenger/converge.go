package scavenger

// One pass that finishes the job. A queue row waits for the other table
// version while that table holds tasks of its queue (rules.go,
// WhyOtherTableTasks). The fairness table is walked first, so a v1 row
// that waits on v2 is judged by what the pass left in v2; a v2 row that
// waits on v1 is judged before the v1 walk deletes those tasks, and was
// left to the next pass. Such rows are judged again once the later walk
// is done (recheckOther). A dry run deletes nothing, so there the other
// table is judged by what the pass would have left in it (emptied), and
// its counts are the real pass's.

import (
	"context"
	"sync"

	"github.com/tqscavenger/tqscavenger/store"
)

// maxConverge bounds the rows a pass keeps to judge again, and the queues
// a dry run remembers it would empty: beyond it, a row is left to the
// next pass (as before) and a dry run reads the other table as it is.
const maxConverge = 100_000

// converge is what a pass remembers to finish the job in one pass.
type converge struct {
	mu sync.Mutex
	// order is the tables in the order the pass walks them.
	order []store.Table
	// recheck are queue rows kept only because the other table, walked
	// later in the pass, held tasks of their queue.
	recheck []*queueJob
	// emptied are the queues (by table) the pass's walk left without a
	// task after deleting some: kept only in a dry run, where they are
	// still there to read.
	emptied map[store.Table]map[string]bool
	n       int  // entries of emptied
	full    bool // a bound was met (logged once)
}

// walksLater reports whether the pass walks table b after table a.
func (c *converge) walksLater(a, b store.Table) bool {
	ia, ib := -1, -1
	for i, t := range c.order {
		switch t {
		case a:
			ia = i
		case b:
			ib = i
		}
	}
	return ia >= 0 && ib > ia
}

// other is the other table version of t.
func other(t store.Table) store.Table {
	if t == store.V2 {
		return store.V1
	}
	return store.V2
}

// keptForOther notes q, a row the rule book kept for its other table's
// tasks: it is judged again after the other table's walk, if that walk
// comes later in this pass.
func (p *pass) keptForOther(q *queueJob) {
	c := &p.converge
	if !c.walksLater(q.table, other(q.table)) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.recheck) >= maxConverge {
		c.bound(p)
		return
	}
	c.recheck = append(c.recheck, q)
}

// walked notes, in a dry run, that the walk of q's table is done with q:
// a queue it left empty after deleting tasks is empty for what the pass
// judges after it.
func (p *pass) walked(q *queueJob) {
	if !p.cfg.DryRun || q.nonEmpty || q.deleted == 0 {
		return
	}
	c := &p.converge
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= maxConverge {
		c.bound(p)
		return
	}
	if c.emptied == nil {
		c.emptied = map[store.Table]map[string]bool{}
	}
	if c.emptied[q.table] == nil {
		c.emptied[q.table] = map[string]bool{}
	}
	c.emptied[q.table][string(q.key.ID)] = true
	c.n++
}

// emptiedByPass reports whether a dry run's walk of table t left the queue
// key without tasks after deleting some.
func (p *pass) emptiedByPass(t store.Table, key store.QueueKey) bool {
	c := &p.converge
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.emptied[t][string(key.ID)]
}

// bound logs, once, that a bound of converge was met. c.mu is held.
func (c *converge) bound(p *pass) {
	if !c.full {
		c.full = true
		p.cfg.Logger.Info("more rows wait on the other table version than one pass judges again: the rest are left to the next pass", "bound", maxConverge)
	}
}

// recheckOther judges again, once every queue walk is done, the rows kept
// for their other table's tasks: those whose other table holds none now
// go, fenced on the range_id they were listed with, as any row does. A
// row that cannot be checked is kept, its failure counted.
func (p *pass) recheckOther(ctx context.Context) {
	c := &p.converge
	c.mu.Lock()
	rows := c.recheck
	c.recheck = nil
	c.mu.Unlock()
	for _, q := range rows {
		if ctx.Err() != nil {
			return
		}
		has, err := q.otherTableHasTasks(ctx)
		if err != nil {
			q.fail(ctx, "check the other table version again", err)
			continue
		}
		if !has {
			q.tryDeleteQueue(ctx, false)
		}
	}
}
