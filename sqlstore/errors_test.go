package sqlstore_test

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// kinds is what a store's error says about a failed statement.
type kinds struct {
	transient, unknown, readOnly, diskFull, timeout bool
}

func kindsOf(err error) kinds {
	return kinds{
		transient: errors.Is(err, store.ErrTransient),
		unknown:   errors.Is(err, store.ErrUnknownOutcome),
		readOnly:  errors.Is(err, store.ErrReadOnly),
		diskFull:  errors.Is(err, store.ErrDiskFull),
		timeout:   errors.Is(err, store.ErrStatementTimeout),
	}
}

var (
	transient = kinds{transient: true}
	unknown   = kinds{transient: true, unknown: true}
	readOnly  = kinds{readOnly: true}
	diskFull  = kinds{diskFull: true}
	timedOut  = kinds{transient: true, timeout: true}
)

// TestErrorClassesMadeUp classifies driver errors that a test server
// cannot be made to return (a full disk on PostgreSQL, a MySQL server
// gone), and errors of the network, as the drivers return them.
func TestErrorClassesMadeUp(t *testing.T) {
	pg := func(code, severity string) error {
		return &pgconn.PgError{Code: code, Severity: severity, SeverityUnlocalized: severity, Message: "made up"}
	}
	my := func(n uint16) error { return &mysql.MySQLError{Number: n, Message: "made up"} }
	for _, c := range []struct {
		engine sqlstore.Engine
		name   string
		err    error
		write  bool
		want   kinds
	}{
		{sqlstore.Postgres, "disk full (53100)", pg("53100", "ERROR"), true, diskFull},
		{sqlstore.Postgres, "out of memory (53200)", pg("53200", "ERROR"), true, transient},
		{sqlstore.Postgres, "too many connections (53300)", pg("53300", "FATAL"), false, transient},
		{sqlstore.Postgres, "read-only transaction (25006)", pg("25006", "ERROR"), true, readOnly},
		{sqlstore.Postgres, "serialization failure (40001)", pg("40001", "ERROR"), true, transient},
		{sqlstore.Postgres, "deadlock (40P01)", pg("40P01", "ERROR"), true, transient},
		{sqlstore.Postgres, "lock not available (55P03)", pg("55P03", "ERROR"), true, transient},
		{sqlstore.Postgres, "terminated by an administrator (57P01), a read", pg("57P01", "FATAL"), false, transient},
		{sqlstore.Postgres, "terminated by an administrator (57P01), a write", pg("57P01", "FATAL"), true, unknown},
		{sqlstore.Postgres, "a syntax error", pg("42601", "ERROR"), true, kinds{}},
		{sqlstore.Postgres, "connection not sent (bad conn)", driver.ErrBadConn, true, transient},
		{sqlstore.Postgres, "EOF after sending a write", fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF), true, unknown},
		{sqlstore.Postgres, "EOF after sending a read", fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF), false, transient},
		{sqlstore.MySQL, "read-only server (1290)", my(1290), true, readOnly},
		{sqlstore.MySQL, "read-only mode (1836)", my(1836), true, readOnly},
		{sqlstore.MySQL, "read-only transaction (1792)", my(1792), true, readOnly},
		{sqlstore.MySQL, "disk full (1021)", my(1021), true, diskFull},
		{sqlstore.MySQL, "table full (1114)", my(1114), true, diskFull},
		{sqlstore.MySQL, "lock wait timeout (1205)", my(1205), true, transient},
		{sqlstore.MySQL, "deadlock (1213)", my(1213), true, transient},
		{sqlstore.MySQL, "connection killed (1927), a write", my(1927), true, unknown},
		{sqlstore.MySQL, "connection killed (1927), a read", my(1927), false, transient},
		{sqlstore.MySQL, "server shutdown (1053), a write", my(1053), true, unknown},
		{sqlstore.MySQL, "server gone (2006), a write", my(2006), true, unknown},
		{sqlstore.MySQL, "lost connection (2013), a write", my(2013), true, unknown},
		{sqlstore.MySQL, "invalid connection, a write", mysql.ErrInvalidConn, true, unknown},
		{sqlstore.MySQL, "invalid connection, a read", mysql.ErrInvalidConn, false, transient},
		{sqlstore.MySQL, "bad connection: not sent", driver.ErrBadConn, true, transient},
		{sqlstore.MySQL, "a syntax error (1064)", my(1064), true, kinds{}},
		{sqlstore.MySQL, "delete denied (1142)", my(1142), true, readOnly},
		{sqlstore.MySQL, "select denied (1142), a read", my(1142), false, kinds{}},
		{sqlstore.Postgres, "delete denied (42501)", pg("42501", "ERROR"), true, readOnly},
		{sqlstore.Postgres, "select denied (42501), a read", pg("42501", "ERROR"), false, kinds{}},
	} {
		t.Run(string(c.engine)+"/"+c.name, func(t *testing.T) {
			err := sqlstore.Wrap(c.engine, c.err, c.write)
			if got := kindsOf(err); got != c.want {
				t.Errorf("%v: %+v, want %+v", err, got, c.want)
			}
			if !errors.Is(err, c.err) {
				t.Errorf("%v does not wrap the driver's error", err)
			}
		})
	}
}

