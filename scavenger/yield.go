package scavenger

import (
	"context"
	"log/slog"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/pace"
	"github.com/tqscavenger/tqscavenger/store"
)

// The controller of PaceGentle (Config.Mode): the pass watches what its
// statements do to the database and backs off when it gets slower, so
// that a cluster under load keeps its latency while the pass takes longer.
// Under PaceFull it passes every call straight on (it still counts the
// statements running, so that a pace changed mid-pass by Scavenger.Tune
// starts from the truth).
//
// # Signals
//
//   - The pass's own statements, per kind: the store method and the size
//     of its result (rows read or deleted, in powers of two), since a
//     delete of 1,000 rows is not slow for taking longer than one of 16.
//     A write's latency is its commit's too (each commits on its own at
//     this pace), so this is the pass's commit latency.
//   - A probe (probe.go), where the store has one (PostgreSQL, MySQL): a
//     connection of its own, outside the pool, reading in matching's
//     shapes, tens of times a second: what the cluster's reads feel.
//
// A kind's baseline is the median of a window of yieldSamples statements
// taken with the pass at its least: first at the slow start (one
// statement at a time), then in a re-measure every rebaseEvery, where the
// pass lets its statements drain, pauses rebasePause (the probe's samples
// in that pause are its baseline: the database without the pass at all)
// and runs rebaseStatements statements one at a time, whose medians
// replace their kinds' baselines. Between re-measures a quiet window
// (median at most YieldFactor × baseline) moves the baseline at once to a
// lower median and an eighth of the way to a higher one.
//
// # Backing off (AIMD), within a floor
//
// The pass runs at most `allowed` statements at once (between 1 and
// Config.Workers) and, after each, pauses for its latency × (1/share − 1)
// before the next takes the slot: share is the fraction of time a slot
// spends in the database. A window whose median exceeds YieldFactor × its
// kind's baseline halves allowed, share and the batch size's cap
// (multiplicative decrease: smaller statements are shorter bursts); a
// quiet window raises share by 1/8, then allowed by one, then the batch
// cap by an eighth of Config.TaskBatchSize (additive increase).
//
// The floor keeps a gentle pass moving whatever the signals say: at least
// one statement in flight, share at least yieldMinShare, no pause longer
// than yieldMaxPause, batches of at least a quarter of
// Config.TaskBatchSize (and yieldMinBatch rows). A pass at the floor that
// still sees harm logs that it cannot be gentler (Stats.Pace.FloorHits
// counts it): at the floor a gentle pass takes at most 1/yieldMinShare =
// 4 times as long as it would one statement at a time without pauses, and
// its batches are at most 4 times smaller. (A floor of 1/8 and 64-row
// batches, the first choice, let a pass beside a loaded PostgreSQL run
// past the lab's 3-minute bound where the full pace took seconds:
// 1,000-row deletes became 64-row ones, 16 times the statements, each
// followed by 7 times its time.)
//
// # SQLite: a duty cycle
//
// A store whose write takes a lock on the whole database
// (store.WholeDatabaseWriter: SQLite) has no probe — a read there in a
// rollback journal takes a SHARED lock that blocks commits, and
// Temporal's SQLite plugin begins deferred transactions that fail at once
// on a held lock — and it runs one statement at a time with its share
// capped at yieldSQLiteDuty: the pass holds the database (its one
// connection) at most that share of the time, leaving the writer lock
// free the rest.
//
// It only ever adds waits, inside the rate limits (it is the middleware
// under them): it slows a pass below the limits, never above them.
const (
	yieldSamples = 8
	// The floor.
	yieldMinShare = 1.0 / 4
	yieldMaxPause = time.Second
	yieldMinBatch = 64
	// yieldSQLiteDuty is the most of the time a gentle pass holds a
	// SQLite database.
	yieldSQLiteDuty = 0.25
	// The re-measure of the baselines.
	rebaseEvery      = 30 * time.Second
	rebasePause      = 250 * time.Millisecond
	rebaseStatements = 2 * yieldSamples
	// yieldLogEvery bounds the log lines of backing off.
	yieldLogEvery = 10 * time.Second
)

