package scavenger_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func baseConfig() scavenger.Config {
	return scavenger.Config{Pace: scavenger.Pace{RetryInitial: time.Millisecond, RetryMax: 5 * time.Millisecond}, Hooks: scavenger.Hooks{Now: func() time.Time { return now }, Logger: quiet()}}
}

// forEachEngine runs f on a fresh store of every engine.
func forEachEngine(t *testing.T, f func(t *testing.T, db *sqlstore.DB)) {
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) { f(t, testdb.Open(t, e)) })
	}
}

func queueKey(name string, k int) store.QueueKey {
	id := wire.QueueID(seed.DefaultNamespace, name, wire.TaskTypeActivity, k)
	return store.QueueKey{RangeHash: wire.RangeHash(id), ID: id}
}

// taskKinds reads every task of a subqueue and classifies it.
func taskKinds(t *testing.T, st store.Store, tb store.Table, q store.QueueKey) (expired, live int) {
	t.Helper()
	tasks, err := st.ReadTasks(context.Background(), tb, q, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tt, err := wire.DecodeTaskTimes(task.Encoding, task.Data)
		if err != nil {
			t.Fatal(err)
		}
		if wire.Expired(tt.ExpiryTime, now) {
			expired++
		} else {
			live++
		}
	}
	return expired, live
}

func queueExists(t *testing.T, st store.Store, tb store.Table, q store.QueueKey) bool {
	t.Helper()
	_, err := st.GetQueue(context.Background(), tb, q)
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

func mustSeed(t *testing.T, w store.Writer, spec seed.Spec) {
	t.Helper()
	spec.Now = now
	if _, err := seed.Write(context.Background(), w, spec); err != nil {
		t.Fatal(err)
	}
}

// TestScenarios covers Temporal's scavenger scenarios, in Temporal's mode
// and in the default mode.
func TestScenarios(t *testing.T) {
	cases := []struct {
		name      string
		spec      seed.Spec
		compat    scavenger.Compat
		wantExp   int  // expired tasks left in the queue
		wantLive  int  // live tasks left
		wantQueue bool // queue row still there
	}{
		{"all expired", seed.Spec{TasksPerQueue: 100, Expired: 1, IdleAge: 72 * time.Hour}, scavenger.CompatTemporal, 0, 0, false},
		{"all alive", seed.Spec{TasksPerQueue: 100, NoExpiry: 0.5, IdleAge: 72 * time.Hour}, scavenger.CompatTemporal, 0, 100, true},
		{"expired then alive", seed.Spec{TasksPerQueue: 100, Expired: 0.64, IdleAge: 72 * time.Hour}, scavenger.CompatTemporal, 0, 36, true},
		// Temporal keeps every expired task that shares a batch of 16 with a live one.
		{"expired then alive, partial batch", seed.Spec{TasksPerQueue: 100, Expired: 0.5, IdleAge: 72 * time.Hour}, scavenger.CompatTemporal, 2, 50, true},
		{"alive then expired", seed.Spec{TasksPerQueue: 100, Expired: 0.5, NoExpiry: 0.5, Layout: seed.LiveFirst, IdleAge: 72 * time.Hour}, scavenger.CompatTemporal, 50, 50, true},
		{"all expired, recently updated", seed.Spec{TasksPerQueue: 40, Expired: 1, IdleAge: time.Hour}, scavenger.CompatTemporal, 0, 0, true},
		{"empty, idle", seed.Spec{IdleAge: 49 * time.Hour}, scavenger.CompatTemporal, 0, 0, false},
		{"empty, idle just under the grace", seed.Spec{IdleAge: 47 * time.Hour}, scavenger.CompatTemporal, 0, 0, true},
		{"long expired backlog (defers)", seed.Spec{TasksPerQueue: 1000, Expired: 1, IdleAge: 72 * time.Hour}, scavenger.CompatTemporal, 0, 0, false},
	}
	forEachEngine(t, func(t *testing.T, db *sqlstore.DB) {
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				spec := c.spec
				spec.Queues = 1
				spec.NamePrefix = fmt.Sprintf("case%d", i)
				mustSeed(t, db, spec)
				// A neighbour queue the pass must not touch beyond its own rules.
				cfg := baseConfig()
				cfg.Compat = c.compat
				cfg.Tables = []store.Table{store.V1}
				st, err := scavenger.New(db, cfg).Run(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				q := queueKey(spec.NamePrefix+"-0", 0)
				exp, live := taskKinds(t, db, store.V1, q)
				if exp != c.wantExp || live != c.wantLive {
					t.Errorf("left %d expired, %d live tasks; want %d, %d (stats %+v)", exp, live, c.wantExp, c.wantLive, st)
				}
				if got := queueExists(t, db, store.V1, q); got != c.wantQueue {
					t.Errorf("queue exists = %v, want %v", got, c.wantQueue)
				}
				if st.Errors != 0 || st.BadRowCount != 0 {
					t.Errorf("errors %d, bad rows %d", st.Errors, st.BadRowCount)
				}
			})
		}
	})
}