// failure is a way a real server fails a write: prepare makes the
// database fail so and returns the store to write with; write is the
// write (default: a fenced queue delete of q).
type failure struct {
	engine  sqlstore.Engine
	name    string
	prepare func(t *testing.T, db *sqlstore.DB) *sqlstore.DB
	// during, if set, runs while the write waits (it waits for a row lock
	// held by holdQueue), and breaks its connection.
	during func(t *testing.T, db *sqlstore.DB, holder int64)
	write  func(st *sqlstore.DB) error
	want   kinds
}

var errQueue = qk(7, "the queue")

// TestErrorClasses makes each engine fail a write in the ways databases
// fail, and checks what the store's error says: whether to retry, why
// not, and whether the write may have happened.
func TestErrorClasses(t *testing.T) {
	withParams := func(t *testing.T, db *sqlstore.DB, opts sqlstore.Options, params ...string) *sqlstore.DB {
		u := *db.DSN().URL
		q := u.Query()
		for i := 0; i < len(params); i += 2 {
			q.Set(params[i], params[i+1])
		}
		u.RawQuery = q.Encode()
		st, err := sqlstore.Open(ctx, u.String(), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	sqliteStore := func(t *testing.T, db *sqlstore.DB, query string, opts sqlstore.Options) *sqlstore.DB {
		c, err := sqlite.NewConnector("file:" + (&url.URL{Path: db.DSN().Path}).EscapedPath() + query)
		if err != nil {
			t.Fatal(err)
		}
		st, err := sqlstore.New(ctx, sqlstore.SQLite, c, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	same := func(t *testing.T, db *sqlstore.DB) *sqlstore.DB { return db }
	for _, c := range []failure{
		{engine: sqlstore.SQLite, name: "read-only file", want: readOnly,
			prepare: func(t *testing.T, db *sqlstore.DB) *sqlstore.DB {
				return sqliteStore(t, db, "?mode=ro", sqlstore.Options{})
			}},
		{engine: sqlstore.SQLite, name: "disk full", want: diskFull,
			prepare: func(t *testing.T, db *sqlstore.DB) *sqlstore.DB {
				// The file may not grow: as a full disk does, SQLite says
				// SQLITE_FULL.
				return sqliteStore(t, db, "?_pragma=max_page_count(8)", sqlstore.Options{})
			},
			write: func(st *sqlstore.DB) error {
				return st.CreateQueue(ctx, store.V1, store.QueueRow{QueueKey: qk(1, "big"), RangeID: 1, Data: make([]byte, 1<<20), Encoding: "Proto3"})
			}},
		{engine: sqlstore.SQLite, name: "busy", want: transient,
			prepare: func(t *testing.T, db *sqlstore.DB) *sqlstore.DB {
				st := sqliteStore(t, db, "", sqlstore.Options{BusyTimeout: 50 * time.Millisecond})
				holdQueue(t, db)
				return st
			}},
		{engine: sqlstore.SQLite, name: "statement timeout", want: timedOut,
			prepare: func(t *testing.T, db *sqlstore.DB) *sqlstore.DB {
				st := sqliteStore(t, db, "", sqlstore.Options{BusyTimeout: time.Minute, StatementTimeout: 200 * time.Millisecond})
				holdQueue(t, db)
				return st
			}},

		{engine: sqlstore.Postgres, name: "read-only transactions", want: readOnly,
			prepare: func(t *testing.T, db *sqlstore.DB) *sqlstore.DB {
				return withParams(t, db, sqlstore.Options{}, "default_transaction_read_only", "on")
			}},
		{engine: sqlstore.Postgres, name: "a role granted SELECT only", want: readOnly,
			prepare: func(t *testing.T, db *sqlstore.DB) *sqlstore.DB {
				u := *db.DSN().URL
				schema := u.Query().Get("search_path")
				role := schema + "_reader"
				testdb.Exec(t, db, "CREATE ROLE "+role+" LOGIN")
				t.Cleanup(func() {
					testdb.Exec(t, db, "DROP OWNED BY "+role)
					testdb.Exec(t, db, "DROP ROLE "+role)
				})
				testdb.Exec(t, db, "GRANT USAGE ON SCHEMA "+schema+" TO "+role)
				testdb.Exec(t, db, "GRANT SELECT ON ALL TABLES IN SCHEMA "+schema+" TO "+role)
				u.User = url.User(role)
				return testdb.OpenDSN(t, u.String())
			}},
		{engine: sqlstore.Postgres, name: "lock timeout", want: transient,
			prepare: func(t *testing.T, db *sqlstore.DB) *sqlstore.DB {
				st := withParams(t, db, sqlstore.Options{}, "lock_timeout", "200")
				holdQueue(t, db)
				return st
			}},
		{engine: sqlstore.Postgres, name: "statement timeout", want: timedOut,
			prepare: func(t *testing.T, db *sqlstore.DB) *sqlstore.DB {
				st := withParams(t, db, sqlstore.Options{StatementTimeout: 300 * time.Millisecond})
				holdQueue(t, db)
				return st
			}},
		{engine: sqlstore.Postgres, name: "backend terminated mid-write", want: unknown, prepare: same,
			during: func(t *testing.T, db *sqlstore.DB, holder int64) {
				waitKilled(t, db, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", holder)
			}},

		{engine: sqlstore.MySQL, name: "read-only transactions", want: readOnly,
			prepare: func(t *testing.T, db *sqlstore.DB) *sqlstore.DB {
				return withParams(t, db, sqlstore.Options{}, "tx_read_only", "1")
			}},
		{engine: sqlstore.MySQL, name: "a user granted SELECT only", want: readOnly,
			prepare: func(t *testing.T, db *sqlstore.DB) *sqlstore.DB {
				u, _ := testdb.MySQLUser(t)
				testdb.Exec(t, db, "REVOKE ALL PRIVILEGES, GRANT OPTION FROM '"+u.User.Username()+"'@'%'")
				testdb.Exec(t, db, "GRANT SELECT ON "+db.DSN().Database()+".* TO '"+u.User.Username()+"'@'%'")
				u.Path = db.DSN().URL.Path
				return testdb.OpenDSN(t, u.String())
			}},
		{engine: sqlstore.MySQL, name: "lock wait timeout", want: transient,
			prepare: func(t *testing.T, db *sqlstore.DB) *sqlstore.DB {
				st := withParams(t, db, sqlstore.Options{}, "innodb_lock_wait_timeout", "1")
				holdQueue(t, db)
				return st
			}},
		{engine: sqlstore.MySQL, name: "statement timeout", want: timedOut,
			prepare: func(t *testing.T, db *sqlstore.DB) *sqlstore.DB {
				st := withParams(t, db, sqlstore.Options{StatementTimeout: 300 * time.Millisecond})
				holdQueue(t, db)
				return st
			}},
		{engine: sqlstore.MySQL, name: "connection killed mid-write", want: unknown, prepare: same,
			during: func(t *testing.T, db *sqlstore.DB, _ int64) {
				waitKilled(t, db, "SELECT id FROM information_schema.processlist WHERE db = DATABASE() AND info LIKE 'DELETE%'", nil)
			}},
	} {
		t.Run(string(c.engine)+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, c.engine)
			mustCreate(t, db, store.V1, queueRow(errQueue, 1))
			var holder int64
			if c.during != nil {
				holder = holdQueue(t, db)
			}
			st := c.prepare(t, db)
			errc := make(chan error, 1)
			write := c.write
			if write == nil {
				write = func(st *sqlstore.DB) error { return deleteQueue(ctx, st, store.V1, errQueue, 1) }
			}
			go func() { errc <- write(st) }()
			if c.during != nil {
				c.during(t, db, holder)
			}
			var err error
			select {
			case err = <-errc:
			case <-time.After(30 * time.Second):
				t.Fatal("the write did not fail within 30s")
			}
			if err == nil {
				t.Fatal("the write did not fail")
			}
			if got := kindsOf(err); got != c.want {
				t.Errorf("%v: %+v, want %+v", err, got, c.want)
			}
			t.Logf("%v", err)
		})
	}
}

// holdQueue locks errQueue's row (SQLite: the database) in a transaction
// of a connection of its own until the test ends, and returns the
// connection's server session id (PostgreSQL's backend pid, MySQL's
// connection id; 0 on SQLite).
func holdQueue(t *testing.T, db *sqlstore.DB) int64 {
	t.Helper()
	tx, err := testdb.SQL(t, db).BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	if _, err := tx.ExecContext(ctx, "UPDATE task_queues SET range_id = range_id"); err != nil {
		t.Fatal(err)
	}
	var id int64
	switch db.Engine() {
	case sqlstore.Postgres:
		err = tx.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&id)
	case sqlstore.MySQL:
		err = tx.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id)
	}
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// waitKilled polls a query that ends the sessions it finds (PostgreSQL)
// or lists them (MySQL, which has no function for it: each is KILLed)
// until it has ended one, within 20s.
func waitKilled(t *testing.T, db *sqlstore.DB, query string, arg any) {
	t.Helper()
	pool := testdb.SQL(t, db)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var args []any
		if arg != nil {
			args = append(args, arg)
		}
		rows, err := pool.QueryContext(ctx, query, args...)
		if err != nil {
			t.Fatal(err)
		}
		var found []int64
		for rows.Next() {
			var v sql.NullInt64
			if db.Engine() == sqlstore.Postgres {
				var ok bool
				if err := rows.Scan(&ok); err != nil {
					t.Fatal(err)
				}
				v.Valid = ok
			} else if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			if v.Valid {
				found = append(found, v.Int64)
			}
		}
		rows.Close()
		if db.Engine() == sqlstore.MySQL {
			for _, id := range found {
				if _, err := pool.ExecContext(ctx, fmt.Sprintf("KILL %d", id)); err != nil && !strings.Contains(err.Error(), "Unknown thread") {
					t.Fatal(err)
				}
			}
		}
		if len(found) > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no session waited for the row lock within 20s")
}
