// This file owns the MySQL connector: it sets each session's isolation
// and stops a cancelled write on the server.

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

	"github.com/go-sql-driver/mysql"
)

// The MySQL driver answers a canceled context by closing the connection.
// The server does not notice: a statement waiting for a row lock runs once
// the lock is released, after the caller was told it failed, and an INSERT
// or DELETE the caller gave up on takes effect anyway. killConnector makes
// a canceled write behave as on PostgreSQL: the server is told to stop the
// statement (KILL QUERY, from another connection), and the call returns
// what the server then says: interrupted, or done if it finished first.
// Reads are left to the driver: a read the caller gave up on has no
// effect (the one locking read, in DeleteQueues, does not wait for locks).

// killGrace is how long a killed statement's answer may take before the
// connection is dropped anyway (the server or the network is gone).
const killGrace = 5 * time.Second

// killConnector wraps the driver's connector. Its connections learn their
// server thread id; killer is a separate pool that sends KILL QUERY.
type killConnector struct {
	driver.Connector
	killer *sql.DB
}

func (c *killConnector) Connect(ctx context.Context) (driver.Conn, error) {
	// An error here comes before any statement of the store's was sent.
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, notSentError{err}
	}
	id, err := connectionID(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, notSentError{fmt.Errorf("read the connection id: %w", err)}
	}
	if err := connExec(ctx, conn, sessionIsolation); err != nil {
		conn.Close()
		return nil, notSentError{fmt.Errorf("set the session's isolation: %w", err)}
	}
	return &killConn{conn: conn, id: id, killer: c.killer}, nil
}

// sessionIsolation is the isolation of every session: READ COMMITTED, as
// Temporal's own sessions on MySQL (its connect attributes). A task range
// delete then locks only the rows it deletes; under REPEATABLE READ,
// InnoDB's default, it also locks the gap after them, which is where
// matching appends a queue's new tasks (a drained queue's next insert
// waits for the delete's commit). The statements whose safety needs
// REPEATABLE READ's locks run in transactions that ask for it (the queue
// range lock, the orphan delete: DB.execIsolated), whatever the DSN or
// the server's default. The standard syntax works on MySQL and MariaDB
// alike (the variable is tx_isolation on MariaDB, transaction_isolation
// on MySQL 8).
const sessionIsolation = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"

// connExec runs query, which takes no parameters, on a new connection.
func connExec(ctx context.Context, conn driver.Conn, query string) error {
	if e, ok := conn.(driver.ExecerContext); ok {
		_, err := e.ExecContext(ctx, query, nil)
		if !errors.Is(err, driver.ErrSkip) {
			return err
		}
	}
	st, err := conn.Prepare(query)
	if err != nil {
		return err
	}
	defer st.Close()
	if e, ok := st.(driver.StmtExecContext); ok {
		_, err = e.ExecContext(ctx, nil)
		return err
	}
	return fmt.Errorf("driver statement %T cannot execute with a context", st)
}

func connectionID(ctx context.Context, conn driver.Conn) (uint64, error) {
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return 0, fmt.Errorf("driver connection %T cannot query", conn)
	}
	rows, err := q.QueryContext(ctx, "SELECT CONNECTION_ID()", nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return 0, err
	}
	switch id := v[0].(type) {
	case int64:
		return uint64(id), nil
	case uint64:
		return id, nil
	case []byte:
		var n uint64
		_, err := fmt.Sscan(string(id), &n)
		return n, err
	}
	return 0, fmt.Errorf("CONNECTION_ID() returned %T", v[0])
}

// killConn is a driver connection whose canceled writes are killed on the
// server. After a kill it is not reused: a KILL QUERY that arrives between
// statements must not meet the next one.
type killConn struct {
	conn   driver.Conn
	id     uint64
	killer *sql.DB
	killed atomic.Bool
}

