package temporalworker

// How a partition stops when its worker stops: the shutdown timeout, and
// the stopper that shuts the pass down at a clean point.

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

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
