package cli

// docs/running.md's flag tables held to the flags the commands register:
// every row a real flag of the commands its table is for, with the default
// (and Temporal's value) that command's help states; every flag of the
// help groups a table covers in it; and the environment variable and the
// config file key the document's rule gives each flag read into it.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// runningDoc is docs/running.md, from this package's directory.
const runningDoc = "../../docs/running.md"

// docFlagTables are the flag tables of docs/running.md (a table whose
// first column is "flag"), by the heading they stand under: the commands
// whose flags each documents, and the help groups whose every flag it
// must list. A row whose meaning says "`run` only" is a flag of that one
// of the commands and not of the others.
var docFlagTables = []docFlagTable{
	{"What to delete settings", []string{"run", "serve"}, []string{groupScope}},
	{"Pace and safety settings", []string{"run", "serve"}, []string{groupPace}},
	{"The daemon: `serve`", []string{"serve"}, []string{groupDaemon}},
}

// docFlagTable is the commands and help groups of a flag table.
type docFlagTable struct {
	heading  string
	commands []string
	complete []string
}

// docRuleSentences are the sentences of docs/running.md that state how a
// flag's environment variable and config key are named (whitespace
// normalised): docEnvName and the config keys below check what they say.
var docRuleSentences = []string{
	"Every flag can also be given as an environment variable `TQSCAVENGER_<FLAG>` (upper case, `-` as `_`: `--dry-run` is `TQSCAVENGER_DRY_RUN`) and as a key of a YAML file given with `--config FILE`",
	"Keys are flag names; settings for one command go under its name (`serve:`, `run:`, `worker:`, `schedule:`)",
}

