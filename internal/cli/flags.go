package cli

// The flags of the commands, on spf13/pflag: the groups help shows them in
// (-h the everyday ones, --help-all every one), the value types whose
// defaults print as a user types them, deprecated aliases, and the
// suggestion for a mistyped flag.

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tqscavenger/tqscavenger/internal/suggest"
)

// The groups of flags in help, in the order shown.
const (
	groupConn     = "Connection"
	groupTemporal = "Temporal"
	groupScope    = "What to delete"
	groupCount    = "What to count"
	groupWrite    = "What to write"
	groupPace     = "Pace and safety"
	groupDaemon   = "Daemon"
	groupSchedule = "Schedule"
	groupOutput   = "Output"
	groupOther    = "Other"
)

var groupOrder = []string{groupConn, groupTemporal, groupScope, groupCount, groupWrite, groupPace, groupDaemon, groupSchedule, groupOutput, groupOther}

// groupKey is the pflag annotation that holds a flag's group.
const groupKey = "tqscavenger_group"

// aliasKey is the pflag annotation of a deprecated alias: the flag's name.
const aliasKey = "tqscavenger_alias_of"

// flagGroups registers a command's flags, each in the group help shows it
// in: adding a flag to a group is one line, g.Pace.IntVar(…).
type flagGroups struct {
	fs *pflag.FlagSet
	// Temporal holds the Temporal client's flags (worker, schedule);
	// Schedule a Temporal Schedule's own. Count is report's (it deletes
	// nothing), Write seed's (it writes, never deletes).
	Conn, Temporal, Scope, Count, Write, Pace, Daemon, Schedule, Output, Other *pflag.FlagSet
}

// sets are the groups' flag sets, in groupOrder.
func (g *flagGroups) sets() []*pflag.FlagSet {
	return []*pflag.FlagSet{g.Conn, g.Temporal, g.Scope, g.Count, g.Write, g.Pace, g.Daemon, g.Schedule, g.Output, g.Other}
}

// newFlagSet is a command's flag set: errors are returned, never printed
// or exited on, and temporal-sql-tool's --ep is --endpoint.
func newFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.SetNormalizeFunc(normalizeFlag)
	return fs
}

// flagAliases are other names of flags on the command line:
// temporal-sql-tool's (its urfave/cli aliases ep, p, u, pw, pl, ca). Its
// db alias clashes with --db, the DSN: see connFlags.sqlToolDB. With
// longFlags, -name is --name for each, as the tool took them; -p and -u
// are also the one-letter shorthands of --port and --user.
var flagAliases = map[string]string{"ep": "endpoint", "p": "port", "u": "user", "pw": "password", "pl": "plugin", "ca": "connect-attributes"}

func normalizeFlag(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	if to, ok := flagAliases[name]; ok {
		name = to
	}
	return pflag.NormalizedName(name)
}

func newFlagGroups(fs *pflag.FlagSet) *flagGroups {
	g := &flagGroups{fs: fs}
	for _, p := range []**pflag.FlagSet{&g.Conn, &g.Temporal, &g.Scope, &g.Count, &g.Write, &g.Pace, &g.Daemon, &g.Schedule, &g.Output, &g.Other} {
		*p = newFlagSet(fs.Name())
	}
	return g
}

// referenceKey is the pflag annotation of a flag that -h leaves to
// --help-all and docs/running.md: one an operator does not need every day
// (referenceFlags).
const referenceKey = "tqscavenger_reference"

// done moves the flags registered in each group into the command's flag
// set, annotated with their group, and with referenceKey where -h leaves
// them out. seed's flags (What to write) are all its own and all shown.
func (g *flagGroups) done() {
	for i, set := range g.sets() {
		name := groupOrder[i]
		set.VisitAll(func(f *pflag.Flag) {
			if f.Annotations == nil {
				f.Annotations = map[string][]string{}
			}
			f.Annotations[groupKey] = []string{name}
			if referenceFlags[f.Name] && name != groupWrite {
				f.Annotations[referenceKey] = []string{"true"}
			}
		})
	}
	// In group order, so that the flag set's own order is help's.
	for _, set := range g.sets() {
		g.fs.AddFlagSet(set)
	}
}

// alias adds old as a hidden, deprecated name of the flag name of fs: it
// sets the same value, and using it prints a warning (warnAliases).
func alias(fs *pflag.FlagSet, old, name string) {
	f := fs.Lookup(name)
	fs.Var(f.Value, old, "deprecated: use --"+name)
	a := fs.Lookup(old)
	a.NoOptDefVal = f.NoOptDefVal
	a.Hidden = true
	a.Annotations = map[string][]string{aliasKey: {name}}
}

// deprecatedKey is the pflag annotation of a deprecated flag that is not
// a plain alias: what to use instead.
const deprecatedKey = "tqscavenger_deprecated"

// deprecate hides the flag name of fs and makes using it print a warning
// (warnAliases) that says instead.
func deprecate(fs *pflag.FlagSet, name, instead string) {
	f := fs.Lookup(name)
	f.Hidden = true
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[deprecatedKey] = []string{instead}
}

