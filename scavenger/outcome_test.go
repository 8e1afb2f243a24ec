package scavenger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// timeoutErr is what a store returns for a statement that ran out of its
// statement timeout.
func timeoutErr(op string) error {
	return fmt.Errorf("%s: %w", op, errors.Join(store.ErrTransient, store.ErrStatementTimeout, context.DeadlineExceeded))
}

// TestOutcomes: a pass is a success only when every job was done; a job
// fails after its retries, at once on an error retrying cannot help, and
// when its statements keep timing out; the failures are counted by cause.
func TestOutcomes(t *testing.T) {
	for _, c := range []struct {
		name string
		// fail returns the error injected into a call, or nil.
		fail      func(c call, n int64) error
		mode      scavenger.Compat
		outcome   scavenger.Outcome
		cause     scavenger.Cause // of the failed jobs, if any
		wantErr   error           // Run's error wraps it
		maxCalls  int64           // the pass gives up within this many faulty calls (0: no bound)
		noDeletes bool
	}{
		{name: "no faults", outcome: scavenger.Completed},
		{
			name:    "transient faults outlast the retry budget",
			fail:    func(c call, _ int64) error { return transientIf(c.op == "deletesets" || c.op == "delete") },
			outcome: scavenger.Failed, cause: scavenger.CauseRetriesExhausted, wantErr: scavenger.ErrJobsFailed,
		},
		{
			name:    "a read-only database fails each job at once",
			fail:    func(c call, _ int64) error { return readOnlyIf(c.op == "deletesets" || c.op == "delete") },
			outcome: scavenger.Failed, cause: scavenger.CauseReadOnly, wantErr: store.ErrReadOnly, noDeletes: true,
		},
		{
			name:    "a read-only database, Temporal's mode",
			mode:    scavenger.CompatTemporal,
			fail:    func(c call, _ int64) error { return readOnlyIf(c.op == "deletesets" || c.op == "delete") },
			outcome: scavenger.Failed, cause: scavenger.CauseReadOnly, wantErr: store.ErrReadOnly, noDeletes: true,
		},
		{
			name: "a scan that times out at the smallest batch fails",
			fail: func(c call, _ int64) error {
				if c.op == "scan" {
					return timeoutErr("scan")
				}
				return nil
			},
			// 1000 → 500 → … → 16: seven timeouts, then the floor's.
			outcome: scavenger.Failed, cause: scavenger.CauseStatementTimeout, wantErr: store.ErrStatementTimeout, maxCalls: 8,
		},
		{
			name: "a queue delete that keeps timing out fails",
			fail: func(c call, _ int64) error {
				if c.op == "deletequeues" {
					return timeoutErr("delete queues")
				}
				return nil
			},
			outcome: scavenger.Failed, cause: scavenger.CauseStatementTimeout, wantErr: scavenger.ErrGaveUp, maxCalls: 3,
		},
		{
			name: "a listing that keeps failing fails the pass",
			fail: func(c call, _ int64) error { return transientIf(c.op == "list") },
			// Not a job: the pass itself could not go on.
			outcome: scavenger.Failed, wantErr: scavenger.ErrGaveUp, noDeletes: true,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := testdb.Open(t, sqlstore.SQLite)
			mustSeed(t, db, seed.Spec{Queues: 20, TasksPerQueue: 10, Expired: 1, IdleAge: 72 * time.Hour})
			var calls atomic.Int64
			cfg := baseConfig()
			cfg.Compat = c.mode
			cfg.RetryFor = 50 * time.Millisecond
			if c.fail != nil {
				cfg.Middleware = []store.Middleware{hooked(func(_ context.Context, k call) error {
					err := c.fail(k, calls.Load())
					if err != nil {
						calls.Add(1)
					}
					return err
				})}
			}
			st, err := scavenger.New(db, cfg).Run(context.Background())
			if st.Outcome != c.outcome {
				t.Errorf("outcome %s, want %s (err %v)", st.Outcome, c.outcome, err)
			}
			if c.outcome.Success() != (err == nil) {
				t.Errorf("Run error %v for outcome %s", err, st.Outcome)
			}
			if c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Errorf("Run error %v does not wrap %v", err, c.wantErr)
			}
			if c.cause != "" {
				if st.Errors == 0 || st.FailuresByCause[c.cause] != st.Errors {
					t.Errorf("%d failed jobs, by cause %v: want all %s", st.Errors, st.FailuresByCause, c.cause)
				}
				if len(st.Failures) == 0 || st.Failures[0].Cause != c.cause {
					t.Errorf("first failures %v: want them named, cause %s", st.Failures, c.cause)
				}
			}
			if c.maxCalls > 0 && calls.Load() > c.maxCalls*st.Errors {
				t.Errorf("%d faulty calls for %d failed jobs: want at most %d each", calls.Load(), st.Errors, c.maxCalls)
			}
			if c.noDeletes && st.TasksDeleted != 0 {
				t.Errorf("%d tasks counted as deleted", st.TasksDeleted)
			}
		})
	}
}

