// This file owns DSNs: parsing them, and printing them without their
// passwords.

package sqlstore

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tqscavenger/tqscavenger/internal/redact"
	"github.com/tqscavenger/tqscavenger/internal/suggest"
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

// acceptedForms lists the DSN forms ParseDSN accepts, for its errors.
const acceptedForms = "use postgres://, mysql://, sqlite:PATH or a file path (postgres://user:pass@host:5432/db?sslmode=…, mysql://user:pass@host:3306/db)"

// ParseDSN accepts postgres://user:pass@host:port/db?…, postgresql://…,
// mysql://user:pass@host:port/db?…, sqlite:PATH, sqlite://PATH, or a plain
// file path (SQLite). Errors never contain the password.
//
// Other drivers' forms are refused rather than taken for a SQLite file
// path (which would create, or fail to find, a file named after the
// credentials): go-sql-driver's user:pass@tcp(host:3306)/db, libpq's
// host=… user=… password=… strings, and a scheme that is a typo of one
// of ours (postgress://, mysq://).
func ParseDSN(s string) (DSN, error) {
	if strings.TrimSpace(s) == "" {
		return DSN{}, fmt.Errorf("%w: empty (%s)", ErrBadDSN, acceptedForms)
	}
	if form := foreignForm(s); form != "" {
		return DSN{}, fmt.Errorf("%w: %s looks like %s, which tqscavenger does not take: %s", ErrBadDSN, Redact(s), form, acceptedForms)
	}
	scheme, rest, hasScheme := strings.Cut(s, ":")
	if !hasScheme || len(scheme) == 1 { // "C:\…" is a path, not a scheme
		return sqlitePath(s, s)
	}
	switch strings.ToLower(scheme) {
	case "sqlite", "sqlite3", "file":
		p := strings.TrimPrefix(rest, "//")
		if i := strings.IndexByte(p, '?'); i >= 0 {
			return DSN{}, fmt.Errorf("%w: %s: sqlite DSNs take no parameters; give just the file path", ErrBadDSN, strconv.Quote(Redact(s)))
		}
		if p == "" {
			return DSN{}, fmt.Errorf("%w: %s has no file path: use sqlite:PATH", ErrBadDSN, strconv.Quote(Redact(s)))
		}
		return sqlitePath(s, p)
	case "postgres", "postgresql", "mysql", "mariadb":
		// A password with an unescaped @, /, ? or # splits where the user
		// did not mean it to: the parser's host, path or query would hold
		// part of it, and the error would name the wrong cause. Such a DSN
		// is echoed as its scheme only (redact.URL).
		shown := strings.ToLower(scheme) + "://" + redact.Mask
		if strings.Count(s, "@") > 1 {
			return DSN{}, fmt.Errorf("%w: %s: more than one @: the password holds an unescaped @: percent-encode it as %%40 (an @ in the user or a parameter too; and /, ?, #, %% as %%2F, %%3F, %%23, %%25)", ErrBadDSN, shown)
		}
		u, err := url.Parse(s)
		if err != nil {
			return DSN{}, fmt.Errorf("%w: %s: cannot parse it as a URL: the password (or user) holds a character that needs percent-encoding (/ as %%2F, ? as %%3F, # as %%23, %% as %%25, @ as %%40)", ErrBadDSN, shown)
		}
		if u.Host != "" && (strings.Contains(s, "@") && u.User == nil || redact.Value(u) == shown) {
			return DSN{}, fmt.Errorf("%w: %s: the password (or user) holds an unescaped /, ? or #: percent-encode it (/ as %%2F, ? as %%3F, # as %%23)", ErrBadDSN, shown)
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
		return DSN{}, fmt.Errorf("%w: unknown scheme %q: %s", ErrBadDSN, scheme, acceptedForms)
	}
	return sqlitePath(s, s)
}

// credentialsShape matches a user:password@ anywhere: no SQLite file is
// named so, and such a path is a URL whose scheme was mistyped (postgres//,
// postgres;//, //u:pw@h), which must not be echoed as a file name.
var credentialsShape = regexp.MustCompile(`:[^@]*@`)

// driveLetter matches a Windows path's drive, which is not a user.
var driveLetter = regexp.MustCompile(`^[A-Za-z]:[\\/]`)

// HoldsCredentials reports whether s holds a user:password@ or a ://: it
// is a DSN, or a URL with a mistyped scheme, where a host, user or
// database name should be.
func HoldsCredentials(s string) bool {
	return hasCredentials(s) || strings.Contains(s, "://")
}

// hasCredentials reports whether s holds a user:password@.
func hasCredentials(s string) bool {
	return credentialsShape.MatchString(driveLetter.ReplaceAllString(s, ""))
}

// sqlitePath is the DSN of the SQLite file p, named by s, unless p is a
// URL with credentials in disguise.
func sqlitePath(s, p string) (DSN, error) {
	if hasCredentials(p) {
		return DSN{}, fmt.Errorf("%w: %s holds credentials (user:password@…), which a SQLite file path does not: is the scheme mistyped? %s", ErrBadDSN, strconv.Quote(Redact(s)), acceptedForms)
	}
	return DSN{Engine: SQLite, Path: p}, nil
}

// schemes are the schemes ParseDSN knows.
var schemes = []string{"postgres", "postgresql", "mysql", "mariadb", "sqlite", "sqlite3", "file"}

var (
	// goSQLDriverForm matches go-sql-driver/mysql's [user[:pass]@]net(addr)/db.
	goSQLDriverForm = regexp.MustCompile(`^[^/()]*@[a-z0-9]*\([^)]*\)/`)
	// libpqForm matches a libpq key=value connection string.
	libpqForm = regexp.MustCompile(`(?i)(^|\s)(host|hostaddr|port|dbname|user|password|sslmode|service|connect_timeout)\s*=`)
	// credentialsForm matches user:pass@host with no scheme.
	credentialsForm = regexp.MustCompile(`^[^/:@]+:[^/@]*@`)
	// schemeForm matches a URL scheme.
	schemeForm = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]+):`)
)

// foreignForm names the form of s if it is another driver's, or a typo of
// ours, and "" otherwise.
func foreignForm(s string) string {
	switch {
	case goSQLDriverForm.MatchString(s):
		return "a go-sql-driver/mysql DSN (user:pass@tcp(host:port)/db)"
	case libpqForm.MatchString(s):
		return "a libpq key=value string (host=… user=… password=…)"
	}
	if m := schemeForm.FindStringSubmatch(s); m != nil {
		scheme := strings.ToLower(m[1])
		if slices.Contains(schemes, scheme) {
			return ""
		}
		for _, known := range schemes {
			if suggest.Distance(scheme, known) <= 2 {
				return fmt.Sprintf("a misspelt scheme (%q; did you mean %q?)", scheme, known)
			}
		}
	}
	if credentialsForm.MatchString(s) {
		return "credentials without a scheme (user:pass@host…)"
	}
	return ""
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
		return redact.Value(d.URL)
	}
	return "sqlite:" + d.Path
}

// Redact masks the secrets of a DSN string, for logs and errors: its
// password, secret query parameters, password=… pairs (libpq's key=value
// strings); a URL that does not parse as its parts say (a password with
// an unescaped @, /, ?, #) is shown as its scheme only. The rules are
// internal/redact's, the one place every output masks secrets through.
func Redact(s string) string { return redact.URL(s) }

// RedactText masks every secret in a free text, such as an error
// message that quotes a command line argument (internal/redact.Text). A
// last line of defence for messages about input that did not parse,
// whose shape is unknown.
func RedactText(s string) string { return redact.Text(s) }
