package scavenger

import (
	"context"
	"errors"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// The gentle pace's probe: where the store is a store.Prober (PostgreSQL,
// MySQL), a pass that starts gently runs matching's most frequent reads
// on a connection of its own every probeEvery and feeds their latency to
// the controller (yield.go), whose re-measure pauses give it its quiet
// baseline. A probe that fails probeFailures times in a row is closed for
// the pass, with a log line: the pass goes on with its own statements as
// its signal. A pass started at the full pace opens none (a pace tuned to
// gentle later does without).
const (
	probeEvery    = 50 * time.Millisecond
	probeFailures = 3
)

// startProbe runs the probe of st, if any, until the returned func is
// called.
func startProbe(ctx context.Context, st store.Store, y *yielder, cfg Config, stop <-chan struct{}) (wait func()) {
	pr, ok := st.(store.Prober)
	if !ok || y == nil || cfg.Mode == PaceFull {
		return func() {}
	}
	probe, err := pr.OpenProbe(ctx)
	if err != nil {
		if !errors.Is(err, errors.ErrUnsupported) {
			cfg.Logger.Warn("pace gentle: no probe connection; pacing on the pass's own statements", "err", err)
		}
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer probe.Close()
		runProbe(ctx, probe, y, cfg, stop)
	}()
	return func() {
		cancel()
		<-done
	}
}

// runProbe probes every probeEvery until ctx ends, stop closes or the
// probe fails probeFailures times in a row.
func runProbe(ctx context.Context, probe store.Probe, y *yielder, cfg Config, stop <-chan struct{}) {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	failed := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
		}
		start := y.now()
		if err := probe.Probe(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			if failed++; failed >= probeFailures {
				cfg.Logger.Warn("pace gentle: the probe failed; pacing on the pass's own statements for the rest of the pass", "err", err)
				return
			}
			continue
		}
		failed = 0
		y.observeProbe(y.now().Sub(start))
	}
}