func transientIf(b bool) error {
	if b {
		return fmt.Errorf("injected: %w", store.ErrTransient)
	}
	return nil
}

func readOnlyIf(b bool) error {
	if b {
		return fmt.Errorf("injected: %w", store.ErrReadOnly)
	}
	return nil
}

// TestBadRowsOutcome: bad rows alone are a success, told apart.
func TestBadRowsOutcome(t *testing.T) {
	db := testdb.Open(t, sqlstore.SQLite)
	mustSeed(t, db, seed.Spec{Queues: 2, TasksPerQueue: 5, Expired: 1, IdleAge: 72 * time.Hour})
	q := queueKey("seed-1", 0)
	row, err := db.GetQueue(context.Background(), store.V1, q)
	if err != nil {
		t.Fatal(err)
	}
	bad := row
	bad.Data = []byte{0xff}
	if err := db.UpdateQueue(context.Background(), store.V1, bad, row.RangeID); err != nil {
		t.Fatal(err)
	}
	st, err := scavenger.New(db, baseConfig()).Run(context.Background())
	if err != nil || st.Outcome != scavenger.CompletedBadRows || !st.Outcome.Success() {
		t.Fatalf("outcome %s, err %v: want %s, a success", st.Outcome, err, scavenger.CompletedBadRows)
	}
}

// TestUnknownOutcomeCounted: a delete whose connection died after it ran
// is retried, finds its rows gone and deletes nothing; its rows are counted
// as unknown, so deleted + unknown is not less than what went.
func TestUnknownOutcomeCounted(t *testing.T) {
	for _, mode := range modes {
		t.Run("compat="+string(mode), func(t *testing.T) {
			db := testdb.Open(t, sqlstore.SQLite)
			mustSeed(t, db, seed.Spec{Queues: 4, TasksPerQueue: 10, Expired: 1, IdleAge: 72 * time.Hour})
			var once atomic.Bool
			cfg := baseConfig()
			cfg.Compat = mode
			// The first task delete runs, then reports a lost connection.
			cfg.Middleware = []store.Middleware{func(next store.Store) store.Store {
				return &hookStore{next: next, before: func(ctx context.Context, c call) error { return nil }, after: func(ctx context.Context, c call, err error) error {
					if err == nil && (c.op == "deletesets" || c.op == "delete") && once.CompareAndSwap(false, true) {
						return fmt.Errorf("connection lost: %w", errors.Join(store.ErrTransient, store.ErrUnknownOutcome))
					}
					return err
				}}
			}}
			st, err := scavenger.New(db, cfg).Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			const went = 40
			if st.TasksDeleted >= went {
				t.Fatalf("%d tasks counted as deleted: the fault did not hide any", st.TasksDeleted)
			}
			if st.TasksDeleted+st.TasksUnknown < went {
				t.Errorf("deleted %d + unknown %d < %d that went", st.TasksDeleted, st.TasksUnknown, went)
			}
		})
	}
}

// TestShortGraceRefused: a grace under MinGrace needs UnsafeShortGrace.
func TestShortGraceRefused(t *testing.T) {
	for _, c := range []struct {
		grace  time.Duration
		unsafe bool
		ok     bool
	}{
		{0, false, true},
		{scavenger.MinGrace, false, true},
		{scavenger.MinGrace - time.Second, false, false},
		{10 * time.Second, false, false},
		{10 * time.Second, true, true},
		{time.Nanosecond, true, true},
	} {
		err := scavenger.Config{Rules: scavenger.Rules{Grace: c.grace, UnsafeShortGrace: c.unsafe}}.Validate()
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, scavenger.ErrShortGrace)) {
			t.Errorf("grace %s unsafe %v: %v", c.grace, c.unsafe, err)
		}
	}
}

