package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/wire"
)

// The workload of the live-load benchmark: the statements Temporal's
// matching service issues on the task tables, on queues of their own
// (named live-N, recently updated, holding tasks that never expire) that a
// pass must leave alone, through a connection pool of its own.
//
// Every operation is one of matching's persistence calls, in the SQL
// Temporal's SQL plugins use for it:
//
//   - lease: in a transaction, lock the queue row (SELECT … FOR UPDATE;
//     on SQLite BEGIN IMMEDIATE takes the writer lock), check range_id,
//     UPDATE it to range_id+1 where range_id is the old one (LeaseTaskQueue);
//   - append: in a transaction, lock the queue row, check range_id, insert
//     a batch of tasks (CreateTasks);
//   - read: a batch of tasks above the ack level (GetTasks);
//   - complete: delete the tasks at or below a new ack level
//     (CompleteTasksLessThan);
//   - update: in a transaction, lock the row, check range_id, rewrite its
//     blob with the new ack level (UpdateTaskQueue).
//
// Latency is measured from the time an operation was due, by a fixed
// schedule of arrivals (open loop), to the time it returned: an operation
// that waits for a connection, a lock or the writer lock waits in its
// latency, as matching's would.

// opKind is one of matching's persistence calls.
type opKind uint8

const (
	opLease opKind = iota
	opAppend
	opRead
	opComplete
	opUpdate
	// opScript is one transaction of the pgbench workload (pgbench.go).
	opScript
)

// An opMix is the sequence of calls each workload queue goes through,
// over and over. The lab's workloads (WorkloadLab, WorkloadLabWrites,
// WorkloadLabReads) differ by their mix only.
type opMix []opKind

var (
	// mixLab is matching's: it appends and reads most, completes and
	// persists ack levels less often, and leases rarely.
	mixLab = opMix{opAppend, opRead, opAppend, opRead, opComplete, opUpdate, opAppend, opRead, opComplete, opLease}
	// mixWrites is write-heavy: appends, leases, ack-level updates and
	// completes, one read in six operations (enough for complete to
	// delete what was appended): queue-row locks and the write lock as
	// often as the workload can take them.
	mixWrites = opMix{opAppend, opLease, opAppend, opUpdate, opRead, opComplete}
	// mixReads is read-heavy: four reads per append, no lease, a complete
	// and an ack-level update per ten reads.
	mixReads = opMix{opAppend, opRead, opRead, opRead, opRead, opAppend, opRead, opRead, opRead, opRead, opComplete, opUpdate}
)

// mixOf is the mix of lab workload wl; nil for another workload.
func mixOf(wl LiveWorkload) opMix {
	switch wl {
	case WorkloadLab, "":
		return mixLab
	case WorkloadLabWrites:
		return mixWrites
	case WorkloadLabReads:
		return mixReads
	}
	return nil
}

// Workload shape.
const (
	// appendBatch is how many tasks one append writes; readBatch how many
	// one read returns at most (matching's default is 1000 per read of a
	// backlog, but a live queue's reads are of what was just written).
	appendBatch = 10
	readBatch   = 100
	// backlog is how many tasks complete leaves behind the newest.
	backlog = 20
	// liveNamePrefix names the workload's queues.
	liveNamePrefix = "live"
)

// wlQueue is one workload queue and what the workload wrote to it. Its
// mutex serializes the operations on it, as one matching host owns a
// queue.
type wlQueue struct {
	mu      sync.Mutex
	key     []byte
	hash    int64
	name    string
	rangeID int64
	nextID  int64 // the next task id to append
	ack     int64 // tasks at or below it are deleted
	readTo  int64 // the highest task id read
	step    int   // position in the workload's mix
}

// tasks is how many tasks the queue holds, by the ledger.
func (q *wlQueue) tasks() int64 { return q.nextID - 1 - q.ack }

// workload drives the operations on one database.
type workload struct {
	db     *sql.DB
	engine sqlstore.Engine
	conns  int
	mix    opMix
	queues []*wlQueue
	now    func() time.Time
	// errs counts failed operations; firstErr keeps the first.
	errs     atomic.Int64
	errMu    sync.Mutex
	firstErr error
}

