// Package testdb gives each test its own empty task store on a real
// engine: a SQLite file in a temporary directory, a fresh PostgreSQL
// schema, or a fresh MySQL/MariaDB database.
//
// PostgreSQL and MySQL come from the DSNs in TQS_TEST_POSTGRES and
// TQS_TEST_MYSQL. Without them their tests skip with a message naming the
// variable; under CI=true a missing variable or an unreachable server fails
// the test instead, so CI cannot pass by skipping.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// Engines lists every engine, in the order tests run them.
var Engines = []sqlstore.Engine{sqlstore.SQLite, sqlstore.Postgres, sqlstore.MySQL}

// EnvVar names the variable holding the test server DSN of e.
func EnvVar(e sqlstore.Engine) string {
	switch e {
	case sqlstore.Postgres:
		return "TQS_TEST_POSTGRES"
	case sqlstore.MySQL:
		return "TQS_TEST_MYSQL"
	}
	return ""
}

// unavailable skips the test, or fails it under CI=true.
func unavailable(t testing.TB, format string, a ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, a...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: PostgreSQL and MySQL tests must run)", msg)
	}
	t.Skip(msg)
}

// DSN creates an empty store for the test on engine e, with Temporal's four
// task tables, and returns its DSN. It is dropped when the test ends.
func DSN(t testing.TB, e sqlstore.Engine) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := Empty(t, e)
	db, err := sqlstore.Open(ctx, dsn, sqlstore.Options{Create: true})
	if err != nil {
		t.Fatalf("open test store: %v", err)
	}
	defer db.Close()
	if err := db.Setup(ctx); err != nil {
		t.Fatalf("create task tables: %v", err)
	}
	return dsn
}

// Empty creates an empty database for the test on engine e, without any
// tables, and returns its DSN: a SQLite file that does not exist yet (open
// it with Options.Create), a fresh PostgreSQL schema, or a fresh MySQL
// database. It is dropped when the test ends.
func Empty(t testing.TB, e sqlstore.Engine) string {
	t.Helper()
	switch e {
	case sqlstore.SQLite:
		return "sqlite:" + filepath.Join(t.TempDir(), "tasks.db")
	case sqlstore.Postgres, sqlstore.MySQL:
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return fresh(t, ctx, e, Server(t, e))
	}
	t.Fatalf("unknown engine %q", e)
	return ""
}

// Server returns the DSN of the test server of engine e (PostgreSQL or
// MySQL), for tests that need the server itself: a user, a database of
// their own. It skips the test if the variable is unset (fails it under
// CI=true).
func Server(t testing.TB, e sqlstore.Engine) string {
	t.Helper()
	base := os.Getenv(EnvVar(e))
	if base == "" {
		unavailable(t, "%s tests skipped: set %s to a server DSN, e.g. %s", e, EnvVar(e), Example(e))
	}
	return base
}

// Open returns an open store from DSN(t, e), closed when the test ends.
func Open(t testing.TB, e sqlstore.Engine) *sqlstore.DB {
	t.Helper()
	return OpenDSN(t, DSN(t, e))
}

// OpenDSN opens dsn and closes it when the test ends.
func OpenDSN(t testing.TB, dsn string) *sqlstore.DB {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), dsn, sqlstore.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", sqlstore.Redact(dsn), err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Example is a DSN of engine e's test server as this machine's README
// gives it: what to set EnvVar(e) to.
func Example(e sqlstore.Engine) string {
	if e == sqlstore.Postgres {
		return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	return "mysql://root@127.0.0.1:3306/test"
}

func randomName() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "tqs_" + hex.EncodeToString(b)
}

