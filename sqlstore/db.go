// This file owns a store's life: its options, opening it, closing it.

package sqlstore

import (
	"context"
	"database/sql"
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
	// Create allows Open to create a missing SQLite file (seed, demo,
	// schema setup). A file we create is put in WAL mode; an existing
	// file's journal mode is never changed.
	Create bool

	// MaxConns caps open connections on PostgreSQL and MySQL. Default 8.
	// SQLite always uses one connection: it has one writer anyway, and
	// one connection makes writes wait in Go instead of on SQLITE_BUSY.
	MaxConns int

	// StatementTimeout bounds each statement; 0 means no bound. A
	// statement that runs out of time fails with an error wrapping both
	// store.ErrTransient and context.DeadlineExceeded.
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
	// queueRanges counts batches of queue deletes done as one key range
	// (MySQL); afterRangeLock, if set, runs once their rows are locked.
	// Both are for tests.
	queueRanges    atomic.Int64
	afterRangeLock func()

	// closers undo what Open set up beyond the sql.DB (MySQL: the pool
	// that kills cancelled statements).
	closers []func() error
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

// OpenDSN is Open for a parsed DSN.
func OpenDSN(ctx context.Context, d DSN, opts Options) (*DB, error) {
	if opts.MaxConns <= 0 {
		opts.MaxConns = 8
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	var (
		s   *DB
		err error
	)
	switch d.Engine {
	case SQLite:
		s, err = openSQLite(ctx, d, opts)
	case Postgres:
		s, err = openPostgres(ctx, d, opts)
	case MySQL:
		s, err = openMySQL(ctx, d, opts)
	default:
		err = fmt.Errorf("%w: unknown engine %q", ErrBadDSN, d.Engine)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

func newDB(db *sql.DB, d *dialect, dsn DSN, opts Options) *DB {
	return &DB{db: db, d: d, dsn: dsn, opts: opts, stmts: make(map[string]*sql.Stmt)}
}

// Engine reports which engine the store talks to.
func (s *DB) Engine() Engine { return s.d.engine }

// DSN returns the parsed DSN (use its String method for a safe form).
func (s *DB) DSN() DSN { return s.dsn }

// SQL returns the underlying database handle, for tests and tools that
// need plain SQL (the benchmark's raw bound, schema setup).
func (s *DB) SQL() *sql.DB { return s.db }

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

// Close closes the database and releases what Open acquired.
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