// yielder is the state of the gentle pace's controller, shared by every
// call of a pass.
type yielder struct {
	factor  float64
	workers int
	log     *slog.Logger
	now     func() time.Time
	// sleep waits d, or until ctx ends or stop closes (tests inject one).
	sleep func(ctx context.Context, d time.Duration)
	stop  <-chan struct{}
	// batch, if set, is the pass's batcher, whose cap the controller sets.
	batch     *pace.Batcher
	batchCeil int
	// maxShare is 1, or yieldSQLiteDuty on a whole-database writer.
	maxShare float64
	// stuckAfter is how long a statement may run before it no longer
	// counts against allowed: one waiting on a lock (or a test's hook)
	// must not stall the pass.
	stuckAfter time.Duration

	mu   sync.Mutex
	slot sync.Cond // a slot freed, allowed grew, the pace changed, or stop
	// full is the pace PaceFull: no cap, no pause, no adjustment.
	full     bool
	running  int
	starts   map[uint64]time.Time // of the statements running, by ticket
	nextID   uint64
	allowed  int
	share    float64
	batchCap int
	kinds    map[yieldKind]*yieldWindow
	// The re-measure: rebasing from its start until rebaseStatements
	// quiet statements were observed; idle while the pass pauses in it.
	rebasing, idle   bool
	paused           bool // the re-measure's pause is over
	lastRebase       time.Time
	quietLeft        int
	saved            [2]float64 // allowed and share before the re-measure
	probeIdle        []time.Duration
	probe            yieldWindow
	signals          map[string]*yieldWindow // outside signals: observeSignal
	lastSignal       string                  // what the last window measured
	lastRatio        float64                 // its median ÷ baseline
	floorHits        int64
	onWait           func() // a test's: called, under mu, when a statement starts waiting
	decreases        int
	increases        int
	minAllowed       int
	minShare         float64
	lastLog, lastHit time.Time
}

// yieldKind is a kind of statement: the method and the bit length of its
// result's row count.
type yieldKind struct {
	method string
	size   int
}

// yieldWindow is one kind's baseline and the latencies since its last
// window.
type yieldWindow struct {
	baseline time.Duration // 0 until the first window
	window   []time.Duration
	quiet    []time.Duration // samples of the re-measure under way
}

