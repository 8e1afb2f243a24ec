package scavenger

import (
	"context"
	"log/slog"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// The controller of PaceGentle (Config.Mode): the pass watches its own
// statements' latency and backs off when the database gets slower, so
// that a cluster under load keeps its latency while the pass takes longer.
// Under PaceFull it passes every call straight on (it still counts the
// statements running, so that a pace changed mid-pass by Scavenger.Tune
// starts from the truth).
//
// # Baseline
//
// Latency is kept per kind of statement: the store method and the size
// of its result (rows read or deleted, in powers of two), since a delete
// of 1,000 rows is not slow for taking longer than one of 16. A kind's
// baseline is the median of its first yieldSamples statements, taken while
// the pass runs at its slowest (one statement at a time: see below), and
// is refreshed by every later window of yieldSamples statements that is
// quiet (median at most YieldFactor × baseline): it moves at once to a
// lower median, and an eighth of the way to a higher one, so that it
// follows a database that gets quieter at once and one whose work grows
// (a table warming up) slowly, but never up to a load that only creeps.
//
// # Backing off (AIMD)
//
// The pass runs at most `allowed` statements at once (between 1 and
// Config.Workers) and, after each, pauses for its latency × (1/share − 1)
// before the next takes the slot: share is the fraction of time a slot
// spends in the database (1/16 to 1: a pass under load for good runs at
// least a sixteenth of its pace). A window whose median exceeds
// YieldFactor × its kind's baseline halves both (multiplicative
// decrease); a quiet window raises share by 1/8 and, once share is 1,
// allowed by one (additive increase). The pass starts at one statement at
// a time and share 1 (a slow start) so that the baseline is taken with
// the pass's own load at its least.
//
// It only ever adds waits, inside the rate limits (it is the middleware
// under them): it slows a pass below the limits, never above them. Batch
// sizes are left to the batcher, which halves them on statements slower
// than Config.SlowStatement.
const (
	yieldSamples  = 8
	yieldMinShare = 1.0 / 16
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
	stop    <-chan struct{}

	mu   sync.Mutex
	slot sync.Cond // a slot freed, allowed grew, or stop
	// full is the pace PaceFull: no cap, no pause, no adjustment.
	full    bool
	running int
	allowed int
	share   float64
	kinds   map[yieldKind]*yieldWindow
	// onWait, if set (a test's), is called, under mu, when a statement
	// starts waiting for a slot.
	onWait func()

	// Counters, for logs and tests.
	decreases, increases int
	minAllowed           int
	minShare             float64
	lastLog              time.Time
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
}

func newYielder(cfg Config, stop <-chan struct{}) *yielder {
	y := &yielder{
		factor: cfg.YieldFactor, workers: max(1, cfg.Workers), log: cfg.Logger, now: time.Now, stop: stop,
		allowed: 1, share: 1, kinds: map[yieldKind]*yieldWindow{}, minAllowed: 1, minShare: 1,
		full: cfg.Mode == PaceFull,
	}
	y.slot.L = &y.mu
	return y
}

// setFull sets the pace, and wakes the statements waiting for a slot so
// that they see it.
func (y *yielder) setFull(full bool) {
	y.mu.Lock()
	y.full = full
	y.slot.Broadcast()
	y.mu.Unlock()
}

// yieldMiddleware returns the middleware of the pace's controller, told of
// each new pace tune takes. seen, if not nil, receives the pass's yielder
// (a test's hook, Scavenger.onYielder, to read its counters).
func yieldMiddleware(cfg Config, tune *tunables, stop <-chan struct{}, seen func(*yielder)) store.Middleware {
	y := newYielder(cfg, stop)
	// The pass's own yielder replaces the last pass's: one pass runs at
	// a time.
	tune.watchMode(func() { y.setFull(tune.pace() == PaceFull) })
	y.setFull(tune.pace() == PaceFull)
	if seen != nil {
		seen(y)
	}
	return func(next store.Store) store.Store { return &yieldStore{next: next, y: y} }
}

// acquire waits for a slot: fewer than allowed statements running.
func (y *yielder) acquire(ctx context.Context) error {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.full || y.running < y.allowed {
		y.running++
		return nil
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
	for !y.full && y.running >= y.allowed {
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case <-y.stop:
			return ErrShutdown
		default:
		}
		y.slot.Wait()
	}
	y.running++
	return nil
}

// release frees the slot after the pause the share asks for.
func (y *yielder) release(ctx context.Context, d time.Duration) {
	y.mu.Lock()
	share := y.share
	if y.full {
		share = 1
	}
	y.mu.Unlock()
	if share < 1 {
		pause := time.Duration(float64(d) * (1/share - 1))
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
	y.slot.Signal()
	y.mu.Unlock()
}

// observe records a statement of method that returned rows in d, and
// adjusts the pace at the end of a window.
func (y *yielder) observe(method string, rows int, d time.Duration) {
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
	w.window = append(w.window, d)
	if len(w.window) < yieldSamples {
		return
	}
	slices.Sort(w.window)
	m := w.window[len(w.window)/2]
	w.window = w.window[:0]
	switch {
	case w.baseline == 0:
		w.baseline = m
	case float64(m) > y.factor*float64(w.baseline):
		y.decrease(k, m, w.baseline)
	default:
		if m < w.baseline {
			w.baseline = m
		} else {
			w.baseline += (m - w.baseline) / 8
		}
		y.increase()
	}
}

func (y *yielder) decrease(k yieldKind, m, base time.Duration) {
	y.decreases++
	y.allowed = max(1, y.allowed/2)
	y.share = max(yieldMinShare, y.share/2)
	y.minAllowed = min(y.minAllowed, y.allowed)
	y.minShare = min(y.minShare, y.share)
	if now := y.now(); now.Sub(y.lastLog) >= yieldLogEvery {
		y.lastLog = now
		y.log.Info("yielding to load: statements slower than their baseline",
			"statement", k.method, "median", m, "baseline", base, "factor", y.factor,
			"concurrency", y.allowed, "share", y.share)
	}
}

func (y *yielder) increase() {
	y.increases++
	if y.share < 1 {
		y.share = min(1, y.share+1.0/8)
		return
	}
	if y.allowed < y.workers {
		y.allowed++
		y.slot.Signal()
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
// bypass it.
type yieldStore struct {
	next store.Store
	y    *yielder
}

var _ store.Store = (*yieldStore)(nil)

// call runs f in a slot and observes it as method; f returns the rows it
// read or deleted.
func (s *yieldStore) call(ctx context.Context, method string, f func() (int, error)) error {
	if err := s.y.acquire(ctx); err != nil {
		return err
	}
	start := s.y.now()
	n, err := f()
	d := s.y.now().Sub(start)
	if err == nil {
		// A failed statement says nothing of the database's pace that
		// the retry's backoff does not already act on.
		s.y.observe(method, n, d)
	}
	s.y.release(ctx, d)
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
