package main

// This file owns the row counts of the four task tables, read before and
// after the pass with plain SQL on a connection of its own: what the pass
// removed, independently of what the scavenger says it did.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// taskTables are the four task tables, v1 then v2 (fairness).
var taskTables = []string{"task_queues", "tasks", "task_queues_v2", "tasks_v2"}

// rowCounts holds each table's row count; a table that does not exist
// (a database older than the v2 tables) is null.
type rowCounts struct {
	TaskQueues   *int64 `json:"task_queues"`
	Tasks        *int64 `json:"tasks"`
	TaskQueuesV2 *int64 `json:"task_queues_v2"`
	TasksV2      *int64 `json:"tasks_v2"`
}

func (r *rowCounts) field(table string) **int64 {
	switch table {
	case "task_queues":
		return &r.TaskQueues
	case "tasks":
		return &r.Tasks
	case "task_queues_v2":
		return &r.TaskQueuesV2
	}
	return &r.TasksV2
}

// openCounter opens a database/sql pool of one connection on the database
// of d, read-only where the driver allows it.
func openCounter(d sqlstore.DSN) (*sql.DB, error) {
	var (
		db  *sql.DB
		err error
	)
	switch d.Engine {
	case sqlstore.SQLite:
		db, err = sql.Open("sqlite", "file:"+d.Path+"?mode=ro")
	case sqlstore.Postgres:
		u := *d.URL
		u.Scheme = "postgres"
		db, err = sql.Open("pgx", u.String())
	case sqlstore.MySQL:
		// The URL's parameters are go-sql-driver's (tls=…) or session
		// variables, as in its own DSN form, which parses them.
		cfg := mysql.NewConfig()
		cfg.User = d.URL.User.Username()
		cfg.Passwd, _ = d.URL.User.Password()
		cfg.Net, cfg.Addr = "tcp", d.URL.Host
		if d.URL.Port() == "" {
			cfg.Addr += ":3306"
		}
		cfg.DBName = strings.TrimPrefix(d.URL.Path, "/")
		dsn := cfg.FormatDSN()
		if q := d.URL.RawQuery; q != "" {
			dsn += "?" + q
		}
		var c *mysql.Config
		if c, err = mysql.ParseDSN(dsn); err == nil {
			var conn driver.Connector
			if conn, err = mysql.NewConnector(c); err == nil {
				db = sql.OpenDB(conn)
			}
		}
	default:
		return nil, fmt.Errorf("unknown engine %q", d.Engine)
	}
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// countRows counts the rows of each task table that exists.
func countRows(ctx context.Context, db *sql.DB) (rowCounts, error) {
	var r rowCounts
	for _, t := range taskTables {
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t).Scan(&n); err != nil {
			if missingTable(err) {
				continue
			}
			return r, fmt.Errorf("count rows of %s: %w", t, err)
		}
		*r.field(t) = &n
	}
	return r, nil
}

// missingTable reports whether err says the table does not exist, in
// each engine's words.
func missingTable(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "no such table") || // SQLite
		strings.Contains(s, "does not exist") || // PostgreSQL (42P01)
		strings.Contains(s, "doesn't exist") // MySQL (1146)
}
