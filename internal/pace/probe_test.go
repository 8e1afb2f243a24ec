package pace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// fakeProbe answers each probe with the error its fail says for that
// round (from 1), after moving the Pacer's clock by lat.
type fakeProbe struct {
	p      *Pacer
	clock  *atomic.Int64 // the Pacer's clock, in nanoseconds
	lat    time.Duration
	fail   func(round int) error
	rounds int
	closed atomic.Bool
}

func (f *fakeProbe) Probe(context.Context) error {
	f.rounds++
	f.clock.Add(int64(f.lat))
	return f.fail(f.rounds)
}

func (f *fakeProbe) Close() error { f.closed.Store(true); return nil }

// proberStore is a store.Store whose OpenProbe returns probe or err.
type proberStore struct {
	store.Store
	probe store.Probe
	err   error
}

func (s proberStore) OpenProbe(context.Context) (store.Probe, error) { return s.probe, s.err }

// TestRunProbe: each probe that answers is a sample of the probe signal,
// timed on the Pacer's clock; one that fails is not, and three failures
// in a row end the probe for the pass, with a log line.
func TestRunProbe(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	p := New(Config{Workers: 4, Factor: 2, Logger: log})
	var clock atomic.Int64
	p.now = func() time.Time { return time.Unix(0, clock.Load()) }
	down := errors.New("connection refused")
	f := &fakeProbe{p: p, clock: &clock, lat: 3 * time.Millisecond, fail: func(round int) error {
		switch {
		case round == 3, round == 5, round == 6: // two in a row: not yet
			return down
		case round >= 10:
			return down
		}
		return nil
	}}
	runProbe(context.Background(), f, p, log, nil, time.Millisecond)
	if f.rounds != 12 {
		t.Fatalf("%d rounds, want 12: three failures in a row end it", f.rounds)
	}
	if got := len(p.probe.quiet); got != 6 {
		t.Fatalf("%d probe samples, want the 6 that answered", got)
	}
	if p.probe.quiet[0] != 3*time.Millisecond {
		t.Fatalf("a sample of %s, want the probe's 3ms", p.probe.quiet[0])
	}
	if !strings.Contains(logs.String(), "the probe failed") || !strings.Contains(logs.String(), "connection refused") {
		t.Fatalf("log %q, want the probe's end and its error", logs.String())
	}
}

// TestStartProbe: a store without a probe, or whose engine has none, runs
// none and says nothing; one whose probe cannot open says so; a running
// probe is closed by the func StartProbe returned, and ends with ctx or
// stop.
func TestStartProbe(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		st      store.Store
		wantLog string
	}{
		{"no prober", proberStore{}.Store, ""},
		{"unsupported", proberStore{err: fmt.Errorf("sqlite: %w", errors.ErrUnsupported)}, ""},
		{"cannot open", proberStore{err: errors.New("too many connections")}, "no probe connection"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			StartProbe(ctx, c.st, New(Config{Logger: log}), log, nil)()
			if c.wantLog == "" && logs.Len() > 0 || !strings.Contains(logs.String(), c.wantLog) {
				t.Errorf("log %q, want %q", logs.String(), c.wantLog)
			}
		})
	}
	var clock atomic.Int64
	f := &fakeProbe{clock: &clock, fail: func(int) error { return nil }}
	StartProbe(ctx, proberStore{probe: f}, New(Config{Logger: quietLog()}), quietLog(), nil)()
	if !f.closed.Load() {
		t.Error("the probe was not closed")
	}
	// The probe's loop ends with its context, or with stop.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	runProbe(cctx, f, New(Config{}), quietLog(), nil, time.Millisecond)
	stop := make(chan struct{})
	close(stop)
	runProbe(ctx, f, New(Config{}), quietLog(), stop, time.Millisecond)
}
