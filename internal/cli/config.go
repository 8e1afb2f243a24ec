package cli

// tqscavenger config [COMMAND]: the settings a command would run with,
// resolved through every layer and checked as the command checks them,
// printed as a --config file with where each value came from.

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/internal/redact"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

func configCmdFlags(g *flagGroups) runFunc {
	ss := &serveSettings{}
	ss.register(g)
	return func(ctx context.Context, inv *invocation) error {
		ss.origins = inv.origins
		return configCmd(inv.stdout, ss)
	}
}

// configTarget is a command whose settings `config COMMAND` shows.
type configTarget struct {
	name string // as config takes it: "schedule"
	path string // the command whose flags it takes: "schedule create"
	// needDB: the command needs a database; schedule create does not
	// with --database-identity, and its connection is checked only
	// where one is given.
	needDB bool
}

// configTargets are the commands config shows, serve first: its
// settings are what config alone prints.
var configTargets = []configTarget{
	{"serve", "serve", true}, {"run", "run", true}, {"worker", "worker", true},
	{"report", "report", true}, {"schedule", "schedule create", false}, {"schema", "schema check", true},
}

// configSubs are config's sub-commands: one for each target among cs (a
// build without Temporal has no worker or schedule), with the target's
// own flags.
func configSubs(cs []command) []command {
	var out []command
	for _, t := range configTargets {
		c, ok := findCommand(cs, t.path)
		if !ok {
			continue
		}
		sub := command{name: t.name, summary: "the settings `tqscavenger " + t.path + "` would run with", noEnv: c.noEnv}
		if t.name == "serve" {
			sub.flags = configCmdFlags
		} else {
			sub.flags = configShowFlags(t, c.flags)
		}
		out = append(out, sub)
	}
	return out
}

// findCommand returns the command at path ("schedule create") in cs.
func findCommand(cs []command, path string) (command, bool) {
	name, rest, _ := strings.Cut(path, " ")
	for _, c := range cs {
		if c.name != name {
			continue
		}
		if rest == "" {
			return c, true
		}
		return findCommand(c.subs, rest)
	}
	return command{}, false
}

// configArgs refuses an argument of config that names none of its
// commands subs, with the nearest as a suggestion.
func configArgs(subs []command) func(args []string) error {
	var names []string
	for _, s := range subs {
		names = append(names, s.name)
	}
	return func(args []string) error {
		if len(args) == 0 {
			return nil
		}
		hint := ""
		if sg := suggestNames(args[0], names); len(sg) > 0 {
			hint = " (did you mean " + orList(sg) + "?)"
		}
		return usagef("unknown command %s for config%s: use one of %s, or none for serve's settings", strconv.Quote(args[0]), hint, joinOr(names))
	}
}

// configCmd prints the configuration serve would run with, with where
// each value came from, as a YAML file that --config takes as it is:
// every value set is a key, every default a commented line that may be
// uncommented, and a secret is never written (it stays where it was
// given: the environment, say).
func configCmd(w io.Writer, ss *serveSettings) error {
	// Bad values are reported as serve would, before being printed as good.
	r, err := ss.resolve(io.Discard)
	if err != nil {
		return err
	}
	if ss.cf.db != "" {
		if _, err := sqlstore.ParseDSN(ss.cf.db); err != nil {
			return err
		}
	}
	writeConfig(w, "serve", ss.fs, ss.origins, r.settings)
	return nil
}

// configShowFlags are `config COMMAND`'s flags: the command's own, given
// by flags, whose run is left unused.
func configShowFlags(t configTarget, flags func(g *flagGroups) runFunc) func(g *flagGroups) runFunc {
	return func(g *flagGroups) runFunc {
		flags(g)
		return func(ctx context.Context, inv *invocation) error {
			settings, err := resolveShown(ctx, t, inv.fs, inv.origins)
			if err != nil {
				return err
			}
			writeConfig(inv.stdout, t.path, inv.fs, inv.origins, settings)
			return nil
		}
	}
}

// checkTemporalShown applies the temporal CLI profile to the --temporal-*
// flags of fs still at their defaults, and checks them as worker and
// schedule do before they dial; nil in a build without Temporal, which
// has no such flags.
var checkTemporalShown func(fs *pflag.FlagSet, o map[string]origin) error

