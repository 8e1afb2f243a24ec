package interop

// TestClosedWorkflowsLive (issue 31): the closed-workflow rule beside a live
// Temporal server with 4 history shards. Workflows schedule activities on
// queues no worker polls, with no schedule-to-start timeout, so their
// tasks are persisted and never expire; half the workflows are terminated
// or cancelled. A pass with the rule must delete exactly the closed runs'
// tasks; then workers start on those queues and every running workflow
// must complete. A control batch, on other queues of the same server,
// leaves the dead tasks to matching: how long matching takes to drain
// them is the figure the rule is measured against.

import (
	"context"
	"fmt"
	"log/slog"
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
	"github.com/tqscavenger/tqscavenger/wire"
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
	ctx := context.Background()
	var after *store.QueueKey
	for {
		refs, err := db.ListTaskQueueIDs(ctx, store.V1, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range refs {
			// Activity tasks only: the workflow tasks matching dispatched
			// stay in the table until its ack level lets it delete them.
			if _, _, typ, err := wire.ParseQueueRowID(ref.ID); err != nil || typ != wire.TaskTypeActivity {
				continue
			}
			rows, err := db.ReadTasks(ctx, store.V1, ref.QueueKey, nil, 100000)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				info, err := wire.DecodeAllocatedTaskInfo(r.Encoding, r.Data)
				if err != nil {
					t.Fatal(err)
				}
				run, ok := b.running[info.Data.WorkflowID]
				switch {
				case !ok:
				case run:
					running++
				default:
					closed++
				}
			}
		}
		if len(refs) < 1000 {
			return running, closed
		}
		k := refs[len(refs)-1].QueueKey
		after = &k
	}
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

// drain starts activity workers on the batch's queues and returns how long
// until every running workflow completed.
func drain(ctx context.Context, t *testing.T, c client.Client, db *sqlstore.DB, b batch) time.Duration {
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
	// Matching deletes the tasks it dispatched (or dropped) lazily, as its
	// ack level moves: the drain is over when every running workflow has
	// completed.
	return time.Since(start)
}

func TestClosedWorkflowsLive(t *testing.T) {
	s := loadSettings(t)
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Minute)
	defer cancel()
	const tag = "closed"
	tdb := newEngineDB(t, s, "sqlite", tag)
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

	const n = 24
	// Control: matching alone drains the dead backlog once workers come.
	control := startBatch(ctx, t, c, "ctl", n)
	waitPersisted(ctx, t, db, control, n)
	control.closeHalf(ctx, t, c)
	ctlBefore, err := backlog(ctx, c, control)
	if err != nil {
		t.Fatal(err)
	}
	ctlDrain := drain(ctx, t, c, db, control)
	ctlAfter, _ := backlog(ctx, c, control)

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
	if got := v1.TasksDeleted[scavenger.ReasonClosedWorkflow]; got < n/2 {
		t.Errorf("closed_workflow %d, want at least the %d activity tasks", got, n/2)
	}
	after, _ := backlog(ctx, c, rule)
	ruleDrain := drain(ctx, t, c, db, rule)
	t.Logf("\n| | control (matching alone) | with --closed-workflows |\n|---|---|---|\n"+
		"| dead tasks (closed runs) | %d | %d (deleted: closed_workflow %d, run_deleted %d, expired %d; pass %s) |\n"+
		"| running workflows completed | %d of %d | %d of %d |\n"+
		"| drain after workers start | %s | %s |\n"+
		"| DescribeTaskQueue backlog before / after | %d / %d (after the drain) | %d / %d (after the pass) |",
		n/2, n/2, v1.TasksDeleted[scavenger.ReasonClosedWorkflow], v1.TasksDeleted[scavenger.ReasonRunDeleted], v1.TasksDeleted[scavenger.ReasonExpired], passTook.Round(time.Millisecond),
		n/2, n/2, n/2, n/2, ctlDrain.Round(time.Millisecond), ruleDrain.Round(time.Millisecond),
		ctlBefore, ctlAfter, before, after)
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
