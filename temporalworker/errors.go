package temporalworker

// How a partition attempt fails: the error types of the activity, which
// are retried, and the error an ended pass is reported with.

import (
	"context"
	"errors"
	"log/slog"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
)

// The error types of a failed partition activity (ApplicationError.Type).
// The first four are non-retryable: retrying cannot help.
const (
	ErrTypeBadInput       = "TqsBadInput"       // the description or partition cannot run
	ErrTypeWrongDatabase  = "TqsWrongDatabase"  // the worker reaches another database
	ErrTypeSchemaMismatch = "TqsSchemaMismatch" // not a Temporal task store the scavenger knows
	ErrTypeRefused        = "TqsRefused"        // the database refuses writes (read-only, disk full)
	ErrTypeLockHeld       = "TqsLockHeld"       // another pass holds an overlapping range: retried
	ErrTypeUnavailable    = "TqsUnavailable"    // the database cannot be reached: retried
	ErrTypePassFailed     = "TqsPassFailed"     // the pass failed (failed jobs, a lost lock): retried
	// ErrTypeWorkerShutdown: the worker stopped the partition at a clean
	// point as it shut down; retried at once on another worker, from the
	// final heartbeat.
	ErrTypeWorkerShutdown = "TqsWorkerShutdown"
)

// nonRetryable lists the error types the workflow's retry policy does not
// retry, for activities started without NewNonRetryableApplicationError.
var nonRetryable = []string{ErrTypeBadInput, ErrTypeWrongDatabase, ErrTypeSchemaMismatch, ErrTypeRefused}

// failed returns the activity's error for a pass that ended with st and
// err, after its final heartbeat.
func (a *Activities) failed(ctx context.Context, log *slog.Logger, hb *heartbeater, stop *stopper, st scavenger.Stats, err error) error {
	// The attempt's last heartbeat: its position and exact counts, with
	// nothing done after it. The SDK sends it before it reports the
	// attempt's end. (Not after a timeout: the server no longer takes
	// it, and keeps the last one before, the attempt's tail unknown.)
	if ctx.Err() == nil || errors.Is(ctx.Err(), context.Canceled) {
		hb.final(totalsOf(st))
	}
	cause := context.Cause(ctx)
	switch {
	case stop.stopped() || errors.Is(cause, worker.ErrWorkerShutdown):
		// The worker is shutting down: a retryable failure, so that the
		// next attempt starts on another worker after the retry policy's
		// initial interval, from the final heartbeat, instead of after the
		// heartbeat timeout.
		log.Info("partition interrupted: the worker is stopping", "outcome", string(st.Outcome),
			"queues_processed", st.QueuesProcessed, "tasks_deleted", st.TasksDeleted)
		return temporal.NewApplicationErrorWithOptions("partition interrupted: the worker is stopping", ErrTypeWorkerShutdown,
			// Benign: expected on every redeploy, the SDK logs it at debug.
			temporal.ApplicationErrorOptions{Cause: err, Details: []any{hb.progress()}, Category: temporal.ApplicationErrorCategoryBenign})
	case errors.Is(ctx.Err(), context.Canceled) && cancelledByServer(cause):
		// Cancelled by the workflow, whatever the cause the SDK gives (a
		// CanceledError, or NotFound once the activity is gone): reported
		// as a cancellation and never retried; its details are the last
		// progress.
		log.Info("partition cancelled", "outcome", string(st.Outcome), "queues_processed", st.QueuesProcessed, "tasks_deleted", st.TasksDeleted)
		return temporal.NewCanceledError(hb.progress())
	case ctx.Err() != nil:
		// Timed out, or the SDK gave up on a heartbeat (it cancels the
		// activity when a heartbeat call fails for good): Temporal
		// retries it, from the last heartbeat.
		log.Warn("partition timed out or lost its heartbeat", "err", err, "cause", cause)
		return ctx.Err()
	}
	log.Error("partition failed", "err", err)
	return classify(err, hb.progress())
}

// cancelledByServer reports whether the cause the SDK cancelled an
// activity with is the server's cancellation: a CanceledError, NotFound
// (the activity is gone: its workflow was cancelled or closed), or a plain
// context.Canceled (the test environment's and older SDKs').
func cancelledByServer(cause error) bool {
	var nf *serviceerror.NotFound
	return temporal.IsCanceledError(cause) || errors.As(cause, &nf) || errors.Is(cause, context.Canceled)
}

// classify turns a pass's or a database's error into the activity's:
// non-retryable where retrying cannot help, retryable otherwise (bounded
// by the activity's retry policy).
func classify(err error, details ...any) error {
	var typ string
	retry := true
	var jf *scavenger.JobsFailedError
	switch {
	case errors.Is(err, store.ErrSchema):
		typ, retry = ErrTypeSchemaMismatch, false
	case errors.Is(err, scavenger.ErrShortGrace):
		typ, retry = ErrTypeBadInput, false
	case errors.Is(err, store.ErrLocked):
		typ = ErrTypeLockHeld
	case errors.Is(err, store.ErrReadOnly), errors.Is(err, store.ErrDiskFull):
		typ, retry = ErrTypeRefused, false
	case errors.As(err, &jf) && refusedOnly(jf):
		typ, retry = ErrTypeRefused, false
	case errors.Is(err, store.ErrLockLost), errors.As(err, &jf):
		typ = ErrTypePassFailed
	case errors.Is(err, scavenger.ErrCheckpointMismatch):
		// The pass refused the heartbeat's checkpoint that startFrom
		// accepted: the tables changed in between (or could not be read
		// then). The retry asks startFrom again, and starts afresh.
		typ = ErrTypePassFailed
	default:
		// Unreachable, transient, or unknown: worth another attempt.
		typ = ErrTypeUnavailable
	}
	// The details carry the attempt's final progress, for the workflow's
	// totals if this is the last attempt.
	return temporal.NewApplicationErrorWithOptions(err.Error(), typ, temporal.ApplicationErrorOptions{
		NonRetryable: !retry, Cause: err, Details: details})
}

// refusedOnly reports whether every failed job failed because the
// database refuses writes.
func refusedOnly(jf *scavenger.JobsFailedError) bool {
	var n int64
	for c, k := range jf.ByCause {
		if c != scavenger.CauseReadOnly && c != scavenger.CauseDiskFull {
			return false
		}
		n += k
	}
	return n > 0
}
