package scavenger

import (
	"context"
	"sync"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// limiter is a token bucket that may go into debt: a caller waits until
// the balance is not negative, then is charged what it actually used. So
// a delete of unknown size is charged its real row count afterwards, and
// the average rate holds whatever the batch sizes. Its rate may change
// while callers wait (setRate); a rate of 0 or less is no limit.
type limiter struct {
	now func() time.Time

	mu      sync.Mutex
	rate    float64 // tokens per second
	burst   float64
	balance float64
	last    time.Time
}

func newLimiter(rate float64) *limiter {
	l := &limiter{now: time.Now, last: time.Now()}
	l.setRate(rate)
	return l
}

// setRate changes the rate. A waiting caller sees it at its next check,
// within a tenth of a second (waits are capped to that): a limit lowered
// while the database hurts takes effect at once, one raised or lifted
// does not leave callers asleep on the old one. A debt already run up is
// kept, so that a lower limit cannot be escaped by the last large batch.
func (l *limiter) setRate(rate float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.rate > 0 {
		l.balance = min(l.burst, l.balance+now.Sub(l.last).Seconds()*l.rate)
	} else {
		l.balance = 0
	}
	l.last = now
	l.rate = rate
	// A burst of a tenth of a second keeps the rate smooth within a
	// second, yet lets a single large batch through.
	l.burst = max(1, rate/10)
	if rate <= 0 {
		l.balance = 0
	}
}

// maxWait caps one sleep of a waiting caller, so that a new rate is seen
// soon.
const maxWait = 100 * time.Millisecond

// delay refills the bucket and returns how long a caller must wait for the
// balance to be positive again; 0 means go.
func (l *limiter) delay() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rate <= 0 {
		return 0
	}
	now := l.now()
	l.balance = min(l.burst, l.balance+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
	if l.balance > 0 {
		return 0
	}
	return time.Duration((-l.balance/l.rate)*float64(time.Second)) + time.Millisecond
}

// wait blocks until the balance is positive, ctx ends or stop is closed
// (ErrShutdown).
func (l *limiter) wait(ctx context.Context, stop <-chan struct{}) error {
	if l == nil {
		return nil
	}
	for {
		d := l.delay()
		if d == 0 {
			return nil
		}
		t := time.NewTimer(min(d, maxWait))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-stop:
			t.Stop()
			return ErrShutdown
		case <-t.C:
		}
	}
}

// currentRate returns the rate in effect.
func (l *limiter) currentRate() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rate
}

// charge takes n tokens.
func (l *limiter) charge(n int64) {
	if l == nil || n <= 0 {
		return
	}
	l.mu.Lock()
	if l.rate > 0 {
		l.balance -= float64(n)
	}
	l.mu.Unlock()
}

// tunables are the settings a running pass reads as it goes, so that
// Scavenger.Tune changes them on it: the rate limits, the retry budget and
// the pace.
type tunables struct {
	stmts, rows *limiter

	mu                               sync.Mutex
	retryInitial, retryMax, retryFor time.Duration
	mode                             PaceMode
	// onMode, if set, is told of a new pace (the running pass's
	// controller, to wake statements waiting for a slot).
	onMode func()
}

func newTunables(c Config) *tunables {
	t := &tunables{stmts: newLimiter(c.MaxStatementsPerSecond), rows: newLimiter(c.MaxDeletesPerSecond)}
	t.set(c)
	return t
}

// set applies c's tunable settings (c has its defaults).
func (t *tunables) set(c Config) {
	t.stmts.setRate(c.MaxStatementsPerSecond)
	t.rows.setRate(c.MaxDeletesPerSecond)
	t.mu.Lock()
	t.retryInitial, t.retryMax, t.retryFor = c.RetryInitial, c.RetryMax, c.RetryFor
	changed := t.mode != c.Mode
	t.mode = c.Mode
	onMode := t.onMode
	t.mu.Unlock()
	if changed && onMode != nil {
		onMode()
	}
}

// pace returns the pace in effect.
func (t *tunables) pace() PaceMode {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mode
}

// watchMode makes f be told of each new pace, until the returned func is
// called.
func (t *tunables) watchMode(f func()) (stop func()) {
	t.mu.Lock()
	t.onMode = f
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		t.onMode = nil
		t.mu.Unlock()
	}
}

// retry returns the retry budget in effect.
func (t *tunables) retry() (initial, maxWait, retryFor time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.retryInitial, t.retryMax, t.retryFor
}

// limitedStore applies Config.MaxStatementsPerSecond to every call and
// Config.MaxDeletesPerSecond to the rows every delete removes. It spells out
// every method of store.Store, so a method added to the contract does not
// bypass the limits, and those of the optional interfaces the pass uses
// (optional.go), reads each charged as one statement as Store's are.
type limitedStore struct {
	next        store.Store
	stmts, rows *limiter
	// stop ends the waits: a pass that shuts down does not wait for tokens.
	stop <-chan struct{}
}

