package matchingsim

import (
	"sync"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// Clock is an injected clock shared by the simulator and the scavenger: it
// starts at a fixed instant and runs Speed times as fast as real time. It
// is monotonic (it reads Go's monotonic clock), so a time one goroutine read
// before another's is never later: the ordering arguments of the safety
// check rely on that.
type Clock struct {
	start time.Time
	base  time.Time // real time at NewClock, with its monotonic reading
	speed float64
}

// NewClock returns a clock that reads start now and advances speed times as
// fast as real time. A speed <= 0 means 1.
func NewClock(start time.Time, speed float64) *Clock {
	if speed <= 0 {
		speed = 1
	}
	return &Clock{start: start, base: time.Now(), speed: speed}
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	return c.start.Add(time.Duration(float64(time.Since(c.base)) * c.speed))
}

// taskState is what the ledger knows about a task it wrote.
type taskState uint8

const (
	// taskLive: written, not deleted by the simulator, not seen missing.
	taskLive taskState = iota
	// taskSimDeleted: the simulator deleted it (dispatched, at or below
	// the ack level it had just persisted).
	taskSimDeleted
	// taskMissing: a read by the simulator found it gone; someone else
	// (the scavenger) deleted it before missingAt.
	taskMissing
)

// task is the ledger entry of one task row the simulator wrote.
type task struct {
	sub     int // subqueue index k
	key     store.TaskKey
	create  time.Time // create_time in the blob
	expiry  time.Time // expiry_time in the blob; zero: never expires
	written time.Time // clock before the append that wrote it
	// committed is the clock after that append returned (zero if
	// uncertain): the task surely existed from then on until deleted.
	committed time.Time
	inc       int // index of the queue incarnation it was written under
	state     taskState
	// missingAt is the clock after the read that first found it gone: the
	// scavenger deleted it at or before this time.
	missingAt time.Time
	// uncertain: the append that wrote it ended with an error after which
	// the simulator could not tell whether it committed. Such a task is
	// kept out of the strict checks and counted.
	uncertain bool
}

// incarnation is one lifetime of a queue row: from a CreateQueue to the
// delete that removed it.
type incarnation struct {
	// created is the clock after the CreateQueue returned: the row surely
	// existed from then on.
	created time.Time
	// lastAlive is the clock before the last fenced write on the row that
	// succeeded: the row surely existed at some time at or after it. It is
	// the earliest the row can have been deleted.
	lastAlive time.Time
	// goneAt is the clock after the operation that found the row gone (zero
	// while it exists): it was deleted before goneAt.
	goneAt time.Time
	// legacy: the simulator deleted it itself while setting up, standing
	// in for an earlier run of Temporal's scavenger.
	legacy bool
}

// takeover records a lease: the simulator set range_id (CAS) to rangeID and
// last_update_time to lastUpdate; a creation counts as the takeover of
// range_id 1.
type takeover struct {
	rangeID       int64
	lastUpdate    time.Time
	otherHasTasks bool
	subqueues     int // length of the subqueues list it wrote
}

// ackRecord is an ack level the simulator persisted for one subqueue.
type ackRecord struct {
	sub   int
	level store.TaskKey // v1: Pass 0
	// at is the clock before the UpdateQueue that wrote it: the scavenger
	// cannot have seen it earlier.
	at time.Time
}

// deletion is a queue row the simulator found deleted (by the scavenger:
// the simulator never deletes rows after its setup).
type deletion struct {
	rangeID int64    // the range_id the row had: the simulator's last
	last    takeover // the takeover to rangeID
	goneAt  time.Time
	// atEnd: found by Verify rather than during the run.
	atEnd bool
}

// queue is one queue (namespace, name, type) in one table version, with
// everything the simulator did to it. Only the worker that owns it touches
// it while the simulator runs, so it needs no lock.
type queue struct {
	table store.Table
	ns    wire.NamespaceID
	name  string
	typ   wire.TaskType
	key   store.QueueKey
	// dormant queues are set up as orphans of an earlier Temporal scavenger
	// run and never re-created.
	dormant bool

	exists  bool  // the simulator believes the row exists
	rangeID int64 // the row's range_id, as last written
	// maxRange is the highest range_id the simulator ever used for this
	// queue, over every incarnation.
	maxRange int64
	info     wire.TaskQueueInfo // the row's blob, as last written
	data     []byte             // info, encoded
	// everSubqueues is the length of the longest subqueues list the queue
	// ever had: a re-created row lists them all again.
	everSubqueues int

	session   time.Time // start of the current lease; zero: not loaded
	draining  bool      // the session only dispatches, every task
	drained   int       // the subqueue a draining session dispatches next
	idleUntil time.Time
	nextID    int64 // next task id of the current range_id's block
	blockEnd  int64

	incs      []*incarnation
	tasks     map[int][]*task // by subqueue, in write order
	byKey     map[int]map[store.TaskKey]*task
	live      int // ledger tasks in state taskLive
	acks      []ackRecord
	takeovers []takeover
	deletions []deletion
}

func (q *queue) inc() *incarnation { return q.incs[len(q.incs)-1] }

func (q *queue) lastTakeover() takeover {
	if len(q.takeovers) == 0 {
		return takeover{}
	}
	return q.takeovers[len(q.takeovers)-1]
}

// subKey returns the task_queue_id key of subqueue k, computed forward.
func (q *queue) subKey(k int) store.QueueKey {
	if k == 0 {
		return q.key
	}
	id := wire.QueueID(q.ns, q.name, q.typ, k)
	return store.QueueKey{RangeHash: wire.RangeHash(id), ID: id}
}

// problems collects the simulator's own errors (unexpected store errors,
// rows changed by an unknown writer) for the report.
type problems struct {
	mu   sync.Mutex
	list []string
	n    int
}

const maxListed = 50

func (p *problems) add(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if len(p.list) < maxListed {
		p.list = append(p.list, s)
	}
}
