package temporalworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/tqscavenger/tqscavenger/scavenger"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestPassFansOut runs a pass as N partition activities and checks that
// together they do exactly what one full pass does: the same rows left,
// the same counts, every partition run once.
func TestPassFansOut(t *testing.T) {
	for _, n := range []int{1, 3, 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			db := seeded(t)
			d := newDatabase(t, db)
			env := newEnv(t, &Activities{DB: d, Logger: quiet()})
			var mu sync.Mutex
			started := map[int]int{}
			env.SetOnActivityStartedListener(func(_ *activity.Info, _ context.Context, args converter.EncodedValues) {
				var in PartitionInput
				if err := args.Get(&in); err != nil {
					t.Error(err)
				}
				mu.Lock()
				started[in.Partition]++
				mu.Unlock()
			})
			desc := describe(t, d, n)
			env.ExecuteWorkflow(PassWorkflow, desc)
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			var res PassResult
			if err := env.GetWorkflowResult(&res); err != nil {
				t.Fatal(err)
			}
			clean, want := cleanPass(t, desc)
			if got := digest(t, db); got != want {
				t.Errorf("digest after %d partitions %s, after a full pass %s", n, got, want)
			}
			if len(started) != n {
				t.Errorf("partitions started: %v, want each of %d once", started, n)
			}
			for i, c := range started {
				if c != 1 {
					t.Errorf("partition %d started %d times", i, c)
				}
			}
			if res.Outcome != "completed" || res.Failed != 0 || len(res.Partitions) != n {
				t.Fatalf("result %+v", res)
			}
			if res.Totals.QueuesListed != clean.QueuesListed || res.Totals.TasksDeleted != clean.TasksDeleted ||
				res.Totals.QueuesDeleted != clean.QueuesDeleted || res.Totals.TasksProcessed != clean.TasksProcessed {
				t.Errorf("totals %+v, full pass listed %d queues, deleted %d tasks and %d queues, examined %d tasks",
					res.Totals, clean.QueuesListed, clean.TasksDeleted, clean.QueuesDeleted, clean.TasksProcessed)
			}
			if clean.TasksDeleted == 0 || clean.QueuesDeleted == 0 {
				t.Fatalf("the data gives the pass nothing to delete: %+v", clean)
			}
		})
	}
}

