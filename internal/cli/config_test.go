package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/goleak"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
)

// clearEnv unsets every TQSCAVENGER_ variable for the test.
func clearEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "TQSCAVENGER_") {
			t.Setenv(k, "") // restores it after the test
			os.Unsetenv(k)
		}
	}
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tqscavenger.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// parseServe parses args as serve's command line and layers the
// environment and the config file under them.
func parseServe(args []string) (*serveSettings, error) {
	ss := newServeSettings()
	if err := ss.fs.Parse(args); err != nil {
		return nil, usageError{err}
	}
	o, err := layer(ss.fs)
	ss.origins = o
	return ss, err
}

// values returns a value for each layer that a flag accepts, each
// different from the layer below.
func values(f *pflag.Flag) (file, env, cmd string) {
	switch f.Value.Type() {
	case "bool":
		// Each layer flips the one below: false, true, false, true.
		return "true", "false", "true"
	case "int", "float64":
		return "11", "12", "13"
	case "duration":
		return "11s", "12s", "13s"
	}
	return "from-file", "from-env", "from-flag"
}

// commandFlagSets returns, by name ("serve", "schedule create"), a
// function that makes the flag set of each command, sub-commands
// included, as the command line has it.
func commandFlagSets() map[string]func() *pflag.FlagSet {
	out := map[string]func() *pflag.FlagSet{}
	var walk func(prefix string, cs []command)
	walk = func(prefix string, cs []command) {
		for _, c := range cs {
			name := strings.TrimSpace(prefix + " " + c.name)
			if c.flags != nil {
				out[name] = func() *pflag.FlagSet {
					fs := newFlagSet(name)
					g := newFlagGroups(fs)
					c.flags(g)
					g.done()
					return fs
				}
			}
			walk(name, c.subs)
		}
	}
	walk("", commands())
	return out
}

// TestPrecedenceEveryFlag checks flag > env > file > default for every
// flag of every command that reads a config file: serve, run, and (in a
// build with them) worker and schedule create and update.
func TestPrecedenceEveryFlag(t *testing.T) {
	clearEnv(t)
	clearTemporalEnv(t)
	tested := 0
	for cmd, newFS := range commandFlagSets() {
		if newFS().Lookup("config") == nil {
			continue
		}
		tested++
		t.Run(strings.ReplaceAll(cmd, " ", "_"), func(t *testing.T) {
			var names []string
			newFS().VisitAll(func(f *pflag.Flag) {
				if f.Name != "config" && f.Name != "help" && aliasOf(f) == "" {
					names = append(names, f.Name)
				}
			})
			if len(names) < 10 {
				t.Fatalf("only %d flags: %v", len(names), names)
			}
			for _, name := range names {
				t.Run(name, func(t *testing.T) { testPrecedence(t, newFS, name) })
			}
		})
	}
	if tested < 2 {
		t.Fatalf("%d commands with --config, want serve and run at least", tested)
	}
}

// testPrecedence checks flag > env > file > default for the flag name
// of the flag sets newFS makes.
func testPrecedence(t *testing.T, newFS func() *pflag.FlagSet, name string) {
	f := newFS().Lookup(name)
	fileV, envV, cmdV := values(f)
	file := writeFile(t, fmt.Sprintf("%s: %q\n", name, fileV))
	cases := []struct {
		what string
		env  bool
		args []string
		want string
	}{
		{"default", false, nil, f.DefValue},
		{"file over default", false, []string{"--config", file}, fileV},
		{"env over file", true, []string{"--config", file}, envV},
		{"flag over env", true, []string{"--config", file, "--" + name + "=" + cmdV}, cmdV},
	}
	for _, c := range cases {
		if c.env {
			t.Setenv(envName(name), envV)
		} else {
			os.Unsetenv(envName(name))
		}
		fs := newFS()
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		o, err := layer(fs)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if got := fs.Lookup(name).Value.String(); got != c.want {
			t.Errorf("%s: --%s = %q, want %q", c.what, name, got, c.want)
		}
		if wantLayer := map[string]string{"default": fromDefault, "file over default": fromFile, "env over file": fromEnv, "flag over env": fromFlag}[c.what]; o[name].layer != wantLayer {
			t.Errorf("%s: --%s came from %q, want %q", c.what, name, o[name].layer, wantLayer)
		}
	}
}

