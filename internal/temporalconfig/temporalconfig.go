// Package temporalconfig reads the datastores of a Temporal server's
// configuration file (the YAML `temporal-server start` reads), as the
// server's loader does (common/config/loader.go in go.temporal.io/server).
//
// A file with "enable-template" in a comment within its first 1 KB is a
// Go template, expanded before it is read as YAML. Temporal gives such a
// template the environment as .Env and dockerize's default, and sprig's
// functions besides; this package expands .Env, default and the sprig
// functions Temporal's shipped docker config_template.yaml uses (lower,
// and upper with it; print is the template language's own), and the
// template language's own actions and functions (if, eq, …), and refuses
// every other function by name. A variable that is not set expands to
// "<no value>", as in Temporal; a setting of the SQL datastore that reads
// one is refused.
//
// Only what says where the data is and how to connect to it is read:
// persistence.defaultStore and persistence.datastores.
package temporalconfig

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tqscavenger/tqscavenger/internal/readfile"
)

// Config is the part of a Temporal server's configuration that says
// where its data is.
type Config struct {
	// Path is the file it was read from.
	Path string `yaml:"-"`

	// unset are the environment variables the template names that are
	// not set, for the hint of a missing datastore (names, never values).
	unset []string
	// env are the variables the template read and their values, masked
	// in its errors (mask.go).
	env []envValue

	Persistence struct {
		// DefaultStore names the datastore of Temporal's own data, task
		// queues included.
		DefaultStore string               `yaml:"defaultStore"`
		Datastores   map[string]Datastore `yaml:"datastores"`
	} `yaml:"persistence"`
}

// Datastore is one entry of persistence.datastores: one of its kinds is
// set.
type Datastore struct {
	SQL             *SQL       `yaml:"sql"`
	Cassandra       *yaml.Node `yaml:"cassandra"`
	Elasticsearch   *yaml.Node `yaml:"elasticsearch"`
	CustomDatastore *yaml.Node `yaml:"customDatastore"`
}

// SQL is a SQL datastore: the fields of Temporal's config.SQL that say
// how to connect.
type SQL struct {
	User            string           `yaml:"user"`
	Password        string           `yaml:"password"`
	PasswordCommand *PasswordCommand `yaml:"passwordCommand"`
	// PluginName is Temporal's SQL plugin: postgres12, postgres12_pgx,
	// mysql8 or sqlite.
	PluginName   string `yaml:"pluginName"`
	DatabaseName string `yaml:"databaseName"`
	// ConnectAddr is host:port, or a Unix socket's path when
	// ConnectProtocol is unix.
	ConnectAddr       string            `yaml:"connectAddr"`
	ConnectProtocol   string            `yaml:"connectProtocol"`
	ConnectAttributes map[string]string `yaml:"connectAttributes"`
	MaxConns          int               `yaml:"maxConns"`
	TLS               *TLS              `yaml:"tls"`

	// Where names the datastore, for messages:
	// "persistence.datastores.NAME.sql in FILE".
	Where string `yaml:"-"`
}

// TLS is Temporal's TLS settings of a datastore (auth.TLS). The *Data
// fields are base64 of the PEM the *File fields name.
type TLS struct {
	Enabled                bool   `yaml:"enabled"`
	CertFile               string `yaml:"certFile"`
	KeyFile                string `yaml:"keyFile"`
	CaFile                 string `yaml:"caFile"`
	EnableHostVerification bool   `yaml:"enableHostVerification"`
	ServerName             string `yaml:"serverName"`
	CertData               string `yaml:"certData"`
	KeyData                string `yaml:"keyData"`
	CaData                 string `yaml:"caData"`
}

// PasswordCommand is a command whose output is the password, as in
// Temporal's passwordCommand.
type PasswordCommand struct {
	Command string        `yaml:"command"`
	Args    []string      `yaml:"args"`
	Timeout time.Duration `yaml:"timeout"`
}

