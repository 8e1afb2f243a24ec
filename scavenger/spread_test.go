package scavenger

import (
	"slices"
	"testing"
)

// TestWindows: a page's window queues go to p.spread windows of at least
// minWindow queues, in order, each queue once.
func TestWindows(t *testing.T) {
	for _, tc := range []struct {
		queues, spread int
		want           []int // window sizes
	}{
		{queues: 0, spread: 4, want: nil},
		{queues: 10, spread: 1, want: []int{10}},
		{queues: 1000, spread: 1, want: []int{1000}},
		{queues: 300, spread: 4, want: []int{75, 75, 75, 75}},
		{queues: 1000, spread: 3, want: []int{333, 333, 334}},
		{queues: 40, spread: 4, want: []int{20, 20}}, // two of minWindow or more
		{queues: 31, spread: 4, want: []int{31}},
	} {
		qs := make([]*queueJob, tc.queues)
		for i := range qs {
			qs[i] = &queueJob{}
		}
		got := (&pass{spread: tc.spread}).windows(qs)
		var sizes []int
		i := 0
		for _, w := range got {
			sizes = append(sizes, len(w))
			for _, q := range w {
				if q != qs[i] {
					t.Fatalf("%d queues over %d: queue %d out of order", tc.queues, tc.spread, i)
				}
				i++
			}
		}
		if i != tc.queues || !slices.Equal(sizes, tc.want) {
			t.Errorf("%d queues over %d: windows %v, want %v", tc.queues, tc.spread, sizes, tc.want)
		}
	}
}
