package temporalworker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestRetryRefusesCheckpointPastTheTable: a heartbeat's checkpoint is
// checked as a file's is. The first attempt fails in the middle of its
// v1 listing, after its v2 walk is done and its v1 mark is inside the table,
// and the v1 queue rows are deleted behind its back (as a restore or another
// pass might): the retry refuses the heartbeat's position, which now lies past
// the last row of task_queues, says why in its result, and starts the
// partition from its first hash (its v2 walk again) instead of resuming
// and examining nothing of v1.
func TestRetryRefusesCheckpointPastTheTable(t *testing.T) {
	db := seeded(t)
	d := newDatabase(t, db)
	var failed atomic.Bool
	acts := &Activities{DB: d, Logger: quiet(), Middleware: []store.Middleware{failUpperHalf(func() {
		if !failed.Swap(true) {
			testdb.Exec(t, db, "DELETE FROM task_queues")
		}
	})}}
	metrics := &countingHandler{counts: map[string]int64{}}
	env := newEnvWithMetrics(t, acts, metrics)
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
	if pr.Attempt != 2 || pr.Resumed || len(pr.ResumedFrom) != 0 {
		t.Fatalf("partition attempt %d resumed %t from %v: want attempt 2, not resumed", pr.Attempt, pr.Resumed, pr.ResumedFrom)
	}
	if !strings.Contains(pr.ResumeRefused, "past the last row of task_queues") {
		t.Errorf("resume refused %q: want the reason, past the last row of task_queues", pr.ResumeRefused)
	}
	// Resumed, it would list none: its v2 walk is done, and no v1 row
	// lies after its position. From the first hash, it lists the 20 v2
	// queues again.
	if pr.ThisAttempt.QueuesListed < 20 {
		t.Errorf("the retry listed %d queues: it did not start from the first hash", pr.ThisAttempt.QueuesListed)
	}
	if pr.Outcome != string(scavenger.Completed) {
		t.Errorf("outcome %s", pr.Outcome)
	}
	if n := metrics.count(MetricCheckpointsRefused); n != 1 {
		t.Errorf("%s counted %d, want 1", MetricCheckpointsRefused, n)
	}
	if n := metrics.count(MetricPartitionsResumed); n != 0 {
		t.Errorf("%s counted %d, want 0: the retry did not resume", MetricPartitionsResumed, n)
	}
}

// TestResumedPartitionCounted: a retried partition that resumes from its
// heartbeat's checkpoint is counted in MetricPartitionsResumed, through
// the worker's metrics handler, and says so in its result.
func TestResumedPartitionCounted(t *testing.T) {
	metrics := &countingHandler{counts: map[string]int64{}}
	res := runResumedPass(t, metrics)
	if pr := res.Partitions[0]; pr.Attempt != 2 || !pr.Resumed || pr.ResumeRefused != "" {
		t.Fatalf("partition attempt %d resumed %t (refused %q): want attempt 2 resumed", pr.Attempt, pr.Resumed, pr.ResumeRefused)
	}
	if n := metrics.count(MetricPartitionsResumed); n != 1 {
		t.Errorf("%s counted %d, want 1", MetricPartitionsResumed, n)
	}
	if n := metrics.count(MetricCheckpointsRefused); n != 0 {
		t.Errorf("%s counted %d, want 0", MetricCheckpointsRefused, n)
	}
}

// runResumedPass runs a one-partition pass whose first attempt fails
// after its first checkpoint, so that the retry resumes, with h as the
// SDK's metrics handler, and returns its result.
func runResumedPass(t *testing.T, h client.MetricsHandler) PassResult {
	t.Helper()
	db := seeded(t)
	d := newDatabase(t, db)
	acts := &Activities{DB: d, Logger: quiet(), Middleware: []store.Middleware{failUpperHalf(func() {})}}
	env := newEnvWithMetrics(t, acts, h)
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
	return res
}

// newEnvWithMetrics is newEnv with h as the SDK's metrics handler.
func newEnvWithMetrics(t *testing.T, acts *Activities, h client.MetricsHandler) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(quiet()))
	s.SetMetricsHandler(h)
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(2 * time.Minute)
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	Register(env, acts)
	return env
}

// countingHandler is an SDK metrics handler that sums each counter by
// name, whatever its tags; gauges and timers go nowhere.
type countingHandler struct {
	mu     sync.Mutex
	counts map[string]int64
}

func (h *countingHandler) WithTags(map[string]string) client.MetricsHandler { return h }

func (h *countingHandler) Counter(name string) client.MetricsCounter {
	return counterFunc(func(d int64) {
		h.mu.Lock()
		h.counts[name] += d
		h.mu.Unlock()
	})
}

func (h *countingHandler) Gauge(string) client.MetricsGauge {
	return client.MetricsNopHandler.Gauge("")
}

func (h *countingHandler) Timer(string) client.MetricsTimer {
	return client.MetricsNopHandler.Timer("")
}

func (h *countingHandler) count(name string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[name]
}

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }

// failUpperHalf fails every v1 task scan of a first attempt that reaches
// the upper half of the hash space, after calling first: the attempt's
// v1 jobs of the lower half succeed and its mark stops inside the table
// (near the middle), which its final heartbeat carries.
func failUpperHalf(first func()) store.Middleware {
	return func(s store.Store) store.Store { return &failingScans{Store: s, first: first} }
}

type failingScans struct {
	store.Store
	first func()
}

func (f *failingScans) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	if t == store.V1 && activity.GetInfo(ctx).Attempt == 1 && through.RangeHash >= 1<<31 {
		f.first()
		return nil, errors.New("worker lost (injected)")
	}
	return f.Store.ScanTasks(ctx, t, after, through, limit)
}

// TestPrometheusMetrics: the handler a worker's /metrics serves counts a
// resumed partition in tqscavenger_partitions_resumed_total, which a
// scrape finds at zero before any partition ran.
func TestPrometheusMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, err := NewPrometheusMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	value := func(name string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		t.Fatalf("%s not exported", name)
		return 0
	}
	if v := value(MetricPartitionsResumed + "_total"); v != 0 {
		t.Fatalf("before any pass: %v, want 0", v)
	}
	runResumedPass(t, h)
	if v := value(MetricPartitionsResumed + "_total"); v != 1 {
		t.Errorf("%s_total = %v after a resumed partition, want 1", MetricPartitionsResumed, v)
	}
	if v := value(MetricCheckpointsRefused + "_total"); v != 0 {
		t.Errorf("%s_total = %v, want 0", MetricCheckpointsRefused, v)
	}
}
