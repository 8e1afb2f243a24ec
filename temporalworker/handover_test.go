package temporalworker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"os"
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
	"github.com/tqscavenger/tqscavenger/store"
)

// syncBuffer is a log sink safe for the activity's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// activityEnv returns a test activity environment running acts'
// partition activity, its heartbeats sent to beats.
func activityEnv(t *testing.T, acts *Activities, beats *[]Progress, mu *sync.Mutex) *testsuite.TestActivityEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(acts.ScavengePartition, activity.RegisterOptions{Name: PartitionActivityName})
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var p Progress
		if err := details.Get(&p); err != nil {
			t.Error(err)
		}
		mu.Lock()
		*beats = append(*beats, p)
		mu.Unlock()
	})
	return env
}

// runPartition runs the partition activity in env and returns its result,
// failing the test if the activity fails.
func runPartition(t *testing.T, env *testsuite.TestActivityEnvironment, in PartitionInput) PartitionResult {
	t.Helper()
	v, err := env.ExecuteActivity(PartitionActivityName, in)
	if err != nil {
		t.Fatal(err)
	}
	var res PartitionResult
	if err := v.Get(&res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestWorkerStopHandsOver: when the worker begins to stop, the running
// partition stops at once at a clean point (the statement in flight
// finishes, no other starts), records a final heartbeat with its position
// and exact counts, releases its lock and fails retryably (type
// TqsWorkerShutdown, benign: the SDK logs it at debug), logged at info: the server retries it on another
// worker after the retry policy's initial interval instead of after the
// heartbeat timeout. Today's build ran the pass on to its end.
func TestWorkerStopHandsOver(t *testing.T) {
	db := seeded(t)
	unlocked := make(chan struct{})
	d := &lockSpy{DB: newDatabase(t, db), unlocked: unlocked}
	stop := make(chan struct{})
	var lists atomic.Int32
	var logs syncBuffer
	acts := &Activities{DB: d, Logger: slog.New(slog.NewTextHandler(&logs, nil)), ShutdownTimeout: time.Minute,
		Middleware: []store.Middleware{hook(func(ctx context.Context, tb store.Table, after *store.QueueKey) error {
			if lists.Add(1) == 3 {
				close(stop) // SIGTERM while this listing statement runs: it finishes
			}
			return nil
		})}}
	var (
		beats []Progress
		mu    sync.Mutex
	)
	env := activityEnv(t, acts, &beats, &mu)
	env.SetWorkerStopChannel(stop)
	desc := describe(t, d, 1)
	desc.ListPageSize = 10
	_, err := env.ExecuteActivity(PartitionActivityName, PartitionInput{Pass: desc})
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != ErrTypeWorkerShutdown || ae.NonRetryable() || ae.Category() != temporal.ApplicationErrorCategoryBenign {
		t.Fatalf("activity error %v: want a retryable %s", err, ErrTypeWorkerShutdown)
	}
	select {
	case <-unlocked:
	default:
		t.Error("the partition's lock is still held after it returned")
	}
	mu.Lock()
	defer mu.Unlock()
	last := beats[len(beats)-1]
	if !last.Final || last.Checkpoint == nil || last.Version != ProgressVersion {
		t.Fatalf("last heartbeat %+v: want the final one, with its checkpoint", last)
	}
	var details Progress
	if !ae.HasDetails() || ae.Details(&details) != nil || details.ThisAttempt != last.ThisAttempt {
		t.Errorf("error details %+v: want the final progress %+v", details, last)
	}
	if n := lists.Load(); n != 3 {
		t.Errorf("%d listing statements: want none after the stop (3)", n)
	}
	if last.ThisAttempt.QueuesListed == 0 || last.ThisAttempt.QueuesListed >= 100 {
		t.Errorf("the attempt listed %d of the 100 queues before it stopped: want some, not all", last.ThisAttempt.QueuesListed)
	}
	out := logs.String()
	if strings.Contains(out, "level=ERROR") || !strings.Contains(out, "partition interrupted: the worker is stopping") {
		t.Errorf("logs:\n%s\nwant the partition interrupted at info, no error", out)
	}
}

// TestWorkerOptionsHandOver: the worker waits for its partitions longer
// than their shutdown timeout (else the SDK cancels the context the
// attempt's end is reported with, and the server retries only after the
// heartbeat timeout), and sends heartbeats within a second.
func TestWorkerOptionsHandOver(t *testing.T) {
	for _, shutdown := range []time.Duration{0, time.Second, 30 * time.Second, 10 * time.Minute} {
		o := WorkerOptions(3, shutdown)
		want := shutdown
		if want == 0 {
			want = DefaultShutdownTimeout
		}
		if o.WorkerStopTimeout <= want || o.MaxHeartbeatThrottleInterval != HeartbeatThrottle || o.MaxConcurrentActivityExecutionSize != 3 {
			t.Errorf("shutdown %s: options %+v: want WorkerStopTimeout beyond %s, heartbeats within %s", shutdown, o, want, HeartbeatThrottle)
		}
	}
}

// TestHeartbeatOfOlderBuild: a heartbeat written by the build before
// ProgressVersion 2 (testdata/progress-1fcb34f.json, captured from it)
// still decodes; a retry reading it counts its attempts' work up to it,
// names them as of unknown tail, and calls its totals a lower bound.
func TestHeartbeatOfOlderBuild(t *testing.T) {
	raw, err := os.ReadFile("testdata/progress-1fcb34f.json")
	if err != nil {
		t.Fatal(err)
	}
	var p Progress
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	if p.Checkpoint == nil || len(p.Checkpoint.Walks) != 4 || p.Checkpoint.Walks[1].After == nil || p.Counted.TasksDeleted != 2300 {
		t.Fatalf("decoded %+v: the checkpoint or counts were lost", p)
	}
	earlier := resumeFrom(p)
	want := []AttemptTotals{{Attempt: 2, From: 1, Totals: p.Counted, TailUnknown: true}}
	if len(earlier) != 1 || earlier[0] != want[0] {
		t.Fatalf("earlier attempts %+v, want %+v", earlier, want)
	}

	// Through the activity: the old checkpoint is of another database,
	// so it does not fit the pass (scavenger.Checkpoint.Fits): the partition
	// starts afresh, not resumed, and its result counts the old
	// attempts' work as a lower bound.
	db := seeded(t)
	d := newDatabase(t, db)
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	var (
		beats []Progress
		mu    sync.Mutex
	)
	env := activityEnv(t, &Activities{DB: d, Logger: quiet()}, &beats, &mu)
	env.SetHeartbeatDetails(generic)
	res := runPartition(t, env, PartitionInput{Pass: describe(t, d, 3), Partition: 1})
	if !res.LowerBound || len(res.UnknownTails) != 1 || res.UnknownTails[0] != "attempts 1-2" ||
		res.EarlierAttempts != p.Counted || res.Totals.TasksDeleted != p.Counted.TasksDeleted+res.ThisAttempt.TasksDeleted {
		t.Errorf("result %+v: want the old attempts' counts added, named as unknown tails, a lower bound", res)
	}
	if res.Resumed || res.ResumedFrom != nil || res.Outcome != string(scavenger.Completed) {
		t.Errorf("result %+v: want a completed partition that did not resume from another database's checkpoint", res)
	}
}

// TestTotalsExactAfterRetry: a partition whose first attempt fails (a
// retryable error) after part of its work records a final heartbeat, so
// the retry's result counts both attempts exactly: the tasks and queue
// rows deleted are those really deleted (a clean pass's), and the totals
// are not a lower bound. A partition that fails for good still brings
// its attempts' work into the pass's totals.
func TestTotalsExactAfterRetry(t *testing.T) {
	for _, maxAttempts := range []int{3, 1} {
		db := seeded(t)
		d := newDatabase(t, db)
		var v1Pages atomic.Int32
		acts := &Activities{DB: d, Logger: quiet(), Middleware: []store.Middleware{hook(func(ctx context.Context, tb store.Table, after *store.QueueKey) error {
			if tb == store.V1 && activity.GetInfo(ctx).Attempt == 1 && v1Pages.Add(1) == 4 {
				return errors.New("statement failed (injected)")
			}
			return nil
		})}}
		env := newEnv(t, acts)
		desc := describe(t, d, 1)
		desc.ListPageSize = 10
		desc.MaxAttempts = maxAttempts
		env.ExecuteWorkflow(PassWorkflow, desc)
		var res PassResult
		werr := env.GetWorkflowError()
		if maxAttempts > 1 {
			if werr != nil {
				t.Fatal(werr)
			}
			if err := env.GetWorkflowResult(&res); err != nil {
				t.Fatal(err)
			}
		} else {
			var ae *temporal.ApplicationError
			if !errors.As(werr, &ae) || ae.Type() != ErrTypePassIncomplete || ae.Details(&res) != nil {
				t.Fatalf("workflow error %v: want %s with the pass result", werr, ErrTypePassIncomplete)
			}
		}
		clean, _ := cleanPass(t, desc)
		pr := res.Partitions[0]
		if maxAttempts > 1 {
			if pr.Attempt != 2 || len(pr.Attempts) != 1 || pr.Attempts[0].TailUnknown || pr.Attempts[0].Totals.TasksDeleted == 0 {
				t.Fatalf("partition %+v: want attempt 2 after a first one of known tail that deleted tasks", pr)
			}
			if res.Totals.TasksDeleted != clean.TasksDeleted || res.Totals.QueuesDeleted != clean.QueuesDeleted || res.LowerBound || pr.LowerBound {
				t.Errorf("totals: %d tasks and %d queues deleted (lower bound %t); a clean pass deletes %d and %d: want exactly that",
					res.Totals.TasksDeleted, res.Totals.QueuesDeleted, res.LowerBound, clean.TasksDeleted, clean.QueuesDeleted)
			}
			continue
		}
		if res.Totals.TasksDeleted == 0 || res.Totals.TasksDeleted >= clean.TasksDeleted || res.LowerBound {
			t.Errorf("failed pass: %d tasks deleted (lower bound %t), a whole pass %d: want the failed attempt's work, exact", res.Totals.TasksDeleted, res.LowerBound, clean.TasksDeleted)
		}
	}
}

// TestHeartbeatPastTheTable: a retry whose heartbeat's checkpoint fits
// the pass (same database, partition, rules, a valid checksum) but holds
// a position past the last row of its table (the table changed since),
// which Checkpoint.FitsTables refuses, starts from its first hash instead
// of failing as the pass would refuse it, and completes as a clean pass
// does.
func TestHeartbeatPastTheTable(t *testing.T) {
	db := seeded(t)
	d := newDatabase(t, db)
	desc := describe(t, d, 1)
	cfg, err := desc.Config(0)
	if err != nil {
		t.Fatal(err)
	}
	past := store.QueueKey{RangeHash: math.MaxUint32, ID: bytes.Repeat([]byte{0xff}, 40)}
	cp := scavenger.Checkpoint{Version: scavenger.CheckpointVersion, Partition: cfg.Partition.String(), Settings: scavenger.SettingsDigest(cfg),
		Database: identity(t, d), Walks: []scavenger.WalkPosition{{Walk: scavenger.WalkQueues, Table: store.V1, After: &past}}}
	cp.Checksum = cp.Sum()
	if err := cp.Fits(cfg, identity(t, d)); err != nil {
		t.Fatalf("the checkpoint does not fit: %v", err)
	}
	var (
		beats []Progress
		mu    sync.Mutex
	)
	env := activityEnv(t, &Activities{DB: d, Logger: quiet()}, &beats, &mu)
	env.SetHeartbeatDetails(Progress{Version: ProgressVersion, Partition: 0, Partitions: 1, Attempt: 1, Checkpoint: &cp, Final: true})
	res := runPartition(t, env, PartitionInput{Pass: desc})
	clean, want := cleanPass(t, desc)
	if res.Resumed || res.Outcome != string(scavenger.Completed) || res.ThisAttempt.TasksDeleted != clean.TasksDeleted {
		t.Errorf("result %+v: want a completed partition, not resumed, that deleted what a clean pass does (%d tasks)", res, clean.TasksDeleted)
	}
	if got := digest(t, db); got != want {
		t.Errorf("the partition left %s, a clean pass %s", got, want)
	}
}

// TestHeartbeatUnverified: a retry whose heartbeat's checkpoint fits the
// pass (same database, partition, rules) but does not verify (its
// checksum removed, as issue 39's edit did, with every walk marked done;
// a wrong checksum; a version that carries none) starts from its first
// hash, says why in its result (resume_refused), and deletes what a
// clean pass does, as it does for a newer build's heartbeat: resumed, it
// would have completed having examined nothing.
func TestHeartbeatUnverified(t *testing.T) {
	cases := []struct {
		name string
		edit func(*scavenger.Checkpoint)
		says string
	}{
		{"checksum removed", func(cp *scavenger.Checkpoint) { cp.Checksum = "" }, "it has none"},
		{"another checksum", func(cp *scavenger.Checkpoint) { cp.Checksum = "sha256:00" }, "does not match its contents"},
		{"version 0", func(cp *scavenger.Checkpoint) { cp.Version = 0; cp.Checksum = "" }, "version 0, which carries no checksum"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := seeded(t)
			d := newDatabase(t, db)
			desc := describe(t, d, 1)
			cfg, err := desc.Config(0)
			if err != nil {
				t.Fatal(err)
			}
			var walks []scavenger.WalkPosition
			for _, w := range []scavenger.Walk{scavenger.WalkQueues, scavenger.WalkOrphans} {
				for _, tb := range []store.Table{store.V1, store.V2} {
					walks = append(walks, scavenger.WalkPosition{Walk: w, Table: tb, Done: true})
				}
			}
			cp := scavenger.Checkpoint{Version: scavenger.CheckpointVersion, Partition: cfg.Partition.String(), Settings: scavenger.SettingsDigest(cfg),
				Database: identity(t, d), Walks: walks}
			cp.Checksum = cp.Sum()
			if err := cp.Fits(cfg, identity(t, d)); err != nil {
				t.Fatalf("the checkpoint, sealed, does not fit: %v", err)
			}
			c.edit(&cp)
			var (
				beats []Progress
				mu    sync.Mutex
			)
			env := activityEnv(t, &Activities{DB: d, Logger: quiet()}, &beats, &mu)
			env.SetHeartbeatDetails(Progress{Version: ProgressVersion, Partition: 0, Partitions: 1, Attempt: 1, Checkpoint: &cp, Final: true})
			res := runPartition(t, env, PartitionInput{Pass: desc})
			clean, want := cleanPass(t, desc)
			if res.Resumed || !strings.Contains(res.ResumeRefused, c.says) {
				t.Errorf("resumed %t, refused %q: want not resumed, refused saying %q", res.Resumed, res.ResumeRefused, c.says)
			}
			if res.Outcome != string(scavenger.Completed) || res.ThisAttempt.TasksDeleted != clean.TasksDeleted || clean.TasksDeleted == 0 {
				t.Errorf("result %+v: want a completed partition that deleted what a clean pass does (%d tasks)", res, clean.TasksDeleted)
			}
			if got := digest(t, db); got != want {
				t.Errorf("the partition left %s, a clean pass %s", got, want)
			}
		})
	}
}
