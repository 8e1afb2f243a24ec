package pace

import (
	"context"
	"log/slog"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// Alone: on a store whose write locks the whole database (SQLite) the
// gentle pace's duty cycle leaves the writer lock free for others three
// quarters of the time. Where the store can prove that no other process
// has the database open (store.AloneProver), there is nobody to leave it
// to: the pass runs at full share until the proof fails, checked every
// aloneEvery. A writer that opens the file in the meantime meets the
// pass's lock for at most that long before the duty cycle is back.
//
// The signal is not PRAGMA data_version, which moves when another
// connection commits: Temporal's SQLite plugin writes with no busy
// timeout, so a write that meets the pass's lock fails and never commits,
// and data_version stays still exactly while the pass hurts it.
const aloneEvery = 100 * time.Millisecond

// StartAloneWatch proves, for p, whether st's database is alone, at once
// and then every aloneEvery, until the returned func is called, which
// returns once the watch has stopped. It does nothing unless st is a
// store.AloneProver and p paces a whole-database writer. log receives a
// line each time the proof holds after it did not, and the reverse.
func StartAloneWatch(ctx context.Context, st store.Store, p *Pacer, log *slog.Logger, stop <-chan struct{}) (wait func()) {
	ap, ok := st.(store.AloneProver)
	if !ok || p == nil || !p.wholeDatabase {
		return func() {}
	}
	return background(ctx, func(ctx context.Context) {
		watchAlone(ctx, ap, p, log, stop, aloneEvery)
	})
}

// watchAlone checks every every until ctx ends or stop closes.
func watchAlone(ctx context.Context, ap store.AloneProver, p *Pacer, log *slog.Logger, stop <-chan struct{}, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	first, was := true, false
	for {
		alone, why, err := ap.Alone(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			alone, why = false, err.Error()
		}
		if first || alone != was {
			switch {
			case alone:
				log.Info("pace gentle: no other process has the SQLite database open: full share while that holds")
			case first:
				log.Debug("pace gentle: duty cycle on the SQLite database", "why_not_alone", why)
			default:
				log.Info("pace gentle: the SQLite database is no longer alone: back to the duty cycle", "why_not_alone", why)
			}
			p.setAlone(alone)
			first, was = false, alone
		}
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
		}
	}
}