// warnAliases warns on w of each deprecated alias or flag the command line
// used.
func warnAliases(w io.Writer, cmd string, fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Changed {
			return
		}
		if to := aliasOf(f); to != "" {
			fmt.Fprintf(w, "tqscavenger %s: warning: --%s is deprecated: use --%s\n", cmd, f.Name, to)
		} else if d := f.Annotations[deprecatedKey]; len(d) == 1 {
			fmt.Fprintf(w, "tqscavenger %s: warning: --%s is deprecated: %s\n", cmd, f.Name, d[0])
		}
	})
}

// aliasOf returns the flag f is a deprecated alias of, or "".
func aliasOf(f *pflag.Flag) string {
	if a := f.Annotations[aliasKey]; len(a) == 1 {
		return a[0]
	}
	return ""
}

// durationValue is a time.Duration flag that prints as a user types it:
// 48h, not 48h0m0s, in help, `config` and the status page.
type durationValue time.Duration

func durationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage)
}

// String is "0" for no duration, which help shows as no default: the
// text of such a flag says what 0 means.
func (d *durationValue) String() string {
	if *d == 0 {
		return "0"
	}
	return shortDuration(time.Duration(*d))
}
func (d *durationValue) Type() string { return "duration" }
func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 90s, 30m or 48h", s)
	}
	*d = durationValue(v)
	return nil
}

// multiFlag is a repeatable string flag; a value may also list several,
// comma-separated.
type multiFlag struct {
	vals []string
	set  bool
}

func (m *multiFlag) String() string { return strings.Join(m.vals, ",") }
func (m *multiFlag) Type() string   { return "strings" }
func (m *multiFlag) Set(v string) error {
	m.set = true
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			m.vals = append(m.vals, s)
		}
	}
	return nil
}

// flagSuggestion returns " (did you mean --NAME?)" for an unknown flag
// (--name, or -x for an unknown shorthand) close to one of fs's, or "".
func flagSuggestion(fs *pflag.FlagSet, unknown string) string {
	short := len(unknown) == 2 && unknown[0] == '-' && unknown[1] != '-'
	unknown = strings.TrimLeft(unknown, "-")
	unknown, _, _ = strings.Cut(unknown, "=")
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Deprecated == "" {
			names = append(names, f.Name)
		}
	})
	if short {
		// One letter: what other tools mean by it, where this command has
		// that (-q and -v, quieter and louder), else its flags that start
		// with the letter. (-n, make's and rsync's dry run, is --dry-run's
		// own.)
		if c, ok := shortConventions[unknown]; ok && fs.Lookup(strings.Fields(c)[0]) != nil {
			return " (did you mean --" + c + "?)"
		}
	}
	s := suggestNames(unknown, names)
	if len(s) == 0 {
		return ""
	}
	for i := range s {
		s[i] = "--" + s[i]
	}
	return " (did you mean " + orList(s) + "?)"
}

// shortConventions are the one-letter flags of other tools a user may
// type, and this tool's flag for the same thing.
var shortConventions = map[string]string{
	"q": "log-level warn",
	"v": "log-level debug",
}

// maxSuggestions caps the names a suggestion lists.
const maxSuggestions = 4

// suggestNames returns the names the mistyped word most likely meant, best
// first: the names it is a prefix of (a word cut short: --dry, --out),
// else the one it equals but for dashes or is within two edits of (a
// typo: --dryrun, --workrs). A one-letter word is only ever a prefix.
func suggestNames(word string, names []string) []string {
	word = strings.ToLower(word)
	if word == "" {
		return nil
	}
	var prefixed []string
	for _, n := range names {
		if strings.HasPrefix(n, word) && n != word {
			prefixed = append(prefixed, n)
		}
	}
	if len(prefixed) > 0 {
		sort.Slice(prefixed, func(i, j int) bool {
			if len(prefixed[i]) != len(prefixed[j]) {
				return len(prefixed[i]) < len(prefixed[j])
			}
			return prefixed[i] < prefixed[j]
		})
		return prefixed[:min(len(prefixed), maxSuggestions)]
	}
	if len(word) < 2 {
		return nil
	}
	best, bestD := "", 3
	for _, n := range names {
		d := suggest.Distance(word, n)
		if strings.ReplaceAll(n, "-", "") == strings.ReplaceAll(word, "-", "") {
			d = 0
		}
		// Half the word or more changed is no resemblance: "out" is two
		// edits from "port", "dry" from "db".
		if d < bestD && d <= len(word)/2 {
			best, bestD = n, d
		}
	}
	if best == "" {
		return nil
	}
	return []string{best}
}