// docEnvName is a flag's environment variable as docs/running.md names
// it: TQSCAVENGER_ and the name in upper case, '-' as '_'. Written out
// here, not envName, so that the test holds the code to the document.
func docEnvName(flag string) string {
	return "TQSCAVENGER_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// docTable is a Markdown table: its heading, header cells and rows.
type docTable struct {
	heading string
	header  []string
	rows    []docRow
}

type docRow struct {
	line  int
	cells []string
}

// docTables returns the tables of the Markdown file path, each with the
// last heading above it; fenced code is skipped.
func docTables(t *testing.T, path string) []docTable {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out     []docTable
		cur     *docTable
		heading string
		fenced  bool
		n       int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			fenced = !fenced
		}
		if fenced {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			cur = nil
			if h, ok := strings.CutPrefix(line, "#"); ok {
				heading = strings.TrimSpace(strings.TrimLeft(h, "#"))
			}
			continue
		}
		cells := tableCells(line)
		switch {
		case cur == nil:
			out = append(out, docTable{heading: heading, header: cells})
			cur = &out[len(out)-1]
		case tableSeparator.MatchString(line):
			// The separator row.
		default:
			cur.rows = append(cur.rows, docRow{n, cells})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// tableSeparator matches the row under a table's header: |---|:--:|.
var tableSeparator = regexp.MustCompile(`^[\s|:-]+$`)

// tableCells splits a table row into its cells, trimmed: a '|' inside a
// code span or escaped as \| is the cell's.
func tableCells(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var b strings.Builder
	code := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '`':
			code = !code
			b.WriteByte(c)
		case c == '\\' && i+1 < len(line) && line[i+1] == '|':
			b.WriteByte('|')
			i++
		case c == '|' && !code:
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(cells, strings.TrimSpace(b.String()))
}

// unquote is a cell without its code spans' backticks.
func unquote(cell string) string { return strings.TrimSpace(strings.ReplaceAll(cell, "`", "")) }

// docFlag is one flag a row documents.
type docFlag struct {
	name, def, compat string // compat: "" where the table has no such column or the cell is empty
	meaning           string
	line              int
}

// rowFlags returns the flags a row of a flag table documents: its first
// cell names one (`--protect PREFIX`) or several (`--retry-initial`,
// `--retry-max`), with as many defaults, comma-separated; "same" in the
// --compat=temporal column is the default.
func rowFlags(tb docTable, r docRow) ([]docFlag, error) {
	if len(r.cells) != len(tb.header) {
		return nil, fmt.Errorf("line %d: %d cells, the header has %d", r.line, len(r.cells), len(tb.header))
	}
	col := func(name string) string {
		for i, h := range tb.header {
			if unquote(h) == name {
				return r.cells[i]
			}
		}
		return ""
	}
	names := strings.Split(r.cells[0], ",")
	defs := []string{unquote(col("default"))}
	if len(names) > 1 {
		defs = strings.Split(defs[0], ",")
	}
	if len(defs) != len(names) {
		return nil, fmt.Errorf("line %d: %d flags and %d defaults", r.line, len(names), len(defs))
	}
	var out []docFlag
	for i, n := range names {
		n = unquote(n)
		name, ok := strings.CutPrefix(strings.Fields(n + " ")[0], "--")
		if !ok || name == "" {
			return nil, fmt.Errorf("line %d: %q is not a flag (--name)", r.line, n)
		}
		d := docFlag{name: name, def: strings.TrimSpace(defs[i]), meaning: r.cells[len(r.cells)-1], line: r.line}
		if c := unquote(col("with --compat=temporal")); c == "same" {
			d.compat = d.def
		} else if c != "" {
			d.compat = c
		}
		out = append(out, d)
	}
	return out, nil
}

// statedDefault is the default help states for f, as writeFlagHelp
// shows it: the "(default X)" of its text, where the default depends on
// the mode, else its value unless that is zero; and the value with
// --compat=temporal ("(default 4; 32 with --compat=temporal)"), the
// default where the text names none.
func statedDefault(f *pflag.Flag) (def, compat string) {
	if _, rest, ok := strings.Cut(f.Usage, "(default "); ok {
		rest, _, _ = strings.Cut(rest, ")")
		parts := strings.Split(rest, "; ")
		def = strings.Trim(parts[0], `"`)
		compat = def
		for _, p := range parts[1:] {
			if v, ok := strings.CutSuffix(p, " with --compat=temporal"); ok {
				compat = strings.Trim(v, `"`)
			}
		}
		return def, compat
	}
	if d := f.DefValue; d != "0" && d != "false" {
		return d, d
	}
	return "", ""
}

// noDefaultWords are what the document may write for a flag whose help
// states no default: the flag is off, or unset means none (the clock,
// for --now).
var noDefaultWords = []string{"", "none", "the clock"}

// sameDefault reports whether the document's default doc is the stated
// default of f: equal once backticks are gone; for a duration, equal as
// durations (1m0s is 1m); "off" or "on" for a bool, as it is false or
// true; a word of noDefaultWords where help states none.
func sameDefault(f *pflag.Flag, doc, stated string) bool {
	if f.Value.Type() == "bool" {
		return (doc == "off" && f.DefValue == "false") || (doc == "on" && f.DefValue == "true")
	}
	if doc == stated {
		return true
	}
	if stated == "" {
		return slices.Contains(noDefaultWords, doc)
	}
	if f.Value.Type() == "duration" {
		a, errA := time.ParseDuration(doc)
		b, errB := time.ParseDuration(stated)
		return errA == nil && errB == nil && a == b
	}
	return false
}

// commandFlags returns a fresh flag set of the command path ("run",
// "schedule create") as the command line registers it.
func commandFlags(t *testing.T, path string) *pflag.FlagSet {
	t.Helper()
	root := newRoot(context.Background(), &env{stdout: io.Discard, stderr: io.Discard})
	c, _, err := root.Find(strings.Fields(path))
	if err != nil || c == root {
		t.Fatalf("no command %q: %v", path, err)
	}
	return c.Flags()
}

// sampleValue is a value f takes, other than its default.
func sampleValue(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "bool":
		return "true"
	case "int", "float64":
		return "7"
	case "duration":
		return "7s"
	}
	return "x7"
}

func TestDocsFlagTables(t *testing.T) {
	b, err := os.ReadFile(runningDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(b)), " ")
	for _, s := range docRuleSentences {
		if !strings.Contains(text, s) {
			t.Errorf("%s no longer says %q: the test checks every documented flag's environment variable and config key by it; update docRuleSentences and docEnvName with the document", runningDoc, s)
		}
	}

	byHeading := map[string][]docTable{}
	for _, tb := range docTables(t, runningDoc) {
		if len(tb.header) > 0 && unquote(tb.header[0]) == "flag" {
			byHeading[tb.heading] = append(byHeading[tb.heading], tb)
		}
	}
	for h := range byHeading {
		if !slices.ContainsFunc(docFlagTables, func(s docFlagTable) bool { return s.heading == h }) {
			t.Errorf("%s: a flag table under %q, which docFlagTables does not say the commands of", runningDoc, h)
		}
	}

	for _, spec := range docFlagTables {
		t.Run(spec.heading, func(t *testing.T) {
			tables := byHeading[spec.heading]
			if len(tables) == 0 {
				t.Fatalf("%s: no flag table under %q", runningDoc, spec.heading)
			}
			var flags []docFlag
			for _, tb := range tables {
				for _, r := range tb.rows {
					fs, err := rowFlags(tb, r)
					if err != nil {
						t.Errorf("%s %q: %v", runningDoc, spec.heading, err)
						continue
					}
					flags = append(flags, fs...)
				}
			}
			sets := map[string]*pflag.FlagSet{}
			for _, c := range spec.commands {
				sets[c] = commandFlags(t, c)
			}
			// where says which commands a row is for: all of the table's,
			// or the one its meaning says it is only for.
			where := func(d docFlag) []string {
				for _, c := range spec.commands {
					if strings.Contains(d.meaning, "`"+c+"` only") {
						return []string{c}
					}
				}
				return spec.commands
			}
			seen := map[string]int{}
			for _, d := range flags {
				at := fmt.Sprintf("%s line %d, --%s", runningDoc, d.line, d.name)
				if l, ok := seen[d.name]; ok {
					t.Errorf("%s: column flag: also on line %d", at, l)
				}
				seen[d.name] = d.line
				for _, c := range spec.commands {
					f := sets[c].Lookup(d.name)
					if f != nil && f.Name != d.name {
						f = nil // another name of the flag (--ep is --endpoint)
					}
					switch want := slices.Contains(where(d), c); {
					case f == nil && want:
						t.Errorf("%s: column flag: no such flag of tqscavenger %s", at, c)
						continue
					case f != nil && !want:
						t.Errorf("%s: column meaning: says it is for %v only, but tqscavenger %s has it too", at, where(d), c)
						continue
					case f == nil:
						continue
					}
					if aliasOf(f) != "" {
						t.Errorf("%s: column flag: a deprecated alias of --%s: document --%s", at, aliasOf(f), aliasOf(f))
						continue
					}
					def, compat := statedDefault(f)
					if !sameDefault(f, d.def, def) {
						says := def
						if f.Value.Type() == "bool" {
							says = map[string]string{"false": "off", "true": "on"}[f.DefValue]
						}
						t.Errorf("%s: column default: the document says %q, tqscavenger %s -h says %q", at, d.def, c, says)
					}
					if d.compat != "" && !sameDefault(f, d.compat, compat) {
						t.Errorf("%s: column with --compat=temporal: the document says %q, tqscavenger %s -h says %q", at, d.compat, c, compat)
					}
					if d.compat == "" && compat != def {
						t.Errorf("%s: column with --compat=temporal: empty, but tqscavenger %s -h says %q with --compat=temporal (default %q)", at, c, compat, def)
					}
					if f.Hidden && !strings.Contains(d.meaning, "deprecated") {
						t.Errorf("%s: column meaning: the flag is hidden from tqscavenger %s -h as deprecated, and the row does not say so", at, c)
					}
				}
			}
			// Every flag of the groups the table covers is in it.
			for _, c := range spec.commands {
				sets[c].VisitAll(func(f *pflag.Flag) {
					g := f.Annotations[groupKey]
					if f.Hidden || len(g) != 1 || !slices.Contains(spec.complete, g[0]) {
						return
					}
					if _, ok := seen[f.Name]; !ok {
						t.Errorf("%s %q: column flag: no row for --%s, a flag of tqscavenger %s in help's %q group", runningDoc, spec.heading, f.Name, c, g[0])
					}
				})
			}
			for _, c := range spec.commands {
				var mine []docFlag
				for _, d := range flags {
					if slices.Contains(where(d), c) && sets[c].Lookup(d.name) != nil {
						mine = append(mine, d)
					}
				}
				t.Run(c, func(t *testing.T) { checkDocEnvAndKeys(t, c, mine) })
			}
		})
	}
}

