package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
)

// schemaProbe is a text only the schema check's statements send: its
// probes of each task table's columns.
const schemaProbe = "WHERE 1 = 0"

// TestSchemaCheckConnectionKilled: the connection of run's start-up
// schema check is cut as the check's statement goes out (a failover, a
// proxy restarting), once, and then at every attempt.
//
// Invariant: a transient error of the schema check is retried, bounded
// (scavenger.SchemaCheckAttempts) and logged; once the check answers, the
// pass runs (exit 0). A check that keeps failing ends the run with the
// JSON document still on stdout (outcome failed, the step named) and the
// error's exit status, never an empty stdout.
func TestSchemaCheckConnectionKilled(t *testing.T) {
	for _, e := range servers {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			before := seedWorkload(t, db, workload{dead: 5, live: 2, tasksPerQueue: 5})
			px := newProxy(t, db.DSN().URL.Host)
			args := []string{"run", "--db", px.via(dsnOf(db)), "--output", "json", "--log-format", "json", "--retry-initial", "10ms"}

			px.cutQueriesHolding(schemaProbe, 1)
			code, stdout, stderr := runSplit(t, args...)
			if code != 0 || !strings.Contains(stderr, scavenger.MsgSchemaRetry) {
				t.Fatalf("a schema check whose connection was cut once: status %d, retry logged %v; want 0, logged\n%s", code, strings.Contains(stderr, scavenger.MsgSchemaRetry), stderr)
			}
			if doc := result(t, stdout); doc["outcome"] != "completed" {
				t.Errorf("the pass after a retried schema check: %v", doc)
			}
			checkSafe(t, before, snapshot(t, db))

			px.cutQueriesHolding(schemaProbe, 1000)
			code, stdout, stderr = runSplit(t, args...)
			if code == 0 || code == 2 {
				t.Errorf("a schema check whose connection is cut at every attempt: status %d; want a failure that is no usage error\n%s", code, stderr)
			}
			if n := strings.Count(stderr, scavenger.MsgSchemaRetry); n != scavenger.SchemaCheckAttempts-1 {
				t.Errorf("%d retries logged; want %d (bounded)", n, scavenger.SchemaCheckAttempts-1)
			}
			doc := result(t, stdout)
			if doc["outcome"] != "failed" || doc["failed_step"] != "schema check" || doc["exit_status"] != float64(code) || doc["error"] == "" {
				t.Errorf("the JSON of a failed start: %v; want outcome failed, failed_step \"schema check\", exit_status %d, the error", doc, code)
			}
		})
	}
}

// runSplit runs the command to its end and returns its status, stdout
// and stderr apart.
func runSplit(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, bin, args...)
	cmd.Env = append(os.Environ(), "TQSCAVENGER_DB=", "TQSCAVENGER_CONFIG=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errOut.String()
	case errors.As(err, &ee) && c.Err() == nil:
		return ee.ExitCode(), out.String(), errOut.String()
	}
	t.Fatalf("run %v: %v\n%s", args, err, errOut.String())
	return -1, "", ""
}

// result parses stdout as the one JSON document of --output json.
func result(t *testing.T, stdout string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("stdout is not one JSON document (%v): %q", err, stdout)
	}
	return m
}

// TestReportSchemaCheckConnectionKilled: report's start-up schema check
// (the one serve's start makes too) has its connection cut once as the
// check's statement goes out.
//
// Invariant: retried (logged) as a pass's is, and report runs (exit 0).
func TestReportSchemaCheckConnectionKilled(t *testing.T) {
	for _, e := range servers {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			seedWorkload(t, db, workload{dead: 2, live: 1, tasksPerQueue: 2})
			px := newProxy(t, db.DSN().URL.Host)
			px.cutQueriesHolding(schemaProbe, 1)
			code, _, stderr := runSplit(t, "report", "--db", px.via(dsnOf(db)))
			if code != 0 || !strings.Contains(stderr, scavenger.MsgSchemaRetry) {
				t.Errorf("report after one cut of its schema check: status %d, retry logged %v; want 0, logged\n%s", code, strings.Contains(stderr, scavenger.MsgSchemaRetry), stderr)
			}
		})
	}
}