func newYielder(cfg Config, stop <-chan struct{}) *yielder {
	y := &yielder{
		factor: cfg.YieldFactor, workers: max(1, cfg.Workers), log: cfg.Logger, now: time.Now, sleep: sleepCtx, stop: stop,
		allowed: 1, share: 1, kinds: map[yieldKind]*yieldWindow{}, minAllowed: 1, minShare: 1, maxShare: 1,
		full: cfg.Mode == PaceFull, batchCeil: max(1, cfg.TaskBatchSize), batchCap: max(1, cfg.TaskBatchSize),
		stuckAfter: 2 * cfg.SlowStatement, starts: map[uint64]time.Time{}, signals: map[string]*yieldWindow{},
	}
	if y.stuckAfter <= 0 {
		y.stuckAfter = 2 * time.Second
	}
	y.lastRebase = y.now()
	y.slot.L = &y.mu
	return y
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// setFull sets the pace, and wakes the statements waiting for a slot so
// that they see it. Full pace lifts the cap on batch sizes that gentle
// set (its next batch is as large as the batcher allows); back at gentle,
// the cap is where gentle left it.
func (y *yielder) setFull(full bool) {
	y.mu.Lock()
	y.full = full
	if y.batch != nil {
		if full {
			y.batch.SetCap(0)
		} else {
			y.batch.SetCap(y.batchCap)
		}
	}
	y.slot.Broadcast()
	y.mu.Unlock()
}

// yieldMiddleware returns the middleware of the pace's controller, told of
// each new pace tune takes. batch is the pass's batcher (nil: none); st
// the store, for whether it is a whole-database writer. seen, if not nil,
// receives the pass's yielder (a test's hook, Scavenger.onYielder).
func yieldMiddleware(cfg Config, tune *tunables, stop <-chan struct{}, batch *pace.Batcher, st store.Store, seen func(*yielder)) (store.Middleware, *yielder) {
	y := newYielder(cfg, stop)
	y.batch = batch
	if w, ok := st.(store.WholeDatabaseWriter); ok && w.WritesLockDatabase() {
		// One statement at a time, so that the share is the database's:
		// four slots each in it a quarter of the time would keep it busy.
		y.maxShare, y.share, y.workers = yieldSQLiteDuty, yieldSQLiteDuty, 1
	}
	// The pass's own yielder replaces the last pass's: one pass runs at
	// a time.
	tune.watchMode(func() { y.setFull(tune.pace() == PaceFull) })
	y.setFull(tune.pace() == PaceFull)
	if seen != nil {
		seen(y)
	}
	return func(next store.Store) store.Store { return &yieldStore{next: next, y: y} }, y
}

// ticket is a statement's slot: its id, and whether it is one of a
// re-measure's quiet statements.
type ticket struct {
	id    uint64
	quiet bool
}

// active is the statements running that count against allowed: those
// running for less than stuckAfter (under mu). It also returns when the
// next of them stops counting (zero: none).
func (y *yielder) active() (n int, next time.Time) {
	now := y.now()
	for _, t := range y.starts {
		if end := t.Add(y.stuckAfter); now.Before(end) {
			n++
			if next.IsZero() || end.Before(next) {
				next = end
			}
		}
	}
	return n, next
}

// take starts a statement in a slot (under mu).
func (y *yielder) take(quiet bool) ticket {
	y.running++
	y.nextID++
	y.starts[y.nextID] = y.now()
	return ticket{id: y.nextID, quiet: quiet}
}

// acquire waits for a slot: fewer than allowed statements running (a
// statement running for stuckAfter no longer counts).
func (y *yielder) acquire(ctx context.Context) (ticket, error) {
	y.mu.Lock()
	defer y.mu.Unlock()
	if !y.full && !y.rebasing && y.now().Sub(y.lastRebase) >= rebaseEvery {
		y.startRebase()
	}
	if n, _ := y.active(); y.full || (!y.rebasing && n < y.allowed) {
		return y.take(false), nil
	}
	broadcast := func() {
		y.mu.Lock()
		y.slot.Broadcast()
		y.mu.Unlock()
	}
	wake := context.AfterFunc(ctx, broadcast)
	defer wake()
	// A closed stop must wake the wait too: without this a waiter slept
	// through shutdown until some statement freed a slot (a test hung 30
	// min in CI).
	left := make(chan struct{})
	defer close(left)
	go func() {
		select {
		case <-y.stop:
			broadcast()
		case <-left:
		}
	}()
	if y.onWait != nil {
		y.onWait()
	}
	for {
		if err := ctx.Err(); err != nil {
			return ticket{}, err
		}
		select {
		case <-y.stop:
			return ticket{}, ErrShutdown
		default:
		}
		n, next := y.active()
		switch {
		case y.full:
			return y.take(false), nil
		case y.rebasing && n == 0 && !y.idle:
			return y.quietSlot(ctx)
		case !y.rebasing && n < y.allowed:
			return y.take(false), nil
		}
		// A statement that stops counting frees a slot too.
		var timer *time.Timer
		if !next.IsZero() {
			timer = time.AfterFunc(next.Sub(y.now())+time.Millisecond, broadcast)
		}
		y.slot.Wait()
		if timer != nil {
			timer.Stop()
		}
	}
}

// startRebase begins a re-measure: the statements running drain, the pass
// pauses, then runs quiet statements one at a time (under mu).
func (y *yielder) startRebase() {
	y.rebasing, y.paused, y.quietLeft = true, false, rebaseStatements
	y.saved = [2]float64{float64(y.allowed), y.share}
	y.lastRebase = y.now()
	for _, w := range y.kinds {
		w.quiet = w.quiet[:0]
	}
	y.probeIdle = y.probeIdle[:0]
}

// quietSlot takes the one slot of a re-measure, after its pause if it is
// the first (under mu, which it releases while it pauses).
func (y *yielder) quietSlot(ctx context.Context) (ticket, error) {
	t := y.take(true)
	if !y.paused {
		y.paused, y.idle = true, true
		y.mu.Unlock()
		y.sleep(ctx, rebasePause)
		y.mu.Lock()
		y.idle = false
		y.setProbeBaseline()
	}
	return t, nil
}

// setProbeBaseline makes the median of the probe's samples in the pause,
// if any, its baseline (under mu).
func (y *yielder) setProbeBaseline() {
	if len(y.probeIdle) == 0 {
		return
	}
	slices.Sort(y.probeIdle)
	y.probe.baseline = y.probeIdle[len(y.probeIdle)/2]
	y.probe.window = y.probe.window[:0]
}

// endRebase ends a re-measure: each kind with quiet samples takes their
// median as its baseline, and the pace is what it was (under mu).
func (y *yielder) endRebase() {
	for _, w := range y.kinds {
		if len(w.quiet) >= 3 {
			slices.Sort(w.quiet)
			w.baseline = w.quiet[len(w.quiet)/2]
			w.window = w.window[:0]
		}
		w.quiet = w.quiet[:0]
	}
	y.rebasing = false
	y.probeIdle = y.probeIdle[:0]
	y.allowed = max(1, int(y.saved[0]))
	y.share = y.saved[1]
	y.lastRebase = y.now()
	y.slot.Broadcast()
}

// pauseFor is the pause after a statement of d at share: within the floor.
func pauseFor(d time.Duration, share float64) time.Duration {
	if share >= 1 || d <= 0 {
		return 0
	}
	return min(time.Duration(float64(d)*(1/share-1)), yieldMaxPause)
}

// release frees the slot after the pause the share asks for. A quiet
// statement of a re-measure does not pause.
func (y *yielder) release(ctx context.Context, d time.Duration, t ticket) {
	y.mu.Lock()
	share := y.share
	if y.full || t.quiet {
		share = 1
	}
	y.mu.Unlock()
	if pause := pauseFor(d, share); pause > 0 {
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-y.stop:
		}
		t.Stop()
	}
	y.mu.Lock()
	y.running--
	delete(y.starts, t.id)
	y.slot.Broadcast()
	y.mu.Unlock()
}

