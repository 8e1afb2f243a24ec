package pace

import (
	"math/bits"
	"slices"
	"time"
)

// Each signal is judged by windows of windowSize samples: a window's
// median is compared with the signal's baseline, its latency with the
// pass at its least. The first window of a signal is its baseline; the
// re-measure (rebase.go) replaces the baselines of the pass's own
// statements and of the probe. Between re-measures a quiet window (median
// at most Config.Factor × baseline) moves the baseline at once to a lower
// median and an eighth of the way to a higher one.
const windowSize = 8

// window is one signal's baseline and the latencies since its last
// window.
type window struct {
	baseline time.Duration // 0 until the first window
	samples  []time.Duration
	// quiet holds the samples of the re-measure under way (the probe's:
	// those taken with the pass at its least).
	quiet []time.Duration
}

// add adds d to the window; once it holds windowSize samples, it returns
// their median and starts the next.
func (w *window) add(d time.Duration) (m time.Duration, full bool) {
	w.samples = append(w.samples, d)
	if len(w.samples) < windowSize {
		return 0, false
	}
	m = median(w.samples)
	w.samples = w.samples[:0]
	return m, true
}

// follow moves the baseline after a quiet window of median m.
func (w *window) follow(m time.Duration) {
	if m < w.baseline {
		w.baseline = m
	} else {
		w.baseline += (m - w.baseline) / 8
	}
}

// rebase makes the median of the quiet samples the baseline, if there are
// at least least of them (and one), and starts a new window.
func (w *window) rebase(least int) {
	if len(w.quiet) < max(1, least) {
		return
	}
	w.baseline = median(w.quiet)
	w.samples = w.samples[:0]
}

// median sorts ds and returns its median (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// kind is a kind of the pass's statements, each a signal of its own: the
// store method and the bit length of its result's row count, since a
// delete of 1,000 rows is not slow for taking longer than one of 16.
type kind struct {
	method string
	size   int
}

// kindOf is the kind of a statement of method that returned rows.
func kindOf(method string, rows int) kind {
	return kind{method: method, size: bits.Len(uint(max(rows, 0)))}
}
