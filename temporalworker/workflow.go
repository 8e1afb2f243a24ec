package temporalworker

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

// PassWorkflowName is the pass workflow's registered name.
const PassWorkflowName = "tqscavenger.Pass"

// ErrTypePassIncomplete is the type of the workflow's error when a
// partition failed; its details hold the PassResult.
const ErrTypePassIncomplete = "TqsPassIncomplete"

// PassResult is a pass's result: the totals and each partition's outcome.
type PassResult struct {
	// Outcome is "completed" when every partition completed (or
	// completed with bad rows), "failed" otherwise.
	Outcome string `json:"outcome"`
	Failed  int    `json:"failed_partitions"`
	Totals  Totals `json:"totals"`
	// LowerBound is set exactly when some attempt may have worked after
	// its last heartbeat (UnknownTails names them, "partition 1 attempt
	// 2"): the deletes of Totals may then fall short of the rows really
	// deleted, never exceed them. Otherwise they are exact.
	LowerBound   bool              `json:"lower_bound"`
	UnknownTails []string          `json:"unknown_tails,omitempty"`
	Partitions   []PartitionResult `json:"partitions"`
	Started      time.Time         `json:"started"`
	Elapsed      time.Duration     `json:"elapsed"`
}

// PassWorkflow makes one pass as d.Partitions partition activities in
// parallel and returns their totals. If a partition fails after its
// retries, the others still run to their end, and the workflow fails with
// an ApplicationError of type ErrTypePassIncomplete whose details are the
// PassResult: a failed pass shows as a failed workflow. A bad description
// fails it at once. Cancelling the workflow cancels the activities and
// waits for them to stop.
func PassWorkflow(ctx workflow.Context, d PassDescription) (PassResult, error) {
	started := workflow.Now(ctx)
	if err := d.Validate(); err != nil {
		return PassResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadInput, nil)
	}
	d = d.WithDefaults()
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: d.PartitionTimeout,
		HeartbeatTimeout:    d.HeartbeatTimeout,
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        int32(d.MaxAttempts),
			NonRetryableErrorTypes: nonRetryable,
		},
	})
	// Version 1 counts what every attempt of a failed partition did, up to
	// its last heartbeat, and names the attempts whose tail is unknown.
	honest := workflow.GetVersion(ctx, "honest-totals", workflow.DefaultVersion, 1) >= 1
	log := workflow.GetLogger(ctx)
	log.Info("pass started", "partitions", d.Partitions, "database", d.DatabaseIdentity)
	futures := make([]workflow.Future, d.Partitions)
	for i := range futures {
		futures[i] = workflow.ExecuteActivity(actx, PartitionActivityName, PartitionInput{Pass: d, Partition: i})
	}
	res := PassResult{Started: started, Outcome: "completed"}
	var firstErr error
	for i, f := range futures {
		var pr PartitionResult
		err := f.Get(ctx, &pr)
		if err != nil {
			r := scavenger.Partition{Index: i, Count: d.Partitions}.Range()
			pr = PartitionResult{Partition: i, Range: r.String(), Outcome: "failed", Error: err.Error()}
			if honest {
				lastProgress(err, &pr)
			}
			res.Failed++
			if firstErr == nil {
				firstErr = err
			}
		}
		res.Totals.Add(pr.Totals)
		if honest {
			for _, u := range pr.UnknownTails {
				res.UnknownTails = append(res.UnknownTails, fmt.Sprintf("partition %d %s", i, u))
			}
			res.LowerBound = len(res.UnknownTails) > 0
		}
		res.Partitions = append(res.Partitions, pr)
	}
	res.Elapsed = workflow.Now(ctx).Sub(started)
	if ctx.Err() != nil {
		// Cancelled: every activity has stopped (WaitForCancellation).
		return res, ctx.Err()
	}
	if res.Failed > 0 {
		res.Outcome = "failed"
		log.Error("pass failed", "failed_partitions", res.Failed, "err", firstErr)
		return res, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("pass failed: %d of %d partitions failed; first: %v", res.Failed, d.Partitions, firstErr),
			ErrTypePassIncomplete, firstErr, res)
	}
	if w := res.Totals.WouldDelete; w != nil {
		// A dry run: nothing was deleted.
		log.Info("pass completed", "tasks_deleted", res.Totals.TasksDeleted, "queues_deleted", res.Totals.QueuesDeleted,
			"dry_run", true, "would_delete_tasks", w.Tasks, "would_delete_queues", w.Queues)
		return res, nil
	}
	log.Info("pass completed", "tasks_deleted", res.Totals.TasksDeleted, "queues_deleted", res.Totals.QueuesDeleted,
		"lower_bound", res.LowerBound, "unknown_tails", res.UnknownTails)
	return res, nil
}

// lastProgress fills the counts of a partition that ended in err from the
// last progress its attempts recorded: the details of its last attempt's
// error (a failure, a cancellation) or, when it timed out, its last
// heartbeat.
func lastProgress(err error, pr *PartitionResult) {
	var (
		p  Progress
		ok bool
		ae *temporal.ApplicationError
		ce *temporal.CanceledError
		te *temporal.TimeoutError
	)
	switch {
	case errors.As(err, &ae) && ae.HasDetails():
		ok = ae.Details(&p) == nil
	case errors.As(err, &ce) && ce.HasDetails():
		ok = ce.Details(&p) == nil
	case errors.As(err, &te) && te.HasLastHeartbeatDetails():
		ok = te.LastHeartbeatDetails(&p) == nil
	}
	if !ok || p.Partitions == 0 {
		return
	}
	pr.Attempt = p.Attempt
	pr.setEarlier(resumeFrom(p))
	pr.Totals = pr.EarlierAttempts
}