// observe records a statement of method that returned rows in d, and
// adjusts the pace at the end of a window. quiet says it was one of a
// re-measure's.
func (y *yielder) observe(method string, rows int, d time.Duration, quiet bool) {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.full {
		return
	}
	k := yieldKind{method: method, size: bits.Len(uint(max(rows, 0)))}
	w := y.kinds[k]
	if w == nil {
		w = &yieldWindow{}
		y.kinds[k] = w
	}
	if quiet && y.rebasing {
		w.quiet = append(w.quiet, d)
		if y.quietLeft--; y.quietLeft <= 0 {
			y.endRebase()
		}
		return
	}
	y.window(k.method, w, d)
}

// observeProbe records one probe of the probe connection that took d.
func (y *yielder) observeProbe(d time.Duration) {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.full {
		return
	}
	if y.idle {
		y.probeIdle = append(y.probeIdle, d)
		return
	}
	if y.probe.baseline == 0 {
		// No pause yet: the first probes, with the pass at its slow
		// start, stand in.
		y.probeIdle = append(y.probeIdle, d)
		if len(y.probeIdle) >= yieldSamples {
			y.setProbeBaseline()
			y.probeIdle = y.probeIdle[:0]
		}
		return
	}
	y.window("probe", &y.probe, d)
}

// observeSignal records one sample of an outside signal (Temporal's own
// persistence latency): its baseline is its first window, then follows
// quiet windows as the others do.
func (y *yielder) observeSignal(name string, d time.Duration) {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.full || d <= 0 {
		return
	}
	w := y.signals[name]
	if w == nil {
		w = &yieldWindow{}
		y.signals[name] = w
	}
	y.window(name, w, d)
}

// window adds d to w's window and, once it is full, compares its median
// with the baseline and moves the pace (under mu).
func (y *yielder) window(signal string, w *yieldWindow, d time.Duration) {
	w.window = append(w.window, d)
	if len(w.window) < yieldSamples {
		return
	}
	slices.Sort(w.window)
	m := w.window[len(w.window)/2]
	w.window = w.window[:0]
	if w.baseline == 0 {
		w.baseline = m
		return
	}
	y.lastSignal, y.lastRatio = signal, float64(m)/float64(w.baseline)
	if float64(m) > y.factor*float64(w.baseline) {
		y.decrease(signal, m, w.baseline)
		return
	}
	if m < w.baseline {
		w.baseline = m
	} else {
		w.baseline += (m - w.baseline) / 8
	}
	y.increase()
}