// checkDocEnvAndKeys checks that each of the documented flags of the
// command cmd is read from the environment variable and the config file
// key docs/running.md names it by: its TQSCAVENGER_ variable, and its
// name as a key at the top level and under the command's section.
func checkDocEnvAndKeys(t *testing.T, cmd string, flags []docFlag) {
	clearEnv(t)
	type layerCase struct {
		column string
		setup  func(t *testing.T, fs *pflag.FlagSet) map[string]string // flag -> origin name wanted
		layer  string
	}
	yamlFile := func(t *testing.T, fs *pflag.FlagSet, section string) map[string]string {
		var b strings.Builder
		indent := ""
		if section != "" {
			fmt.Fprintf(&b, "%s:\n", section)
			indent = "  "
		}
		path := filepath.Join(t.TempDir(), "tqscavenger.yaml")
		want := map[string]string{}
		for _, d := range flags {
			fmt.Fprintf(&b, "%s%s: %q\n", indent, d.name, sampleValue(fs.Lookup(d.name)))
			want[d.name] = d.name + " in " + path
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := fs.Set("config", path); err != nil {
			t.Fatal(err)
		}
		return want
	}
	for _, lc := range []layerCase{
		{"environment variable", func(t *testing.T, fs *pflag.FlagSet) map[string]string {
			want := map[string]string{}
			for _, d := range flags {
				t.Setenv(docEnvName(d.name), sampleValue(fs.Lookup(d.name)))
				want[d.name] = docEnvName(d.name)
			}
			return want
		}, fromEnv},
		{"config key", func(t *testing.T, fs *pflag.FlagSet) map[string]string { return yamlFile(t, fs, "") }, fromFile},
		{"config key under " + cmd + ":", func(t *testing.T, fs *pflag.FlagSet) map[string]string { return yamlFile(t, fs, cmd) }, fromFile},
	} {
		t.Run(lc.column, func(t *testing.T) {
			fs := commandFlags(t, cmd)
			want := lc.setup(t, fs)
			o, err := layer(fs)
			if err != nil {
				t.Fatalf("%s, column %s: tqscavenger %s refused it: %v", runningDoc, lc.column, cmd, err)
			}
			for _, d := range flags {
				f := fs.Lookup(d.name)
				got := o[d.name]
				if got.layer != lc.layer || got.name != want[d.name] || f.Value.String() != sampleValue(f) {
					t.Errorf("%s line %d, --%s: %s %s: tqscavenger %s read %q from %s %q, want %q from %s %q",
						runningDoc, d.line, d.name, lc.column, want[d.name], cmd, f.Value.String(), got.layer, got.name, sampleValue(f), lc.layer, want[d.name])
				}
			}
		})
	}
}

// TestDocsReloadTable: every setting the reload table of docs/running.md
// names (a code span such as `max-conns` in its first column) is a flag
// of serve, the command that reloads.
func TestDocsReloadTable(t *testing.T) {
	fs := commandFlags(t, "serve")
	var tb *docTable
	for _, x := range docTables(t, runningDoc) {
		if len(x.header) == 2 && unquote(x.header[0]) == "setting" && unquote(x.header[1]) == "takes effect" {
			tb = &x
		}
	}
	if tb == nil {
		t.Fatalf("%s: no table | setting | takes effect |", runningDoc)
	}
	names := 0
	for _, r := range tb.rows {
		for _, m := range codeSpan.FindAllStringSubmatch(r.cells[0], -1) {
			names++
			if f := fs.Lookup(m[1]); f == nil || f.Name != m[1] {
				t.Errorf("%s line %d: column setting: %q is no flag of tqscavenger serve", runningDoc, r.line, m[1])
			}
		}
	}
	if names < 10 {
		t.Errorf("%s: the reload table names %d settings, want them all", runningDoc, names)
	}
}

// codeSpan matches a code span holding a flag's name: `max-conns`.
var codeSpan = regexp.MustCompile("`([a-z][a-z0-9-]*)`")
