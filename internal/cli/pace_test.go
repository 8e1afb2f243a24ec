package cli_test

// --pace at the command line: both paces delete the same rows, a bad one
// is refused before any work, and --yield-to-load still works with a
// warning.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
)

// TestPaceFlag: run --pace gentle (the default), --pace full and the
// deprecated --yield-to-load delete the same tasks from copies of one
// seeded file; --pace fast and --yield-to-load with --pace full are usage
// errors that do no work; the deprecated flags warn.
func TestPaceFlag(t *testing.T) {
	setEnv(t, nil)
	deleted := map[string]float64{}
	for _, args := range [][]string{{}, {"--pace", "full"}, {"--pace", "gentle"}, {"--yield-to-load"}} {
		db := seedFile(t)
		before := countTasks(t, db)
		code, out, errOut := tqs(append([]string{"run", "--db", db, "--output", "json", "--progress", "never"}, args...)...)
		if code != cli.ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var st map[string]any
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		n, _ := st["tasks_deleted"].(float64)
		if n == 0 || int(n) != before-countTasks(t, db) {
			t.Fatalf("%v: %v tasks deleted, %d gone", args, n, before-countTasks(t, db))
		}
		deleted[strings.Join(args, " ")] = n
		pace, _ := st["pace"].(map[string]any)
		wantMode := "gentle"
		if len(args) == 2 && args[1] == "full" {
			wantMode = "full"
		}
		if pace["mode"] != wantMode {
			t.Errorf("%v: --output json's pace %v, want mode %s", args, st["pace"], wantMode)
		}
		warned := strings.Contains(errOut, "warning: --yield-to-load is deprecated")
		if warned != (len(args) == 1) {
			t.Errorf("%v: deprecation warning %v:\n%s", args, warned, errOut)
		}
	}
	for k, n := range deleted {
		if n != deleted[""] {
			t.Errorf("%q deleted %g tasks, the default %g", k, n, deleted[""])
		}
	}
	db := seedFile(t)
	before := countTasks(t, db)
	for _, args := range [][]string{{"--pace", "fast"}, {"--pace", "full", "--yield-to-load"}, {"--temporal-metrics", "scraper:hunter2@matching:9090/metrics"}} {
		code, _, errOut := tqs(append([]string{"run", "--db", db}, args...)...)
		if code != cli.ExitUsage || !strings.Contains(errOut, "pace") && !strings.Contains(errOut, "metrics endpoint") || strings.Contains(errOut, "hunter2") {
			t.Errorf("%v: exit %d, want %d naming the pace or endpoint, no password: %s", args, code, cli.ExitUsage, errOut)
		}
	}
	if after := countTasks(t, db); after != before {
		t.Errorf("tasks %d → %d: a refused run did work", before, after)
	}
	cfg := writeTemp(t, "c.yaml", "pace: fast\n")
	// The key, not the value (issue 39: a value of a config file is never
	// quoted in an error).
	if code, _, errOut := tqs("run", "--db", db, "--config", cfg); code != cli.ExitUsage || !strings.Contains(errOut, "the value of pace in") || strings.Contains(errOut, "fast") {
		t.Errorf("pace fast in the config file: exit %d: %s", code, errOut)
	}
}
