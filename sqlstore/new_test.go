package sqlstore_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestNew: a store made with New over a caller's connector learns its
// database from its connections, so that its schema check reads the right
// tables and its lock is the one a store made with Open takes.
func TestNew(t *testing.T) {
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			dsn := testdb.DSN(t, e)
			opened := testdb.OpenDSN(t, dsn)
			made := testdb.OpenNew(t, dsn, sqlstore.Options{BusyTimeout: 7 * time.Second})
			if got, want := made.DSN().Database(), opened.DSN().Database(); got != want {
				t.Errorf("New's store is on database %q, want %q", got, want)
			}
			if made.Engine() != e || made.DSN().Engine != e {
				t.Errorf("New's store is a %s store with a %s DSN, want %s", made.Engine(), made.DSN().Engine, e)
			}
			info, err := made.Check(ctx)
			if err != nil || len(info.Tables) != 2 {
				t.Errorf("Check: %v, tables %v", err, info.Tables)
			}
			unlock, err := opened.Lock(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := made.Lock(ctx, false); !errors.Is(err, store.ErrLocked) {
				t.Errorf("Lock while Open's store holds it: %v, want ErrLocked", err)
			}
			if err := unlock.Unlock(); err != nil {
				t.Fatal(err)
			}
			unlock, err = made.Lock(ctx, false)
			if err != nil {
				t.Fatalf("Lock once released: %v", err)
			}
			if err := unlock.Unlock(); err != nil {
				t.Fatal(err)
			}
			if e != sqlstore.SQLite {
				return
			}
			// The settings New adds to a SQLite connector's connections.
			for _, c := range []struct{ pragma, want string }{
				{"busy_timeout", "7000"},
				{"synchronous", "1"}, // NORMAL: testdb's files are in WAL mode
			} {
				var got string
				if err := made.SQL().QueryRowContext(ctx, "PRAGMA "+c.pragma).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != c.want {
					t.Errorf("PRAGMA %s is %s, want %s", c.pragma, got, c.want)
				}
			}
		})
	}
}

// TestNewRefusesPostgres: New refuses a PostgreSQL connector whose
// connections close on an ended context instead of sending a cancel
// request: a statement the store reports as failed would run on.
func TestNewRefusesPostgres(t *testing.T) {
	dsn := testdb.DSN(t, sqlstore.Postgres)
	d, err := sqlstore.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(configure func(*pgx.ConnConfig)) func(t *testing.T) driver.Connector {
		return func(t *testing.T) driver.Connector {
			cfg, err := pgx.ParseConfig(d.URL.String())
			if err != nil {
				t.Fatal(err)
			}
			configure(cfg)
			return stdlib.GetConnector(*cfg)
		}
	}
	pool := func(configure func(*pgx.ConnConfig)) func(t *testing.T) driver.Connector {
		return func(t *testing.T) driver.Connector {
			cfg, err := pgxpool.ParseConfig(d.URL.String())
			if err != nil {
				t.Fatal(err)
			}
			configure(cfg.ConnConfig)
			p, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			return stdlib.GetPoolConnector(p)
		}
	}
	pgxDefault := func(*pgx.ConnConfig) {}
	cancelAfter := func(cancel, deadline time.Duration) func(*pgx.ConnConfig) {
		return func(cfg *pgx.ConnConfig) {
			cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
				return &pgconn.CancelRequestContextWatcherHandler{Conn: c, CancelRequestDelay: cancel, DeadlineDelay: deadline}
			}
		}
	}
	for _, c := range []struct {
		name      string
		connector func(t *testing.T) driver.Connector
		refused   bool
	}{
		{"pgx's default", conn(pgxDefault), true},
		{"a pool with pgx's default", pool(pgxDefault), true},
		{"a cancel request without a deadline delay", conn(cancelAfter(0, 0)), true},
		{"a cancel request sent after the deadline", conn(cancelAfter(time.Second, time.Second)), true},
		{"ConfigurePostgres", conn(sqlstore.ConfigurePostgres), false},
		{"a pool with ConfigurePostgres", pool(sqlstore.ConfigurePostgres), false},
		{"a cancel request of the caller's", conn(cancelAfter(0, time.Second)), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			db, err := sqlstore.New(ctx, sqlstore.Postgres, c.connector(t), sqlstore.Options{})
			if err == nil {
				db.Close()
			}
			if !c.refused {
				if err != nil {
					t.Fatalf("New refused the connector: %v", err)
				}
				return
			}
			if !errors.Is(err, sqlstore.ErrBadConnector) {
				t.Fatalf("New: %v, want an error wrapping ErrBadConnector", err)
			}
			if !strings.Contains(err.Error(), "ConfigurePostgres") {
				t.Errorf("error %q does not say how to configure the connector", err)
			}
			t.Log(err)
		})
	}
}
