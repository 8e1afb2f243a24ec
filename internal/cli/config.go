package cli

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
	"github.com/tqscavenger/tqscavenger/store"
)

func configCmdFlags(g *flagGroups) runFunc {
	ss := &serveSettings{}
	ss.register(g)
	return func(ctx context.Context, inv *invocation) error {
		ss.origins = inv.origins
		return configCmd(inv.stdout, ss)
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
	fmt.Fprintln(w, "# tqscavenger serve: effective configuration, for --config.")
	fmt.Fprintln(w, "# Precedence: flag > TQSCAVENGER_* environment > config file > default.")
	fmt.Fprintln(w, "# Defaults are commented out: this file pins only what was set, and any default may be uncommented.")
	fmt.Fprintln(w, "# Secrets (passwords, keys) are never written: give them in the environment (TQSCAVENGER_*, SQL_*).")
	for _, s := range r.settings {
		o := ss.origins[s.Name]
		switch {
		case s.Name == "config":
			if s.Value != "" {
				fmt.Fprintf(w, "# config: %s  (read from %s; a config file cannot name another)\n", yamlScalar(s.Value), o.name)
			}
		case s.Name == "every" && ss.df.cron != "":
			fmt.Fprintln(w, "#   every is not used: cron is set")
		case isSecret(s.Name, s.Value) && o.layer != fromDefault:
			fmt.Fprintf(w, "#   %s is a secret, not written (from %s)\n", s.Name, o.name)
		case o.layer == fromDefault:
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
			} else if zeroIsDefault(ss.fs.Lookup(s.Name)) {
				word = " (0: the default)"
			}
			fmt.Fprintf(w, "%s: %s  # %s %s%s\n", s.Name, v, o.layer, o.name, word)
		}
	}
	return nil
}

// isSecret reports whether the setting name, whose masked value is v,
// holds a secret: a password or a key, or any value masking changed (a
// DSN with a password, connect attributes, a metrics URL with a token).
func isSecret(name, v string) bool {
	return secretFlags[name] || strings.Contains(v, redact.Mask)
}

// zeroWords are the knobs whose 0 means no bound, and the word help
// uses for it.
var zeroWords = map[string]string{
	"max-deletes-per-second":    "unlimited",
	"max-statements-per-second": "unlimited",
	"statement-timeout":         "none",
}

// fileValue is s's value as a --config file takes it, and the word the
// value is shown as (for 0 that means unlimited or none), if any.
func fileValue(s daemon.Setting) (value, word string) {
	if w, ok := zeroWords[s.Name]; ok && s.Value == w {
		return "0", w
	}
	return yamlScalar(s.Value), ""
}

// zeroIsDefault reports whether f was given as 0, which means its default.
func zeroIsDefault(f *pflag.Flag) bool {
	if f == nil {
		return false
	}
	_, ok := zeroDefaults[f.Name]
	v := f.Value.String()
	return ok && (v == "0" || v == "0s")
}

// zeroDefaults are the knobs whose 0 means the default (the zero value of
// scavenger.Config's field): `config` and the status page show the value
// a pass uses instead of 0, whether 0 was given or left.
var zeroDefaults = map[string]bool{
	"workers": true, "list-page-size": true, "task-batch-size": true, "tasks-per-job": true,
	"max-deferred": true, "grace": true, "retry-initial": true, "retry-max": true,
	"slow-statement": true, "retry-for": true, "max-conns": true, "yield-factor": true,
	"connect-timeout": true,
}

// withDefaults shows, for knobs left at 0 ("the default") and lists left
// empty, the value a pass uses, as a value the flag takes back; for a 0
// that means no bound, the word help uses ("unlimited", "none").
func withDefaults(settings []daemon.Setting, cfg scavenger.Config, cf *connFlags, cron bool) []daemon.Setting {
	c := cfg.WithDefaults()
	eff := map[string]string{
		"yield-factor":    strconv.FormatFloat(c.YieldFactor, 'g', -1, 64),
		"workers":         strconv.Itoa(c.Workers),
		"list-page-size":  strconv.Itoa(c.ListPageSize),
		"task-batch-size": strconv.Itoa(c.TaskBatchSize),
		"tasks-per-job":   strconv.Itoa(c.TasksPerJob),
		"max-deferred":    strconv.Itoa(c.MaxDeferred),
		"grace":           shortDuration(c.Grace),
		"retry-initial":   shortDuration(c.RetryInitial),
		"retry-max":       shortDuration(c.RetryMax),
		"slow-statement":  shortDuration(c.SlowStatement),
		"retry-for":       shortDuration(c.RetryFor),
		"max-conns":       strconv.Itoa(storeDefaults.MaxConns),
		"connect-timeout": shortDuration(sqlstore.DefaultConnectTimeout),
		"protect":         strings.Join(c.ProtectedPrefixes, ","),
		"tables":          "all",
	}
	if len(c.ProtectedPrefixes) == 0 {
		eff["protect"] = "none"
	}
	if cfg.Compat == scavenger.CompatTemporal {
		eff["tables"] = store.V1.String()
	}
	if cf.tlsSettings() != nil {
		eff["tls"] = "true" // implied by the other TLS settings
	}
	out := append([]daemon.Setting(nil), settings...)
	for i, s := range out {
		zero := s.Value == "0" || s.Value == "0s"
		if v, ok := eff[s.Name]; ok && (s.Source == fromDefault || (zeroDefaults[s.Name] && zero)) {
			out[i].Value = v
		}
		if w, ok := zeroWords[s.Name]; ok && zero {
			out[i].Value = w
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