// clearTemporalEnv unsets the temporal CLI's variables for the test.
func clearTemporalEnv(t *testing.T) {
	// The temporal CLI's default profiles file is under the user's config
	// directory: a developer's own must not leak into a test.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, vars := range temporalEnv {
		for _, v := range vars {
			t.Setenv(v, "") // restores it after the test
			os.Unsetenv(v)
		}
	}
}

func TestConfigFileSections(t *testing.T) {
	clearEnv(t)
	file := writeFile(t, `
workers: 4
log_level: debug        # '_' stands for '-'
protect: [a-, b-]       # a list sets a repeatable flag once per element
serve:
  workers: 8            # a command's section overrides the top level
  every: 1h
run:
  progress: never       # run's; serve skips this section
`)
	ss, err := parseServe([]string{"--config", file})
	if err != nil {
		t.Fatal(err)
	}
	if ss.sf.knobs.Workers != 8 || ss.lf.level != "debug" || ss.df.every != time.Hour || ss.sf.protect.String() != "a-,b-" {
		t.Errorf("serve: workers %d, log-level %s, every %s, protect %s", ss.sf.knobs.Workers, ss.lf.level, ss.df.every, ss.sf.protect.String())
	}

	for _, c := range []struct{ file, want string }{
		{"workerz: 4\n", `workerz: not a flag of tqscavenger serve (did you mean workers?)`},
		// Already under serve: no hint to put it under a command's name.
		{"serve:\n  wrokers: 4\n", `serve.wrokers: not a flag of tqscavenger serve (did you mean workers?)`},
		{"serve:\n  zzzz: 4\n", `serve.zzzz: not a flag of tqscavenger serve (see tqscavenger serve -h for its flags)`},
		{"zzzz: 4\n", `zzzz: not a flag of tqscavenger serve (a top-level key is read by every command`},
		{"listen: {a: b}\n", "only allowed as a command section"},
		{"serve:\n  every: {a: b}\n", "only allowed as a command section"},
		// The key and what it takes, never the value (issue 39: it may be
		// a secret under the wrong key).
		{"workers: many\n", `line 1: workers: not a valid int: must be an integer`},
		{"workers:\n", "no value"},
		{"- a\n- b\n", "not a YAML mapping"},
	} {
		_, err := parseServe([]string{"--config", writeFile(t, c.file)})
		if err == nil || !strings.Contains(err.Error(), c.want) || exitStatus(err) != ExitUsage {
			t.Errorf("config %q: error %v, want a usage error containing %q", c.file, err, c.want)
		}
	}
	if _, err := parseServe([]string{"--config", "/nonexistent.yaml"}); err == nil || exitStatus(err) != ExitUsage {
		t.Errorf("missing config file: %v", err)
	}
}

// TestRunReadsConfigFile: run takes --config with the same precedence.
func TestRunReadsConfigFile(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clearEnv(t)
	path := filepath.Join(t.TempDir(), "tasks.db")
	if code := Main([]string{"seed", "--db", path, "--queues", "3", "--tasks", "10", "--expired", "1", "--no-expiry", "0"}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("seed: exit %d", code)
	}
	file := writeFile(t, fmt.Sprintf("db: %s\ndry-run: true\nlog-level: error\nserve:\n  every: 1h\nrun:\n  progress: never\n", path))
	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(append([]string{"run", "--config", file}, args...), &out, &errOut); code != 0 {
			t.Fatalf("run %v: exit %d\n%s", args, code, errOut.String())
		}
		return out.String()
	}
	if out := run(); !strings.Contains(out, "would delete 30") {
		t.Errorf("file's dry-run: true not applied:\n%s", out)
	}
	t.Setenv("TQSCAVENGER_DRY_RUN", "false")
	if out := run("--dry-run"); !strings.Contains(out, "would delete 30") {
		t.Errorf("--dry-run did not win over the environment:\n%s", out)
	}
	if out := run(); !strings.Contains(out, "deleted 30") || strings.Contains(out, "would") {
		t.Errorf("TQSCAVENGER_DRY_RUN=false did not win over the file:\n%s", out)
	}

	// A top-level key of serve's is serve's: run skips it (issue 42).
	shared := writeFile(t, fmt.Sprintf("db: %s\nevery: 1h\nlog-level: error\n", path))
	var errOut bytes.Buffer
	if code := Main([]string{"run", "--config", shared, "--dry-run"}, io.Discard, &errOut); code != ExitOK {
		t.Errorf("run with a serve-only key at the top level: exit %d, %s", code, errOut.String())
	}
}

