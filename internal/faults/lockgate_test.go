package faults

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
)

// order records, in one sequence, the deletes that reach the store and
// the moment the pass detects that its lock is lost (its "lock lost" log
// line), so that a test can tell what came after what without a clock.
type order struct {
	mu       sync.Mutex
	seq      int
	deletes  []int           // sequence numbers of the deletes that reached the store with a live context
	dead     int             // deletes that reached it with their context ended (the driver sends none)
	detected int             // sequence number of the detection; 0: not yet
	late     chan struct{}   // closed at the first delete after the detection
	lateOnce sync.Once       //
	started  chan struct{}   // closed at the first delete
	stOnce   sync.Once       //
	pass     context.Context // a context of the pass's calls: it ends with the pass's
}

func newOrder() *order {
	return &order{late: make(chan struct{}), started: make(chan struct{})}
}

// deleted records a delete that reached the store. One whose context had
// ended is not sent to the server (database/sql and the drivers refuse
// it): it is counted apart. One with a live context is sent.
func (o *order) deleted(ctx context.Context) {
	o.mu.Lock()
	o.seq++
	if ctx.Err() != nil {
		o.dead++
		o.mu.Unlock()
		return
	}
	o.deletes = append(o.deletes, o.seq)
	after := o.detected != 0
	if o.pass == nil {
		o.pass = ctx
	}
	o.mu.Unlock()
	o.stOnce.Do(func() { close(o.started) })
	if after {
		o.lateOnce.Do(func() { close(o.late) })
	}
}

// detect records the detection, then holds the log call (a log write that
// blocks: a full pipe on stderr) until a delete reaches the store after
// it, or the pass's context has ended. A pass that stops itself before it
// logs has ended its context already; one that logs first keeps sending
// deletes while the write blocks.
func (o *order) detect() {
	o.mu.Lock()
	o.seq++
	o.detected = o.seq
	pass := o.pass
	o.mu.Unlock()
	if pass == nil {
		return // no delete yet: none can come after
	}
	select {
	case <-o.late:
	case <-pass.Done():
	case <-time.After(time.Minute): // a guard against a hung test, not a bound under test
	}
}

// after returns how many deletes reached the store with a live context
// after the detection, how many with an ended one (before or after it),
// and the detection's sequence number.
func (o *order) after() (late, dead, detected int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	dead = o.dead
	for _, s := range o.deletes {
		if o.detected != 0 && s > o.detected {
			late++
		}
	}
	return late, dead, o.detected
}

// orderStore is the store the pass is given: beneath every wrapper of the
// pass, it sees what the database is sent.
type orderStore struct {
	store.Store
	o *order
}

func (s *orderStore) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (int64, error) {
	s.o.deleted(ctx)
	return s.Store.DeleteTaskSets(ctx, t, sets)
}

func (s *orderStore) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (int64, error) {
	s.o.deleted(ctx)
	return s.Store.DeleteTasks(ctx, t, q, r, limit)
}

func (s *orderStore) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	s.o.deleted(ctx)
	return s.Store.DeleteOrphanTasks(ctx, t, q, parents, keys)
}

func (s *orderStore) DeleteQueues(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
	s.o.deleted(ctx)
	return s.Store.DeleteQueues(ctx, t, fences)
}

// detectHandler is the pass's logger: it passes the "lock lost" line to
// order.detect.
type detectHandler struct {
	slog.Handler
	o *order
}

func (h detectHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "lock lost") {
		h.o.detect()
	}
	return h.Handler.Handle(ctx, r)
}

// TestNoDeleteAfterLockLoss kills the lock's session (pg_terminate_backend,
// KILL) while a pass deletes, and records in one sequence every delete
// that reaches the store (beneath all of the pass's wrappers) and the
// moment the pass detects the loss (its "lock lost" log line, whose write
// is held as a blocked stderr would hold it).
//
// Invariant: no delete is sent after the loss is detected (one reaching
// the store with a live context is sent; the deletes in flight then are
// cancelled, and none starts), and the pass fails with ErrLockLost. Issue 39 finding 9: the pass logged before it stopped,
// so while the log write was held its workers went on deleting.
func TestNoDeleteAfterLockLoss(t *testing.T) {
	for _, e := range servers {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			before := seedWorkload(t, db, workload{dead: 300, live: 20, tasksPerQueue: 10})
			lock, err := db.Lock(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Unlock()
			o := newOrder()
			cfg := scavenger.Config{
				Pace: scavenger.Pace{ListPageSize: 10, Workers: 4, MaxStatementsPerSecond: 50, LockCheckInterval: 50 * time.Millisecond},
				Hooks: scavenger.Hooks{Lock: lock,
					Logger: slog.New(detectHandler{Handler: slog.NewTextHandler(io.Discard, nil), o: o})},
			}
			type result struct {
				st  scavenger.Stats
				err error
			}
			done := make(chan result, 1)
			go func() {
				st, err := scavenger.New(&orderStore{Store: db, o: o}, cfg).Run(ctx)
				done <- result{st, err}
			}()
			<-o.started
			killSession(t, db, lockSession(t, db))
			r := <-done
			if !errors.Is(r.err, store.ErrLockLost) || r.st.Outcome != scavenger.Failed {
				t.Errorf("the pass: %s, %v; want failed with ErrLockLost", r.st.Outcome, r.err)
			}
			late, dead, detected := o.after()
			if detected == 0 {
				t.Fatal("the pass never logged that its lock was lost")
			}
			if late > 0 {
				t.Errorf("%d deletes were sent after the pass detected that its lock was lost", late)
			}
			// The stop gate refuses a delete of a stopped pass above the
			// store; one it admitted an instant before the stop reaches
			// the store with its context ended, and is not sent.
			t.Logf("%d deletes sent after the detection, %d reached the store with their context ended; %d tasks deleted", late, dead, r.st.TasksDeleted)
			checkSafe(t, before, snapshot(t, db))
		})
	}
}
