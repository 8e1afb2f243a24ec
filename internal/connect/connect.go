// Package connect turns the ways an operator names a database into what
// package sqlstore opens: a DSN, a Temporal server's SQL datastore (read
// by package temporalconfig), or temporal-sql-tool's settings (endpoint,
// port, user, …), each with its TLS settings as data (sqlstore.TLS).
//
// It is the one place that knows Temporal's plugin names and how Temporal
// connects to a datastore: the address and protocol, connectAttributes
// (libpq parameters on PostgreSQL, driver parameters and session
// variables on MySQL, Temporal's sslmode=disable when TLS is off), and
// TLS. Temporal's TLS is followed where it is weaker than tqscavenger's
// own: with enableHostVerification false (its default), PostgreSQL gets
// sslmode=require (the CA checked, not the name, if there is a CA, as
// libpq does; nothing checked without one) and MySQL checks nothing; the
// Target says so in a warning. Where Temporal ignores a setting of its
// own TLS section (PostgreSQL's serverName and the *Data forms), it is
// used.
package connect

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/tqscavenger/tqscavenger/internal/temporalconfig"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// Target is a database to open: its DSN, and what the DSN does not hold.
type Target struct {
	DSN sqlstore.DSN
	// TLS is the connection's TLS, nil for none or TLS set in the DSN.
	TLS *sqlstore.TLS
	// MaxConns is the connection cap the source names (a Temporal
	// datastore's maxConns), 0 if none.
	MaxConns int
	// Warnings are settings followed although they are weaker than
	// tqscavenger's own, for the caller to log.
	Warnings []string
}

// Options returns o with the target's TLS, and its MaxConns if o has
// none.
func (t Target) Options(o sqlstore.Options) sqlstore.Options {
	o.TLS = t.TLS
	if o.MaxConns == 0 {
		o.MaxConns = t.MaxConns
	}
	return o
}

// DSN is the target of a DSN, with TLS settings given beside it (nil for
// none).
func DSN(dsn string, tls *sqlstore.TLS) (Target, error) {
	d, err := sqlstore.ParseDSN(dsn)
	if err != nil {
		return Target{}, err
	}
	return Target{DSN: d, TLS: tls}, nil
}

// Plugin returns the engine of one of Temporal's SQL plugins:
// postgres12, postgres12_pgx, mysql8 or sqlite.
func Plugin(name string) (sqlstore.Engine, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "postgres12", "postgres12_pgx", "postgres", "postgresql":
		return sqlstore.Postgres, nil
	case "mysql8", "mysql":
		return sqlstore.MySQL, nil
	case "sqlite":
		return sqlstore.SQLite, nil
	}
	return "", fmt.Errorf("unknown SQL plugin %q: use postgres12, postgres12_pgx, mysql8 or sqlite", name)
}

// datastore is what a connection is built from, whatever its source.
type datastore struct {
	engine                   sqlstore.Engine
	addr, protocol           string // host:port or a socket; tcp or unix
	user, password, database string
	attrs                    map[string]string
	where                    string // the source, for messages
}

// sslParams are the libpq parameters that set up TLS.
var sslParams = []string{"sslmode", "sslrootcert", "sslcert", "sslkey"}

