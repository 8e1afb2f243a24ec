package cli

// -h as an operator meets it: examples first, the everyday flags one line
// each, under the line budget, and a last line that points at --help-all;
// --help-all and docs/running.md hold every flag -h leaves out; and each
// example runs.

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tqscavenger/tqscavenger/internal/fixture"
)

// helpLineBudget is the most lines -h of any command may take.
const helpLineBudget = 60

// helpCommands returns the path of every command with flags of its own.
func helpCommands(t *testing.T) []string {
	t.Helper()
	var paths []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if s.Name() == "help" || s.Name() == "completion" {
				continue
			}
			if s.HasAvailableLocalFlags() {
				paths = append(paths, commandPath(s))
			}
			walk(s)
		}
	}
	walk(newRoot(context.Background(), &env{stdout: io.Discard, stderr: io.Discard}))
	if !slices.Contains(paths, "run") || !slices.Contains(paths, "config run") {
		t.Fatalf("the command tree lacks run or config run: %v", paths)
	}
	return paths
}

// helpOf runs `tqscavenger PATH flag` and returns its stdout; it fails the
// test unless the command exits 0 with nothing on stderr.
func helpOf(t *testing.T, path, flag string) string {
	t.Helper()
	var o, e bytes.Buffer
	args := append(strings.Fields(path), flag)
	if code := Main(args, &o, &e); code != ExitOK || e.Len() > 0 {
		t.Fatalf("%v: exit %d, stderr %q", args, code, e.String())
	}
	return o.String()
}

// helpFlagHead matches a flag's line in help: "  -n, --dry-run", "      --grace DURATION".
var helpFlagHead = regexp.MustCompile(`^(?:  -[a-zA-Z], |      )--([a-z0-9-]+)`)

// helpFlags returns the flags a help text lists.
func helpFlags(out string) map[string]bool {
	m := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if s := helpFlagHead.FindStringSubmatch(l); s != nil {
			m[s[1]] = true
		}
	}
	return m
}

// TestShortHelp: -h of every command fits the line budget at 100
// columns, lists each flag on one line, shows its examples before its
// flags, and names --help-all when it leaves flags out; run -h does.
func TestShortHelp(t *testing.T) {
	for _, path := range helpCommands(t) {
		out := helpOf(t, path, "-h")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) > helpLineBudget {
			t.Errorf("%s -h: %d lines, over the budget of %d:\n%s", path, len(lines), helpLineBudget, out)
		}
		// A command that leaves flags out (seed, demo and version leave
		// none: their flags are few and all their own) shows each of the
		// rest on one line.
		trimmed, _ := reference(commandFlags(t, path))
		for _, l := range lines {
			if len(l) > helpWidth {
				t.Errorf("%s -h: a line of %d columns: %q", path, len(l), l)
			}
			if trimmed > 0 && strings.HasPrefix(l, "      ") && !helpFlagHead.MatchString(l) {
				t.Errorf("%s -h: a flag's text runs past its line (give it a brief): %q", path, l)
			}
		}
		if ex := examples[path]; len(ex) > 0 {
			at := strings.Index(out, "\nExamples:\n")
			first := regexp.MustCompile(`(?m)^[A-Z][A-Za-z ]+:$`).FindAllStringIndex(out, -1)
			if at < 0 || len(first) < 2 || first[0][0] != at+1 {
				t.Errorf("%s -h: no Examples before the flags:\n%s", path, out)
			}
			for _, e := range ex {
				for _, l := range strings.Split(e.line, "\n") {
					if !strings.Contains(out, "\n  "+l+"\n") {
						t.Errorf("%s -h: example %q missing", path, l)
					}
				}
			}
		}
		all := helpOf(t, path, "--help-all")
		short, every := helpFlags(out), helpFlags(all)
		hidden := 0
		for f := range every {
			if !short[f] {
				hidden++
			}
		}
		for f := range short {
			if !every[f] {
				t.Errorf("%s: -h lists --%s, --help-all does not", path, f)
			}
		}
		pointer := "tqscavenger " + path + " --help-all"
		if hidden > 0 && !strings.Contains(out, pointer) {
			t.Errorf("%s -h leaves out %d flags and does not name %q:\n%s", path, hidden, pointer, out)
		}
		if n, _ := reference(commandFlags(t, path)); n != hidden {
			t.Errorf("%s -h: %d flags left out, but the flag set marks %d", path, hidden, n)
		}
	}
	out := helpOf(t, "run", "-h")
	for _, s := range []string{"Examples:", "tqscavenger run --dry-run", "--closed-workflows", "tqscavenger run --help-all, or docs/running.md"} {
		if !strings.Contains(out, s) {
			t.Errorf("run -h does not say %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "--tls-ca-file") || strings.Contains(out, "--retry-for") {
		t.Errorf("run -h shows reference flags:\n%s", out)
	}
}

// TestHelpAllAndDocs: every flag a command has is in its --help-all;
// each that -h leaves out is marked so and is documented in
// docs/running.md.
func TestHelpAllAndDocs(t *testing.T) {
	doc, err := os.ReadFile(runningDoc)
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`--([a-z0-9-]+)[`= |\\[]").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	for _, path := range helpCommands(t) {
		short, every := helpFlags(helpOf(t, path, "-h")), helpFlags(helpOf(t, path, "--help-all"))
		commandFlags(t, path).VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Deprecated != "" {
				return
			}
			if !every[f.Name] {
				t.Errorf("%s --help-all does not list --%s", path, f.Name)
			}
			if annotation(f, referenceKey) == "" {
				if !short[f.Name] {
					t.Errorf("%s -h does not list --%s, an everyday flag", path, f.Name)
				}
				return
			}
			if short[f.Name] {
				t.Errorf("%s -h lists --%s, which it leaves to --help-all", path, f.Name)
			}
			if !documented[f.Name] {
				t.Errorf("%s: --%s is left to --help-all and not in %s: document it there", path, f.Name, runningDoc)
			}
		})
	}
	for name := range referenceFlags {
		if !documented[name] {
			t.Errorf("referenceFlags names --%s, which %s does not document", name, runningDoc)
		}
	}
	for name := range briefs {
		if referenceFlags[name] {
			t.Errorf("--%s has a brief but -h leaves it out", name)
		}
	}
}

