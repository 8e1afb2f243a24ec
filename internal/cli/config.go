package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
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
func configFlag(fs *flag.FlagSet) {
	fs.String("config", "", "configuration file (YAML): flag names as keys, settings for one command under its name (serve:, run:); flags and TQSCAVENGER_* variables override it")
}

// sectionOf returns the config file section a flag set reads besides the
// top level: its command's name. `tqscavenger config` shows serve's.
func sectionOf(fs *flag.FlagSet) string {
	if fs.Name() == "config" {
		return "serve"
	}
	return fs.Name()
}

// sections are the commands that read the config file. A section named
// after one of them is skipped by the others.
var sections = map[string]bool{"serve": true, "run": true}

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
				return usagef("--config %s: %s%s: a mapping is only allowed as a command section (serve:, run:)", path, where, k)
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

// applyConfigFile fills every flag of fs not yet set (on the command line
// or from the environment) from the file named by its --config flag, if it
// has one. A key that is no flag of the command is an error, so a typo
// does not go unnoticed.
func applyConfigFile(fs *flag.FlagSet) error {
	cf := fs.Lookup("config")
	if cf == nil || cf.Value.String() == "" {
		return nil
	}
	path := cf.Value.String()
	settings, err := readConfigFile(path, sectionOf(fs))
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, s := range settings {
		if s.name == "config" {
			return usagef("--config %s: a config file cannot name another", path)
		}
		if fs.Lookup(s.name) == nil {
			return usagef("--config %s: %q is not a flag of tqscavenger %s (settings for one command go under its name, e.g. serve:)", path, s.name, fs.Name())
		}
		if set[s.name] {
			continue
		}
		for _, v := range s.values {
			if err := fs.Set(s.name, v); err != nil {
				return usagef("--config %s: %s: %q: %v", path, s.name, v, err)
			}
		}
	}
	return nil
}

// origin is where a flag's value came from.
type origin struct {
	layer string // fromFlag, fromEnv, fromFile or fromDefault
	name  string // as the user wrote it: --db, TQSCAVENGER_DB, SQL_HOST, db in FILE
}

// origins returns where the value of each flag of fs came from, after
// parse(fs, args).
func origins(fs *flag.FlagSet, args []string) (map[string]origin, error) {
	// Which flags the command line set: parse args again into throwaway
	// values, so fs keeps the values parse gave it.
	cmdline := map[string]bool{}
	scratch := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	scratch.SetOutput(io.Discard)
	fs.VisitAll(func(f *flag.Flag) {
		scratch.Var(discard{isBool: isBoolFlag(f)}, f.Name, "")
	})
	if err := scratch.Parse(canonicalArgs(fs, args)); err != nil {
		return nil, usageError{err}
	}
	scratch.Visit(func(f *flag.Flag) { cmdline[f.Name] = true })
	inFile := map[string]bool{}
	file := ""
	if cf := fs.Lookup("config"); cf != nil && cf.Value.String() != "" {
		file = cf.Value.String()
		settings, err := readConfigFile(file, sectionOf(fs))
		if err != nil {
			return nil, err
		}
		for _, s := range settings {
			inFile[s.name] = true
		}
	}
	out := map[string]origin{}
	var errs []string
	fs.VisitAll(func(f *flag.Flag) {
		o := origin{layer: fromDefault}
		variable, _, inEnv, err := envLookup(f.Name)
		if err != nil {
			errs = append(errs, err.Error())
		}
		switch {
		case cmdline[f.Name]:
			o = origin{fromFlag, "--" + f.Name}
		case inEnv:
			o = origin{fromEnv, variable}
		case inFile[f.Name]:
			o = origin{fromFile, f.Name + " in " + file}
		}
		out[f.Name] = o
	})
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, usagef("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// effectiveSettings lists every flag of fs after parse(fs, args), with
// where its value came from. Secrets are masked.
func effectiveSettings(fs *flag.FlagSet, args []string) ([]daemon.Setting, error) {
	o, err := origins(fs, args)
	if err != nil {
		return nil, err
	}
	var out []daemon.Setting
	fs.VisitAll(func(f *flag.Flag) {
		out = append(out, daemon.Setting{Name: f.Name, Value: maskSetting(f.Name, f.Value.String()), Source: o[f.Name].layer})
	})
	return out, nil
}

// discard is a flag.Value that keeps nothing.
type discard struct{ isBool bool }

func (discard) String() string     { return "" }
func (discard) Set(string) error   { return nil }
func (d discard) IsBoolFlag() bool { return d.isBool }

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// configCmd prints the configuration serve would run with, with where
// each value came from, as YAML a config file can start from.
func configCmd(ctx context.Context, e *env, args []string) error {
	ss := newServeSettings(e, "config", "[serve flags]")
	// Bad values are reported as serve would, before being printed as good.
	r, err := ss.resolve(args, io.Discard)
	if err != nil {
		return err
	}
	if ss.cf.db != "" {
		if _, err := sqlstore.ParseDSN(ss.cf.db); err != nil {
			return err
		}
	}
	settings := r.settings
	fmt.Fprintln(e.stdout, "# tqscavenger serve: effective configuration, passwords masked.")
	fmt.Fprintln(e.stdout, "# Precedence: flag > TQSCAVENGER_* environment > config file > default.")
	fmt.Fprintln(e.stdout, "# Defaults are commented out, so this output is a config file that pins only what was set.")
	for _, s := range settings {
		if s.Source == fromDefault || s.Name == "config" {
			fmt.Fprintf(e.stdout, "# %s: %s  (%s)\n", s.Name, yamlScalar(s.Value), s.Source)
			continue
		}
		fmt.Fprintf(e.stdout, "%s: %s  # %s\n", s.Name, yamlScalar(s.Value), s.Source)
	}
	return nil
}

// withDefaults shows, for scavenger knobs left at 0 ("the default"), the
// value a pass uses.
func withDefaults(settings []daemon.Setting, cfg scavenger.Config) []daemon.Setting {
	c := cfg.WithDefaults()
	eff := map[string]string{
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
		"protect":         strings.Join(c.ProtectedPrefixes, ","),
	}
	if c.Tables == nil {
		eff["tables"] = "all present"
	}
	out := append([]daemon.Setting(nil), settings...)
	for i, s := range out {
		if v, ok := eff[s.Name]; ok && s.Source == fromDefault {
			out[i].Value = v
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