// TestRetriedActivityResumesFromItsHeartbeat fails a partition's first
// attempt in the middle of its v1 listing, after its v2 walk is done and
// some v1 pages are, and checks that the retry starts from the checkpoint
// the first attempt heartbeated, examines fewer tasks than a whole pass,
// and leaves what a clean pass leaves.
func TestRetriedActivityResumesFromItsHeartbeat(t *testing.T) {
	db := seeded(t)
	d := newDatabase(t, db)
	var v1Pages atomic.Int32
	acts := &Activities{DB: d, Logger: quiet(), Middleware: []store.Middleware{hook(func(ctx context.Context, tb store.Table, after *store.QueueKey) error {
		if tb == store.V1 && activity.GetInfo(ctx).Attempt == 1 && v1Pages.Add(1) == 4 {
			return errors.New("worker lost (injected)")
		}
		return nil
	})}}
	env := newEnv(t, acts)
	var beats []Progress
	var mu sync.Mutex
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var p Progress
		if err := details.Get(&p); err != nil {
			t.Error(err)
		}
		mu.Lock()
		beats = append(beats, p)
		mu.Unlock()
	})
	desc := describe(t, d, 1)
	desc.ListPageSize = 10
	desc.CheckpointInterval = time.Millisecond
	env.ExecuteWorkflow(PassWorkflow, desc)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res PassResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	pr := res.Partitions[0]
	mu.Lock()
	var last *scavenger.Checkpoint
	for _, b := range beats {
		if b.Attempt == 1 && b.Checkpoint != nil {
			last = b.Checkpoint
		}
	}
	mu.Unlock()
	if last == nil {
		t.Fatal("the first attempt heartbeated no checkpoint")
	}
	if pr.Attempt != 2 || !pr.Resumed || !reflect.DeepEqual(pr.ResumedFrom, last.Walks) {
		t.Fatalf("partition attempt %d resumed %t from %+v: want attempt 2 resumed from the first attempt's last checkpoint %+v", pr.Attempt, pr.Resumed, pr.ResumedFrom, last.Walks)
	}
	clean, wantDigest := cleanPass(t, desc)
	if got := digest(t, db); got != wantDigest {
		t.Errorf("digest after a resumed pass %s, after a clean pass %s", got, wantDigest)
	}
	// The retry reads no task of a table whose walk the checkpoint marks
	// done: at most what a clean pass reads in the other tables. (Fewer
	// than a clean pass alone would not tell: the first attempt's deletes
	// leave a restart from scratch fewer rows too.)
	var bound int64
	for tb, ts := range clean.Tables {
		done := false
		for _, w := range last.Walks {
			done = done || (w.Walk == scavenger.WalkQueues && w.Table == tb && w.Done)
		}
		if !done {
			bound += ts.TasksProcessed
		}
	}
	if bound == clean.TasksProcessed {
		t.Fatalf("the first attempt's checkpoint %+v marks no walk done: the test proves nothing", last.Walks)
	}
	if pr.ThisAttempt.TasksProcessed > bound || pr.ThisAttempt.TasksProcessed == 0 {
		t.Errorf("the retry examined %d tasks; a clean pass examines %d in the walks the checkpoint left undone (%d in all): want at most that, not none",
			pr.ThisAttempt.TasksProcessed, bound, clean.TasksProcessed)
	}
	// The totals count an earlier attempt only up to its last heartbeat
	// (the deletes it made after that are done but unreported, and the
	// retry finds those rows gone): they may fall short of a clean pass,
	// never exceed it. The digest above is what proves the work.
	if pr.Totals.TasksDeleted > clean.TasksDeleted || pr.Totals.TasksDeleted < pr.ThisAttempt.TasksDeleted {
		t.Errorf("tasks deleted over both attempts %d (this attempt %d), by a clean pass %d: want between this attempt's and the clean pass's",
			pr.Totals.TasksDeleted, pr.ThisAttempt.TasksDeleted, clean.TasksDeleted)
	}
	t.Logf("first attempt's last checkpoint %+v; retry examined %d tasks, the first attempt %d (to its last heartbeat), a clean pass %d",
		last.Walks, pr.ThisAttempt.TasksProcessed, pr.EarlierAttempts.TasksProcessed, clean.TasksProcessed)
}

// TestRetryableErrors: a lock held by another pass and an unreachable
// database are retried, within the policy's bounded attempts.
func TestRetryableErrors(t *testing.T) {
	t.Run("lock held", func(t *testing.T) {
		db := seeded(t)
		real := newDatabase(t, db)
		held, err := real.LockRange(context.Background(), store.HashRange{Lo: 0, Hi: 10}, false)
		if err != nil {
			t.Fatal(err)
		}
		var refused atomic.Int32
		d := &flakyDatabase{DB: real, lockRange: func(r store.HashRange, err error) {
			if errors.Is(err, store.ErrLocked) && refused.Add(1) == 1 {
				held.Unlock() // the other pass ends
			}
		}}
		env := newEnv(t, &Activities{DB: d, Logger: quiet()})
		env.ExecuteWorkflow(PassWorkflow, describe(t, d, 2))
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		var res PassResult
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		if refused.Load() != 1 || res.Partitions[0].Attempt != 2 || res.Partitions[1].Attempt != 1 {
			t.Fatalf("refused %d times, partitions %+v: want partition 0 refused once and done on attempt 2", refused.Load(), res.Partitions)
		}
	})
	t.Run("database unreachable", func(t *testing.T) {
		db := seeded(t)
		real := newDatabase(t, db)
		var calls atomic.Int32
		d := &flakyDatabase{DB: real, identity: func(context.Context) error {
			calls.Add(1)
			return fmt.Errorf("dial tcp 127.0.0.1:1: connect: connection refused: %w", sqlstore.ErrUnavailable)
		}}
		env := newEnv(t, &Activities{DB: d, Logger: quiet()})
		desc := describe(t, real, 1)
		desc.MaxAttempts = 3
		env.ExecuteWorkflow(PassWorkflow, desc)
		err := env.GetWorkflowError()
		var ae *temporal.ApplicationError
		if !errors.As(err, &ae) || ae.Type() != ErrTypePassIncomplete {
			t.Fatalf("workflow error %v: want %s", err, ErrTypePassIncomplete)
		}
		var res PassResult
		if err := ae.Details(&res); err != nil || res.Failed != 1 || res.Outcome != "failed" {
			t.Fatalf("details %+v (%v)", res, err)
		}
		if calls.Load() != 3 {
			t.Errorf("%d attempts, want the policy's 3", calls.Load())
		}
		if !errors.As(err, &ae) {
			t.Fatal(err)
		}
		if got := partitionErrType(err); got != ErrTypeUnavailable {
			t.Errorf("partition error type %q, want %s", got, ErrTypeUnavailable)
		}
	})
}

