package pace

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRun: a statement that succeeds is a sample of its kind, timed on
// the Pacer's clock; one that fails is not, but a failed quiet statement
// still counts toward the end of a re-measure; a closed stop refuses the
// next statement with ErrStopped without running it.
func TestRun(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	stop := make(chan struct{})
	p := New(Config{Workers: 4, Factor: 2, Logger: quietLog(), Stop: stop})
	p.now = func() time.Time { return now }
	p.rb.last = now
	ctx := context.Background()
	statement := func(err error) func() (int, error) {
		return func() (int, error) {
			now = now.Add(7 * time.Millisecond)
			return 100, err
		}
	}
	if err := p.Run(ctx, "ReadTasks", statement(nil)); err != nil {
		t.Fatal(err)
	}
	w := p.kinds[kind{"ReadTasks", bitsLen(100)}]
	if w == nil || len(w.samples) != 1 || w.samples[0] != 7*time.Millisecond {
		t.Fatalf("after a statement: window %+v, want its 7ms", w)
	}
	bad := errors.New("bad")
	if err := p.Run(ctx, "DeleteTasks", statement(bad)); !errors.Is(err, bad) {
		t.Fatalf("a failed statement: %v, want its error", err)
	}
	if got := p.Methods(); len(got) != 1 {
		t.Fatalf("methods %v: a failed statement was observed", got)
	}
	p.sleep = func(context.Context, time.Duration) {}
	now = now.Add(rebaseEvery)
	for range rebaseStatements {
		if err := p.Run(ctx, "ReadTasks", statement(bad)); !errors.Is(err, bad) {
			t.Fatal(err)
		}
	}
	if p.rb.on {
		t.Fatal("a re-measure of failed statements never ended")
	}
	if p.slots.running() != 0 {
		t.Fatalf("%d running after the statements", p.slots.running())
	}
	close(stop)
	p.lv.allowed = 0 // the next statement must wait, and sees the stop
	ran := false
	if err := p.Run(ctx, "ReadTasks", func() (int, error) { ran = true; return 0, nil }); !errors.Is(err, ErrStopped) || ran {
		t.Fatalf("after stop: %v (ran %v), want ErrStopped and not run", err, ran)
	}
}
