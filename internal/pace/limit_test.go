package pace

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestLimiterDebt: a caller is charged what it used, and the next one
// waits until the debt is paid at the configured rate.
func TestLimiterDebt(t *testing.T) {
	clock := time.Unix(1000, 0)
	l := NewLimiter(100) // 100 rows/s, burst 10
	l.now = func() time.Time { return clock }
	l.last = clock
	cases := []struct {
		advance time.Duration
		charge  int64
		want    time.Duration // delay before the next call
	}{
		{0, 0, time.Millisecond},                         // empty bucket: wait for the first token
		{10 * time.Millisecond, 0, 0},                    // one token in
		{0, 50, 490*time.Millisecond + time.Millisecond}, // 49 in debt: 0.49 s
		{490 * time.Millisecond, 0, time.Millisecond},    // paid exactly: balance 0
		{time.Hour, 0, 0},                                // refills only up to the burst
		{0, 10, time.Millisecond},                        // the burst is 10
	}
	for i, c := range cases {
		clock = clock.Add(c.advance)
		l.Charge(c.charge)
		if got := l.delay(); got != c.want {
			t.Fatalf("step %d: delay %v, want %v (balance %.2f)", i, got, c.want, l.balance)
		}
	}
	if got := l.Charged(); got != 60 {
		t.Fatalf("charged %d, want the 60 tokens of the steps", got)
	}
}

// TestLimiterSetRate: a new rate applies to the debt already run up; no
// rate lets every caller through; a limit set again starts from an empty
// bucket.
func TestLimiterSetRate(t *testing.T) {
	clock := time.Unix(1000, 0)
	l := NewLimiter(100)
	l.now = func() time.Time { return clock }
	l.last = clock
	l.Charge(101) // 101 in debt: 1.01 s at 100/s
	if got := l.delay(); got != 1010*time.Millisecond+time.Millisecond {
		t.Fatalf("at 100/s: delay %v", got)
	}
	l.SetRate(1000) // the debt is paid ten times faster
	if got := l.delay(); got != 101*time.Millisecond+time.Millisecond {
		t.Fatalf("at 1000/s: delay %v", got)
	}
	l.SetRate(0)
	l.Charge(1e6)
	if got := l.delay(); got != 0 {
		t.Fatalf("unlimited: delay %v", got)
	}
	if got := l.Rate(); got != 0 {
		t.Fatalf("rate %g after SetRate(0)", got)
	}
	l.SetRate(10)
	if got := l.delay(); got != time.Millisecond {
		t.Fatalf("limited again: delay %v, want the first token's 1ms", got)
	}
}

// TestLimiterWait: a wait in debt ends with its context or its stop
// channel, each with its own error; a nil limiter never waits.
func TestLimiterWait(t *testing.T) {
	l := NewLimiter(1)
	l.Charge(1e6) // days of debt at 1/s
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Wait(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	stop := make(chan struct{})
	close(stop)
	if err := l.Wait(context.Background(), stop); !errors.Is(err, ErrStopped) {
		t.Errorf("closed stop: %v, want ErrStopped", err)
	}
	var none *Limiter
	none.Charge(5)
	if err := none.Wait(context.Background(), stop); err != nil {
		t.Errorf("nil limiter: %v", err)
	}
}
