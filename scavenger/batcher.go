package scavenger

import (
	"sync/atomic"
	"time"
)

// batcher adapts the batch size of scans and deletes: it halves when a
// statement is slow or times out, and grows back while statements are
// fast, between a floor and Config.TaskBatchSize (as River's maintenance
// services do).
type batcher struct {
	cur       atomic.Int64
	floor     int64
	ceil      int64
	slow      time.Duration
	fastCount atomic.Int64
	// limit, if positive, caps size: the gentle pace's lever (yield.go).
	limit atomic.Int64
}

func newBatcher(ceil int, slow time.Duration) *batcher {
	b := &batcher{floor: min(16, int64(ceil)), ceil: int64(ceil), slow: slow}
	b.cur.Store(int64(ceil))
	return b
}

func (b *batcher) size() int {
	n := b.cur.Load()
	if l := b.limit.Load(); l > 0 {
		n = min(n, max(l, b.floor))
	}
	return int(n)
}

// setCap caps size at n (0: no cap).
func (b *batcher) setCap(n int) { b.limit.Store(int64(n)) }

// observe adjusts the size after a statement that took d.
func (b *batcher) observe(d time.Duration, timedOut bool) {
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
