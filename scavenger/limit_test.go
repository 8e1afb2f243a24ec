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

// TestLimiterSetRate: a new rate applies to the debt already run up; no
// rate lets every caller through; a limit set again starts from an empty
// bucket.
func TestLimiterSetRate(t *testing.T) {
	clock := time.Unix(1000, 0)
	l := newLimiter(100)
	l.now = func() time.Time { return clock }
	l.last = clock
	l.charge(101) // 101 in debt: 1.01 s at 100/s
	if got := l.delay(); got != 1010*time.Millisecond+time.Millisecond {
		t.Fatalf("at 100/s: delay %v", got)
	}
	l.setRate(1000) // the debt is paid ten times faster
	if got := l.delay(); got != 101*time.Millisecond+time.Millisecond {
		t.Fatalf("at 1000/s: delay %v", got)
	}
	l.setRate(0)
	l.charge(1e6)
	if got := l.delay(); got != 0 {
		t.Fatalf("unlimited: delay %v", got)
	}
	l.setRate(10)
	if got := l.delay(); got != time.Millisecond {
		t.Fatalf("limited again: delay %v, want the first token's 1ms", got)
	}
}

// TestTune: Tune changes the limits and the retry budget Config reports,
// and refuses an invalid configuration without changing anything.
func TestTune(t *testing.T) {
	s := New(nil, Config{Pace: Pace{MaxDeletesPerSecond: 5}})
	if err := s.Tune(Config{Rules: Rules{Grace: 72 * time.Hour}, Pace: Pace{MaxDeletesPerSecond: 50, MaxStatementsPerSecond: 7, RetryFor: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	c := s.Config()
	if c.MaxDeletesPerSecond != 50 || c.MaxStatementsPerSecond != 7 || c.RetryFor != time.Minute || c.RetryInitial != TemporalRetryInitial {
		t.Errorf("after Tune: %+v", c)
	}
	if c.Grace != TemporalGrace {
		t.Errorf("Tune changed the grace of the pass to %s", c.Grace)
	}
	if err := s.Tune(Config{Rules: Rules{Grace: time.Hour}, Pace: Pace{MaxDeletesPerSecond: 1}}); err == nil {
		t.Error("Tune took a grace under the floor")
	}
	if s.Config().MaxDeletesPerSecond != 50 {
		t.Errorf("a refused Tune changed the limit to %v", s.Config().MaxDeletesPerSecond)
	}
}
