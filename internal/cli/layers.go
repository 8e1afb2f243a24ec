package cli

// The layers of a command's settings: flag > environment > config file >
// default. pflag parses the command line and records which flags it set;
// this file adds the environment and the YAML file over the flags left
// at their defaults, and records where each value came from.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/internal/readfile"
)

// Where a setting came from, in order of precedence.
const (
	fromFlag    = "flag"
	fromEnv     = "env"
	fromFile    = "file"
	fromDefault = "default"
	// fromProfile is a --temporal-* setting read from a temporal CLI
	// profile (profile.go), between the file and the default.
	fromProfile = "profile"
)

// configFlag gives a command the --config flag. parse then fills every
// flag not set on the command line or in the environment from the file.
func configFlag(fs *pflag.FlagSet) {
	fs.String("config", "", "configuration file (YAML): flag names as keys, settings for one command under its name ("+sectionList+"); flags and TQSCAVENGER_* variables override it")
}

// sectionOf returns the config file section a flag set reads besides the
// top level: its command's name, a sub-command's parent's ("schedule
// create" reads schedule:). `tqscavenger config` shows serve's, and
// `config COMMAND` that command's ("config schedule" reads schedule:).
func sectionOf(fs *pflag.FlagSet) string {
	name := fs.Name()
	if rest, ok := strings.CutPrefix(name, "config"); ok && (rest == "" || rest[0] == ' ') {
		if name = strings.TrimSpace(rest); name == "" {
			return "serve"
		}
	}
	name, _, _ = strings.Cut(name, " ")
	return name
}

// sectionNames are the commands that read the config file, as sections
// of it. A section named after one of them is skipped by the others;
// worker and schedule are sections in a build without them too, so that
// one file serves both.
var sectionNames = []string{"serve", "run", "worker", "schedule", "report", "schema"}

// sectionList is sectionNames as help and messages list them: "serve:,
// run:, …".
var sectionList = strings.Join(sectionNames, ":, ") + ":"

// sections is sectionNames as a set.
var sections = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range sectionNames {
		m[n] = true
	}
	return m
}()

// fileKeys are the flag names of the commands that read a config file,
// each command's flag set built once: all of them, and by the section
// each command reads. A top-level key of the file is read by every one of
// them that has the flag and skipped by the others (serve's workers: by
// schema check); a key under a section, by the commands that read that
// section (schema check's output: is skipped by schema setup). A key no
// such command has stays an error.
func fileKeys() keySets {
	fileKeysOnce.Do(func() { fileKeysSet = commandFlagNames() })
	return fileKeysSet
}

var (
	fileKeysOnce sync.Once
	fileKeysSet  keySets
)

// keySets are flag names: all, and by config file section.
type keySets struct {
	all       map[string]bool
	bySection map[string]map[string]bool
}

// has reports whether name is a flag of a command that reads the
// section ("" for the top level).
func (k keySets) has(section, name string) bool {
	if section == "" {
		return k.all[name]
	}
	return k.bySection[section][name]
}

// commandFlagNames builds the flag set of every command and returns the
// flag names of those with --config.
func commandFlagNames() keySets {
	keys := keySets{all: map[string]bool{}, bySection: map[string]map[string]bool{}}
	var walk func(parent string, cs []command)
	walk = func(parent string, cs []command) {
		for _, c := range cs {
			name := strings.TrimSpace(parent + " " + c.name)
			if c.flags != nil {
				fs := newFlagSet(name)
				g := newFlagGroups(fs)
				c.flags(g)
				g.done()
				if fs.Lookup("config") != nil {
					sec := sectionOf(fs)
					if keys.bySection[sec] == nil {
						keys.bySection[sec] = map[string]bool{}
					}
					fs.VisitAll(func(f *pflag.Flag) {
						if aliasOf(f) == "" && f.Name != "help" && f.Name != "config" {
							keys.all[f.Name] = true
							keys.bySection[sec][f.Name] = true
						}
					})
				}
			}
			walk(name, c.subs)
		}
	}
	walk("", commands())
	return keys
}

// fileSetting is one key of the config file, as flag values.
type fileSetting struct {
	name   string
	values []string // a list sets a repeatable flag once per element
	line   int      // of the key, for messages
	alias  bool     // the value is a YAML alias (*a) of another
	// section is the command section the key stood under ("serve"), or
	// "" for a top-level key.
	section string
}

// maxConfigBytes bounds a --config file: a config file of settings is a
// few kilobytes. Its YAML is read into nodes, about a hundred bytes of
// memory a byte of YAML (1 MiB of "1," took 150 MB), so 256 KiB keeps any
// file within a few tens of MiB.
const maxConfigBytes = 256 << 10

