// This file owns how a store runs a statement: the prepared statement
// cache, reads and writes on the pool, and the context of one call.

package sqlstore

import (
	"context"
	"database/sql"
	"errors"
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

// query runs a read on the pool (prepared where the dialect prepares).
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

// exec runs a write on the pool and returns rows affected.
func (s *DB) exec(ctx context.Context, q string, args []any) (int64, error) {
	s.statements.Add(1)
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

// errStatementTimeout is the cause of a statement context that ran out of
// Options.StatementTimeout. It is how wrap tells that timeout, which is
// transient, from the caller's own deadline or cancellation, which is not:
// whichever ends the context first is its cause.
var errStatementTimeout = errors.New("statement timeout")

// withStatement prepares ctx for one store call: it applies the statement
// timeout.
func (s *DB) withStatement(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.opts.StatementTimeout > 0 {
		return context.WithTimeoutCause(ctx, s.opts.StatementTimeout, errStatementTimeout)
	}
	return ctx, func() {}
}
