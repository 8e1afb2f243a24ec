package temporalworker

import (
	"context"
	"fmt"
	"time"

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

// HeartbeatThrottle is the longest the SDK holds a partition's heartbeat
// before it sends it (worker.Options.MaxHeartbeatThrottleInterval): a
// heartbeat carries the checkpoint, and the SDK's own bound, 0.8 × the
// heartbeat timeout up to 60 s, would leave a killed attempt's last
// recorded position up to 48 s behind its work. Not shorter: the SDK
// also bounds each heartbeat call by it, and cancels the activity when
// one times out (at 1 s, a loaded frontend cancelled a partition in the
// interop suite).
const HeartbeatThrottle = 5 * time.Second

// stopMargin is how much longer than the partitions' shutdown timeout
// the worker waits for its activities: the time to record the final
// heartbeat and report the attempt's end. The SDK cancels the context
// it reports with when WorkerStopTimeout is over; an end reported after
// it is lost, and the server retries only after the heartbeat timeout.
const stopMargin = 15 * time.Second

// WorkerOptions returns the options of a worker that runs at most
// maxPartitions partition activities at once and gives them shutdown on
// a stop (Activities.ShutdownTimeout, 0: the default): a WorkerStopTimeout
// longer than it, and heartbeats sent within HeartbeatThrottle.
func WorkerOptions(maxPartitions int, shutdown time.Duration) worker.Options {
	if shutdown <= 0 {
		shutdown = DefaultShutdownTimeout
	}
	return worker.Options{
		MaxConcurrentActivityExecutionSize: maxPartitions,
		WorkerStopTimeout:                  shutdown + stopMargin,
		MaxHeartbeatThrottleInterval:       HeartbeatThrottle,
	}
}
