package cli_test

// Database errors at the command line: every way a database can be
// unusable ends with exit status 2 and one line on stderr that says what to
// do, and no password ever reaches the output. And the happy path on the
// server engines: schema setup, seed, run, schema check.

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// dbSecret is the password in the DSNs of these tests.
const dbSecret = "sekret-Cli-Pw0rd"

// tqs runs the command line and returns its exit status and output.
func tqs(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = cli.Main(args, &o, &e)
	return code, o.String(), e.String()
}

func TestDatabaseErrors(t *testing.T) {
	type tc struct {
		name string
		dsn  func(t *testing.T) string
		hint string
	}
	// The exit status is 2 (bad input) unless the server cannot be
	// reached: 4, retry later.
	want := func(name string) int {
		if name == "nothing listening" || name == "password in the query" {
			return cli.ExitUnavailable
		}
		return cli.ExitUsage
	}
	server := func(t *testing.T, e sqlstore.Engine, user, db string) string {
		u, err := url.Parse(testdb.Server(t, e))
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			u.User = url.UserPassword(user, dbSecret)
		}
		u.Path = "/" + db
		return u.String()
	}
	cases := []tc{
		{"mysql/wrong password", func(t *testing.T) string {
			u, _ := testdb.MySQLUser(t)
			u.User = url.UserPassword(u.User.Username(), dbSecret)
			return u.String()
		}, "check the user and password"},
		// PostgreSQL here trusts local connections, whatever the password: a
		// user that does not exist is the nearest case.
		{"postgres/unknown user", func(t *testing.T) string { return server(t, sqlstore.Postgres, "tqs_nobody", "test") }, "check the user and password"},
		{"postgres/missing database", func(t *testing.T) string { return server(t, sqlstore.Postgres, "postgres", "tqs_missing") }, "create the database, or fix its name"},
		{"mysql/missing database", func(t *testing.T) string { return server(t, sqlstore.MySQL, "", "tqs_missing") }, "create the database, or fix its name"},
		{"postgres/no task tables", func(t *testing.T) string { return withPassword(t, testdb.Empty(t, sqlstore.Postgres)) }, "create them with `tqscavenger schema setup`"},
		{"mysql/no task tables", func(t *testing.T) string {
			u, _ := testdb.MySQLUser(t)
			empty, err := url.Parse(testdb.Empty(t, sqlstore.MySQL))
			if err != nil {
				t.Fatal(err)
			}
			empty.User = u.User
			return empty.String()
		}, "create them with `tqscavenger schema setup`"},
		{"sqlite/no task tables", func(t *testing.T) string {
			dsn := testdb.Empty(t, sqlstore.SQLite)
			db, err := sqlstore.Open(context.Background(), dsn, sqlstore.Options{Create: true})
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
			return dsn
		}, "create them with `tqscavenger schema setup`"},
		{"sqlite/missing file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "temporal.db") }, "does not exist: check the path"},
		{"postgres/no host", func(t *testing.T) string { return "postgres://u:" + dbSecret + "@/temporal" }, "use postgres://user:pass@host:port/database"},
		{"mysql/no database", func(t *testing.T) string { return "mysql://u:" + dbSecret + "@db.example:3306" }, "use mysql://user:pass@host:port/database"},
		{"bad percent-encoding", func(t *testing.T) string { return "mysql://u:" + dbSecret + "%zz@h/db" }, "percent-encoding"},
		{"scheme without slashes", func(t *testing.T) string { return "mysql:u:" + dbSecret + "@h/db" }, "has no host"},
		{"unknown scheme", func(t *testing.T) string { return "oracle://u:" + dbSecret + "@h/db" }, "use postgres://, mysql://, sqlite:PATH"},
		{"nothing listening", func(t *testing.T) string { return "postgres://u:" + dbSecret + "@127.0.0.1:1/db?connect_timeout=5" }, "is the server running"},
		{"password in the query", func(t *testing.T) string { return "mysql://u@127.0.0.1:1/db?password=" + dbSecret }, "is the server running"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dsn := c.dsn(t)
			for _, args := range [][]string{
				{"run", "--db", dsn},
				{"run", "--dry-run", "--db", dsn},
				{"schema", "check", "--db", dsn},
			} {
				checkError(t, args, c.hint, want(c.name), tqs)
			}
			// The same from the environment, where a password belongs.
			t.Setenv("TQSCAVENGER_DB", dsn)
			checkError(t, []string{"run"}, c.hint, want(c.name), tqs)
		})
	}
}

