// This file owns what is SQLite's: the dialect, the connection settings
// and error classification.

package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/tqscavenger/tqscavenger/store"
)

// SQLite: pure Go (modernc.org/sqlite), no DELETE … LIMIT, one writer.
var sqliteDialect = &dialect{
	engine:     SQLite,
	maxSets:    500,
	listTables: "SELECT name FROM sqlite_master WHERE type = 'table'",
	// Temporal declares SQLite's tables as MySQL's.
	ddlTypes:  [3]string{"INT UNSIGNED", "VARBINARY(272)", "MEDIUMBLOB"},
	immediate: true,
	rowValues: true,
	prepare:   true,
	// Find the limit-th key, then delete a plain key range up to it: a range
	// delete is 1.2–1.9× faster than task_id IN (SELECT … LIMIT n).
	deleteLimited: func(b *builder, t store.Table, q store.QueueKey, r store.TaskRange, limit int) deleteForm {
		b.w("SELECT ", orderBy(t), " FROM ", taskTable(t), " WHERE ").whereQueue(q).w(" AND ").taskRange(t, r).
			w(" ORDER BY ", orderBy(t), " LIMIT 1 OFFSET ").p(limit - 1)
		return deleteForm{probe: b.String(), probeArg: b.args}
	},
	classify: classifySQLite,
	lost:     sqliteLost,
}

// newSQLiteConnector is Connector for a SQLite DSN.
func newSQLiteConnector(d DSN, opts Options) (driver.Connector, error) {
	_, statErr := os.Stat(d.Path)
	created := false
	switch {
	case statErr == nil:
	case errors.Is(statErr, os.ErrNotExist) && opts.Create:
		created = true
	case errors.Is(statErr, os.ErrNotExist):
		// It wraps os.ErrNotExist too, for a command that offers to create
		// the database.
		return nil, mark(fmt.Errorf("%w: SQLite file %s does not exist", unavailable(true), d.Path), os.ErrNotExist)
	default:
		// A name too long, a path through a file, no permission: the
		// path is wrong, and retrying will not help.
		return nil, fmt.Errorf("%w: SQLite file %s: %v", unavailable(true), d.Path, statErr)
	}
	if statErr == nil {
		if fi, _ := os.Stat(d.Path); fi != nil && !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: %s is not a usable SQLite database: not a regular file", unavailable(true), d.Path)
		}
	}
	// The store begins its own transactions (see beginImmediate); the
	// driver's _txlock is for the pools of callers.
	c, err := sqlite.NewConnector("file:" + (&url.URL{Path: d.Path}).EscapedPath() + "?_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %v", ErrUnavailable, d.Path, err)
	}
	// Only a file we create gets WAL: switching an existing file's journal
	// mode would change a Temporal dev server's database.
	return &sqliteConnector{Connector: c, busy: opts.BusyTimeout, wal: created}, nil
}

// sqliteConnector sets up every connection of the connector it wraps as a
// store needs it. The settings are per connection, and the pool replaces
// a connection after an interrupted statement: a setting made once, on
// the first connection, would be lost with it.
type sqliteConnector struct {
	driver.Connector
	busy time.Duration
	// wal puts the database in WAL mode (a file Connector creates).
	wal bool
}

func (c *sqliteConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.setup(ctx, conn); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func (c *sqliteConnector) setup(ctx context.Context, conn driver.Conn) error {
	ex, ok := conn.(driver.ExecerContext)
	qu, ok2 := conn.(driver.QueryerContext)
	if !ok || !ok2 {
		return fmt.Errorf("driver connection %T cannot execute statements", conn)
	}
	pragmas := []string{fmt.Sprintf("PRAGMA busy_timeout = %d", c.busy.Milliseconds())}
	if c.wal {
		pragmas = append(pragmas, "PRAGMA journal_mode = WAL")
	}
	for _, p := range pragmas {
		if _, err := ex.ExecContext(ctx, p, nil); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	rows, err := qu.QueryContext(ctx, "PRAGMA journal_mode", nil)
	if err != nil {
		return err
	}
	v := make([]driver.Value, 1)
	err = rows.Next(v)
	rows.Close()
	if err != nil {
		return fmt.Errorf("PRAGMA journal_mode: %w", err)
	}
	var mode string
	switch m := v[0].(type) {
	case string:
		mode = m
	case []byte:
		mode = string(m)
	}
	if mode == "wal" {
		// NORMAL is durable across application crashes in WAL mode and
		// 15–60 % faster for batched deletes.
		if _, err := ex.ExecContext(ctx, "PRAGMA synchronous = NORMAL", nil); err != nil {
			return fmt.Errorf("PRAGMA synchronous = NORMAL: %w", err)
		}
	}
	return nil
}

// learnSQLite learns the store's file from its connection.
func (s *DB) learnSQLite(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, "PRAGMA database_list")
	if err != nil {
		return s.wrap(ctx, "list the databases", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			seq        int
			name, file string
		)
		if err := rows.Scan(&seq, &name, &file); err != nil {
			return s.wrap(ctx, "list the databases", err)
		}
		if name == "main" {
			s.dsn.Path = file
		}
	}
	return s.wrap(ctx, "list the databases", rows.Err())
}

// learnJournal turns on group commit, where Options.WriteTxBudget asks
// for it, if the file is in a rollback journal: the store never changes a
// user's journal mode, so there each commit costs its fsyncs (see
// groupCommit).
func (s *DB) learnJournal(ctx context.Context, conn *sql.Conn) error {
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return s.wrap(ctx, "read the journal mode", err)
	}
	if !strings.EqualFold(mode, "wal") && s.opts.WriteTxBudget > 0 {
		s.group = newGroupCommit(s.db, s.opts.WriteTxBudget, s.opts.BusyTimeout, &s.statements)
	}
	return nil
}

func classifySQLite(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR:
			return mark(err, store.ErrTransient)
		case sqlite3.SQLITE_CONSTRAINT:
			return mark(err, store.ErrConditionFailed)
		case sqlite3.SQLITE_READONLY:
			// A file or directory without write permission, a read-only
			// mount, or a file opened read-only.
			return mark(err, store.ErrReadOnly)
		case sqlite3.SQLITE_FULL:
			// The disk, or the file's max_page_count, is full.
			return mark(err, store.ErrDiskFull)
		}
	}
	return classifyCommon(err)
}

// sqliteBusy reports whether err, a failure to open a SQLite file, may
// pass on a retry: a lock held by another process, an I/O error, a file
// made read-only for now. Anything else (not a database, a path that
// cannot be a file) is bad input.
func sqliteBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN:
			return true
		}
		return false
	}
	return true // not SQLite's own: keep it unavailable
}

// sqliteLost reports nothing lost: SQLite runs in the process, so a
// failed statement is one SQLite rolled back.
func sqliteLost(error) bool { return false }
