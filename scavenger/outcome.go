package scavenger

// How a pass ended: its outcome and the error Run returns for it, the
// error of its failed jobs, and what the pass logs of what it deleted.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/tqscavenger/tqscavenger/store"
)

// deletedAttrs are the log attributes of what a pass deleted. A dry run's
// say so: its deleted counts are 0, and what it would have deleted is a
// group of its own (would_delete.tasks=750), never under a *_deleted key.
func deletedAttrs(st Stats) []any {
	attrs := []any{"queues_deleted", st.QueuesDeleted, "tasks_deleted", st.TasksDeleted}
	if st.DryRun {
		attrs = append(attrs, "dry_run", true, slog.Group("would_delete", "queues", st.WouldDeleteQueues, "tasks", st.WouldDeleteTasks))
	}
	return attrs
}

// outcome decides how a pass ended, and the error Run returns for it, by
// what ended it, not by the type of the error it ended with: a lost lock
// reaches the pass as a cancellation (its statements cancelled, a check's
// deadline exceeded) and is a failure all the same. caller is the caller's
// context, ctx the pass's own (caller's, cancelled from within with a
// cause); shutDown: Shutdown stopped work the pass had yet to do.
//
//   - a lost lock (the watcher's cause, or the final check's error): Failed
//   - Shutdown, or the caller's context ended: Interrupted
//   - anything else that stopped the pass or failed a job: Failed
func outcome(caller, ctx context.Context, st Stats, err error, shutDown bool) (Outcome, error) {
	var cause error
	if ctx.Err() != nil {
		cause = context.Cause(ctx)
	}
	switch {
	case errors.Is(cause, store.ErrLockLost):
		return Failed, cause
	case errors.Is(err, store.ErrLockLost):
		return Failed, err
	case shutDown:
		return Interrupted, ErrShutdown
	case caller.Err() != nil:
		return Interrupted, context.Cause(caller)
	case errors.Is(cause, ErrShutdown):
		// Shutdown's context ended: the pass was shut down.
		return Interrupted, cause
	case cause != nil:
		// Stopped from within for a reason of its own.
		return Failed, cause
	case err != nil:
		return Failed, err
	case st.Errors > 0:
		return Failed, &JobsFailedError{Count: st.Errors, ByCause: st.FailuresByCause, First: st.Failures}
	case st.BadRowCount > 0:
		return CompletedBadRows, nil
	}
	return Completed, nil
}

// ErrJobsFailed is wrapped by Run's error when jobs failed after their
// retries (see JobsFailedError).
var ErrJobsFailed = errors.New("jobs failed")

// JobsFailedError reports the jobs of a pass that failed. It wraps
// ErrJobsFailed and the first failure's error.
type JobsFailedError struct {
	Count   int64
	ByCause map[Cause]int64
	First   []Failure
}

func (e *JobsFailedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d jobs failed", e.Count)
	causes := slices.Sorted(maps.Keys(e.ByCause))
	for i, c := range causes {
		sep := ", "
		if i == 0 {
			sep = " ("
		}
		fmt.Fprintf(&b, "%s%d %s", sep, e.ByCause[c], c)
	}
	if len(causes) > 0 {
		b.WriteString(")")
	}
	if len(e.First) > 0 {
		fmt.Fprintf(&b, "; first: %s", e.First[0])
	}
	return b.String()
}

func (e *JobsFailedError) Unwrap() []error {
	errs := []error{ErrJobsFailed}
	if len(e.First) > 0 {
		errs = append(errs, e.First[0].Err)
	}
	return errs
}