// sample is one operation's outcome.
type sample struct {
	kind opKind
	due  time.Time     // when it was scheduled to start
	lat  time.Duration // due to return
	// lock is how long the transaction waited to begin and lock the
	// queue row (on SQLite: BEGIN IMMEDIATE, the writer lock); 0 for
	// operations that take no lock.
	lock time.Duration
	ok   bool
	// busy: it failed on SQLITE_BUSY (livecost.go counts them).
	busy bool
}

// openWorkload opens a pool of conns connections (SQLite: one, as Temporal
// keeps) to dsn and creates n queues, which go through mix.
func openWorkload(ctx context.Context, dsn string, n, conns int, mix opMix) (*workload, error) {
	db, engine, err := openMatchingSQL(ctx, dsn, sqlstore.Options{MaxConns: conns, BusyTimeout: time.Minute})
	if err != nil {
		return nil, err
	}
	w := &workload{db: db, engine: engine, conns: conns, mix: mix, now: time.Now}
	for i := range n {
		q, err := createLiveQueue(ctx, db, engine, liveNamePrefix+"-"+strconv.Itoa(i), w.now())
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("workload: %w", err)
		}
		w.queues = append(w.queues, q)
	}
	return w, nil
}

// createLiveQueue inserts the row of a live queue named name, updated
// now, at range_id 1, as a matching host that has just leased it.
func createLiveQueue(ctx context.Context, db *sql.DB, engine sqlstore.Engine, name string, now time.Time) (*wlQueue, error) {
	info := liveInfo(now)
	info.Name = name
	id := wire.QueueID(seed.DefaultNamespace, name, wire.TaskTypeActivity, 0)
	q := &wlQueue{key: id, hash: int64(wire.RangeHash(id)), name: name, rangeID: 1, nextID: 1}
	b := (&sqlBuf{engine: engine}).w("INSERT INTO task_queues (range_hash, task_queue_id, range_id, data, data_encoding) VALUES (").
		p(q.hash).w(", ").p(q.key).w(", ").p(q.rangeID).w(", ").p(wire.EncodeTaskQueueInfo(info)).w(", ").p(wire.EncodingProto3).w(")")
	if _, err := db.ExecContext(ctx, b.String(), b.args...); err != nil {
		return nil, fmt.Errorf("create queue %s: %w", name, err)
	}
	return q, nil
}

func (w *workload) close() error { return w.db.Close() }

// pid is the lab's own process: the workload's client is its goroutines.
func (w *workload) pid() int { return os.Getpid() }

func (w *workload) sql() *sqlBuf { return &sqlBuf{engine: w.engine} }

// liveInfo is the blob of a workload queue: updated now, so never idle.
func liveInfo(now time.Time) wire.TaskQueueInfo {
	return wire.TaskQueueInfo{
		NamespaceID:    seed.DefaultNamespace.String(),
		TaskType:       wire.TaskTypeActivity,
		Kind:           wire.KindNormal,
		LastUpdateTime: now,
		Subqueues:      []wire.SubqueueInfo{{Priority: 3}},
	}
}

// start runs openLoop at rate with 4×conns operations in flight at most.
func (w *workload) start(ctx context.Context, rate float64) (func() ([]sample, int64, error), error) {
	stop := make(chan struct{})
	got := make(chan []sample, 1)
	go func() { got <- w.openLoop(ctx, rate, 4*w.conns, stop) }()
	return func() ([]sample, int64, error) {
		close(stop)
		all := <-got
		failed := w.errs.Load()
		if failed > 0 {
			return all, failed, fmt.Errorf("workload: %d operations failed, the first: %w", failed, w.firstErr)
		}
		return all, 0, nil
	}, nil
}

// rows is what the workload's queues hold by its ledger.
func (w *workload) rows() Rows {
	return Rows{Tasks: w.ledgerTasks(), Queues: int64(len(w.queues))}
}

