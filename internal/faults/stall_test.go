package faults

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// holdLock runs stmts on a connection of its own and keeps what they lock
// until release (or the test's end).
func holdLock(t *testing.T, db *sqlstore.DB, stmts ...string) (release func()) {
	t.Helper()
	conn, err := testdb.SQL(t, db).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		conn.ExecContext(context.Background(), "ROLLBACK")
		if db.Engine() == sqlstore.MySQL {
			conn.ExecContext(context.Background(), "UNLOCK TABLES")
		}
		conn.Close()
	}
	t.Cleanup(release)
	return release
}

// tableLock is the statements that lock the tasks table against every
// other session.
func tableLock(e sqlstore.Engine) []string {
	if e == sqlstore.MySQL {
		return []string{"LOCK TABLES tasks WRITE"}
	}
	return []string{"BEGIN", "LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE"}
}

// retryBudget is the --retry-for of the stall tests, and stallBound how
// long a run may take under them: the budget, a few statement timeouts
// and the lock's check, and the process's start.
const (
	retryBudget = 10 * time.Second
	stallBound  = retryBudget + 30*time.Second
)

// TestStatementTimeoutNothingCanMeet: another session holds the task
// table locked for the whole run (from before it starts, or from the
// middle of its pass), and every statement on it runs out of
// --statement-timeout 1s.
//
// Invariant: run ends with status 1 within the retry budget's bound, says
// what to change (--statement-timeout), and deletes nothing live.
func TestStatementTimeoutNothingCanMeet(t *testing.T) {
	for _, e := range servers {
		for _, when := range []string{"from the start", "mid-pass"} {
			t.Run(string(e)+"/"+when, func(t *testing.T) {
				t.Parallel()
				db := testdb.Open(t, e)
				before := seedWorkload(t, db, workload{dead: 100, live: 10, tasksPerQueue: 10})
				args := []string{"run", "--db", dsnOf(db), "--progress", "never", "--statement-timeout", "1s", "--retry-for", retryBudget.String(),
					"--list-page-size", "10", "--max-statements-per-second", "20"}
				var release func()
				if when == "from the start" {
					release = holdLock(t, db, tableLock(e)...)
				}
				startAt := time.Now()
				p := start(t, args...)
				if when == "mid-pass" {
					waitLockHeld(t, db, 30*time.Second)
					release = holdLock(t, db, tableLock(e)...)
				}
				code := p.wait(stallBound)
				took := time.Since(startAt)
				t.Logf("exit %d after %s", code, took.Round(time.Millisecond))
				if code != 1 {
					t.Errorf("exit status %d, want 1", code)
				}
				if out := p.output(); !strings.Contains(out, "--statement-timeout") {
					t.Errorf("the output does not say to change --statement-timeout:\n%s", out)
				}
				release()
				checkSafe(t, before, snapshot(t, db))
			})
		}
	}
}

// TestRowLockHeld: another session holds a dead queue's row locked for
// the whole run; its delete cannot finish within the statement timeout.
//
// Invariant: run ends with status 1 within the bound; the locked row is
// still there; nothing live goes; once the lock is released, a rerun
// finishes the job.
func TestRowLockHeld(t *testing.T) {
	for _, e := range servers {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			w := workload{dead: 30, live: 5, tasksPerQueue: 10}
			before := seedWorkload(t, db, w)
			var locked string
			var lockedHash int64
			var lockedID []byte
			if err := testdb.SQL(t, db).QueryRowContext(ctx, "SELECT range_hash, task_queue_id FROM task_queues ORDER BY range_hash DESC LIMIT 1").Scan(&lockedHash, &lockedID); err != nil {
				t.Fatal(err)
			}
			locked = queueKey(lockedHash, lockedID)
			update := "UPDATE task_queues SET range_id = range_id WHERE range_hash = " + itoa(lockedHash)
			release := holdLock(t, db, "BEGIN", update)
			code, out := tqs(t, stallBound, "run", "--db", dsnOf(db), "--progress", "never", "--statement-timeout", "1s", "--retry-for", retryBudget.String())
			if code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			if !strings.Contains(out, "statement timeout") {
				t.Errorf("the output does not name the statement timeout:\n%s", out)
			}
			after := snapshot(t, db)
			checkSafe(t, before, after)
			if _, ok := after.queues[locked]; !ok {
				t.Errorf("the locked queue row %s was deleted", locked)
			}
			release()
			if code, out := tqs(t, time.Minute, "run", "--db", dsnOf(db), "--progress", "never"); code != 0 {
				t.Fatalf("rerun: exit %d:\n%s", code, out)
			}
			checkFinished(t, snapshot(t, db), w)
		})
	}
}

// TestNetworkStopsAnswering: mid-pass, the network between run and its
// server stops passing anything (a proxy pauses both ways): no answer, no
// error, for good.
//
// Invariant: run ends with status 1 within the bound (its statements time
// out, its lock's check does not answer); nothing live goes; a rerun on a
// working network finishes the job.
func TestNetworkStopsAnswering(t *testing.T) {
	for _, e := range servers {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			w := workload{dead: 100, live: 5, tasksPerQueue: 10}
			before := seedWorkload(t, db, w)
			px := newProxy(t, db.DSN().URL.Host)
			p := start(t, "run", "--db", px.via(dsnOf(db)), "--progress", "never", "--statement-timeout", "2s", "--retry-for", retryBudget.String(),
				"--list-page-size", "10", "--max-statements-per-second", "20")
			waitLockHeld(t, db, 30*time.Second)
			px.pause()
			paused := time.Now()
			code := p.wait(stallBound)
			t.Logf("exit %d %s after the pause", code, time.Since(paused).Round(time.Millisecond))
			if code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			px.resume()
			checkSafe(t, before, snapshot(t, db))
			if code, out := tqs(t, time.Minute, "run", "--db", dsnOf(db), "--progress", "never", "--wait-lock"); code != 0 {
				t.Fatalf("rerun: exit %d:\n%s", code, out)
			}
			checkFinished(t, snapshot(t, db), w)
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
