package scavenger

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/pace"
	"github.com/tqscavenger/tqscavenger/store"
)

// tunables are the settings a running pass reads as it goes, so that
// Scavenger.Tune changes them on it: the rate limits, the retry budget and
// the pace.
type tunables struct {
	stmts, rows *pace.Limiter

	mu                               sync.Mutex
	retryInitial, retryMax, retryFor time.Duration
	mode                             PaceMode
	// onMode, if set, is told of a new pace (the running pass's
	// controller, to wake statements waiting for a slot).
	onMode func()
}

func newTunables(c Config) *tunables {
	t := &tunables{stmts: pace.NewLimiter(c.MaxStatementsPerSecond), rows: pace.NewLimiter(c.MaxDeletesPerSecond)}
	t.set(c)
	return t
}

// set applies c's tunable settings (c has its defaults).
func (t *tunables) set(c Config) {
	t.stmts.SetRate(c.MaxStatementsPerSecond)
	t.rows.SetRate(c.MaxDeletesPerSecond)
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
	stmts, rows *pace.Limiter
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
	if err := s.stmts.Wait(ctx, s.stop); err != nil {
		return shutdownErr(err)
	}
	s.stmts.Charge(1)
	if deletes {
		return shutdownErr(s.rows.Wait(ctx, s.stop))
	}
	return nil
}

// shutdownErr is err with the pace's stop (pace.ErrStopped: the pass's
// closing channel closed) named as the pass names it, ErrShutdown.
func shutdownErr(err error) error {
	if errors.Is(err, pace.ErrStopped) {
		return ErrShutdown
	}
	return err
}

// deleted charges the rows a delete removed.
func (s *limitedStore) deleted(n int64, err error) (int64, error) {
	s.rows.Charge(n)
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
