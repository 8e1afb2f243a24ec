package cli

// Which database a command opens, in one place: the flags that name it,
// the check that exactly one source names it, and opening it.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tqscavenger/tqscavenger/internal/connect"
	"github.com/tqscavenger/tqscavenger/internal/redact"
	"github.com/tqscavenger/tqscavenger/internal/temporalconfig"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// connFlags are the flags that name the database, shared by run, serve,
// config, report and schema. Exactly one source may name it, from any
// layer (flag, environment, config file): a DSN (--db), a Temporal
// server config (--temporal-config), or temporal-sql-tool's settings
// (--endpoint, --user, …, also read from the tool's SQL_* variables).
// The TLS flags go with a DSN or the tool's settings; a Temporal config
// has TLS settings of its own.
type connFlags struct {
	db string

	temporalConfig, temporalStore string

	endpoint, user, password, database, plugin, attrs string
	port                                              int

	tls                bool
	caFile, caData     string
	certFile, certData string
	keyFile, keyData   string
	serverName         string
	noHostVerify       bool

	connectTimeout time.Duration
}

// The flags of each source, and the TLS flags.
var (
	dsnSource      = []string{"db"}
	temporalSource = []string{"temporal-config", "temporal-store"}
	sqlToolSource  = []string{"endpoint", "port", "user", "password", "database", "plugin", "connect-attributes"}
	tlsFlags       = []string{"tls", "tls-ca-file", "tls-ca-data", "tls-cert-file", "tls-cert-data", "tls-key-file", "tls-key-data", "tls-server-name", "tls-disable-host-verification"}
)

// sqlToolEnv are temporal-sql-tool's environment variables, read for the
// flags of the same settings when TQSCAVENGER_* does not set them, so
// that a Kubernetes Job's environment for the tool works unchanged. An
// empty one is unset, as the tool reads its boolean ones.
var sqlToolEnv = map[string]string{
	"endpoint": "SQL_HOST", "port": "SQL_PORT", "user": "SQL_USER", "password": "SQL_PASSWORD",
	"database": "SQL_DATABASE", "plugin": "SQL_PLUGIN", "connect-attributes": "SQL_CONNECT_ATTRIBUTES",
	"tls": "SQL_TLS", "tls-ca-file": "SQL_TLS_CA_FILE", "tls-cert-file": "SQL_TLS_CERT_FILE",
	"tls-key-file": "SQL_TLS_KEY_FILE", "tls-server-name": "SQL_TLS_SERVER_NAME",
	"tls-disable-host-verification": "SQL_TLS_DISABLE_HOST_VERIFICATION",
}

// secretFlags are flags whose values are never shown.
var secretFlags = map[string]bool{"password": true, "tls-key-data": true}

