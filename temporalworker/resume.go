package temporalworker

// How a retried partition resumes: the earlier attempts and the
// checkpoint the last heartbeat carries, and when that checkpoint is left.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/activity"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

// resumeFrom returns the earlier attempts that the last heartbeat last
// records, its own attempt last: one of this build, or of a build before
// ProgressVersion 2 (its Counted, covering every attempt up to its own,
// their tail unknown: the work they did after it is redone or left).
func resumeFrom(last Progress) []AttemptTotals {
	if last.Version < 2 {
		return []AttemptTotals{{Attempt: last.Attempt, From: 1, Totals: last.Counted, TailUnknown: true}}
	}
	out := append([]AttemptTotals(nil), last.Earlier...)
	return append(out, AttemptTotals{Attempt: last.Attempt, Totals: last.ThisAttempt, TailUnknown: !last.Final})
}

// startFrom returns the progress p of a new attempt with what the last
// heartbeat of an earlier one carries: the earlier attempts' counts, and
// its checkpoint if it belongs to the pass of cfg over the database id:
// it fits the pass (scavenger.Checkpoint.Fits, the test Begin and Run
// make too) and its positions the tables (Checkpoint.FitsTables, Run's
// test). Details that cannot be read or are of another partition, or a
// checkpoint that does not belong (written under other settings, against
// another database's tables, or before the tables changed), are logged
// and left: the partition starts from its first hash, which redoes work
// and skips none, rather than fail on every retry. The error says why
// a checkpoint the details held was left (PartitionResult.ResumeRefused).
func (a *Activities) startFrom(ctx context.Context, log *slog.Logger, p Progress, cfg scavenger.Config, id string) (Progress, error) {
	if !activity.HasHeartbeatDetails(ctx) {
		return p, nil
	}
	var last Progress
	switch err := activity.GetHeartbeatDetails(ctx, &last); {
	case err != nil:
		log.Warn("heartbeat details unreadable: the partition starts from its first hash", "err", err)
		return p, fmt.Errorf("heartbeat details unreadable: %w", err)
	case last.Partition != p.Partition || last.Partitions != p.Partitions:
		log.Warn("heartbeat details of another partition: the partition starts from its first hash",
			"recorded", fmt.Sprintf("%d/%d", last.Partition, last.Partitions))
		return p, fmt.Errorf("heartbeat details of partition %d/%d", last.Partition, last.Partitions)
	}
	p.Earlier = resumeFrom(last)
	if last.Checkpoint == nil {
		return p, nil
	}
	err := last.Checkpoint.Fits(cfg, id)
	if err == nil {
		err = last.Checkpoint.FitsTables(ctx, a.DB)
	}
	if errors.Is(err, scavenger.ErrCheckpointMismatch) {
		log.Warn("the heartbeat's checkpoint does not fit this pass: the partition starts from its first hash", "err", err)
		return p, err
	}
	// Not checked against the tables (the store's error): Run checks
	// again, under the lock.
	p.Checkpoint = last.Checkpoint
	return p, nil
}
