package temporalworker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

func TestPartitionRangesCoverTheSpace(t *testing.T) {
	for n := 1; n <= 64; n++ {
		next := uint64(0)
		for i := range n {
			r, err := PartitionRange(i, n)
			if err != nil {
				t.Fatal(err)
			}
			if uint64(r.Lo) != next || r.Hi < r.Lo {
				t.Fatalf("%d/%d = %s: want it to start at %d", i, n, r, next)
			}
			next = uint64(r.Hi) + 1
		}
		if next != 1<<32 {
			t.Fatalf("N=%d: ranges end at %d, want 2^32 (hash %d uncovered)", n, next, uint32(math.MaxUint32))
		}
	}
	for _, bad := range []string{"", "1", "4/4", "-1/4", "0/0", "a/b", "1/2/3"} {
		if _, _, err := ParsePartition(bad); err == nil {
			t.Errorf("ParsePartition(%q): no error", bad)
		}
	}
}

func TestChunksResumeAtTheirBoundaries(t *testing.T) {
	r := HashRange{Lo: 100, Hi: 199}
	all := chunks(r, 4, 100)
	if len(all) != 4 || all[0].Lo != 100 || all[3].Hi != 199 {
		t.Fatalf("chunks = %v", all)
	}
	if got := chunks(r, 4, uint64(all[2].Lo)); len(got) != 2 || got[0] != all[2] {
		t.Fatalf("from chunk 2's start: %v, want %v", got, all[2:])
	}
	if got := chunks(r, 4, uint64(all[2].Lo)+3); len(got) != 2 || got[0].Lo != all[2].Lo+3 {
		t.Fatalf("from inside chunk 2: %v", got)
	}
	if got := chunks(r, 4, 200); len(got) != 0 {
		t.Fatalf("past the end: %v", got)
	}
}

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

// isListingStart reports whether a listing call is the first of a table
// in a piece of a partition.
func isListingStart(after *store.QueueKey) bool { return after == nil || len(after.ID) == 0 }

// TestRetriedActivityResumesFromItsHeartbeat fails a partition's first
// attempt in its fourth piece and checks that the retry starts at the
// mark the first attempt heartbeated (the fourth piece's first hash),
// examines fewer tasks than a whole pass, and leaves what a clean pass
// leaves.
func TestRetriedActivityResumesFromItsHeartbeat(t *testing.T) {
	db := seeded(t)
	d := newDatabase(t, db)
	var starts atomic.Int32
	failAt := int32(7) // 2 tables a piece: the 7th listing opens piece 3
	acts := &Activities{DB: d, Logger: quiet(), Middleware: []store.Middleware{hook(func(ctx context.Context, after *store.QueueKey) error {
		if isListingStart(after) && starts.Add(1) == failAt {
			return errors.New("worker lost (injected)")
		}
		return nil
	})}}
	env := newEnv(t, acts)
	var marks []uint64
	var mu sync.Mutex
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var p Progress
		if err := details.Get(&p); err != nil {
			t.Error(err)
		}
		mu.Lock()
		marks = append(marks, p.Next)
		mu.Unlock()
	})
	desc := describe(t, d, 1)
	desc.Chunks = 8
	env.ExecuteWorkflow(PassWorkflow, desc)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res PassResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	pr := res.Partitions[0]
	want := chunks(HashRange{Hi: math.MaxUint32}, 8, 0)[3].Lo
	if pr.Attempt != 2 || !pr.Resumed || pr.ResumedFrom != uint64(want) {
		t.Fatalf("partition %+v: want attempt 2 resumed from %d", pr, want)
	}
	clean, wantDigest := cleanPass(t, desc)
	if got := digest(t, db); got != wantDigest {
		t.Errorf("digest after a resumed pass %s, after a clean pass %s", got, wantDigest)
	}
	if pr.ThisAttempt.TasksProcessed >= clean.TasksProcessed || pr.ThisAttempt.TasksProcessed == 0 {
		t.Errorf("the retry examined %d tasks, a whole pass %d: want fewer, not none", pr.ThisAttempt.TasksProcessed, clean.TasksProcessed)
	}
	if pr.Totals.TasksDeleted != clean.TasksDeleted || pr.Totals.TasksProcessed != clean.TasksProcessed {
		t.Errorf("partition totals %+v over both attempts; a clean pass deleted %d and examined %d", pr.Totals, clean.TasksDeleted, clean.TasksProcessed)
	}
	// The marks never go back, and none is past the piece that failed
	// before the retry started.
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(marks); i++ {
		if marks[i] < marks[i-1] {
			t.Errorf("heartbeat marks went back: %v", marks)
		}
	}
	t.Logf("marks heartbeated: %v; retry examined %d of %d tasks", marks, pr.ThisAttempt.TasksProcessed, clean.TasksProcessed)
}

// TestRetryableErrors: a lock held by another pass and an unreachable
// database are retried, within the policy's bounded attempts.
func TestRetryableErrors(t *testing.T) {
	t.Run("lock held", func(t *testing.T) {
		db := seeded(t)
		real := newDatabase(t, db)
		held, err := real.LockRange(context.Background(), HashRange{Lo: 0, Hi: 10})
		if err != nil {
			t.Fatal(err)
		}
		var refused atomic.Int32
		d := &flakyDatabase{Database: real, lockRange: func(r HashRange, err error) {
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
		d := &flakyDatabase{Database: real, identity: func(context.Context) error {
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
		db   func(t *testing.T) Database
		desc func(t *testing.T, d Database) PassDescription
		want string
	}{
		{"another database", func(t *testing.T) Database { return newDatabase(t, seeded(t)) },
			func(t *testing.T, d Database) PassDescription {
				desc := describe(t, d, 2)
				desc.DatabaseIdentity = identity(t, newDatabase(t, seeded(t)))
				return desc
			}, ErrTypeWrongDatabase},
		{"schema mismatch", func(t *testing.T) Database {
			db := testdb.OpenNew(t, testdb.Empty(t, sqlstore.SQLite), sqlstore.Options{Create: true})
			return newDatabase(t, db)
		}, func(t *testing.T, d Database) PassDescription { return describe(t, d, 1) }, ErrTypeSchemaMismatch},
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
	d := &lockSpy{Database: newDatabase(t, db), unlocked: unlocked}
	var env *testsuite.TestWorkflowEnvironment
	var once sync.Once
	stopped := make(chan error, 1)
	acts := &Activities{DB: d, Logger: quiet(), Middleware: []store.Middleware{hook(func(ctx context.Context, after *store.QueueKey) error {
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
}
