package cli

// What run prints when its pass could not start (the database not
// reached, the lock held, the schema check failed): the same outcome
// document a pass prints, so that a script reading --output json or
// --stats-json always has one to read.

import (
	"context"
	"errors"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

// The steps of a start that failed, as "failed_step" names them.
const (
	stepConnect = "connect"
)

// failedStart prints the outcome of a pass that did not start at step,
// failing with err, and returns err. Bad input (exit status 2) prints
// none, as before any work: no pass was tried, and a "failed" outcome
// beside status 2 would read as a database's failure.
func (r *runCmd) failedStart(ctx context.Context, e *env, dryRun bool, step string, err error) error {
	status := exitStatus(err)
	if status == ExitUsage {
		return err
	}
	st := scavenger.Stats{Outcome: scavenger.Failed, Cause: scavenger.CauseError, DryRun: dryRun}
	var sig signalError
	if errors.As(context.Cause(ctx), &sig) {
		st.Outcome, st.Cause, status = scavenger.Interrupted, "", sig.status()
	}
	m := statsMap(st, 0)
	m["failed_step"] = step
	m["error"] = oneLine(err)
	m["exit_status"] = status
	if r.output == "json" {
		if werr := writeJSON(e.stdout, m); werr != nil {
			return errors.Join(err, werr)
		}
	}
	if r.statsJSON != "" {
		if werr := writeStatsDoc(r.statsJSON, m); werr != nil {
			return errors.Join(err, werr)
		}
	}
	return err
}
