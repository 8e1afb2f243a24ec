package scavenger

import (
	"context"
	"errors"
	"fmt"

	"github.com/tqscavenger/tqscavenger/store"
)

// ErrDryRun is the error of every write a dry run's store is asked for:
// a dry run's store refuses them, so a dry run cannot delete, whatever a
// call site does. Reaching it is a bug, and fails the pass.
var ErrDryRun = errors.New("scavenger: dry run: writes are refused")

// dryRunStore passes reads on and refuses every write with ErrDryRun.
// It is the innermost wrapper of a dry run's store (see stack).
type dryRunStore struct {
	next store.Store
}

var _ store.Store = (*dryRunStore)(nil)

func refuse(op string, t store.Table) error {
	return fmt.Errorf("%s in %s: %w", op, t, ErrDryRun)
}

func (d *dryRunStore) Tables(ctx context.Context) ([]store.Table, error) { return d.next.Tables(ctx) }

func (d *dryRunStore) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	return d.next.ListQueues(ctx, t, after, limit)
}

func (d *dryRunStore) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	return d.next.GetQueue(ctx, t, q)
}

func (d *dryRunStore) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	return d.next.ReadTasks(ctx, t, q, after, limit)
}

func (d *dryRunStore) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	return d.next.ScanTasks(ctx, t, after, through, limit)
}

func (d *dryRunStore) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	return d.next.ListTaskQueueIDs(ctx, t, after, limit)
}

func (d *dryRunStore) DeleteTaskSets(_ context.Context, t store.Table, _ []store.TaskSet) (int64, error) {
	return 0, refuse("delete tasks", t)
}

func (d *dryRunStore) DeleteTasks(_ context.Context, t store.Table, _ store.QueueKey, _ store.TaskRange, _ int) (int64, error) {
	return 0, refuse("delete tasks", t)
}

func (d *dryRunStore) DeleteOrphanTasks(_ context.Context, t store.Table, _ store.QueueKey, _ []store.QueueKey, _ []store.TaskKey) (int64, error) {
	return 0, refuse("delete orphans", t)
}

func (d *dryRunStore) DeleteQueues(_ context.Context, t store.Table, _ []store.QueueFence) (int64, error) {
	return 0, refuse("delete queues", t)
}
