package cli_test

// The command line as an operator meets it: help on stdout with status 0,
// flags grouped with each default once, suggestions for a mistyped command
// or flag, shell completion, deprecated aliases that still work, and
// --output json.

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
)

func TestHelp(t *testing.T) {
	for _, args := range [][]string{
		{"-h"}, {"--help"}, {"help"}, {"help", "run"},
		{"run", "-h"}, {"run", "--help"}, {"run", "-help"}, {"run", "--help-all"}, {"run", "-help-all"}, {"run", "--db", "x", "--help-all"},
		{"serve", "-h"}, {"serve", "--help-all"}, {"config", "-h"}, {"config", "run", "--help-all"}, {"report", "-h"},
		{"schema", "-h"}, {"schema", "check", "-h"}, {"schema", "setup", "--help"}, {"seed", "-h"}, {"demo", "-h"},
		{"version", "-h"}, {"completion", "-h"},
	} {
		code, out, errOut := tqs(args...)
		if code != cli.ExitOK || errOut != "" || !strings.Contains(out, "Usage") {
			t.Errorf("%v: exit %d, stderr %q, stdout:\n%s", args, code, errOut, out)
		}
	}
	// Without a command: the list, and status 2 (nothing was done).
	if code, out, _ := tqs(); code != cli.ExitUsage || !strings.Contains(out, "Commands:") {
		t.Errorf("no arguments: exit %d:\n%s", code, out)
	}
}

// TestHelpGroups: run's and serve's flags come in the groups, in order,
// and every default is spelt once, as a user types it; -h shows the
// everyday flags of the groups, --help-all all of them.
func TestHelpGroups(t *testing.T) {
	for _, c := range []struct {
		cmd    string
		groups []string
		says   []string
	}{
		{"run", []string{"Connection:", "What to delete:", "Pace and safety:", "Output:"},
			[]string{"--grace DURATION", "(default 48h)", "(default 4; 32 with --compat=temporal)", "--output text|json"}},
		{"run --help-all", []string{"Connection:", "What to delete:", "Pace and safety:", "Output:"},
			[]string{"--grace DURATION", "(default 48h)", "--retry-for DURATION", "(default 5m)", "(default 4; 32 with --compat=temporal)", "--output text|json"}},
		{"serve", []string{"Connection:", "What to delete:", "Pace and safety:", "Daemon:", "Output:"},
			[]string{"--every DURATION", "(default 12h)", "SIGHUP"}},
		{"serve --help-all", []string{"Connection:", "What to delete:", "Pace and safety:", "Daemon:", "Output:"},
			[]string{"--every DURATION", "(default 12h)", "--shutdown-timeout DURATION", "(default 30s)", "SIGHUP"}},
	} {
		args := strings.Fields(c.cmd)
		if len(args) == 1 {
			args = append(args, "-h")
		}
		_, out, _ := tqs(args...)
		at := 0
		for _, g := range c.groups {
			i := strings.Index(out[at:], "\n"+g+"\n")
			if i < 0 {
				t.Errorf("%s -h: group %q missing or out of order:\n%s", c.cmd, g, out)
				break
			}
			at += i + 1
		}
		for _, s := range c.says {
			if !strings.Contains(out, s) {
				t.Errorf("%s -h does not say %q", c.cmd, s)
			}
		}
		// No duration spelt with zero units, no default given twice.
		if m := regexp.MustCompile(`\d+h0m0s|\d+m0s`).FindString(out); m != "" {
			t.Errorf("%s -h spells a duration %s", c.cmd, m)
		}
		if strings.Contains(out, "(default 0") || regexp.MustCompile(`\(default [^)]*\)[^\n]*\(default`).MatchString(out) {
			t.Errorf("%s -h shows a default twice or a zero default:\n%s", c.cmd, out)
		}
		if strings.Contains(out, "--table ") {
			t.Errorf("%s -h shows a deprecated alias", c.cmd)
		}
	}
}

func TestSuggestions(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"rnu"}, `unknown command "rnu" (did you mean "run"?)`},
		{[]string{"serv"}, `(did you mean "serve"?)`},
		{[]string{"run", "--dryrun"}, "unknown flag: --dryrun (did you mean --dry-run?)"},
		{[]string{"run", "--workrs", "3"}, "(did you mean --workers?)"},
		{[]string{"serve", "--evry", "1h"}, "(did you mean --every?)"},
		{[]string{"report", "--jsn"}, "(did you mean --json?)"},
		{[]string{"run", "--zzzzzzzz"}, "unknown flag: --zzzzzzzz (see tqscavenger run -h)"},
		// A word cut short means the flag it begins: not the nearest by
		// edits (--dry is two from --db, --out from --port).
		{[]string{"run", "--dry"}, "unknown flag: --dry (did you mean --dry-run?)"},
		{[]string{"run", "--out", "json"}, "unknown flag: --out (did you mean --output?)"},
		{[]string{"serve", "--out", "json"}, "unknown flag: --out (see tqscavenger serve -h)"},
		{[]string{"report", "--dry"}, "unknown flag: --dry (see tqscavenger report -h)"},
		{[]string{"run", "--max"}, "(did you mean --max-conns, --max-deferred, --max-deletes-per-second or --max-statements-per-second?)"},
		// One letter: what other tools mean by it, or the flags it begins.
		{[]string{"run", "-q"}, "(did you mean --log-level warn?)"},
		{[]string{"run", "-p"}, "flag needs an argument: 'p' in -p"}, // -p is temporal-sql-tool's, --port
		{[]string{"serve", "-o"}, "(did you mean --orphans?)"},
		{[]string{"run", "-o", "yaml"}, `--output "yaml": use text or json`}, // -o is --output
		{[]string{"run", "extra"}, `unexpected argument "extra"`},
		{[]string{"schema"}, "use one of: `setup` or `check`"},
	} {
		code, out, errOut := tqs(c.args...)
		if code != cli.ExitUsage || out != "" || !strings.Contains(errOut, c.says) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q: want 2 and one line saying %q", c.args, code, out, errOut, c.says)
		}
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		code, out, errOut := tqs("completion", shell)
		if code != 0 || !strings.Contains(out, "tqscavenger") || len(out) < 1000 {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %s", shell, code, len(out), errOut)
		}
	}
	// What a shell asks for as the user types: commands, flags, values.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "ru"}, "run"},
		{[]string{"__complete", "run", "--dry"}, "--dry-run"},
		{[]string{"__complete", "run", "--output", ""}, "json"},
		{[]string{"__complete", "serve", "--orphans", ""}, "expired"},
	} {
		code, out, errOut := tqs(c.args...)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, %q, stderr %s: want %q offered", c.args, code, out, errOut, c.want)
		}
	}
}

