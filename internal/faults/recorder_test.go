package faults

import (
	"context"
	"sync"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// recorder records when a pass's store calls ran, through
// scavenger.Config.Middleware.
type recorder struct {
	mu        sync.Mutex
	first     time.Time // start of the first call
	last      time.Time // end of the latest-ending call
	calls     int
	started   chan struct{} // closed at the first call
	onceStart sync.Once
}

func newRecorder() *recorder { return &recorder{started: make(chan struct{})} }

func (r *recorder) begin(op string) time.Time {
	now := time.Now()
	r.mu.Lock()
	if r.first.IsZero() {
		r.first = now
	}
	r.calls++
	r.mu.Unlock()
	r.onceStart.Do(func() { close(r.started) })
	return now
}

func (r *recorder) end(op string) {
	now := time.Now()
	r.mu.Lock()
	if now.After(r.last) {
		r.last = now
	}
	r.mu.Unlock()
}

// span returns the start of the first call and the end of the last.
func (r *recorder) span() (first, last time.Time, calls int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first, r.last, r.calls
}

func (r *recorder) middleware() store.Middleware {
	return func(next store.Store) store.Store { return &recordStore{next: next, r: r} }
}

// recordStore spells out every method of store.Store, as every
// middleware does.
type recordStore struct {
	next store.Store
	r    *recorder
}

var _ store.Store = (*recordStore)(nil)

func (s *recordStore) Tables(ctx context.Context) ([]store.Table, error) {
	s.r.begin("tables")
	defer s.r.end("tables")
	return s.next.Tables(ctx)
}

func (s *recordStore) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	s.r.begin("list")
	defer s.r.end("list")
	return s.next.ListQueues(ctx, t, after, limit)
}

func (s *recordStore) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	s.r.begin("get")
	defer s.r.end("get")
	return s.next.GetQueue(ctx, t, q)
}

func (s *recordStore) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	s.r.begin("read")
	defer s.r.end("read")
	return s.next.ReadTasks(ctx, t, q, after, limit)
}

func (s *recordStore) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	s.r.begin("scan")
	defer s.r.end("scan")
	return s.next.ScanTasks(ctx, t, after, through, limit)
}

func (s *recordStore) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	s.r.begin("listids")
	defer s.r.end("listids")
	return s.next.ListTaskQueueIDs(ctx, t, after, limit)
}

func (s *recordStore) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (int64, error) {
	s.r.begin("deletesets")
	defer s.r.end("deletesets")
	return s.next.DeleteTaskSets(ctx, t, sets)
}

func (s *recordStore) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (int64, error) {
	s.r.begin("delete")
	defer s.r.end("delete")
	return s.next.DeleteTasks(ctx, t, q, r, limit)
}

func (s *recordStore) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	s.r.begin("deleteorphans")
	defer s.r.end("deleteorphans")
	return s.next.DeleteOrphanTasks(ctx, t, q, parents, keys)
}

func (s *recordStore) DeleteQueues(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
	s.r.begin("deletequeues")
	defer s.r.end("deletequeues")
	return s.next.DeleteQueues(ctx, t, fences)
}
