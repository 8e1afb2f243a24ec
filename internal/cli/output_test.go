package cli_test

import (
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
)

// TestOneOutputStyle: -o is --output on every command with output
// (run, report, schema check, version; schedule describe has --output),
// durations in JSON are seconds, and failures_by_cause is {} not null.
func TestOneOutputStyle(t *testing.T) {
	path := seedFile(t)
	for _, args := range [][]string{
		{"run", "--db", path, "-o", "json", "--dry-run", "--progress", "never", "--log-level", "warn"},
		{"report", "--db", path, "-o", "json"},
		{"schema", "check", "--db", path, "-o", "json"},
		{"version", "-o", "json"},
		{"version", "--output", "json"},
	} {
		code, out, errOut := tqs(args...)
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); code != cli.ExitOK || err != nil {
			t.Errorf("%v: exit %d, %v: %s%s", args, code, err, out, errOut)
			continue
		}
		for k, v := range m {
			if _, isString := v.(string); isString && (k == "grace" || strings.HasSuffix(k, "_timeout") || k == "elapsed") {
				t.Errorf("%v: %s = %v: a duration as a string, want seconds", args, k, v)
			}
		}
		switch args[0] {
		case "report":
			if m["grace_seconds"] != 172800.0 {
				t.Errorf("report: grace_seconds = %v, want 172800", m["grace_seconds"])
			}
		case "run":
			if fbc, ok := m["failures_by_cause"].(map[string]any); !ok || fbc == nil {
				t.Errorf("run: failures_by_cause = %v, want {}", m["failures_by_cause"])
			}
		case "version":
			if m["version"] == nil || m["revision"] == nil || m["go_version"] == nil {
				t.Errorf("version -o json: %v", m)
			}
		}
	}
	if code, out, _ := tqs("schedule", "describe", "-h"); code != cli.ExitOK || !strings.Contains(out, "-o, --output") {
		t.Errorf("schedule describe has no -o, --output:\n%s", out)
	}
	if code, _, errOut := tqs("version", "-o", "yaml"); code != cli.ExitUsage {
		t.Errorf("version -o yaml: exit %d: %s", code, errOut)
	}
}

// TestUnavailableOnlyOnExit4: "database unavailable:" is said only where
// the status is 4 (retry later), never on a status 2 error.
func TestUnavailableOnlyOnExit4(t *testing.T) {
	code, _, errOut := tqs("run", "--db", filepath.Join(t.TempDir(), "missing.db"))
	if code != cli.ExitUsage || strings.Contains(errOut, "database unavailable") || !strings.Contains(errOut, "does not exist") {
		t.Errorf("a missing SQLite file: exit %d, %q: want 2 without \"database unavailable\"", code, errOut)
	}
	// A port nobody listens on: unreachable, status 4, and said so.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	code, _, errOut = tqs("run", "--db", "postgres://u@"+addr+"/db?sslmode=disable")
	if code != cli.ExitUnavailable || !strings.Contains(errOut, "database unavailable") {
		t.Errorf("an unreachable server: exit %d, %q: want 4 saying database unavailable", code, errOut)
	}
}

// TestServeListenBusy: a --listen port in use is bad input (status 2),
// not a failed pass.
func TestServeListenBusy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, errOut := tqs("serve", "--db", seedFile(t), "--listen", ln.Addr().String())
	if code != cli.ExitUsage || !strings.Contains(errOut, "--listen") {
		t.Errorf("serve --listen on a busy port: exit %d, %q: want 2", code, errOut)
	}
}