// TestConfigCommand: config prints the effective settings with their
// sources, a password never, as a file that --config reads back the same.
func TestConfigCommand(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clearEnv(t)
	dsn := "postgres://tq:s3cret@db:5432/temporal"
	file := writeFile(t, "db: "+dsn+"\nworkers: 4\nserve:\n  every: 6h\n")
	t.Setenv("TQSCAVENGER_WORKERS", "6")
	var out, errOut bytes.Buffer
	if code := Main([]string{"config", "--config", file, "--grace", "72h"}, &out, &errOut); code != 0 {
		t.Fatalf("config: exit %d: %s", code, errOut.String())
	}
	text := out.String()
	if strings.Contains(text, "s3cret") || strings.Contains(text, "xxxxx") {
		t.Errorf("config printed the password, or its mask as a value:\n%s", text)
	}
	for _, want := range []string{
		"#   db is a secret, not written (from db in " + file + ")",
		"workers: 6  # env TQSCAVENGER_WORKERS",
		"every: 6h  # file every in " + file,
		"grace: 72h  # flag --grace",
		fmt.Sprintf("# task-batch-size: %d  (default)", scavenger.Config{}.WithDefaults().TaskBatchSize),
		`# listen: "127.0.0.1:9464"  (default)`,
		"# tables: all  (default)",
		`# cron: ""  (default)`,
		// 0 means the store's default: the value used is shown.
		"# connect-timeout: 10s  (default)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("config output lacks %q:\n%s", want, text)
		}
	}
	// Read back (the DSN from the environment, where a password belongs),
	// the output pins the same values.
	os.Unsetenv("TQSCAVENGER_WORKERS")
	t.Setenv("TQSCAVENGER_DB", dsn)
	var again bytes.Buffer
	if code := Main([]string{"config", "--config", writeFile(t, text)}, &again, &errOut); code != 0 {
		t.Fatalf("config of its own output: exit %d: %s", code, errOut.String())
	}
	pinned := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if l != "" && !strings.HasPrefix(l, "#") {
				out = append(out, l[:strings.Index(l, "  #")])
			}
		}
		return out
	}
	if a, b := pinned(text), pinned(again.String()); strings.Join(a, "\n") != strings.Join(b, "\n") || len(a) != 3 {
		t.Errorf("read back differs:\n%v\n%v", a, b)
	}

	if code := Main([]string{"config", "--every", "1h", "--cron", "@daily"}, io.Discard, io.Discard); code != ExitUsage {
		t.Errorf("--every with --cron: exit %d, want %d", code, ExitUsage)
	}
	if code := Main([]string{"config", "--jitter", "150%"}, io.Discard, io.Discard); code != ExitUsage {
		t.Errorf("--jitter 150%%: exit %d, want %d", code, ExitUsage)
	}
}

