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

	"github.com/tqscavenger/tqscavenger/suggest"
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
		return redactURL(d.URL)
	}
	return "sqlite:" + d.Path
}

// secretParam matches the names of query parameters that hold a secret:
// pgx reads password and sslpassword from the query as well as from the
// user info, SQLite drivers take _auth_pass, others pass, pwd, token.
var secretParam = regexp.MustCompile(`(?i)(pass|pwd|secret|token)`)

// redactURL formats u with every password masked.
func redactURL(u *url.URL) string {
	q := u.Query()
	masked := false
	for p := range q {
		if secretParam.MatchString(p) {
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

// secretPairs matches the password=… pairs of a key=value string (libpq's
// form), quoted or not.
var secretPairs = regexp.MustCompile(`(?i)\b([a-z_]*(?:pass|pwd|secret|token)[a-z_]*\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)`)

// Redact masks the password of a DSN string, for logs and errors. Strings
// that do not parse as URLs with a user, such as "mysql:u:pw@h/db" or
// go-sql-driver's "u:pw@tcp(h)/db", are returned with everything between
// the scheme (or the start) and the last "@" masked; password=… pairs,
// as in libpq's key=value strings, are masked wherever they are.
func Redact(s string) string {
	s = secretPairs.ReplaceAllString(s, "${1}xxxxx")
	if u, err := url.Parse(s); err == nil && (u.User != nil || u.Host != "") {
		return redactURL(u)
	}
	j := strings.LastIndexByte(s, '@')
	if j < 0 || !strings.Contains(s[:j], ":") {
		return s // no user:password@ (a file path may hold an @)
	}
	start := strings.Index(s, "://") + 3
	if start < 3 {
		start = strings.IndexByte(s, ':') + 1
		if m := schemeForm.FindStringSubmatch(s); m == nil || !slices.Contains(schemes, strings.ToLower(m[1])) {
			start = 0 // user:pass@… without a scheme of ours: what precedes ':' may be the user, not a scheme
		}
	}
	if start >= 0 && start < j {
		return s[:start] + "xxxxx" + s[j:]
	}
	return s
}

// RedactText masks every password in a free text, such as an error
// message that quotes a command line argument: each word that holds a
// user:password@ (a URL, a mistyped one, go-sql-driver's form) and every
// password=… pair, as Redact masks them. A last line of defence for
// messages about input that did not parse, whose shape is unknown.
func RedactText(s string) string {
	s = secretPairs.ReplaceAllString(s, "${1}xxxxx")
	return wordWithAt.ReplaceAllStringFunc(s, func(w string) string {
		if !hasCredentials(w) || strings.Contains(w, "//user:pass@") {
			return w // the forms' own example, in a hint
		}
		return Redact(w)
	})
}

// wordWithAt matches a word (no white space) that holds an @.
var wordWithAt = regexp.MustCompile(`\S*@\S*`)
