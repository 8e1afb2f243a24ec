package cli_test

// run --lock-held-ok: a held lock is a skipped run, exit status 0, for a
// CronJob whose next run tries again; without the flag it stays exit 5.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestLockHeldOK holds the lock of each engine's database as another
// tqscavenger would: run --lock-held-ok exits 0, says at info what holds
// the lock, prints an outcome "skipped" (text, --output json and
// --stats-json) and deletes nothing; without the flag the same run exits
// 5.
func TestLockHeldOK(t *testing.T) {
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			db := testdb.Open(t, e)
			dsn := db.DSN().String()
			if db.DSN().URL != nil {
				dsn = db.DSN().URL.String()
			}
			lock, err := db.Lock(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Unlock()

			code, out, errOut := tqs("run", "--db", dsn, "--lock-held-ok", "--progress", "never", "--log-format", "json")
			if code != cli.ExitOK {
				t.Fatalf("--lock-held-ok beside a held lock: exit %d, want 0\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			if out != "outcome: skipped (lock held by another tqscavenger)\n" {
				t.Errorf("stdout: %q", out)
			}
			var line struct{ Level, Msg, Lock string }
			if err := json.Unmarshal([]byte(strings.TrimSpace(errOut)), &line); err != nil {
				t.Fatalf("stderr is not one JSON log line: %v\n%s", err, errOut)
			}
			if line.Level != "INFO" || line.Msg != "lock held by another tqscavenger, skipping pass" || !strings.Contains(line.Lock, "another tqscavenger holds the lock") {
				t.Errorf("log line: %+v, want INFO, the skip and what holds the lock", line)
			}

			stats := filepath.Join(t.TempDir(), "stats.json")
			code, out, errOut = tqs("run", "--db", dsn, "--lock-held-ok", "--progress", "never", "--log-level", "warn", "-o", "json", "--stats-json", stats)
			if code != cli.ExitOK || errOut != "" {
				t.Fatalf("-o json: exit %d, stderr %q, want 0 and none", code, errOut)
			}
			fromFile, err := os.ReadFile(stats)
			if err != nil {
				t.Fatal(err)
			}
			for name, doc := range map[string]string{"--output json": out, "--stats-json": string(fromFile)} {
				var m map[string]any
				if err := json.Unmarshal([]byte(doc), &m); err != nil {
					t.Fatalf("%s: %v\n%s", name, err, doc)
				}
				if m["outcome"] != "skipped" || m["reason"] != "lock_held" || m["exit_status"] != 0.0 || m["tasks_deleted"] != 0.0 {
					t.Errorf("%s: outcome %v, reason %v, exit_status %v, tasks_deleted %v; want skipped, lock_held, 0, 0", name, m["outcome"], m["reason"], m["exit_status"], m["tasks_deleted"])
				}
				if lock, _ := m["lock"].(string); !strings.Contains(lock, "another tqscavenger holds the lock") {
					t.Errorf("%s: lock %q does not say what holds it", name, lock)
				}
			}

			// The exit-status contract: without the flag, still 5.
			checkError(t, []string{"run", "--db", dsn}, "another tqscavenger is running against this database", cli.ExitLocked, tqs)
		})
	}
}

// TestLockHeldOKFreeLock: with the lock free, --lock-held-ok changes
// nothing: the pass runs and deletes as any other.
func TestLockHeldOKFreeLock(t *testing.T) {
	path := seedFile(t)
	code, out, errOut := tqs("run", "--db", path, "--lock-held-ok", "--progress", "never", "--log-level", "warn", "-o", "json")
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil || code != cli.ExitOK {
		t.Fatalf("exit %d, %v\nstdout: %s\nstderr: %s", code, err, out, errOut)
	}
	if m["outcome"] != "completed" || m["tasks_deleted"] != 500.0 {
		t.Errorf("outcome %v, tasks_deleted %v; want completed, 500", m["outcome"], m["tasks_deleted"])
	}
	// And the lock it took is free again.
	db, err := sqlstore.Open(context.Background(), path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lock, err := db.Lock(context.Background(), false)
	if err != nil {
		t.Fatalf("the lock after the pass: %v", err)
	}
	lock.Unlock()
}