// resolveShown checks the flags of fs, layered (o), with the checks of
// the command t that take no connection: the database the flags name
// (a Temporal config and the TLS files read, nothing connected), the
// pass's settings, the Temporal client's (the profile applied), the log
// and output settings. layer, checkRanges and checkInputs have run, as
// for any command. It returns the settings to show, with the values a
// default of 0 stands for.
func resolveShown(ctx context.Context, t configTarget, fs *pflag.FlagSet, o map[string]origin) ([]daemon.Setting, error) {
	var (
		cf  connFlags
		cfg scavenger.Config
	)
	if fs.Lookup("db") != nil {
		conn := func(g *flagGroups) { cf.register(g.Conn) }
		m, err := mirror(fs, o, conn)
		if err != nil {
			return nil, err
		}
		var names []string
		m.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		if t.needDB || len(given(m, o, names)) > 0 {
			tg, err := cf.target(ctx, m, o, false)
			if err != nil {
				return nil, err
			}
			if err := checkTLS(tg); err != nil {
				return nil, err
			}
			if cf.db != "" {
				if _, err := sqlstore.ParseDSN(cf.db); err != nil {
					return nil, err
				}
			}
			copyBack(m, fs)
		}
	}
	if fs.Lookup("workers") != nil {
		var sf scavengeFlags
		if _, err := mirror(fs, o, sf.register); err != nil {
			return nil, err
		}
		var err error
		if cfg, err = sf.config(); err != nil {
			return nil, err
		}
	}
	if fs.Lookup("temporal-address") != nil && checkTemporalShown != nil {
		if err := checkTemporalShown(fs, o); err != nil {
			return nil, err
		}
	}
	if fs.Lookup("log-level") != nil {
		var lf logFlags
		if _, err := mirror(fs, o, func(g *flagGroups) { lf.register(g.Output) }); err != nil {
			return nil, err
		}
		if _, err := lf.logger(io.Discard); err != nil {
			return nil, err
		}
	}
	if f := fs.Lookup("output"); f != nil {
		if err := checkOutput(f.Value.String()); err != nil {
			return nil, err
		}
	}
	var settings []daemon.Setting
	for _, s := range effectiveSettings(fs, o) {
		// A setting a schedule does not carry is hidden and refused.
		if f := fs.Lookup(s.Name); f.Hidden && annotation(f, notScheduledKey) != "" {
			continue
		}
		settings = append(settings, s)
	}
	return withDefaults(fs, settings, cfg, &cf), nil
}

// mirror registers, with reg, flags of the command fs is on a flag set of
// their own (their values in reg's variables), and gives each the value
// fs holds where a layer set it: the command's values, typed as its
// checks take them, without running it.
func mirror(fs *pflag.FlagSet, o map[string]origin, reg func(g *flagGroups)) (*pflag.FlagSet, error) {
	m := newFlagSet(fs.Name())
	g := newFlagGroups(m)
	reg(g)
	g.done()
	var err error
	m.VisitAll(func(f *pflag.Flag) {
		from := fs.Lookup(f.Name)
		if err != nil || from == nil || aliasOf(f) != "" || o[f.Name].layer == fromDefault {
			return
		}
		if e := m.Set(f.Name, from.Value.String()); e != nil {
			err = usagef("%s: %s", o[f.Name].name, refusedValue(f, from.Value.String(), e, "the value"))
		}
	})
	return m, err
}

// copyBack gives fs the values a check changed on its mirror m: a
// profile's --temporal-* settings, temporal-sql-tool's --db NAME read as
// --database. Lists are not copied: a check changes none, and setting one
// again would add to it.
func copyBack(m, fs *pflag.FlagSet) {
	m.VisitAll(func(f *pflag.Flag) {
		to := fs.Lookup(f.Name)
		if to == nil || aliasOf(f) != "" || f.Value.Type() == "strings" || to.Value.String() == f.Value.String() {
			return
		}
		_ = fs.Set(f.Name, f.Value.String()) // the same flag took it on m
	})
}

