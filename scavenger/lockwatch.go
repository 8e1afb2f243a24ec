package scavenger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// watchLock checks cfg.Lock every cfg.LockCheckInterval until stop is
// called. When a check fails, it stops the pass at once: stop(cause)
// cancels every statement in flight, and Run fails with the cause, which
// wraps store.ErrLockLost. Waiting for the statements to finish would let
// them run beside a second scavenger that took the lock meanwhile.
func watchLock(ctx context.Context, cfg Config, stopPass context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(cfg.LockCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			cctx, cancel := context.WithTimeout(ctx, cfg.LockCheckTimeout)
			err := cfg.Lock.Check(cctx)
			cancel()
			if err == nil || ctx.Err() != nil {
				continue
			}
			if !errors.Is(err, store.ErrLockLost) {
				err = fmt.Errorf("%w: %w", store.ErrLockLost, err)
			}
			cfg.Logger.Error("lock lost: stopping the pass", "err", err)
			stopPass(err)
			return
		}
	}()
	return func() { close(done); <-finished }
}

// confirmLock checks cfg.Lock once more, after the pass's last statement
// has finished and before it reports success: a lock lost since the
// watcher's last check (up to LockCheckInterval ago) would otherwise go
// unseen. A check that fails, or does not answer within LockCheckTimeout,
// fails the pass with an error wrapping store.ErrLockLost. What remains is
// the time between this check's answer and the report, in which the pass
// sends no statement.
func confirmLock(ctx context.Context, cfg Config) error {
	cctx, cancel := context.WithTimeout(ctx, cfg.LockCheckTimeout)
	defer cancel()
	err := cfg.Lock.Check(cctx)
	if err == nil {
		return nil
	}
	if !errors.Is(err, store.ErrLockLost) {
		err = fmt.Errorf("%w: %w", store.ErrLockLost, err)
	}
	err = fmt.Errorf("the lock could not be confirmed after the last statement: %w", err)
	cfg.Logger.Error("lock lost: the pass cannot report success", "err", err)
	return err
}
