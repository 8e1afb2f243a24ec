package temporalworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

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
)

// nonRetryable lists the error types the workflow's retry policy does not
// retry, for activities started without NewNonRetryableApplicationError.
var nonRetryable = []string{ErrTypeBadInput, ErrTypeWrongDatabase, ErrTypeSchemaMismatch, ErrTypeRefused}

// PartitionActivityName is the partition activity's registered name.
const PartitionActivityName = "tqscavenger.ScavengePartition"

// PartitionInput is a partition activity's input: the pass and which of
// its partitions to scavenge.
type PartitionInput struct {
	Pass      PassDescription `json:"pass"`
	Partition int             `json:"partition"`
}

// Progress is a partition activity's heartbeat. Its Checkpoint holds the
// pass's low-water marks (scavenger.Checkpoint): positions only, never
// what was decided about a row, each before every unfinished or deferred
// job, so that a retry resuming from it redoes at most work that is safe
// to redo and skips none.
type Progress struct {
	Partition  int   `json:"partition"`
	Partitions int   `json:"partitions"`
	Attempt    int32 `json:"attempt"`
	// Checkpoint is the pass's positions; nil before the first.
	Checkpoint *scavenger.Checkpoint `json:"checkpoint,omitempty"`
	// Counted is the work of every attempt so far, each earlier one up to
	// its last heartbeat.
	Counted Totals `json:"counted"`
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
	// ThisAttempt counts the work of the finishing attempt;
	// EarlierAttempts that of the attempts before it, up to their last
	// heartbeat. Rows an earlier attempt examined past its last mark are
	// examined again, and counted twice; a delete is never redone (the row
	// is gone), so the deletes an earlier attempt made past its last
	// heartbeat are not counted: TasksDeleted may fall short of the rows
	// really deleted, never exceed them. Totals is their sum.
	ThisAttempt     Totals `json:"this_attempt"`
	EarlierAttempts Totals `json:"earlier_attempts"`
	Totals          Totals `json:"totals"`
}

// Activities holds the partition activity of a worker connected to one
// database.
type Activities struct {
	DB Database
	// Logger receives the activities' logs; nil: slog.Default().
	Logger *slog.Logger
	// Middleware wraps the store of every pass, as
	// scavenger.Config.Middleware: for tests and embedders.
	Middleware []store.Middleware
}