var (
	_ store.Store           = (*limitedStore)(nil)
	_ store.ExecutionReader = (*limitedStore)(nil)
	_ store.OddHashFinder   = (*limitedStore)(nil)
)

// limit returns the middleware of the rate limits of t, which may change
// during the pass: it is there even while they are unlimited. Its waits
// end when stop is closed.
func limit(t *tunables, stop <-chan struct{}) store.Middleware {
	return func(next store.Store) store.Store {
		return &limitedStore{next: next, stmts: t.stmts, rows: t.rows, stop: stop}
	}
}

func (s *limitedStore) before(ctx context.Context, deletes bool) error {
	if err := s.stmts.wait(ctx, s.stop); err != nil {
		return err
	}
	s.stmts.charge(1)
	if deletes {
		return s.rows.wait(ctx, s.stop)
	}
	return nil
}

// deleted charges the rows a delete removed.
func (s *limitedStore) deleted(n int64, err error) (int64, error) {
	s.rows.charge(n)
	return n, err
}

func (s *limitedStore) Tables(ctx context.Context) ([]store.Table, error) {
	if err := s.before(ctx, false); err != nil {
		return nil, err
	}
	return s.next.Tables(ctx)
}

func (s *limitedStore) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	if err := s.before(ctx, false); err != nil {
		return nil, err
	}
	return s.next.ListQueues(ctx, t, after, limit)
}

func (s *limitedStore) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	if err := s.before(ctx, false); err != nil {
		return store.QueueRow{}, err
	}
	return s.next.GetQueue(ctx, t, q)
}

func (s *limitedStore) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	if err := s.before(ctx, false); err != nil {
		return nil, err
	}
	return s.next.ReadTasks(ctx, t, q, after, limit)
}

func (s *limitedStore) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	if err := s.before(ctx, false); err != nil {
		return nil, err
	}
	return s.next.ScanTasks(ctx, t, after, through, limit)
}

func (s *limitedStore) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	if err := s.before(ctx, false); err != nil {
		return nil, err
	}
	return s.next.ListTaskQueueIDs(ctx, t, after, limit)
}

func (s *limitedStore) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (int64, error) {
	if err := s.before(ctx, true); err != nil {
		return 0, err
	}
	return s.deleted(s.next.DeleteTaskSets(ctx, t, sets))
}

func (s *limitedStore) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (int64, error) {
	if err := s.before(ctx, true); err != nil {
		return 0, err
	}
	return s.deleted(s.next.DeleteTasks(ctx, t, q, r, limit))
}

func (s *limitedStore) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	if err := s.before(ctx, true); err != nil {
		return 0, err
	}
	return s.deleted(s.next.DeleteOrphanTasks(ctx, t, q, parents, keys))
}

func (s *limitedStore) DeleteQueues(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
	if err := s.before(ctx, true); err != nil {
		return 0, err
	}
	return s.deleted(s.next.DeleteQueues(ctx, t, fences))
}

func (s *limitedStore) ClusterMetadata(ctx context.Context) ([]store.ClusterMetadataRow, error) {
	if err := s.before(ctx, false); err != nil {
		return nil, err
	}
	return executions(s.next).ClusterMetadata(ctx)
}

func (s *limitedStore) ShardIDs(ctx context.Context) ([]int32, error) {
	if err := s.before(ctx, false); err != nil {
		return nil, err
	}
	return executions(s.next).ShardIDs(ctx)
}

func (s *limitedStore) MaxExecutionShard(ctx context.Context) (int32, bool, error) {
	if err := s.before(ctx, false); err != nil {
		return 0, false, err
	}
	return executions(s.next).MaxExecutionShard(ctx)
}

func (s *limitedStore) NextWorkflow(ctx context.Context, after *store.ExecutionKey) (store.ExecutionKey, bool, error) {
	if err := s.before(ctx, false); err != nil {
		return store.ExecutionKey{}, false, err
	}
	return executions(s.next).NextWorkflow(ctx, after)
}

func (s *limitedStore) GetExecutions(ctx context.Context, keys []store.ExecutionKey) ([]store.ExecutionRow, error) {
	if err := s.before(ctx, false); err != nil {
		return nil, err
	}
	return executions(s.next).GetExecutions(ctx, keys)
}

func (s *limitedStore) GetCurrentExecutions(ctx context.Context, keys []store.ExecutionKey) ([]store.CurrentExecutionRow, error) {
	if err := s.before(ctx, false); err != nil {
		return nil, err
	}
	return executions(s.next).GetCurrentExecutions(ctx, keys)
}

func (s *limitedStore) Namespaces(ctx context.Context) ([]store.NamespaceRow, error) {
	if err := s.before(ctx, false); err != nil {
		return nil, err
	}
	return executions(s.next).Namespaces(ctx)
}

func (s *limitedStore) OddHashes(ctx context.Context, t store.Table, limit int) (store.OddHashes, error) {
	if err := s.before(ctx, false); err != nil {
		return store.OddHashes{}, err
	}
	return oddHashes(s.next).OddHashes(ctx, t, limit)
}
