// This file owns a store's life: its options, opening it, closing it.

package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// Options tune how a database is opened. The zero value is what the
// scavenger wants.
type Options struct {
	// Create allows Open and Connector to create a missing SQLite file
	// (seed, demo, schema setup). A file we create is put in WAL mode; an
	// existing file's journal mode is never changed. New ignores it: its
	// connector decides which file it opens.
	Create bool

	// MaxConns caps open connections on PostgreSQL and MySQL. Default 8.
	// SQLite always uses one connection: it has one writer anyway, and
	// one connection makes writes wait in Go instead of on SQLITE_BUSY.
	MaxConns int

	// StatementTimeout bounds each statement; 0 means no bound. A
	// statement that runs out of time fails with an error wrapping
	// store.ErrStatementTimeout, store.ErrTransient and
	// context.DeadlineExceeded.
	//
	// When a statement's context ends (this timeout or the caller's), the
	// server is told to stop it (PostgreSQL: a cancel request; MySQL: KILL
	// QUERY for writes), so that a write reported as failed does not take
	// effect later, say once a row lock it waited for is released. If it
	// finished first, the call reports its result.
	StatementTimeout time.Duration

	// BusyTimeout is how long SQLite waits for a lock held by another
	// process (such as a running Temporal dev server). Default 5s.
	BusyTimeout time.Duration

	// WriteTxBudget, if positive, makes group commit possible on a SQLite file
	// in a rollback journal (not WAL), where each commit costs several
	// fsyncs: the writes of concurrent calls share one write transaction,
	// which takes statements for at most this long (100ms is the bound
	// measured in docs/benchmarks.md). Each call still returns only once
	// its statement has committed. Zero, the default, or negative: every
	// statement commits on its own, as on WAL files and the servers. It is
	// off by default because beside a live Temporal server on such a file
	// it made matching's deferred transactions meet SQLITE_BUSY and its
	// workflows take longer (see groupCommit). It is on from the open;
	// DB.ShareCommits turns it off and on again, and a scavenger pass
	// turns it on only at its full pace (scavenger.PaceFull).
	WriteTxBudget time.Duration

	// ConnectTimeout bounds each new connection to PostgreSQL or MySQL,
	// handshake and login included, so that a server that accepts TCP
	// and never answers fails the open (ErrUnavailable) instead of
	// hanging it. Default DefaultConnectTimeout.
	ConnectTimeout time.Duration

	// TLS, if set, makes every connection to PostgreSQL or MySQL use TLS
	// with these settings (and never fall back to plain text). The DSN
	// must then hold no TLS parameters of its own (PostgreSQL's sslmode,
	// sslrootcert, …; MySQL's tls). SQLite has no TLS. Open and New's
	// errors say, in a *TLSError, when the handshake failed on the
	// certificates.
	TLS *TLS
}

// DefaultConnectTimeout is Options.ConnectTimeout's default.
const DefaultConnectTimeout = 10 * time.Second

// MaxMaxConns caps Options.MaxConns: each connection is a server
// session and a socket.
const MaxMaxConns = 1024

// Validate refuses options out of their ranges: a negative duration, or
// MaxConns negative or over MaxMaxConns. Zero means the default.
func (o Options) Validate() error {
	if o.MaxConns < 0 || o.MaxConns > MaxMaxConns {
		return fmt.Errorf("max conns %d: use 1 to %d (or 0 for the default)", o.MaxConns, MaxMaxConns)
	}
	if o.StatementTimeout < 0 || o.BusyTimeout < 0 || o.WriteTxBudget < 0 || o.ConnectTimeout < 0 {
		return errors.New("statement, busy, connect timeouts and the write transaction budget must not be negative")
	}
	return nil
}

// WithDefaults returns o with its zero fields set to their defaults: the
// options a store runs with, which help texts read too.
func (o Options) WithDefaults() Options {
	if o.MaxConns <= 0 {
		o.MaxConns = 8
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	return o
}

// DB is a task store on a SQL database. It is safe for concurrent use.
type DB struct {
	db   *sql.DB
	d    *dialect
	dsn  DSN
	opts Options

	mu    sync.Mutex
	stmts map[string]*sql.Stmt

	statements atomic.Int64
	// stmtTimeout is Options.StatementTimeout, changed by
	// SetStatementTimeout.
	stmtTimeout atomic.Int64
	// queueRanges counts batches of queue deletes done as one key range
	// (MySQL); afterRangeLock, if set, runs once their rows are locked.
	// Both are for tests.
	queueRanges    atomic.Int64
	afterRangeLock func()

	// closers undo what New set up beyond the sql.DB (MySQL: the pool
	// that kills cancelled statements).
	closers []func() error

	// connector is the connector the store was made on, its connect
	// timeout added, for connections outside its pool (the lock's).
	connector driver.Connector

	// group, on a SQLite file in a rollback journal, shares write
	// transactions among concurrent calls; nil elsewhere.
	group *groupCommit
	// unshared turns group off (ShareCommits(false)).
	unshared atomic.Bool
}

var (
	_ store.Store  = (*DB)(nil)
	_ store.Writer = (*DB)(nil)
)

// Open connects to the database named by dsn and checks that it answers.
// It does not check the schema: see Check.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	d, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return OpenDSN(ctx, d, opts)
}

