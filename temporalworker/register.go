package temporalworker

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Register registers the pass workflow and a's partition activity under
// their names (PassWorkflowName, PartitionActivityName).
func Register(r worker.Registry, a *Activities) {
	r.RegisterWorkflowWithOptions(PassWorkflow, workflow.RegisterOptions{Name: PassWorkflowName})
	r.RegisterActivityWithOptions(a.ScavengePartition, activity.RegisterOptions{Name: PartitionActivityName})
}

// StartOptions returns the options of a pass workflow with id id on
// taskQueue: one pass at a time per id (a start while a pass of that id
// runs fails with WorkflowExecutionAlreadyStarted), as Temporal's own
// scanner runs as a singleton.
func StartOptions(id, taskQueue string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// Without it the SDK hands back the running pass instead of an
		// error, and the caller would not know its start was refused.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}
}

// StartPass starts a pass workflow of d with StartOptions.
func StartPass(ctx context.Context, c client.Client, id, taskQueue string, d PassDescription) (client.WorkflowRun, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	run, err := c.ExecuteWorkflow(ctx, StartOptions(id, taskQueue), PassWorkflowName, d)
	if err != nil {
		return nil, fmt.Errorf("start pass %s: %w", id, err)
	}
	return run, nil
}
