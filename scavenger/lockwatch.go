package scavenger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// watchLock checks cfg.Lock every cfg.LockCheckInterval until stop is
// called. When a check fails, it stops the pass at once: stop(cause)
// cancels every statement in flight, and Run fails with the cause, which
// wraps store.ErrLockLost. Waiting for the statements to finish would let
// them run beside a second scavenger that took the lock meanwhile. It
// stops the pass before it logs: a log write can block (a full pipe on
// stderr), and until the pass's context ends its jobs go on sending
// deletes (stopGate refuses every one after it).
func watchLock(ctx context.Context, cfg Config, stopPass context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(cfg.LockCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			cctx, cancel := context.WithTimeout(ctx, cfg.LockCheckTimeout)
			err := cfg.Lock.Check(cctx)
			cancel()
			if err == nil || ctx.Err() != nil {
				continue
			}
			if !errors.Is(err, store.ErrLockLost) {
				err = fmt.Errorf("%w: %w", store.ErrLockLost, err)
			}
			stopPass(err)
			cfg.Logger.Error("lock lost: stopping the pass", "err", err)
			return
		}
	}()
	return func() { close(done); <-finished }
}

// confirmLock checks cfg.Lock once more, after the pass's last statement
// has finished and before it reports success: a lock lost since the
// watcher's last check (up to LockCheckInterval ago) would otherwise go
// unseen. A check that fails, or does not answer within LockCheckTimeout,
// fails the pass with an error wrapping store.ErrLockLost. What remains is
// the time between this check's answer and the report, in which the pass
// sends no statement.
func confirmLock(ctx context.Context, cfg Config) error {
	cctx, cancel := context.WithTimeout(ctx, cfg.LockCheckTimeout)
	defer cancel()
	err := cfg.Lock.Check(cctx)
	if err == nil {
		return nil
	}
	if !errors.Is(err, store.ErrLockLost) {
		err = fmt.Errorf("%w: %w", store.ErrLockLost, err)
	}
	err = fmt.Errorf("the lock could not be confirmed after the last statement: %w", err)
	cfg.Logger.Error("lock lost: the pass cannot report success", "err", err)
	return err
}

// stopGate refuses every delete once the pass's context has ended (a lost
// lock, a shutdown timeout, the caller): it is the innermost wrapper, the
// last step before the store, so no delete is sent after the pass was
// stopped, whatever the wrappers above it (pacing, the caller's
// middleware) held it for. A refused delete was never sent: its error
// does not wrap store.ErrUnknownOutcome, and it wraps the pass's cause
// (store.ErrLockLost for a lost lock). The database driver refuses an
// ended context too, but a store.Store need not be one.
type stopGate struct {
	next store.Store
	pass context.Context
}

func stopGateMiddleware(pass context.Context) store.Middleware {
	return func(next store.Store) store.Store { return &stopGate{next: next, pass: pass} }
}

var _ store.Store = (*stopGate)(nil)

// admit returns why a delete may not be sent, or nil.
func (g *stopGate) admit() error {
	if g.pass.Err() == nil {
		return nil
	}
	return fmt.Errorf("delete not sent: the pass was stopped: %w", context.Cause(g.pass))
}

func (g *stopGate) Tables(ctx context.Context) ([]store.Table, error) { return g.next.Tables(ctx) }

func (g *stopGate) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	return g.next.ListQueues(ctx, t, after, limit)
}

func (g *stopGate) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	return g.next.GetQueue(ctx, t, q)
}

func (g *stopGate) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	return g.next.ReadTasks(ctx, t, q, after, limit)
}

func (g *stopGate) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	return g.next.ScanTasks(ctx, t, after, through, limit)
}

func (g *stopGate) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	return g.next.ListTaskQueueIDs(ctx, t, after, limit)
}

func (g *stopGate) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (int64, error) {
	if err := g.admit(); err != nil {
		return 0, err
	}
	return g.next.DeleteTaskSets(ctx, t, sets)
}

func (g *stopGate) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (int64, error) {
	if err := g.admit(); err != nil {
		return 0, err
	}
	return g.next.DeleteTasks(ctx, t, q, r, limit)
}

func (g *stopGate) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	if err := g.admit(); err != nil {
		return 0, err
	}
	return g.next.DeleteOrphanTasks(ctx, t, q, parents, keys)
}

func (g *stopGate) DeleteQueues(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
	if err := g.admit(); err != nil {
		return 0, err
	}
	return g.next.DeleteQueues(ctx, t, fences)
}