// OpenDSN is Open for a parsed DSN: New on Connector(d, opts), with d as
// the store's DSN.
func OpenDSN(ctx context.Context, d DSN, opts Options) (*DB, error) {
	c, err := Connector(d, opts)
	if err != nil {
		return nil, err
	}
	return newDB(ctx, d.Engine, c, opts, &d)
}

// Connector returns the connector Open uses for d, with the settings a
// store relies on that a connector can carry: on SQLite, immediate
// transactions, Options.BusyTimeout and synchronous=NORMAL in WAL mode
// on every connection, and Options.Create; on PostgreSQL, cancel requests
// (see ConfigurePostgres); on MySQL, parameters interpolated client side
// and found rather than changed rows reported; on both, Options.TLS.
//
// It is for a program that wants plain SQL on the database beside a
// store: sql.OpenDB(c) gives it a pool of its own. On SQLite, that pool's
// connections are writers besides the store's one: in WAL mode the busy
// timeout makes them take turns, but a long transaction on one makes the
// store's writes wait for it, or fail once the busy timeout passes.
func Connector(d DSN, opts Options) (driver.Connector, error) {
	opts = opts.WithDefaults()
	switch d.Engine {
	case SQLite:
		if opts.TLS != nil {
			return nil, fmt.Errorf("%w: SQLite is a file: it has no TLS", ErrTLS)
		}
		return newSQLiteConnector(d, opts)
	case Postgres:
		return newPostgresConnector(d, opts)
	case MySQL:
		return newMySQLConnector(d, opts)
	}
	return nil, fmt.Errorf("%w: unknown engine %q", ErrBadDSN, d.Engine)
}

// New returns a store on the connections of c, a connector that the
// caller built for engine e's driver: modernc.org/sqlite's
// (sqlite.NewConnector), pgx's (stdlib.GetConnector, or
// stdlib.GetPoolConnector for a pgxpool.Pool) or go-sql-driver/mysql's
// (mysql.NewConnector). The store keeps a pool of its own on c; Close
// closes that pool, and leaves whatever c holds (a pgxpool.Pool, say)
// open.
//
// A store relies on settings that Open gives its connections. New adds
// those it can to c, and refuses c, with an error wrapping
// ErrBadConnector, where it cannot:
//
//   - SQLite: every connection gets Options.BusyTimeout, and
//     synchronous=NORMAL when the file is in WAL mode. The store keeps one
//     connection and begins its transactions with BEGIN IMMEDIATE itself.
//   - PostgreSQL: a statement whose context ends must be stopped on the
//     server by a cancel request, not left running by a closed
//     connection. New checks a connection, and refuses c unless its
//     configuration went through ConfigurePostgres (or sets up a
//     cancel request of its own).
//   - MySQL: a write whose context ends is stopped on the server with
//     KILL QUERY, sent from a second, small pool on c. UpdateQueue is
//     correct whether or not c reports found rows (clientFoundRows).
//     Without InterpolateParams the driver prepares every statement: it
//     is correct, but a round trip slower per statement.
//
// A connector from Connector already has them all. Like Open, New checks
// that the database answers, not its schema: see Check. The store's DSN
// is what its connections tell: see DSN.
func New(ctx context.Context, e Engine, c driver.Connector, opts Options) (*DB, error) {
	return newDB(ctx, e, c, opts, nil)
}