// build returns the DSN of ds and its query parameters, not yet set on
// the DSN's URL (the caller adds TLS ones).
func (ds datastore) build() (sqlstore.DSN, url.Values, error) {
	q := url.Values{}
	keys := make([]string, 0, len(ds.attrs))
	for k := range ds.attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		key, v := strings.TrimSpace(k), strings.TrimSpace(ds.attrs[k])
		if ds.engine == sqlstore.MySQL {
			key, v = mysqlAttr(key, v)
		}
		if q.Has(key) {
			return sqlstore.DSN{}, nil, fmt.Errorf("%s: connect attribute %q given twice", ds.where, key)
		}
		q.Set(key, v)
	}
	if ds.engine == sqlstore.SQLite {
		if q.Get("mode") == "memory" {
			return sqlstore.DSN{}, nil, fmt.Errorf("%s: an in-memory SQLite database (connectAttributes mode: memory) lives inside the Temporal server: there is nothing to scavenge from outside it", ds.where)
		}
		// The other attributes are pragmas and URI parameters of
		// Temporal's own connections; a store sets up its own.
		return sqlstore.DSN{Engine: sqlstore.SQLite, Path: ds.database}, nil, nil
	}
	if strings.TrimSpace(ds.database) == "" {
		return sqlstore.DSN{}, nil, fmt.Errorf("%s names no database", ds.where)
	}
	u := &url.URL{Scheme: string(ds.engine), Path: "/" + ds.database}
	switch {
	case ds.password != "":
		u.User = url.UserPassword(ds.user, ds.password)
	case ds.user != "":
		u.User = url.User(ds.user)
	}
	switch ds.protocol {
	case "", "tcp":
		// A user:password@ (or a URL) given as the address would become
		// part of the DSN's host and be echoed by every error about it:
		// refused, and never quoted.
		if strings.ContainsAny(ds.addr, "@/?# \t\n") {
			return sqlstore.DSN{}, nil, fmt.Errorf("%s: connectAddr holds an @, /, ?, # or a space (a user, a password or a URL?): it takes host:port only; give the user and password in user and password (the value is not shown: it may hold a secret)", ds.where)
		}
		host, port, err := net.SplitHostPort(ds.addr)
		if err != nil {
			host, port = ds.addr, "" // no port: the engine's
		}
		if strings.TrimSpace(host) == "" {
			return sqlstore.DSN{}, nil, fmt.Errorf("%s: connectAddr has no host: use host:port", ds.where)
		}
		if port == "" {
			port = map[sqlstore.Engine]string{sqlstore.Postgres: "5432", sqlstore.MySQL: "3306"}[ds.engine]
		}
		u.Host = net.JoinHostPort(host, port)
	case "unix":
		if ds.engine != sqlstore.MySQL {
			return sqlstore.DSN{}, nil, fmt.Errorf("%s: connectProtocol unix: Temporal's PostgreSQL plugins connect over TCP", ds.where)
		}
		u.Host = "localhost"
		q.Set("socket", ds.addr)
	default:
		return sqlstore.DSN{}, nil, fmt.Errorf("%s: connectProtocol: use tcp or unix", ds.where)
	}
	return sqlstore.DSN{Engine: ds.engine, URL: u}, q, nil
}

// mysqlAttr is Temporal's sanitizeAttr: its isolation level attributes
// are lower case and quoted, as MySQL's system variables need.
func mysqlAttr(key, v string) (string, string) {
	switch k := strings.ToLower(key); k {
	case "transaction_isolation", "tx_isolation":
		v = strings.ToLower(v)
		if !strings.HasPrefix(v, "'") {
			v = "'" + v + "'"
		}
		return k, v
	}
	return key, v
}

