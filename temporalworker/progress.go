package temporalworker

// What a partition attempt records and returns: its heartbeat
// (Progress), the counts of each attempt, and its PartitionResult.

import (
	"fmt"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

// Progress is a partition activity's heartbeat. Its Checkpoint holds the
// pass's low-water marks (scavenger.Checkpoint): positions only, never
// what was decided about a row, each before every unfinished or deferred
// job, so that a retry resuming from it redoes at most work that is safe
// to redo and skips none.
//
// Heartbeats of builds before ProgressVersion 2 carry no Version,
// ThisAttempt, Earlier or Final: a retry reads their Counted as the work of
// every attempt up to theirs, with an unknown tail (see resumeFrom).
type Progress struct {
	Version    int   `json:"version,omitempty"`
	Partition  int   `json:"partition"`
	Partitions int   `json:"partitions"`
	Attempt    int32 `json:"attempt"`
	// Checkpoint is the pass's positions; nil before the first.
	Checkpoint *scavenger.Checkpoint `json:"checkpoint,omitempty"`
	// Counted is the work of every attempt so far, each earlier one up to
	// its last heartbeat: the sum of Earlier and ThisAttempt.
	Counted Totals `json:"counted"`
	// ThisAttempt is this attempt's exact counts at this heartbeat.
	ThisAttempt Totals `json:"this_attempt"`
	// Earlier are the attempts before this one, each as its last
	// heartbeat recorded it.
	Earlier []AttemptTotals `json:"earlier,omitempty"`
	// Final: the attempt's pass had ended when it recorded this: it did
	// nothing after it.
	Final bool `json:"final,omitempty"`
}

// ProgressVersion is the Progress layout this build writes.
const ProgressVersion = 2

// AttemptTotals are one attempt's counts as its last heartbeat recorded
// them.
type AttemptTotals struct {
	Attempt int32 `json:"attempt"`
	// From, when set, is the first of the attempts From..Attempt these
	// totals cover together (a heartbeat of an older build).
	From   int32  `json:"from,omitempty"`
	Totals Totals `json:"totals"`
	// TailUnknown: the attempt may have done work after its last
	// heartbeat (it was killed or timed out): that work is done but not
	// counted.
	TailUnknown bool `json:"tail_unknown,omitempty"`
}

// String names the attempt(s).
func (a AttemptTotals) String() string {
	if a.From > 0 && a.From != a.Attempt {
		return fmt.Sprintf("attempts %d-%d", a.From, a.Attempt)
	}
	return fmt.Sprintf("attempt %d", a.Attempt)
}

// PartitionResult is how one partition of a pass ended.
type PartitionResult struct {
	Partition int    `json:"partition"`
	Range     string `json:"range"`
	// Outcome is the scavenger.Outcome of the partition, or "failed" with
	// Error set when the activity gave up.
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	// Attempt is the attempt that finished (1: no retry).
	Attempt int32 `json:"attempt"`
	// Resumed says the finishing attempt resumed from an earlier one's
	// heartbeat, at the positions ResumedFrom.
	Resumed     bool                     `json:"resumed"`
	ResumedFrom []scavenger.WalkPosition `json:"resumed_from,omitempty"`
	// ResumeRefused says why the finishing attempt did not resume from
	// the last heartbeat's checkpoint (damaged, of other settings, a
	// position past its table's last row, …) and started from the
	// partition's first hash instead; empty if it resumed or had none.
	ResumeRefused string `json:"resume_refused,omitempty"`
	// ThisAttempt counts the work of the finishing attempt;
	// EarlierAttempts that of the attempts before it, up to their last
	// heartbeat. Rows an earlier attempt examined past its last mark are
	// examined again, and counted twice; a delete is never redone (the row
	// is gone), so the deletes an earlier attempt made past its last
	// heartbeat are not counted. Totals is their sum.
	ThisAttempt     Totals `json:"this_attempt"`
	EarlierAttempts Totals `json:"earlier_attempts"`
	Totals          Totals `json:"totals"`
	// Attempts are the earlier attempts one by one, as their last
	// heartbeat recorded them.
	Attempts []AttemptTotals `json:"attempts,omitempty"`
	// UnknownTails names the attempts that may have worked after their
	// last heartbeat (killed, timed out). LowerBound is set exactly when
	// there is one: the deletes of Totals may then fall short of the rows
	// really deleted, never exceed them; otherwise they are exact.
	UnknownTails []string `json:"unknown_tails,omitempty"`
	LowerBound   bool     `json:"lower_bound"`
}

// setEarlier records the earlier attempts in r.
func (r *PartitionResult) setEarlier(earlier []AttemptTotals) {
	r.Attempts, r.EarlierAttempts, r.UnknownTails = earlier, Totals{}, nil
	for _, a := range earlier {
		r.EarlierAttempts.Add(a.Totals)
		if a.TailUnknown {
			r.UnknownTails = append(r.UnknownTails, a.String())
		}
	}
	r.LowerBound = len(r.UnknownTails) > 0
}
