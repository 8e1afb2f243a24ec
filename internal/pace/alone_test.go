package pace

import (
	"context"
	"testing"
	"time"
)

// TestPacerAlone: a whole-database writer proven alone runs at the whole
// share and stays there while quiet; no longer alone, it is back at the
// duty cycle at once, and a re-measure under way does not restore the
// share it saved. A store without a whole-database lock ignores it.
func TestPacerAlone(t *testing.T) {
	p := New(Config{Workers: 4, Factor: 2, BatchSize: 100, WholeDatabase: true, Logger: quietLog()})
	p.setAlone(true)
	feed(p, 30, time.Millisecond)
	if s := p.Snapshot(); s.Share != 1 || !s.Alone || s.Allowed != 1 {
		t.Fatalf("alone: share %g, alone %v, %d at once; want 1, true, 1", s.Share, s.Alone, s.Allowed)
	}
	p.mu.Lock()
	p.startRebase()
	p.mu.Unlock()
	p.setAlone(false)
	if s := p.Snapshot(); s.Share != sqliteDuty || s.Alone {
		t.Fatalf("no longer alone: share %g, alone %v; want %g, false", s.Share, s.Alone, sqliteDuty)
	}
	p.mu.Lock()
	p.endRebase()
	p.mu.Unlock()
	feed(p, 30, time.Millisecond)
	if s := p.Snapshot(); s.Share != sqliteDuty {
		t.Fatalf("after the re-measure: share %g, want the duty %g", s.Share, sqliteDuty)
	}

	q := New(Config{Workers: 4, Factor: 2, BatchSize: 100, Logger: quietLog()})
	q.setAlone(true)
	if s := q.Snapshot(); s.Alone {
		t.Fatal("a store without a whole-database lock took alone")
	}
}

// scriptedAlone answers Alone from its channel, and that the context
// ended once it is closed.
type scriptedAlone chan bool

func (s scriptedAlone) Alone(ctx context.Context) (bool, string, error) {
	select {
	case a, ok := <-s:
		if ok {
			return a, "scripted", nil
		}
	case <-ctx.Done():
	}
	return false, "", ctx.Err()
}

// TestWatchAlone: the watch sets what each proof says, and stops when its
// context ends.
func TestWatchAlone(t *testing.T) {
	p := New(Config{Workers: 4, Factor: 2, BatchSize: 100, WholeDatabase: true, Logger: quietLog()})
	answers := make(scriptedAlone)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchAlone(ctx, answers, p, quietLog(), nil, time.Millisecond)
	}()
	for _, a := range []bool{true, true, false, true} {
		answers <- a
		// The next answer is taken only after this one was applied.
		answers <- a
		if got := p.Snapshot().Alone; got != a {
			t.Fatalf("after the proof said %v: alone %v", a, got)
		}
	}
	cancel()
	<-done
}