func (c *connFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.db, "db", "", "database DSN: postgres://…, mysql://…, sqlite:PATH or a file path (or --temporal-config, or temporal-sql-tool's --endpoint, --user, …); "+
		"temporal-sql-tool's --db NAME (its database name) is read as --database NAME when NAME is a bare name (letters, digits, _, -, $) and another of the tool's flags is on the command line, else it is refused: use --database")
	fs.StringVar(&c.temporalConfig, "temporal-config", "", "a Temporal server config file (YAML): connect as Temporal does to its SQL datastore")
	fs.StringVar(&c.temporalStore, "temporal-store", "", "the datastore of --temporal-config (default its persistence.defaultStore)")
	fs.StringVar(&c.endpoint, "endpoint", "", "temporal-sql-tool's: host of the SQL server, also --ep or -ep (default 127.0.0.1; SQL_HOST)")
	fs.IntVarP(&c.port, "port", "p", 0, "temporal-sql-tool's: port of the SQL server, also --p (default the engine's: 5432, 3306; SQL_PORT)")
	capFlag(fs, "port", 65535)
	fs.StringVarP(&c.user, "user", "u", "", "temporal-sql-tool's: user name, also --u (SQL_USER)")
	fs.StringVar(&c.password, "password", "", "temporal-sql-tool's: password, also --pw or -pw; on a command line anyone can read it with ps: set SQL_PASSWORD or TQSCAVENGER_PASSWORD, or password: in the --config file")
	fs.StringVar(&c.database, "database", "", "temporal-sql-tool's: database, or the SQLite file (default temporal; SQL_DATABASE)")
	fs.StringVar(&c.plugin, "plugin", "", "temporal-sql-tool's: Temporal SQL plugin, also --pl or -pl: postgres12, postgres12_pgx, mysql8 or sqlite (default mysql8; SQL_PLUGIN)")
	fs.StringVar(&c.attrs, "connect-attributes", "", "temporal-sql-tool's: connect attributes as a query string, k=v&k2=v2, also --ca or -ca (not a TLS CA: that is --tls-ca-file) (SQL_CONNECT_ATTRIBUTES)")
	fs.BoolVar(&c.tls, "tls", false, "connect over TLS (implied by the other --tls-* flags; SQL_TLS)")
	fs.StringVar(&c.caFile, "tls-ca-file", "", "TLS: the CA (PEM) the server's certificate must be signed by (default the system's; SQL_TLS_CA_FILE)")
	fs.StringVar(&c.caData, "tls-ca-data", "", "TLS: the CA as base64 of its PEM, instead of --tls-ca-file")
	fs.StringVar(&c.certFile, "tls-cert-file", "", "TLS: client certificate (PEM), for mutual TLS (SQL_TLS_CERT_FILE)")
	fs.StringVar(&c.certData, "tls-cert-data", "", "TLS: the client certificate as base64 of its PEM")
	fs.StringVar(&c.keyFile, "tls-key-file", "", "TLS: the client certificate's key (PEM) (SQL_TLS_KEY_FILE)")
	fs.StringVar(&c.keyData, "tls-key-data", "", "TLS: the client key as base64 of its PEM (prefer a file or the environment: it is a secret)")
	fs.StringVar(&c.serverName, "tls-server-name", "", "TLS: the name the server's certificate must hold (default the host; SQL_TLS_SERVER_NAME)")
	durationVar(fs, &c.connectTimeout, "connect-timeout", 0, "bound on each new connection to PostgreSQL/MySQL, handshake and login included: a server that accepts and never answers fails with status 4 (default "+shortDuration(sqlstore.DefaultConnectTimeout)+")")
	zeroMeansDefault(fs, "connect-timeout")
	fs.BoolVar(&c.noHostVerify, "tls-disable-host-verification", false, "TLS: check the server's certificate against the CA but not its name (SQL_TLS_DISABLE_HOST_VERIFICATION)")
}

// given are the flags of names set to a value (not empty, 0 or false)
// by some layer, each as where it came from.
func given(fs *pflag.FlagSet, o map[string]origin, names []string) []string {
	var out []string
	for _, n := range names {
		f := fs.Lookup(n)
		if f == nil || o[n].layer == fromDefault {
			continue
		}
		if v := f.Value.String(); v != "" && v != "0" && v != "false" {
			out = append(out, o[n].name)
		}
	}
	return out
}

// source is the kind of source that names the database.
type source int

const (
	fromDSN source = iota
	fromTemporal
	fromSQLTool
)

