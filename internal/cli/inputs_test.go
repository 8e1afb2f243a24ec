package cli_test

// Issue 25's findings 1 and 4 at the command line: bad input, in every
// form the fault run found, exits 2 with a message before any work.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
)

// TestCheckpointPathRefusedBeforeWork: a --checkpoint the pass could not
// read or keep up to date is refused before the pass, not after it ran
// without one (exit 0, one ERROR line) or read /dev/full without end.
func TestCheckpointPathRefusedBeforeWork(t *testing.T) {
	setEnv(t, nil)
	db := seedFile(t)
	before := countTasks(t, db)
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(t.TempDir(), "big.json")
	os.WriteFile(big, nil, 0o600)
	os.Truncate(big, 100<<20)
	cases := map[string]string{
		"device":            "/dev/full",
		"directory":         t.TempDir(),
		"missing directory": "/nonexist/dir/f.json",
		"too large":         big,
	}
	if os.Geteuid() != 0 { // root writes anywhere
		cases["unwritable directory"] = filepath.Join(ro, "f.json")
	}
	for name, path := range cases {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := tqs("run", "--db", db, "--checkpoint", path, "--output", "json")
			if code != cli.ExitUsage || !strings.Contains(stderr, "--checkpoint") {
				t.Errorf("exit %d, want %d naming --checkpoint: %s", code, cli.ExitUsage, stderr)
			}
			if stdout != "" {
				t.Errorf("a pass refused before it started printed a result: %s", stdout)
			}
		})
	}
	if after := countTasks(t, db); after != before {
		t.Errorf("tasks %d → %d: a refused run did work", before, after)
	}
}

// TestNumericFlagRanges: every numeric flag, from any layer, is refused
// negative, NaN, infinite or over its cap; 0 is the default.
func TestNumericFlagRanges(t *testing.T) {
	setEnv(t, nil)
	db := seedFile(t)
	for _, args := range [][]string{
		{"--workers", "99999999999"}, {"--workers", "-1"}, {"--max-conns", "5000"},
		{"--max-deletes-per-second", "NaN"}, {"--max-statements-per-second", "Inf"}, {"--max-deletes-per-second", "-3"},
		{"--yield-factor", "NaN"}, {"--grace", "-48h"}, {"--retry-for", "-1s"}, {"--port", "70000"},
	} {
		code, _, stderr := tqs(append([]string{"run", "--db", db, "--dry-run"}, args...)...)
		if code != cli.ExitUsage || !strings.Contains(stderr, args[0]) {
			t.Errorf("%v: exit %d, want %d naming the flag: %s", args, code, cli.ExitUsage, stderr)
		}
	}
	cfg := writeTemp(t, "c.yaml", "workers: 99999999999\n")
	if code, _, stderr := tqs("run", "--db", db, "--config", cfg); code != cli.ExitUsage || !strings.Contains(stderr, "workers in ") {
		t.Errorf("workers from the config file: exit %d: %s", code, stderr)
	}
	t.Setenv("TQSCAVENGER_MAX_DELETES_PER_SECOND", "NaN")
	if code, _, stderr := tqs("run", "--db", db); code != cli.ExitUsage || !strings.Contains(stderr, "TQSCAVENGER_MAX_DELETES_PER_SECOND") {
		t.Errorf("a NaN rate from the environment: exit %d: %s", code, stderr)
	}
	os.Unsetenv("TQSCAVENGER_MAX_DELETES_PER_SECOND")
	if code, _, stderr := tqs("run", "--db", db, "--dry-run", "--workers", "0", "--max-deletes-per-second", "0"); code != cli.ExitOK {
		t.Errorf("0 (the default, unlimited): exit %d: %s", code, stderr)
	}
}
