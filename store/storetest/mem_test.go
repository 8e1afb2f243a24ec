package storetest_test

// A task store in memory, as an embedder would write one with nothing but
// the exported API: the suite's own test that it asks nothing a store
// outside this module cannot give, and that its expectations hold
// together.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/store/storetest"
)

// TestMemStore runs the suite on memStore, statement counts included: one
// per call, as memStore counts them.
func TestMemStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		s := newMemStore()
		return storetest.Harness{Store: s, Writer: s, Statements: s.calls, DropTable: s.dropTable}
	}, storetest.Options{
		AppendStatements: func(int) int64 { return 1 },
		DeleteKeysStatements: func(n int) int64 {
			if n == 0 {
				return 0
			}
			return 1
		},
	})
}

// memTask is a task row with the (sub)queue key it belongs to.
type memTask struct {
	q store.QueueKey
	store.TaskRow
}

// memStore keeps Temporal's four task tables in memory. A V1 task's key
// has Pass 0 whatever it was written with, and V1 compares task ids only:
// the tasks table has no pass column.
type memStore struct {
	mu      sync.Mutex
	n       int64                            // calls that touched the tables
	dropped map[string]bool                  // tables dropped, by name
	queues  map[store.Table][]store.QueueRow // in key order
	tasks   map[store.Table][]memTask        // in (queue, key) order
}

func newMemStore() *memStore {
	return &memStore{dropped: map[string]bool{}, queues: map[store.Table][]store.QueueRow{}, tasks: map[store.Table][]memTask{}}
}

func (s *memStore) calls() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// lock locks s for one call, counted as one statement.
func (s *memStore) lock() func() {
	s.mu.Lock()
	s.n++
	return s.mu.Unlock
}

func (s *memStore) dropTable(_ context.Context, name string) error {
	defer s.lock()()
	switch name {
	case "tasks", "task_queues", "tasks_v2", "task_queues_v2":
		s.dropped[name] = true
		return nil
	}
	return fmt.Errorf("no table %q", name)
}

// norm returns k as table t keeps it.
func norm(t store.Table, k store.TaskKey) store.TaskKey {
	if t == store.V1 {
		k.Pass = 0
	}
	return k
}

// cmpKey orders task keys as table t does.
func cmpKey(t store.Table, a, b store.TaskKey) int {
	a, b = norm(t, a), norm(t, b)
	return cmp.Or(cmp.Compare(a.Pass, b.Pass), cmp.Compare(a.ID, b.ID))
}

// inRange reports whether k is inside r, a zero Min meaning no lower bound.
func inRange(t store.Table, r store.TaskRange, k store.TaskKey) bool {
	return (r.Min == store.TaskKey{} || cmpKey(t, r.Min, k) <= 0) && cmpKey(t, k, r.Max) <= 0
}

// after reports whether k sorts after the cursor a: every key does after
// a nil cursor, and after one with a nil ID every key of its range_hash
// and above.
func after(a *store.QueueKey, k store.QueueKey) bool {
	if a == nil {
		return true
	}
	if a.ID == nil {
		return k.RangeHash >= a.RangeHash
	}
	return a.Compare(k) < 0
}

func clone(b []byte) []byte { return append([]byte{}, b...) }

func cloneRow(r store.QueueRow) store.QueueRow {
	r.ID, r.Data = clone(r.ID), clone(r.Data)
	return r
}

func (s *memStore) Tables(context.Context) ([]store.Table, error) {
	defer s.lock()()
	var out []store.Table
	for _, t := range []store.Table{store.V1, store.V2} {
		if !s.dropped[t.TaskTable()] && !s.dropped[t.QueueTable()] {
			out = append(out, t)
		}
	}
	return out, nil
}

// queue returns the index of q's row in table t, and whether it is there.
func (s *memStore) queue(t store.Table, q store.QueueKey) (int, bool) {
	return slices.BinarySearchFunc(s.queues[t], q, func(r store.QueueRow, q store.QueueKey) int { return r.Compare(q) })
}

