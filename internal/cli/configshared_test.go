//go:build !tqs_notemporal

package cli

// Issue 42's finding 3 and item 2: one --config file for every command
// that connects (report and schema read serve's file), typos in it still
// refused, and `config COMMAND` showing any of those commands' resolved
// settings, secrets never written.

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// mainOut runs the command line and returns its status and output.
func mainOut(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = Main(args, &o, &e)
	return code, o.String(), e.String()
}

// seededFile is a SQLite file with a few queues of expired tasks.
func seededFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tasks.db")
	if code, _, errOut := mainOut("seed", "--db", path, "--queues", "3", "--tasks", "10", "--expired", "1", "--no-expiry", "0"); code != 0 {
		t.Fatalf("seed: exit %d: %s", code, errOut)
	}
	return path
}

// serveFile is a config file as the README's first production run would
// write it for serve, with the other commands' sections beside.
func serveFile(t *testing.T, db string) string {
	return writeFile(t, fmt.Sprintf(`db: %s
workers: 4
protect: [temporal-sys-, billing-]
log-level: warn
statement-timeout: 20s
temporal-namespace: ops
max-partitions: 3
serve:
  every: 6h
  run-at-start: true
  listen: ":9464"
run:
  progress: never
report:
  modes: false
schema:
  output: json
`, db))
}

// TestOneConfigFile: report, schema check and schema setup read the file
// serve reads (before, each refused --config), and so do run and every
// `config COMMAND`: a top-level key of another command that reads the
// file is skipped by a command without it.
func TestOneConfigFile(t *testing.T) {
	clearEnv(t)
	clearTemporalEnv(t)
	file := serveFile(t, seededFile(t))
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"schema", "check"}, `"ok": true`}, // schema: output: json
		{[]string{"schema", "setup"}, "created Temporal's task tables"},
		{[]string{"report"}, "v1"},
		{[]string{"run", "--dry-run"}, "would delete 30"},
		{[]string{"config"}, "# tqscavenger serve: effective configuration"},
		{[]string{"config", "serve"}, "every: 6h  # file every in " + file},
		{[]string{"config", "run"}, "progress: never  # file progress in " + file},
		{[]string{"config", "worker"}, "max-partitions: 3  # file max-partitions in " + file},
		{[]string{"config", "report"}, "modes: false  # file modes in " + file},
		{[]string{"config", "schedule"}, "temporal-namespace: ops  # file temporal-namespace in " + file},
		{[]string{"config", "schema"}, "output: json  # file output in " + file},
	} {
		code, out, errOut := mainOut(append(c.args, "--config", file)...)
		if code != ExitOK || !strings.Contains(out, c.says) {
			t.Errorf("%v --config (serve's file): exit %d, stdout lacks %q: %s\n%s", c.args, code, c.says, errOut, out)
		}
	}
	// A setting only serve has is serve's: run's config does not show it.
	if _, out, _ := mainOut("config", "run", "--config", file); strings.Contains(out, "every:") || strings.Contains(out, "listen:") {
		t.Errorf("config run shows serve's settings:\n%s", out)
	}
}

// TestConfigFileTypos: a key that is no flag of any command that reads
// the file where it stands is still refused, by every command, with a
// did-you-mean from all of them; a command's section holds only its own
// commands' flags.
func TestConfigFileTypos(t *testing.T) {
	clearEnv(t)
	clearTemporalEnv(t)
	db := seededFile(t)
	for _, c := range []struct {
		cmd  []string
		yaml string
		want string
	}{
		{[]string{"report"}, "workrs: 4\n", "line 2: workrs: not a flag of tqscavenger report nor of any command that reads the file (did you mean workers?)"},
		{[]string{"schema", "check"}, "workrs: 4\n", "workrs: not a flag of tqscavenger schema check nor of any command that reads the file (did you mean workers?)"},
		{[]string{"run"}, "workrs: 4\n", "workrs: not a flag of tqscavenger run (did you mean workers?)"},
		{[]string{"config", "worker"}, "workrs: 4\n", "workrs: not a flag of tqscavenger config worker nor of any command that reads the file (did you mean workers?)"},
		{[]string{"schema", "check"}, "zzzz: 4\n", "zzzz: not a flag of tqscavenger schema check (a top-level key is read by every command that reads the file and has that flag, and none has this one"},
		{[]string{"report"}, "report:\n  workers: 4\n", "report.workers: not a flag of tqscavenger report (see tqscavenger report -h"},
		{[]string{"run"}, "run:\n  every: 1h\n", "run.every: not a flag of tqscavenger run"},
		{[]string{"schema", "setup"}, "schema:\n  outptu: json\n", "schema.outptu: not a flag of tqscavenger schema setup nor of any command that reads schema: (did you mean output?)"},
		{[]string{"report"}, "reprot:\n  modes: false\n", "reprot: a mapping is only allowed as a command section (serve:, run:, worker:, schedule:, report:, schema:)"},
		// seed reads no config file: its flags are no keys.
		{[]string{"report"}, "queues: 4\n", "queues: not a flag of tqscavenger report"},
	} {
		file := writeFile(t, "db: "+db+"\n"+c.yaml)
		code, _, errOut := mainOut(append(c.cmd, "--config", file)...)
		if code != ExitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v with %q: exit %d, %s; want %d saying %q", c.cmd, c.yaml, code, errOut, ExitUsage, c.want)
		}
	}
	// schema setup has no --output: schema check's, under schema:, is skipped.
	file := writeFile(t, "db: "+db+"\nschema:\n  output: json\n")
	if code, _, errOut := mainOut("schema", "setup", "--config", file); code != ExitOK {
		t.Errorf("schema setup with schema check's output: exit %d, %s", code, errOut)
	}
}

