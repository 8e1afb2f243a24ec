// Package store defines what the scavenger needs from a task store, and
// nothing more: a narrow contract over Temporal's task tables that every SQL
// engine implements (see package sqlstore).
//
// A Store reads and deletes. A Writer does what a matching host does (create
// and lease queues, append tasks fenced by range_id); the scavenger never
// uses it, tests, the demo and the seeder do.
//
// Rows are handed over raw (bytes and encoding); decoding blobs is the job of
// package wire, and deciding what to delete is the job of package scavenger.
package store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
)

// Table selects a generation of Temporal's task tables.
type Table uint8

const (
	// V1 is task_queues / tasks, ordered by task_id.
	V1 Table = 1
	// V2 is the fairness tables task_queues_v2 / tasks_v2, ordered by
	// (pass, task_id).
	V2 Table = 2
)

// String returns "v1" or "v2".
func (t Table) String() string {
	switch t {
	case V1:
		return "v1"
	case V2:
		return "v2"
	}
	return fmt.Sprintf("Table(%d)", uint8(t))
}

// QueueKey is the primary key of a task_queues row, and the
// (range_hash, task_queue_id) prefix of the task rows of one (sub)queue.
type QueueKey struct {
	RangeHash uint32
	ID        []byte // task_queue_id
}

// String formats the key for logs and errors: range_hash/hex(task_queue_id).
func (k QueueKey) String() string { return fmt.Sprintf("%d/%x", k.RangeHash, k.ID) }

// Less reports whether k sorts before o in primary-key order.
func (k QueueKey) Less(o QueueKey) bool { return k.Compare(o) < 0 }

// Compare returns -1, 0 or +1 as k sorts before, with or after o in
// primary-key order, for slices.SortFunc and the like.
func (k QueueKey) Compare(o QueueKey) int {
	if c := cmp.Compare(k.RangeHash, o.RangeHash); c != 0 {
		return c
	}
	return bytes.Compare(k.ID, o.ID)
}

// QueueRow is one row of task_queues or task_queues_v2.
type QueueRow struct {
	QueueKey
	RangeID  int64
	Data     []byte
	Encoding string
}

// TaskKey orders the tasks of one (sub)queue. Pass is always 0 in V1.
type TaskKey struct {
	Pass int64
	ID   int64
}

// Less reports whether k sorts before o in (pass, task_id) order.
func (k TaskKey) Less(o TaskKey) bool {
	if k.Pass != o.Pass {
		return k.Pass < o.Pass
	}
	return k.ID < o.ID
}

// TaskRow is one row of tasks or tasks_v2.
type TaskRow struct {
	Key      TaskKey
	Data     []byte
	Encoding string
}

// TaskPos is a position in a task table across queues.
type TaskPos struct {
	Queue QueueKey
	Task  TaskKey
}

// ScannedTask is a task with its (sub)queue key.
type ScannedTask struct {
	Queue QueueKey
	TaskRow
}

// TaskSet is the tasks of one (sub)queue to delete: Keys if not nil, else
// Range.
type TaskSet struct {
	Queue QueueKey
	Range TaskRange
	Keys  []TaskKey
}

// QueueFence is a queue row to delete only if its range_id is still
// RangeID.
type QueueFence struct {
	QueueKey
	RangeID int64
}

// TaskQueueRef is one distinct task_queue_id of a task table.
type TaskQueueRef struct {
	QueueKey
	// HasQueueRow: a queue row with this exact key exists (the tasks are
	// subqueue 0 of a live queue).
	HasQueueRow bool
}

// TaskRange is an inclusive range of task keys: Min <= key <= Max.
// The zero Min means "from the first task".
type TaskRange struct {
	Min, Max TaskKey
}

// Errors a caller must tell apart. Implementations wrap them with %w, so
// test with errors.Is.
var (
	// ErrConditionFailed reports that a conditional write found the row
	// changed (another range_id) or gone. For the scavenger it means a
	// matching host owns the queue: not an error for the data.
	ErrConditionFailed = errors.New("condition failed")

	// ErrNotFound reports that a point lookup found no row.
	ErrNotFound = errors.New("not found")

	// ErrTransient marks errors worth retrying: lost connections,
	// timeouts, lock waits, deadlocks, SQLITE_BUSY.
	ErrTransient = errors.New("transient store error")
)

