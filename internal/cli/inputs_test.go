package cli_test

// Issue 25's findings 1 and 4 at the command line: bad input, in every
// form the fault run found, exits 2 with a message before any work.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
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

// TestBadInputExits2 is issue 25's finding 4: each bad input the fault
// run found exiting 1, 4 or 0 (or taken silently) exits 2 with a message,
// before any work.
func TestBadInputExits2(t *testing.T) {
	setEnv(t, nil)
	db := seedFile(t)
	before := countTasks(t, db)
	long := "/tmp/" + strings.Repeat("a", 5000)
	multi := writeTemp(t, "multi.yaml", "workers: 2\n---\ndry-run: false\n")
	other := seedFile(t)
	// A checkpoint of another database: refused by the pass, and no
	// result printed for a pass that never ran.
	cp := filepath.Join(t.TempDir(), "cp.json")
	os.WriteFile(cp, []byte(`{"version":1,"partition":"0/1","settings":"x","database":"sqlite:elsewhere","walks":[]}`), 0o600)
	cases := []struct {
		name string
		args []string
	}{
		{"not a database", []string{"run", "--db", "/etc/passwd"}},
		{"5000-char path", []string{"run", "--db", long}},
		{"a directory", []string{"run", "--db", t.TempDir()}},
		{"listen", []string{"serve", "--db", db, "--listen", "127.0.0.1:19470x"}},
		{"partition with a blank", []string{"run", "--db", db, "--partition", " 0/2"}},
		{"partition with a sign", []string{"run", "--db", db, "--partition", "+0/2"}},
		{"multi-document config", []string{"run", "--db", db, "--config", multi}},
		{"db twice", []string{"run", "--db", db, "--db", other}},
		{"db twice with =", []string{"run", "--db=" + db, "--db", other}},
		{"DSN and sql-tool settings", []string{"run", "--db", db, "--endpoint", "127.0.0.1", "--plugin", "sqlite"}},
		{"checkpoint directory", []string{"run", "--db", db, "--checkpoint", t.TempDir()}},
		{"checkpoint of another database", []string{"run", "--db", db, "--checkpoint", cp, "--output", "json"}},
	}
	if os.Getenv(testdbEnv(sqlstorePostgres)) != "" {
		cases = append(cases, struct {
			name string
			args []string
		}{"postgres unknown parameter", []string{"run", "--db", serverWith(t, sqlstorePostgres, "foo_bar_baz=1")}})
	}
	if os.Getenv(testdbEnv(sqlstoreMySQL)) != "" {
		cases = append(cases, struct {
			name string
			args []string
		}{"mysql unknown parameter", []string{"run", "--db", serverWith(t, sqlstoreMySQL, "foo_bar_baz=1")}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := tqs(c.args...)
			if code != cli.ExitUsage || !strings.HasPrefix(stderr[strings.LastIndex(strings.TrimSpace("\n"+stderr), "\n")+1:], "tqscavenger ") {
				t.Errorf("exit %d, want %d with a message: %s", code, cli.ExitUsage, stderr)
			}
			if strings.Contains(stdout, "outcome") {
				t.Errorf("bad input printed a pass's result: %s", stdout)
			}
		})
	}
	if after := countTasks(t, db); after != before {
		t.Errorf("tasks %d → %d: bad input did work", before, after)
	}
	// Other repeated flags keep last-wins.
	if code, _, stderr := tqs("run", "--db", db, "--dry-run", "--workers", "2", "--workers", "3"); code != cli.ExitOK {
		t.Errorf("--workers twice: exit %d: %s", code, stderr)
	}
}

const (
	sqlstorePostgres = sqlstore.Postgres
	sqlstoreMySQL    = sqlstore.MySQL
)

func testdbEnv(e sqlstore.Engine) string { return testdb.EnvVar(e) }

// serverWith is the test server's DSN of engine e with the query q added.
func serverWith(t *testing.T, e sqlstore.Engine, q string) string {
	dsn := testdb.Empty(t, e)
	if strings.Contains(dsn, "?") {
		return dsn + "&" + q
	}
	return dsn + "?" + q
}
