package interop

// TestClosedWorkflowsLive (issue 31): the closed-workflow rule beside a live
// Temporal server with 4 history shards, on every engine of the run side
// by side. Workflows schedule activities on queues no worker polls, with
// no schedule-to-start timeout, so their tasks are persisted and never
// expire; half the workflows are terminated or cancelled. A pass with the
// rule must delete exactly the closed runs' tasks; then workers start on
// those queues and every running workflow must complete, with no Temporal
// error kind the control lacks. The control batch, on other queues of the
// same server, leaves the dead tasks to matching: first with no pollers
// (noPollerWindow), then with workers; how long matching takes to drain
// them is the figure the rule is measured against.

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/temporalworker"
)

const closedWorkflowQueue = "closed-wf"

// closedLiveWorkflow runs one activity on queue q and returns.
func closedLiveWorkflow(ctx workflow.Context, q string) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           q,
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	return workflow.ExecuteActivity(ctx, "closedLiveActivity").Get(ctx, nil)
}

func closedLiveActivity(ctx context.Context) error { return nil }

// batch is one set of workflows on its own activity queues.
type batch struct {
	queues  []string
	running map[string]bool // workflow id -> still running
}

func startBatch(ctx context.Context, t *testing.T, c client.Client, prefix string, n int) batch {
	t.Helper()
	b := batch{running: map[string]bool{}}
	for i := range 4 {
		b.queues = append(b.queues, fmt.Sprintf("%s-act-%d", prefix, i))
	}
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		// A loaded machine can time a start out: retried (bounded), the
		// workflow id makes a start that did happen the same workflow.
		var err error
		for try := 0; try < 5; try++ {
			_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: closedWorkflowQueue,
				WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING}, closedLiveWorkflow, b.queues[i%len(b.queues)])
			if err == nil || ctx.Err() != nil {
				break
			}
			t.Logf("start %s (try %d): %v", id, try+1, err)
		}
		if err != nil {
			t.Fatal(err)
		}
		b.running[id] = true
	}
	return b
}

