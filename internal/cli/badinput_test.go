package cli_test

// Issue 39's finding 8: inputs that were accepted and ignored, found
// only after the pass, or classified as "retry later", are bad input:
// exit status 2, before any work.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
)

func TestBadInputsRefusedBeforeAnyWork(t *testing.T) {
	setEnv(t, nil)
	path := seedFile(t)
	before := fileSum(t, path)
	missingDir := filepath.Join(t.TempDir(), "no-such-dir", "stats.json")
	readOnly := filepath.Join(t.TempDir(), "ro.json")
	if err := os.WriteFile(readOnly, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		hint string
	}{
		{"run, empty namespace", []string{"run", "--db", path, "--namespace", ""}, "--namespace given empty"},
		{"run, namespace of commas", []string{"run", "--db", path, "--namespace", " , "}, "--namespace given empty"},
		{"run, empty queue", []string{"run", "--db", path, "--queue", ""}, "--queue given empty"},
		{"run, empty protect", []string{"run", "--db", path, "--protect", ""}, `"none" to protect nothing`},
		{"config, empty queue", []string{"config", "--db", path, "--queue", ""}, "--queue given empty"},
		{"stats-json in a missing directory", []string{"run", "--db", path, "--stats-json", missingDir}, "its directory cannot hold it"},
		{"stats-json a directory", []string{"run", "--db", path, "--stats-json", t.TempDir()}, "a directory: name a file"},
		{"config every 1ns", []string{"config", "--db", path, "--every", "1ns"}, "passes would run back to back"},
		{"config every 59s", []string{"config", "--db", path, "--every", "59s"}, "passes would run back to back"},
		{"config cron every second", []string{"config", "--db", path, "--cron", "@every 1s"}, "passes would run back to back"},
		{"config, a listen without a port", []string{"config", "--db", path, "--listen", "nohost"}, "--listen"},
		{"config, a listen with a bad port", []string{"config", "--db", path, "--listen", "127.0.0.1:99999"}, "use 0 to 65535"},
		{"config, TLS on SQLite", []string{"config", "--db", path, "--tls-ca-file", "/nonexistent/ca.pem"}, "SQLite is a file: it has no TLS"},
		{"config, a CA file that does not exist", []string{"config", "--db", "postgres://u@127.0.0.1:1/x", "--tls-ca-file", "/nonexistent/ca.pem"}, "/nonexistent/ca.pem"},
		{"config, a key without its certificate", []string{"config", "--db", "postgres://u@127.0.0.1:1/x", "--tls-key-file", readOnly}, "TLS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := tqs(c.args...)
			if code != cli.ExitUsage || !strings.Contains(errOut, c.hint) {
				t.Errorf("%q: exit %d, stderr %q: want %d saying %q", c.args, code, errOut, cli.ExitUsage, c.hint)
			}
			if strings.Contains(out, "queues:") || strings.Contains(out, "outcome") {
				t.Errorf("a pass ran: %s", out)
			}
		})
	}
	if fileSum(t, path) != before {
		t.Error("the database changed: a pass ran")
	}
	if _, err := os.Stat(missingDir); err == nil {
		t.Error("--stats-json was written")
	}
	// What is fine stays fine: a --stats-json file that exists is written
	// at the end, and --protect none protects nothing.
	good := filepath.Join(t.TempDir(), "stats.json")
	if code, _, errOut := tqs("run", "--db", path, "--dry-run", "--progress", "never", "--stats-json", good, "--protect", "none"); code != cli.ExitOK {
		t.Fatalf("a good run: exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(good); err != nil || !strings.Contains(string(b), `"outcome": "completed"`) {
		t.Errorf("--stats-json: %v %s", err, b)
	}
}

// TestServeRefusesBadInputs: serve itself, as a process, exits 2 on the
// inputs `config` refuses above, where before it started and ran passes
// (with --every 1ns, back to back). The test waits for the first of its
// exit and its "serve started" line, so a serve that starts fails it
// rather than hanging it.
func TestServeRefusesBadInputs(t *testing.T) {
	path := seedFile(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"every 1ns", []string{"--every", "1ns"}},
		{"cron every second", []string{"--cron", "@every 1s"}},
		{"empty namespace", []string{"--namespace", ""}},
		{"empty queue", []string{"--queue", ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Without startServe's --unsafe-short-interval: the bound is
			// what is tested.
			p := startServeArgs(t, append([]string{"serve", "--log-format", "json", "--listen", "127.0.0.1:0", "--db", path}, c.args...))
			if p.exitedOrStarted() {
				t.Fatalf("serve %v started", c.args)
			}
			if p.code != cli.ExitUsage {
				t.Errorf("serve %v: exit %d, want %d", c.args, p.code, cli.ExitUsage)
			}
		})
	}
}
