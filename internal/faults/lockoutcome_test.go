package faults

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestLockUnansweredIsFailure: mid-pass, the network to the lock's
// session stops answering (a proxy in front of the lock's store pauses),
// so the lock's check runs out of its timeout: the pass is stopped by a
// cancellation whose cause wraps context.DeadlineExceeded.
//
// Invariant: what ended the pass decides its outcome: a lost lock is
// Failed with cause lock_lost and an error wrapping ErrLockLost, never
// Interrupted (only the caller's context or Shutdown interrupt a pass).
func TestLockUnansweredIsFailure(t *testing.T) {
	for _, e := range servers {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			seedWorkload(t, db, workload{dead: 200, live: 10, tasksPerQueue: 10})
			px := newProxy(t, db.DSN().URL.Host)
			lockDB := testdb.OpenDSN(t, px.via(dsnOf(db)))
			lock, err := lockDB.Lock(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			rec := newRecorder()
			cfg := scavenger.Config{Pace: scavenger.Pace{LockCheckInterval: 100 * time.Millisecond, LockCheckTimeout: time.Second, ListPageSize: 10, MaxStatementsPerSecond: 10}, Hooks: scavenger.Hooks{Lock: lock, Middleware: []store.Middleware{rec.middleware()}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
			done := make(chan struct{})
			var st scavenger.Stats
			go func() {
				defer close(done)
				st, err = scavenger.New(db, cfg).Run(ctx)
			}()
			<-rec.started
			px.pause()
			<-done
			px.resume()
			lock.Unlock()
			if st.Outcome != scavenger.Failed || st.Cause != scavenger.CauseLockLost || !errors.Is(err, store.ErrLockLost) {
				t.Errorf("a pass whose lock's check did not answer: %s (cause %q), %v; want failed, lock_lost, ErrLockLost", st.Outcome, st.Cause, err)
			}
			if errors.Is(err, context.DeadlineExceeded) && st.Outcome == scavenger.Interrupted {
				t.Error("a deadline inside the lost lock's cause was taken for an interruption")
			}
		})
	}
}

// TestServeLockUnansweredCountsFailed: under serve, a pass whose lock's
// check does not answer (the whole network to the server pauses) is a
// failed pass in the log and the metrics.
//
// Invariant: the pass's log line is "scavenger pass failed" with cause
// lock_lost; passes_failed_total rises, passes_interrupted_total does not.
func TestServeLockUnansweredCountsFailed(t *testing.T) {
	for _, e := range servers {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			before := seedWorkload(t, db, workload{dead: 200, live: 10, tasksPerQueue: 10})
			px := newProxy(t, db.DSN().URL.Host)
			p := start(t, "serve", "--db", px.via(dsnOf(db)), "--run-at-start", "--every", "1h", "--jitter", "0", "--listen", "127.0.0.1:0",
				"--log-format", "json", "--list-page-size", "10", "--max-statements-per-second", "10", "--statement-timeout", "30s")
			addr := listenAddr(t, p)
			waitLockHeld(t, db, 30*time.Second)
			// Mid-pass: the daemon takes the lock, checks the schema under
			// it, then starts the pass. A pause before the pass has started
			// stalls the schema check instead (a setup failure, "schema
			// check failed, pass not run": another case, not this one).
			p.waitOutput(`"msg":"scavenger pass started"`, 30*time.Second)
			px.pause()
			end := passEnd(t, p, lockBound+30*time.Second)
			if end["msg"] != "scavenger pass failed" || end["cause"] != "lock_lost" {
				t.Errorf("the pass whose lock's check did not answer ended as: %v", end)
			}
			// The log line comes before the daemon counts the pass.
			m := metrics(t, addr)
			for i := 0; i < 300 && m["tqscavenger_passes_failed_total"]+m["tqscavenger_passes_interrupted_total"] < 1; i++ {
				select { // a poll of a condition, not a timed assertion
				case <-p.done:
				case <-time.After(100 * time.Millisecond):
				}
				m = metrics(t, addr)
			}
			if m["tqscavenger_passes_failed_total"] < 1 || m["tqscavenger_passes_interrupted_total"] != 0 {
				t.Errorf("passes_failed_total %v, passes_interrupted_total %v after a pass lost its lock",
					m["tqscavenger_passes_failed_total"], m["tqscavenger_passes_interrupted_total"])
			}
			px.resume()
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.wait(time.Minute)
			checkSafe(t, before, snapshot(t, db))
		})
	}
}

// TestLockLostAfterLastCheck: the lock's session is killed while the pass
// works, and a second scavenger takes the lock at once; the pass's own
// checks are an hour apart, so none of them sees it before the pass ends.
//
// Invariant: a pass whose lock was lost before its last statement
// finished never reports success: the check after the last statement
// fails it (Failed, cause lock_lost, ErrLockLost).
func TestLockLostAfterLastCheck(t *testing.T) {
	for _, e := range servers {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			first := testdb.Open(t, e)
			w := workload{dead: 40, live: 5, tasksPerQueue: 10}
			before := seedWorkload(t, first, w)
			second := testdb.OpenDSN(t, dsnOf(first))
			lock1, err := first.Lock(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			defer lock1.Unlock()
			rec := newRecorder()
			cfg := scavenger.Config{Pace: scavenger.Pace{LockCheckInterval: time.Hour, ListPageSize: 10, MaxStatementsPerSecond: 50}, Hooks: scavenger.Hooks{Lock: lock1, Middleware: []store.Middleware{rec.middleware()}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
			done := make(chan struct{})
			var st scavenger.Stats
			go func() {
				defer close(done)
				st, err = scavenger.New(first, cfg).Run(ctx)
			}()
			<-rec.started
			killSession(t, first, lockSession(t, first))
			lock2, lerr := second.Lock(ctx, true)
			if lerr != nil {
				t.Fatalf("the second scavenger cannot take the lock of a killed session: %v", lerr)
			}
			defer lock2.Unlock()
			<-done
			if st.Outcome.Success() || st.Outcome != scavenger.Failed || st.Cause != scavenger.CauseLockLost || !errors.Is(err, store.ErrLockLost) {
				t.Errorf("a pass whose lock was lost before it ended: %s (cause %q), %v; want failed, lock_lost, ErrLockLost", st.Outcome, st.Cause, err)
			}
			checkSafe(t, before, snapshot(t, first))
		})
	}
}

// passEnd waits for the first pass's last log line (completed, failed or
// interrupted), for at most limit, and returns it.
func passEnd(t *testing.T, p *proc, limit time.Duration) map[string]any {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		out, changed := p.out.String(), p.changed
		p.mu.Unlock()
		for _, l := range strings.Split(out, "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) != nil {
				continue
			}
			switch m["msg"] {
			case "scavenger pass completed", "scavenger pass failed", "scavenger pass interrupted":
				return m
			}
		}
		select {
		case <-changed:
		case <-p.done:
			t.Fatalf("exited (status %d) before a pass ended", p.code)
		case <-deadline.C:
			t.Fatalf("no pass ended within %s", limit)
		}
	}
}
