package temporalworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
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

// DefaultShutdownTimeout is Activities.ShutdownTimeout's default.
const DefaultShutdownTimeout = 30 * time.Second

// shutdownTimeout is Activities.ShutdownTimeout or its default.
func (a *Activities) shutdownTimeout() time.Duration {
	if a.ShutdownTimeout > 0 {
		return a.ShutdownTimeout
	}
	return DefaultShutdownTimeout
}

// stopper stops a partition's pass at a clean point when its worker
// starts to stop (activity.GetWorkerStopChannel): no statement starts
// after it, those in flight may finish within the shutdown timeout, then
// they are cancelled (scavenger.Scavenger.Shutdown).
type stopper struct {
	mu     sync.Mutex
	sc     *scavenger.Scavenger
	closed bool
	quit   chan struct{}
	done   chan struct{}
	// fired is closed once the worker began to stop.
	fired chan struct{}
}

func newStopper(ctx context.Context, timeout time.Duration, log *slog.Logger) *stopper {
	s := &stopper{quit: make(chan struct{}), done: make(chan struct{}), fired: make(chan struct{})}
	workerStop := activity.GetWorkerStopChannel(ctx)
	go func() {
		defer close(s.done)
		select {
		case <-s.quit:
			return
		case <-workerStop:
		}
		close(s.fired)
		log.Info("worker stopping: the partition stops at a clean point", "shutdown_timeout", timeout)
		sctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		s.mu.Lock()
		sc := s.sc
		s.closed = true
		s.mu.Unlock()
		if sc != nil {
			_ = sc.Shutdown(sctx) // Run reports how it ended
		}
	}()
	return s
}

// watch makes sc the pass to stop; if the worker is already stopping, sc
// is stopped at once (a Run after Shutdown returns at once).
func (s *stopper) watch(sc *scavenger.Scavenger) {
	s.mu.Lock()
	s.sc = sc
	closed := s.closed
	s.mu.Unlock()
	if closed {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = sc.Shutdown(ctx)
	}
}

// stopped reports whether the worker began to stop.
func (s *stopper) stopped() bool {
	select {
	case <-s.fired:
		return true
	default:
		return false
	}
}

func (s *stopper) close() {
	close(s.quit)
	<-s.done
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
// its checkpoint advances and every interval in between, each with this
// attempt's counts of the moment, so that a slow statement does not time
// the activity out, a cancellation reaches it, and a retry knows what
// this attempt did up to its last record. (The worker's
// MaxHeartbeatThrottleInterval decides how often the SDK sends them: see
// WorkerOptions.)
type heartbeater struct {
	ctx context.Context
	mu  sync.Mutex
	p   Progress
	sc  *scavenger.Scavenger // the running pass, for its counts
	// direct: the final record also goes straight to the server
	// (Activities.DirectFinalHeartbeat).
	direct bool
	quit   chan struct{}
	done   chan struct{}
}

func newHeartbeater(ctx context.Context, p Progress, every time.Duration) *heartbeater {
	h := &heartbeater{ctx: ctx, p: p, quit: make(chan struct{}), done: make(chan struct{})}
	h.record(nil, false)
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
				h.tick()
			}
		}
	}()
	return h
}

// tick records the periodic heartbeat: through the pass's checkpoint if
// its positions moved since the last one (FlushCheckpoint: advance records
// it with the counts read after them), else with the last positions. A
// heartbeat's counts are then never ahead of its positions by more than
// the queues that finished while it was taken, and a retry from it redoes
// no queue it counted (the positions of the last checkpoint lag up to
// CheckpointInterval behind the counts of the moment).
func (h *heartbeater) tick() {
	h.mu.Lock()
	sc := h.sc
	h.mu.Unlock()
	if sc != nil && sc.FlushCheckpoint(h.ctx) {
		return
	}
	h.record(nil, false)
}

// watch makes sc the pass whose counts go in each heartbeat.
func (h *heartbeater) watch(sc *scavenger.Scavenger) {
	h.mu.Lock()
	h.sc = sc
	h.mu.Unlock()
}

// record records the progress with cp as its checkpoint (nil: the last)
// and the counts of the moment.
func (h *heartbeater) record(cp *scavenger.Checkpoint, final bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.p.Final {
		return // nothing happens after the final record
	}
	if cp != nil {
		h.p.Checkpoint = cp
	}
	if h.sc != nil && !final {
		h.setThisAttempt(totalsOf(h.sc.Stats()))
	}
	h.p.Final = final
	activity.RecordHeartbeat(h.ctx, h.p)
}

// setThisAttempt sets this attempt's counts and the sum; h.mu is held.
func (h *heartbeater) setThisAttempt(t Totals) {
	h.p.ThisAttempt = t
	h.p.Counted = Totals{}
	for _, a := range h.p.Earlier {
		h.p.Counted.Add(a.Totals)
	}
	h.p.Counted.Add(t)
}

// advance records a new checkpoint, with the counts so far.
func (h *heartbeater) advance(cp *scavenger.Checkpoint) { h.record(cp, false) }

// final records the attempt's last progress, its pass ended with the
// counts t: the SDK sends it before it reports the attempt's end.
func (h *heartbeater) final(t Totals) {
	h.mu.Lock()
	h.setThisAttempt(t)
	h.mu.Unlock()
	h.record(nil, true)
	// And at once, past the SDK's batching: its batch may be sent after
	// the attempt's end is reported, when the server no longer takes it
	// (seen on a SIGTERM in the interop suite), and the retry would read
	// the heartbeat before, its tail unknown.
	if c := activity.GetClient(h.ctx); c != nil && h.direct {
		ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
		defer cancel()
		if err := c.RecordActivityHeartbeat(ctx, activity.GetInfo(h.ctx).TaskToken, h.progress()); err != nil {
			activity.GetLogger(h.ctx).Warn("final heartbeat not recorded at once (the SDK sends it later)", "error", err)
		}
	}
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