// uncommentDefaults returns config's output with every default line
// ("# key: value  (default)") made a key.
func uncommentDefaults(text string) string {
	var b strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutSuffix(l, "  (default)"); ok && strings.HasPrefix(v, "# ") {
			l = strings.TrimPrefix(v, "# ")
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// TestConfigFeedsServe: config's output, fed back to serve as its
// --config with every default uncommented too, starts serve with the
// same effective settings: the same values, the same scavenger
// configuration, schedule and jitter. For the default mode, Temporal's
// mode and a cron schedule, with TLS implied by a CA file.
func TestConfigFeedsServe(t *testing.T) {
	clearEnv(t)
	db := filepath.Join(t.TempDir(), "tasks.db")
	// config reads the TLS files as serve does (issue 39): a real CA.
	certs, err := testdb.NewCerts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, file string }{
		{"defaults", "db: " + db + "\n"},
		{"tuned", "db: " + db + "\nworkers: 7\ngrace: 72h\nprotect: [a-, b-]\nmax-deletes-per-second: 250.5\nstatement-timeout: 9s\nserve:\n  every: 6h\n  jitter: 5m\n"},
		{"temporal, cron", "db: " + db + "\ncompat: temporal\ncron: \"0 */6 * * *\"\nlog-level: debug\nnamespace: 8f1c2b4e-5a3d-4e6f-9a1b-2c3d4e5f6a7b\n"},
		{"tls implied", "db: postgres://u@db:5432/temporal\ntls-ca-file: " + certs.CA + "\norphans: none\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			first, err := parseServe([]string{"--config", writeFile(t, c.file), "--history", "7"})
			if err != nil {
				t.Fatal(err)
			}
			want, err := first.resolve(io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := configCmd(&out, first); err != nil {
				t.Fatal(err)
			}
			for _, text := range []string{out.String(), uncommentDefaults(out.String())} {
				again, err := parseServe([]string{"--config", writeFile(t, text)})
				if err != nil {
					t.Fatalf("serve --config refuses config's output: %v\n%s", err, text)
				}
				got, err := again.resolve(io.Discard)
				if err != nil {
					t.Fatalf("serve --config refuses config's output: %v\n%s", err, text)
				}
				sameResolved(t, want, got)
			}
		})
	}
}

// sameResolved fails t unless a and b are the same configuration.
func sameResolved(t *testing.T, a, b resolved) {
	t.Helper()
	values := func(r resolved) map[string]string {
		m := map[string]string{}
		for _, s := range r.settings {
			if s.Name != "config" {
				m[s.Name] = s.Value
			}
		}
		return m
	}
	va, vb := values(a), values(b)
	for k, v := range va {
		if vb[k] != v {
			t.Errorf("setting %s: %q, read back %q", k, v, vb[k])
		}
	}
	pass := func(c scavenger.Config) scavenger.Config {
		c = c.WithDefaults()
		c.Now, c.Logger = nil, nil
		return c
	}
	if pa, pb := pass(a.cfg), pass(b.cfg); fmt.Sprintf("%+v", pa) != fmt.Sprintf("%+v", pb) {
		t.Errorf("pass configuration:\n%+v\nread back:\n%+v", pa, pb)
	}
	if a.sched.String() != b.sched.String() || a.jitter != b.jitter || a.level != b.level {
		t.Errorf("schedule %s, jitter %s, level %s; read back %s, %s, %s", a.sched, a.jitter, a.level, b.sched, b.jitter, b.level)
	}
}

func TestParseJitter(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"10%", 72 * time.Minute, true},
		{"0", 0, true},
		{"0%", 0, true},
		{"5m", 5 * time.Minute, true},
		{"101%", 0, false},
		{"-1s", 0, false},
		{"soon", 0, false},
	} {
		got, err := parseJitter(c.in, 12*time.Hour)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseJitter(%q) = %s, %v; want %s, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

// TestConfigShowsHelpDefaults: config shows a default as help documents
// it (yield-factor 2, unlimited, none), a 0 given as the default it means,
// and stays a file --config takes, its defaults uncommented too.
func TestConfigShowsHelpDefaults(t *testing.T) {
	clearEnv(t)
	db := filepath.Join(t.TempDir(), "tasks.db")
	var out, errOut bytes.Buffer
	if code := Main([]string{"config", "--db", db, "--workers", "0", "--max-statements-per-second", "0"}, &out, &errOut); code != 0 {
		t.Fatalf("config: exit %d: %s", code, errOut.String())
	}
	text := out.String()
	for _, want := range []string{
		"# yield-factor: 2  (default)",
		"# max-deletes-per-second: 0  # unlimited  (default)",
		"# statement-timeout: 0  # none  (default)",
		fmt.Sprintf("workers: %d  # flag --workers (0: the default)", scavenger.DefaultWorkers),
		"max-statements-per-second: 0  # flag --max-statements-per-second (unlimited)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("config output lacks %q:\n%s", want, text)
		}
	}
	if code := Main([]string{"config", "--config", writeFile(t, uncommentDefaults(text))}, io.Discard, &errOut); code != 0 {
		t.Errorf("config's output, defaults uncommented, refused by --config: exit %d: %s", code, errOut.String())
	}
}