// ScavengePartition scavenges one partition of a pass. It checks that its
// worker reaches the pass's database, takes the partition's range lock,
// resumes from the last heartbeat's checkpoint if this is a retry, and
// heartbeats the pass's low-water marks as they advance. Cancellation
// (delivered with a heartbeat) stops the pass at once, its statements
// cancelled.
func (a *Activities) ScavengePartition(ctx context.Context, in PartitionInput) (PartitionResult, error) {
	log := a.Logger
	if log == nil {
		log = slog.Default()
	}
	info := activity.GetInfo(ctx)
	d := in.Pass.WithDefaults()
	res := PartitionResult{Partition: in.Partition, Attempt: info.Attempt}
	if err := d.Validate(); err != nil {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadInput, nil)
	}
	cfg, err := d.Config(in.Partition)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrBadDescription, err)
		return res, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadInput, nil)
	}
	r := cfg.Partition.Range()
	res.Range = r.String()
	log = log.With("partition", cfg.Partition.String(), "range", r.String(), "attempt", info.Attempt)

	id, err := a.DB.Identity(ctx)
	if err != nil {
		return res, classify(err)
	}
	if id != d.DatabaseIdentity {
		err := fmt.Errorf("this worker is connected to database %s, the pass is meant for %s: it refuses to scavenge another database", id, d.DatabaseIdentity)
		return res, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeWrongDatabase, nil)
	}
	if err := a.DB.CheckSchema(ctx); err != nil {
		return res, classify(err)
	}
	lock, err := a.DB.LockRange(ctx, r)
	if err != nil {
		return res, classify(err)
	}
	defer lock.Unlock()

	p := Progress{Partition: in.Partition, Partitions: d.Partitions, Attempt: info.Attempt}
	if activity.HasHeartbeatDetails(ctx) {
		var last Progress
		switch err := activity.GetHeartbeatDetails(ctx, &last); {
		case err != nil:
			log.Warn("heartbeat details unreadable: the partition starts from its first hash", "err", err)
		case last.Partition != p.Partition || last.Partitions != p.Partitions:
			log.Warn("heartbeat details of another partition: the partition starts from its first hash",
				"recorded", fmt.Sprintf("%d/%d", last.Partition, last.Partitions))
		default:
			res.EarlierAttempts = last.Counted
			if last.Checkpoint != nil {
				p.Checkpoint = last.Checkpoint
				res.Resumed, res.ResumedFrom = true, last.Checkpoint.Walks
			}
		}
	}
	p.Counted = res.EarlierAttempts

	cfg.Logger = log
	cfg.Lock = lock
	cfg.Middleware = a.Middleware
	hb := newHeartbeater(ctx, p, hbInterval(info.HeartbeatTimeout))
	defer hb.stop()
	var sc *scavenger.Scavenger
	cfg.Checkpoint = func(_ context.Context, cp scavenger.Checkpoint) error {
		hb.advance(cp, res.EarlierAttempts, sc.Stats())
		return nil
	}
	cfg.Resume = p.Checkpoint
	sc = scavenger.New(a.DB.Store(), cfg)
	st, err := sc.Run(ctx)
	if errors.Is(err, scavenger.ErrCheckpointMismatch) {
		// Written under other settings, or against another database's
		// tables: start afresh, which redoes work and skips none.
		log.Warn("the heartbeat's checkpoint does not fit this pass: the partition starts from its first hash", "err", err)
		res.Resumed, res.ResumedFrom = false, nil
		cfg.Resume = nil
		sc = scavenger.New(a.DB.Store(), cfg)
		st, err = sc.Run(ctx)
	}
	res.ThisAttempt.addStats(st)
	res.ThisAttempt.Dropped = st.Dropped
	res.Totals = res.EarlierAttempts
	res.Totals.Add(res.ThisAttempt)
	res.Outcome = string(st.Outcome)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			// A CanceledError is reported as a cancellation and never
			// retried; its details are the last progress.
			log.Info("partition cancelled")
			return res, temporal.NewCanceledError(hb.progress())
		}
		if ctx.Err() != nil {
			// Timed out: Temporal retries it, from the last heartbeat.
			log.Warn("partition timed out", "err", err)
			return res, ctx.Err()
		}
		log.Error("partition failed", "err", err)
		return res, classify(err)
	}
	if res.Resumed {
		log.Info("partition completed after resuming", "tasks_processed_this_attempt", res.ThisAttempt.TasksProcessed,
			"tasks_processed_earlier", res.EarlierAttempts.TasksProcessed)
	}
	return res, nil
}

// classify turns a pass's or a database's error into the activity's:
// non-retryable where retrying cannot help, retryable otherwise (bounded
// by the activity's retry policy).
func classify(err error) error {
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
	default:
		// Unreachable, transient, or unknown: worth another attempt.
		typ = ErrTypeUnavailable
	}
	if !retry {
		return temporal.NewNonRetryableApplicationError(err.Error(), typ, nil)
	}
	return temporal.NewApplicationErrorWithCause(err.Error(), typ, err)
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

// hbInterval is how often a partition heartbeats besides when its mark
// advances: a third of the heartbeat timeout, so that a slow piece does
// not time out, and cancellation reaches it within that time.
func hbInterval(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return 10 * time.Second
	}
	return max(timeout/3, 100*time.Millisecond)
}

// heartbeater records the partition's progress as a heartbeat whenever
// its checkpoint advances and every interval in between (with the counts
// of the moment), so that a slow statement does not time the activity out
// and a cancellation reaches it.
type heartbeater struct {
	ctx  context.Context
	mu   sync.Mutex
	p    Progress
	quit chan struct{}
	done chan struct{}
}

func newHeartbeater(ctx context.Context, p Progress, every time.Duration) *heartbeater {
	h := &heartbeater{ctx: ctx, p: p, quit: make(chan struct{}), done: make(chan struct{})}
	h.record()
	go func() {
		defer close(h.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-h.quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				h.record()
			}
		}
	}()
	return h
}

func (h *heartbeater) record() {
	h.mu.Lock()
	defer h.mu.Unlock()
	activity.RecordHeartbeat(h.ctx, h.p)
}

// advance records a new checkpoint, with the counts so far.
func (h *heartbeater) advance(cp scavenger.Checkpoint, earlier Totals, st scavenger.Stats) {
	h.mu.Lock()
	h.p.Checkpoint = &cp
	h.p.Counted = earlier
	h.p.Counted.addStats(st)
	h.mu.Unlock()
	h.record()
}

func (h *heartbeater) progress() Progress {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.p
}

func (h *heartbeater) stop() {
	close(h.quit)
	<-h.done
}