// newDB makes a store of engine e on c. A nil dsn means the caller built
// c: the store learns its DSN from its connections.
func newDB(ctx context.Context, e Engine, c driver.Connector, opts Options, dsn *DSN) (*DB, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	s := &DB{dsn: DSN{Engine: e}, opts: opts, stmts: make(map[string]*sql.Stmt), connector: c}
	s.stmtTimeout.Store(int64(opts.StatementTimeout))
	if dsn != nil {
		s.dsn = *dsn
	}
	switch e {
	case SQLite:
		s.d = sqliteDialect
		if _, ours := c.(*sqliteConnector); !ours {
			c = &sqliteConnector{Connector: c, busy: opts.BusyTimeout}
		}
	case Postgres:
		s.d = postgresDialect
		c = timeoutConnector{c, opts.ConnectTimeout}
		s.connector = c // the lock's connections are bounded too
	case MySQL:
		s.d = mysqlDialect
		c = timeoutConnector{c, opts.ConnectTimeout}
		s.connector = c
		killer := sql.OpenDB(c)
		killer.SetMaxOpenConns(2)
		killer.SetMaxIdleConns(1)
		s.closers = append(s.closers, killer.Close)
		c = &killConnector{Connector: c, killer: killer}
	default:
		return nil, fmt.Errorf("%w: unknown engine %q", ErrBadConnector, e)
	}
	s.db = sql.OpenDB(c)
	if e == SQLite {
		s.db.SetMaxOpenConns(1)
		s.db.SetMaxIdleConns(1)
		s.db.SetConnMaxLifetime(0)
		s.db.SetConnMaxIdleTime(0)
	} else {
		s.db.SetMaxOpenConns(opts.MaxConns)
		s.db.SetMaxIdleConns(opts.MaxConns)
	}
	if err := s.start(ctx, dsn == nil); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// timeoutConnector bounds each new connection by a connect timeout: a
// server that accepts TCP and never answers (a stopped process behind a
// live socket, a proxy with no backend) fails the connection, wrapping
// ErrConnectTimeout, instead of holding it until the kernel gives up.
type timeoutConnector struct {
	driver.Connector
	timeout time.Duration
}

func (c timeoutConnector) Connect(ctx context.Context) (driver.Conn, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, ErrConnectTimeout)
	defer cancel()
	conn, err := c.Connector.Connect(ctx)
	if err != nil && context.Cause(ctx) == ErrConnectTimeout {
		return nil, fmt.Errorf("%w (%s): %w", ErrConnectTimeout, c.timeout, err)
	}
	return conn, err
}

// ErrConnectTimeout is wrapped by the error of a connection that did not
// complete within Options.ConnectTimeout.
var ErrConnectTimeout = errors.New("the server did not answer within the connect timeout")

// start checks that the database answers on a first connection, and that
// the connection is one the store can use; with learnDSN it also learns
// the store's DSN from it.
func (s *DB) start(ctx context.Context, learnDSN bool) error {
	conn, err := s.db.Conn(ctx)
	if err == nil && s.d.engine != SQLite { // SQLite's connector queried the file
		err = conn.PingContext(ctx)
	}
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		return s.unavailable(err, learnDSN)
	}
	defer conn.Close()
	switch s.d.engine {
	case Postgres:
		return conn.Raw(func(dc any) error {
			cfg, err := checkPostgres(dc)
			if err == nil && learnDSN {
				s.dsn = postgresDSN(cfg)
			}
			return err
		})
	case MySQL:
		if learnDSN {
			return s.learnMySQL(ctx, conn)
		}
	case SQLite:
		if learnDSN {
			if err := s.learnSQLite(ctx, conn); err != nil {
				return err
			}
		}
		return s.learnJournal(ctx, conn)
	}
	return nil
}

// unavailable describes err, the failure of a first connection, as an
// error wrapping ErrUnavailable, with a hint where the driver's error
// tells what is wrong. It never shows the DSN's password.
func (s *DB) unavailable(err error, learnDSN bool) error {
	where := s.dsn.String()
	if learnDSN {
		where = string(s.d.engine) + " connector"
	}
	if te := tlsFailure(err); te != nil && s.d.engine != SQLite {
		te.detail = redactErr(err, s.dsn)
		return fmt.Errorf("%w: %s: %w", unavailable(true), where, te)
	}
	switch s.d.engine {
	case SQLite:
		if learnDSN {
			return fmt.Errorf("%w: not a usable SQLite database: %v", ErrUnavailable, err)
		}
		// Not a database, a read-only directory for its journal: bad
		// input. Only a lock held elsewhere is worth a retry.
		return fmt.Errorf("%w: %s is not a usable SQLite database: %v", unavailable(!sqliteBusy(err)), s.dsn.Path, err)
	case Postgres:
		return fmt.Errorf("%w: %s: %s%s", unavailable(pgRefused(err)), where, redactErr(err, s.dsn), pgHint(err))
	default:
		return fmt.Errorf("%w: %s: %s%s%s", unavailable(mysqlRefused(err)), where, redactErr(err, s.dsn), mysqlHint(err), tlsHint(err, s.opts.TLS))
	}
}

// Engine reports which engine the store talks to.
func (s *DB) Engine() Engine { return s.d.engine }

// DSN returns the DSN of the store's database (use its String method for
// a safe form). For a store made with New it is what the store's
// connections tell, without a password: the SQLite file, the PostgreSQL
// host, port, user and database, or the MySQL database alone.
func (s *DB) DSN() DSN { return s.dsn }

// Stats are a store's counters, as sql.DBStats are a pool's.
type Stats struct {
	// Statements is how many statements the store has issued; a
	// transaction's commit is one.
	Statements int64

	// Pool is the store's connection pool's.
	Pool sql.DBStats
}

// Stats returns the store's counters.
func (s *DB) Stats() Stats {
	return Stats{Statements: s.statements.Load(), Pool: s.db.Stats()}
}

// Close closes the store's pool and releases what New set up beyond it.
func (s *DB) Close() error {
	s.mu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = nil
	s.mu.Unlock()
	err := s.db.Close()
	for _, c := range s.closers {
		err = errors.Join(err, c())
	}
	return err
}
