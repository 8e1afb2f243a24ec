package scavenger

import (
	"testing"
	"time"
)

// TestLimiterDebt: a caller is charged what it used, and the next one
// waits until the debt is paid at the configured rate.
func TestLimiterDebt(t *testing.T) {
	clock := time.Unix(1000, 0)
	l := newLimiter(100) // 100 rows/s, burst 10
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
		l.charge(c.charge)
		if got := l.delay(); got != c.want {
			t.Fatalf("step %d: delay %v, want %v (balance %.2f)", i, got, c.want, l.balance)
		}
	}
}
