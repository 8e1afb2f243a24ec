package faults

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
)

// lockBound is how long, by default, a pass may work after its lock was
// lost: the check interval plus the check timeout (docs/scale.md, "The
// lock: a design note").
const lockBound = scavenger.DefaultLockCheckInterval + scavenger.DefaultLockCheckTimeout

// cancelSlack is what cancelling a pass's statements in flight may add
// to lockBound: a cancel request's round trip.
const cancelSlack = time.Second

// TestLockLostStopsThePass kills the lock's session in the middle of a
// pass, starts a second pass that takes the lock at once, and records
// every store call of both.
//
// Invariant: the first pass fails with ErrLockLost, and none of its calls
// ends later than lockBound after its session was killed, so that the two
// passes never work at once for longer; no live task is deleted and no
// orphan is made by the two passes at work together.
func TestLockLostStopsThePass(t *testing.T) {
	for _, e := range servers {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			first := testdb.Open(t, e)
			w := workload{dead: 300, live: 20, tasksPerQueue: 10}
			before := seedWorkload(t, first, w)
			second := testdb.OpenDSN(t, dsnOf(first))

			lock1, err := first.Lock(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			defer lock1.Unlock()
			rec1, rec2 := newRecorder(), newRecorder()
			// Slow passes: each would take 15s or more alone.
			cfg := func(l store.Lock, r *recorder) scavenger.Config {
				return scavenger.Config{Pace: scavenger.Pace{ListPageSize: 10, MaxStatementsPerSecond: 10}, Hooks: scavenger.Hooks{Lock: l, Middleware: []store.Middleware{r.middleware()}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
			}
			type result struct {
				st  scavenger.Stats
				err error
			}
			done1 := make(chan result, 1)
			go func() {
				st, err := scavenger.New(first, cfg(lock1, rec1)).Run(ctx)
				done1 <- result{st, err}
			}()
			<-rec1.started
			killSession(t, first, lockSession(t, first))
			killed := time.Now()

			lock2, err := second.Lock(ctx, true)
			if err != nil {
				t.Fatalf("the second pass cannot take the lock of a killed session: %v", err)
			}
			defer lock2.Unlock()
			pctx, stop2 := context.WithCancel(ctx)
			defer stop2()
			done2 := make(chan result, 1)
			go func() {
				st, err := scavenger.New(second, cfg(lock2, rec2)).Run(pctx)
				done2 <- result{st, err}
			}()

			var r1 result
			select {
			case r1 = <-done1:
			case <-time.After(lockBound + time.Minute):
				t.Fatal("the first pass goes on after its lock was lost")
			}
			if !errors.Is(r1.err, store.ErrLockLost) || r1.st.Outcome != scavenger.Failed {
				t.Errorf("first pass: %s, %v; want failed with ErrLockLost", r1.st.Outcome, r1.err)
			}
			_, last1, calls1 := rec1.span()
			first2, _, _ := rec2.span()
			after := last1.Sub(killed)
			t.Logf("first pass: %d calls, the last ended %s after its session was killed; the second pass's first call %s after",
				calls1, after.Round(time.Millisecond), first2.Sub(killed).Round(time.Millisecond))
			if after > lockBound+cancelSlack {
				t.Errorf("the first pass worked %s after its lock was lost, beyond the bound of %s", after, lockBound)
			}
			if !first2.IsZero() && last1.After(first2) {
				t.Logf("both passes worked at once for %s (bound %s)", last1.Sub(first2).Round(time.Millisecond), lockBound)
			}
			stop2()
			<-done2
			checkSafe(t, before, snapshot(t, first))
		})
	}
}

// TestRunLockLost: `run` whose lock session is killed stops the pass and
// exits with status 1 within the bound.
//
// Invariant: status 1, the message names the lost lock, the process ends
// within lockBound (plus its exit) after the kill, nothing live deleted.
func TestRunLockLost(t *testing.T) {
	for _, e := range servers {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			before := seedWorkload(t, db, workload{dead: 200, live: 10, tasksPerQueue: 10})
			p := start(t, "run", "--db", dsnOf(db), "--progress", "never", "--list-page-size", "10", "--max-statements-per-second", "10")
			id := waitLockHeld(t, db, 30*time.Second)
			killSession(t, db, id)
			killed := time.Now()
			code := p.wait(lockBound + time.Minute)
			took := time.Since(killed)
			if code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			if !strings.Contains(p.output(), "lock was lost") {
				t.Errorf("the output does not say the lock was lost:\n%s", p.output())
			}
			if took > lockBound+5*time.Second {
				t.Errorf("ran on %s after its lock was lost", took)
			}
			checkSafe(t, before, snapshot(t, db))
		})
	}
}

