package interop

// Issue 39's finding 2 beside a live Temporal server: workflows on queues
// nobody polls, terminated, most of them then deleted with
// DeleteWorkflowExecution (their executions and current rows go, as
// retention deletes them), two left running. --closed-workflows must
// complete, delete the terminated runs' tasks and keep and count the
// deleted runs' ones (run_not_found); --closed-deleted-runs must delete
// those too, on the history shard count it proves. The running runs'
// tasks stay in both.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// The retention case's workflows: ret-0 … ret-24 terminated and deleted,
// ret-25 … ret-29 terminated, ret-30 and ret-31 running.
const (
	retDeleted    = 25
	retTerminated = 5
	retRunning    = 2
)

// retentionCase runs the scenario on the server c talks to; db is its
// database. The namespace's retention is 24 h (server_test.go), the pass
// runs 72 h ahead of the clock, on the case's queues only.
func retentionCase(ctx context.Context, t *testing.T, c client.Client, db *sqlstore.DB, engine string) {
	t.Helper()
	n := retDeleted + retTerminated + retRunning
	b := startBatch(ctx, t, c, "ret", n)
	waitPersisted(ctx, t, db, b, n)
	kind := map[string]string{}
	for i := range n {
		id := fmt.Sprintf("ret-%d", i)
		switch {
		case i < retDeleted+retTerminated:
			if err := c.TerminateWorkflow(ctx, id, "", "issue 39: a true retention case"); err != nil {
				t.Fatal(err)
			}
			kind[id] = "terminated"
			if i < retDeleted {
				kind[id] = "deleted"
			}
		default:
			kind[id] = "running"
		}
	}
	for id, k := range kind {
		if k != "deleted" {
			continue
		}
		req := &workflowservice.DeleteWorkflowExecutionRequest{Namespace: namespace, WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id}}
		if _, err := c.WorkflowService().DeleteWorkflowExecution(ctx, req); err != nil {
			t.Fatalf("DeleteWorkflowExecution %s: %v", id, err)
		}
	}
	// History deletes the rows in the background: wait until no deleted
	// workflow can be described.
	for id, k := range kind {
		for k == "deleted" {
			_, err := c.DescribeWorkflowExecution(ctx, id, "")
			var nf *serviceerror.NotFound
			if errors.As(err, &nf) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s still described after DeleteWorkflowExecution: %v", id, err)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}

	// The case's queues only: their root partitions and the others
	// (/_sys/NAME/N), which a glob's * does not cross into.
	pass := func(deletedRuns bool) (closed, deleted, notFound int64) {
		t.Helper()
		for _, glob := range []string{"ret-act-*", "/_sys/ret-act-*/*"} {
			cfg := scavenger.Config{Rules: scavenger.Rules{ClosedWorkflows: true, ClosedDeletedRuns: deletedRuns,
				QueueGlob: glob, Grace: 1000 * time.Hour}}
			cfg.Logger = slog.New(slog.DiscardHandler)
			cfg.Now = func() time.Time { return time.Now().Add(72 * time.Hour) }
			st, err := scavenger.New(db, cfg).Run(ctx)
			if err != nil || st.Outcome != scavenger.Completed {
				t.Fatalf("closed-deleted-runs %t, queues %s: outcome %q, %v; want completed", deletedRuns, glob, st.Outcome, err)
			}
			v1 := st.Tables[store.V1]
			closed += v1.TasksDeleted[scavenger.ReasonClosedWorkflow]
			deleted += v1.TasksDeleted[scavenger.ReasonRunDeleted]
			notFound += st.TasksRunNotFound
		}
		return closed, deleted, notFound
	}
	check := func(name string, want map[string]int) {
		t.Helper()
		got := tasksByKind(t, db, kind)
		for _, k := range []string{"deleted", "terminated", "running"} {
			if got[k] != want[k] {
				t.Errorf("%s: %d tasks of %s runs left, want %d", name, got[k], k, want[k])
			}
		}
	}
	check("before", map[string]int{"deleted": retDeleted, "terminated": retTerminated, "running": retRunning})

	closed, deleted, notFound := pass(false)
	check("--closed-workflows", map[string]int{"deleted": retDeleted, "running": retRunning})
	if closed != retTerminated || deleted != 0 || notFound != retDeleted {
		t.Errorf("--closed-workflows: closed_workflow %d, run_deleted %d, run_not_found %d; want %d, 0, %d", closed, deleted, notFound, retTerminated, retDeleted)
	}

	closed, deleted, notFound = pass(true)
	check("--closed-deleted-runs", map[string]int{"running": retRunning})
	if closed != 0 || deleted != retDeleted || notFound != 0 {
		t.Errorf("--closed-deleted-runs: closed_workflow %d, run_deleted %d, run_not_found %d; want 0, %d, 0", closed, deleted, notFound, retDeleted)
	}
	t.Logf("%s: retention case: %d deleted runs' tasks kept and counted by --closed-workflows, deleted by --closed-deleted-runs; %d terminated runs' tasks deleted; %d running runs' tasks kept",
		engine, retDeleted, retTerminated, retRunning)
}

// tasksByKind counts the persisted activity tasks of the workflows in
// kind, by their kind. Activity tasks only: the workflow tasks matching
// dispatched stay in the table until its ack level lets it delete them.
func tasksByKind(t *testing.T, db *sqlstore.DB, kind map[string]string) map[string]int {
	t.Helper()
	ctx := context.Background()
	out := map[string]int{}
	var after *store.QueueKey
	for {
		refs, err := db.ListTaskQueueIDs(ctx, store.V1, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range refs {
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
				if k, ok := kind[info.Data.WorkflowID]; ok {
					out[k]++
				}
			}
		}
		if len(refs) < 1000 {
			return out
		}
		k := refs[len(refs)-1].QueueKey
		after = &k
	}
}