// TestDeprecatedAlias: seed's --table is --tables now, as run's; the old
// name still works, with a warning, and is not in help.
func TestDeprecatedAlias(t *testing.T) {
	setEnv(t, nil)
	db := filepath.Join(t.TempDir(), "tasks.db")
	code, out, errOut := tqs("seed", "--db", db, "--table", "v2", "--queues", "2", "--tasks", "3")
	if code != 0 || !strings.Contains(errOut, "tqscavenger seed: warning: --table is deprecated: use --tables") {
		t.Fatalf("seed --table: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = tqs("report", "--db", db, "--output", "json", "--modes=false")
	var r struct {
		Tables map[string]struct{ Queues int }
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("report: exit %d:\n%s", code, out)
	}
	if r.Tables["v2"].Queues != 2 || r.Tables["v1"].Queues != 0 {
		t.Errorf("seed --table v2 did not write 2 queues to the v2 tables alone:\n%s", out)
	}
	if code, _, errOut := tqs("seed", "--db", db, "--tables", "v3"); code != cli.ExitUsage || !strings.Contains(errOut, `--tables "v3": use v1, v2 or all`) {
		t.Errorf("seed --tables v3: exit %d, %s", code, errOut)
	}
}

// TestOutputJSON: run, schema check and report write one JSON document on
// stdout with --output json (report --json too); the logs stay on stderr.
func TestOutputJSON(t *testing.T) {
	setEnv(t, nil)
	db := filepath.Join(t.TempDir(), "tasks.db")
	if code, _, errOut := tqs("seed", "--db", db, "--queues", "3", "--tasks", "10", "--expired", "1", "--no-expiry", "0"); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := tqs("run", "--db", db, "--output", "json", "--log-format", "json")
	var st map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("run --output json: exit %d, stdout not one JSON document:\n%s\nstderr: %s", code, out, errOut)
	}
	if st["outcome"] != "completed" || st["tasks_deleted"] != float64(30) || st["queues_processed"] != float64(3) {
		t.Errorf("run --output json: %v", st)
	}
	if !strings.Contains(errOut, `"msg":"scavenger pass completed"`) || strings.Contains(out, "msg") {
		t.Errorf("logs not on stderr alone:\nstdout: %s\nstderr: %s", out, errOut)
	}

	code, out, errOut = tqs("schema", "check", "--db", db, "--output", "json")
	var sc struct {
		Engine string
		Tables map[string]bool
		OK     bool
	}
	if code != 0 || json.Unmarshal([]byte(out), &sc) != nil || sc.Engine != "sqlite" || !sc.OK || !sc.Tables["v1"] {
		t.Errorf("schema check --output json: exit %d, %+v:\n%s%s", code, sc, out, errOut)
	}
	for _, args := range [][]string{{"--output", "json"}, {"--json"}} {
		code, out, errOut = tqs(append([]string{"report", "--db", db}, args...)...)
		var r map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
			t.Errorf("report %v: exit %d, not JSON:\n%s%s", args, code, out, errOut)
		}
	}
	for _, args := range [][]string{{"run", "--output", "yaml"}, {"schema", "check", "--output", "xml"}, {"report", "--json", "--output", "text"}} {
		if code, _, errOut := tqs(append(args, "--db", db)...); code != cli.ExitUsage {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
}

// TestReportUnsafeShortGrace: report takes --unsafe-short-grace, as run
// does: a grace under the minimum is refused without it (status 2, the
// flag named), and reported with it.
func TestReportUnsafeShortGrace(t *testing.T) {
	setEnv(t, nil)
	db := filepath.Join(t.TempDir(), "tasks.db")
	if code, out, errOut := tqs("seed", "--db", db, "--queues", "2", "--tasks", "3"); code != 0 {
		t.Fatalf("seed: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := tqs("report", "--db", db, "--grace", "10s"); code != cli.ExitUsage || !strings.Contains(errOut, "--unsafe-short-grace") {
		t.Errorf("report --grace 10s: exit %d, %s: want %d naming --unsafe-short-grace", code, errOut, cli.ExitUsage)
	}
	if code, out, errOut := tqs("report", "--db", db, "--grace", "10s", "--unsafe-short-grace"); code != 0 || !strings.Contains(out, "all rules") {
		t.Errorf("report --grace 10s --unsafe-short-grace: exit %d\n%s%s", code, out, errOut)
	}
}
