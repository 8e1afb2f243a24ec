package scavenger

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// Stats are a pass's counts. Read them while a pass runs with
// Scavenger.Stats, or at the end from Run.
type Stats struct {
	Started time.Time
	Elapsed time.Duration

	QueuesListed    int64 // queue rows read by the listing
	QueuesProcessed int64 // queue jobs finished
	QueuesDeleted   int64 // queue rows deleted (in a dry run: would be)
	QueuesKept      int64 // deletes refused because range_id changed: a matching host owns the queue

	TasksProcessed int64 // task rows examined
	TasksDeleted   int64 // task rows deleted (in a dry run: would be)

	Deferred int64 // times a queue job yielded its worker
	Dropped  int64 // queue jobs dropped because the deferred list was full
	Errors   int64 // queue jobs that ended with an error
	Retries  int64 // transient store errors retried

	// BadRows lists rows that could not be processed (undecodable blob,
	// unknown encoding); the first MaxBadRows are kept, BadRowCount counts
	// them all.
	BadRows     []BadRow
	BadRowCount int64
}

// MaxBadRows caps Stats.BadRows.
const MaxBadRows = 100

// BadRow names a row that could not be processed and why.
type BadRow struct {
	Table store.Table
	Queue store.QueueKey
	// Task is the task's key, or nil for a queue row.
	Task *store.TaskKey
	Err  error
}

func (b BadRow) String() string {
	if b.Task != nil {
		if b.Table == store.V2 {
			return fmt.Sprintf("%s task %s pass %d id %d: %v", b.Table, b.Queue, b.Task.Pass, b.Task.ID, b.Err)
		}
		return fmt.Sprintf("%s task %s id %d: %v", b.Table, b.Queue, b.Task.ID, b.Err)
	}
	return fmt.Sprintf("%s queue %s: %v", b.Table, b.Queue, b.Err)
}

// counters are the live, concurrently updated form of Stats.
type counters struct {
	queuesListed, queuesProcessed, queuesDeleted, queuesKept atomic.Int64
	tasksProcessed, tasksDeleted                             atomic.Int64
	errors, retries                                          atomic.Int64

	mu      sync.Mutex
	badRows []BadRow
	badN    int64
}

func (c *counters) bad(b BadRow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.badN++
	if len(c.badRows) < MaxBadRows {
		c.badRows = append(c.badRows, b)
	}
}

func (c *counters) snapshot() Stats {
	c.mu.Lock()
	bad := append([]BadRow(nil), c.badRows...)
	badN := c.badN
	c.mu.Unlock()
	return Stats{
		QueuesListed:    c.queuesListed.Load(),
		QueuesProcessed: c.queuesProcessed.Load(),
		QueuesDeleted:   c.queuesDeleted.Load(),
		QueuesKept:      c.queuesKept.Load(),
		TasksProcessed:  c.tasksProcessed.Load(),
		TasksDeleted:    c.tasksDeleted.Load(),
		Errors:          c.errors.Load(),
		Retries:         c.retries.Load(),
		BadRows:         bad,
		BadRowCount:     badN,
	}
}
