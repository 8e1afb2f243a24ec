package bench

import (
	"context"
	"database/sql"
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
	c, err := sqlstore.Connector(d, opts)
	if err != nil {
		return nil, err
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
