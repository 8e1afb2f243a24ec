package bench

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// openSQL opens a database/sql pool on the database of dsn, with the
// connections a store has (sqlstore.Connector), for the plain SQL of the
// benchmark: seeding, the raw bound, settling, copies and counts. Like a
// store, it keeps one connection on SQLite and at most maxConns (default
// 8) elsewhere, and checks that the database answers.
func openSQL(ctx context.Context, dsn string, opts sqlstore.Options) (*sql.DB, sqlstore.Engine, error) {
	d, err := sqlstore.ParseDSN(dsn)
	if err != nil {
		return nil, "", err
	}
	db, err := openSQLDSN(ctx, d, opts)
	return db, d.Engine, err
}

// openSQLDSN is openSQL for a parsed DSN.
func openSQLDSN(ctx context.Context, d sqlstore.DSN, opts sqlstore.Options) (*sql.DB, error) {
	return openConnector(ctx, d, opts, nil)
}

// openMatchingSQL is openSQL for the live workload, whose sessions are
// matching's: on MySQL they read committed, as Temporal's own sessions do
// (tx_isolation or transaction_isolation in its connect attributes), not
// at the server's default, repeatable read, whose gap locks Temporal's
// statements never take.
func openMatchingSQL(ctx context.Context, dsn string, opts sqlstore.Options) (*sql.DB, sqlstore.Engine, error) {
	d, err := sqlstore.ParseDSN(dsn)
	if err != nil {
		return nil, "", err
	}
	var wrap func(driver.Connector) driver.Connector
	if d.Engine == sqlstore.MySQL {
		wrap = func(c driver.Connector) driver.Connector { return readCommitted{c} }
	}
	db, err := openConnector(ctx, d, opts, wrap)
	return db, d.Engine, err
}

// readCommitted is a MySQL connector whose sessions read committed.
type readCommitted struct{ driver.Connector }

func (c readCommitted) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	e, ok := conn.(driver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("MySQL driver connection %T cannot execute a statement", conn)
	}
	if _, err := e.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", nil); err != nil {
		conn.Close()
		return nil, fmt.Errorf("set the session's isolation: %w", err)
	}
	return conn, nil
}

// openConnector opens a pool on d's connector, wrapped by wrap if not nil.
func openConnector(ctx context.Context, d sqlstore.DSN, opts sqlstore.Options, wrap func(driver.Connector) driver.Connector) (*sql.DB, error) {
	c, err := sqlstore.Connector(d, opts)
	if err != nil {
		return nil, err
	}
	if wrap != nil {
		c = wrap(c)
	}
	db := sql.OpenDB(c)
	switch {
	case d.Engine == sqlstore.SQLite:
		db.SetMaxOpenConns(1)
	case opts.MaxConns > 0:
		db.SetMaxOpenConns(opts.MaxConns)
		db.SetMaxIdleConns(opts.MaxConns)
	default:
		db.SetMaxOpenConns(8)
		db.SetMaxIdleConns(8)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: %s: %v", sqlstore.ErrUnavailable, d, err)
	}
	return db, nil
}
