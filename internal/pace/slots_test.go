package pace

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPacerSlots: no more than allowed calls run at once, and a waiter
// leaves at stop, or when its context ends.
func TestPacerSlots(t *testing.T) {
	stop := make(chan struct{})
	p := New(Config{Workers: 4, Factor: 2, Logger: quietLog(), Stop: stop})
	ctx := context.Background()
	first, err := p.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// allowed is 1: a second caller waits until stop.
	done := make(chan error)
	go func() { _, err := p.acquire(ctx); done <- err }()
	close(stop)
	if err := <-done; !errors.Is(err, ErrStopped) {
		t.Fatalf("waiter after stop: %v, want ErrStopped", err)
	}
	p.release(ctx, 0, first)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	p.lv.allowed = 0 // nothing may start: only the context ends the wait
	if _, err := p.acquire(cctx); err != context.Canceled {
		t.Fatalf("acquire with a cancelled context: %v", err)
	}
}

// TestPacerStuckStatement: a statement in flight for stuckAfter (waiting
// on a lock, say) no longer counts against the slots, so one blocked
// statement does not stall a gentle pass; before that it does.
func TestPacerStuckStatement(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	p := New(Config{Workers: 4, Factor: 2, StuckAfter: 2 * time.Second, Logger: quietLog()})
	p.now = func() time.Time { return now }
	p.rb.last = now
	ctx := context.Background()
	held, err := p.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := p.slots.active(p.now()); n != 1 || n < p.lv.allowed {
		t.Fatalf("%d active of %d allowed: a second statement would not wait", n, p.lv.allowed)
	}
	now = now.Add(2 * time.Second) // stuckAfter
	next, err := p.acquire(ctx)    // goes at once: the held one no longer counts
	if err != nil {
		t.Fatal(err)
	}
	if p.slots.running() != 2 {
		t.Fatalf("%d running, want the held statement and the next", p.slots.running())
	}
	p.release(ctx, 0, next)
	p.release(ctx, 0, held)
	if p.slots.running() != 0 || len(p.slots.starts) != 0 {
		t.Fatalf("%d running, %d starts kept after both released", p.slots.running(), len(p.slots.starts))
	}
}

// TestSetFullWakesWaiter: a statement waiting for a slot at the gentle
// pace goes as soon as the pace is set to full, without a slot freed;
// set back to gentle, the cap holds again.
func TestSetFullWakesWaiter(t *testing.T) {
	p := New(Config{Workers: 4, Factor: 2, StuckAfter: time.Hour, Logger: quietLog()}) // only the pace may let the waiter go
	waiting := make(chan struct{})
	p.onWait = func() { close(waiting) }
	ctx := context.Background()
	first, err := p.acquire(ctx) // the one slot of the slow start
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan ticket, 1)
	go func() { tk, _ := p.acquire(ctx); got <- tk }()
	<-waiting
	p.SetFull(true)
	second := <-got
	p.SetFull(false)
	if p.full {
		t.Fatal("still full after SetFull(false)")
	}
	// Two run, one is allowed: the next waits until both are done.
	waiting = make(chan struct{})
	go func() { tk, _ := p.acquire(ctx); got <- tk }()
	<-waiting
	p.release(ctx, 0, first)
	select {
	case tk := <-got:
		t.Fatalf("statement %d went with another still running", tk.id)
	default:
	}
	p.release(ctx, 0, second)
	third := <-got
	p.release(ctx, 0, third)
	if p.slots.running() != 0 {
		t.Fatalf("%d running after all released", p.slots.running())
	}
}
