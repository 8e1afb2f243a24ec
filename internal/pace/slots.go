package pace

import (
	"context"
	"time"
)

// The slots: a pass runs at most levers.allowed statements at once (any
// number at the full pace). A statement waits for a slot in acquire and
// frees it in release, after the pause its share asks for. A statement
// running for longer than stuckAfter no longer counts against allowed:
// one waiting on a lock (or a test's hook) must not stall the pass.

// slots are the statements running, by ticket (under the Pacer's mu).
type slots struct {
	stuckAfter time.Duration
	starts     map[uint64]time.Time
	nextID     uint64
}

// ticket is a statement's slot: its id, and whether it is one of a
// re-measure's quiet statements.
type ticket struct {
	id    uint64
	quiet bool
}

// running is how many statements run.
func (s *slots) running() int { return len(s.starts) }

// active is the statements running that count against allowed at now:
// those running for less than stuckAfter. It also returns when the next
// of them stops counting (zero: none).
func (s *slots) active(now time.Time) (n int, next time.Time) {
	for _, t := range s.starts {
		if end := t.Add(s.stuckAfter); now.Before(end) {
			n++
			if next.IsZero() || end.Before(next) {
				next = end
			}
		}
	}
	return n, next
}

// take starts a statement at now.
func (s *slots) take(now time.Time, quiet bool) ticket {
	s.nextID++
	s.starts[s.nextID] = now
	return ticket{id: s.nextID, quiet: quiet}
}

// free ends t's statement.
func (s *slots) free(t ticket) { delete(s.starts, t.id) }

// acquire waits for a slot: fewer than allowed statements running, or
// the one slot of a re-measure. It returns ErrStopped once the Pacer's
// stop channel is closed, or ctx's error.
func (p *Pacer) acquire(ctx context.Context) (ticket, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.full && !p.rb.on && p.now().Sub(p.rb.last) >= rebaseEvery {
		p.startRebase()
	}
	if n, _ := p.slots.active(p.now()); p.full || (!p.rb.on && n < p.lv.allowed) {
		return p.slots.take(p.now(), false), nil
	}
	broadcast := func() {
		p.mu.Lock()
		p.slot.Broadcast()
		p.mu.Unlock()
	}
	wake := context.AfterFunc(ctx, broadcast)
	defer wake()
	// A closed stop must wake the wait too: without this a waiter slept
	// through shutdown until some statement freed a slot (a test hung 30
	// min in CI).
	left := make(chan struct{})
	defer close(left)
	go func() {
		select {
		case <-p.stop:
			broadcast()
		case <-left:
		}
	}()
	if p.onWait != nil {
		p.onWait()
	}
	for {
		if err := ctx.Err(); err != nil {
			return ticket{}, err
		}
		select {
		case <-p.stop:
			return ticket{}, ErrStopped
		default:
		}
		n, next := p.slots.active(p.now())
		switch {
		case p.full:
			return p.slots.take(p.now(), false), nil
		case p.rb.on && n == 0 && !p.rb.idle:
			return p.quietSlot(ctx), nil
		case !p.rb.on && n < p.lv.allowed:
			return p.slots.take(p.now(), false), nil
		}
		// A statement that stops counting frees a slot too.
		var timer *time.Timer
		if !next.IsZero() {
			timer = time.AfterFunc(next.Sub(p.now())+time.Millisecond, broadcast)
		}
		p.slot.Wait()
		if timer != nil {
			timer.Stop()
		}
	}
}

// release frees the slot after the pause the share asks for. A quiet
// statement of a re-measure does not pause.
func (p *Pacer) release(ctx context.Context, d time.Duration, t ticket) {
	p.mu.Lock()
	share := p.lv.share
	if p.full || t.quiet {
		share = 1
	}
	p.mu.Unlock()
	if pause := pauseFor(d, share); pause > 0 {
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-p.stop:
		}
		t.Stop()
	}
	p.mu.Lock()
	p.slots.free(t)
	p.slot.Broadcast()
	p.mu.Unlock()
}
