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
// the average rate holds whatever the batch sizes.
type limiter struct {
	rate  float64 // tokens per second
	burst float64

	now func() time.Time

	mu      sync.Mutex
	balance float64
	last    time.Time
}

func newLimiter(rate float64) *limiter {
	if rate <= 0 {
		return nil
	}
	// A burst of a tenth of a second keeps the rate smooth within a
	// second, yet lets a single large batch through.
	return &limiter{rate: rate, burst: max(1, rate/10), now: time.Now, last: time.Now()}
}

// delay refills the bucket and returns how long a caller must wait for the
// balance to be positive again; 0 means go.
func (l *limiter) delay() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.balance = min(l.burst, l.balance+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
	if l.balance > 0 {
		return 0
	}
	return time.Duration((-l.balance/l.rate)*float64(time.Second)) + time.Millisecond
}

// wait blocks until the balance is positive, or ctx ends.
func (l *limiter) wait(ctx context.Context) error {
	if l == nil {
		return nil
	}
	for {
		d := l.delay()
		if d == 0 {
			return nil
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// charge takes n tokens.
func (l *limiter) charge(n int64) {
	if l == nil || n <= 0 {
		return
	}
	l.mu.Lock()
	l.balance -= float64(n)
	l.mu.Unlock()
}

// limitedStore applies Config.MaxStatementsPerSecond to every call and
// Config.MaxDeletesPerSecond to the rows every delete removes.
type limitedStore struct {
	store.Store
	stmts, rows *limiter
}

func (s *limitedStore) before(ctx context.Context, deletes bool) error {
	if err := s.stmts.wait(ctx); err != nil {
		return err
	}
	s.stmts.charge(1)
	if deletes {
		return s.rows.wait(ctx)
	}
	return nil
}

func (s *limitedStore) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	if err := s.before(ctx, false); err != nil {
		return nil, err
	}
	return s.Store.ListQueues(ctx, t, after, limit)
}

func (s *limitedStore) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	if err := s.before(ctx, false); err != nil {
		return nil, err
	}
	return s.Store.ReadTasks(ctx, t, q, after, limit)
}

func (s *limitedStore) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	if err := s.before(ctx, false); err != nil {
		return nil, err
	}
	return s.Store.ScanTasks(ctx, t, after, through, limit)
}

func (s *limitedStore) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	if err := s.before(ctx, false); err != nil {
		return store.QueueRow{}, err
	}
	return s.Store.GetQueue(ctx, t, q)
}

func (s *limitedStore) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	if err := s.before(ctx, false); err != nil {
		return nil, err
	}
	return s.Store.ListTaskQueueIDs(ctx, t, after, limit)
}

// deleted charges the rows a delete removed.
func (s *limitedStore) deleted(n int64, err error) (int64, error) {
	s.rows.charge(n)
	return n, err
}

func (s *limitedStore) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (int64, error) {
	if err := s.before(ctx, true); err != nil {
		return 0, err
	}
	return s.deleted(s.Store.DeleteTasks(ctx, t, q, r, limit))
}

func (s *limitedStore) DeleteTaskKeys(ctx context.Context, t store.Table, q store.QueueKey, keys []store.TaskKey) (int64, error) {
	if err := s.before(ctx, true); err != nil {
		return 0, err
	}
	return s.deleted(s.Store.DeleteTaskKeys(ctx, t, q, keys))
}

func (s *limitedStore) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (int64, error) {
	if err := s.before(ctx, true); err != nil {
		return 0, err
	}
	return s.deleted(s.Store.DeleteTaskSets(ctx, t, sets))
}

func (s *limitedStore) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	if err := s.before(ctx, true); err != nil {
		return 0, err
	}
	return s.deleted(s.Store.DeleteOrphanTasks(ctx, t, q, parents, keys))
}

func (s *limitedStore) DeleteQueue(ctx context.Context, t store.Table, q store.QueueKey, rangeID int64) error {
	if err := s.before(ctx, true); err != nil {
		return err
	}
	err := s.Store.DeleteQueue(ctx, t, q, rangeID)
	if err == nil {
		s.rows.charge(1)
	}
	return err
}

func (s *limitedStore) DeleteQueues(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
	if err := s.before(ctx, true); err != nil {
		return 0, err
	}
	return s.deleted(s.Store.DeleteQueues(ctx, t, fences))
}