// exampleProfiles is the temporal CLI profiles file the examples read.
const exampleProfiles = "[profile.prod]\naddress = \"temporal-frontend:7233\"\nnamespace = \"default\"\n"

// TestHelpExamples runs each example of -h on a copy of a real Temporal
// database, with the files it names made in a temporary directory and
// TQSCAVENGER_DB set to the copy: run, report, schema check and config
// as they are; serve, worker and schedule create, which would not
// return, through `config COMMAND`, which checks their flags as they do
// before they connect.
func TestHelpExamples(t *testing.T) {
	exists := helpCommands(t)
	viaConfig := map[string][]string{"serve": {"config", "serve"}, "worker": {"config", "worker"}, "schedule create": {"config", "schedule"}}
	for path, exs := range examples {
		if !slices.Contains(exists, path) {
			continue // not in this build (tqs_notemporal)
		}
		for _, ex := range exs {
			t.Run(path+"/"+ex.what, func(t *testing.T) {
				for _, kv := range os.Environ() {
					k, _, _ := strings.Cut(kv, "=")
					if strings.HasPrefix(k, "TQSCAVENGER_") || strings.HasPrefix(k, "SQL_") || strings.HasPrefix(k, "TEMPORAL_") {
						t.Setenv(k, "")
						os.Unsetenv(k)
					}
				}
				dir := t.TempDir()
				db := fixture.Path(t, "temporal-1.29-fresh")
				cfg := filepath.Join(dir, "tqscavenger.yaml")
				profiles := filepath.Join(dir, "temporal.toml")
				for name, text := range map[string]string{cfg: "log-format: text\nrun:\n  progress: never\n", profiles: exampleProfiles} {
					if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				t.Setenv("TQSCAVENGER_DB", db)
				t.Setenv("TEMPORAL_CONFIG_FILE", profiles)
				for _, line := range strings.Split(ex.line, "\n") {
					words := shellWords(t, line)
					if words[0] == "export" {
						k, _, ok := strings.Cut(words[1], "=")
						if !ok || k != "TQSCAVENGER_DB" {
							t.Fatalf("%q: an export the test does not know", line)
						}
						continue // the copy's path stands for the DSN
					}
					if words[0] != "tqscavenger" {
						t.Fatalf("%q: not a tqscavenger command line", line)
					}
					args := words[1:]
					for i := 1; i < len(args); i++ {
						name, ok := strings.CutPrefix(args[i-1], "--")
						switch {
						case !ok:
						case name == "db":
							args[i] = db
						case name == "config":
							args[i] = cfg
						case valueNames[name] == "FILE":
							args[i] = filepath.Join(dir, filepath.Base(args[i]))
						}
					}
					if v, ok := viaConfig[path]; ok {
						args = append(v, args[len(strings.Fields(path)):]...)
					}
					var o, e bytes.Buffer
					if code := Main(args, &o, &e); code != ExitOK {
						t.Errorf("%q, run as %v: exit %d\n%s%s", line, args, code, o.String(), e.String())
					}
				}
			})
		}
	}
}

// shellWords splits an example's line as a shell would: words, and text
// in single quotes as one word.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var b strings.Builder
	quoted, in := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				words = append(words, b.String())
				b.Reset()
				in = false
			}
		case strings.ContainsRune(`"$\|;&<>*`+"`", r) && !quoted:
			t.Fatalf("%q: %q outside single quotes, which the test does not expand", line, r)
		default:
			b.WriteRune(r)
			in = true
		}
	}
	if quoted {
		t.Fatalf("%q: an unclosed quote", line)
	}
	if in {
		words = append(words, b.String())
	}
	return words
}
