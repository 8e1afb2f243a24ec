package pace

import (
	"context"
	"sync"
	"time"
)

// Limiter is a token bucket that may go into debt: a caller waits until
// the balance is not negative, then is charged what it actually used. So
// a delete of unknown size is charged its real row count afterwards, and
// the average rate holds whatever the batch sizes. Its rate may change
// while callers wait (SetRate); a rate of 0 or less is no limit. A nil
// Limiter's Wait and Charge do nothing.
type Limiter struct {
	now func() time.Time

	mu      sync.Mutex
	rate    float64 // tokens per second
	burst   float64
	balance float64
	last    time.Time
	charged int64 // every token charged, limited or not
}

// NewLimiter returns a limiter of rate tokens a second (0: no limit).
func NewLimiter(rate float64) *Limiter {
	l := &Limiter{now: time.Now, last: time.Now()}
	l.SetRate(rate)
	return l
}

// SetRate changes the rate. A waiting caller sees it at its next check,
// within a tenth of a second (waits are capped to that): a limit lowered
// while the database hurts takes effect at once, one raised or lifted
// does not leave callers asleep on the old one. A debt already run up is
// kept, so that a lower limit cannot be escaped by the last large batch.
func (l *Limiter) SetRate(rate float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.rate > 0 {
		l.balance = min(l.burst, l.balance+now.Sub(l.last).Seconds()*l.rate)
	} else {
		l.balance = 0
	}
	l.last = now
	l.rate = rate
	// A burst of a tenth of a second keeps the rate smooth within a
	// second, yet lets a single large batch through.
	l.burst = max(1, rate/10)
	if rate <= 0 {
		l.balance = 0
	}
}

// maxWait caps one sleep of a waiting caller, so that a new rate is seen
// soon.
const maxWait = 100 * time.Millisecond

// delay refills the bucket and returns how long a caller must wait for the
// balance to be positive again; 0 means go.
func (l *Limiter) delay() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rate <= 0 {
		return 0
	}
	now := l.now()
	l.balance = min(l.burst, l.balance+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
	if l.balance > 0 {
		return 0
	}
	return time.Duration((-l.balance/l.rate)*float64(time.Second)) + time.Millisecond
}

// Wait blocks until the balance is positive, ctx ends (ctx.Err()) or stop
// is closed (ErrStopped).
func (l *Limiter) Wait(ctx context.Context, stop <-chan struct{}) error {
	if l == nil {
		return nil
	}
	for {
		d := l.delay()
		if d == 0 {
			return nil
		}
		t := time.NewTimer(min(d, maxWait))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-stop:
			t.Stop()
			return ErrStopped
		case <-t.C:
		}
	}
}

// Rate returns the rate in effect.
func (l *Limiter) Rate() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rate
}

// Charge takes n tokens (none while there is no limit).
func (l *Limiter) Charge(n int64) {
	if l == nil || n <= 0 {
		return
	}
	l.mu.Lock()
	l.charged += n
	if l.rate > 0 {
		l.balance -= float64(n)
	}
	l.mu.Unlock()
}

// Charged returns the tokens charged since NewLimiter, limited or not:
// what the callers used.
func (l *Limiter) Charged() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.charged
}
