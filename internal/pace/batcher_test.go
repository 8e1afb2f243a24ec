package pace

import (
	"testing"
	"time"
)

// TestBatcher: a slow or timed-out statement halves the size, down to the
// floor; only a run of eight fast ones doubles it back, up to the
// ceiling; the cap lowers the size, but never under the floor.
func TestBatcher(t *testing.T) {
	const slow = time.Second
	b := NewBatcher(1000, slow)
	steps := []struct {
		name     string
		d        time.Duration
		timedOut bool
		n        int // statements alike
		cap      int // setCap before them (-1: left as it is)
		want     int
	}{
		{"starts at the ceiling", 0, false, 0, -1, 1000},
		{"a slow statement halves it", 2 * slow, false, 1, -1, 500},
		{"a timeout halves it", 0, true, 1, -1, 250},
		{"down to the floor", 2 * slow, false, 10, -1, 16},
		{"seven fast ones: not yet", slow / 8, false, 7, -1, 16},
		{"the eighth doubles it", slow / 8, false, 1, -1, 32},
		{"a middling one neither grows nor shrinks", slow / 2, false, 20, -1, 32},
		{"fast for long: back to the ceiling, no further", slow / 8, false, 80, -1, 1000},
		{"a cap lowers it", 0, false, 0, 300, 300},
		{"never under the floor", 0, false, 0, 4, 16},
		{"no cap", 0, false, 0, 0, 1000},
	}
	for _, s := range steps {
		if s.cap >= 0 {
			b.setCap(s.cap)
		}
		for range s.n {
			b.Observe(s.d, s.timedOut)
		}
		if got := b.Size(); got != s.want {
			t.Fatalf("%s: size %d, want %d", s.name, got, s.want)
		}
	}
	if b.Floor() != 16 || NewBatcher(10, slow).Floor() != 10 {
		t.Fatalf("floors %d and %d, want 16 and a batch size under it", b.Floor(), NewBatcher(10, slow).Floor())
	}
}
