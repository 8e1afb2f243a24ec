package scavenger

// Bounded retries of transient store errors: backoff with jitter, a time
// budget per operation, statement timeouts that stop being transient, and
// a retry log an operator sees without being flooded.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// ErrGaveUp is wrapped by the error of an operation whose transient errors
// were retried until Config.RetryFor ran out, or whose statement kept
// timing out (a batch at its floor once, any other statement
// maxTimeouts times in a row). The error also wraps the last store error,
// so errors.Is(err, store.ErrStatementTimeout) tells a timeout set too
// low.
var ErrGaveUp = errors.New("gave up retrying")

// maxTimeouts is how many statement timeouts in a row an operation that
// cannot shrink its statement takes before it gives up.
const maxTimeouts = 3

// retryLogEvery spaces the warnings about retries: a storm of them is one
// line per interval, with the count of those not logged.
const retryLogEvery = 10 * time.Second

// retry calls f until it succeeds, fails with an error that is not
// transient, gives up (ErrGaveUp), or ctx ends. Transient errors back off
// exponentially with jitter, as Temporal's scavenger does, from
// RetryInitial to RetryMax. f is given the context of its attempt: see
// attempt.
func (p *pass) retry(ctx context.Context, op string, f func(ctx context.Context) error) error {
	return p.attempt(ctx, op, false, func(ctx context.Context) (int, error) { return 0, f(ctx) })
}

// timed runs a batched store call: f is given the adaptive batch size at
// each attempt (at most limit, if limit > 0) and its duration feeds the
// batcher, so a timed-out statement is retried smaller. At the batcher's
// floor a timeout is no longer transient.
func (p *pass) timed(ctx context.Context, op string, limit int, f func(ctx context.Context, size int) error) error {
	return p.timedBatches(ctx, op, 1, limit, func(ctx context.Context, size, _ int) error { return f(ctx, size) })
}

// timedBatches is timed for a read of up to batches batch sizes: f is
// given batches times the adaptive batch size (at most limit, if
// limit > 0) and the batch size itself, for the statements its rows go
// out in. At the batcher's floor it reads one batch, so that a read that
// keeps timing out shrinks to the floor, where timed gives up, as a
// batch does.
func (p *pass) timedBatches(ctx context.Context, op string, batches, limit int, f func(ctx context.Context, size, batch int) error) error {
	return p.attempt(ctx, op, true, func(ctx context.Context) (int, error) {
		batch := p.batch.Size()
		size := batch
		if batch > p.batch.Floor() {
			size *= batches
		}
		if limit > 0 {
			size = min(size, limit)
		}
		start := time.Now()
		err := f(ctx, size, batch)
		p.batch.Observe(time.Since(start), errors.Is(err, store.ErrStatementTimeout) || errors.Is(err, context.DeadlineExceeded))
		return size, err
	})
}

// ErrRetryBudget is wrapped, beside ErrGaveUp, by the error of an
// operation whose last retry was cut short by the end of its retry budget
// (Config.RetryFor): a wait inside the store (SQLite's busy wait, a
// connection being made) did not outlast the budget.
var ErrRetryBudget = errors.New("the retry budget ran out during the last attempt")