// check checks, after layer, that exactly one source names the
// database, and that TLS flags go with it; it reads no file.
func (c *connFlags) check(fs *pflag.FlagSet, o map[string]origin) (source, error) {
	if err := c.sqlToolDB(fs, o); err != nil {
		return 0, err
	}
	var found []string
	var kinds []source
	for _, s := range []struct {
		kind  source
		what  string
		names []string
	}{
		{fromDSN, "a DSN", dsnSource},
		{fromTemporal, "a Temporal config", temporalSource},
		{fromSQLTool, "temporal-sql-tool's settings", sqlToolSource},
	} {
		if g := given(fs, o, s.names); len(g) > 0 {
			found = append(found, fmt.Sprintf("%s (%s)", s.what, strings.Join(g, ", ")))
			kinds = append(kinds, s.kind)
		}
	}
	switch {
	case len(found) == 0:
		return 0, usagef("no database: pass --db DSN or set TQSCAVENGER_DB (postgres://…, mysql://…, sqlite:PATH or a file path), " +
			"or --temporal-config FILE, or temporal-sql-tool's --endpoint, --user, --database, --plugin (or SQL_HOST, SQL_USER, …)")
	case len(found) > 1 && kinds[0] == fromDSN && o["db"].name == "--db" && slices.Contains(kinds, fromSQLTool):
		return 0, usagef("more than one database given: %s: here --db is a DSN, not temporal-sql-tool's database name: use --database %s", joinAnd(found), dbNameHint(c.db))
	case len(found) > 1:
		return 0, usagef("more than one database given: %s: give exactly one", joinAnd(found))
	}
	tls := given(fs, o, tlsFlags)
	switch {
	case kinds[0] == fromTemporal && len(tls) > 0:
		return 0, usagef("%s given with a Temporal config: its TLS comes from the datastore's tls: section", joinAnd(tls))
	case kinds[0] == fromTemporal && c.temporalConfig == "":
		return 0, usagef("--temporal-store %s without --temporal-config", c.temporalStore)
	case o["tls"].layer != fromDefault && !c.tls && len(tls) > 0:
		return 0, usagef("%s set to false, and %s given", o["tls"].name, joinAnd(tls))
	}
	return kinds[0], nil
}

// sqlToolDB reads --db as temporal-sql-tool's --db, its database name,
// where that is the only reading: --db NAME on the command line, NAME a
// bare name that is no DSN (no scheme, no path, no dot), another of the
// tool's flags on the command line, and --database not given. Then NAME
// moves to --database, and its origin says so. Elsewhere --db stays a
// DSN, and check's error names --database.
func (c *connFlags) sqlToolDB(fs *pflag.FlagSet, o map[string]origin) error {
	if o["db"].layer != fromFlag || !bareName(c.db) {
		return nil
	}
	onLine := false
	for _, n := range sqlToolSource {
		if n != "database" && o[n].layer == fromFlag && len(given(fs, o, []string{n})) > 0 {
			onLine = true
		}
	}
	if !onLine {
		return nil
	}
	if g := given(fs, o, []string{"database"}); len(g) > 0 {
		return usagef("--db %s and %s both given: here --db is a DSN; temporal-sql-tool's database name is --database: keep one", c.db, g[0])
	}
	name := c.db
	if err := fs.Set("database", name); err != nil {
		return usageError{err}
	}
	c.db = ""
	o["db"] = origin{layer: fromDefault}
	o["database"] = origin{fromFlag, "--db (temporal-sql-tool's database name, read as --database)"}
	return nil
}

// bareName reports whether s is a plain SQL database name: letters,
// digits, _, - and $, nothing a DSN or a file path holds.
func bareName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// dbNameHint is the value to show after --database in an error: --db's
// own if it is a bare name, else NAME (a DSN may hold a password).
func dbNameHint(db string) string {
	if bareName(db) {
		return db
	}
	return "NAME"
}

