package temporalworker

// The partition's heartbeats: how often, and the heartbeater that
// records its progress with this attempt's counts.

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

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
