package scavenger_test

import (
	"context"

	"github.com/tqscavenger/tqscavenger/store"
)

// call describes a store call to a hook: its operation and, for the calls
// that have them, the queue, the queue fences and the orphan parents.
type call struct {
	op      string // tables, list, get, read, scan, listids, deletesets, delete, deleteorphans, deletequeues
	queue   store.QueueKey
	fences  []store.QueueFence
	parents []store.QueueKey
}

// hooked returns the tests' store middleware: before runs ahead of every
// call, and its error is the call's. It goes into Config.Middleware, the
// seam embedders use too, and spells out every method of store.Store, so a
// method added to the contract cannot bypass the hook.
func hooked(before func(ctx context.Context, c call) error) store.Middleware {
	return func(next store.Store) store.Store { return &hookStore{next: next, before: before} }
}

type hookStore struct {
	next   store.Store
	before func(ctx context.Context, c call) error
}

var _ store.Store = (*hookStore)(nil)

func (h *hookStore) Tables(ctx context.Context) ([]store.Table, error) {
	if err := h.before(ctx, call{op: "tables"}); err != nil {
		return nil, err
	}
	return h.next.Tables(ctx)
}

func (h *hookStore) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	if err := h.before(ctx, call{op: "list"}); err != nil {
		return nil, err
	}
	return h.next.ListQueues(ctx, t, after, limit)
}

func (h *hookStore) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	if err := h.before(ctx, call{op: "get", queue: q}); err != nil {
		return store.QueueRow{}, err
	}
	return h.next.GetQueue(ctx, t, q)
}

func (h *hookStore) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	if err := h.before(ctx, call{op: "read", queue: q}); err != nil {
		return nil, err
	}
	return h.next.ReadTasks(ctx, t, q, after, limit)
}

func (h *hookStore) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	if err := h.before(ctx, call{op: "scan"}); err != nil {
		return nil, err
	}
	return h.next.ScanTasks(ctx, t, after, through, limit)
}

func (h *hookStore) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	if err := h.before(ctx, call{op: "listids"}); err != nil {
		return nil, err
	}
	return h.next.ListTaskQueueIDs(ctx, t, after, limit)
}

func (h *hookStore) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (int64, error) {
	if err := h.before(ctx, call{op: "deletesets"}); err != nil {
		return 0, err
	}
	return h.next.DeleteTaskSets(ctx, t, sets)
}

func (h *hookStore) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (int64, error) {
	if err := h.before(ctx, call{op: "delete", queue: q}); err != nil {
		return 0, err
	}
	return h.next.DeleteTasks(ctx, t, q, r, limit)
}

func (h *hookStore) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	if err := h.before(ctx, call{op: "deleteorphans", queue: q, parents: parents}); err != nil {
		return 0, err
	}
	return h.next.DeleteOrphanTasks(ctx, t, q, parents, keys)
}

func (h *hookStore) DeleteQueues(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
	if err := h.before(ctx, call{op: "deletequeues", fences: fences}); err != nil {
		return 0, err
	}
	return h.next.DeleteQueues(ctx, t, fences)
}