// Temporal returns the target of a Temporal SQL datastore, connecting as
// the Temporal server does (see the package doc), with password (from
// SQL.ResolvePassword).
func Temporal(s *temporalconfig.SQL, password string) (Target, error) {
	e, err := Plugin(s.PluginName)
	if err != nil {
		return Target{}, fmt.Errorf("%s: %w", s.Where, err)
	}
	ds := datastore{engine: e, addr: s.ConnectAddr, protocol: s.ConnectProtocol, user: s.User, password: password,
		database: s.DatabaseName, attrs: s.ConnectAttributes, where: s.Where}
	d, q, err := ds.build()
	if err != nil {
		return Target{}, err
	}
	t := Target{DSN: d, MaxConns: s.MaxConns}
	tlsOn := s.TLS != nil && s.TLS.Enabled
	switch e {
	case sqlstore.SQLite:
		return t, nil // Temporal's SQLite plugin has no TLS
	case sqlstore.Postgres:
		switch {
		case !tlsOn:
			if !q.Has("sslmode") {
				q.Set("sslmode", "disable") // Temporal's: no TLS unless asked
			}
		case slices.ContainsFunc(sslParams, q.Has):
			if err := temporalSSLParams(s, q); err != nil {
				return Target{}, err
			}
		default:
			t.TLS = temporalTLS(s.TLS, e)
		}
		if m := q.Get("sslmode"); tlsOn && t.TLS == nil && m != "verify-full" && m != "verify-ca" {
			t.Warnings = append(t.Warnings, fmt.Sprintf("%s: TLS with sslmode=%s, as its connectAttributes say: the server's certificate is not checked", s.Where, m))
		}
	case sqlstore.MySQL:
		// Temporal registers its TLS settings as the driver's tls
		// parameter unless connectAttributes has one.
		if tlsOn && q.Get("tls") == "" {
			q.Del("tls")
			t.TLS = temporalTLS(s.TLS, e)
		}
	}
	t.DSN.URL.RawQuery = q.Encode()
	if t.TLS != nil && t.TLS.Verify != sqlstore.VerifyFull {
		what := "is checked against the CA, but not for the server's name"
		if t.TLS.Verify == sqlstore.VerifyNone {
			what = "is not checked at all: any server that answers is believed"
		}
		t.Warnings = append(t.Warnings, fmt.Sprintf("%s: TLS without host verification, as Temporal does with tls.enableHostVerification false (its default): the server's certificate %s; set enableHostVerification: true to check it", s.Where, what))
	}
	return t, nil
}

// temporalTLS is Temporal's TLS section as sqlstore's: with
// enableHostVerification false, PostgreSQL's sslmode=require, which
// checks the CA if there is one (libpq's rule), and MySQL's
// InsecureSkipVerify, which checks nothing.
func temporalTLS(t *temporalconfig.TLS, e sqlstore.Engine) *sqlstore.TLS {
	st := &sqlstore.TLS{
		CAFile: t.CaFile, CAData: t.CaData, CertFile: t.CertFile, CertData: t.CertData,
		KeyFile: t.KeyFile, KeyData: t.KeyData, ServerName: t.ServerName,
	}
	switch {
	case t.EnableHostVerification:
		st.Verify = sqlstore.VerifyFull
	case e == sqlstore.Postgres && (t.CaFile != "" || t.CaData != ""):
		st.Verify = sqlstore.VerifyCA
	default:
		st.Verify = sqlstore.VerifyNone
	}
	return st
}

// temporalSSLParams merges Temporal's TLS section into libpq parameters
// that connectAttributes already has some of, as Temporal's PostgreSQL
// plugins do: each attribute wins over its TLS setting.
func temporalSSLParams(s *temporalconfig.SQL, q url.Values) error {
	t := s.TLS
	if t.CaData != "" || t.CertData != "" || t.KeyData != "" || t.ServerName != "" {
		return fmt.Errorf("%s: connectAttributes set libpq's ssl parameters, and tls has caData, certData, keyData or serverName, which they cannot express: keep the ssl parameters or those settings", s.Where)
	}
	if !q.Has("sslmode") {
		q.Set("sslmode", map[bool]string{true: "verify-full", false: "require"}[t.EnableHostVerification])
	}
	if !q.Has("sslrootcert") && t.CaFile != "" {
		q.Set("sslrootcert", t.CaFile)
	}
	switch {
	case q.Has("sslkey") != q.Has("sslcert"):
		return fmt.Errorf("%s: connectAttributes has one of sslcert and sslkey without the other", s.Where)
	case q.Has("sslkey"):
	case t.KeyFile != "" && t.CertFile != "":
		q.Set("sslkey", t.KeyFile)
		q.Set("sslcert", t.CertFile)
	case t.KeyFile != "" || t.CertFile != "":
		return fmt.Errorf("%s: tls has one of certFile and keyFile without the other", s.Where)
	}
	return nil
}