// orList writes names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// writeFlagHelp writes the flags of fs by group, each with its default
// once: from the flag's value, or in its text where the default depends
// on the mode (0 means "the default"). Unless all, it leaves out the
// flags marked referenceKey (reference reports them) and writes each
// flag on one line of helpWidth: a text that runs longer gives way to the
// flag's brief, with the default its text states.
func writeFlagHelp(w io.Writer, fs *pflag.FlagSet, all bool) {
	for _, group := range groupOrder {
		var flags []*pflag.Flag
		fs.VisitAll(func(f *pflag.Flag) {
			if shownIn(f, group, all) {
				flags = append(flags, f)
			}
		})
		if len(flags) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", group)
		heads := make([]string, len(flags))
		width := 0
		for i, f := range flags {
			heads[i] = flagHead(f)
			width = max(width, len(heads[i]))
		}
		for i, f := range flags {
			head := fmt.Sprintf("%-*s", width+3, heads[i])
			text := f.Usage
			if d := f.DefValue; !strings.Contains(text, "(default") && d != "" && d != "0" && d != "false" {
				text += " (default " + d + ")"
			}
			if b, ok := briefs[f.Name]; ok && !all && len(head)+len(text) > helpWidth {
				text = b
				if _, def, ok := strings.Cut(f.Usage, "(default"); ok {
					def, _, _ = strings.Cut(def, ")")
					text += " (default" + def + ")"
				} else if d := f.DefValue; d != "" && d != "0" && d != "false" {
					text += " (default " + d + ")"
				}
			}
			writeWrapped(w, head, text, helpWidth)
		}
	}
}

// helpWidth is the width help is wrapped at.
const helpWidth = 100

// shownIn reports whether help shows f in group: hidden and deprecated
// flags never, those marked referenceKey only with all.
func shownIn(f *pflag.Flag, group string, all bool) bool {
	if f.Hidden || f.Deprecated != "" || (!all && annotation(f, referenceKey) != "") {
		return false
	}
	g := f.Annotations[groupKey]
	return (len(g) == 1 && g[0] == group) || (len(g) == 0 && group == groupOther)
}

// reference returns the flags of fs that -h leaves out, and the groups
// they are in, in groupOrder.
func reference(fs *pflag.FlagSet) (n int, groups []string) {
	for _, group := range groupOrder {
		k := 0
		fs.VisitAll(func(f *pflag.Flag) {
			if shownIn(f, group, true) && !shownIn(f, group, false) {
				k++
			}
		})
		if k > 0 {
			n += k
			groups = append(groups, group)
		}
	}
	return n, groups
}

// flagHead is how help names a flag: "  -h, --help", "      --grace DURATION".
func flagHead(f *pflag.Flag) string {
	h := "      --" + f.Name
	if f.Shorthand != "" {
		h = "  -" + f.Shorthand + ", --" + f.Name
	}
	if f.Value.Type() == "bool" {
		return h
	}
	if v, ok := valueNames[f.Name]; ok && f.Value.Type() != "duration" {
		// A duration is DURATION whatever its name: schedule's --jitter
		// takes no share of the interval, as serve's does.
		return h + " " + v
	}
	if vals, ok := enumValues[f.Name]; ok {
		return h + " " + strings.Join(vals, "|")
	}
	name, _ := pflag.UnquoteUsage(f)
	switch f.Value.Type() {
	case "strings":
		name = "string" // repeatable: the text says so
	case "float64":
		name = "number"
	}
	return h + " " + strings.ToUpper(name)
}

// valueNames name the value of flags whose type says too little.
var valueNames = map[string]string{
	"db": "DSN", "config": "FILE", "temporal-config": "FILE", "stats-json": "FILE", "result": "FILE",
	"tls-ca-file": "FILE", "tls-cert-file": "FILE", "tls-key-file": "FILE", "binary": "FILE", "dir": "DIR",
	"tls-ca-data": "BASE64", "tls-cert-data": "BASE64", "tls-key-data": "BASE64", "tls-server-name": "NAME",
	"now": "TIME", "queue": "GLOB", "protect": "PREFIX", "namespace": "NAME|UUID", "listen": "ADDR",
	"cron": "EXPR", "jitter": "DURATION|PCT", "endpoint": "HOST", "user": "NAME", "database": "NAME",
	"connect-attributes": "K=V&...", "temporal-store": "NAME", "plugin": "PLUGIN", "name-prefix": "PREFIX",
	"partition": "I/N", "checkpoint": "FILE", "closed-cluster": "NAME", "setups": "PxW,...",
	"temporal-address": "HOST:PORT", "temporal-namespace": "NAME", "temporal-task-queue": "NAME", "temporal-api-key": "KEY",
	"temporal-tls-cert-path": "FILE", "temporal-tls-key-path": "FILE", "temporal-tls-ca-path": "FILE", "temporal-tls-server-name": "NAME",
	"schedule-id": "ID", "database-identity": "ID",
	"pace": "gentle|full", "temporal-metrics": "URL", "temporal-profile": "NAME", "temporal-config-file": "FILE",
}

// writeWrapped writes head and text, wrapped at width with every line
// after the first indented to head's length.
func writeWrapped(w io.Writer, head, text string, width int) {
	line := head
	indent := strings.Repeat(" ", len(head))
	for i, word := range strings.Fields(text) {
		if i > 0 && len(line)+1+len(word) > width {
			fmt.Fprintln(w, line)
			line = indent + word
			continue
		}
		if i > 0 {
			line += " "
		}
		line += word
	}
	fmt.Fprintln(w, line)
}
