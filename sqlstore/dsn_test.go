package sqlstore_test

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// secret is the password in every DSN of these tests: no error may show it.
const secret = "sekret-Pw0rd"

func TestParseDSN(t *testing.T) {
	for _, c := range []struct {
		dsn    string
		engine sqlstore.Engine
		db     string // Database(): name or SQLite path
		str    string // String()
	}{
		{"postgres://u:" + secret + "@db.example:5432/temporal?sslmode=disable", sqlstore.Postgres, "temporal", "postgres://u:xxxxx@db.example:5432/temporal?sslmode=disable"},
		{"postgresql://u@db.example/temporal", sqlstore.Postgres, "temporal", "postgresql://u@db.example/temporal"},
		{"POSTGRES://u:" + secret + "@h/t", sqlstore.Postgres, "t", "postgres://u:xxxxx@h/t"},
		{"mysql://u:" + secret + "@db.example:3306/temporal?tls=true", sqlstore.MySQL, "temporal", "mysql://u:xxxxx@db.example:3306/temporal?tls=true"},
		{"mariadb://u@h/temporal", sqlstore.MySQL, "temporal", "mariadb://u@h/temporal"},
		// Passwords in the query, as pgx reads them.
		{"postgres://u@h/t?password=" + secret + "&sslmode=require", sqlstore.Postgres, "t", "postgres://u@h/t?password=xxxxx&sslmode=require"},
		{"postgres://h/t?sslpassword=" + secret, sqlstore.Postgres, "t", "postgres://h/t?sslpassword=xxxxx"},
		{"mysql://u@h/t?password=" + secret, sqlstore.MySQL, "t", "mysql://u@h/t?password=xxxxx"},
		// A password with characters that must be percent-encoded.
		{"mysql://u:" + url.QueryEscape("p@ss/w:rd") + "@h/t", sqlstore.MySQL, "t", "mysql://u:xxxxx@h/t"},
		{"sqlite:/var/lib/temporal.db", sqlstore.SQLite, "/var/lib/temporal.db", "sqlite:/var/lib/temporal.db"},
		{"sqlite:temporal.db", sqlstore.SQLite, "temporal.db", "sqlite:temporal.db"},
		{"sqlite:///var/lib/temporal.db", sqlstore.SQLite, "/var/lib/temporal.db", "sqlite:/var/lib/temporal.db"},
		{"sqlite://data/temporal.db", sqlstore.SQLite, "data/temporal.db", "sqlite:data/temporal.db"},
		{"sqlite3:t.db", sqlstore.SQLite, "t.db", "sqlite:t.db"},
		{"file:t.db", sqlstore.SQLite, "t.db", "sqlite:t.db"},
		{"/var/lib/temporal.db", sqlstore.SQLite, "/var/lib/temporal.db", "sqlite:/var/lib/temporal.db"},
		{"./temporal.db", sqlstore.SQLite, "./temporal.db", "sqlite:./temporal.db"},
		{"temporal.db", sqlstore.SQLite, "temporal.db", "sqlite:temporal.db"},
		{`C:\temporal\dev.db`, sqlstore.SQLite, `C:\temporal\dev.db`, `sqlite:C:\temporal\dev.db`},
		// A colon in a file name is not a scheme.
		{"backup:2026-11-30.db", sqlstore.SQLite, "backup:2026-11-30.db", "sqlite:backup:2026-11-30.db"},
	} {
		t.Run(c.dsn, func(t *testing.T) {
			d, err := sqlstore.ParseDSN(c.dsn)
			if err != nil {
				t.Fatal(err)
			}
			if d.Engine != c.engine || d.Database() != c.db || d.String() != c.str {
				t.Errorf("= %s, %q, %q; want %s, %q, %q", d.Engine, d.Database(), d.String(), c.engine, c.db, c.str)
			}
			if strings.Contains(d.String(), secret) {
				t.Errorf("String() shows the password: %s", d)
			}
		})
	}
}