// flagNameShape is what a key must look like to be named in a message:
// a key that is not a flag name may be a line of some other file (a
// password file given by mistake), never to be quoted.
var flagNameShape = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// yamlQuoted matches what yaml's errors quote of the file.
var yamlQuoted = regexp.MustCompile("`[^`]*`")

// readConfigFile reads the settings of the YAML file at path that apply to
// the command section: the top-level keys, overridden by those under
// section. Keys are flag names; '_' may stand for '-'. The file must be
// a regular file of at most maxConfigBytes holding one YAML document;
// errors quote no content of it but flag names.
func readConfigFile(path, section string) ([]fileSetting, error) {
	b, err := readfile.Regular(path, maxConfigBytes)
	if err != nil {
		return nil, usagef("--config: %v", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var root yaml.Node
	if err := dec.Decode(&root); errors.Is(err, io.EOF) {
		return nil, nil // an empty file sets nothing
	} else if err != nil {
		return nil, usagef("--config %s: not YAML: %s", path, yamlQuoted.ReplaceAllString(err.Error(), "(a value)"))
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, usagef("--config %s: more than one YAML document (the next starts at line %d): a config file is one mapping of settings", path, next.Line)
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind == yaml.ScalarNode && doc.Tag == "!!null" {
		return nil, nil // only comments
	}
	if doc.Kind != yaml.MappingNode {
		return nil, usagef("--config %s: not a YAML mapping of settings (line %d): keys are flag names, such as workers: 4", path, doc.Line)
	}
	merged := map[string]fileSetting{}
	var sub *yaml.Node
	put := func(m *yaml.Node, where string) error {
		seen := map[string]int{}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			if k.Kind != yaml.ScalarNode || !flagNameShape.MatchString(k.Value) {
				return usagef("--config %s: line %d: %sa key that is no flag name (keys are flag names, such as workers: or db:)", path, k.Line, where)
			}
			name := strings.ToLower(strings.ReplaceAll(k.Value, "_", "-"))
			if l, ok := seen[name]; ok {
				return usagef("--config %s: %s%s on line %d and on line %d: give it once", path, where, k.Value, l, k.Line)
			}
			seen[name] = k.Line
			alias := v.Kind == yaml.AliasNode
			if alias {
				v = v.Alias
			}
			for _, e := range v.Content {
				alias = alias || e.Kind == yaml.AliasNode
			}
			if v.Kind == yaml.MappingNode {
				if where == "" && sections[name] {
					if name == section {
						sub = v
					}
					continue // a command section, read below or by another command
				}
				return usagef("--config %s: line %d: %s%s: a mapping is only allowed as a command section (%s)", path, k.Line, where, k.Value, sectionList)
			}
			var x any
			if err := v.Decode(&x); err != nil {
				return usagef("--config %s: line %d: %s%s: not a plain value or list", path, k.Line, where, k.Value)
			}
			vals, err := scalars(x)
			if err != nil {
				return usagef("--config %s: line %d: %s%s: %v", path, k.Line, where, k.Value, err)
			}
			merged[name] = fileSetting{name: name, values: vals, line: k.Line, alias: alias, section: strings.TrimSuffix(where, ".")}
		}
		return nil
	}
	if err := put(doc, ""); err != nil {
		return nil, err
	}
	if sub != nil {
		if err := put(sub, section+"."); err != nil {
			return nil, err
		}
	}
	var out []fileSetting
	for _, s := range merged {
		out = append(out, s)
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
			// The value is never shown, only the variable's name: a
			// variable may hold a secret, and the flag's own error
			// quotes the value it refused.
			errs = append(errs, fmt.Sprintf("%s: %s", name, refusedValue(f, v, err, "$"+name)))
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
// file named by its --config flag, if it has one. A key that is a flag of
// another command that reads it where it stands (fileKeys) is skipped, so
// that one file serves every command; any other key that is no flag of the
// command is an error, so a typo does not go unnoticed.
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
		if f == nil && fileKeys().has(s.section, s.name) {
			continue // another command's setting
		}
		if f == nil || aliasOf(f) != "" || f.Name == "help" {
			return unknownKey(fs, path, s)
		}
		if o[f.Name].layer != fromDefault {
			continue
		}
		for _, v := range s.values {
			if err := fs.Set(f.Name, v); err != nil {
				if s.alias || secretFlags[f.Name] {
					// The value is another key's (*a): the db DSN, say.
					return usagef("--config %s: line %d: %s: the value is not a valid %s", path, s.line, s.name, f.Value.Type())
				}
				return usagef("--config %s: line %d: %s: %s", path, s.line, s.name, refusedValue(f, v, err, "the value"))
			}
		}
		o[f.Name] = origin{fromFile, s.name + " in " + path}
	}
	return nil
}

// unknownKey is the error for a key of the file that is no flag of the
// command: with the same did-you-mean as a mistyped flag, and a hint that
// is true where the key stands (a key already under serve: is not told to
// go under a command's name). The key is no flag of any command that
// reads it where it stands (else it would have been skipped): it is
// matched against this command's flags first, then against theirs.
func unknownKey(fs *pflag.FlagSet, path string, s fileSetting) error {
	key, readers := s.name, "any command that reads the file"
	if s.section != "" {
		key, readers = s.section+"."+s.name, "any command that reads "+s.section+":"
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Deprecated == "" && aliasOf(f) == "" && f.Name != "help" && f.Name != "config" {
			names = append(names, f.Name)
		}
	})
	cmd := fs.Name()
	if sg := suggestNames(s.name, names); len(sg) > 0 {
		return usagef("--config %s: line %d: %s: not a flag of tqscavenger %s (did you mean %s?)", path, s.line, key, cmd, orList(sg))
	}
	others := fileKeys().all
	if s.section != "" {
		others = fileKeys().bySection[s.section]
	}
	var all []string
	for n := range others {
		all = append(all, n)
	}
	sort.Strings(all)
	if sg := suggestNames(s.name, all); len(sg) > 0 {
		return usagef("--config %s: line %d: %s: not a flag of tqscavenger %s nor of %s (did you mean %s?)", path, s.line, key, cmd, readers, orList(sg))
	}
	if s.section != "" {
		return usagef("--config %s: line %d: %s: not a flag of tqscavenger %s (see tqscavenger %s -h for its flags)", path, s.line, key, cmd, cmd)
	}
	return usagef("--config %s: line %d: %s: not a flag of tqscavenger %s (a top-level key is read by every command that reads the file and has that flag, and none has this one; see tqscavenger COMMAND -h)", path, s.line, key, cmd)
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

// refusedValue says what was wrong with v, a value flag f refused from
// the environment or a --config file, without v: a value there may be a
// secret put under the wrong key (a password as workers: say), and the
// flag's own error quotes it. The cause is kept where it says what the
// flag takes, with v (however quoted) as placeholder; where any part of v
// would remain, only the type the flag takes is named.
func refusedValue(f *pflag.Flag, v string, err error, placeholder string) string {
	var ive *pflag.InvalidValueError
	if errors.As(err, &ive) && ive.Unwrap() != nil {
		err = ive.Unwrap() // without pflag's `invalid argument "v" for "--flag"`
	}
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		err = ne.Err // without strconv's `parsing "v"`
	}
	msg := err.Error()
	for _, w := range []string{strconv.Quote(v), "'" + v + "'", v, strings.TrimSpace(v)} {
		if strings.TrimSpace(w) != "" {
			msg = strings.ReplaceAll(msg, w, placeholder)
		}
	}
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(part) >= 4 && strings.Contains(msg, part) {
			return fmt.Sprintf("not a valid %s (the value is not shown: it may be a secret)", f.Value.Type())
		}
	}
	return fmt.Sprintf("not a valid %s: %s", f.Value.Type(), msg)
}

