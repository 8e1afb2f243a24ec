// Package matchingsim simulates Temporal matching hosts writing to a task
// store while a scavenger runs against it, and checks afterwards, from the
// database alone and a ledger of everything it wrote, that the scavenger
// deleted nothing it must not delete. It serves the concurrent-writer
// safety test and soak runs.
//
// A Sim opens its own store handle, as another process would, and behaves
// as matching does: it owns a queue by a lease (range_id), taking
// the queue over (range_id+1, fresh last_update_time, compare-and-set)
// before it writes to a queue that may have gone idle; it appends tasks in
// range_id-fenced transactions with ids from its lease's block, into
// subqueues listed in the queue's blob, in the v1 and the v2 (fairness)
// tables; it dispatches tasks by moving ack levels and deleting the tasks at
// or below them; it lets queues go idle; and it re-creates queues it finds
// deleted. Task expiries mix a few milliseconds, an hour and never.
//
// # Leases are short
//
// Matching holds a lease for as long as the queue is busy and rewrites
// last_update_time at least every 12 h against the scavenger's 48 h grace:
// the scavenger's range_id fence plus that wide margin is what keeps a
// queue row from being deleted under a live owner. A test cannot afford a
// 48 h grace, and with a grace of a fraction of a second no margin survives
// a loaded CI machine, so the simulator's leases are short instead: it
// starts writes under a range_id only for Config.Session after the
// takeover that set it, and gives up appending tasks Config.Window after
// it (the transaction is cancelled). Every later write takes the queue
// over again, changing range_id, which fails any delete fenced on an older
// listing. A scavenger that deletes a queue row fenced on the range_id it
// listed, and only once that listing's last_update_time is Grace old, can
// therefore orphan a task the simulator appended only if more than
// Grace - Window passes between its listing of the row (which fixes the
// subqueues it reads, and so its reads) and its decision to delete the
// row. That is the timing assumption the test makes, and the only one;
// real matching makes the same one with 36 h to spare. (On SQLite under
// the race detector that latency was measured at up to half a second.)
//
// # Re-created queues get a fresh id block
//
// Matching re-creates a deleted queue at range_id 1 and allocates ids from
// block 1 again; it cannot know the range_ids used before. Tasks left
// behind by the deleted row (Temporal's scavenger leaves subqueues k > 0)
// may then collide with the new ids or sit among them. The simulator
// creates the row at range_id 1, as matching does, and at once takes it
// over at one more than the highest range_id it ever used for the queue, so
// its ids never repeat within a task_queue_id: the ledger's keys stay
// unambiguous and an insert never fails on a leftover. It lists again every
// subqueue the queue ever had, so leftover tasks belong to the new row.
package matchingsim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// BlockSize is the number of task ids a range_id owns: range_id r
// allocates (r-1)*BlockSize+1 … r*BlockSize (Temporal's rangeSize).
const BlockSize = 100000

// Config configures a Sim. Zero fields take the defaults noted.
type Config struct {
	// Clock is the clock the simulator and the scavenger share. Required.
	Clock *Clock
	// Grace is the scavenger's grace period. Default 1s.
	Grace time.Duration
	// Session is how long after its takeover a lease starts writes.
	// Default Grace/10.
	Session time.Duration
	// Window is how long after its takeover a lease may append tasks: an
	// append not committed by then is cancelled. The scavenger must decide
	// to delete a queue row within Grace - Window of listing it (see the
	// package comment). Default Grace/5; it must lie between Session and
	// Grace.
	Window time.Duration
	// Namespaces the queues are spread over. Default two fixed ones.
	Namespaces []wire.NamespaceID
	// Queues is the number of queue names. Each exists in every table of
	// Tables, as independent rows. Default 20.
	Queues int
	// Legacy is how many of the queues start out as orphans: a row whose
	// subqueues k > 0 hold tasks, deleted during setup as Temporal's
	// scavenger would; the simulator re-creates them later. Default
	// Queues/3; negative for none.
	Legacy int
	// Dormant is how many more queue names are set up the same way and
	// never re-created: orphans for good. Default 2; negative for none.
	Dormant int
	// Tables lists the table versions written. Default v1 and v2.
	Tables []store.Table
	// Workers is the number of simulated matching hosts; each owns a
	// share of the queues and holds at most one lease at a time.
	// Default 6.
	Workers int
	// Tick paces each worker (real time). Default 1ms.
	Tick time.Duration
	// MaxSubqueues bounds the subqueues per queue. Default 4.
	MaxSubqueues int
	// MaxBacklog bounds the tasks a queue holds before the simulator only
	// dispatches. Default 100, so that a scavenger job (256 tasks)
	// seldom yields its worker in the middle of a queue.
	MaxBacklog int
	// Seed seeds the simulator's choices.
	Seed uint64
}