// SQLTool are temporal-sql-tool's connection settings (its --endpoint,
// --port, --user, --password, --database, --plugin and
// --connect-attributes, or SQL_HOST, SQL_PORT, …).
type SQLTool struct {
	// Endpoint is the host; default 127.0.0.1, as temporal-sql-tool's.
	Endpoint string
	// Port defaults to the engine's (temporal-sql-tool's is 3306 for
	// every plugin).
	Port           int
	User, Password string
	// Database defaults to temporal, as temporal-sql-tool's; on SQLite
	// it is the file.
	Database string
	// Plugin defaults to mysql8, as temporal-sql-tool's.
	Plugin string
	// ConnectAttributes is a URL query string: k=v&k2=v2.
	ConnectAttributes string
	// TLS is nil for none.
	TLS *sqlstore.TLS
}

// Target returns the target of s, connecting as temporal-sql-tool does,
// with s.TLS as it is (tqscavenger's flags check the server's name
// unless asked not to).
func (s SQLTool) Target() (Target, error) {
	const where = "temporal-sql-tool settings"
	plugin := s.Plugin
	if plugin == "" {
		plugin = "mysql8"
	}
	e, err := Plugin(plugin)
	if err != nil {
		return Target{}, fmt.Errorf("%s: %w", where, err)
	}
	// A DSN given to one of these would be echoed by the driver's errors
	// (a user name, a database name), password and all: refused unquoted.
	for _, f := range []struct{ name, v string }{{"endpoint", s.Endpoint}, {"user", s.User}, {"database", s.Database}} {
		if sqlstore.HoldsCredentials(f.v) {
			return Target{}, fmt.Errorf("%s: the %s looks like a DSN or holds credentials (user:password@…): give a DSN to --db, or the %s alone", where, f.name, f.name)
		}
	}
	if strings.ContainsAny(s.Endpoint, "/@?# \t\n") {
		return Target{}, fmt.Errorf("%s: endpoint %s is not a host name or address", where, strconv.Quote(sqlstore.Redact(s.Endpoint)))
	}
	host := s.Endpoint
	if host == "" {
		host = "127.0.0.1"
	}
	addr := host
	if s.Port != 0 {
		if s.Port < 0 || s.Port > 65535 {
			return Target{}, fmt.Errorf("%s: port %d: use 1 to 65535", where, s.Port)
		}
		addr = net.JoinHostPort(host, strconv.Itoa(s.Port))
	}
	db := s.Database
	if db == "" {
		db = "temporal"
	}
	attrs := map[string]string{}
	if s.ConnectAttributes != "" {
		vals, err := url.ParseQuery(s.ConnectAttributes)
		if err != nil {
			// Neither the string nor the parser's message, which quotes a
			// part of it: an attribute's value may be a password.
			return Target{}, fmt.Errorf("%s: connect attributes do not parse as k=v&k2=v2 (a %% must start a %%XX escape; the value is not shown: it may hold a secret)", where)
		}
		for k, v := range vals {
			if len(v) > 1 {
				return Target{}, fmt.Errorf("%s: connect attribute %q given %d times", where, k, len(v))
			}
			attrs[k] = v[0]
		}
	}
	ds := datastore{engine: e, addr: addr, protocol: "tcp", user: s.User, password: s.Password, database: db, attrs: attrs, where: where}
	d, q, err := ds.build()
	if err != nil {
		return Target{}, err
	}
	t := Target{DSN: d, TLS: s.TLS}
	switch e {
	case sqlstore.Postgres:
		if s.TLS != nil && slices.ContainsFunc(sslParams, q.Has) {
			return Target{}, fmt.Errorf("%s: TLS is set both by flags and by libpq's ssl parameters in the connect attributes: keep one", where)
		}
		if s.TLS == nil && !q.Has("sslmode") {
			q.Set("sslmode", "disable") // as temporal-sql-tool without --tls
		}
	case sqlstore.MySQL:
		if s.TLS != nil && q.Has("tls") {
			return Target{}, fmt.Errorf("%s: TLS is set both by flags and by the tls connect attribute: keep one", where)
		}
	}
	if d.URL != nil {
		t.DSN.URL.RawQuery = q.Encode()
	}
	return t, nil
}
