package store

// The keys and rows of Temporal's task tables, as the store hands them over.

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"strconv"
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

// MarshalJSON writes the version as its number: the codec's default for a
// uint8, which a slice of them would otherwise lose (a []Table would be
// written in base64, as a []byte is). Checkpoints and pass descriptions
// hold versions this way.
func (t Table) MarshalJSON() ([]byte, error) { return strconv.AppendUint(nil, uint64(t), 10), nil }

// QueueTable names the table version's queue table in Temporal's schema.
func (t Table) QueueTable() string {
	if t == V2 {
		return "task_queues_v2"
	}
	return "task_queues"
}

// TaskTable names the table version's task table in Temporal's schema.
func (t Table) TaskTable() string {
	if t == V2 {
		return "tasks_v2"
	}
	return "tasks"
}

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

// MinTaskKey and MaxTaskKey sort before and after every task key: a TaskPos
// with MinTaskKey starts at a queue's first task, one with MaxTaskKey
// skips the rest of the queue.
var (
	MinTaskKey = TaskKey{Pass: math.MinInt64, ID: math.MinInt64}
	MaxTaskKey = TaskKey{Pass: math.MaxInt64, ID: math.MaxInt64}
)

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
	// HasQueueRow reports whether a queue row with this exact key exists
	// (the tasks are
	// subqueue 0 of a live queue).
	HasQueueRow bool
}

// TaskRange is an inclusive range of task keys: Min <= key <= Max.
// The zero Min means "from the first task".
type TaskRange struct {
	Min, Max TaskKey
}