func (s *memStore) ListQueues(_ context.Context, t store.Table, a *store.QueueKey, limit int) ([]store.QueueRow, error) {
	defer s.lock()()
	var out []store.QueueRow
	for _, r := range s.queues[t] {
		if len(out) == limit {
			break
		}
		if after(a, r.QueueKey) {
			out = append(out, cloneRow(r))
		}
	}
	return out, nil
}

func (s *memStore) GetQueue(_ context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	defer s.lock()()
	i, ok := s.queue(t, q)
	if !ok {
		return store.QueueRow{}, fmt.Errorf("queue %s: %w", q, store.ErrNotFound)
	}
	return cloneRow(s.queues[t][i]), nil
}

func (s *memStore) ReadTasks(_ context.Context, t store.Table, q store.QueueKey, a *store.TaskKey, limit int) ([]store.TaskRow, error) {
	defer s.lock()()
	var out []store.TaskRow
	for _, r := range s.tasks[t] {
		if len(out) == limit {
			break
		}
		if r.q.Compare(q) == 0 && (a == nil || cmpKey(t, *a, r.Key) < 0) {
			out = append(out, store.TaskRow{Key: r.Key, Data: clone(r.Data), Encoding: r.Encoding})
		}
	}
	return out, nil
}

func (s *memStore) ScanTasks(_ context.Context, t store.Table, a store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	defer s.lock()()
	var out []store.ScannedTask
	for _, r := range s.tasks[t] {
		if len(out) == limit || through.Compare(r.q) < 0 {
			break
		}
		if c := a.Queue.Compare(r.q); c < 0 || c == 0 && cmpKey(t, a.Task, r.Key) < 0 {
			out = append(out, store.ScannedTask{Queue: store.QueueKey{RangeHash: r.q.RangeHash, ID: clone(r.q.ID)}, TaskRow: store.TaskRow{Key: r.Key, Data: clone(r.Data), Encoding: r.Encoding}})
		}
	}
	return out, nil
}

func (s *memStore) ListTaskQueueIDs(_ context.Context, t store.Table, a *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	defer s.lock()()
	var out []store.TaskQueueRef
	for _, r := range s.tasks[t] {
		if len(out) == limit {
			break
		}
		if !after(a, r.q) || len(out) > 0 && out[len(out)-1].Compare(r.q) == 0 {
			continue
		}
		_, has := s.queue(t, r.q)
		out = append(out, store.TaskQueueRef{QueueKey: store.QueueKey{RangeHash: r.q.RangeHash, ID: clone(r.q.ID)}, HasQueueRow: has})
	}
	return out, nil
}

// deleteTasks deletes the tasks of table t that gone reports, at most
// limit of them (no limit if limit <= 0), lowest first.
func (s *memStore) deleteTasks(t store.Table, limit int, gone func(memTask) bool) int64 {
	var n int64
	s.tasks[t] = slices.DeleteFunc(s.tasks[t], func(r memTask) bool {
		if (limit <= 0 || n < int64(limit)) && gone(r) {
			n++
			return true
		}
		return false
	})
	return n
}

// hasKey reports whether keys holds k, as table t compares keys.
func hasKey(t store.Table, keys []store.TaskKey, k store.TaskKey) bool {
	return slices.ContainsFunc(keys, func(d store.TaskKey) bool { return cmpKey(t, d, k) == 0 })
}

func (s *memStore) DeleteTaskSets(_ context.Context, t store.Table, sets []store.TaskSet) (int64, error) {
	var keys int
	for _, set := range sets {
		if set.Keys == nil {
			keys++
		}
		keys += len(set.Keys)
	}
	if keys == 0 {
		return 0, nil // nothing to delete: no statement
	}
	defer s.lock()()
	return s.deleteTasks(t, 0, func(r memTask) bool {
		return slices.ContainsFunc(sets, func(set store.TaskSet) bool {
			if set.Queue.Compare(r.q) != 0 {
				return false
			}
			if set.Keys != nil {
				return hasKey(t, set.Keys, r.Key)
			}
			return inRange(t, set.Range, r.Key)
		})
	}), nil
}

