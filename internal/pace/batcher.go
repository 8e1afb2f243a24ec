package pace

import (
	"sync/atomic"
	"time"
)

// Batcher adapts the batch size of a pass's scans and deletes: it halves
// when a statement is slow or times out, and grows back while statements
// are fast, between a floor and the pass's batch size (as River's
// maintenance services do). The gentle pace's controller caps it (a
// Pacer's Config.Batch). It is safe for concurrent use.
type Batcher struct {
	cur       atomic.Int64
	floor     int64
	ceil      int64
	slow      time.Duration
	fastCount atomic.Int64
	// limit, if positive, caps size: the gentle pace's lever.
	limit atomic.Int64
}

// NewBatcher returns a batcher that starts at ceil and halves after a
// statement slower than slow.
func NewBatcher(ceil int, slow time.Duration) *Batcher {
	b := &Batcher{floor: min(16, int64(ceil)), ceil: int64(ceil), slow: slow}
	b.cur.Store(int64(ceil))
	return b
}

// Size is the batch size of the next statement.
func (b *Batcher) Size() int {
	n := b.cur.Load()
	if l := b.limit.Load(); l > 0 {
		n = min(n, max(l, b.floor))
	}
	return int(n)
}

// Floor is the least batch size: a statement of a batch this small that
// still times out is not made smaller.
func (b *Batcher) Floor() int { return int(b.floor) }

// setCap caps Size at n (0: no cap), but never below the floor: the
// Pacer's lever.
func (b *Batcher) setCap(n int) { b.limit.Store(int64(n)) }

// Observe adjusts the size after a statement that took d.
func (b *Batcher) Observe(d time.Duration, timedOut bool) {
	cur := b.cur.Load()
	switch {
	case timedOut || d > b.slow:
		b.cur.CompareAndSwap(cur, max(b.floor, cur/2))
		b.fastCount.Store(0)
	case d < b.slow/4 && cur < b.ceil:
		// Grow only after a run of fast statements, so one lucky
		// statement does not undo a shrink.
		if b.fastCount.Add(1) >= 8 {
			b.fastCount.Store(0)
			b.cur.CompareAndSwap(cur, min(b.ceil, cur*2))
		}
	}
}