// joinAnd joins "a", "b" and "c" as "a, b and c".
func joinAnd(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// tlsSettings are the TLS flags' settings, nil for no TLS.
func (c *connFlags) tlsSettings() *sqlstore.TLS {
	t := &sqlstore.TLS{
		CAFile: c.caFile, CAData: c.caData, CertFile: c.certFile, CertData: c.certData,
		KeyFile: c.keyFile, KeyData: c.keyData, ServerName: c.serverName,
	}
	if c.noHostVerify {
		t.Verify = sqlstore.VerifyCA
	}
	if !c.tls && *t == (sqlstore.TLS{}) {
		return nil
	}
	return t
}

// target returns the database the flags name, after layer.
// Without password it runs no passwordCommand of a Temporal config, and
// leaves the password out: for a command that only checks the settings.
func (c *connFlags) target(ctx context.Context, fs *pflag.FlagSet, o map[string]origin, password bool) (connect.Target, error) {
	src, err := c.check(fs, o)
	if err != nil {
		return connect.Target{}, err
	}
	var t connect.Target
	switch src {
	case fromDSN:
		t, err = connect.DSN(c.db, c.tlsSettings())
	case fromTemporal:
		t, err = c.temporal(ctx, password)
	case fromSQLTool:
		t, err = connect.SQLTool{Endpoint: c.endpoint, Port: c.port, User: c.user, Password: c.password, Database: c.database,
			Plugin: c.plugin, ConnectAttributes: c.attrs, TLS: c.tlsSettings()}.Target()
	}
	if err != nil && !errors.Is(err, sqlstore.ErrBadDSN) {
		err = usageError{err}
	}
	return t, err
}

// temporal is the target of --temporal-config; without password, its
// password is left out.
func (c *connFlags) temporal(ctx context.Context, password bool) (connect.Target, error) {
	cfg, err := temporalconfig.Load(c.temporalConfig)
	if err != nil {
		return connect.Target{}, err
	}
	s, err := cfg.Store(c.temporalStore)
	if err != nil {
		return connect.Target{}, err
	}
	pw := ""
	if password {
		if pw, err = s.ResolvePassword(ctx); err != nil {
			return connect.Target{}, cfg.MaskError(err)
		}
	}
	t, err := connect.Temporal(s, pw)
	return t, cfg.MaskError(err)
}

// open opens the database the flags name, after layer; warn gets the
// warnings of its source.
func (c *connFlags) open(ctx context.Context, fs *pflag.FlagSet, o map[string]origin, opts sqlstore.Options, warn func(string)) (*sqlstore.DB, error) {
	t, err := c.target(ctx, fs, o, true)
	if err != nil {
		return nil, err
	}
	for _, w := range t.Warnings {
		warn(w)
	}
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = c.connectTimeout
	}
	return sqlstore.OpenDSN(ctx, t.DSN, t.Options(opts))
}

// stderrWarn is open's warn for a command without a logger.
func stderrWarn(e *env, cmd string) func(string) {
	return func(w string) { fmt.Fprintf(e.stderr, "tqscavenger %s: warning: %s\n", cmd, w) }
}

// envLookup returns the environment variable that sets the flag name and
// its value: TQSCAVENGER_NAME, else temporal-sql-tool's variable of the
// setting, if not empty (both set to different values is an error), or
// for a --temporal-* flag the temporal CLI's (temporalEnvLookup).
func envLookup(name string) (variable, value string, ok bool, err error) {
	variable = envName(name)
	value, ok = os.LookupEnv(variable)
	if vars := temporalEnv[name]; vars != nil {
		return temporalEnvLookup(variable, value, ok, vars)
	}
	alias := sqlToolEnv[name]
	if alias == "" {
		return variable, value, ok, nil
	}
	av, aok := os.LookupEnv(alias)
	switch {
	case !aok || av == "":
		return variable, value, ok, nil
	case ok && av != value:
		return "", "", false, fmt.Errorf("%s and %s both set, to different values: keep one", variable, alias)
	case ok:
		return variable, value, ok, nil
	}
	return alias, av, true, nil
}

// maskSetting returns the value of flag name as settings show it (the
// status page, `config`, a reload's log line): a secret flag's masked
// whole, any other value through internal/redact, as every output's: a
// URL's user info and token-like parameters (--temporal-metrics
// http://u:pw@host/…?token=…), a DSN's password, secret connect
// attributes.
func maskSetting(name, v string) string {
	switch {
	case secretFlags[name] && v != "":
		return redact.Mask
	case name == "db":
		return redact.URL(v)
	case name == "connect-attributes":
		parts := strings.Split(v, "&")
		for i, p := range parts {
			if k, _, ok := strings.Cut(p, "="); ok && redact.SecretName(k) {
				parts[i] = k + "=" + redact.Mask
			} else {
				parts[i] = redact.Text(p)
			}
		}
		return strings.Join(parts, "&")
	}
	// A list (--temporal-metrics, --protect) is its values joined by
	// commas, each masked as the flag took it: whole, one URL would hold
	// two @ and show as its scheme only.
	parts := strings.Split(v, ",")
	for i, p := range parts {
		parts[i] = redact.Text(p)
	}
	return strings.Join(parts, ",")
}
