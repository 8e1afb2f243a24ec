package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// server makes, copies and drops the databases of one engine. Names are
// plain identifiers (tqs_bench_…), made by the runner.
type server interface {
	engine() sqlstore.Engine
	// create makes an empty database with Temporal's task tables and
	// returns its DSN.
	create(ctx context.Context, name string) (string, error)
	// settle runs after seeding: whatever a real server would have done
	// by now (statistics), so that the passes do not pay for it.
	settle(ctx context.Context, name string) error
	// copy makes database to an identical copy of from, which nothing
	// else may be connected to, and returns its DSN.
	copy(ctx context.Context, from, to string) (string, error)
	// quiesce waits, within a bound, for the server to finish in the
	// background what earlier rounds left it (dirty pages, purge), so a
	// round's figures are not the last round's, and says what it waited
	// for.
	quiesce(ctx context.Context, name string) (string, error)
	drop(ctx context.Context, name string) error
	close() error
}

func newServer(ctx context.Context, e sqlstore.Engine, o Options) (server, error) {
	switch e {
	case sqlstore.SQLite:
		return &sqliteServer{dir: o.Dir}, nil
	case sqlstore.Postgres:
		return openSQLServer(ctx, e, o.Postgres)
	case sqlstore.MySQL:
		return openSQLServer(ctx, e, o.MySQL)
	}
	return nil, fmt.Errorf("unknown engine %q", e)
}

// sqliteServer keeps databases as files in a directory.
type sqliteServer struct{ dir string }

func (s *sqliteServer) engine() sqlstore.Engine { return sqlstore.SQLite }
func (s *sqliteServer) close() error            { return nil }
func (s *sqliteServer) path(name string) string { return filepath.Join(s.dir, name+".db") }
func (s *sqliteServer) dsn(name string) string  { return "sqlite:" + s.path(name) }

func (s *sqliteServer) create(ctx context.Context, name string) (string, error) {
	if err := s.drop(ctx, name); err != nil {
		return "", err
	}
	return s.dsn(name), setup(ctx, s.dsn(name))
}

