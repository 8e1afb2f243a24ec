package testdb

import (
	"context"
	"database/sql/driver"
	"net"
	"net/url"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// Connector returns a connector to the database of dsn, built as a program
// that owns its connections builds one for sqlstore.New, with each
// driver's defaults and none of sqlstore.Connector's settings:
// modernc.org/sqlite's NewConnector on the file (no busy timeout, deferred
// transactions); a connector on a pgxpool.Pool of its own, configured
// with sqlstore.ConfigurePostgres, which New requires, and closed when
// the test ends; go-sql-driver/mysql's NewConnector without
// InterpolateParams or ClientFoundRows.
func Connector(t testing.TB, dsn string) driver.Connector {
	t.Helper()
	d, err := sqlstore.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	switch d.Engine {
	case sqlstore.SQLite:
		c, err := sqlite.NewConnector("file:" + (&url.URL{Path: d.Path}).EscapedPath())
		if err != nil {
			t.Fatal(err)
		}
		return c
	case sqlstore.Postgres:
		cfg, err := pgxpool.ParseConfig(d.URL.String())
		if err != nil {
			t.Fatal(err)
		}
		sqlstore.ConfigurePostgres(cfg.ConnConfig)
		cfg.MaxConns = 10 // the store's 8, and the test's own
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return stdlib.GetPoolConnector(pool)
	}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", d.URL.Host, d.Database()
	if d.URL.Port() == "" {
		cfg.Addr = net.JoinHostPort(d.URL.Hostname(), "3306")
	}
	cfg.User = d.URL.User.Username()
	cfg.Passwd, _ = d.URL.User.Password()
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// OpenNew returns a store on the database of dsn made with sqlstore.New
// over Connector(t, dsn), closed when the test ends.
func OpenNew(t testing.TB, dsn string, opts sqlstore.Options) *sqlstore.DB {
	t.Helper()
	d, err := sqlstore.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlstore.New(context.Background(), d.Engine, Connector(t, dsn), opts)
	if err != nil {
		t.Fatalf("New on %s: %v", d, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