// hideFileValues returns err with every value a --config file gave a
// string flag replaced, where the message quotes it, by the key and file
// it came from: a check after the layers (an unknown --pace, a --listen
// that does not parse) quotes what it refuses, and a value in a file may
// be a secret put under the wrong key. The error chain is kept, so the
// exit status is the same. The DSN is left to its own masking
// (redact.URL), which keeps a file path or host readable.
func hideFileValues(err error, fs *pflag.FlagSet, o map[string]origin) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	fs.VisitAll(func(f *pflag.Flag) {
		if o[f.Name].layer != fromFile || f.Name == "db" {
			return
		}
		if t := f.Value.Type(); t != "string" && t != "strings" {
			return // a number, duration or bool that parsed holds no secret
		}
		shown := "(the value of " + o[f.Name].name + ")"
		for _, v := range strings.Split(f.Value.String(), ",") {
			if v = strings.TrimSpace(v); v == "" {
				continue
			}
			msg = strings.ReplaceAll(msg, strconv.Quote(v), shown)
			if len(v) >= 4 {
				msg = strings.ReplaceAll(msg, v, shown)
			}
		}
	})
	if msg == err.Error() {
		return err
	}
	return &hiddenValues{msg, err}
}

// hiddenValues is an error whose message has a config file's values
// hidden; it wraps the original, so errors.Is and errors.As still tell
// it apart.
type hiddenValues struct {
	msg string
	err error
}

func (e *hiddenValues) Error() string { return e.msg }
func (e *hiddenValues) Unwrap() error { return e.err }