// Store is the scavenger's view of a task store. Every method is safe for
// concurrent use.
type Store interface {
	// ListQueues returns up to limit queue rows of table t in primary-key
	// order, starting after the key after (nil: from the first row).
	ListQueues(ctx context.Context, t Table, after *QueueKey, limit int) ([]QueueRow, error)

	// ReadTasks returns up to limit tasks of the (sub)queue q in key
	// order, starting after the key after (nil: from the first task).
	ReadTasks(ctx context.Context, t Table, q QueueKey, after *TaskKey, limit int) ([]TaskRow, error)

	// DeleteTasks deletes the tasks of q inside r, lowest keys first, at
	// most limit of them (limit <= 0: all of them), and returns how many
	// it deleted. In V1 matching only appends above the ids it has
	// written, so a range read before is still the same rows.
	DeleteTasks(ctx context.Context, t Table, q QueueKey, r TaskRange, limit int) (int64, error)

	// DeleteTaskKeys deletes exactly the tasks of q with the given keys
	// and returns how many it deleted. Use it where a range could catch a
	// row written after it was read: in V2 a new task may sort between
	// old ones.
	DeleteTaskKeys(ctx context.Context, t Table, q QueueKey, keys []TaskKey) (int64, error)

	// GetQueue reads one queue row, or returns an error wrapping
	// ErrNotFound.
	GetQueue(ctx context.Context, t Table, q QueueKey) (QueueRow, error)

	// DeleteQueue deletes the queue row q if its range_id is still
	// rangeID. It returns an error wrapping ErrConditionFailed if the row
	// is gone or its range_id changed.
	DeleteQueue(ctx context.Context, t Table, q QueueKey, rangeID int64) error

	// ListTaskQueueIDs returns up to limit distinct (range_hash,
	// task_queue_id) pairs of the task table t in primary-key order,
	// starting after the key after (nil: from the first), each with
	// whether a queue row of exactly that key exists. It is how orphaned
	// tasks are found without holding every queue id in memory.
	ListTaskQueueIDs(ctx context.Context, t Table, after *QueueKey, limit int) ([]TaskQueueRef, error)

	// DeleteOrphanTasks deletes exactly the tasks of q with the given keys,
	// in the same statement checking that none of the queue rows parents
	// exists; if one does (the queue was re-created) it deletes nothing.
	DeleteOrphanTasks(ctx context.Context, t Table, q QueueKey, parents []QueueKey, keys []TaskKey) (int64, error)

	// ScanTasks returns up to limit tasks of table t across queues, in
	// primary-key order: those positioned after after, whose queue key is
	// at most through. It is how a pass reads many small queues in one
	// statement.
	ScanTasks(ctx context.Context, t Table, after TaskPos, through QueueKey, limit int) ([]ScannedTask, error)

	// DeleteTaskSets deletes, in one statement where the engine allows,
	// every task of each set and returns how many it deleted. A set is a
	// key range of one (sub)queue (V1, where ranges are exact) or a list
	// of keys.
	DeleteTaskSets(ctx context.Context, t Table, sets []TaskSet) (int64, error)

	// DeleteQueues deletes each queue row whose range_id is still the one
	// given, in one statement where the engine allows, and returns how
	// many it deleted; the others changed or are gone.
	DeleteQueues(ctx context.Context, t Table, fences []QueueFence) (int64, error)

	// Tables reports which task tables exist.
	Tables(ctx context.Context) ([]Table, error)

	Close() error
}

// Writer is what a matching host does to a task store. The scavenger never
// uses it.
type Writer interface {
	// CreateQueue inserts a queue row. It returns an error wrapping
	// ErrConditionFailed if the row exists.
	CreateQueue(ctx context.Context, t Table, row QueueRow) error

	// UpdateQueue replaces the row's range_id and data if its range_id is
	// still prevRangeID (compare-and-set); otherwise it returns an error
	// wrapping ErrConditionFailed.
	UpdateQueue(ctx context.Context, t Table, row QueueRow, prevRangeID int64) error

	// AppendTasks inserts tasks under the (sub)queue key target in one
	// transaction that locks the queue row owner and checks that its
	// range_id is still rangeID (the lease fence); otherwise it inserts
	// nothing and returns an error wrapping ErrConditionFailed.
	AppendTasks(ctx context.Context, t Table, owner QueueKey, rangeID int64, target QueueKey, tasks []TaskRow) error
}
