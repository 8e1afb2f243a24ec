package scavenger

import (
	"context"

	"github.com/tqscavenger/tqscavenger/internal/pace"
	"github.com/tqscavenger/tqscavenger/store"
)

// The pace's wiring: the pass's calls go through its Pacer (package
// internal/pace: the gentle pace's controller, its signals and slots),
// the third middleware of the stack (middleware.go), under the rate
// limits, so that it only ever slows a pass below them. Under PaceFull
// the Pacer passes every call straight on. Config's pace fields set it
// up here, Tune's pace reaches it through tunables.watchMode, and
// Stats.Pace is its snapshot (pacestate.go).

// paceMiddleware returns the middleware of the pass's Pacer, told of each
// new pace tune takes. batch is the pass's batcher (nil: none); st the
// store, for whether it is a whole-database writer. seen, if not nil,
// receives the pass's Pacer (a test's hook, Scavenger.onPacer).
func paceMiddleware(cfg Config, tune *tunables, stop <-chan struct{}, batch *pace.Batcher, st store.Store, seen func(*pace.Pacer)) (store.Middleware, *pace.Pacer) {
	w, ok := st.(store.WholeDatabaseWriter)
	p := pace.New(pace.Config{
		Factor: cfg.YieldFactor, Workers: cfg.Workers, BatchSize: cfg.TaskBatchSize,
		// A statement waiting on a lock (or a test's hook) must not stall
		// the pass.
		StuckAfter:    2 * cfg.SlowStatement,
		WholeDatabase: ok && w.WritesLockDatabase(),
		Full:          cfg.Mode == PaceFull,
		Batch:         batch, Logger: cfg.Logger, Stop: stop,
	})
	// The pass's own Pacer replaces the last pass's: one pass runs at a
	// time.
	tune.watchMode(func() { p.SetFull(tune.pace() == PaceFull) })
	p.SetFull(tune.pace() == PaceFull)
	if seen != nil {
		seen(p)
	}
	return func(next store.Store) store.Store { return &paceStore{next: next, p: p} }, p
}

// startSignals runs the pass's outside signals for p until the returned
// func is called: the probe of the pass's store (pace.StartProbe; a pass
// started at the full pace opens none, and a pace tuned to gentle later
// does without), the proof that a SQLite database has no other user
// (pace.StartAloneWatch, likewise) and Temporal's metrics endpoints of
// Config.TemporalMetrics (pace.StartTemporalMetrics).
func (s *Scavenger) startSignals(ctx context.Context, p *pace.Pacer) (wait func()) {
	cfg := s.Config()
	stopProbe, stopAlone := func() {}, func() {}
	if cfg.Mode != PaceFull {
		stopProbe = pace.StartProbe(ctx, s.st, p, cfg.Logger, s.closing)
		stopAlone = pace.StartAloneWatch(ctx, s.st, p, cfg.Logger, s.closing)
	}
	stopTemporal := pace.StartTemporalMetrics(ctx, cfg.TemporalMetrics, p, cfg.Logger, s.closing)
	return func() {
		stopTemporal()
		stopAlone()
		stopProbe()
	}
}

// paceStore paces every call through the pass's Pacer. It spells out
// every method of store.Store, so a method added to the contract does not
// bypass it, and those of the optional interfaces the pass uses
// (optional.go): the closed-workflow rule's lookups wait for a slot and
// count in the windows as the pass's other statements do.
type paceStore struct {
	next store.Store
	p    *pace.Pacer
}

var (
	_ store.Store           = (*paceStore)(nil)
	_ store.ExecutionReader = (*paceStore)(nil)
	_ store.OddHashFinder   = (*paceStore)(nil)
)

// call runs f in a slot and observes it as method; f returns the rows it
// read or deleted.
func (s *paceStore) call(ctx context.Context, method string, f func() (int, error)) error {
	return shutdownErr(s.p.Run(ctx, method, f))
}

func (s *paceStore) Tables(ctx context.Context) (ts []store.Table, err error) {
	err = s.call(ctx, "Tables", func() (int, error) {
		ts, err = s.next.Tables(ctx)
		return len(ts), err
	})
	return ts, err
}

func (s *paceStore) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) (rows []store.QueueRow, err error) {
	err = s.call(ctx, "ListQueues", func() (int, error) {
		rows, err = s.next.ListQueues(ctx, t, after, limit)
		return len(rows), err
	})
	return rows, err
}

func (s *paceStore) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (row store.QueueRow, err error) {
	err = s.call(ctx, "GetQueue", func() (int, error) {
		row, err = s.next.GetQueue(ctx, t, q)
		return 1, err
	})
	return row, err
}