// withPassword adds dbSecret as the password of a server DSN (PostgreSQL
// here ignores it).
func withPassword(t *testing.T, dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), dbSecret)
	return u.String()
}

func checkUsageError(t *testing.T, args []string, hint string, run func(...string) (int, string, string)) {
	t.Helper()
	checkError(t, args, hint, cli.ExitUsage, run)
}

// checkError runs args and checks that they fail with the exit status
// want, on one line of stderr that names the command and says hint,
// without the password.
func checkError(t *testing.T, args []string, hint string, want int, run func(...string) (int, string, string)) {
	t.Helper()
	code, out, errOut := run(args...)
	name := args[0]
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		name += " " + args[1]
	}
	if code != want {
		t.Errorf("%s: exit %d, want %d\nstderr: %s", name, code, want, errOut)
	}
	if strings.Count(errOut, "\n") != 1 || !strings.HasSuffix(errOut, "\n") {
		t.Errorf("%s: stderr is not one line:\n%s", name, errOut)
	}
	if !strings.HasPrefix(errOut, "tqscavenger "+args[0]) {
		t.Errorf("%s: stderr does not name the command: %s", name, errOut)
	}
	if !strings.Contains(errOut, hint) {
		t.Errorf("%s: stderr does not say %q: %s", name, hint, errOut)
	}
	if strings.Contains(out+errOut, dbSecret) {
		t.Errorf("%s: the password is in the output:\nstdout: %s\nstderr: %s", name, out, errOut)
	}
	t.Logf("%s: %s", name, strings.TrimSpace(errOut))
	if name == "run" && out != "" {
		t.Errorf("%s: a failed open printed a summary: %s", name, out)
	}
}

// TestLockedDatabase runs a scavenger against a database whose lock is
// held: it exits at once with status 5 and says what to do.
func TestLockedDatabase(t *testing.T) {
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			db := testdb.Open(t, e)
			dsn := db.DSN().String()
			if db.DSN().URL != nil {
				dsn = db.DSN().URL.String()
			}
			unlock, err := db.Lock(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			defer unlock.Unlock()
			checkError(t, []string{"run", "--db", dsn}, "another tqscavenger is running against this database; wait for it, or pass --wait-lock", cli.ExitLocked, tqs)
		})
	}
}

// TestSetupSeedRun is an operator's first session on each engine: create
// the task tables, seed them, check them, scavenge them.
func TestSetupSeedRun(t *testing.T) {
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			dsn := testdb.Empty(t, e)
			step := func(want int, args ...string) string {
				t.Helper()
				code, out, errOut := tqs(args...)
				if code != want {
					t.Fatalf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args[:2], " "), code, want, out, errOut)
				}
				return out
			}
			out := step(0, "schema", "setup", "--db", dsn)
			if !strings.Contains(out, "created Temporal's task tables") {
				t.Errorf("schema setup said: %s", out)
			}
			step(0, "seed", "--db", dsn, "--queues", "6", "--tasks", "40", "--expired", "0.5", "--no-expiry", "0.25")
			step(0, "seed", "--db", dsn, "--table", "v2", "--queues", "3", "--tasks", "20", "--name-prefix", "fair", "--force") // beside the seed-* queues
			out = step(0, "schema", "check", "--db", dsn)
			for _, line := range []string{"engine: " + string(e), "v1 task tables: present", "v2 task tables: present", "ok: tqscavenger can scavenge this database"} {
				if !strings.Contains(out, line) {
					t.Errorf("schema check does not say %q:\n%s", line, out)
				}
			}
			before := countTasks(t, dsn)
			out = step(0, "run", "--db", dsn, "--log-level", "warn")
			if !strings.Contains(out, "queues:") || !strings.Contains(out, "tasks:") {
				t.Errorf("run printed no summary:\n%s", out)
			}
			after := countTasks(t, dsn)
			t.Logf("tasks: %d seeded, %d after the pass\n%s", before, after, out)
			// Half of the seeded tasks were expired, behind them live ones.
			if after >= before || after == 0 {
				t.Errorf("tasks before the pass %d, after %d: want some, not all, deleted", before, after)
			}
			// A second pass finds nothing left to delete.
			step(0, "run", "--db", dsn, "--log-level", "warn")
			if again := countTasks(t, dsn); again != after {
				t.Errorf("a second pass deleted %d more tasks", after-again)
			}
		})
	}
}