// MaxFileBytes bounds a Temporal config file, and what its template
// expands to: Temporal's own are a few kilobytes. Reading YAML or parsing
// a template costs about a hundred bytes of memory a byte of input (a
// node a few bytes), so 256 KiB keeps even a hostile file within a few
// tens of MiB (4 MiB of "- 1" lines took 230 MB); see budget.go for what
// a template may build.
const MaxFileBytes = 256 << 10

// ErrNotSQL is wrapped by Store's error for a datastore that is not a SQL
// one.
var ErrNotSQL = errors.New("not supported: Temporal's task queue scanner only runs on SQL stores")

// Load reads the Temporal server configuration at path, expanding it as a
// template first if it asks to be (see the package doc), with the
// process's environment as .Env. Its errors never show a password.
func Load(path string) (*Config, error) {
	b, err := readfile.Regular(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("read the Temporal config: %w", err)
	}
	var unset []string
	var env []envValue
	if templating(b) {
		unset, env = unsetVars(b), readVars(b)
		if b, err = expand(path, b, environ()); err != nil {
			return nil, masked(err, env)
		}
	}
	var c Config
	c.unset, c.env = unset, env
	if err := yaml.Unmarshal(b, &c); err != nil {
		msg := strings.Join(strings.Fields(maskEnv(scrub(err.Error(), passwords(b)), env)), " ")
		return nil, fmt.Errorf("%s: not a Temporal server config: %s", path, msg)
	}
	c.Path = path
	return &c, nil
}

// passwords returns the passwords in the datastores of the YAML b, read
// leniently, so that an error about b can leave them out.
func passwords(b []byte) []string {
	var doc struct {
		Persistence struct {
			Datastores map[string]map[string]map[string]any `yaml:"datastores"`
		} `yaml:"persistence"`
	}
	yaml.Unmarshal(b, &doc)
	var out []string
	for _, ds := range doc.Persistence.Datastores {
		for _, kind := range ds {
			if p, ok := kind["password"].(string); ok && p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// scrub masks the secrets in s, and the start of each that yaml's type
// errors quote (`abcdefg...`).
func scrub(s string, secrets []string) string {
	for _, p := range secrets {
		s = strings.ReplaceAll(s, p, "xxxxx")
		if len(p) > 10 {
			s = strings.ReplaceAll(s, "`"+p[:7]+"...`", "`xxxxx`")
		}
	}
	return s
}

// templating reports whether Temporal's loader would expand b as a
// template: a comment line that holds "enable-template" within its first
// 1 KB.
func templating(b []byte) bool {
	sc := bufio.NewScanner(io.LimitReader(bytes.NewReader(b), 1024))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "#") && strings.Contains(l, "enable-template") {
			return true
		}
	}
	return false
}

func environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			env[k] = v
		}
	}
	return env
}

// templateData is what a template sees as its dot: .Env is the
// environment, as dockerize's context and Temporal's have it.
type templateData struct{ env map[string]string }

// Env returns the environment.
func (d templateData) Env() map[string]string { return d.env }

// undefinedFunc matches text/template's error for a function not in its
// map.
var undefinedFunc = regexp.MustCompile(`^template: [^:]*:(\d+): function "([^"]+)" not defined`)

// expand renders the template b (the file path) with env as .Env.
func expand(path string, b []byte, env map[string]string) ([]byte, error) {
	bud := newBudget()
	tpl, err := template.New(filepath.Base(path)).Funcs(bud.funcs()).Parse(string(b))
	if err != nil {
		if m := undefinedFunc.FindStringSubmatch(err.Error()); m != nil {
			return nil, fmt.Errorf("%s:%s: template function %q is not supported: tqscavenger expands .Env, default, lower and upper only (those Temporal's shipped templates use), as in {{ default .Env.NAME \"value\" }} (Temporal's other template functions are sprig's)", path, m[1], m[2])
		}
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	for _, t := range tpl.Templates() {
		if t.Tree == nil {
			continue
		}
		if err := checkNode(t.Tree.Root, true); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, lineOf(b, err.pos), err)
		}
	}
	out := &cappedBuffer{max: MaxFileBytes, budget: bud}
	if err := tpl.Execute(out, templateData{env}); err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, fmt.Errorf("%s: the template expands to more than %d bytes", path, MaxFileBytes)
		}
		if be := boundError(""); errors.As(err, &be) {
			return nil, fmt.Errorf("%s: the template failed: %s: %w", path, execWhere.FindString(err.Error()), be)
		}
		// text/template's errors may quote a value, and a value may be
		// the environment's: only where it failed is said.
		// The name of a variable is no value: an unset one is said.
		if m := execUnset.FindStringSubmatch(err.Error()); m != nil {
			return nil, fmt.Errorf("%s: the template failed: %s: the environment variable %s is not set", path, execWhere.FindString(err.Error()), m[1])
		}
		return nil, fmt.Errorf("%s: the template failed: %s", path, execWhere.FindString(err.Error()))
	}
	return out.Bytes(), nil
}