func (s *memStore) DeleteTasks(_ context.Context, t store.Table, q store.QueueKey, rng store.TaskRange, limit int) (int64, error) {
	defer s.lock()()
	return s.deleteTasks(t, limit, func(r memTask) bool { return r.q.Compare(q) == 0 && inRange(t, rng, r.Key) }), nil
}

func (s *memStore) DeleteOrphanTasks(_ context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	defer s.lock()()
	for _, p := range parents {
		if _, ok := s.queue(t, p); ok {
			return 0, nil
		}
	}
	return s.deleteTasks(t, 0, func(r memTask) bool { return r.q.Compare(q) == 0 && hasKey(t, keys, r.Key) }), nil
}

func (s *memStore) DeleteQueues(_ context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
	defer s.lock()()
	before := len(s.queues[t])
	s.queues[t] = slices.DeleteFunc(s.queues[t], func(r store.QueueRow) bool {
		return slices.ContainsFunc(fences, func(f store.QueueFence) bool { return f.Compare(r.QueueKey) == 0 && f.RangeID == r.RangeID })
	})
	return int64(before - len(s.queues[t])), nil
}

func (s *memStore) CreateQueue(_ context.Context, t store.Table, row store.QueueRow) error {
	defer s.lock()()
	i, ok := s.queue(t, row.QueueKey)
	if ok {
		return fmt.Errorf("create queue %s: %w", row.QueueKey, store.ErrConditionFailed)
	}
	s.queues[t] = slices.Insert(s.queues[t], i, cloneRow(row))
	return nil
}

func (s *memStore) UpdateQueue(_ context.Context, t store.Table, row store.QueueRow, prevRangeID int64) error {
	defer s.lock()()
	i, ok := s.queue(t, row.QueueKey)
	if !ok || s.queues[t][i].RangeID != prevRangeID {
		return fmt.Errorf("update queue %s from range_id %d: %w", row.QueueKey, prevRangeID, store.ErrConditionFailed)
	}
	s.queues[t][i] = cloneRow(row)
	return nil
}

func (s *memStore) AppendTasks(_ context.Context, t store.Table, owner store.QueueKey, rangeID int64, target store.QueueKey, tasks []store.TaskRow) error {
	defer s.lock()()
	if i, ok := s.queue(t, owner); !ok || s.queues[t][i].RangeID != rangeID {
		return fmt.Errorf("append to %s at range_id %d: %w", owner, rangeID, store.ErrConditionFailed)
	}
	rows := slices.Clone(s.tasks[t])
	for _, task := range tasks {
		r := memTask{q: store.QueueKey{RangeHash: target.RangeHash, ID: clone(target.ID)}, TaskRow: store.TaskRow{Key: norm(t, task.Key), Data: clone(task.Data), Encoding: task.Encoding}}
		i, found := slices.BinarySearchFunc(rows, r, func(a, b memTask) int {
			return cmp.Or(a.q.Compare(b.q), cmpKey(t, a.Key, b.Key))
		})
		if found {
			return fmt.Errorf("append to %s: task %v exists", target, r.Key) // nothing appended
		}
		rows = slices.Insert(rows, i, r)
	}
	s.tasks[t] = rows
	return nil
}

func (s *memStore) CompleteTasks(_ context.Context, t store.Table, q store.QueueKey, through store.TaskKey) (int64, error) {
	defer s.lock()()
	return s.deleteTasks(t, 0, func(r memTask) bool { return r.q.Compare(q) == 0 && cmpKey(t, r.Key, through) <= 0 }), nil
}
