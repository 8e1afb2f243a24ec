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
