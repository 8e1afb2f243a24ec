package cli

// The layers of a command's settings: flag > environment > config file >
// default. pflag parses the command line and records which flags it set;
// this file adds the environment and the YAML file over the flags left
// at their defaults, and records where each value came from.

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/tqscavenger/tqscavenger/daemon"
)

// Where a setting came from, in order of precedence.
const (
	fromFlag    = "flag"
	fromEnv     = "env"
	fromFile    = "file"
	fromDefault = "default"
)

// configFlag gives a command the --config flag. parse then fills every
// flag not set on the command line or in the environment from the file.
func configFlag(fs *pflag.FlagSet) {
	fs.String("config", "", "configuration file (YAML): flag names as keys, settings for one command under its name (serve:, run:, worker:, schedule:); flags and TQSCAVENGER_* variables override it")
}

// sectionOf returns the config file section a flag set reads besides the
// top level: its command's name, a sub-command's parent's ("schedule
// create" reads schedule:). `tqscavenger config` shows serve's.
func sectionOf(fs *pflag.FlagSet) string {
	if fs.Name() == "config" {
		return "serve"
	}
	name, _, _ := strings.Cut(fs.Name(), " ")
	return name
}

// sections are the commands that read the config file. A section named
// after one of them is skipped by the others; worker and schedule are
// sections in a build without them too, so that one file serves both.
var sections = map[string]bool{"serve": true, "run": true, "worker": true, "schedule": true}

// fileSetting is one key of the config file, as flag values.
type fileSetting struct {
	name   string
	values []string // a list sets a repeatable flag once per element
}

// readConfigFile reads the settings of the YAML file at path that apply to
// the command section: the top-level keys, overridden by those under
// section. Keys are flag names; '_' may stand for '-'.
func readConfigFile(path, section string) ([]fileSetting, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("--config: %v", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, usagef("--config %s: not a YAML mapping of settings: %v", path, err)
	}
	merged := map[string][]string{}
	put := func(m map[string]any, where string) error {
		for k, v := range m {
			name := strings.ToLower(strings.ReplaceAll(k, "_", "-"))
			if _, ok := v.(map[string]any); ok {
				if where == "" && sections[name] {
					continue // a command section, read below or by another command
				}
				return usagef("--config %s: %s%s: a mapping is only allowed as a command section (serve:, run:, worker:, schedule:)", path, where, k)
			}
			vals, err := scalars(v)
			if err != nil {
				return usagef("--config %s: %s%s: %v", path, where, k, err)
			}
			merged[name] = vals
		}
		return nil
	}
	if err := put(doc, ""); err != nil {
		return nil, err
	}
	if sub, ok := doc[section].(map[string]any); ok {
		if err := put(sub, section+"."); err != nil {
			return nil, err
		}
	}
	var out []fileSetting
	for name, vals := range merged {
		out = append(out, fileSetting{name, vals})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// scalars turns a YAML value into flag values: a scalar, or a list of them.
func scalars(v any) ([]string, error) {
	switch v := v.(type) {
	case nil:
		return nil, errors.New("no value")
	case []any:
		var out []string
		for _, x := range v {
			s, err := scalars(x)
			if err != nil || len(s) != 1 {
				return nil, errors.New("a list may hold only plain values")
			}
			out = append(out, s[0])
		}
		return out, nil
	case map[string]any:
		return nil, errors.New("a mapping is not a flag value")
	case time.Time:
		// YAML reads an unquoted timestamp as one; flags take RFC 3339.
		return []string{v.Format(time.RFC3339Nano)}, nil
	case float64:
		// Not fmt's %v, which writes 1e6 as 1e+06.
		return []string{strconv.FormatFloat(v, 'f', -1, 64)}, nil
	}
	return []string{fmt.Sprint(v)}, nil
}

// layer fills every flag of fs that the command line did not set from
// the environment (TQSCAVENGER_ + the flag name in upper case, '-' as '_',
// or temporal-sql-tool's SQL_* name of the setting: see envLookup), except
// the flags named in noEnv, then, for a command with --config, every flag
// still unset from the config file. It returns where each flag's value
// came from. pflag records which flags the command line set, so nothing
// is parsed twice.
func layer(fs *pflag.FlagSet, noEnv ...string) (map[string]origin, error) {
	out := map[string]origin{}
	fs.VisitAll(func(f *pflag.Flag) {
		if to := aliasOf(f); to != "" {
			if f.Changed {
				out[to] = origin{fromFlag, "--" + f.Name}
			}
			return
		}
		if _, ok := out[f.Name]; ok {
			return
		}
		out[f.Name] = origin{layer: fromDefault}
		if f.Changed {
			out[f.Name] = origin{fromFlag, "--" + f.Name}
		}
	})
	var errs []string
	fs.VisitAll(func(f *pflag.Flag) {
		if aliasOf(f) != "" || f.Name == "help" || out[f.Name].layer != fromDefault || slices.Contains(noEnv, f.Name) {
			return
		}
		name, v, ok, err := envLookup(f.Name)
		if err != nil {
			errs = append(errs, err.Error())
			return
		}
		if !ok {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			shown := v
			if secretFlags[f.Name] {
				shown = "xxxxx"
			}
			errs = append(errs, fmt.Sprintf("%s=%q: %v", name, shown, err))
			return
		}
		out[f.Name] = origin{fromEnv, name}
	})
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, usagef("bad environment variable %s", strings.Join(errs, "; "))
	}
	return out, applyConfigFile(fs, out)
}

// applyConfigFile fills every flag of fs still at its default (o) from the
// file named by its --config flag, if it has one. A key that is no flag
// of the command is an error, so a typo does not go unnoticed.
func applyConfigFile(fs *pflag.FlagSet, o map[string]origin) error {
	cf := fs.Lookup("config")
	if cf == nil || cf.Value.String() == "" {
		return nil
	}
	path := cf.Value.String()
	settings, err := readConfigFile(path, sectionOf(fs))
	if err != nil {
		return err
	}
	for _, s := range settings {
		if s.name == "config" {
			return usagef("--config %s: a config file cannot name another", path)
		}
		f := fs.Lookup(s.name)
		if f == nil || aliasOf(f) != "" || f.Name == "help" {
			return usagef("--config %s: %q is not a flag of tqscavenger %s (settings for one command go under its name, e.g. serve:)", path, s.name, fs.Name())
		}
		if o[f.Name].layer != fromDefault {
			continue
		}
		for _, v := range s.values {
			if err := fs.Set(f.Name, v); err != nil {
				return usagef("--config %s: %s: %q: %v", path, s.name, v, err)
			}
		}
		o[f.Name] = origin{fromFile, s.name + " in " + path}
	}
	return nil
}

// origin is where a flag's value came from.
type origin struct {
	layer string // fromFlag, fromEnv, fromFile or fromDefault
	name  string // as the user wrote it: --db, TQSCAVENGER_DB, SQL_HOST, db in FILE
}

// effectiveSettings lists every flag of fs after layer, with where its
// value came from. Secrets are masked.
func effectiveSettings(fs *pflag.FlagSet, o map[string]origin) []daemon.Setting {
	var out []daemon.Setting
	fs.VisitAll(func(f *pflag.Flag) {
		if aliasOf(f) != "" || f.Name == "help" {
			return
		}
		out = append(out, daemon.Setting{Name: f.Name, Value: maskSetting(f.Name, f.Value.String()), Source: o[f.Name].layer})
	})
	return out
}
