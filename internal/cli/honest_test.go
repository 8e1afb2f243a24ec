package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/wire"
)

// TestRefusedBeforeAnyWork: flags that would delete what is not dead, or
// that cannot work, are refused with status 2 before the database is
// touched.
func TestRefusedBeforeAnyWork(t *testing.T) {
	path := seedFile(t)
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		name string
		args []string
		hint string
	}{
		{"a future --now", []string{"--now", future}, "ahead of the clock"},
		{"a short grace", []string{"--grace", "10s"}, "--unsafe-short-grace"},
		{"a batch larger than a job", []string{"--task-batch-size", "30000"}, "exceeds tasks per job"},
		{"a negative retry budget", []string{"--retry-for", "-1s"}, "must not be negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"run", "--db", path}, c.args...)
			code, out, errOut := tqs(args...)
			if code != cli.ExitUsage || !strings.Contains(errOut, c.hint) {
				t.Errorf("%v: exit %d, stderr %q: want %d and %q", c.args, code, errOut, cli.ExitUsage, c.hint)
			}
			if strings.Contains(out, "queues:") {
				t.Errorf("a pass ran: %s", out)
			}
		})
	}
	// The flag that allows a short grace, on a copy nobody else uses.
	if code, _, errOut := tqs("run", "--db", path, "--grace", "10s", "--unsafe-short-grace", "--progress", "never"); code != cli.ExitOK {
		t.Errorf("--unsafe-short-grace: exit %d: %s", code, errOut)
	}
}

// TestSeedAndDemoIgnoreTheEnvironment: with the production database named
// in the environment for run and serve (a DSN, a Temporal config,
// temporal-sql-tool's variables), seed and demo must not write into it.
func TestSeedAndDemoIgnoreTheEnvironment(t *testing.T) {
	prod := seedFile(t) // stands for the production database
	t.Setenv("TQSCAVENGER_DB", prod)
	t.Setenv("TQSCAVENGER_TEMPORAL_CONFIG", writeTemp(t, "temporal.yaml", temporalYAML("pluginName: sqlite\ndatabaseName: "+prod)))
	t.Setenv("SQL_PLUGIN", "sqlite")
	t.Setenv("SQL_DATABASE", prod)
	before := fileSum(t, prod)
	// seed without --db: no database, whatever the environment says.
	if code, _, errOut := tqs("seed", "--queues", "1"); code != cli.ExitUsage || !strings.Contains(errOut, "no database") {
		t.Errorf("seed without --db: exit %d: %s", code, errOut)
	}
	// demo without --db writes its own file in the working directory.
	dir := t.TempDir()
	t.Chdir(dir)
	if code, _, errOut := tqs("demo"); code != cli.ExitOK {
		t.Fatalf("demo: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "tqscavenger-demo.db")); err != nil {
		t.Errorf("demo did not write its own file: %v", err)
	}
	if fileSum(t, prod) != before {
		t.Error("the database of TQSCAVENGER_DB changed")
	}
}

// TestSeedRefusesAForeignDatabase: seed writes only into a database that
// holds nothing but its own queues, unless --force.
func TestSeedRefusesAForeignDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "temporal.db")
	db, err := sqlstore.Open(context.Background(), path, sqlstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A Temporal server's namespace: not seed's.
	temporalNS := wire.NamespaceID{0xa1, 0x1c, 0xe5}
	if _, err := seed.Write(context.Background(), db, seed.Spec{Queues: 2, NamePrefix: "orders", TasksPerQueue: 1, Namespace: temporalNS}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, _, errOut := tqs("seed", "--db", path, "--queues", "1")
	if code != cli.ExitUsage || !strings.Contains(errOut, `"orders-0"`) || !strings.Contains(errOut, "--force") {
		t.Errorf("seed into a foreign database: exit %d: %s", code, errOut)
	}
	if code, _, errOut := tqs("seed", "--db", path, "--queues", "1", "--force"); code != cli.ExitOK {
		t.Errorf("seed --force: exit %d: %s", code, errOut)
	}
	// The server's queues are still there: another prefix is refused too.
	if code, _, errOut := tqs("seed", "--db", path, "--queues", "1", "--name-prefix", "other"); code != cli.ExitUsage {
		t.Errorf("seed beside the server's orders-*: exit %d: %s", code, errOut)
	}
}

// TestSeedItsOwnFile: seed into a file seed wrote: another prefix or
// table version is welcome (seed wrote it all), the same queues again is
// a clear error (no unique-key error), and --tables all writes both
// table versions, as its metavar says.
func TestSeedItsOwnFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seeded.db")
	step := func(want int, says string, args ...string) {
		t.Helper()
		code, out, errOut := tqs(append([]string{"seed", "--db", path, "--tasks", "2"}, args...)...)
		if code != want || !strings.Contains(out+errOut, says) {
			t.Errorf("seed %v: exit %d, %q: want %d saying %q", args, code, out+errOut, want, says)
		}
	}
	step(cli.ExitOK, "seeded 3 queues", "--queues", "3")
	step(cli.ExitUsage, `already holds queue "seed-`, "--queues", "3")
	step(cli.ExitOK, "seeded 2 queues", "--queues", "2", "--tables", "v2", "--name-prefix", "fair")
	step(cli.ExitOK, "seeded 4 queues", "--queues", "2", "--tables", "all", "--name-prefix", "both")
	if _, _, errOut := tqs("seed", "--db", path, "--queues", "1", "--name-prefix", "fresh"); strings.Contains(errOut, "UNIQUE") {
		t.Errorf("a raw constraint error: %s", errOut)
	}
	// seed lists only its own flags: nothing of what a pass deletes.
	for _, cmd := range []string{"seed", "report"} {
		_, out, _ := tqs(cmd, "-h")
		if strings.Contains(out, "What to delete:") || strings.Contains(out, "Pace and safety:") {
			t.Errorf("%s -h lists groups of flags it does not use:\n%s", cmd, out)
		}
	}
}

// TestDemoRefusesADSN: demo takes a file path; a server DSN is refused
// without its password being printed.
func TestDemoRefusesADSN(t *testing.T) {
	for _, dsn := range []string{
		"mysql://root:" + dbSecret + "@127.0.0.1/x",
		"postgres://u:" + dbSecret + "@h/db",
		"u:" + dbSecret + "@tcp(127.0.0.1:3306)/db",
	} {
		code, out, errOut := tqs("demo", "--db", dsn)
		if code != cli.ExitUsage || !strings.Contains(errOut, "give a file path") {
			t.Errorf("demo --db %s: exit %d: %s", sqlstore.Redact(dsn), code, errOut)
		}
		if strings.Contains(out+errOut, dbSecret) {
			t.Errorf("demo printed the password: %s%s", out, errOut)
		}
	}
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