// attempt runs f, and again after each transient error, within RetryFor
// of its start. The first attempt runs under the store's own bounds (its
// statement timeout) alone: a budget is for retrying, not for a statement
// that works. Each retry runs under a context that ends with the budget,
// so that what a retry waits for inside the store (SQLite's busy wait for
// a lock another process holds, a connection being made) counts in the
// budget: the operation gives up RetryFor after its start, not RetryFor
// plus one more wait.
func (p *pass) attempt(ctx context.Context, op string, batched bool, f func(ctx context.Context) (size int, err error)) error {
	// The budget is read as the retries go: Tune may change it.
	wait, _, _ := p.tune.retry()
	start := time.Now()
	timeouts := 0
	var last error // the error of the attempt before
	for n := 0; ; n++ {
		size, cut, err := p.try(ctx, n, start, f)
		if cut {
			// The error is the one that was retried: the cut retry's is
			// only what its store made of the budget's end.
			return fmt.Errorf("%w: %s: still failing after %s of retries (%w): %w", ErrGaveUp, op, time.Since(start).Round(time.Millisecond), ErrRetryBudget, last)
		}
		last = err
		if err == nil || ctx.Err() != nil || !errors.Is(err, store.ErrTransient) {
			return err
		}
		if isTimeout(err) {
			timeouts++
			switch {
			case batched && size <= p.batch.Floor():
				return fmt.Errorf("%w: %s: a batch of %d rows, the smallest, did not finish within the statement timeout: %w", ErrGaveUp, op, size, err)
			case !batched && timeouts >= maxTimeouts:
				return fmt.Errorf("%w: %s: %d statement timeouts in a row: %w", ErrGaveUp, op, timeouts, err)
			}
		} else {
			timeouts = 0
		}
		_, retryMax, retryFor := p.tune.retry()
		if spent := time.Since(start); spent+wait/2 > retryFor {
			return fmt.Errorf("%w: %s: still failing after %s of retries: %w", ErrGaveUp, op, spent.Round(time.Millisecond), err)
		}
		p.c.retries.Add(1)
		p.retries.note(op, err, wait)
		// Full jitter in [wait/2, wait) spreads retries of many workers.
		d := wait/2 + rand.N(wait/2+1)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(wait*2, retryMax)
	}
}

// try runs attempt n of an operation that started at start: a retry
// (n > 0) under a context that ends with the retry budget. cut reports
// that the budget ended it.
func (p *pass) try(ctx context.Context, n int, start time.Time, f func(ctx context.Context) (int, error)) (size int, cut bool, err error) {
	if n == 0 {
		size, err = f(ctx)
		return size, false, err
	}
	_, _, retryFor := p.tune.retry()
	actx, cancel := context.WithDeadlineCause(ctx, start.Add(retryFor), ErrRetryBudget)
	defer cancel()
	size, err = f(actx)
	return size, err != nil && ctx.Err() == nil && context.Cause(actx) == ErrRetryBudget, err
}

// deleting runs a delete of planned rows with retries and returns how many
// it deleted. The rows an attempt that failed with an unknown outcome may
// have deleted (planned less what the attempts confirmed) are added to
// unknown, so that deleted + unknown is never less than what went. With
// observe, its durations feed the adaptive batch size.
func (p *pass) deleting(ctx context.Context, op string, planned int64, unknown *atomic.Int64, observe bool, f func(ctx context.Context) (int64, error)) (int64, error) {
	var (
		total  int64
		unsure bool
	)
	err := p.attempt(ctx, op, false, func(ctx context.Context) (int, error) {
		start := time.Now()
		n, err := f(ctx)
		if observe {
			p.batch.Observe(time.Since(start), isTimeout(err))
		}
		total += n
		unsure = unsure || errors.Is(err, store.ErrUnknownOutcome)
		return 0, err
	})
	if unsure && total < planned {
		unknown.Add(planned - total)
	}
	return total, err
}

// isTimeout reports whether err is a statement that ran out of the
// store's statement timeout (not the pass's own context).
func isTimeout(err error) bool {
	return errors.Is(err, store.ErrStatementTimeout) || errors.Is(err, context.DeadlineExceeded)
}

// retryLog logs retries at warn level, at most one line per
// retryLogEvery, with how many it did not log in between.
type retryLog struct {
	log *slog.Logger

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (r *retryLog) note(op string, err error, backoff time.Duration) {
	r.mu.Lock()
	now := time.Now()
	if !r.last.IsZero() && now.Sub(r.last) < retryLogEvery {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	n := r.suppressed
	r.last, r.suppressed = now, 0
	r.mu.Unlock()
	r.log.Warn("transient store error, retrying", "op", op, "err", err, "backoff", backoff, "not_logged_since_last", n)
}