func (y *yielder) decrease(signal string, m, base time.Duration) {
	y.decreases++
	atFloor := y.allowed == 1 && y.share <= yieldMinShare && y.batchCap <= y.minBatch()
	y.allowed = max(1, y.allowed/2)
	y.share = max(yieldMinShare, y.share/2)
	y.setBatchCap(max(y.minBatch(), y.batchCap/2))
	y.minAllowed = min(y.minAllowed, y.allowed)
	y.minShare = min(y.minShare, y.share)
	now := y.now()
	if atFloor {
		y.floorHits++
		if now.Sub(y.lastHit) >= yieldLogEvery {
			y.lastHit = now
			y.log.Warn("pace gentle: at its floor and the database is still slower than its baseline: the pass cannot be gentler (one statement at a time, the longest pauses)",
				"signal", signal, "median", m, "baseline", base, "factor", y.factor)
		}
		return
	}
	if now.Sub(y.lastLog) >= yieldLogEvery {
		y.lastLog = now
		y.log.Info("pace gentle: backing off, the database is slower than its baseline",
			"signal", signal, "median", m, "baseline", base, "factor", y.factor,
			"in_flight", y.allowed, "share", y.share, "batch", y.batchCap)
	}
}

func (y *yielder) increase() {
	y.increases++
	switch {
	case y.share < y.maxShare:
		y.share = min(y.maxShare, y.share+1.0/8)
	case y.allowed < y.workers:
		y.allowed++
		y.slot.Signal()
	case y.batchCap < y.batchCeil:
		y.setBatchCap(min(y.batchCeil, y.batchCap+max(1, y.batchCeil/8)))
	}
}

// minBatch is the floor of the batch cap: a quarter of the task batch
// size, at least yieldMinBatch rows (never above the batch size).
func (y *yielder) minBatch() int {
	return min(y.batchCeil, max(yieldMinBatch, y.batchCeil/4))
}

// setBatchCap sets the cap of the pass's batch sizes (under mu).
func (y *yielder) setBatchCap(n int) {
	y.batchCap = n
	if y.batch != nil {
		y.batch.SetCap(n)
	}
}

// counters returns the decreases so far and the least concurrency and
// share reached.
func (y *yielder) counters() (decreases, minAllowed int, minShare float64) {
	y.mu.Lock()
	defer y.mu.Unlock()
	return y.decreases, y.minAllowed, y.minShare
}

// yieldStore paces every call through its yielder. It spells out every
// method of store.Store, so a method added to the contract does not
// bypass it, and those of the optional interfaces the pass uses
// (optional.go): the closed-workflow rule's lookups wait for a slot and
// count in the windows as the pass's other statements do.
type yieldStore struct {
	next store.Store
	y    *yielder
}

var (
	_ store.Store           = (*yieldStore)(nil)
	_ store.ExecutionReader = (*yieldStore)(nil)
	_ store.OddHashFinder   = (*yieldStore)(nil)
)

// call runs f in a slot and observes it as method; f returns the rows it
// read or deleted.
func (s *yieldStore) call(ctx context.Context, method string, f func() (int, error)) error {
	t, err := s.y.acquire(ctx)
	if err != nil {
		return err
	}
	quiet := t.quiet
	start := s.y.now()
	n, err := f()
	d := s.y.now().Sub(start)
	if err == nil {
		// A failed statement says nothing of the database's pace that
		// the retry's backoff does not already act on.
		s.y.observe(method, n, d, quiet)
	} else if quiet {
		s.y.mu.Lock()
		if s.y.quietLeft--; s.y.rebasing && s.y.quietLeft <= 0 {
			s.y.endRebase()
		}
		s.y.mu.Unlock()
	}
	s.y.release(ctx, d, t)
	return err
}

func (s *yieldStore) Tables(ctx context.Context) (ts []store.Table, err error) {
	err = s.call(ctx, "Tables", func() (int, error) {
		ts, err = s.next.Tables(ctx)
		return len(ts), err
	})
	return ts, err
}

func (s *yieldStore) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) (rows []store.QueueRow, err error) {
	err = s.call(ctx, "ListQueues", func() (int, error) {
		rows, err = s.next.ListQueues(ctx, t, after, limit)
		return len(rows), err
	})
	return rows, err
}

func (s *yieldStore) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (row store.QueueRow, err error) {
	err = s.call(ctx, "GetQueue", func() (int, error) {
		row, err = s.next.GetQueue(ctx, t, q)
		return 1, err
	})
	return row, err
}

func (s *yieldStore) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) (rows []store.TaskRow, err error) {
	err = s.call(ctx, "ReadTasks", func() (int, error) {
		rows, err = s.next.ReadTasks(ctx, t, q, after, limit)
		return len(rows), err
	})
	return rows, err
}