func (c Config) withDefaults() Config {
	if c.Grace <= 0 {
		c.Grace = time.Second
	}
	if c.Session <= 0 {
		c.Session = c.Grace / 10
	}
	if c.Window <= 0 {
		c.Window = c.Grace / 5
	}
	if len(c.Namespaces) == 0 {
		c.Namespaces = []wire.NamespaceID{
			{0x32, 0x04, 0x9b, 0x68, 0x78, 0x72, 0x40, 0x94, 0x8e, 0x63, 0xd0, 0xdd, 0x59, 0x89, 0x6a, 0x83},
			{0x7a, 0x11, 0x5c, 0xe0, 0x03, 0x9d, 0x4f, 0x21, 0xb6, 0x48, 0x0e, 0x95, 0xc2, 0x7f, 0x31, 0x0d},
		}
	}
	if c.Queues <= 0 {
		c.Queues = 20
	}
	if c.Legacy < 0 {
		c.Legacy = 0
	} else if c.Legacy == 0 {
		c.Legacy = c.Queues / 3
	}
	c.Legacy = min(c.Legacy, c.Queues)
	if c.Dormant == 0 {
		c.Dormant = 2
	}
	c.Dormant = max(c.Dormant, 0)
	if len(c.Tables) == 0 {
		c.Tables = []store.Table{store.V1, store.V2}
	}
	if c.Workers <= 0 {
		c.Workers = 6
	}
	if c.Tick <= 0 {
		c.Tick = time.Millisecond
	}
	if c.MaxSubqueues <= 0 {
		c.MaxSubqueues = 4
	}
	if c.MaxBacklog <= 0 {
		c.MaxBacklog = 100
	}
	return c
}

// Sim is a running simulation of matching hosts on one database.
type Sim struct {
	cfg   Config
	db    *sqlstore.DB
	start time.Time // the clock when the Sim was opened

	queues  []*queue
	workers []*worker
	probs   problems
	setup   atomic.Bool
	ran     atomic.Bool

	sessions, appends, dispatches, simDeletes, renewals, retries atomic.Int64
}

// Open opens the database dsn with a handle of the simulator's own and
// prepares the queues; Run writes.
func Open(ctx context.Context, dsn string, cfg Config) (*Sim, error) {
	if cfg.Clock == nil {
		return nil, errors.New("matchingsim: Config.Clock is required")
	}
	cfg = cfg.withDefaults()
	if cfg.Session >= cfg.Window || cfg.Window >= cfg.Grace {
		return nil, fmt.Errorf("matchingsim: want session %s < window %s < grace %s", cfg.Session, cfg.Window, cfg.Grace)
	}
	db, err := sqlstore.Open(ctx, dsn, sqlstore.Options{})
	if err != nil {
		return nil, err
	}
	s := &Sim{cfg: cfg, db: db, start: cfg.Clock.Now()}
	types := []wire.TaskType{wire.TaskTypeActivity, wire.TaskTypeWorkflow, wire.TaskTypeNexus}
	for i := range cfg.Queues + cfg.Dormant {
		// Some names end in a multi-byte character: their bytes above 0x7f
		// look like a subqueue marker, so an orphan's parent is ambiguous
		// (wire.CandidateParents) and the scavenger must try every split.
		name := fmt.Sprintf("sim-%02d", i)
		if i%3 == 2 {
			name += "-é"
		}
		for _, t := range cfg.Tables {
			q := &queue{
				table: t,
				ns:    cfg.Namespaces[i%len(cfg.Namespaces)],
				name:  name,
				typ:   types[i%len(types)],
				tasks: map[int][]*task{},
				byKey: map[int]map[store.TaskKey]*task{},
			}
			id := wire.QueueID(q.ns, q.name, q.typ, 0)
			q.key = store.QueueKey{RangeHash: wire.RangeHash(id), ID: id}
			q.dormant = i >= cfg.Queues
			s.queues = append(s.queues, q)
		}
	}
	for i := range cfg.Workers {
		s.workers = append(s.workers, &worker{s: s, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(i)))})
	}
	for i, q := range s.queues {
		w := s.workers[i%len(s.workers)]
		w.queues = append(w.queues, q)
	}
	return s, nil
}