// partitionErrType returns the type of the innermost ApplicationError of
// a workflow error: the failed partition's.
func partitionErrType(err error) string {
	var act *temporal.ActivityError
	if errors.As(err, &act) {
		err = act.Unwrap()
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Type()
	}
	return ""
}

// TestNonRetryableErrors: an activity that cannot succeed fails at once.
func TestNonRetryableErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		db   func(t *testing.T) scavenger.PassDB
		desc func(t *testing.T, d scavenger.PassDB) PassDescription
		want string
	}{
		{"another database", func(t *testing.T) scavenger.PassDB { return newDatabase(t, seeded(t)) },
			func(t *testing.T, d scavenger.PassDB) PassDescription {
				desc := describe(t, d, 2)
				desc.DatabaseIdentity = identity(t, newDatabase(t, seeded(t)))
				return desc
			}, ErrTypeWrongDatabase},
		{"schema mismatch", func(t *testing.T) scavenger.PassDB {
			db := testdb.OpenNew(t, testdb.Empty(t, sqlstore.SQLite), sqlstore.Options{Create: true})
			return newDatabase(t, db)
		}, func(t *testing.T, d scavenger.PassDB) PassDescription { return describe(t, d, 1) }, ErrTypeSchemaMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.db(t)
			env := newEnv(t, &Activities{DB: d, Logger: quiet()})
			var attempts atomic.Int32
			env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) { attempts.Add(1) })
			desc := tc.desc(t, d)
			env.ExecuteWorkflow(PassWorkflow, desc)
			err := env.GetWorkflowError()
			if got := partitionErrType(err); got != tc.want {
				t.Fatalf("error %v (type %q): want %s", err, got, tc.want)
			}
			if int(attempts.Load()) != desc.Partitions {
				t.Errorf("%d attempts over %d partitions: want one each", attempts.Load(), desc.Partitions)
			}
		})
	}
	t.Run("bad description", func(t *testing.T) {
		d := newDatabase(t, seeded(t))
		for _, bad := range []func(*PassDescription){
			func(p *PassDescription) { p.DatabaseIdentity = "" },
			func(p *PassDescription) { p.Partitions = -1 },
			func(p *PassDescription) { p.Grace = time.Hour },
			func(p *PassDescription) { p.Namespaces = []string{"not-a-uuid"} },
			func(p *PassDescription) { p.Compat = "cassandra" },
		} {
			desc := describe(t, d, 2)
			bad(&desc)
			env := newEnv(t, &Activities{DB: d, Logger: quiet()})
			env.ExecuteWorkflow(PassWorkflow, desc)
			if got := partitionErrType(env.GetWorkflowError()); got != ErrTypeBadInput {
				t.Errorf("%+v: error %v, want %s", desc, env.GetWorkflowError(), ErrTypeBadInput)
			}
		}
		// The activity checks its own input too: a partition out of range.
		var s testsuite.WorkflowTestSuite
		aenv := s.NewTestActivityEnvironment()
		acts := &Activities{DB: d, Logger: quiet()}
		aenv.RegisterActivityWithOptions(acts.ScavengePartition, activity.RegisterOptions{Name: PartitionActivityName})
		_, err := aenv.ExecuteActivity(PartitionActivityName, PartitionInput{Pass: describe(t, d, 4), Partition: 4})
		var ae *temporal.ApplicationError
		if !errors.As(err, &ae) || ae.Type() != ErrTypeBadInput || !ae.NonRetryable() {
			t.Fatalf("partition 4 of 4: %v", err)
		}
	})
}