func countTasks(t *testing.T, dsn string) int {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), dsn, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	for _, tb := range []store.Table{store.V1, store.V2} {
		var c int
		q := "SELECT count(*) FROM tasks"
		if tb == store.V2 {
			q += "_v2"
		}
		if err := testdb.SQL(t, db).QueryRowContext(context.Background(), q).Scan(&c); err != nil {
			t.Fatal(err)
		}
		n += c
	}
	return n
}

// TestNoDatabase: without --db and TQSCAVENGER_DB the command says how to
// name one.
func TestNoDatabase(t *testing.T) {
	if v, ok := os.LookupEnv("TQSCAVENGER_DB"); ok {
		t.Setenv("TQSCAVENGER_DB", v)
		os.Unsetenv("TQSCAVENGER_DB")
	}
	for _, args := range [][]string{{"run"}, {"schema", "check"}, {"schema", "setup"}} {
		checkUsageError(t, args, "pass --db DSN or set TQSCAVENGER_DB", tqs)
	}
}

// TestForeignDSNForms: other drivers' DSN forms and misspelt schemes are
// refused by every command that takes a DSN, with status 2 and the forms
// it takes, and the password never reaches the output.
func TestForeignDSNForms(t *testing.T) {
	t.Setenv("TQSCAVENGER_CONFIG", "")
	for _, c := range []struct{ name, dsn, hint string }{
		{"go-sql-driver", "temporal:" + dbSecret + "@tcp(127.0.0.1:3306)/temporal", "go-sql-driver/mysql DSN"},
		{"libpq key=value", "host=127.0.0.1 user=temporal password=" + dbSecret + " dbname=temporal", "libpq key=value string"},
		{"libpq key=value, quoted", "host=127.0.0.1 password='" + dbSecret + " x' dbname=temporal", "libpq key=value string"},
		{"postgress://", "postgress://temporal:" + dbSecret + "@127.0.0.1:5432/temporal", `did you mean "postgres"`},
		{"mysq://", "mysq://temporal:" + dbSecret + "@127.0.0.1:3306/temporal", `did you mean "mysql"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir) // a DSN taken for a SQLite path would create a file here
			for _, args := range [][]string{
				// serve first: on a file a broken check let another command
				// create, it would serve for good.
				{"serve", "--listen", "", "--db", c.dsn},
				{"run", "--db", c.dsn},
				{"schema", "check", "--db", c.dsn},
				{"schema", "setup", "--db", c.dsn},
				{"report", "--db", c.dsn},
				{"config", "--db", c.dsn},
				{"seed", "--db", c.dsn},
			} {
				checkUsageError(t, args, c.hint, tqs)
				checkError(t, args, "use postgres://, mysql://, sqlite:PATH", cli.ExitUsage, tqs)
			}
			// demo takes a file path only.
			checkUsageError(t, []string{"demo", "--db", c.dsn}, "give a file path", tqs)
			// From the environment, as the password should come.
			t.Setenv("TQSCAVENGER_DB", c.dsn)
			checkUsageError(t, []string{"run"}, c.hint, tqs)
			if code, out, errOut := tqs("config"); code != cli.ExitUsage || strings.Contains(out+errOut, dbSecret) {
				t.Errorf("config with TQSCAVENGER_DB: exit %d, output:\n%s%s", code, out, errOut)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				t.Errorf("a command created %s: the DSN was taken for a SQLite path", e.Name())
			}
		})
	}
}
