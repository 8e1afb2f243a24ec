// This file owns how a store runs a statement: the prepared statement
// cache, reads and writes on the pool, transactions, and the context of
// one call.

package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"time"
)

// maxPrepared caps the prepared statement cache.
const maxPrepared = 256

// stmt returns a cached prepared statement for query, or nil where the
// dialect does not prepare.
func (s *DB) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if !s.d.prepare {
		return nil, nil
	}
	s.mu.Lock()
	st, ok := s.stmts[query]
	full := len(s.stmts) >= maxPrepared
	s.mu.Unlock()
	if ok {
		return st, nil
	}
	if full {
		// Batched statements come in many shapes; past the cap they run
		// unprepared rather than grow the cache without bound.
		return nil, nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stmts == nil { // closed meanwhile
		st.Close()
		return nil, sql.ErrConnDone
	}
	if old, ok := s.stmts[query]; ok {
		st.Close()
		return old, nil
	}
	s.stmts[query] = st
	return st, nil
}

// query runs a read on the pool (prepared where the dialect prepares). A
// read never joins a shared write transaction (see groupCommit): inside it
// a read would hold the write lock Temporal's writers wait for; it waits
// for the store's connection instead.
func (s *DB) query(ctx context.Context, q string, args []any) (*sql.Rows, error) {
	s.statements.Add(1)
	st, err := s.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	if st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.db.QueryContext(ctx, q, args...)
}

// exec runs a write on the pool, or in a shared write transaction (see
// groupCommit), and returns rows affected once it has committed.
func (s *DB) exec(ctx context.Context, q string, args []any) (int64, error) {
	s.statements.Add(1)
	if s.SharesCommits() {
		return s.group.exec(ctx, q, args)
	}
	st, err := s.stmt(ctx, q)
	if err != nil {
		return 0, err
	}
	var res sql.Result
	if st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = s.db.ExecContext(ctx, q, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// execIsolated runs one write in a transaction of its own at isolation
// iso, or, with iso sql.LevelDefault, as exec does (its own autocommit).
// It is for a write whose safety rests on the locks of an isolation the
// session does not have: the orphan delete on MySQL (see
// dialect.orphanIsolation). An error before the commit changed nothing;
// the commit's may have taken effect (txError).
func (s *DB) execIsolated(ctx context.Context, iso sql.IsolationLevel, q string, args []any) (_ int64, err error) {
	if iso == sql.LevelDefault {
		return s.exec(ctx, q, args)
	}
	committing := false
	defer func() {
		if err != nil {
			err = &txError{err: err, commit: committing}
		}
	}()
	s.statements.Add(1)
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: iso})
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() // sql.ErrTxDone after a commit
	s.statements.Add(1)
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	s.statements.Add(1)
	committing = true
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	return n, nil
}

// timeoutCause is the cause of a statement context that ran out of the
// store's own bound (Options.StatementTimeout, or startupTimeout). It is
// how wrap tells that timeout, which is transient, from the caller's own
// deadline or cancellation, which is not: whichever ends the context
// first is its cause.
type timeoutCause time.Duration

func (c timeoutCause) Error() string { return "statement timeout (" + time.Duration(c).String() + ")" }

// startupTimeout bounds the statements a scheduler runs before a pass (the
// schema check, the table list, taking the lock) when
// Options.StatementTimeout does not: another session's table lock must
// make them fail, not wait forever.
const startupTimeout = 30 * time.Second

// withStatement prepares ctx for one store call: it applies the statement
// timeout.
func (s *DB) withStatement(ctx context.Context) (context.Context, context.CancelFunc) {
	if d := s.StatementTimeout(); d > 0 {
		return context.WithTimeoutCause(ctx, d, timeoutCause(d))
	}
	return ctx, func() {}
}

// StatementTimeout returns the bound on each statement in effect
// (Options.StatementTimeout, or what SetStatementTimeout set); 0 is none.
func (s *DB) StatementTimeout() time.Duration { return time.Duration(s.stmtTimeout.Load()) }

// SetStatementTimeout changes the bound on each statement, from the next
// statement on; 0 is none. Statements in flight keep theirs. It is safe to
// call while the store is in use: a daemon's reload calls it.
func (s *DB) SetStatementTimeout(d time.Duration) { s.stmtTimeout.Store(int64(max(d, 0))) }

// withStartup is withStatement for the start-up statements: bounded by
// Options.StatementTimeout, or startupTimeout without one.
func (s *DB) withStartup(ctx context.Context) (context.Context, context.CancelFunc) {
	d := s.StatementTimeout()
	if d <= 0 {
		d = startupTimeout
	}
	return context.WithTimeoutCause(ctx, d, timeoutCause(d))
}

// txn is a transaction on one connection: a *sql.Tx, or SQLite's
// immediateTx.
type txn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	Commit() error
	Rollback() error
}

// begin starts a transaction that writes. On SQLite it is an immediateTx.
func (s *DB) begin(ctx context.Context) (txn, error) {
	if s.d.immediate {
		return s.beginImmediate(ctx)
	}
	return s.db.BeginTx(ctx, nil)
}

// rollbackTimeout bounds the rollback of a transaction whose call's
// context has ended.
const rollbackTimeout = 5 * time.Second

// immediateTx is a SQLite transaction begun with BEGIN IMMEDIATE, which
// takes the write lock at once, waiting for it as long as the busy
// timeout. A deferred transaction, SQLite's default, that reads and then
// writes fails with SQLITE_BUSY without waiting if another connection
// wrote in between. The store issues BEGIN IMMEDIATE itself, on a
// connection of its own, because a caller's connector may not begin
// transactions so (modernc.org/sqlite's _txlock=immediate).
type immediateTx struct {
	ctx  context.Context
	conn *sql.Conn
	done bool
}

func (s *DB) beginImmediate(ctx context.Context) (*immediateTx, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		discard(conn)
		return nil, err
	}
	return &immediateTx{ctx: ctx, conn: conn}, nil
}

func (t *immediateTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.conn.ExecContext(ctx, query, args...)
}

func (t *immediateTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return t.conn.QueryRowContext(ctx, query, args...)
}

// Commit commits the transaction. If it fails, the transaction is still
// to be rolled back.
func (t *immediateTx) Commit() error {
	if t.done {
		return sql.ErrTxDone
	}
	if _, err := t.conn.ExecContext(t.ctx, "COMMIT"); err != nil {
		return err
	}
	t.done = true
	return t.conn.Close()
}

// Rollback rolls the transaction back and returns its connection to the
// pool, or closes the connection if the rollback fails: a closed
// connection holds no transaction, whatever state it was in.
func (t *immediateTx) Rollback() error {
	if t.done {
		return sql.ErrTxDone
	}
	t.done = true
	// The call's context may be what ended the transaction.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), rollbackTimeout)
	defer cancel()
	if _, err := t.conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		discard(t.conn)
		return err
	}
	return t.conn.Close()
}

// discard closes conn instead of returning it to the pool.
func discard(conn *sql.Conn) {
	conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}