// closeHalf terminates a quarter and cancels a quarter of the batch's
// workflows, and waits until each is closed.
func (b batch) closeHalf(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	i := 0
	for id := range b.running {
		switch i % 4 {
		case 0:
			if err := c.TerminateWorkflow(ctx, id, "", "issue 31: dead backlog"); err != nil {
				t.Fatal(err)
			}
			b.running[id] = false
		case 1:
			if err := c.CancelWorkflow(ctx, id, ""); err != nil {
				t.Fatal(err)
			}
			b.running[id] = false
		}
		i++
	}
	for id, run := range b.running {
		if run {
			continue
		}
		for {
			d, err := c.DescribeWorkflowExecution(ctx, id, "")
			if err != nil {
				t.Fatal(err)
			}
			if d.WorkflowExecutionInfo.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// tasksOf counts the persisted tasks of the batch's workflows, by whether
// the workflow is still running.
func tasksOf(t *testing.T, db *sqlstore.DB, b batch) (running, closed int) {
	t.Helper()
	kind := make(map[string]string, len(b.running))
	for id, run := range b.running {
		kind[id] = "closed"
		if run {
			kind[id] = "running"
		}
	}
	n := tasksByKind(t, db, kind)
	return n["running"], n["closed"]
}

// backlog is what DescribeTaskQueue reports of the batch's queues' backlog.
func backlog(ctx context.Context, c client.Client, b batch) (int64, error) {
	var n int64
	for _, q := range b.queues {
		resp, err := c.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
			Namespace: namespace, TaskQueue: &taskqueuepb.TaskQueue{Name: q}, TaskQueueType: enumspb.TASK_QUEUE_TYPE_ACTIVITY, ReportStats: true,
		})
		if err != nil {
			return 0, err
		}
		n += resp.GetStats().GetApproximateBacklogCount()
	}
	return n, nil
}

// drain starts activity workers on the batch's queues and returns how
// long until every running workflow completed, and how long until
// DescribeTaskQueue reported no backlog on the batch's queues (-1: not
// within drainBound). Matching deletes the rows of the tasks it dispatched
// or dropped lazily, as its ack level moves, so the table is no measure of
// the drain; its backlog count falls as it acks them.
func drain(ctx context.Context, t *testing.T, c client.Client, b batch) (completed, drained time.Duration) {
	t.Helper()
	start := time.Now()
	var ws []worker.Worker
	for _, q := range b.queues {
		w := worker.New(c, q, worker.Options{})
		w.RegisterActivityWithOptions(closedLiveActivity, activity.RegisterOptions{Name: "closedLiveActivity"})
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	defer func() {
		for _, w := range ws {
			w.Stop()
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, len(b.running))
	for id, run := range b.running {
		if !run {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
				errs <- fmt.Errorf("workflow %s: %w", id, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	completed = time.Since(start)
	// The workers keep polling, so matching keeps the queues loaded and
	// reads them to their ends.
	for {
		if n, err := backlog(ctx, c, b); err == nil && n == 0 {
			return completed, time.Since(start)
		}
		if time.Since(start) > drainBound {
			return completed, -1
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// drainBound bounds how long drain waits for the backlog to be reported
// gone once workers poll.
const drainBound = time.Minute

// noPollerWindow is how long the control's dead backlog is left to
// matching with no pollers. Its backlog-head validator drops a task of a
// closed run only when it sees it a second time at least 600 s after the
// task's creation (server service/matching/task_validation.go,
// taskReaderValidationThreshold, a constant): a bounded window shows that
// nothing goes in it, where waiting out 600 s would add ten minutes to CI.
const noPollerWindow = 60 * time.Second

// noPollers leaves the batch's dead backlog to matching with no pollers
// for noPollerWindow, loading the queues by DescribeTaskQueue every 5 s
// (the test server unloads a queue idle for 20 s), and returns how many
// tasks of closed runs were left at its end.
func noPollers(ctx context.Context, t *testing.T, c client.Client, db *sqlstore.DB, b batch) int {
	t.Helper()
	end := time.Now().Add(noPollerWindow)
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for time.Now().Before(end) {
		if _, err := backlog(ctx, c, b); err != nil {
			t.Logf("no pollers: DescribeTaskQueue: %v", err)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-tick.C:
		}
	}
	_, closed := tasksOf(t, db, b)
	return closed
}

// closedWorkload is how many workflows each batch starts: the server
// engines run a smaller batch, beside SQLite's, to keep CI's time down.
func closedWorkload(engine string) int {
	if engine == "sqlite" {
		return 24
	}
	return 12
}

// TestClosedWorkflowsLive runs the scenario on every engine of the run,
// side by side: each has its own Temporal server and databases. It runs
// alone, before TestInterop and TestWorkerOnTemporal start side by side
// (top-level parallel tests wait for the sequential ones): with every
// test and engine side by side, ten servers at once overran the 2-core CI
// machine (persistence calls timing out) and PostgreSQL's 100 connections.
func TestClosedWorkflowsLive(t *testing.T) {
	s := loadSettings(t)
	for _, e := range s.engines {
		t.Run(e, func(t *testing.T) {
			s.sideBySide(t)
			closedLive(t, s, e)
		})
	}
}

func closedLive(t *testing.T, s settings, engine string) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	tag := "closed_" + engine // a database name: no hyphen
	tdb := newEngineDB(t, s, engine, tag)
	ts := newTemporalServer(t, s, tdb, false, tag)
	if err := ts.start(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: ts.frontend(), Namespace: namespace, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ww := worker.New(c, closedWorkflowQueue, worker.Options{})
	ww.RegisterWorkflow(closedLiveWorkflow)
	if err := ww.Start(); err != nil {
		t.Fatal(err)
	}
	defer ww.Stop()
	db, err := sqlstore.Open(ctx, tdb.tqsDSN, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	metrics := func() string {
		m, err := ts.metrics()
		if err != nil {
			t.Fatalf("metrics: %v", err)
		}
		return m
	}

	n := closedWorkload(engine)
	// Control: matching alone, first with no pollers, then with workers.
	var ctlWin, ruleWin [2]time.Time
	ctlWin[0] = time.Now()
	mCtl := metrics()
	control := startBatch(ctx, t, c, "ctl", n)
	waitPersisted(ctx, t, db, control, n)
	control.closeHalf(ctx, t, c)
	ctlBefore, err := backlog(ctx, c, control)
	if err != nil {
		t.Fatal(err)
	}
	idleLeft := noPollers(ctx, t, c, db, control)
	ctlDrain, ctlGone := drain(ctx, t, c, control)
	ctlAfter, _ := backlog(ctx, c, control)
	ctlWin[1] = time.Now()
	mCtlEnd := metrics()

	ruleWin[0] = time.Now()
	rule := startBatch(ctx, t, c, "rule", n)
	waitPersisted(ctx, t, db, rule, n)
	rule.closeHalf(ctx, t, c)
	before, err := backlog(ctx, c, rule)
	if err != nil {
		t.Fatal(err)
	}
	cfg := scavenger.Config{Rules: scavenger.Rules{ClosedWorkflows: true}}
	cfg.Logger = slog.New(slog.DiscardHandler)
	passStart := time.Now()
	st, err := scavenger.New(db, cfg).Run(ctx)
	passTook := time.Since(passStart)
	if err != nil {
		t.Fatal(err)
	}
	running, closed := tasksOf(t, db, rule)
	if running != n/2 || closed != 0 {
		t.Errorf("after the pass: %d tasks of running runs (want %d), %d of closed runs (want 0)", running, n/2, closed)
	}
	v1 := st.Tables[store.V1]
	// Also the closed runs' workflow tasks that matching dispatched and
	// has not deleted yet (below its ack level).
	if got := v1.TasksDeleted[scavenger.ReasonClosedWorkflow]; got < int64(n/2) {
		t.Errorf("closed_workflow %d, want at least the %d activity tasks", got, n/2)
	}
	after, _ := backlog(ctx, c, rule)
	ruleDrain, ruleGone := drain(ctx, t, c, rule)
	ruleWin[1] = time.Now()
	mRuleEnd := metrics()

	// Temporal's error kinds in the rule's phase against the control's:
	// none may appear that the control lacks (noise aside: cancelled
	// polls, timed-out RPCs, lost connections, as the main suite).
	_, ctlKinds, _, _, err := logKinds(ctlWin, ts.stops, ts.logPaths...)
	if err != nil {
		t.Fatal(err)
	}
	_, ruleKinds, _, _, err := logKinds(ruleWin, ts.stops, ts.logPaths...)
	if err != nil {
		t.Fatal(err)
	}
	ctlKinds.add(metricKinds(mCtlEnd).minus(metricKinds(mCtl)))
	ruleKinds.add(metricKinds(mRuleEnd).minus(metricKinds(mCtlEnd)))
	t.Logf("%s: Temporal's error kinds, control (%d):\n%s", engine, ctlKinds.total(), strings.Join(ctlKinds.lines(), "\n"))
	t.Logf("%s: Temporal's error kinds, with the rule (%d):\n%s", engine, ruleKinds.total(), strings.Join(ruleKinds.lines(), "\n"))
	// As the main suite compares them: the kinds about persistence or
	// ownership, the ones a scavenger could cause, strictly; the others
	// (an RPC's own trouble) reported.
	for k, cnt := range ruleKinds.beyond(ctlKinds) {
		switch {
		case noiseKind(k):
		case ruleKinds.persistence()[k] == 0:
			t.Logf("%s: a kind the control lacks, not about persistence (reported, not compared): %6d  %s", engine, cnt, k)
		default:
			t.Errorf("%s: Temporal error kind not seen in the control: %6d  %s", engine, cnt, k)
		}
	}

	retentionCase(ctx, t, c, db, engine)
	scheduledClosedPass(ctx, t, s, ts, c, db, tdb, tag, n)

	took := func(d time.Duration) string {
		if d < 0 {
			return "not within " + drainBound.String()
		}
		return d.Round(time.Millisecond).String()
	}
	t.Logf("%s, %d history shards, %d workflows a batch:\n| | control (matching alone) | with --closed-workflows |\n|---|---|---|\n"+
		"| dead tasks (closed runs) | %d | %d (deleted: closed_workflow %d, run_deleted %d, expired %d) |\n"+
		"| no pollers, queues loaded for %s | %d of %d dead tasks left | — |\n"+
		"| dead backlog deleted | by matching's drain below | %s (the pass) |\n"+
		"| DescribeTaskQueue backlog 0 | %s after workers started | %s after workers started |\n"+
		"| running workflows completed | %d of %d, %s after workers started | %d of %d, %s after workers started |\n"+
		"| DescribeTaskQueue backlog before / after | %d / %d (after the drain) | %d / %d (after the pass) |",
		engine, 4, n, n/2, n/2, v1.TasksDeleted[scavenger.ReasonClosedWorkflow], v1.TasksDeleted[scavenger.ReasonRunDeleted], v1.TasksDeleted[scavenger.ReasonExpired],
		noPollerWindow, idleLeft, n/2, passTook.Round(time.Millisecond), took(ctlGone), took(ruleGone),
		n/2, n/2, ctlDrain.Round(time.Millisecond), n/2, n/2, ruleDrain.Round(time.Millisecond),
		ctlBefore, ctlAfter, before, after)
}

// scheduledClosedPass runs the rule as a scheduled pass: `schedule create
// --closed-workflows` must describe a pass with the rule on, `schedule
// update` of another setting must keep it, and the pass the schedule
// fires, run by a `tqscavenger worker` process on Temporal's own
// database, must delete the closed runs' tasks and keep the running ones'.
func scheduledClosedPass(ctx context.Context, t *testing.T, s settings, ts *temporalServer, c client.Client, db *sqlstore.DB, tdb *engineDB, tag string, n int) {
	t.Helper()
	const id, queue = "tqs-closed", "tqs-closed-pass"
	sched := startBatch(ctx, t, c, "sched", n)
	waitPersisted(ctx, t, db, sched, n)
	sched.closeHalf(ctx, t, c)
	startWorkerDSN(t, s, ts, tdb.tqsDSN, queue, logPath(s, tag, "worker.log"))
	tqs := func(args ...string) string { return runTQS(ctx, t, s, ts, args...) }
	t.Log(strings.TrimSpace(tqs("schedule", "create", "--db", tdb.tqsDSN, "--schedule-id", id, "--temporal-task-queue", queue,
		"--every", "1h", "--jitter", "0s", "--closed-workflows", "--closed-cluster", "active")))
	defer tqs("schedule", "delete", "--schedule-id", id)
	describe := func(when string) temporalworker.ScheduleState {
		st, err := temporalworker.DescribeSchedule(ctx, c, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Pass == nil || !st.Pass.ClosedWorkflows || st.Pass.ClusterName != "active" || st.Pass.ClosedWorkflowsGlobal {
			t.Fatalf("%s: the schedule's pass %+v, want closed_workflows on for cluster active (not global)", when, st.Pass)
		}
		return st
	}
	describe("schedule create --closed-workflows")
	t.Log(strings.TrimSpace(tqs("schedule", "update", "--schedule-id", id, "--grace", "96h")))
	if st := describe("schedule update --grace 96h"); st.Pass.Grace != 96*time.Hour {
		t.Errorf("schedule update --grace 96h: grace %s", st.Pass.Grace)
	}
	tqs("schedule", "trigger", "--schedule-id", id)
	var st temporalworker.ScheduleState
	for len(st.Recent) == 0 {
		st = describe("the triggered schedule")
		if len(st.Recent) == 0 {
			select {
			case <-ctx.Done():
				t.Fatal("the triggered schedule started no pass")
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	var res temporalworker.PassResult
	if err := c.GetWorkflow(ctx, st.Recent[0].WorkflowID, "").Get(ctx, &res); err != nil {
		t.Fatalf("the scheduled pass: %v", err)
	}
	running, closed := tasksOf(t, db, sched)
	if res.Outcome != "completed" || running != n/2 || closed != 0 {
		t.Errorf("the scheduled pass (%s, %d tasks deleted): %d tasks of running runs left (want %d), %d of closed runs (want 0)",
			res.Outcome, res.Totals.TasksDeleted, running, n/2, closed)
	}
	t.Logf("the scheduled pass with --closed-workflows: %s, %d tasks examined, %d deleted; %d of %d running runs' tasks kept, %d closed runs' left",
		res.Outcome, res.Totals.TasksProcessed, res.Totals.TasksDeleted, running, n/2, closed)
}

// waitPersisted waits until every activity task of the batch is in the
// tasks table (nothing polls its queues: no sync match).
func waitPersisted(ctx context.Context, t *testing.T, db *sqlstore.DB, b batch, n int) {
	t.Helper()
	for last := time.Now(); ; {
		r, c := tasksOf(t, db, b)
		if r+c == n {
			return
		}
		if time.Since(last) > 10*time.Second {
			t.Logf("waiting for the activity tasks: %d of %d persisted", r+c, n)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("activity tasks persisted: %d of %d", r+c, n)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