// fresh makes a new PostgreSQL schema or MySQL database on the server of
// base and returns a DSN that uses it.
func fresh(t testing.TB, ctx context.Context, e sqlstore.Engine, base string) string {
	t.Helper()
	admin, err := openSQL(ctx, base)
	if err != nil {
		unavailable(t, "%s unreachable via %s: %v", e, EnvVar(e), err)
	}
	name := randomName()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvVar(e), err)
	}
	q := u.Query()
	var create, drop string
	if e == sqlstore.Postgres {
		create, drop = "CREATE SCHEMA "+name, "DROP SCHEMA "+name+" CASCADE"
		q.Set("search_path", name)
	} else {
		create, drop = "CREATE DATABASE "+name, "DROP DATABASE "+name
		u.Path = "/" + name
	}
	u.RawQuery = q.Encode()
	if _, err := admin.ExecContext(ctx, create); err != nil {
		admin.Close()
		t.Fatalf("%s: %v", create, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, drop); err != nil && !strings.Contains(err.Error(), "doesn't exist") {
			t.Errorf("%s: %v", drop, err)
		}
		admin.Close()
	})
	return u.String()
}

// Exec runs plain SQL on the database of a store (see SQL), for tests
// that corrupt or inspect rows.
func Exec(t testing.TB, db *sqlstore.DB, query string, args ...any) sql.Result {
	t.Helper()
	res, err := SQL(t, db).ExecContext(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return res
}

// handles holds the pools SQL opened, by store, until their tests end.
var handles struct {
	sync.Mutex
	m map[*sqlstore.DB]*sql.DB
}

// SQL returns a database/sql pool on the database of db, for tests that
// corrupt or inspect rows with plain SQL. Its connections are its own,
// with sqlstore.Connector's settings: on SQLite it is a second
// connection to the file, whose writes wait for the store's, and the
// store's for its, as long as the busy timeout allows. db must be a store
// opened from a DSN (sqlstore.Open): its DSN holds the password. The pool
// is closed when the test ends.
func SQL(t testing.TB, db *sqlstore.DB) *sql.DB {
	t.Helper()
	handles.Lock()
	defer handles.Unlock()
	if h, ok := handles.m[db]; ok {
		return h
	}
	c, err := sqlstore.Connector(db.DSN(), sqlstore.Options{})
	if err != nil {
		t.Fatalf("connector for %s: %v", db.DSN(), err)
	}
	h := sql.OpenDB(c)
	if db.Engine() == sqlstore.SQLite {
		h.SetMaxOpenConns(1)
	}
	if handles.m == nil {
		handles.m = map[*sqlstore.DB]*sql.DB{}
	}
	handles.m[db] = h
	t.Cleanup(func() {
		handles.Lock()
		delete(handles.m, db)
		handles.Unlock()
		h.Close()
	})
	return h
}

// openSQL opens a database/sql pool on dsn and checks that it answers.
func openSQL(ctx context.Context, dsn string) (*sql.DB, error) {
	d, err := sqlstore.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	c, err := sqlstore.Connector(d, sqlstore.Options{})
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(c)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", d, err)
	}
	return db, nil
}

// MySQLUser creates a MySQL user with a password and access to every
// database of the test server, dropped when the test ends, and returns the
// server's DSN with that user and password. Tests of a wrong password
// need it: the test server's root has none. (PostgreSQL here trusts local
// connections and accepts any password, so it has no counterpart.)
func MySQLUser(t testing.TB) (dsn *url.URL, password string) {
	t.Helper()
	base := Server(t, sqlstore.MySQL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := openSQL(ctx, base)
	if err != nil {
		unavailable(t, "mysql unreachable via %s: %v", EnvVar(sqlstore.MySQL), err)
	}
	user := randomName()
	password = "pw-" + randomName()
	for _, q := range []string{
		"CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + password + "'",
		"GRANT ALL ON *.* TO '" + user + "'@'%'",
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			admin.Close()
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP USER '"+user+"'@'%'"); err != nil {
			t.Errorf("drop user %s: %v", user, err)
		}
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvVar(sqlstore.MySQL), err)
	}
	u.User = url.UserPassword(user, password)
	return u, password
}
