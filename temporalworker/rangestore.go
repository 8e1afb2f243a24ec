package temporalworker

import (
	"context"

	"github.com/tqscavenger/tqscavenger/store"
)

// rangeScope returns a middleware that limits a pass to the queue rows,
// and the orphan walk to the task rows, whose range_hash lies in r: the
// partition's scope. Listing starts at r.Lo and ends at r.Hi, so a pass
// over a range reads no row of the other ranges' listings. A queue
// belongs to the range of its queue row; its tasks are read by queue key,
// whatever their own hashes, as in a full pass.
//
// It stands in for the scavenger's own partition setting (the
// large-databases issue), which replaces it once that lands.
func rangeScope(r HashRange) store.Middleware {
	return func(s store.Store) store.Store { return &rangeStore{s: s, r: r} }
}

type rangeStore struct {
	s store.Store
	r HashRange
}

// from moves a listing's start to the range's first key.
func (r *rangeStore) from(after *store.QueueKey) *store.QueueKey {
	if r.r.Lo == 0 || (after != nil && after.RangeHash >= r.r.Lo) {
		return after
	}
	// Every task_queue_id is non-empty, so "after (Lo, empty)" is the
	// first row of range_hash Lo.
	return &store.QueueKey{RangeHash: r.r.Lo, ID: []byte{}}
}

func (r *rangeStore) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	rows, err := r.s.ListQueues(ctx, t, r.from(after), limit)
	for i, row := range rows {
		if row.RangeHash > r.r.Hi {
			// Past the range: a short page ends the listing.
			return rows[:i], err
		}
	}
	return rows, err
}

func (r *rangeStore) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	refs, err := r.s.ListTaskQueueIDs(ctx, t, r.from(after), limit)
	for i, ref := range refs {
		if ref.RangeHash > r.r.Hi {
			return refs[:i], err
		}
	}
	return refs, err
}

func (r *rangeStore) Tables(ctx context.Context) ([]store.Table, error) { return r.s.Tables(ctx) }

func (r *rangeStore) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	return r.s.GetQueue(ctx, t, q)
}

func (r *rangeStore) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	return r.s.ReadTasks(ctx, t, q, after, limit)
}

func (r *rangeStore) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	return r.s.ScanTasks(ctx, t, after, through, limit)
}

func (r *rangeStore) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (int64, error) {
	return r.s.DeleteTaskSets(ctx, t, sets)
}

func (r *rangeStore) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, tr store.TaskRange, limit int) (int64, error) {
	return r.s.DeleteTasks(ctx, t, q, tr, limit)
}

func (r *rangeStore) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	return r.s.DeleteOrphanTasks(ctx, t, q, parents, keys)
}

func (r *rangeStore) DeleteQueues(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
	return r.s.DeleteQueues(ctx, t, fences)
}