// ledgerTasks is how many tasks the workload's queues hold by its ledger.
func (w *workload) ledgerTasks() int64 {
	var n int64
	for _, q := range w.queues {
		q.mu.Lock()
		n += q.tasks()
		q.mu.Unlock()
	}
	return n
}

func (w *workload) fail(err error) {
	w.errs.Add(1)
	w.errMu.Lock()
	if w.firstErr == nil {
		w.firstErr = err
	}
	w.errMu.Unlock()
}

// do runs the next operation of queue i, due at due, and returns its
// sample.
func (w *workload) do(ctx context.Context, i int, due time.Time) sample {
	q := w.queues[i%len(w.queues)]
	q.mu.Lock()
	defer q.mu.Unlock()
	kind := w.mix[q.step%len(w.mix)]
	q.step++
	lock, err := w.run(ctx, q, kind)
	s := sample{kind: kind, due: due, lat: w.now().Sub(due), lock: lock, ok: err == nil, busy: err != nil && isSQLiteBusy(err)}
	if err != nil && ctx.Err() == nil {
		w.fail(fmt.Errorf("%s %s: %w", kind, q.name, err))
	}
	return s
}

func (k opKind) String() string {
	return [...]string{"lease", "append", "read", "complete", "update", "pgbench transaction"}[k]
}

func (w *workload) run(ctx context.Context, q *wlQueue, kind opKind) (time.Duration, error) {
	switch kind {
	case opRead:
		return 0, w.read(ctx, q)
	case opComplete:
		return 0, w.complete(ctx, q)
	}
	return w.locked(ctx, q, kind)
}

// locked runs a lease, append or update: a transaction that locks the
// queue row and checks its range_id first. It returns how long taking the
// lock took.
func (w *workload) locked(ctx context.Context, q *wlQueue, kind opKind) (lock time.Duration, err error) {
	start := w.now()
	tx, err := w.db.BeginTx(ctx, nil) // SQLite: BEGIN IMMEDIATE (the connector's _txlock)
	if err != nil {
		return w.now().Sub(start), err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	b := w.sql().w("SELECT range_id FROM task_queues WHERE range_hash = ").p(q.hash).w(" AND task_queue_id = ").p(q.key)
	if w.engine != sqlstore.SQLite {
		b.w(" FOR UPDATE")
	}
	var got int64
	err = tx.QueryRowContext(ctx, b.String(), b.args...).Scan(&got)
	lock = w.now().Sub(start)
	if err != nil {
		return lock, err
	}
	if got != q.rangeID {
		return lock, fmt.Errorf("range_id %d, want %d: the queue was changed by someone else", got, q.rangeID)
	}
	next := q.rangeID
	switch kind {
	case opAppend:
		b = w.sql().w("INSERT INTO tasks (range_hash, task_queue_id, task_id, data, data_encoding) VALUES ")
		now := w.now()
		for i := range appendBatch {
			id := q.nextID + int64(i)
			t := wire.AllocatedTaskInfo{TaskID: id, Data: wire.TaskInfo{
				NamespaceID: seed.DefaultNamespace.String(), WorkflowID: "wf-" + q.name + "-" + strconv.FormatInt(id, 10),
				RunID: "run-0", ScheduledEventID: 5, CreateTime: now, // no expiry: never expires
			}}
			if i > 0 {
				b.w(", ")
			}
			b.w("(").p(q.hash).w(", ").p(q.key).w(", ").p(id).w(", ").p(wire.EncodeAllocatedTaskInfo(t)).w(", ").p(wire.EncodingProto3).w(")")
		}
	case opLease, opUpdate:
		if kind == opLease {
			next++
		}
		info := liveInfo(w.now())
		info.Name = q.name
		info.AckLevel = q.ack
		info.Subqueues[0].AckLevel = q.ack
		b = w.sql().w("UPDATE task_queues SET range_id = ").p(next).w(", data = ").p(wire.EncodeTaskQueueInfo(info)).
			w(" WHERE range_hash = ").p(q.hash).w(" AND task_queue_id = ").p(q.key).w(" AND range_id = ").p(q.rangeID)
	}
	res, err := tx.ExecContext(ctx, b.String(), b.args...)
	if err != nil {
		return lock, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return lock, errors.Join(errors.New("the write changed no row"), err)
	}
	if err := tx.Commit(); err != nil {
		return lock, err
	}
	if kind == opAppend {
		q.nextID += appendBatch
	}
	q.rangeID = next
	return lock, nil
}

// read reads a batch of tasks above the ack level, as matching's task
// reader does.
func (w *workload) read(ctx context.Context, q *wlQueue) error {
	b := w.sql().w("SELECT task_id, data, data_encoding FROM tasks WHERE range_hash = ").p(q.hash).
		w(" AND task_queue_id = ").p(q.key).w(" AND task_id > ").p(q.ack).
		w(" ORDER BY task_id LIMIT " + strconv.Itoa(readBatch))
	rows, err := w.db.QueryContext(ctx, b.String(), b.args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id   int64
			data []byte
			enc  string
		)
		if err := rows.Scan(&id, &data, &enc); err != nil {
			return err
		}
		q.readTo = max(q.readTo, id)
	}
	return rows.Err()
}