// Close closes the simulator's store handle.
func (s *Sim) Close() error { return s.db.Close() }

func (s *Sim) now() time.Time { return s.cfg.Clock.Now() }

// Setup writes the legacy orphans (Config.Legacy, Config.Dormant): rows
// whose subqueues k > 0 hold tasks, deleted as Temporal's scavenger would.
// Call it once, before the scavenger starts, then Run.
func (s *Sim) Setup(ctx context.Context) error {
	if !s.setup.CompareAndSwap(false, true) {
		return errors.New("matchingsim: Setup called twice")
	}
	w := &worker{s: s, rng: rand.New(rand.NewPCG(s.cfg.Seed, 1<<32))}
	legacy := 0
	for _, q := range s.queues {
		if !q.dormant {
			if legacy >= s.cfg.Legacy*len(s.cfg.Tables) {
				continue
			}
			legacy++
		}
		if err := w.legacy(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// Run simulates matching hosts until ctx ends. It returns an error only if
// it cannot start; what goes wrong while it runs is in the Report.
func (s *Sim) Run(ctx context.Context) error {
	if !s.ran.CompareAndSwap(false, true) {
		return errors.New("matchingsim: Run called twice")
	}
	var wg sync.WaitGroup
	for _, w := range s.workers {
		wg.Go(func() { w.loop(ctx) })
	}
	wg.Wait()
	return nil
}

// worker is one simulated matching host.
type worker struct {
	s      *Sim
	rng    *rand.Rand
	queues []*queue
	cur    *queue // the queue it holds a lease on, if any
}

func (w *worker) loop(ctx context.Context) {
	t := time.NewTicker(w.s.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.step()
	}
}

// step does one thing: load a queue (take it over or create it), act on the
// loaded one, or unload it.
func (w *worker) step() {
	s := w.s
	now := s.now()
	q := w.cur
	if q == nil {
		if q = w.pick(now); q != nil && w.load(q) {
			w.cur = q
		}
		return
	}
	if now.Sub(q.session) >= s.cfg.Session || w.rng.IntN(100) < 5 {
		w.unload(q, now)
		return
	}
	switch r := w.rng.IntN(100); {
	case q.draining:
		w.dispatch(q, true)
	case r < 50 && q.live < s.cfg.MaxBacklog:
		w.append(q)
	case r < 90:
		w.dispatch(q, false)
	default:
		w.renew(q)
	}
	if !q.exists || q.session.IsZero() {
		w.cur = nil
	}
}

// pick returns a queue whose idle time is over, starting at a random one.
func (w *worker) pick(now time.Time) *queue {
	n := len(w.queues)
	off := w.rng.IntN(n)
	for i := range n {
		q := w.queues[(off+i)%n]
		if (q.exists || !q.dormant) && !now.Before(q.idleUntil) {
			return q
		}
	}
	return nil
}

// load starts a lease: a queue that does not exist is created, one that
// does is taken over, since it may have been idle.
func (w *worker) load(q *queue) bool {
	w.s.sessions.Add(1)
	// Some sessions only drain the queue, so that it empties, goes idle
	// and the scavenger deletes it.
	q.draining = w.rng.IntN(100) < 40
	if !q.exists {
		return w.create(q)
	}
	return w.takeover(q)
}

// unload ends the lease and lets the queue go idle for up to two and a
// half grace periods: some come back before the scavenger may delete them,
// some after.
func (w *worker) unload(q *queue, now time.Time) {
	q.session = time.Time{}
	q.idleUntil = now.Add(time.Duration(w.rng.Int64N(int64(5 * w.s.cfg.Grace / 2))))
	w.cur = nil
}

// deadline returns the context for appending tasks or reading under the
// current lease: it ends Config.Window after the takeover, so that no task
// lands later (see the package comment). ok is false if that time has
// passed.
//
// Only transactions and reads are cut short so: cancelling a transaction
// before its commit rolls it back, while a single statement cancelled on
// the client may still run on the server (MySQL's driver just closes the
// connection; an UPDATE waiting for a row lock then commits later), which
// would leave the simulator wrong about what it wrote. Single-statement
// writes get background() and run to completion; they only start while
// the lease is young (young), and write no tasks.
func (w *worker) deadline(q *queue) (context.Context, context.CancelFunc, bool) {
	left := q.lastTakeover().lastUpdate.Add(w.s.cfg.Window).Sub(w.s.now())
	if left <= 0 {
		return nil, nil, false
	}
	real := time.Duration(float64(left) / w.s.cfg.Clock.speed)
	ctx, cancel := context.WithTimeout(context.Background(), real)
	return ctx, cancel, true
}

// young reports whether a write may still start under the current lease.
func (w *worker) young(q *queue) bool {
	return w.s.now().Before(q.lastTakeover().lastUpdate.Add(w.s.cfg.Window))
}

// do calls f until it succeeds, fails with an error that is not transient,
// or ctx ends. retried reports whether an earlier attempt failed, after
// which a failure of a transaction may hide a commit.
func (w *worker) do(ctx context.Context, f func(context.Context) error) (retried bool, err error) {
	for i := 0; ; i++ {
		err = f(ctx)
		if err == nil || !errors.Is(err, store.ErrTransient) || ctx.Err() != nil {
			return i > 0, err
		}
		w.s.retries.Add(1)
		t := time.NewTimer(time.Duration(1+w.rng.IntN(1+min(i, 10))) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return true, err
		case <-t.C:
		}
	}
}

// background is the context of reads that resolve what a failed write did:
// they must not be cut short by the lease.
func background() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// newInfo returns a fresh blob for q with n subqueues and no ack levels.
func (q *queue) newInfo(n int, now time.Time) wire.TaskQueueInfo {
	info := wire.TaskQueueInfo{
		NamespaceID:    q.ns.String(),
		Name:           q.name,
		TaskType:       q.typ,
		Kind:           wire.KindNormal,
		LastUpdateTime: now,
	}
	for k := range n {
		info.Subqueues = append(info.Subqueues, wire.SubqueueInfo{Priority: priority(k)})
	}
	return info
}

// priority is the priority key subqueue k serves: subqueue 0 the default
// (3), the others in an order of first use that is not k's order.
func priority(k int) int32 {
	if k == 0 {
		return 3
	}
	return []int32{5, 1, 2, 4}[(k-1)%4]
}

func (q *queue) cloneInfo() wire.TaskQueueInfo {
	info := q.info
	info.Subqueues = slices.Clone(q.info.Subqueues)
	return info
}

// ack returns subqueue k's persisted ack level.
func (q *queue) ack(k int) (store.TaskKey, bool) {
	if k >= len(q.info.Subqueues) {
		return store.TaskKey{}, false
	}
	sq := q.info.Subqueues[k]
	if q.table == store.V2 {
		return store.TaskKey{Pass: sq.FairAckLevel.Pass, ID: sq.FairAckLevel.TaskID}, sq.HasFairAckLevel
	}
	return store.TaskKey{ID: sq.AckLevel}, sq.AckLevel > 0
}

func setAck(info *wire.TaskQueueInfo, t store.Table, k int, level store.TaskKey) {
	sq := &info.Subqueues[k]
	if t == store.V2 {
		sq.FairAckLevel = wire.FairLevel{Pass: level.Pass, TaskID: level.ID}
		sq.HasFairAckLevel = true
		return
	}
	sq.AckLevel = level.ID
	if k == 0 {
		info.AckLevel = level.ID // subqueue 0's, for old readers
	}
}

// create inserts the queue row at range_id 1, as matching does. A queue
// that existed before is then taken over at a range_id it never used (see
// the package comment).
func (w *worker) create(q *queue) bool {
	s := w.s
	now := s.now()
	info := q.newInfo(max(1, q.everSubqueues), now)
	data := wire.EncodeTaskQueueInfo(info)
	row := store.QueueRow{QueueKey: q.key, RangeID: 1, Data: data, Encoding: wire.EncodingProto3}
	ctx, cancel := background()
	_, err := w.do(ctx, func(ctx context.Context) error { return s.db.CreateQueue(ctx, q.table, row) })
	cancel()
	after := s.now()
	if err != nil {
		got, gerr := w.getQueue(q)
		switch {
		case errors.Is(gerr, store.ErrNotFound):
			return false // not created; try again later
		case gerr != nil:
			s.probs.add(fmt.Sprintf("%s queue %q: create failed (%v), then reading it back failed: %v", q.table, q.name, err, gerr))
			return false
		case got.RangeID != 1 || !bytes.Equal(got.Data, data):
			s.probs.add(fmt.Sprintf("%s queue %q: create failed (%v) and another row is there (range_id %d)", q.table, q.name, err, got.RangeID))
			return false
		}
	}
	q.incs = append(q.incs, &incarnation{created: after, lastAlive: now})
	q.exists, q.rangeID, q.info, q.data = true, 1, info, data
	q.everSubqueues = max(q.everSubqueues, len(info.Subqueues))
	// The creation is the takeover of range_id 1.
	q.takeovers = append(q.takeovers, takeover{rangeID: 1, lastUpdate: now, subqueues: len(info.Subqueues)})
	if q.maxRange == 0 {
		q.maxRange = 1
		w.lease(q, 1, now)
		return true
	}
	return w.takeover(q)
}

// takeover moves the lease to a range_id never used before, with a fresh
// last_update_time, compare-and-set on the range_id the simulator last
// wrote. It fails if the row is gone (the scavenger deleted it).
func (w *worker) takeover(q *queue) bool {
	s := w.s
	now := s.now()
	info := q.cloneInfo()
	info.LastUpdateTime = now
	// other_has_tasks changes only with the range_id, so a scavenger
	// that deletes the row under this range_id has seen it.
	info.OtherHasTasks = w.rng.IntN(100) < 10
	r := max(q.rangeID, q.maxRange) + 1
	if !w.writeRow(q, info, r) {
		return false
	}
	q.maxRange = r
	q.takeovers = append(q.takeovers, takeover{rangeID: r, lastUpdate: now, otherHasTasks: info.OtherHasTasks, subqueues: len(info.Subqueues)})
	w.lease(q, r, now)
	return true
}

// lease starts a session on range_id r and its id block.
func (w *worker) lease(q *queue, r int64, now time.Time) {
	q.session = now
	q.nextID, q.blockEnd = (r-1)*BlockSize+1, r*BlockSize
}

// writeRow replaces the row's blob (and range_id with r), compare-and-set
// on the simulator's range_id. It reports whether the write applied.
func (w *worker) writeRow(q *queue, info wire.TaskQueueInfo, r int64) bool {
	s := w.s
	data := wire.EncodeTaskQueueInfo(info)
	row := store.QueueRow{QueueKey: q.key, RangeID: r, Data: data, Encoding: wire.EncodingProto3}
	before := s.now()
	ctx, cancel := background()
	_, err := w.do(ctx, func(ctx context.Context) error { return s.db.UpdateQueue(ctx, q.table, row, q.rangeID) })
	cancel()
	if err != nil {
		switch w.resolve(q, r, data, err) {
		case applied:
		case unchanged:
			s.probs.add(fmt.Sprintf("%s queue %q: write at range_id %d failed although the row is unchanged: %v", q.table, q.name, q.rangeID, err))
			return false
		default:
			return false
		}
	}
	q.rangeID, q.info, q.data = r, info, data
	q.everSubqueues = max(q.everSubqueues, len(info.Subqueues))
	q.inc().lastAlive = before
	return true
}

// outcome is what resolve found a failed write did.
type outcome int

const (
	applied   outcome = iota // the row holds what was written
	unchanged                // the row holds what it held before
	gone                     // the row is gone (recorded as a deletion)
	unknown                  // something else: reported as a problem
)

// resolve finds out what a failed write of (r, data) did by reading the row
// back.
func (w *worker) resolve(q *queue, r int64, data []byte, cause error) outcome {
	s := w.s
	got, err := w.getQueue(q)
	after := s.now()
	switch {
	case errors.Is(err, store.ErrNotFound):
		w.gone(q, after)
		return gone
	case err != nil:
		s.probs.add(fmt.Sprintf("%s queue %q: write failed (%v), then reading it back failed: %v", q.table, q.name, cause, err))
		return unknown
	case got.RangeID == r && bytes.Equal(got.Data, data):
		return applied
	case got.RangeID == q.rangeID && bytes.Equal(got.Data, q.data):
		return unchanged
	}
	s.probs.add(fmt.Sprintf("%s queue %q: row changed by another writer: range_id %d, want %d (%v)", q.table, q.name, got.RangeID, q.rangeID, cause))
	return unknown
}

func (w *worker) getQueue(q *queue) (store.QueueRow, error) {
	ctx, cancel := background()
	defer cancel()
	var row store.QueueRow
	_, err := w.do(ctx, func(ctx context.Context) (err error) {
		row, err = w.s.db.GetQueue(ctx, q.table, q.key)
		return err
	})
	return row, err
}

// gone records that the queue row was found deleted at or before at. Only
// the scavenger deletes rows while the simulator runs.
func (w *worker) gone(q *queue, at time.Time) {
	q.inc().goneAt = at
	q.deletions = append(q.deletions, deletion{rangeID: q.rangeID, last: q.lastTakeover(), goneAt: at})
	q.exists = false
	q.session = time.Time{}
	q.idleUntil = at.Add(time.Duration(w.rng.Int64N(int64(w.s.cfg.Grace))))
}

// renew rewrites last_update_time under the current range_id, as matching
// does periodically while a queue is loaded.
func (w *worker) renew(q *queue) {
	if !w.young(q) {
		return
	}
	info := q.cloneInfo()
	info.LastUpdateTime = w.s.now()
	if w.writeRow(q, info, q.rangeID) {
		w.s.renewals.Add(1)
	}
}

// append writes a few tasks to one subqueue, first adding the subqueue to
// the blob if it is new, and taking a new lease if the id block is used up.
func (w *worker) append(q *queue) {
	s := w.s
	k := 0
	if w.rng.IntN(2) == 0 {
		k = 1 + w.rng.IntN(s.cfg.MaxSubqueues-1)
	}
	if k >= len(q.info.Subqueues) {
		info := q.cloneInfo()
		for len(info.Subqueues) <= k {
			info.Subqueues = append(info.Subqueues, wire.SubqueueInfo{Priority: priority(len(info.Subqueues))})
		}
		info.LastUpdateTime = s.now()
		if !w.young(q) || !w.writeRow(q, info, q.rangeID) {
			return
		}
	}
	n := 1 + w.rng.IntN(6)
	if q.nextID+int64(n)-1 > q.blockEnd && !w.takeover(q) {
		return
	}
	now := s.now()
	base := int64(1)
	if a, ok := q.ack(k); ok && q.table == store.V2 {
		// New tasks go above the ack level: at its pass or later, with
		// larger ids; passes are not in id order.
		base = max(1, a.Pass)
	}
	tasks := make([]*task, n)
	rows := make([]store.TaskRow, n)
	for i := range tasks {
		id := q.nextID + int64(i)
		t := &task{sub: k, key: store.TaskKey{ID: id}, create: now, written: now, inc: len(q.incs) - 1}
		if q.table == store.V2 {
			t.key.Pass = base + w.rng.Int64N(4)
		}
		switch r := w.rng.IntN(100); {
		case r < 55:
			t.expiry = now.Add(time.Duration(w.rng.Int64N(int64(25 * time.Millisecond))))
		case r < 75:
			// never expires
		default:
			t.expiry = now.Add(time.Hour)
		}
		tasks[i] = t
		rows[i] = q.taskRow(t)
	}
	q.nextID += int64(n) // ids are never reused, whatever happens next
	ctx, cancel, ok := w.deadline(q)
	if !ok {
		return
	}
	retried, err := w.do(ctx, func(ctx context.Context) error {
		return s.db.AppendTasks(ctx, q.table, q.key, q.rangeID, q.subKey(k), rows)
	})
	cancel()
	if err == nil {
		q.inc().lastAlive = now
		after := s.now()
		for _, t := range tasks {
			t.committed = after
		}
		q.add(tasks, false)
		s.appends.Add(1)
		return
	}
	if errors.Is(err, store.ErrConditionFailed) && !retried {
		// The fence refused (the row is gone or not ours), or a key
		// collided; the transaction rolled back either way.
		if w.resolve(q, q.rangeID, q.data, err) == unchanged {
			s.probs.add(fmt.Sprintf("%s queue %q: append refused although the row is ours: %v", q.table, q.name, err))
		}
		return
	}
	// The lease's deadline, or a failure after a retry: the commit may
	// have happened. A later read settles it (observe).
	q.add(tasks, true)
	if w.resolve(q, q.rangeID, q.data, err) == unchanged &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, store.ErrTransient) && !errors.Is(err, store.ErrConditionFailed) {
		s.probs.add(fmt.Sprintf("%s queue %q: append: %v", q.table, q.name, err))
	}
}

// taskRow encodes a ledger task as matching would.
func (q *queue) taskRow(t *task) store.TaskRow {
	info := wire.AllocatedTaskInfo{
		TaskID: t.key.ID,
		Data: wire.TaskInfo{
			NamespaceID:      q.ns.String(),
			WorkflowID:       fmt.Sprintf("wf-%s-%d", q.name, t.key.ID),
			RunID:            "run-1",
			ScheduledEventID: 5,
			CreateTime:       t.create,
			ExpiryTime:       t.expiry,
		},
	}
	if t.sub > 0 {
		info.Data.Priority.PriorityKey = priority(t.sub)
	}
	if q.table == store.V2 {
		info.TaskPass = t.key.Pass
	}
	return store.TaskRow{Key: t.key, Data: wire.EncodeAllocatedTaskInfo(info), Encoding: wire.EncodingProto3}
}

// add enters tasks into the ledger.
func (q *queue) add(tasks []*task, uncertain bool) {
	for _, t := range tasks {
		t.uncertain = uncertain
		q.tasks[t.sub] = append(q.tasks[t.sub], t)
		m := q.byKey[t.sub]
		if m == nil {
			m = map[store.TaskKey]*task{}
			q.byKey[t.sub] = m
		}
		m[t.key] = t
		q.live++
	}
}

// dispatch reads one subqueue's tasks, as matching loads its backlog,
// dispatches a prefix of them by moving the ack level, and deletes the
// tasks at or below it; sometimes it stops before deleting, as a host that
// unloads the queue would, leaving them to the scavenger's ack-level rule.
// With all it dispatches and deletes every task, the subqueues in turn.
func (w *worker) dispatch(q *queue, all bool) {
	s := w.s
	k := w.rng.IntN(len(q.info.Subqueues))
	if all {
		k = q.drained % len(q.info.Subqueues)
		q.drained++
	}
	ctx, cancel, ok := w.deadline(q)
	if !ok {
		return
	}
	rows, err := w.readAll(ctx, q, k)
	after := s.now()
	late := ctx.Err() != nil
	cancel()
	if err != nil {
		if !late {
			s.probs.add(fmt.Sprintf("%s queue %q subqueue %d: read tasks: %v", q.table, q.name, k, err))
		}
		return
	}
	w.observe(q, k, rows, after)
	if len(rows) == 0 {
		return
	}
	m := len(rows)
	if !all && w.rng.IntN(3) > 0 {
		m = 1 + w.rng.IntN(len(rows))
	}
	level := rows[m-1].Key
	if cur, ok := q.ack(k); ok && !cur.Less(level) {
		level = cur
	} else {
		info := q.cloneInfo()
		setAck(&info, q.table, k, level)
		info.LastUpdateTime = s.now()
		before := s.now()
		if !w.writeRow(q, info, q.rangeID) {
			return
		}
		q.acks = append(q.acks, ackRecord{sub: k, level: level, at: before})
	}
	s.dispatches.Add(1)
	if !all && w.rng.IntN(10) < 3 {
		return
	}
	var done []store.TaskKey
	for _, r := range rows {
		if !level.Less(r.Key) {
			done = append(done, r.Key)
		}
	}
	if len(done) == 0 {
		return
	}
	// Matching deletes "at or below the ack level" by range; exact keys
	// exercise the other store call.
	byRange := w.rng.IntN(4) > 0
	ctx, cancel = background()
	defer cancel()
	_, err = w.do(ctx, func(ctx context.Context) error {
		if byRange {
			_, err := s.db.CompleteTasks(ctx, q.table, q.subKey(k), level)
			return err
		}
		_, err := s.db.DeleteTaskSets(ctx, q.table, []store.TaskSet{{Queue: q.subKey(k), Keys: done}})
		return err
	})
	for _, key := range done {
		t := q.byKey[k][key]
		if t == nil || t.state != taskLive {
			continue
		}
		if err != nil {
			// Perhaps deleted: keep it out of the strict checks.
			t.uncertain = true
			continue
		}
		t.state = taskSimDeleted
		q.live--
	}
	if err == nil {
		s.simDeletes.Add(int64(len(done)))
	} else {
		s.probs.add(fmt.Sprintf("%s queue %q subqueue %d: delete dispatched tasks: %v", q.table, q.name, k, err))
	}
}

// readAll reads every task of subqueue k.
func (w *worker) readAll(ctx context.Context, q *queue, k int) ([]store.TaskRow, error) {
	var out []store.TaskRow
	var after *store.TaskKey
	for {
		var page []store.TaskRow
		_, err := w.do(ctx, func(ctx context.Context) (err error) {
			page, err = w.s.db.ReadTasks(ctx, q.table, q.subKey(k), after, 500)
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < 500 {
			return out, nil
		}
		last := page[len(page)-1].Key
		after = &last
	}
}

// observe compares a full read of subqueue k, done by at, with the ledger:
// a live task not in it was deleted by someone else before at.
func (w *worker) observe(q *queue, k int, rows []store.TaskRow, at time.Time) {
	present := make(map[store.TaskKey]bool, len(rows))
	for _, r := range rows {
		present[r.Key] = true
		if q.byKey[k][r.Key] == nil {
			w.s.probs.add(fmt.Sprintf("%s queue %q subqueue %d: task %v the simulator never wrote", q.table, q.name, k, r.Key))
		}
	}
	for _, t := range q.tasks[k] {
		switch {
		case t.state == taskLive && present[t.key]:
			t.uncertain = false // it is surely there
		case t.state == taskLive:
			t.state, t.missingAt = taskMissing, at
			q.live--
		case present[t.key] && !t.uncertain:
			w.s.probs.add(fmt.Sprintf("%s queue %q subqueue %d: task %v is back after it was deleted", q.table, q.name, k, t.key))
		}
	}
}

// legacy sets q up as Temporal's scavenger leaves a queue: a row whose
// subqueues k > 0 hold tasks, created long ago and deleted because its
// subqueue 0 was empty. The tasks are orphans until the queue is
// re-created.
func (w *worker) legacy(ctx context.Context, q *queue) error {
	s := w.s
	now := s.now()
	long := now.Add(-time.Hour)
	r := int64(1 + w.rng.IntN(3))
	info := q.newInfo(3, long)
	data := wire.EncodeTaskQueueInfo(info)
	if err := s.db.CreateQueue(ctx, q.table, store.QueueRow{QueueKey: q.key, RangeID: r, Data: data, Encoding: wire.EncodingProto3}); err != nil {
		return fmt.Errorf("matchingsim: set up %s queue %q: %w", q.table, q.name, err)
	}
	q.incs = append(q.incs, &incarnation{created: s.now(), legacy: true})
	q.rangeID, q.maxRange, q.info, q.data, q.everSubqueues = r, r, info, data, 3
	q.takeovers = append(q.takeovers, takeover{rangeID: r, lastUpdate: long, subqueues: len(info.Subqueues)})
	id := (r-1)*BlockSize + 1
	for k := 1; k < 3; k++ {
		var tasks []*task
		var rows []store.TaskRow
		for range 3 + w.rng.IntN(8) {
			t := &task{sub: k, key: store.TaskKey{ID: id}, create: long, written: now, committed: now}
			if q.table == store.V2 {
				t.key.Pass = 1 + w.rng.Int64N(5)
			}
			switch w.rng.IntN(3) {
			case 0:
				t.expiry = long.Add(time.Minute)
			case 1:
				t.expiry = now.Add(time.Hour)
			}
			id++
			tasks = append(tasks, t)
			rows = append(rows, q.taskRow(t))
		}
		if err := s.db.AppendTasks(ctx, q.table, q.key, r, q.subKey(k), rows); err != nil {
			return fmt.Errorf("matchingsim: set up %s queue %q: %w", q.table, q.name, err)
		}
		q.add(tasks, false)
	}
	before := s.now()
	if _, err := s.db.DeleteQueues(ctx, q.table, []store.QueueFence{{QueueKey: q.key, RangeID: r}}); err != nil {
		// Gone already is as good: a scavenger started too early.
		return fmt.Errorf("matchingsim: set up %s queue %q: %w", q.table, q.name, err)
	}
	inc := q.inc()
	inc.lastAlive, inc.goneAt = before, s.now()
	// Re-created after a while, so that the scavenger meets the orphans
	// before, during and after the re-creation.
	q.idleUntil = now.Add(time.Duration(w.rng.Int64N(int64(2 * s.cfg.Grace))))
	return nil
}
