package pace

import (
	"testing"
	"time"
)

// TestWindow: a window gives its median once it holds windowSize samples
// and starts the next; a quiet median pulls the baseline down at once and
// up an eighth of the way; a re-measure replaces it with the quiet
// samples' median when there are enough of them.
func TestWindow(t *testing.T) {
	ms := time.Millisecond
	var w window
	for i := range windowSize - 1 {
		if _, full := w.add(time.Duration(10-i) * ms); full {
			t.Fatalf("full after %d samples", i+1)
		}
	}
	m, full := w.add(20 * ms)
	if !full || m != 8*ms || len(w.samples) != 0 {
		t.Fatalf("median %s full %v (%d samples left); want the upper median 8ms of 4..10ms and 20ms, and an empty window", m, full, len(w.samples))
	}
	w.baseline = 10 * ms
	w.follow(18 * ms)
	if w.baseline != 11*ms {
		t.Fatalf("after a higher median: baseline %s, want 11ms", w.baseline)
	}
	w.follow(4 * ms)
	if w.baseline != 4*ms {
		t.Fatalf("after a lower median: baseline %s, want 4ms", w.baseline)
	}
	w.quiet = []time.Duration{9 * ms, 5 * ms}
	w.rebase(3)
	if w.baseline != 4*ms {
		t.Fatalf("two quiet samples of three needed: baseline %s, want it kept", w.baseline)
	}
	w.samples = append(w.samples, ms)
	w.quiet = append(w.quiet, 6*ms)
	w.rebase(3)
	if w.baseline != 6*ms || len(w.samples) != 0 {
		t.Fatalf("after a re-measure: baseline %s, %d samples; want the quiet median 6ms and a new window", w.baseline, len(w.samples))
	}
	if k := kindOf("DeleteTasks", 1000); k != (kind{"DeleteTasks", 10}) || kindOf("GetQueue", -1).size != 0 {
		t.Fatalf("kinds: %+v, %+v", k, kindOf("GetQueue", -1))
	}
}