// complete deletes the tasks read, but for the last backlog ones.
func (w *workload) complete(ctx context.Context, q *wlQueue) error {
	level := min(q.readTo, q.nextID-1-backlog)
	if level <= q.ack {
		level = q.ack // nothing new to complete; the statement still runs
	}
	b := w.sql().w("DELETE FROM tasks WHERE range_hash = ").p(q.hash).w(" AND task_queue_id = ").p(q.key).
		w(" AND task_id <= ").p(level)
	if _, err := w.db.ExecContext(ctx, b.String(), b.args...); err != nil {
		return err
	}
	q.ack = level
	return nil
}

// capacity runs the workload closed-loop, conns operations at a time, for
// d, and returns the operations completed per second.
func (w *workload) capacity(ctx context.Context, conns int, d time.Duration) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		next, done atomic.Int64
		wg         sync.WaitGroup
	)
	start := w.now()
	for range conns {
		wg.Go(func() {
			for ctx.Err() == nil {
				s := w.do(ctx, int(next.Add(1)), w.now())
				if s.ok {
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := w.errs.Load(); n > 0 {
		return 0, fmt.Errorf("workload: %d operations failed, the first: %w", n, w.firstErr)
	}
	return float64(done.Load()) / w.now().Sub(start).Seconds(), nil
}

// openLoop issues operations at rate per second, by a fixed schedule from
// its start, until stop is closed, with up to workers of them in flight
// (more than the pool's connections, so that operations queue for a
// connection as matching's do). It returns every operation that was due
// before stop closed, each with its latency from when it was due.
func (w *workload) openLoop(ctx context.Context, rate float64, workers int, stop <-chan struct{}) []sample {
	interval := time.Duration(float64(time.Second) / rate)
	due := make(chan time.Time, 1<<16)
	var (
		mu  sync.Mutex
		out []sample
		wg  sync.WaitGroup
		seq atomic.Int64
	)
	for range workers {
		wg.Go(func() {
			var mine []sample
			for t := range due {
				mine = append(mine, w.do(ctx, int(seq.Add(1)), t))
			}
			mu.Lock()
			out = append(out, mine...)
			mu.Unlock()
		})
	}
	start := w.now()
	timer := time.NewTimer(0)
	defer timer.Stop()
loop:
	for i := int64(0); ; i++ {
		t := start.Add(time.Duration(i) * interval)
		if d := t.Sub(w.now()); d > 0 {
			timer.Reset(d)
			select {
			case <-stop:
				break loop
			case <-ctx.Done():
				break loop
			case <-timer.C:
			}
		} else {
			select {
			case <-stop:
				break loop
			default:
			}
		}
		select {
		case due <- t:
		default:
			// A backlog of 65,536 operations: the database has stopped
			// answering. Count it as a failure rather than block the clock.
			w.fail(errors.New("workload: more than 65,536 operations waiting"))
		}
	}
	close(due) // the workers finish what was due
	wg.Wait()
	slices.SortFunc(out, func(a, b sample) int { return a.due.Compare(b.due) })
	return out
}
