package temporalworker

// The partition activity: its input, the Activities a worker registers,
// and ScavengePartition, which sets a partition's pass up and runs it.

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
)

// PartitionActivityName is the partition activity's registered name.
const PartitionActivityName = "tqscavenger.ScavengePartition"

// PartitionInput is a partition activity's input: the pass and which of
// its partitions to scavenge.
type PartitionInput struct {
	Pass      PassDescription `json:"pass"`
	Partition int             `json:"partition"`
}

// Activities holds the partition activity of a worker connected to one
// database.
type Activities struct {
	// DB is the database the worker is connected to: every partition
	// is set up through scavenger.Begin over it, and refused if the
	// pass is meant for another database (its Identity). A
	// *sqlstore.DB is one.
	DB scavenger.PassDB
	// Logger receives the activities' logs; nil: slog.Default().
	Logger *slog.Logger
	// Middleware wraps the store of every pass, as
	// scavenger.Config.Middleware: for tests and embedders.
	Middleware []store.Middleware
	// ShutdownTimeout is how long a partition may go on once its worker
	// begins to stop: its statements in flight may finish, none starts,
	// then they are cancelled. Default DefaultShutdownTimeout. The
	// worker's WorkerStopTimeout must be longer (WorkerOptions), so that
	// the attempt's end is reported before the worker lets go.
	ShutdownTimeout time.Duration
	// DirectFinalHeartbeat sends an attempt's final heartbeat straight to
	// the server as well (the activity's client), not only through the
	// SDK's heartbeat batch, which may go out after the attempt's end is
	// reported and be refused: the retry would then count the attempt's
	// tail as unknown. `tqscavenger worker` sets it; off, nothing but the
	// SDK's batch is used (the SDK's test environment has no server).
	DirectFinalHeartbeat bool
}

// ScavengePartition scavenges one partition of a pass. It checks that its
// worker reaches the pass's database, sets the pass up through
// scavenger.Begin (the partition's range lock, none for a dry run; the
// schema check), resumes from the last heartbeat's checkpoint if this is
// a retry and the checkpoint fits the pass, and heartbeats the pass's
// low-water marks as they advance. Cancellation (delivered with a
// heartbeat) stops the pass at once, its statements cancelled.
func (a *Activities) ScavengePartition(ctx context.Context, in PartitionInput) (PartitionResult, error) {
	info := activity.GetInfo(ctx)
	res := PartitionResult{Partition: in.Partition, Attempt: info.Attempt}
	d, cfg, err := partitionConfig(in)
	if err != nil {
		return res, err
	}
	res.Range = cfg.Partition.Range().String()
	log := a.logger().With("partition", cfg.Partition.String(), "range", res.Range, "attempt", info.Attempt)
	id, err := a.checkDatabase(ctx, d.DatabaseIdentity)
	if err != nil {
		return res, err
	}
	p, refused := a.startFrom(ctx, log, Progress{Version: ProgressVersion, Partition: in.Partition, Partitions: d.Partitions, Attempt: info.Attempt}, cfg, id)
	res.setEarlier(p.Earlier)
	metrics := activity.GetMetricsHandler(ctx)
	if p.Checkpoint != nil {
		res.Resumed, res.ResumedFrom = true, p.Checkpoint.Walks
		metrics.Counter(MetricPartitionsResumed).Inc(1)
	}
	if refused != nil {
		res.ResumeRefused = refused.Error()
		metrics.Counter(MetricCheckpointsRefused).Inc(1)
	}
	p.Counted = res.EarlierAttempts

	// The heartbeater starts once the pass is set up: an attempt refused
	// at its setup records no heartbeat, so the next one resumes from the
	// last attempt that worked. The hook is called only while the pass
	// runs, after hb is set.
	var hb *heartbeater
	cfg.Logger, cfg.Middleware, cfg.Resume = log, a.Middleware, p.Checkpoint
	cfg.Checkpoint = func(_ context.Context, cp scavenger.Checkpoint) error {
		hb.advance(&cp)
		return nil
	}
	// TablesAtRun: the digest of the partition's checkpoints carries the
	// description's tables, as every build before Begin wrote them.
	pass, err := scavenger.Begin(ctx, a.DB, cfg, scavenger.PassOptions{TablesAtRun: true})
	if err != nil {
		return res, classify(err)
	}
	defer pass.Close()
	hb = newHeartbeater(ctx, p, hbInterval(info.HeartbeatTimeout))
	hb.direct = a.DirectFinalHeartbeat
	hb.watch(pass.Scavenger)
	defer hb.stop()
	stop := newStopper(ctx, a.shutdownTimeout(), log)
	defer stop.close()
	stop.watch(pass.Scavenger)
	st, err := pass.Run(ctx)
	res.ThisAttempt = totalsOf(st)
	res.Totals = res.EarlierAttempts
	res.Totals.Add(res.ThisAttempt)
	res.Outcome = string(st.Outcome)
	if err != nil {
		return res, a.failed(ctx, log, hb, stop, st, err)
	}
	if res.Resumed {
		log.Info("partition completed after resuming", "tasks_processed_this_attempt", res.ThisAttempt.TasksProcessed,
			"tasks_processed_earlier", res.EarlierAttempts.TasksProcessed)
	}
	return res, nil
}

// logger is the activities' logger.
func (a *Activities) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.Default()
	}
	return a.Logger
}

// partitionConfig returns the description of in's pass, its defaults
// filled in, and the scavenger configuration of in's partition; a
// description or partition that cannot run is a non-retryable bad input.
func partitionConfig(in PartitionInput) (PassDescription, scavenger.Config, error) {
	d := in.Pass.WithDefaults()
	if err := d.Validate(); err != nil {
		return d, scavenger.Config{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadInput, nil)
	}
	cfg, err := d.Config(in.Partition)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrBadDescription, err)
		return d, cfg, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadInput, nil)
	}
	return d, cfg, nil
}

// checkDatabase returns the identity of the worker's database, refusing
// (non-retryable) a pass meant for another one.
func (a *Activities) checkDatabase(ctx context.Context, want string) (string, error) {
	id, err := a.DB.Identity(ctx)
	if err != nil {
		return "", classify(err)
	}
	if id != want {
		err := fmt.Errorf("this worker is connected to database %s, the pass is meant for %s: it refuses to scavenge another database", id, want)
		return "", temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeWrongDatabase, nil)
	}
	return id, nil
}

// The partition activity's metrics, counted through the worker's SDK
// metrics handler (client.Options.MetricsHandler; the SDK's no-op one
// unless the worker's client sets one).
const (
	// MetricPartitionsResumed counts partition attempts that resumed
	// from the last heartbeat's checkpoint.
	MetricPartitionsResumed = "tqscavenger_partitions_resumed"
	// MetricCheckpointsRefused counts partition attempts that left the
	// last heartbeat's checkpoint (PartitionResult.ResumeRefused) and
	// started from the partition's first hash.
	MetricCheckpointsRefused = "tqscavenger_checkpoints_refused"
)