// TestConfigOfCommand: `config COMMAND` prints that command's settings
// as config prints serve's: layered, checked, secrets never written, a
// file that --config takes back. config alone is config serve. A COMMAND
// config does not show is refused with the nearest.
func TestConfigOfCommand(t *testing.T) {
	clearEnv(t)
	clearTemporalEnv(t)
	const (
		dbPass = "pw-Issue42-db"
		apiKey = "key-Issue42-api"
	)
	dsn := "postgres://tq:" + dbPass + "@db.example:5432/temporal"
	profile := writeFile(t, "[profile.prod]\naddress = \"fe.example:7233\"\nnamespace = \"ops\"\napi_key = \""+apiKey+"\"\n")
	file := writeFile(t, "workers: 6\nlisten: \"127.0.0.1:9465\"\ntemporal-profile: prod\nworker:\n  max-partitions: 3\nreport:\n  grace: 72h\n")
	t.Setenv("TQSCAVENGER_DB", dsn)
	t.Setenv("TEMPORAL_CONFIG_FILE", profile)
	t.Setenv("TQSCAVENGER_MAX_CONNS", "5")
	for _, c := range []struct {
		cmd  string
		says []string
		not  []string
	}{
		{"worker", []string{
			"# tqscavenger worker: effective configuration, for --config.",
			"#   db is a secret, not written (from TQSCAVENGER_DB)",
			`# temporal-address: "fe.example:7233"  (from profile prod in ` + profile + ")",
			"# temporal-namespace: ops  (from profile prod in " + profile + ")",
			"#   temporal-api-key is a secret, not written (from profile prod in " + profile + ")",
			"temporal-profile: prod  # file temporal-profile in " + file,
			"max-partitions: 3  # file max-partitions in " + file,
			`listen: "127.0.0.1:9465"  # file listen in ` + file,
			"max-conns: 5  # env TQSCAVENGER_MAX_CONNS",
			"# shutdown-timeout: 30s  (default)",
			"# connect-timeout: 10s  (default)",
		}, []string{"workers:", "grace:"}},
		{"run", []string{
			"# tqscavenger run: effective configuration, for --config.",
			"workers: 6  # file workers in " + file,
			"max-conns: 5  # env TQSCAVENGER_MAX_CONNS",
			"# progress: auto  (default)",
			"# grace: 48h  (default)",
		}, []string{"listen:", "max-partitions:", "temporal-address"}},
		{"report", []string{
			"# tqscavenger report: effective configuration, for --config.",
			"grace: 72h  # file grace in " + file,
			"# modes: true  (default)",
		}, []string{"workers:", "listen:"}},
		{"schedule", []string{
			"# tqscavenger schedule create: effective configuration, for --config.",
			"workers: 6  # file workers in " + file,
			"# partitions: 1  (default)",
			`# temporal-address: "fe.example:7233"  (from profile prod in ` + profile + ")",
		}, []string{"statement-timeout:", "max-conns:", "listen:"}}, // a schedule carries neither
		{"schema", []string{"# tqscavenger schema check: effective configuration, for --config.", "# output: text  (default)"}, []string{"workers:"}},
	} {
		code, out, errOut := mainOut("config", c.cmd, "--config", file)
		if code != ExitOK {
			t.Errorf("config %s: exit %d: %s", c.cmd, code, errOut)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(out, s) {
				t.Errorf("config %s does not say %q:\n%s", c.cmd, s, out)
			}
		}
		for _, s := range append(c.not, dbPass, apiKey, "xxxxx") {
			if strings.Contains(out, s) {
				t.Errorf("config %s shows %q:\n%s", c.cmd, s, out)
			}
		}
		// Its own output is a config file for the command, pinning the
		// same values (the secrets still from the environment).
		code, again, errOut := mainOut("config", c.cmd, "--config", writeFile(t, out))
		if code != ExitOK || pinnedKeys(again) != pinnedKeys(out) {
			t.Errorf("config %s of its own output: exit %d, %s\n%s\nwant the keys of\n%s", c.cmd, code, errOut, again, out)
		}
	}

	// config alone is config serve, word for word.
	_, serve, _ := mainOut("config", "serve", "--config", file)
	if _, alone, _ := mainOut("config", "--config", file); alone != serve || !strings.HasPrefix(alone, "# tqscavenger serve:") {
		t.Errorf("config and config serve differ:\n%s\n%s", alone, serve)
	}

	// Checked as the command checks them, before anything is printed.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"wroker"}, `unknown command "wroker" for config (did you mean worker?): use one of serve, run, worker, report, schedule or schema`},
		{[]string{"worker", "--max-partitions", "-1"}, "--max-partitions -1: must not be negative"},
		{[]string{"run", "--orphans", "some"}, `--orphans "some"`},
		{[]string{"worker", "--temporal-task-queue", " "}, "--temporal-task-queue must not be empty"},
		{[]string{"worker", "--temporal-profile", "staging"}, "no such profile"},
		{[]string{"report", "--output", "yaml"}, `--output "yaml"`},
		{[]string{"run", "--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"report", "--tls-ca-file", filepath.Join(t.TempDir(), "none.pem")}, "none.pem"},
	} {
		code, out, errOut := mainOut(append([]string{"config"}, c.args...)...)
		if code != ExitUsage || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("config %v: exit %d, stdout %q, stderr %s; want %d saying %q", c.args, code, out, errOut, ExitUsage, c.want)
		}
	}
}

// pinnedKeys are the settings a config output pins: its lines that are
// not comments, without their comment.
func pinnedKeys(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			k, _, _ := strings.Cut(l, "  #")
			out = append(out, k)
		}
	}
	return strings.Join(out, "\n")
}
