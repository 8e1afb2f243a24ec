package pace

import (
	"cmp"
	"testing"
	"time"
)

// TestDecide: the controller alone, a pure function. A window over the
// factor, and over the baseline by at least minHarm, halves every lever down to the floor (and says when they were
// there already); a quiet one (the factor exactly is quiet) grows the
// share first, then the statements at once, then the batch cap, each up
// to its limit.
func TestDecide(t *testing.T) {
	ms, us := time.Millisecond, time.Microsecond
	lim := limits{workers: 4, maxShare: 1, batchCeil: 1000}
	sqlite := limits{workers: 1, maxShare: sqliteDuty, batchCeil: 1000}
	cases := []struct {
		name       string
		lv         levers
		lim        limits
		median     time.Duration
		want       levers
		harm, floo bool
		baseline   time.Duration // 0: 10ms
	}{
		{"quiet at the slow start: the share is full, one more at once", levers{1, 1, 1000}, lim, 10 * ms, levers{2, 1, 1000}, false, false, 0},
		{"the factor exactly is quiet", levers{2, 1, 1000}, lim, 20 * ms, levers{3, 1, 1000}, false, false, 0},
		{"quiet: the share grows first, by 1/8", levers{1, 0.25, 250}, lim, 10 * ms, levers{1, 0.375, 250}, false, false, 0},
		{"quiet: the share up to 1, no further", levers{1, 0.95, 250}, lim, 10 * ms, levers{1, 1, 250}, false, false, 0},
		{"quiet at the pool's size: the batch cap grows by an eighth", levers{4, 1, 250}, lim, 10 * ms, levers{4, 1, 375}, false, false, 0},
		{"quiet with every lever at its limit", levers{4, 1, 1000}, lim, 10 * ms, levers{4, 1, 1000}, false, false, 0},
		{"harm halves every lever", levers{4, 1, 1000}, lim, 30 * ms, levers{2, 0.5, 500}, true, false, 0},
		{"harm near the floor stops at it", levers{1, 0.4, 300}, lim, 30 * ms, levers{1, 0.25, 250}, true, false, 0},
		{"harm at the floor: no gentler", levers{1, 0.25, 250}, lim, 30 * ms, levers{1, 0.25, 250}, true, true, 0},
		{"an idle database's jitter: 3.6 times a 100µs baseline, under minHarm more, is quiet", levers{4, 1, 1000}, lim, 360 * us, levers{4, 1, 1000}, false, false, 100 * us},
		{"minHarm over a 100µs baseline is harm", levers{4, 1, 1000}, lim, 100*us + minHarm, levers{2, 0.5, 500}, true, false, 100 * us},
		{"SQLite: the share never grows past the duty", levers{1, sqliteDuty, 1000}, sqlite, 10 * ms, levers{1, sqliteDuty, 1000}, false, false, 0},
		{"SQLite: one at a time, the cap grows once the share is at the duty", levers{1, sqliteDuty, 500}, sqlite, 10 * ms, levers{1, sqliteDuty, 625}, false, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := cmp.Or(c.baseline, 10*ms)
			got := decide(c.lv, c.lim, 2, c.median, base)
			if got.levers != c.want || got.harm != c.harm || got.atFloor != c.floo {
				t.Errorf("decide(%+v, median %s, baseline %s) = %+v harm %v floor %v; want %+v harm %v floor %v",
					c.lv, c.median, base, got.levers, got.harm, got.atFloor, c.want, c.harm, c.floo)
			}
		})
	}
}

// TestMinBatch: the floor of the batch cap is a quarter of the batch
// size, at least minBatch rows, never above the batch size.
func TestMinBatch(t *testing.T) {
	for _, c := range []struct{ ceil, want int }{{1000, 250}, {100, 64}, {40, 40}, {1, 1}} {
		if got := (limits{batchCeil: c.ceil}).minBatch(); got != c.want {
			t.Errorf("batch size %d: floor %d, want %d", c.ceil, got, c.want)
		}
	}
}

// TestPauseFor: the pause after a statement is its latency × (1/share −
// 1), at most maxPause.
func TestPauseFor(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		d     time.Duration
		share float64
		want  time.Duration
	}{
		{10 * ms, 1, 0},
		{10 * ms, 0.5, 10 * ms},
		{10 * ms, minShare, 30 * ms},
		{500 * ms, minShare, maxPause},
		{0, minShare, 0},
	} {
		if got := pauseFor(c.d, c.share); got != c.want {
			t.Errorf("pause after %s at share %g: %s, want %s", c.d, c.share, got, c.want)
		}
	}
}
