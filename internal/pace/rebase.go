package pace

import (
	"context"
	"time"
)

// The re-measure of the baselines. A signal's baseline is first the
// median of a window taken with the pass at its least: at the slow start
// (one statement at a time). Every rebaseEvery the pass re-measures: it
// lets its statements drain, pauses rebasePause (the probe's samples in
// that pause are its baseline: the database without the pass at all)
// and runs rebaseStatements statements one at a time, whose medians
// replace their kinds' baselines; then the pace is what it was.
const (
	rebaseEvery      = 30 * time.Second
	rebasePause      = 250 * time.Millisecond
	rebaseStatements = 2 * windowSize
)

// rebase is the re-measure's state (under the Pacer's mu).
type rebase struct {
	// on from its start until rebaseStatements quiet statements were
	// observed; idle while the pass pauses in it; paused once the pause
	// is over.
	on, idle, paused bool
	// last is when the last re-measure started or ended.
	last      time.Time
	quietLeft int
	// saved is allowed and share before the re-measure.
	saved levers
}

// startRebase begins a re-measure: the statements running drain, the pass
// pauses, then runs quiet statements one at a time (under mu).
func (p *Pacer) startRebase() {
	p.rb.on, p.rb.paused, p.rb.quietLeft = true, false, rebaseStatements
	p.rb.saved = p.lv
	p.rb.last = p.now()
	for _, w := range p.kinds {
		w.quiet = w.quiet[:0]
	}
	p.probe.quiet = p.probe.quiet[:0]
}

// quietSlot takes the one slot of a re-measure, after its pause if it is
// the first (under mu, which it releases while it pauses).
func (p *Pacer) quietSlot(ctx context.Context) ticket {
	t := p.slots.take(p.now(), true)
	if !p.rb.paused {
		p.rb.paused, p.rb.idle = true, true
		p.mu.Unlock()
		p.sleep(ctx, rebasePause)
		p.mu.Lock()
		p.rb.idle = false
		p.probe.rebase(1)
	}
	return t
}

// quietDone counts a quiet statement of the re-measure that failed: it
// says nothing of the database's pace, but the re-measure must end.
func (p *Pacer) quietDone() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rb.quietLeft--; p.rb.on && p.rb.quietLeft <= 0 {
		p.endRebase()
	}
}

// endRebase ends a re-measure: each kind with at least 3 quiet samples
// takes their median as its baseline, and the pace is what it was (under
// mu).
func (p *Pacer) endRebase() {
	for _, w := range p.kinds {
		w.rebase(3)
		w.quiet = w.quiet[:0]
	}
	p.rb.on = false
	p.probe.quiet = p.probe.quiet[:0]
	p.lv.allowed = max(1, p.rb.saved.allowed)
	p.lv.share = min(p.rb.saved.share, p.lim.maxShare)
	p.rb.last = p.now()
	p.slot.Broadcast()
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
