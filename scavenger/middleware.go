package scavenger

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/tqscavenger/tqscavenger/internal/pace"
	"github.com/tqscavenger/tqscavenger/store"
)

// The store a pass works on is the caller's store wrapped in middleware, in
// this order, outermost first:
//
//  1. the shutdown gate: once Shutdown is called, no call starts;
//  2. the rate limits of Config.MaxStatementsPerSecond and
//     Config.MaxDeletesPerSecond, whose waits end at Shutdown too;
//  3. the pace's controller (pacestore.go, package internal/pace; it
//     passes calls straight on under PaceFull), under the limits so that
//     it only ever slows the pass below them;
//  4. Config.Middleware, in its order: what tests and embedders add
//     (fault injection, tracing), close to the store so that what they
//     see is what the database gets;
//  5. in a dry run, the write refusal (dryRunStore): every
//     delete fails with ErrDryRun before it reaches the store, whatever
//     the code above it does. The pass's delete call sites count instead
//     of deleting in a dry run; this makes a forgotten check a failed
//     pass, never a deleted row;
//  6. innermost, the stop gate (stopGate, lockwatch.go): once the pass's
//     context has ended (a lost lock above all), every delete fails
//     before it reaches the store, so none is sent after the pass was
//     stopped, whatever held it above.
//
// This is the one place where they are composed. Every wrapper spells out
// every method of store.Store, so a method added to the contract fails to
// compile until each has decided what to do with it.
//
// The optional interfaces the pass uses (optional.go) take the same path.
// The pass's own wrappers above Config.Middleware (1 to 3) implement them,
// each as it does Store's reads. Below, each middleware's store is a
// layer: a call goes to the middleware if its store implements the
// interface, past it to the store it was given if not, so a middleware
// that wraps only store.Store does not hide them. The write refusal and
// the stop gate (5 and 6) are gone past that way: every optional call is
// a read, which both pass on as it is.
func (s *Scavenger) stack(pass context.Context, refused *atomic.Int64, batch *pace.Batcher) (passStore, *pace.Pacer) {
	paced, p := paceMiddleware(s.cfg, s.tune, s.closing, batch, s.st, s.onPacer)
	below := slices.Clone(s.cfg.Middleware)
	if s.cfg.DryRun {
		below = append(below, func(next store.Store) store.Store { return &dryRunStore{next: next} })
	}
	// Innermost: nothing between it and the store can hold a delete past
	// the pass's end.
	below = append(below, stopGateMiddleware(pass))
	st, has := s.st, optionalOf(s.st)
	for i := len(below) - 1; i >= 0; i-- {
		if below[i] == nil {
			continue
		}
		out := below[i](st)
		has = has.or(optionalOf(out))
		st = &layer{Store: out, in: st}
	}
	top := store.Chain(st,
		func(next store.Store) store.Store {
			return &gateStore{next: next, closing: s.closing, refused: refused}
		},
		limit(s.tune, s.closing),
		paced,
	)
	ps := passStore{Store: top}
	// top is the gate, which implements every optional interface: the
	// pass calls one only where a store of the stack implements it.
	if has.exec {
		ps.exec = top.(store.ExecutionReader)
	}
	if has.odd {
		ps.odd = top.(store.OddHashFinder)
	}
	return ps, p
}

// gateStore refuses every call once closing is closed, with ErrShutdown,
// and counts the refusals. Calls that started before run on under the
// pass's context, which Shutdown cancels only when its own context ends.
type gateStore struct {
	next    store.Store
	closing <-chan struct{}
	refused *atomic.Int64
}

var (
	_ store.Store           = (*gateStore)(nil)
	_ store.ExecutionReader = (*gateStore)(nil)
	_ store.OddHashFinder   = (*gateStore)(nil)
)

func (g *gateStore) admit() error {
	select {
	case <-g.closing:
		g.refused.Add(1)
		return ErrShutdown
	default:
		return nil
	}
}

func (g *gateStore) Tables(ctx context.Context) ([]store.Table, error) {
	if err := g.admit(); err != nil {
		return nil, err
	}
	return g.next.Tables(ctx)
}

func (g *gateStore) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	if err := g.admit(); err != nil {
		return nil, err
	}
	return g.next.ListQueues(ctx, t, after, limit)
}

func (g *gateStore) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	if err := g.admit(); err != nil {
		return store.QueueRow{}, err
	}
	return g.next.GetQueue(ctx, t, q)
}

func (g *gateStore) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	if err := g.admit(); err != nil {
		return nil, err
	}
	return g.next.ReadTasks(ctx, t, q, after, limit)
}

func (g *gateStore) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	if err := g.admit(); err != nil {
		return nil, err
	}
	return g.next.ScanTasks(ctx, t, after, through, limit)
}

func (g *gateStore) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	if err := g.admit(); err != nil {
		return nil, err
	}
	return g.next.ListTaskQueueIDs(ctx, t, after, limit)
}

func (g *gateStore) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (int64, error) {
	if err := g.admit(); err != nil {
		return 0, err
	}
	return g.next.DeleteTaskSets(ctx, t, sets)
}

func (g *gateStore) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (int64, error) {
	if err := g.admit(); err != nil {
		return 0, err
	}
	return g.next.DeleteTasks(ctx, t, q, r, limit)
}

func (g *gateStore) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	if err := g.admit(); err != nil {
		return 0, err
	}
	return g.next.DeleteOrphanTasks(ctx, t, q, parents, keys)
}

func (g *gateStore) DeleteQueues(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
	if err := g.admit(); err != nil {
		return 0, err
	}
	return g.next.DeleteQueues(ctx, t, fences)
}

func (g *gateStore) ClusterMetadata(ctx context.Context) ([]store.ClusterMetadataRow, error) {
	if err := g.admit(); err != nil {
		return nil, err
	}
	return executions(g.next).ClusterMetadata(ctx)
}

func (g *gateStore) ShardIDs(ctx context.Context) ([]int32, error) {
	if err := g.admit(); err != nil {
		return nil, err
	}
	return executions(g.next).ShardIDs(ctx)
}

func (g *gateStore) MaxExecutionShard(ctx context.Context) (int32, bool, error) {
	if err := g.admit(); err != nil {
		return 0, false, err
	}
	return executions(g.next).MaxExecutionShard(ctx)
}

func (g *gateStore) NextWorkflow(ctx context.Context, after *store.ExecutionKey) (store.ExecutionKey, bool, error) {
	if err := g.admit(); err != nil {
		return store.ExecutionKey{}, false, err
	}
	return executions(g.next).NextWorkflow(ctx, after)
}

func (g *gateStore) GetExecutions(ctx context.Context, keys []store.ExecutionKey) ([]store.ExecutionRow, error) {
	if err := g.admit(); err != nil {
		return nil, err
	}
	return executions(g.next).GetExecutions(ctx, keys)
}

func (g *gateStore) GetCurrentExecutions(ctx context.Context, keys []store.ExecutionKey) ([]store.CurrentExecutionRow, error) {
	if err := g.admit(); err != nil {
		return nil, err
	}
	return executions(g.next).GetCurrentExecutions(ctx, keys)
}

func (g *gateStore) Namespaces(ctx context.Context) ([]store.NamespaceRow, error) {
	if err := g.admit(); err != nil {
		return nil, err
	}
	return executions(g.next).Namespaces(ctx)
}

func (g *gateStore) OddHashes(ctx context.Context, t store.Table, limit int) (store.OddHashes, error) {
	if err := g.admit(); err != nil {
		return store.OddHashes{}, err
	}
	return oddHashes(g.next).OddHashes(ctx, t, limit)
}