// TestCancellationStopsThePass cancels the workflow while a partition's
// listing statement runs: the statement's context ends, the activity stops
// and releases its lock, and the workflow ends cancelled.
func TestCancellationStopsThePass(t *testing.T) {
	db := seeded(t)
	unlocked := make(chan struct{})
	d := &lockSpy{DB: newDatabase(t, db), unlocked: unlocked}
	var env *testsuite.TestWorkflowEnvironment
	var once sync.Once
	stopped := make(chan error, 1)
	var logs syncBuffer
	acts := &Activities{DB: d, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Middleware: []store.Middleware{hook(func(ctx context.Context, _ store.Table, after *store.QueueKey) error {
		first := false
		once.Do(func() { first = true })
		if !first {
			return nil
		}
		env.CancelWorkflow()
		select {
		case <-ctx.Done():
			stopped <- ctx.Err()
			return ctx.Err()
		case <-time.After(time.Minute):
			stopped <- errors.New("not cancelled within a minute")
			return errors.New("not cancelled")
		}
	})}}
	env = newEnv(t, acts)
	desc := describe(t, d, 1)
	desc.HeartbeatTimeout = time.Second // heartbeats every 333 ms carry the cancellation
	env.ExecuteWorkflow(PassWorkflow, desc)
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("the statement's context: %v, want canceled", err)
	}
	var ce *temporal.CanceledError
	if err := env.GetWorkflowError(); !errors.As(err, &ce) {
		t.Fatalf("workflow error %v, want canceled", err)
	}
	select {
	case <-unlocked:
	case <-time.After(time.Minute):
		t.Fatal("the partition's lock is still held a minute after cancellation")
	}
	// The SDK cancels with a cause of its own (here NotFound): still an
	// interruption, at info.
	if out := logs.String(); strings.Contains(out, "level=ERROR") || !strings.Contains(out, `msg="scavenger pass interrupted"`) {
		t.Errorf("logs:\n%s\nwant the pass interrupted at info, no error", out)
	}
}

// TestDryRunTakesNoLock: a dry-run pass runs beside a real pass that
// holds the whole range's lock, and asks for no lock of its own.
func TestDryRunTakesNoLock(t *testing.T) {
	db := seeded(t)
	real := newDatabase(t, db)
	held, err := real.LockRange(context.Background(), store.FullRange, false)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	var asked atomic.Int32
	d := &flakyDatabase{DB: real, lockRange: func(store.HashRange, error) { asked.Add(1) }}
	env := newEnv(t, &Activities{DB: d, Logger: quiet()})
	desc := describe(t, d, 2)
	desc.DryRun = true
	env.ExecuteWorkflow(PassWorkflow, desc)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("a dry run beside a held lock: %v", err)
	}
	var res PassResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if asked.Load() != 0 {
		t.Errorf("a dry run asked for %d range locks, want none", asked.Load())
	}
	for _, p := range res.Partitions {
		if p.Attempt != 1 {
			t.Errorf("partition %d done on attempt %d, want 1 (no lock to wait for)", p.Partition, p.Attempt)
		}
	}
}