// writeConfig writes the settings of the command cmd, flags fs layered
// (o), as a --config file.
func writeConfig(w io.Writer, cmd string, fs *pflag.FlagSet, o map[string]origin, settings []daemon.Setting) {
	fmt.Fprintf(w, "# tqscavenger %s: effective configuration, for --config.\n", cmd)
	fmt.Fprintln(w, "# Precedence: flag > TQSCAVENGER_* environment > config file > default.")
	fmt.Fprintln(w, "# Defaults are commented out: this file pins only what was set, and any default may be uncommented.")
	fmt.Fprintln(w, "# Secrets (passwords, keys) are never written: give them in the environment (TQSCAVENGER_*, SQL_*).")
	cron := fs.Lookup("cron")
	for _, s := range settings {
		from := o[s.Name]
		switch {
		case s.Name == "config":
			if s.Value != "" {
				fmt.Fprintf(w, "# config: %s  (read from %s; a config file cannot name another)\n", yamlScalar(s.Value), from.name)
			}
		case s.Name == "every" && cron != nil && cron.Value.String() != "":
			fmt.Fprintln(w, "#   every is not used: cron is set")
		case isSecret(s.Name, s.Value) && from.layer != fromDefault:
			fmt.Fprintf(w, "#   %s is a secret, not written (from %s)\n", s.Name, from.name)
		case from.layer == fromProfile:
			// Read from the profile at each start: pinned here, it would
			// hide the profile's next change.
			fmt.Fprintf(w, "# %s: %s  (from %s)\n", s.Name, yamlScalar(s.Value), from.name)
		case from.layer == fromDefault:
			v, word := fileValue(s)
			if word != "" {
				// Shown as help says it, written as the flag takes it.
				fmt.Fprintf(w, "# %s: %s  # %s  (default)\n", s.Name, v, word)
				continue
			}
			fmt.Fprintf(w, "# %s: %s  (default)\n", s.Name, v)
		default:
			v, word := fileValue(s)
			if word != "" {
				word = " (" + word + ")"
			} else if zeroIsDefault(fs.Lookup(s.Name)) {
				word = " (0: the default)"
			}
			fmt.Fprintf(w, "%s: %s  # %s %s%s\n", s.Name, v, from.layer, from.name, word)
		}
	}
}

// isSecret reports whether the setting name, whose masked value is v,
// holds a secret: a password or a key, or any value masking changed (a
// DSN with a password, connect attributes, a metrics URL with a token).
func isSecret(name, v string) bool {
	return secretFlags[name] || strings.Contains(v, redact.Mask)
}

// fileValue is s's value as a --config file takes it, and the word the
// value is shown as (for 0 that means unlimited or none), if any.
func fileValue(s daemon.Setting) (value, word string) {
	if row, ok := passSetting(s.Name); ok && row.zeroWord != "" && s.Value == row.zeroWord {
		return "0", row.zeroWord
	}
	return yamlScalar(s.Value), ""
}

// zeroIsDefault reports whether f was given as 0, which means its default.
func zeroIsDefault(f *pflag.Flag) bool {
	if f == nil || annotation(f, zeroDefaultKey) == "" {
		return false
	}
	v := f.Value.String()
	return v == "0" || v == "0s"
}

// withDefaults shows, for knobs left at 0 ("the default") and lists left
// empty, the value a pass uses, as a value the flag takes back; for a 0
// that means no bound, the word help uses ("unlimited", "none"). The pass
// settings' values come from their rows (passSettings); the connection's
// two are the store's.
func withDefaults(fs *pflag.FlagSet, settings []daemon.Setting, cfg scavenger.Config, cf *connFlags) []daemon.Setting {
	c := cfg.WithDefaults()
	out := append([]daemon.Setting(nil), settings...)
	for i, s := range out {
		zero := s.Value == "0" || s.Value == "0s"
		zeroDefault := false
		if f := fs.Lookup(s.Name); f != nil {
			zeroDefault = annotation(f, zeroDefaultKey) != ""
		}
		eff, word := "", ""
		if row, ok := passSetting(s.Name); ok {
			if row.effective != nil {
				eff = row.effective(c)
			}
			word = row.zeroWord
		}
		switch s.Name {
		case "connect-timeout":
			eff = shortDuration(sqlstore.DefaultConnectTimeout)
		case "tls":
			if cf.tlsSettings() != nil {
				eff = "true" // implied by the other TLS settings
			}
		}
		if eff != "" && (s.Source == fromDefault || (zeroDefault && zero)) {
			out[i].Value = eff
		}
		if word != "" && zero {
			out[i].Value = word
		}
	}
	return out
}

// yamlScalar quotes v where YAML would read it as something else.
func yamlScalar(v string) string {
	if v == "" || strings.ContainsAny(v, ":#{}[],&*!|>'\"%@`") || strings.TrimSpace(v) != v {
		return strconv.Quote(v)
	}
	return v
}
