package pace

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// The probe: where the store is a store.Prober (PostgreSQL, MySQL), a
// pass that starts gently runs matching's most frequent reads on a
// connection of its own, outside the pool, every probeEvery, and feeds
// their latency to the Pacer, whose re-measure pauses give it its quiet
// baseline: what the cluster's reads feel, tens of times a second. A
// probe that fails probeFailures times in a row is closed for the pass,
// with a log line: the pass goes on with its own statements as its
// signal.
//
// A store whose write takes a lock on the whole database (SQLite) has
// none: a read there in a rollback journal takes a SHARED lock that
// blocks commits, and Temporal's SQLite plugin begins deferred
// transactions that fail at once on a held lock.
const (
	probeEvery    = 50 * time.Millisecond
	probeFailures = 3
)

// StartProbe runs the probe of st, if st is a store.Prober, for p until
// the returned func is called, which returns once the probe is closed.
// log receives the probe's failures.
func StartProbe(ctx context.Context, st store.Store, p *Pacer, log *slog.Logger, stop <-chan struct{}) (wait func()) {
	pr, ok := st.(store.Prober)
	if !ok || p == nil {
		return func() {}
	}
	probe, err := pr.OpenProbe(ctx)
	if err != nil {
		if !errors.Is(err, errors.ErrUnsupported) {
			log.Warn("pace gentle: no probe connection; pacing on the pass's own statements", "err", err)
		}
		return func() {}
	}
	return background(ctx, func(ctx context.Context) {
		defer probe.Close()
		runProbe(ctx, probe, p, log, stop, probeEvery)
	})
}

// runProbe probes every every until ctx ends, stop closes or the probe
// fails probeFailures times in a row.
func runProbe(ctx context.Context, probe store.Probe, p *Pacer, log *slog.Logger, stop <-chan struct{}, every time.Duration) {
	t := time.NewTicker(every)
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
		start := p.now()
		if err := probe.Probe(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			if failed++; failed >= probeFailures {
				log.Warn("pace gentle: the probe failed; pacing on the pass's own statements for the rest of the pass", "err", err)
				return
			}
			continue
		}
		failed = 0
		p.observeProbe(p.now().Sub(start))
	}
}
