// This file owns DSNs: parsing them, and printing them without their
// passwords.

package sqlstore

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Engine names a SQL engine.
type Engine string

// The engines tqscavenger supports.
const (
	SQLite   Engine = "sqlite"
	Postgres Engine = "postgres"
	MySQL    Engine = "mysql"
)

// DSN is a parsed data source name.
type DSN struct {
	Engine Engine
	// Path is the SQLite file.
	Path string
	// URL is the PostgreSQL or MySQL URL, password included.
	URL *url.URL
}

// ErrBadDSN is wrapped by every DSN parse error.
var ErrBadDSN = errors.New("bad database DSN")

// ParseDSN accepts postgres://user:pass@host:port/db?…, postgresql://…,
// mysql://user:pass@host:port/db?…, sqlite:PATH, sqlite://PATH, or a plain
// file path (SQLite). Errors never contain the password.
func ParseDSN(s string) (DSN, error) {
	if strings.TrimSpace(s) == "" {
		return DSN{}, fmt.Errorf("%w: empty (use postgres://…, mysql://…, sqlite:PATH or a file path)", ErrBadDSN)
	}
	scheme, rest, hasScheme := strings.Cut(s, ":")
	if !hasScheme || len(scheme) == 1 { // "C:\…" is a path, not a scheme
		return DSN{Engine: SQLite, Path: s}, nil
	}
	switch strings.ToLower(scheme) {
	case "sqlite", "sqlite3", "file":
		p := strings.TrimPrefix(rest, "//")
		if i := strings.IndexByte(p, '?'); i >= 0 {
			return DSN{}, fmt.Errorf("%w: %q: sqlite DSNs take no parameters; give just the file path", ErrBadDSN, s)
		}
		if p == "" {
			return DSN{}, fmt.Errorf("%w: %q has no file path: use sqlite:PATH", ErrBadDSN, s)
		}
		return DSN{Engine: SQLite, Path: p}, nil
	case "postgres", "postgresql", "mysql", "mariadb":
		u, err := url.Parse(s)
		if err != nil {
			return DSN{}, fmt.Errorf("%w: cannot parse %s URL (check for characters that need percent-encoding in the password)", ErrBadDSN, scheme)
		}
		if u.Host == "" {
			return DSN{}, fmt.Errorf("%w: %s has no host: use %s://user:pass@host:port/database", ErrBadDSN, Redact(s), strings.ToLower(scheme))
		}
		db := strings.TrimPrefix(u.Path, "/")
		if db == "" || strings.Contains(db, "/") {
			return DSN{}, fmt.Errorf("%w: %s names no database: use %s://user:pass@host:port/database", ErrBadDSN, Redact(s), strings.ToLower(scheme))
		}
		e := Postgres
		if strings.HasPrefix(strings.ToLower(scheme), "m") {
			e = MySQL
		}
		return DSN{Engine: e, URL: u}, nil
	}
	if strings.Contains(rest, "//") {
		return DSN{}, fmt.Errorf("%w: unknown scheme %q: use postgres://, mysql://, sqlite:PATH or a file path", ErrBadDSN, scheme)
	}
	return DSN{Engine: SQLite, Path: s}, nil
}

// Database returns the database name (PostgreSQL, MySQL) or file path.
func (d DSN) Database() string {
	if d.URL != nil {
		return strings.TrimPrefix(d.URL.Path, "/")
	}
	return d.Path
}

// String returns the DSN with its password masked.
func (d DSN) String() string {
	if d.URL != nil {
		return redactURL(d.URL)
	}
	return "sqlite:" + d.Path
}

// secretParams are query parameters that hold a password (pgx reads
// password and sslpassword from the query as well as from the user info).
var secretParams = []string{"password", "sslpassword"}

// redactURL formats u with every password masked.
func redactURL(u *url.URL) string {
	q := u.Query()
	masked := false
	for _, p := range secretParams {
		if q.Has(p) {
			q.Set(p, "xxxxx")
			masked = true
		}
	}
	if masked {
		c := *u
		c.RawQuery = q.Encode()
		u = &c
	}
	return u.Redacted()
}

// Redact masks the password of a DSN string, for logs and errors. Strings
// that do not parse as URLs with a user, such as "mysql:u:pw@h/db", are
// returned with everything between the scheme and the last "@" masked.
func Redact(s string) string {
	if u, err := url.Parse(s); err == nil && (u.User != nil || u.Host != "") {
		return redactURL(u)
	}
	j := strings.LastIndexByte(s, '@')
	if j < 0 {
		return s
	}
	start := strings.Index(s, "://") + 3
	if start < 3 {
		start = strings.IndexByte(s, ':') + 1
	}
	if start > 0 && start < j {
		return s[:start] + "xxxxx" + s[j:]
	}
	return s
}