// execWhere is the position of text/template's execution errors
// ("template: NAME:LINE:COL: executing …").
var execWhere = regexp.MustCompile(`^template: [^:]*:\d+(:\d+)?`)

// execUnset is text/template's error for a function given an unset
// variable: "… at <.Env.NAME>: invalid value; expected string".
var execUnset = regexp.MustCompile(` at <\.Env\.([A-Za-z_][A-Za-z0-9_]*)>: invalid value`)

// envError is a template that would print the environment, or a part of
// it chosen by the template rather than named.
type envError struct {
	pos  parse.Pos
	what string
	// msg, if set, is the error whole: a template refused for its size.
	msg string
}

func (e *envError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	if e.what == "{{ range }}" || e.what == "{{ template }}" {
		return e.what + " is not supported: tqscavenger expands .Env, default, lower and upper only (those Temporal's shipped templates use), as in {{ default .Env.NAME \"value\" }}"
	}
	return e.what + ": a template may read a variable by name ({{ .Env.NAME }}, {{ index .Env \"NAME\" }}, {{ default .Env.NAME \"value\" }}), never the environment whole (it holds secrets)"
}

// checkNode refuses, anywhere in the tree under n, a use of the whole
// environment (.Env, $.Env, or the dot or $ of the top level, which hold
// it; .Env as the map of index with a key is allowed), and range, which can only
// go over the environment or loop for as long as it is told: nested
// ranges over numbers run without end. It walks every node, so it holds
// for template functions added later too. dotIsRoot is whether the dot
// is still the top level's (with sets it to a value).
func checkNode(n parse.Node, dotIsRoot bool) *envError {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := checkNode(c, dotIsRoot); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		return checkPipe(n.Pipe, dotIsRoot)
	case *parse.IfNode:
		return checkBranch(&n.BranchNode, dotIsRoot, dotIsRoot)
	case *parse.RangeNode:
		return &envError{pos: n.Position(), what: "{{ range }}"}
	case *parse.WithNode:
		return checkBranch(&n.BranchNode, dotIsRoot, false)
	case *parse.TemplateNode:
		return &envError{pos: n.Position(), what: "{{ template }}"}
	}
	return nil
}

func checkBranch(b *parse.BranchNode, dotIsRoot, inside bool) *envError {
	if err := checkPipe(b.Pipe, dotIsRoot); err != nil {
		return err
	}
	if err := checkNode(b.List, inside); err != nil {
		return err
	}
	return checkNode(b.ElseList, dotIsRoot)
}

// checkPipe refuses a pipeline with the whole environment in it, but as
// the first argument of index.
func checkPipe(p *parse.PipeNode, dotIsRoot bool) *envError {
	if p == nil {
		return nil
	}
	for _, c := range p.Cmds {
		// Bounds the work of one call of a function that builds
		// nothing (eq compares each argument with the first): see
		// budget.go.
		if len(c.Args) > maxArgs+1 {
			return &envError{pos: c.Position(), msg: fmt.Sprintf("a command of more than %d arguments is not supported", maxArgs)}
		}
		for i, a := range c.Args {
			// index .Env KEY reads one variable; index .Env alone is the
			// environment whole.
			if i == 1 && isIdent(c.Args[0], "index") && len(c.Args) > 2 {
				if f, ok := a.(*parse.FieldNode); ok && len(f.Ident) == 1 && f.Ident[0] == "Env" {
					continue
				}
			}
			if err := checkArg(a, dotIsRoot); err != nil {
				return err
			}
		}
	}
	return nil
}