var (
	_ driver.ConnBeginTx        = (*killConn)(nil)
	_ driver.ConnPrepareContext = (*killConn)(nil)
	_ driver.ExecerContext      = (*killConn)(nil)
	_ driver.QueryerContext     = (*killConn)(nil)
	_ driver.Pinger             = (*killConn)(nil)
	_ driver.SessionResetter    = (*killConn)(nil)
	_ driver.Validator          = (*killConn)(nil)
	_ driver.NamedValueChecker  = (*killConn)(nil)

	_ driver.StmtExecContext   = (*killStmt)(nil)
	_ driver.StmtQueryContext  = (*killStmt)(nil)
	_ driver.NamedValueChecker = (*killStmt)(nil)
)

// ExecContext runs the statement under a context the driver never sees
// canceled; when ctx ends, watch kills the statement on the server and the
// driver returns the server's answer.
func (c *killConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	inner, done := c.watch(ctx)
	defer done()
	res, err := c.conn.(driver.ExecerContext).ExecContext(inner, query, args)
	if err != nil && ctx.Err() != nil && !errors.Is(err, driver.ErrSkip) {
		return nil, stopped(ctx, err)
	}
	return res, err
}

// stopped is the error of a write whose context ended: ctx's error, and
// the driver's. The server answered (interrupted, error 1317), or the
// statement was never sent (driver.ErrBadConn), or the connection was
// dropped before an answer, which leaves the outcome unknown: the driver
// then returns the context's error, so the drop is marked here.
func stopped(ctx context.Context, err error) error {
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me):
		return fmt.Errorf("%w (the server stopped the statement: %w)", ctx.Err(), err)
	case errors.Is(err, driver.ErrBadConn):
		return fmt.Errorf("%w (not sent: %w)", ctx.Err(), err)
	}
	return lostError{fmt.Errorf("%w (the connection was dropped before the server answered: %v)", ctx.Err(), err)}
}

// watch returns the context for the driver and a function to call when the
// statement has returned.
func (c *killConn) watch(ctx context.Context) (context.Context, func()) {
	if ctx.Done() == nil {
		return ctx, func() {}
	}
	inner, drop := context.WithCancel(context.WithoutCancel(ctx))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-stop:
			return
		case <-ctx.Done():
		}
		c.killed.Store(true)
		kctx, cancel := context.WithTimeout(context.Background(), killGrace)
		defer cancel()
		if _, err := c.killer.ExecContext(kctx, fmt.Sprintf("KILL QUERY %d", c.id)); err != nil {
			drop() // cannot reach the server: drop the connection
			return
		}
		select {
		case <-stop:
		case <-kctx.Done():
			drop()
		}
	}()
	return inner, func() {
		close(stop)
		// The kill, if any, has reached the server before this returns, so
		// it cannot hit a later statement on this connection.
		wg.Wait()
		drop()
	}
}

func (c *killConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

// PrepareContext prepares a statement whose writes are killed as the
// connection's are. database/sql prepares every statement with arguments
// when the driver does not interpolate them (a caller's connector without
// InterpolateParams).
func (c *killConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &killStmt{Stmt: st, conn: c}, nil
}

func (c *killConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *killConn) Ping(ctx context.Context) error { return c.conn.(driver.Pinger).Ping(ctx) }

func (c *killConn) ResetSession(ctx context.Context) error {
	if c.killed.Load() {
		return driver.ErrBadConn
	}
	return c.conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *killConn) IsValid() bool { return !c.killed.Load() && c.conn.(driver.Validator).IsValid() }

func (c *killConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

func (c *killConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *killConn) Close() error { return c.conn.Close() }

// Begin is the pre-context form database/sql no longer calls.
func (c *killConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// killStmt is a prepared statement of a killConn: its writes are killed
// on the server as the connection's are.
type killStmt struct {
	driver.Stmt
	conn *killConn
}

// ExecContext is killConn.ExecContext for a prepared statement.
func (s *killStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	inner, done := s.conn.watch(ctx)
	defer done()
	res, err := s.Stmt.(driver.StmtExecContext).ExecContext(inner, args)
	if err != nil && ctx.Err() != nil {
		return nil, stopped(ctx, err)
	}
	return res, err
}

func (s *killStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

func (s *killStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