func (s *yieldStore) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) (rows []store.ScannedTask, err error) {
	err = s.call(ctx, "ScanTasks", func() (int, error) {
		rows, err = s.next.ScanTasks(ctx, t, after, through, limit)
		return len(rows), err
	})
	return rows, err
}

func (s *yieldStore) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) (refs []store.TaskQueueRef, err error) {
	err = s.call(ctx, "ListTaskQueueIDs", func() (int, error) {
		refs, err = s.next.ListTaskQueueIDs(ctx, t, after, limit)
		return len(refs), err
	})
	return refs, err
}

func (s *yieldStore) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (n int64, err error) {
	err = s.call(ctx, "DeleteTaskSets", func() (int, error) {
		n, err = s.next.DeleteTaskSets(ctx, t, sets)
		return int(n), err
	})
	return n, err
}

func (s *yieldStore) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (n int64, err error) {
	err = s.call(ctx, "DeleteTasks", func() (int, error) {
		n, err = s.next.DeleteTasks(ctx, t, q, r, limit)
		return int(n), err
	})
	return n, err
}

func (s *yieldStore) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (n int64, err error) {
	err = s.call(ctx, "DeleteOrphanTasks", func() (int, error) {
		n, err = s.next.DeleteOrphanTasks(ctx, t, q, parents, keys)
		return int(n), err
	})
	return n, err
}

func (s *yieldStore) DeleteQueues(ctx context.Context, t store.Table, fences []store.QueueFence) (n int64, err error) {
	err = s.call(ctx, "DeleteQueues", func() (int, error) {
		n, err = s.next.DeleteQueues(ctx, t, fences)
		return int(n), err
	})
	return n, err
}

func (s *yieldStore) ClusterMetadata(ctx context.Context) (rows []store.ClusterMetadataRow, err error) {
	err = s.call(ctx, "ClusterMetadata", func() (int, error) {
		rows, err = executions(s.next).ClusterMetadata(ctx)
		return len(rows), err
	})
	return rows, err
}

func (s *yieldStore) ShardIDs(ctx context.Context) (ids []int32, err error) {
	err = s.call(ctx, "ShardIDs", func() (int, error) {
		ids, err = executions(s.next).ShardIDs(ctx)
		return len(ids), err
	})
	return ids, err
}

func (s *yieldStore) MaxExecutionShard(ctx context.Context) (top int32, found bool, err error) {
	err = s.call(ctx, "MaxExecutionShard", func() (int, error) {
		top, found, err = executions(s.next).MaxExecutionShard(ctx)
		return 1, err
	})
	return top, found, err
}

func (s *yieldStore) NextWorkflow(ctx context.Context, after *store.ExecutionKey) (k store.ExecutionKey, ok bool, err error) {
	err = s.call(ctx, "NextWorkflow", func() (int, error) {
		k, ok, err = executions(s.next).NextWorkflow(ctx, after)
		if !ok {
			return 0, err
		}
		return 1, err
	})
	return k, ok, err
}

func (s *yieldStore) GetExecutions(ctx context.Context, keys []store.ExecutionKey) (rows []store.ExecutionRow, err error) {
	err = s.call(ctx, "GetExecutions", func() (int, error) {
		rows, err = executions(s.next).GetExecutions(ctx, keys)
		return len(rows), err
	})
	return rows, err
}

func (s *yieldStore) GetCurrentExecutions(ctx context.Context, keys []store.ExecutionKey) (rows []store.CurrentExecutionRow, err error) {
	err = s.call(ctx, "GetCurrentExecutions", func() (int, error) {
		rows, err = executions(s.next).GetCurrentExecutions(ctx, keys)
		return len(rows), err
	})
	return rows, err
}

func (s *yieldStore) Namespaces(ctx context.Context) (rows []store.NamespaceRow, err error) {
	err = s.call(ctx, "Namespaces", func() (int, error) {
		rows, err = executions(s.next).Namespaces(ctx)
		return len(rows), err
	})
	return rows, err
}

func (s *yieldStore) OddHashes(ctx context.Context, t store.Table, limit int) (oh store.OddHashes, err error) {
	err = s.call(ctx, "OddHashes", func() (int, error) {
		oh, err = oddHashes(s.next).OddHashes(ctx, t, limit)
		return len(oh.Rows), err
	})
	return oh, err
}