func TestParseDSNErrors(t *testing.T) {
	for _, c := range []struct {
		dsn  string
		hint string // the error says what to do
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"sqlite:", "use sqlite:PATH"},
		{"sqlite://", "use sqlite:PATH"},
		{"sqlite:t.db?mode=ro&_pragma=x", "give just the file path"},
		{"http://u:" + secret + "@h/db", "use postgres://, mysql://, sqlite:PATH"},
		{"oracle://u:" + secret + "@h/db", "use postgres://, mysql://, sqlite:PATH"},
		{"postgres:///temporal", "use postgres://user:pass@host:port/database"},
		{"postgres://u:" + secret + "@/temporal", "use postgres://user:pass@host:port/database"},
		{"postgres://u:" + secret + "@h", "names no database"},
		{"postgres://u:" + secret + "@h/", "names no database"},
		{"mysql://u:" + secret + "@h:3306", "use mysql://user:pass@host:port/database"},
		{"mysql://u:" + secret + "@h/a/b", "names no database"},
		{"mysql:u:" + secret + "@h/db", "has no host"},
		// Issue 39: a password with an unescaped @, /, ? or #: the cause
		// named, the DSN shown as its scheme only.
		{"postgres://scav:Kq7@" + secret + "/9vLm2@db.internal:5432/temporal", "the password holds an unescaped @: percent-encode it as %40"},
		{"mysql://scav:Kq7@" + secret + "/9vLm2@db.internal:3306/temporal", "the password holds an unescaped @: percent-encode it as %40"},
		{"postgres://scav:123/" + secret + "@db.internal/temporal", "holds an unescaped /, ? or #"},
		{"mysql://scav:1#" + secret + "@db.internal/temporal", "holds an unescaped /, ? or #"},
		{"postgres://scav:" + secret + "/x@db.internal/temporal", "needs percent-encoding"},
		// Not valid percent-encoding: the parser's own message would quote
		// the whole string.
		{"postgres://u:" + secret + "%zz@h/db", "percent-encoding"},
		{"mysql://u:" + secret + "%@h/db", "percent-encoding"},
		// Other drivers' forms, and typos of our schemes, are refused, not
		// taken for a SQLite file named after the credentials.
		{"u:" + secret + "@tcp(db:3306)/temporal", "go-sql-driver/mysql DSN"},
		{"u:" + secret + "@unix(/run/mysqld.sock)/temporal?parseTime=true", "go-sql-driver/mysql DSN"},
		{"u:" + secret + "@/temporal", "credentials without a scheme"},
		{"host=db user=u password=" + secret + " dbname=temporal", "libpq key=value string"},
		{"host=db user=u password='" + secret + " x' dbname=temporal", "libpq key=value string"},
		{"dbname=temporal password=" + secret, "libpq key=value string"},
		{"postgress://u:" + secret + "@h/db", `did you mean "postgres"`},
		{"postgresq://u:" + secret + "@h/db", `did you mean "postgres`},
		{"mysq://u:" + secret + "@h/db", `did you mean "mysql"`},
		{"myslq://u:" + secret + "@h/db", `did you mean "mysql"`},
		{"sqlit:/tmp/t.db", `did you mean "sqlite"`},
		{"postgress:u:" + secret + "@h/db", `did you mean "postgres"`},
	} {
		t.Run(c.dsn, func(t *testing.T) {
			_, err := sqlstore.ParseDSN(c.dsn)
			if !errors.Is(err, sqlstore.ErrBadDSN) {
				t.Fatalf("error %v, want ErrBadDSN", err)
			}
			if !strings.Contains(err.Error(), c.hint) {
				t.Errorf("error %q does not say %q", err, c.hint)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error shows the password: %q", err)
			}
			if foreign := strings.ContainsAny(c.hint, `"`) || strings.Contains(c.hint, "DSN") || strings.Contains(c.hint, "string") || strings.Contains(c.hint, "credentials"); foreign && !strings.Contains(err.Error(), "use postgres://, mysql://, sqlite:PATH") {
				t.Errorf("error %q does not show the accepted forms", err)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://u:" + secret + "@h/db", "postgres://u:xxxxx@h/db"},
		{"mysql://u:" + secret + "@h:3306/db?tls=true", "mysql://u:xxxxx@h:3306/db?tls=true"},
		{"mysql://u:" + secret + "%zz@h/db", "mysql://xxxxx"}, // does not parse: the scheme only
		// Issue 39: a password holding @ then /, split where the user did
		// not mean it: the scheme only.
		{"postgres://scav:Kq7@" + secret + "/9vLm2@db.internal:5432/temporal", "postgres://xxxxx"},
		{"mysql://scav:Kq7@" + secret + "/9vLm2@db.internal:3306/temporal", "mysql://xxxxx"},
		{"postgres://h/db", "postgres://h/db"},
		{"postgres://h/db?password=" + secret, "postgres://h/db?password=xxxxx"},
		{"postgres://u@h/db?sslmode=disable&password=" + secret, "postgres://u@h/db?password=xxxxx&sslmode=disable"},
		{"sqlite:/tmp/t.db", "sqlite:/tmp/t.db"},
		{"u:" + secret + "@tcp(db:3306)/temporal", "xxxxx@tcp(db:3306)/temporal"},
		{"host=db user=u password=" + secret + " dbname=t", "host=db user=u password=xxxxx dbname=t"},
		{"host=db password='" + secret + " \\' x' dbname=t", "host=db password=xxxxx dbname=t"},
		{"host=db sslpassword=" + secret, "host=db sslpassword=xxxxx"},
		{"postgress://u:" + secret + "@h/db", "postgress://xxxxx@h/db"}, // not a database's: the whole user info
		{"/data/backup@2026.db", "/data/backup@2026.db"},
	} {
		if got := sqlstore.Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestMySQLConfig checks that a mysql:// URL reaches the driver intact:
// credentials with special characters, the default port, the driver's own
// parameters, session variables, and the settings the store relies on.
func TestMySQLConfig(t *testing.T) {
	pw := "p@ss/w:rd(x)?"
	c, err := sqlstore.MySQLConfig("mysql://tqs:" + url.QueryEscape(pw) + "@db.example:3307/temporal?tls=preferred&timeout=7s&sql_mode=%27ANSI%27")
	if err != nil {
		t.Fatal(err)
	}
	if c.User != "tqs" || c.Passwd != pw || c.Net != "tcp" || c.Addr != "db.example:3307" || c.DBName != "temporal" {
		t.Errorf("user %q password %q net %s addr %s db %s", c.User, c.Passwd, c.Net, c.Addr, c.DBName)
	}
	if c.TLS == nil || c.Timeout != 7*time.Second || c.Params["sql_mode"] != "'ANSI'" {
		t.Errorf("tls %v timeout %s params %v: driver parameters lost", c.TLS, c.Timeout, c.Params)
	}
	if !c.InterpolateParams || !c.ClientFoundRows {
		t.Errorf("interpolateParams %v clientFoundRows %v, want both", c.InterpolateParams, c.ClientFoundRows)
	}

	for dsn, addr := range map[string]string{
		"mysql://u@h/db":                         "h:3306",
		"mysql://u@[::1]/db":                     "[::1]:3306",
		"mysql://u@[::1]:3307/db":                "[::1]:3307",
		"mysql://u@h/db?socket=/run/mysqld.sock": "/run/mysqld.sock",
	} {
		c, err := sqlstore.MySQLConfig(dsn)
		if err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		if c.Addr != addr {
			t.Errorf("%s: addr %s, want %s", dsn, c.Addr, addr)
		}
		if _, ok := c.Params["socket"]; ok {
			t.Errorf("%s: socket passed on as a session variable", dsn)
		}
	}

	c, err = sqlstore.MySQLConfig("mysql://u@h/db?password=" + secret)
	if err != nil || c.Passwd != secret || len(c.Params) != 0 {
		t.Errorf("password in the query: password %q, params %v, %v; want the password, no session variable", c.Passwd, c.Params, err)
	}

	_, err = sqlstore.MySQLConfig("mysql://u:" + secret + "@h/db?timeout=banana")
	if !errors.Is(err, sqlstore.ErrBadDSN) || strings.Contains(err.Error(), secret) {
		t.Errorf("bad driver parameter: %v, want ErrBadDSN without the password", err)
	}
}

// TestOpenErrors opens databases that cannot be used. Each error must wrap
// ErrUnavailable (or ErrBadDSN), say what to do, and never show the
// password. PostgreSQL here trusts every local connection, so it accepts
// any password: a wrong password is tested on MySQL only, and on
// PostgreSQL a user that does not exist stands in for it.
func TestOpenErrors(t *testing.T) {
	type tc struct {
		name string
		dsn  func(t *testing.T) string
		want error
		hint string
	}
	withPath := func(t *testing.T, e sqlstore.Engine, user, path string) string {
		u, err := url.Parse(testdb.Server(t, e))
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			u.User = url.UserPassword(user, secret)
		}
		u.Path = path
		return u.String()
	}
	cases := []tc{
		{"sqlite/missing file", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "nope.db") }, sqlstore.ErrUnavailable, "nope.db does not exist"},
		{"sqlite/not a database", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "junk.db")
			if err := os.WriteFile(p, []byte(strings.Repeat("not a database ", 100)), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, sqlstore.ErrUnavailable, "not a usable SQLite database"},
		{"sqlite/directory", func(t *testing.T) string { return "sqlite:" + t.TempDir() }, sqlstore.ErrUnavailable, "not a usable SQLite database"},
		{"postgres/missing database", func(t *testing.T) string {
			return withPath(t, sqlstore.Postgres, "postgres", "/tqs_no_such_database")
		}, sqlstore.ErrUnavailable, "create the database"},
		{"postgres/unknown user", func(t *testing.T) string {
			return withPath(t, sqlstore.Postgres, "tqs_no_such_user", "/test")
		}, sqlstore.ErrUnavailable, "check the user and password"},
		{"postgres/nothing listening", func(t *testing.T) string {
			return "postgres://u:" + secret + "@127.0.0.1:1/db?connect_timeout=5"
		}, sqlstore.ErrUnavailable, "is the server running"},
		{"postgres/unknown host", func(t *testing.T) string {
			return "postgres://u:" + secret + "@tqs-no-such-host.invalid/db?connect_timeout=5"
		}, sqlstore.ErrUnavailable, "is the server running"},
		{"postgres/bad parameter", func(t *testing.T) string {
			return "postgres://u:" + secret + "@h/db?sslmode=sometimes"
		}, sqlstore.ErrBadDSN, ""},
		{"mysql/wrong password", func(t *testing.T) string {
			u, right := testdb.MySQLUser(t)
			// The right password works, or this test proves nothing.
			db, err := sqlstore.Open(ctx, u.String(), sqlstore.Options{})
			if err != nil {
				t.Fatalf("the right password: %v", err)
			}
			db.Close()
			u.User = url.UserPassword(u.User.Username(), secret)
			if strings.Contains(right, secret) {
				t.Fatal("the right password contains the wrong one")
			}
			return u.String()
		}, sqlstore.ErrUnavailable, "check the user and password"},
		{"mysql/missing database", func(t *testing.T) string {
			return withPath(t, sqlstore.MySQL, "", "/tqs_no_such_database")
		}, sqlstore.ErrUnavailable, "create the database"},
		{"postgres/password in the query", func(t *testing.T) string {
			return "postgres://u@127.0.0.1:1/db?connect_timeout=5&password=" + secret
		}, sqlstore.ErrUnavailable, "is the server running"},
		{"mysql/password in the query", func(t *testing.T) string {
			return "mysql://u@127.0.0.1:1/db?timeout=5s&password=" + secret
		}, sqlstore.ErrUnavailable, "is the server running"},
		{"mysql/nothing listening", func(t *testing.T) string {
			return "mysql://u:" + secret + "@127.0.0.1:1/db?timeout=5s"
		}, sqlstore.ErrUnavailable, "is the server running"},
		{"mysql/unknown host", func(t *testing.T) string {
			return "mysql://u:" + secret + "@tqs-no-such-host.invalid/db?timeout=5s"
		}, sqlstore.ErrUnavailable, "is the server running"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dsn := c.dsn(t)
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			db, err := sqlstore.Open(ctx, dsn, sqlstore.Options{})
			if err == nil {
				db.Close()
				t.Fatalf("Open(%s) succeeded", sqlstore.Redact(dsn))
			}
			if !errors.Is(err, c.want) {
				t.Errorf("error %q does not wrap %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.hint) {
				t.Errorf("error %q does not say %q", err, c.hint)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error shows the password: %q", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			t.Log(err)
		})
	}
}

// TestOpenMissingFile: a missing SQLite file is not created without
// Options.Create, and the error says so in a way a command can test for.
func TestOpenMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.db")
	_, err := sqlstore.Open(ctx, path, sqlstore.Options{})
	for _, want := range []error{sqlstore.ErrUnavailable, fs.ErrNotExist} {
		if !errors.Is(err, want) {
			t.Errorf("error %v does not wrap %v", err, want)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open without Create made %s (%v)", path, err)
	}
}

// TestMistypedSchemesMasked is issue 25's finding 3: a DSN whose scheme
// lost its ':' (or gained a ';', or has none) parsed as a SQLite path and
// was echoed whole, password and all; a SQLite DSN with a password
// parameter was quoted in full.
func TestMistypedSchemesMasked(t *testing.T) {
	for _, in := range []string{
		"postgres//u:" + secret + "@h/db",
		"mysql//u:" + secret + "@h:3306/db",
		"//u:" + secret + "@h/db",
		"postgres;//u:" + secret + "@h/db",
		"sqlite://u:" + secret + "@h/x.db",
		"sqlite:u:" + secret + "@h/x.db",
		"/data/u:" + secret + "@h/x.db",
		"sqlite:/tmp/x.db?_auth_pass=" + secret,
		"sqlite:/tmp/x.db?_auth&_auth_user=u&_auth_pass=" + secret,
	} {
		_, err := sqlstore.ParseDSN(in)
		if !errors.Is(err, sqlstore.ErrBadDSN) {
			t.Errorf("ParseDSN(%q) = %v, want ErrBadDSN", in, err)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("ParseDSN(%q): error shows the password: %v", in, err)
		}
	}
	for _, path := range []string{`C:\data\x.db`, "/data/backup@2026.db", "/data/a:b.db"} {
		if d, err := sqlstore.ParseDSN(path); err != nil || d.Path != path {
			t.Errorf("ParseDSN(%q) = %v, %v: a plain path", path, d, err)
		}
	}
}

// TestRedactText masks the passwords of any shape in a message.
func TestRedactText(t *testing.T) {
	for _, in := range []string{
		"open postgres://u:" + secret + "@h/db: no such file or directory",
		"SQLite file postgres//u:" + secret + "@h/db does not exist",
		"Access denied for user 'postgres://u:" + secret + "@h/db'@'127.0.0.1'",
		"invalid argument \"mysql://u:" + secret + "@h/db\" for \"--workers\" flag",
		"unexpected argument \"u:" + secret + "@tcp(h:3306)/db\"",
		"x?_auth_pass=" + secret + "&y=1",
		"host=h password=" + secret,
	} {
		got := sqlstore.RedactText(in)
		if strings.Contains(got, secret) {
			t.Errorf("RedactText(%q) = %q", in, got)
		}
	}
	if got := sqlstore.RedactText("no such file /data/backup@2026.db"); got != "no such file /data/backup@2026.db" {
		t.Errorf("RedactText changed a message without a password: %q", got)
	}
}