// TestServeMaxConnsOne: serve with --max-conns 1 on a server engine runs
// its passes and answers /readyz: the lock does not take the pool's only
// connection.
//
// Invariant: a pass completes within a minute and /readyz answers 200.
func TestServeMaxConnsOne(t *testing.T) {
	for _, e := range servers {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			w := workload{dead: 20, live: 5, tasksPerQueue: 10}
			before := seedWorkload(t, db, w)
			p := start(t, "serve", "--db", dsnOf(db), "--max-conns", "1", "--run-at-start", "--every", "1h", "--jitter", "0",
				"--listen", "127.0.0.1:0", "--log-format", "json")
			p.waitOutput(`"msg":"scavenger pass completed"`, time.Minute)
			addr := listenAddr(t, p)
			res, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("/readyz: %s", res.Status)
			}
			after := snapshot(t, db)
			checkSafe(t, before, after)
			checkFinished(t, after, w)
		})
	}
}

// listenAddr reads serve's address from its "serve started" log line.
func listenAddr(t *testing.T, p *proc) string {
	t.Helper()
	p.waitOutput(`"msg":"serve started"`, time.Minute)
	for _, l := range strings.Split(p.output(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "serve started" {
			if a, _ := m["listen"].(string); a != "" {
				return a
			}
		}
	}
	t.Fatal("serve started without an address")
	return ""
}

// TestServeLockLost: serve whose lock session is killed mid-pass fails
// that pass, and goes on: its next pass takes the lock again and
// finishes.
//
// Invariant: the pass fails within the bound, is counted as failed, the
// next one completes, nothing live goes, and SIGTERM still exits 0.
func TestServeLockLost(t *testing.T) {
	for _, e := range servers {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			w := workload{dead: 200, live: 10, tasksPerQueue: 10}
			before := seedWorkload(t, db, w)
			p := start(t, "serve", "--db", dsnOf(db), "--run-at-start", "--every", "1s", "--unsafe-short-interval", "--jitter", "0", "--listen", "127.0.0.1:0",
				"--log-format", "json", "--list-page-size", "10", "--max-statements-per-second", "10")
			addr := listenAddr(t, p)
			killSession(t, db, waitLockHeld(t, db, 30*time.Second))
			killed := time.Now()
			p.waitOutput(`"msg":"scavenger pass failed"`, lockBound+30*time.Second)
			if took := time.Since(killed); took > lockBound+5*time.Second {
				t.Errorf("the pass failed %s after its lock was lost", took)
			}
			if !strings.Contains(p.output(), "lock was lost") {
				t.Error("the failed pass does not say the lock was lost")
			}
			p.waitOutput(`"msg":"scavenger pass completed"`, 2*time.Minute)
			if m := metrics(t, addr); m["tqscavenger_passes_failed_total"] < 1 {
				t.Errorf("passes_failed_total %v after a pass lost its lock", m["tqscavenger_passes_failed_total"])
			}
			p.cmd.Process.Signal(syscall.SIGTERM)
			if code := p.wait(time.Minute); code != 0 {
				t.Errorf("serve stopped by SIGTERM: exit %d", code)
			}
			after := snapshot(t, db)
			checkSafe(t, before, after)
			checkFinished(t, after, w)
		})
	}
}
