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
	// after, if set, runs once the call returned, and its error is the
	// call's.
	after func(ctx context.Context, c call, err error) error
}

var _ store.Store = (*hookStore)(nil)

func (h *hookStore) done(ctx context.Context, c call, err error) error {
	if h.after != nil {
		return h.after(ctx, c, err)
	}
	return err
}

func (h *hookStore) Tables(ctx context.Context) ([]store.Table, error) {
	c := call{op: "tables"}
	if err := h.before(ctx, c); err != nil {
		return nil, err
	}
	res, err := h.next.Tables(ctx)
	if err == nil {
		if err = h.done(ctx, c, nil); err != nil {
			res = nil // the call "failed": as if nothing came back
		}
		return res, err
	}
	return res, h.done(ctx, c, err)
}

func (h *hookStore) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	c := call{op: "list"}
	if err := h.before(ctx, c); err != nil {
		return nil, err
	}
	res, err := h.next.ListQueues(ctx, t, after, limit)
	if err == nil {
		if err = h.done(ctx, c, nil); err != nil {
			res = nil // the call "failed": as if nothing came back
		}
		return res, err
	}
	return res, h.done(ctx, c, err)
}

func (h *hookStore) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	c := call{op: "get", queue: q}
	if err := h.before(ctx, c); err != nil {
		return store.QueueRow{}, err
	}
	res, err := h.next.GetQueue(ctx, t, q)
	if err == nil {
		if err = h.done(ctx, c, nil); err != nil {
			res = store.QueueRow{} // the call "failed": as if nothing came back
		}
		return res, err
	}
	return res, h.done(ctx, c, err)
}

func (h *hookStore) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	c := call{op: "read", queue: q}
	if err := h.before(ctx, c); err != nil {
		return nil, err
	}
	res, err := h.next.ReadTasks(ctx, t, q, after, limit)
	if err == nil {
		if err = h.done(ctx, c, nil); err != nil {
			res = nil // the call "failed": as if nothing came back
		}
		return res, err
	}
	return res, h.done(ctx, c, err)
}

func (h *hookStore) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	c := call{op: "scan"}
	if err := h.before(ctx, c); err != nil {
		return nil, err
	}
	res, err := h.next.ScanTasks(ctx, t, after, through, limit)
	if err == nil {
		if err = h.done(ctx, c, nil); err != nil {
			res = nil // the call "failed": as if nothing came back
		}
		return res, err
	}
	return res, h.done(ctx, c, err)
}

func (h *hookStore) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	c := call{op: "listids"}
	if err := h.before(ctx, c); err != nil {
		return nil, err
	}
	res, err := h.next.ListTaskQueueIDs(ctx, t, after, limit)
	if err == nil {
		if err = h.done(ctx, c, nil); err != nil {
			res = nil // the call "failed": as if nothing came back
		}
		return res, err
	}
	return res, h.done(ctx, c, err)
}

func (h *hookStore) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (int64, error) {
	c := call{op: "deletesets"}
	if err := h.before(ctx, c); err != nil {
		return 0, err
	}
	res, err := h.next.DeleteTaskSets(ctx, t, sets)
	if err == nil {
		if err = h.done(ctx, c, nil); err != nil {
			res = 0 // the call "failed": as if nothing came back
		}
		return res, err
	}
	return res, h.done(ctx, c, err)
}

func (h *hookStore) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (int64, error) {
	c := call{op: "delete", queue: q}
	if err := h.before(ctx, c); err != nil {
		return 0, err
	}
	res, err := h.next.DeleteTasks(ctx, t, q, r, limit)
	if err == nil {
		if err = h.done(ctx, c, nil); err != nil {
			res = 0 // the call "failed": as if nothing came back
		}
		return res, err
	}
	return res, h.done(ctx, c, err)
}

func (h *hookStore) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	c := call{op: "deleteorphans", queue: q, parents: parents}
	if err := h.before(ctx, c); err != nil {
		return 0, err
	}
	res, err := h.next.DeleteOrphanTasks(ctx, t, q, parents, keys)
	if err == nil {
		if err = h.done(ctx, c, nil); err != nil {
			res = 0 // the call "failed": as if nothing came back
		}
		return res, err
	}
	return res, h.done(ctx, c, err)
}

func (h *hookStore) DeleteQueues(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
	c := call{op: "deletequeues", fences: fences}
	if err := h.before(ctx, c); err != nil {
		return 0, err
	}
	res, err := h.next.DeleteQueues(ctx, t, fences)
	if err == nil {
		if err = h.done(ctx, c, nil); err != nil {
			res = 0 // the call "failed": as if nothing came back
		}
		return res, err
	}
	return res, h.done(ctx, c, err)
}