func isIdent(n parse.Node, name string) bool {
	id, ok := n.(*parse.IdentifierNode)
	return ok && id.Ident == name
}

// checkArg refuses an argument that is the environment whole.
func checkArg(a parse.Node, dotIsRoot bool) *envError {
	switch a := a.(type) {
	case *parse.FieldNode:
		if dotIsRoot && len(a.Ident) == 1 && a.Ident[0] == "Env" {
			return &envError{pos: a.Position(), what: "{{ .Env }}"}
		}
	case *parse.DotNode:
		if dotIsRoot {
			return &envError{pos: a.Position(), what: "{{ . }}"}
		}
	case *parse.VariableNode:
		if len(a.Ident) == 1 && a.Ident[0] == "$" {
			return &envError{pos: a.Position(), what: "{{ $ }}"}
		}
		if len(a.Ident) == 2 && a.Ident[0] == "$" && a.Ident[1] == "Env" {
			return &envError{pos: a.Position(), what: "{{ $.Env }}"}
		}
	case *parse.ChainNode:
		return checkArg(a.Node, dotIsRoot)
	case *parse.PipeNode:
		return checkPipe(a, dotIsRoot)
	}
	return nil
}

// lineOf is the line of b at byte offset pos.
func lineOf(b []byte, pos parse.Pos) int {
	if int(pos) > len(b) {
		pos = parse.Pos(len(b))
	}
	return bytes.Count(b[:pos], []byte("\n")) + 1
}

// errTooLarge is cappedBuffer's error past its bound.
var errTooLarge = errors.New("template output too large")

// cappedBuffer is a buffer that refuses to grow past max, and past the
// budget's deadline.
type cappedBuffer struct {
	bytes.Buffer
	max    int
	budget *budget
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if c.Len()+len(p) > c.max {
		return 0, errTooLarge
	}
	if err := c.budget.check(); err != nil {
		return 0, err
	}
	return c.Buffer.Write(p)
}

// defaultValue is dockerize's default, as Temporal's loader has it:
// {{ default .Env.NAME "value" }} is the variable's value if it is set
// (even to ""), else "value".
func defaultValue(args ...any) (string, error) {
	if len(args) == 0 {
		return "", errors.New("default needs a value and a default")
	}
	if args[0] != nil {
		s, ok := args[0].(string)
		if !ok {
			return "", errors.New("default: the value is not a string")
		}
		return s, nil
	}
	if len(args) < 2 || args[1] == nil {
		return "", errors.New("default: no default given")
	}
	s, ok := args[1].(string)
	if !ok {
		return "", errors.New("default: the default is not a string (quote it)")
	}
	return s, nil
}

// envName is a variable the template reads by name.
var envName = regexp.MustCompile(`\.Env\.([A-Za-z_][A-Za-z0-9_]*)`)