// faults fails the first failFirst calls of each operation with a
// transient error, and runs beforeDelete for every fenced queue delete.
type faults struct {
	failFirst    int
	calls        sync.Map // op -> *atomic.Int64
	beforeDelete func(q store.QueueKey)
	injected     atomic.Int64
}

func (f *faults) middleware() store.Middleware {
	return hooked(func(_ context.Context, c call) error {
		if c.op == "deletequeues" && f.beforeDelete != nil {
			for _, q := range c.fences {
				f.beforeDelete(q.QueueKey)
			}
		}
		switch c.op {
		case "list", "read", "delete", "scan", "deletesets", "deletequeues":
		default:
			return nil
		}
		v, _ := f.calls.LoadOrStore(c.op, new(atomic.Int64))
		if v.(*atomic.Int64).Add(1) <= int64(f.failFirst) {
			f.injected.Add(1)
			return fmt.Errorf("injected fault in %s: %w", c.op, store.ErrTransient)
		}
		return nil
	})
}

var modes = []scavenger.Compat{scavenger.CompatTemporal, scavenger.CompatNone}

func TestTransientErrorsAreRetried(t *testing.T) {
	forEachEngine(t, func(t *testing.T, db *sqlstore.DB) {
		for _, mode := range modes {
			t.Run("compat="+string(mode), func(t *testing.T) {
				defer cleanup(t, db)
				mustSeed(t, db, seed.Spec{Queues: 5, TasksPerQueue: 40, Expired: 1, IdleAge: 72 * time.Hour})
				fs := &faults{failFirst: 3}
				cfg := baseConfig()
				cfg.Compat = mode
				cfg.Middleware = []store.Middleware{fs.middleware()}
				st, err := scavenger.New(db, cfg).Run(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if fs.injected.Load() == 0 || st.Retries != fs.injected.Load() {
					t.Errorf("retries %d, injected %d", st.Retries, fs.injected.Load())
				}
				if st.TasksDeleted != 200 || st.QueuesDeleted != 5 || st.Errors != 0 {
					t.Errorf("stats %+v: want 200 tasks and 5 queues deleted, no errors", st)
				}
			})
		}
	})
}

func TestRangeIDChangedBeforeDelete(t *testing.T) {
	forEachEngine(t, func(t *testing.T, db *sqlstore.DB) {
		for _, mode := range modes {
			t.Run("compat="+string(mode), func(t *testing.T) {
				defer cleanup(t, db)
				mustSeed(t, db, seed.Spec{Queues: 1, TasksPerQueue: 10, Expired: 1, IdleAge: 72 * time.Hour})
				q := queueKey("seed-0", 0)
				fs := &faults{beforeDelete: func(k store.QueueKey) {
					// A matching host takes the queue over between list and delete.
					row, err := db.GetQueue(context.Background(), store.V1, k)
					if err != nil {
						t.Error(err)
						return
					}
					prev := row.RangeID
					row.RangeID++
					if err := db.UpdateQueue(context.Background(), store.V1, row, prev); err != nil {
						t.Error(err)
					}
				}}
				cfg := baseConfig()
				cfg.Compat = mode
				cfg.Middleware = []store.Middleware{fs.middleware()}
				st, err := scavenger.New(db, cfg).Run(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if !queueExists(t, db, store.V1, q) {
					t.Fatal("queue deleted although its range_id changed")
				}
				if st.QueuesDeleted != 0 || st.QueuesKept != 1 || st.Errors != 0 {
					t.Errorf("stats %+v: want 0 deleted, 1 kept, no errors", st)
				}
			})
		}
	})
}

// blockReads blocks every task read until its context ends, and closes
// started when the first one begins.
func blockReads(started chan struct{}) store.Middleware {
	var once sync.Once
	return hooked(func(ctx context.Context, c call) error {
		if c.op != "read" && c.op != "scan" {
			return nil
		}
		once.Do(func() { close(started) })
		<-ctx.Done()
		return ctx.Err()
	})
}

// TestCancelMidPass: when Run's context ends, the pass stops at once, its
// statements cancelled.
func TestCancelMidPass(t *testing.T) {
	db := testdb.Open(t, sqlstore.SQLite)
	mustSeed(t, db, seed.Spec{Queues: 100, TasksPerQueue: 5, Expired: 1, IdleAge: 72 * time.Hour})
	started := make(chan struct{})
	cfg := baseConfig()
	cfg.Middleware = []store.Middleware{blockReads(started)}
	s := scavenger.New(db, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := s.Run(ctx); done <- err }()
	recv(t, started, "the pass reading a task")
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run error = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of its context ending")
	}
}

// holds holds every task read and task delete until release is closed,
// then lets it run, and counts the calls that reached it.
type holds struct {
	started chan struct{} // closed when the first call is held
	once    sync.Once
	release chan struct{}
	calls   atomic.Int64
	// finished counts held calls that ran to their end.
	finished atomic.Int64
}

func (h *holds) middleware() store.Middleware {
	return hooked(func(ctx context.Context, c call) error {
		if c.op != "read" && c.op != "scan" && c.op != "deletesets" {
			return nil
		}
		h.calls.Add(1)
		h.once.Do(func() { close(h.started) })
		select {
		case <-h.release:
			h.finished.Add(1)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// TestShutdown: once Shutdown is called no statement starts, the ones in
// flight finish while Shutdown's context lasts and are cancelled when it
// ends, and Run returns ErrShutdown without counting job errors.
func TestShutdown(t *testing.T) {
	for _, c := range []struct {
		name string
		// expire: Shutdown's context ends while a statement is in flight.
		expire bool
	}{
		{"in-flight statements finish", false},
		{"in-flight statements cancelled at the deadline", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := testdb.Open(t, sqlstore.SQLite)
			mustSeed(t, db, seed.Spec{Queues: 100, TasksPerQueue: 5, Expired: 1, IdleAge: 72 * time.Hour})
			hs := &holds{started: make(chan struct{}), release: make(chan struct{})}
			cfg := baseConfig()
			cfg.ListPageSize = 10 // pages of 10 queues: every worker is busy
			cfg.Middleware = []store.Middleware{hs.middleware()}
			s := scavenger.New(db, cfg)
			type result struct {
				st  scavenger.Stats
				err error
			}
			done := make(chan result, 1)
			go func() { st, err := s.Run(context.Background()); done <- result{st, err} }()
			recv(t, hs.started, "the pass reading tasks")

			sctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			shut := make(chan error, 1)
			go func() { shut <- s.Shutdown(sctx) }()
			// Shutdown waits for the held statement; it must not return
			// while one is in flight. Calls made after it are refused.
			select {
			case err := <-shut:
				t.Fatalf("Shutdown returned %v with a statement in flight", err)
			case <-time.After(100 * time.Millisecond):
			}
			held := hs.calls.Load()
			if c.expire {
				cancel()
			} else {
				close(hs.release)
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return within 10s of the shutdown")
			}
			err := <-shut
			if !errors.Is(r.err, scavenger.ErrShutdown) {
				t.Errorf("Run error = %v, want ErrShutdown", r.err)
			}
			if c.expire != errors.Is(err, context.Canceled) {
				t.Errorf("Shutdown = %v, want context.Canceled: %v", err, c.expire)
			}
			if got := hs.calls.Load(); got != held {
				t.Errorf("%d statements started after Shutdown", got-held)
			}
			if want := map[bool]int64{false: held, true: 0}[c.expire]; hs.finished.Load() != want {
				t.Errorf("%d held reads finished, want %d", hs.finished.Load(), want)
			}
			if r.st.Errors != 0 {
				t.Errorf("%d job errors counted for a shutdown", r.st.Errors)
			}
			if _, err := s.Run(context.Background()); !errors.Is(err, scavenger.ErrShutdown) {
				t.Errorf("Run after Shutdown = %v, want ErrShutdown", err)
			}
		})
	}
}

func TestBadRowsDoNotStopThePass(t *testing.T) {
	forEachEngine(t, func(t *testing.T, db *sqlstore.DB) {
		mustSeed(t, db, seed.Spec{Queues: 4, TasksPerQueue: 20, Expired: 1, IdleAge: 72 * time.Hour})
		ctx := context.Background()
		badQueue, badTaskQueue, badEnc := queueKey("seed-0", 0), queueKey("seed-1", 0), queueKey("seed-2", 0)
		// seed-0: undecodable queue blob. seed-1: an undecodable task
		// (the 6th). seed-2: a task with an unknown encoding (the 1st).
		row, err := db.GetQueue(ctx, store.V1, badQueue)
		if err != nil {
			t.Fatal(err)
		}
		row.Data = []byte{0x0a, 0xff} // truncated length-delimited field
		if err := db.UpdateQueue(ctx, store.V1, row, row.RangeID); err != nil {
			t.Fatal(err)
		}
		corruptTask(t, db, badTaskQueue, 6, []byte{0x0a, 0x05, 0x01}, "Proto3")
		corruptTask(t, db, badEnc, 1, nil, "Json")

		cfg := baseConfig()
		st, err := scavenger.New(db, cfg).Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.BadRowCount != 3 {
			t.Errorf("bad rows %d, want 3: %v", st.BadRowCount, st.BadRows)
		}
		// The bad queue row is kept, its tasks are still scavenged.
		if !queueExists(t, db, store.V1, badQueue) {
			t.Error("queue with a bad blob was deleted")
		}
		if e, _ := taskKinds(t, db, store.V1, badQueue); e != 0 {
			t.Errorf("%d expired tasks left under the bad queue row", e)
		}
		// The bad task ends the expired prefix and is kept.
		if n := countTasks(t, db, badTaskQueue); n != 15 {
			t.Errorf("queue with a bad 6th task has %d tasks, want 15 (the bad one and those behind it)", n)
		}
		if n := countTasks(t, db, badEnc); n != 20 {
			t.Errorf("queue with a bad head task has %d tasks, want 20", n)
		}
		// The healthy queue is fully processed.
		if queueExists(t, db, store.V1, queueKey("seed-3", 0)) {
			t.Error("healthy idle queue not deleted")
		}
	})
}

func countTasks(t *testing.T, st store.Store, q store.QueueKey) int {
	t.Helper()
	tasks, err := st.ReadTasks(context.Background(), store.V1, q, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}

// corruptTask replaces task id's blob (nil data keeps it) and encoding.
func corruptTask(t *testing.T, db *sqlstore.DB, q store.QueueKey, id int64, data []byte, enc string) {
	t.Helper()
	ctx := context.Background()
	tasks, err := db.ReadTasks(ctx, store.V1, q, &store.TaskKey{ID: id - 1}, 1)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("read task %d: %v", id, err)
	}
	if data == nil {
		data = tasks[0].Data
	}
	if _, err := db.DeleteTaskSets(ctx, store.V1, []store.TaskSet{{Queue: q, Keys: []store.TaskKey{{ID: id}}}}); err != nil {
		t.Fatal(err)
	}
	row, err := db.GetQueue(ctx, store.V1, q)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AppendTasks(ctx, store.V1, q, row.RangeID, q, []store.TaskRow{{Key: store.TaskKey{ID: id}, Data: data, Encoding: enc}}); err != nil {
		t.Fatal(err)
	}
}

func openEngine(t *testing.T, e sqlstore.Engine) *sqlstore.DB { return testdb.Open(t, e) }

func isCondition(err error) bool { return errors.Is(err, store.ErrConditionFailed) }

// recv waits for ch to be closed, failing the test after a deadline
// instead of hanging it.
func recv(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