// losingLock is a lock that is held until lose is closed; checked is
// closed at its second check.
type losingLock struct {
	lose, checked chan struct{}
	checks        atomic.Int64
}

func (l *losingLock) Check(ctx context.Context) error {
	if l.checks.Add(1) == 2 {
		close(l.checked)
	}
	select {
	case <-l.lose:
		return fmt.Errorf("session ended: %w", store.ErrLockLost)
	default:
		return nil
	}
}

func (l *losingLock) Unlock() error { return nil }

// TestLockLostStopsThePass: a pass whose lock is lost stops at once, its
// statement in flight cancelled, and fails.
func TestLockLostStopsThePass(t *testing.T) {
	db := testdb.Open(t, sqlstore.SQLite)
	mustSeed(t, db, seed.Spec{Queues: 20, TasksPerQueue: 10, Expired: 1, IdleAge: 72 * time.Hour})
	started := make(chan struct{})
	lock := &losingLock{lose: make(chan struct{}), checked: make(chan struct{})}
	cfg := baseConfig()
	cfg.Lock, cfg.LockCheckInterval = lock, 5*time.Millisecond
	cfg.Middleware = []store.Middleware{blockReads(started)} // a read that never ends on its own
	done := make(chan struct{})
	var (
		st  scavenger.Stats
		err error
	)
	go func() { defer close(done); st, err = scavenger.New(db, cfg).Run(context.Background()) }()
	recv(t, started, "the pass reading tasks")
	recv(t, lock.checked, "the lock checked while the pass runs")
	close(lock.lose)
	recv(t, done, "the pass to stop after its lock was lost")
	if !errors.Is(err, store.ErrLockLost) || st.Outcome != scavenger.Failed {
		t.Errorf("Run: outcome %s, err %v: want failed, ErrLockLost", st.Outcome, err)
	}
	if st.TasksDeleted != 0 {
		t.Errorf("%d tasks deleted after the lock was lost", st.TasksDeleted)
	}
}

// TestCancelWithCauseInterrupted: a pass whose caller cancels it is
// interrupted, logged at info, whatever the cause the caller gives (the
// Temporal SDK cancels an activity with a cause of its own: a
// CanceledError, "worker is now shutdown"); a lost lock stays failed
// (TestLockLostStopsThePass).
func TestCancelWithCauseInterrupted(t *testing.T) {
	for name, cause := range map[string]error{
		"context.Canceled":      context.Canceled,
		"a cause of the caller": errors.New("worker is now shutdown"),
		"a wrapped cancel":      fmt.Errorf("canceled: %w", errors.New("workflow cancelled")),
	} {
		t.Run(name, func(t *testing.T) {
			db := testdb.Open(t, sqlstore.SQLite)
			mustSeed(t, db, seed.Spec{Queues: 20, TasksPerQueue: 10, Expired: 1, IdleAge: 72 * time.Hour})
			started := make(chan struct{})
			var logs bytes.Buffer
			cfg := baseConfig()
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			cfg.Middleware = []store.Middleware{blockReads(started)}
			ctx, cancel := context.WithCancelCause(context.Background())
			done := make(chan struct{})
			var (
				st  scavenger.Stats
				err error
			)
			go func() { defer close(done); st, err = scavenger.New(db, cfg).Run(ctx) }()
			recv(t, started, "the pass reading tasks")
			cancel(cause)
			recv(t, done, "the pass to stop")
			if st.Outcome != scavenger.Interrupted || !errors.Is(err, cause) {
				t.Errorf("outcome %s, err %v: want interrupted with the cause", st.Outcome, err)
			}
			if strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "level=INFO msg=\"scavenger pass interrupted\"") {
				t.Errorf("logs:\n%s\nwant the pass interrupted at info, no error", logs.String())
			}
		})
	}
}
