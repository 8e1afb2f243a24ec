package sqlstore

import (
	"context"
	"database/sql/driver"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// OpenTraced opens dsn as OpenDSN does (or as New does on a caller's
// connector, with learnDSN), for TestSQLGolden, which records every
// statement the store sends:
//
//   - SQLite and MySQL: wrap is put around the driver's own connector,
//     inside the store's connectors, so that what they run on each new
//     connection (SQLite's pragmas, MySQL's session isolation) passes
//     through it too.
//   - PostgreSQL: New refuses a connection that is not pgx's own, so a
//     wrapper cannot stand there; tracer sees every statement pgx sends
//     instead.
//
// Options.TLS is not supported.
func OpenTraced(ctx context.Context, dsn string, opts Options, learnDSN bool, wrap func(driver.Connector) driver.Connector, tracer pgx.QueryTracer) (*DB, error) {
	d, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if opts.TLS != nil {
		return nil, fmt.Errorf("OpenTraced: TLS is not supported")
	}
	var c driver.Connector
	switch d.Engine {
	case SQLite:
		if c, err = newSQLiteConnector(d, opts.WithDefaults()); err != nil {
			return nil, err
		}
		sc := c.(*sqliteConnector)
		sc.Connector = wrap(sc.Connector)
	case Postgres:
		cfg, err := pgx.ParseConfig(d.URL.String())
		if err != nil {
			return nil, err
		}
		cfg.Tracer = tracer
		ConfigurePostgres(cfg)
		c = stdlib.GetConnector(*cfg)
	case MySQL:
		if c, err = newMySQLConnector(d, opts.WithDefaults()); err != nil {
			return nil, err
		}
		c = wrap(c)
	default:
		return nil, fmt.Errorf("OpenTraced: unknown engine %q", d.Engine)
	}
	if learnDSN {
		return newDB(ctx, d.Engine, c, opts, nil)
	}
	return newDB(ctx, d.Engine, c, opts, &d)
}