// settle checkpoints the WAL into the main file. SQLite gets no ANALYZE:
// Temporal never runs one on its SQLite files.
func (s *sqliteServer) settle(ctx context.Context, name string) error {
	db, _, err := openSQL(ctx, s.dsn(name), sqlstore.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// quiesce has nothing to wait for: a copy is synced as it is made, and a
// pass's writes are its own commits.
func (s *sqliteServer) quiesce(context.Context, string) (string, error) { return "", nil }

// copy copies the file, and its WAL if one is left, and syncs them, so
// that writing the copy back does not fall into the measured pass.
func (s *sqliteServer) copy(ctx context.Context, from, to string) (string, error) {
	if err := s.drop(ctx, to); err != nil {
		return "", err
	}
	for _, suffix := range []string{"", "-wal"} {
		err := copyFile(s.path(from)+suffix, s.path(to)+suffix)
		if err != nil && !(suffix != "" && errors.Is(err, os.ErrNotExist)) {
			return "", fmt.Errorf("copy %s: %w", from, err)
		}
	}
	return s.dsn(to), nil
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

func (s *sqliteServer) drop(_ context.Context, name string) error {
	var errs []error
	for _, suffix := range []string{"", "-wal", "-shm", ".tqscavenger.lock"} {
		if err := os.Remove(s.path(name) + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sqlServer is a PostgreSQL or MySQL server reached through an admin
// connection to the database of the DSN it was given.
type sqlServer struct {
	e     sqlstore.Engine
	base  *url.URL
	admin *sql.DB
}

func openSQLServer(ctx context.Context, e sqlstore.Engine, dsn string) (*sqlServer, error) {
	d, err := sqlstore.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if d.Engine != e {
		return nil, fmt.Errorf("%s is a %s DSN, not %s", d, d.Engine, e)
	}
	admin, err := openSQLDSN(ctx, d, sqlstore.Options{MaxConns: 2})
	if err != nil {
		return nil, err
	}
	return &sqlServer{e: e, base: d.URL, admin: admin}, nil
}

func (s *sqlServer) engine() sqlstore.Engine { return s.e }
func (s *sqlServer) close() error            { return s.admin.Close() }

// dsn is the server's DSN with the database name replaced.
func (s *sqlServer) dsn(name string) string {
	u := *s.base
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

func (s *sqlServer) quote(name string) string {
	if s.e == sqlstore.Postgres {
		return `"` + name + `"`
	}
	return "`" + name + "`"
}

func (s *sqlServer) exec(ctx context.Context, q string) error {
	if _, err := s.admin.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("%s: %w", q, err)
	}
	return nil
}

func (s *sqlServer) create(ctx context.Context, name string) (string, error) {
	if err := s.drop(ctx, name); err != nil {
		return "", err
	}
	if err := s.exec(ctx, "CREATE DATABASE "+s.quote(name)); err != nil {
		return "", err
	}
	return s.dsn(name), setup(ctx, s.dsn(name))
}

// settle collects the statistics a production server's autovacuum or
// InnoDB would have by the time a scavenger runs. On PostgreSQL it also
// vacuums (for index-only scans) and checkpoints, so that no pass pays
// for writing the seeded pages.
func (s *sqlServer) settle(ctx context.Context, name string) error {
	db, _, err := openSQL(ctx, s.dsn(name), sqlstore.Options{MaxConns: 1})
	if err != nil {
		return err
	}
	defer db.Close()
	var stmts []string
	if s.e == sqlstore.Postgres {
		stmts = []string{"VACUUM (ANALYZE) task_queues", "VACUUM (ANALYZE) tasks", "CHECKPOINT"}
	} else {
		stmts = []string{"ANALYZE TABLE task_queues, tasks"}
	}
	for _, q := range stmts {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		rows.Close()
	}
	return nil
}

// quiesceFor bounds how long quiesce waits for InnoDB's purge.
const quiesceFor = 20 * time.Second

// quiesce, on PostgreSQL, checkpoints: the last round's deletes and the
// dropped copy are written out now, not by the checkpointer in the middle
// of the next round. On MySQL, where a checkpoint cannot be asked for, it
// flushes the copy's tables (FLUSH TABLES … FOR EXPORT writes their dirty
// pages out; InnoDB's own flushing, at innodb_io_capacity and only while
// the server is idle, left a third of the buffer pool dirty after a
// minute), then waits up to quiesceFor for purge (history list at most
// 1,000).
func (s *sqlServer) quiesce(ctx context.Context, name string) (string, error) {
	start := time.Now()
	if s.e == sqlstore.Postgres {
		if err := s.exec(ctx, "CHECKPOINT"); err != nil {
			return "", fmt.Errorf("checkpoint: %w", err)
		}
		return fmt.Sprintf("checkpoint %s", time.Since(start).Round(time.Millisecond)), nil
	}
	if err := s.flushForExport(ctx, name); err != nil {
		return "", err
	}
	flushed := time.Since(start).Round(100 * time.Millisecond)
	for {
		var (
			k       string
			history int64
		)
		err := s.admin.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_history_list_length'").Scan(&k, &history)
		if err != nil {
			return "", fmt.Errorf("innodb history list: %w", err)
		}
		waited := time.Since(start).Round(100 * time.Millisecond)
		if history <= 1000 || waited >= quiesceFor {
			state := "purged"
			if history > 1000 {
				state = "NOT purged"
			}
			return fmt.Sprintf("tables flushed in %s, %s after %s (history list %d)", flushed, state, waited, history), nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// flushForExport writes the dirty pages of database name's task tables
// out: FLUSH TABLES … FOR EXPORT holds them read-locked until UNLOCK
// TABLES, in the same session.
func (s *sqlServer) flushForExport(ctx context.Context, name string) error {
	conn, err := s.admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var ts []string
	for _, t := range []string{"task_queues", "tasks", "task_queues_v2", "tasks_v2"} {
		ts = append(ts, s.quote(name)+"."+t)
	}
	q := "FLUSH TABLES " + strings.Join(ts, ", ") + " FOR EXPORT"
	if _, err := conn.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("%s: %w", q, err)
	}
	if _, err := conn.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		return fmt.Errorf("unlock tables: %w", err)
	}
	return nil
}

func (s *sqlServer) copy(ctx context.Context, from, to string) (string, error) {
	if err := s.drop(ctx, to); err != nil {
		return "", err
	}
	if s.e == sqlstore.Postgres {
		return s.dsn(to), s.copyPostgres(ctx, from, to)
	}
	return s.dsn(to), s.copyMySQL(ctx, from, to)
}

// copyPostgres clones the database with CREATE DATABASE … TEMPLATE, a
// file copy. It needs every session on the template gone, and a closed
// session's backend may linger for a moment: retry briefly.
func (s *sqlServer) copyPostgres(ctx context.Context, from, to string) error {
	// FILE_COPY (PostgreSQL 15+) copies files after a checkpoint instead
	// of writing the whole database to the WAL.
	q := "CREATE DATABASE " + s.quote(to) + " TEMPLATE " + s.quote(from)
	strategy := " STRATEGY = FILE_COPY"
	for attempt := 0; ; attempt++ {
		err := s.exec(ctx, q+strategy)
		switch {
		case err == nil:
			return nil
		case strategy != "" && strings.Contains(err.Error(), "strategy"):
			strategy = "" // before PostgreSQL 15
			continue
		case attempt < 50 && strings.Contains(err.Error(), "being accessed by other users"):
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		return err
	}
}

// copyMySQL copies table by table: MySQL has no database copy.
func (s *sqlServer) copyMySQL(ctx context.Context, from, to string) error {
	if err := s.exec(ctx, "CREATE DATABASE "+s.quote(to)); err != nil {
		return err
	}
	for _, t := range []string{"task_queues", "tasks", "task_queues_v2", "tasks_v2"} {
		dst, src := s.quote(to)+"."+t, s.quote(from)+"."+t
		if err := s.exec(ctx, "CREATE TABLE "+dst+" LIKE "+src); err != nil {
			return err
		}
		if err := s.exec(ctx, "INSERT INTO "+dst+" SELECT * FROM "+src); err != nil {
			return err
		}
	}
	return s.exec(ctx, "ANALYZE TABLE "+s.quote(to)+".task_queues, "+s.quote(to)+".tasks")
}

func (s *sqlServer) drop(ctx context.Context, name string) error {
	q := "DROP DATABASE IF EXISTS " + s.quote(name)
	if s.e == sqlstore.Postgres {
		q += " WITH (FORCE)" // a pass killed mid-way may leave a session
	}
	return s.exec(ctx, q)
}

// setup creates Temporal's task tables in the database of dsn.
func setup(ctx context.Context, dsn string) error {
	db, err := sqlstore.Open(ctx, dsn, sqlstore.Options{Create: true})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Setup(ctx)
}
