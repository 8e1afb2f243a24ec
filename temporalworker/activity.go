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

// Progress is a partition activity's heartbeat: its low-water mark.
// Every queue row of the partition whose range_hash is below Next has been
// scavenged, and the orphans of the task rows below Next; nothing at or
// above it is claimed. It records positions only, never what was decided
// about a row, so that resuming from it re-reads and re-decides every row
// at or above the mark.
type Progress struct {
	Partition      int    `json:"partition"`
	Partitions     int    `json:"partitions"`
	SettingsDigest string `json:"settings_digest"`
	Identity       string `json:"database_identity"`
	// Next is the low-water mark, a range_hash position from the
	// partition's first hash to its last plus one (done).
	Next uint64 `json:"next"`
	// Done counts the work of the pieces below Next, over every attempt.
	Done Totals `json:"done"`
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
	// ResumedFrom is the mark the finishing attempt resumed from; zero
	// with Resumed false for a partition done in one go.
	Resumed     bool   `json:"resumed"`
	ResumedFrom uint64 `json:"resumed_from,omitempty"`
	// Totals counts the partition's work over all attempts; ThisAttempt
	// that of the finishing attempt only.
	Totals      Totals `json:"totals"`
	ThisAttempt Totals `json:"this_attempt"`
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

// ScavengePartition scavenges one partition of a pass. It takes the
// partition's lock, resumes from the last heartbeat's mark if this is a
// retry under the same settings, and scavenges the rest of the partition
// in pieces, heartbeating the mark after each. Cancellation (delivered
// with a heartbeat) stops the pass at once, its statements cancelled.
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
	r, err := PartitionRange(in.Partition, d.Partitions)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrBadDescription, err)
		return res, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadInput, nil)
	}
	res.Range = r.String()
	log = log.With("partition", fmt.Sprintf("%d/%d", in.Partition, d.Partitions), "range", r.String(), "attempt", info.Attempt)

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

	p := Progress{Partition: in.Partition, Partitions: d.Partitions, SettingsDigest: d.settingsDigest(), Identity: id, Next: uint64(r.Lo)}
	if activity.HasHeartbeatDetails(ctx) {
		var last Progress
		switch err := activity.GetHeartbeatDetails(ctx, &last); {
		case err != nil:
			log.Warn("heartbeat details unreadable: partition starts from its first hash", "err", err)
		case last.Partition != p.Partition || last.Partitions != p.Partitions || last.SettingsDigest != p.SettingsDigest || last.Identity != id:
			log.Warn("heartbeat details recorded under other settings: partition starts from its first hash",
				"recorded_partition", fmt.Sprintf("%d/%d", last.Partition, last.Partitions), "recorded_settings", last.SettingsDigest, "settings", p.SettingsDigest)
		case last.Next < uint64(r.Lo) || last.Next > uint64(r.Hi)+1:
			log.Warn("heartbeat mark outside the partition: partition starts from its first hash", "next", last.Next)
		default:
			p = last
			res.Resumed, res.ResumedFrom = true, last.Next
			log.Info("partition resumes from its last heartbeat", "next", last.Next, "tasks_processed_before", last.Done.TasksProcessed)
		}
	}

	hb := newHeartbeater(ctx, p, hbInterval(info.HeartbeatTimeout))
	defer hb.stop()

	cfg, err := d.Config()
	if err != nil { // Validate passed: cannot happen, but never a panic.
		return res, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadInput, nil)
	}
	cfg.Logger = log
	cfg.Lock = lock
	held := false
	for _, c := range chunks(r, d.Chunks, p.Next) {
		cfg.Middleware = append([]store.Middleware{rangeScope(c)}, a.Middleware...)
		st, err := scavenger.New(a.DB.Store(), cfg).Run(ctx)
		res.ThisAttempt.addStats(st)
		res.ThisAttempt.Dropped += st.Dropped
		if err != nil {
			res.Outcome = string(st.Outcome)
			if errors.Is(ctx.Err(), context.Canceled) {
				// A CanceledError is reported as a cancellation and never
				// retried; its details are the mark reached.
				log.Info("partition cancelled", "next", p.Next)
				return res, temporal.NewCanceledError(p)
			}
			if ctx.Err() != nil {
				// Timed out: Temporal retries it, from the mark.
				log.Warn("partition timed out", "next", p.Next, "err", err)
				return res, ctx.Err()
			}
			log.Error("partition failed", "next", p.Next, "err", err)
			return res, classify(err)
		}
		if st.Outcome == scavenger.CompletedBadRows {
			res.Outcome = string(st.Outcome)
		}
		p.Done.addStats(st)
		p.Done.Dropped += st.Dropped
		if st.Dropped > 0 {
			// Jobs dropped from a full deferred list are unfinished: the
			// mark stays before them for the rest of this attempt, so a
			// retry does them again (the next pass does otherwise).
			held = true
			log.Warn("jobs dropped: the partition's mark stays before them", "dropped", st.Dropped, "next", p.Next)
		}
		if !held {
			p.Next = uint64(c.Hi) + 1
			hb.advance(p)
		}
	}
	if res.Outcome == "" {
		res.Outcome = string(scavenger.Completed)
	}
	res.Totals = p.Done
	log.Info("partition completed", "outcome", res.Outcome, "tasks_processed", res.Totals.TasksProcessed,
		"tasks_deleted", res.Totals.TasksDeleted, "queues_deleted", res.Totals.QueuesDeleted)
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

// heartbeater records the partition's progress as a heartbeat whenever it
// advances and every interval in between.
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

// advance records p, a mark at or past the last one.
func (h *heartbeater) advance(p Progress) {
	h.mu.Lock()
	h.p = p
	h.mu.Unlock()
	h.record()
}

func (h *heartbeater) stop() {
	close(h.quit)
	<-h.done
}
