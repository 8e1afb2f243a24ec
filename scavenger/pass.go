package scavenger

// One pass: its state, and the order of its walks (the fairness tables
// first, then v1, then the orphans), each over the pass's range.

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/tqscavenger/tqscavenger/internal/executor"
	"github.com/tqscavenger/tqscavenger/internal/pace"
	"github.com/tqscavenger/tqscavenger/store"
)

// pass is the state of one Run.
type pass struct {
	cfg  Config
	book ruleBook
	// closed is the closed-workflow rule's state (closed.go); nil when
	// the rule is off.
	closed *closedRule
	// tune is what may change during the pass: see Scavenger.Tune.
	tune *tunables
	// refused counts the statements the shutdown gate refused.
	refused atomic.Int64
	retries retryLog
	// st is the store through the pass's middleware (stack), its optional
	// interfaces too.
	st passStore
	// spread is how many window jobs a page's queues go to, and pipeline
	// how many deletes a window keeps running while it scans on: the
	// workers and windowPipeline where the store shares the commits of
	// concurrent writes, else one and one.
	spread, pipeline int
	c                *counters
	ex               *executor.Executor
	// pacer is the pace's controller (pacestore.go).
	pacer *pace.Pacer
	// present lists the task tables that exist, whether or not this pass
	// scavenges them.
	present []store.Table
	batch   *pace.Batcher
	// rng is the part of the range_hash space the pass covers.
	rng store.HashRange
	// ckpt keeps the walks' low-water marks; nil without Config.Checkpoint.
	ckpt *checkpointer
	// converge holds what the pass judges again to finish the job in one
	// pass (converge.go).
	converge converge
}

func (p *pass) run(ctx context.Context) error {
	var err error
	if err = p.retry(ctx, "find task tables", func(ctx context.Context) error { p.present, err = p.st.Tables(ctx); return err }); err != nil {
		return fmt.Errorf("find task tables: %w", err)
	}
	tables := p.cfg.Tables
	if len(tables) == 0 {
		tables = p.present
	}
	// The fairness tables go first, and finish before v1 starts: a v1 row
	// whose other_has_tasks flag points at v2 is then judged by what this
	// pass left in v2, not by tasks it was about to delete.
	tables = slices.Clone(tables)
	slices.SortFunc(tables, func(a, b store.Table) int { return int(b) - int(a) })
	p.converge.order = tables
	if err := checkPositions(ctx, p.st, p.cfg.Resume, tables, func(op string, f func(context.Context) error) error { return p.retry(ctx, op, f) }); err != nil {
		return err
	}
	if err := p.reportOddHashes(ctx, tables); err != nil {
		return err
	}
	if err := p.setupClosed(ctx); err != nil {
		return err
	}
	// Every walk's mark exists from the start, so that each checkpoint
	// holds every position, the resumed ones of walks not yet reached
	// included.
	orphans := p.cfg.Orphans != OrphansNone && p.cfg.QueueGlob == ""
	marks := make([]*walkMark, len(tables))
	orphanMarks := make([]*walkMark, len(tables))
	for i, t := range tables {
		marks[i] = p.ckpt.walk(p.cfg.Resume.position(WalkQueues, t))
	}
	for i, t := range tables {
		if orphans {
			orphanMarks[i] = p.ckpt.walk(p.cfg.Resume.position(WalkOrphans, t))
		}
	}
	for i, t := range tables {
		if i > 0 {
			if err := p.ex.Wait(ctx); err != nil {
				return err
			}
			marks[i-1].done(ctx)
		}
		pos := p.cfg.Resume.position(WalkQueues, t)
		if pos.Done {
			continue
		}
		if err := p.listQueues(ctx, t, pos, marks[i]); err != nil {
			return err
		}
	}
	p.c.listingDone.Store(true)
	if err := p.ex.Wait(ctx); err != nil {
		return err
	}
	if len(marks) > 0 {
		marks[len(marks)-1].done(ctx)
	}
	// The rows that waited on a table walked after theirs, judged again
	// now that it is done.
	p.recheckOther(ctx)
	if !orphans {
		return nil
	}
	// Orphans are looked for once every queue job is done, so a queue
	// deleted by this pass is judged by the rows it left.
	for i, t := range tables {
		pos := p.cfg.Resume.position(WalkOrphans, t)
		if pos.Done {
			continue
		}
		if err := p.scanOrphans(ctx, t, pos, orphanMarks[i]); err != nil {
			return err
		}
		if err := p.ex.Wait(ctx); err != nil {
			return err
		}
		orphanMarks[i].done(ctx)
	}
	return nil
}

// start is where a walk from pos begins: after its position, or at the
// first hash of the pass's range.
func (p *pass) start(pos WalkPosition) *store.QueueKey {
	if pos.After != nil {
		k := *pos.After
		return &k
	}
	return p.rng.Start()
}

// clip drops the keys past the pass's range from a page of n listed keys,
// key(i) giving the i-th, and reports how many remain and whether the
// listing goes on after them.
func (p *pass) clip(n, limit int, key func(i int) store.QueueKey) (keep int, more bool) {
	for i := 0; i < n; i++ {
		if key(i).RangeHash > p.rng.Hi {
			return i, false
		}
	}
	return n, n >= limit
}