func (s *paceStore) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) (rows []store.TaskRow, err error) {
	err = s.call(ctx, "ReadTasks", func() (int, error) {
		rows, err = s.next.ReadTasks(ctx, t, q, after, limit)
		return len(rows), err
	})
	return rows, err
}

func (s *paceStore) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) (rows []store.ScannedTask, err error) {
	err = s.call(ctx, "ScanTasks", func() (int, error) {
		rows, err = s.next.ScanTasks(ctx, t, after, through, limit)
		return len(rows), err
	})
	return rows, err
}

func (s *paceStore) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) (refs []store.TaskQueueRef, err error) {
	err = s.call(ctx, "ListTaskQueueIDs", func() (int, error) {
		refs, err = s.next.ListTaskQueueIDs(ctx, t, after, limit)
		return len(refs), err
	})
	return refs, err
}

func (s *paceStore) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (n int64, err error) {
	err = s.call(ctx, "DeleteTaskSets", func() (int, error) {
		n, err = s.next.DeleteTaskSets(ctx, t, sets)
		return int(n), err
	})
	return n, err
}

func (s *paceStore) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (n int64, err error) {
	err = s.call(ctx, "DeleteTasks", func() (int, error) {
		n, err = s.next.DeleteTasks(ctx, t, q, r, limit)
		return int(n), err
	})
	return n, err
}

func (s *paceStore) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (n int64, err error) {
	err = s.call(ctx, "DeleteOrphanTasks", func() (int, error) {
		n, err = s.next.DeleteOrphanTasks(ctx, t, q, parents, keys)
		return int(n), err
	})
	return n, err
}

func (s *paceStore) DeleteQueues(ctx context.Context, t store.Table, fences []store.QueueFence) (n int64, err error) {
	err = s.call(ctx, "DeleteQueues", func() (int, error) {
		n, err = s.next.DeleteQueues(ctx, t, fences)
		return int(n), err
	})
	return n, err
}

func (s *paceStore) ClusterMetadata(ctx context.Context) (rows []store.ClusterMetadataRow, err error) {
	err = s.call(ctx, "ClusterMetadata", func() (int, error) {
		rows, err = executions(s.next).ClusterMetadata(ctx)
		return len(rows), err
	})
	return rows, err
}

func (s *paceStore) ShardIDs(ctx context.Context) (ids []int32, err error) {
	err = s.call(ctx, "ShardIDs", func() (int, error) {
		ids, err = executions(s.next).ShardIDs(ctx)
		return len(ids), err
	})
	return ids, err
}

func (s *paceStore) MaxExecutionShard(ctx context.Context) (top int32, found bool, err error) {
	err = s.call(ctx, "MaxExecutionShard", func() (int, error) {
		top, found, err = executions(s.next).MaxExecutionShard(ctx)
		return 1, err
	})
	return top, found, err
}

func (s *paceStore) NextWorkflow(ctx context.Context, after *store.ExecutionKey) (k store.ExecutionKey, ok bool, err error) {
	err = s.call(ctx, "NextWorkflow", func() (int, error) {
		k, ok, err = executions(s.next).NextWorkflow(ctx, after)
		if !ok {
			return 0, err
		}
		return 1, err
	})
	return k, ok, err
}

func (s *paceStore) GetExecutions(ctx context.Context, keys []store.ExecutionKey) (rows []store.ExecutionRow, err error) {
	err = s.call(ctx, "GetExecutions", func() (int, error) {
		rows, err = executions(s.next).GetExecutions(ctx, keys)
		return len(rows), err
	})
	return rows, err
}

func (s *paceStore) GetCurrentExecutions(ctx context.Context, keys []store.ExecutionKey) (rows []store.CurrentExecutionRow, err error) {
	err = s.call(ctx, "GetCurrentExecutions", func() (int, error) {
		rows, err = executions(s.next).GetCurrentExecutions(ctx, keys)
		return len(rows), err
	})
	return rows, err
}

func (s *paceStore) Namespaces(ctx context.Context) (rows []store.NamespaceRow, err error) {
	err = s.call(ctx, "Namespaces", func() (int, error) {
		rows, err = executions(s.next).Namespaces(ctx)
		return len(rows), err
	})
	return rows, err
}

func (s *paceStore) OddHashes(ctx context.Context, t store.Table, limit int) (oh store.OddHashes, err error) {
	err = s.call(ctx, "OddHashes", func() (int, error) {
		oh, err = oddHashes(s.next).OddHashes(ctx, t, limit)
		return len(oh.Rows), err
	})
	return oh, err
}