// unsetVars returns the variables the template b names that are not set.
func unsetVars(b []byte) []string {
	var out []string
	for _, m := range envName.FindAllSubmatch(b, -1) {
		n := string(m[1])
		if _, ok := os.LookupEnv(n); !ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// unsetHint says which variables the template read were not set.
func (c *Config) unsetHint() string {
	if len(c.unset) == 0 {
		return ""
	}
	return "; the template reads environment variables that are not set: " + strings.Join(c.unset, ", ")
}

// noValue is what a template writes for a variable that is not set.
const noValue = "<no value>"

// Store returns the SQL datastore name, or the default store if name is
// "". A datastore of another kind is refused with ErrNotSQL.
func (c *Config) Store(name string) (*SQL, error) {
	s, err := c.store(name)
	if err != nil {
		return nil, c.MaskError(err)
	}
	return s, nil
}

func (c *Config) store(name string) (*SQL, error) {
	p := &c.Persistence
	if name == "" {
		if name = p.DefaultStore; name == "" {
			return nil, fmt.Errorf("%s has no persistence.defaultStore: is it a Temporal server config?", c.Path)
		}
	}
	ds, ok := p.Datastores[name]
	if !ok {
		var names []string
		for n := range p.Datastores {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("%s has no datastore %q in persistence.datastores (it has: %s)%s", c.Path, name, strings.Join(names, ", "), c.unsetHint())
	}
	where := fmt.Sprintf("persistence.datastores.%s in %s", name, c.Path)
	kind := ""
	switch {
	case ds.SQL != nil:
	case ds.Cassandra != nil:
		kind = "a Cassandra"
	case ds.Elasticsearch != nil:
		kind = "an Elasticsearch"
	case ds.CustomDatastore != nil:
		kind = "a custom"
	default:
		return nil, fmt.Errorf("%s is empty: it names no sql store", where)
	}
	if kind != "" {
		return nil, fmt.Errorf("%s is %s store: %w", where, kind, ErrNotSQL)
	}
	s := *ds.SQL
	s.Where = fmt.Sprintf("persistence.datastores.%s.sql in %s", name, c.Path)
	if err := s.check(); err != nil {
		return nil, err
	}
	return &s, nil
}

// check refuses a SQL datastore without what a connection needs, or with
// a setting a template left without a value.
func (s *SQL) check() error {
	fields := map[string]string{
		"user": s.User, "password": s.Password, "pluginName": s.PluginName, "databaseName": s.DatabaseName,
		"connectAddr": s.ConnectAddr, "connectProtocol": s.ConnectProtocol,
	}
	if t := s.TLS; t != nil {
		for k, v := range map[string]string{"certFile": t.CertFile, "keyFile": t.KeyFile, "caFile": t.CaFile, "serverName": t.ServerName,
			"certData": t.CertData, "keyData": t.KeyData, "caData": t.CaData} {
			fields["tls."+k] = v
		}
	}
	for k, v := range s.ConnectAttributes {
		fields["connectAttributes."+k] = v
	}
	var empty []string
	for k, v := range fields {
		if strings.Contains(v, noValue) {
			empty = append(empty, k)
		}
	}
	if len(empty) > 0 {
		slices.Sort(empty)
		return fmt.Errorf("%s: %s read an environment variable that is not set (the template wrote %q, as it would for Temporal)", s.Where, strings.Join(empty, ", "), noValue)
	}
	for _, f := range []struct{ name, v string }{{"pluginName", s.PluginName}, {"databaseName", s.DatabaseName}} {
		if strings.TrimSpace(f.v) == "" {
			return fmt.Errorf("%s has no %s", s.Where, f.name)
		}
	}
	if s.PasswordCommand != nil && s.Password != "" {
		return fmt.Errorf("%s has both password and passwordCommand: Temporal takes one", s.Where)
	}
	if s.PasswordCommand != nil && s.PasswordCommand.Command == "" {
		return fmt.Errorf("%s: passwordCommand has no command", s.Where)
	}
	return nil
}

// ResolvePassword returns the datastore's password: password, or the
// output of passwordCommand without its trailing newlines, as Temporal
// runs it (30 s unless its timeout says otherwise). Its errors never
// hold the command's output; pass them through the Config's MaskError,
// as the command may come from the environment.
func (s *SQL) ResolvePassword(ctx context.Context) (string, error) {
	pc := s.PasswordCommand
	if pc == nil {
		return s.Password, nil
	}
	timeout := pc.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, pc.Command, pc.Args...)
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.Join(strings.Fields(stderr.String()), " ")
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		if msg != "" {
			msg = " (stderr: " + msg + ")"
		}
		return "", fmt.Errorf("%s: passwordCommand %s: %v%s", s.Where, pc.Command, err, msg)
	}
	return strings.TrimRight(string(out), "\r\n"), nil
}
