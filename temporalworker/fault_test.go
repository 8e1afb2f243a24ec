package temporalworker

import (
	"context"
	"sync"

	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// hookStore calls beforeList before each queue listing: a test's way to
// fail, count or hold a pass at a known point. It passes every call on
// unchanged.
type hookStore struct {
	s          store.Store
	beforeList func(ctx context.Context, t store.Table, after *store.QueueKey) error
}

func hook(beforeList func(ctx context.Context, t store.Table, after *store.QueueKey) error) store.Middleware {
	return func(s store.Store) store.Store { return &hookStore{s: s, beforeList: beforeList} }
}

func (h *hookStore) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	if err := h.beforeList(ctx, t, after); err != nil {
		return nil, err
	}
	return h.s.ListQueues(ctx, t, after, limit)
}

func (h *hookStore) Tables(ctx context.Context) ([]store.Table, error) { return h.s.Tables(ctx) }

func (h *hookStore) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	return h.s.GetQueue(ctx, t, q)
}

func (h *hookStore) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	return h.s.ReadTasks(ctx, t, q, after, limit)
}

func (h *hookStore) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	return h.s.ScanTasks(ctx, t, after, through, limit)
}

func (h *hookStore) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	return h.s.ListTaskQueueIDs(ctx, t, after, limit)
}

func (h *hookStore) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (int64, error) {
	return h.s.DeleteTaskSets(ctx, t, sets)
}

func (h *hookStore) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (int64, error) {
	return h.s.DeleteTasks(ctx, t, q, r, limit)
}

func (h *hookStore) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	return h.s.DeleteOrphanTasks(ctx, t, q, parents, keys)
}

func (h *hookStore) DeleteQueues(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
	return h.s.DeleteQueues(ctx, t, fences)
}

// flakyDatabase is a worker's database whose Identity and LockRange a
// test may fail or watch. It embeds the *sqlstore.DB, so the store's
// optional interfaces (store.CommitSharer, store.OddHashFinder) stay
// visible to the pass, as they are to a worker's.
type flakyDatabase struct {
	*sqlstore.DB
	identity  func(ctx context.Context) error
	lockRange func(r store.HashRange, err error)
}

func (f *flakyDatabase) Identity(ctx context.Context) (string, error) {
	if f.identity != nil {
		if err := f.identity(ctx); err != nil {
			return "", err
		}
	}
	return f.DB.Identity(ctx)
}

func (f *flakyDatabase) LockRange(ctx context.Context, r store.HashRange, wait bool) (store.Lock, error) {
	l, err := f.DB.LockRange(ctx, r, wait)
	if f.lockRange != nil {
		f.lockRange(r, err)
	}
	return l, err
}

// lockSpy closes unlocked when the first lock it handed out is released.
type lockSpy struct {
	*sqlstore.DB
	unlocked chan struct{}
	once     sync.Once
}

func (s *lockSpy) LockRange(ctx context.Context, r store.HashRange, wait bool) (store.Lock, error) {
	l, err := s.DB.LockRange(ctx, r, wait)
	if err != nil {
		return nil, err
	}
	return &spiedLock{Lock: l, s: s}, nil
}

type spiedLock struct {
	store.Lock
	s *lockSpy
}

func (l *spiedLock) Unlock() error {
	err := l.Lock.Unlock()
	l.s.once.Do(func() { close(l.s.unlocked) })
	return err
}
