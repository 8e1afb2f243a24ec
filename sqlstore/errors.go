// This file owns the store's errors: what a driver error means to the
// scavenger (transient, a failed condition, a timeout, a read-only or full
// database, a write whose outcome is unknown) and the errors a store
// returns of its own.

package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/tqscavenger/tqscavenger/store"
)

// ErrUnavailable is wrapped by the errors of Open and New when the
// database cannot be reached or logged in to: a wrong host, password or
// database name.
var ErrUnavailable = errors.New("database unavailable")

// ErrBadConnector is wrapped by New's errors when a caller's connector
// lacks what a store relies on and cannot add.
var ErrBadConnector = errors.New("connector unsuitable for a task store")

// effect is what a failed statement may have done to the rows.
type effect int

const (
	// readEffect: nothing, whatever happened to the connection: a read,
	// or a statement inside a transaction that is not committed (a lost
	// connection rolls the transaction back).
	readEffect effect = iota
	// writeEffect: a write on its own. Once it is sent, only the server's
	// answer tells whether it took effect: a connection lost before that
	// leaves its outcome unknown.
	writeEffect
	// commitEffect: a commit. As a write, and also when the driver calls
	// the connection bad (database/sql's driver.ErrBadConn promises only
	// that a statement was not sent, and a commit's was).
	commitEffect
)

// wrap turns the driver error of a read into a store error: see wrapAs.
func (s *DB) wrap(ctx context.Context, op string, err error) error {
	return s.wrapAs(ctx, op, readEffect, err)
}

// wrapWrite turns the driver error of a write into a store error: see
// wrapAs.
func (s *DB) wrapWrite(ctx context.Context, op string, err error) error {
	return s.wrapAs(ctx, op, writeEffect, err)
}

// wrapAs turns a driver error into a store error. A statement that may
// have taken effect although it failed (see effect) wraps
// store.ErrUnknownOutcome and store.ErrTransient. A statement whose
// context ended wraps the context's error; if it was the store's own
// statement timeout, also store.ErrStatementTimeout and
// store.ErrTransient. The rest is classified by the dialect.
func (s *DB) wrapAs(ctx context.Context, op string, e effect, err error) error {
	if err == nil {
		return nil
	}
	var kinds []error
	if e != readEffect && s.lostAfterSend(err, e) {
		kinds = append(kinds, store.ErrTransient, store.ErrUnknownOutcome)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		var tc timeoutCause
		if !errors.As(context.Cause(ctx), &tc) {
			return fmt.Errorf("%s: %w", op, mark(ctxErr, kinds...))
		}
		kinds = append(kinds, store.ErrTransient, store.ErrStatementTimeout)
		return fmt.Errorf("%s: %s: %w", op, tc, mark(ctxErr, kinds...))
	}
	if e != readEffect && s.d.denied != nil && s.d.denied(err) {
		// The user may only read: as a read-only database, retrying does
		// not help.
		kinds = append(kinds, store.ErrReadOnly)
	}
	return fmt.Errorf("%s: %w", op, mark(s.d.classify(err), kinds...))
}

// lostAfterSend reports whether err says that the connection of a
// statement with effect e was lost after the statement may have reached
// the server.
func (s *DB) lostAfterSend(err error, e effect) bool {
	var tx *txError
	if errors.As(err, &tx) {
		if !tx.commit {
			return false
		}
		e = commitEffect
	}
	var (
		ns notSentError
		le lostError
	)
	switch {
	case errors.As(err, &ns):
		return false
	case errors.As(err, &le):
		return true
	case errors.Is(err, driver.ErrBadConn):
		return e == commitEffect
	}
	return s.d.lost(err)
}

// txError marks the error of a statement of a store's own transaction:
// one before the commit changed nothing (the transaction is rolled back),
// the commit's own may have taken effect.
type txError struct {
	err    error
	commit bool
}

func (e *txError) Error() string { return e.err.Error() }
func (e *txError) Unwrap() error { return e.err }

// notSentError marks an error that happened before a statement was sent:
// opening its connection.
type notSentError struct{ err error }

func (e notSentError) Error() string { return e.err.Error() }
func (e notSentError) Unwrap() error { return e.err }

// lostError marks an error that a connection dropped after its statement
// was sent (mysqlconn.go drops one whose server does not answer a kill).
type lostError struct{ err error }

func (e lostError) Error() string { return e.err.Error() }
func (e lostError) Unwrap() error { return e.err }

// kindError marks a driver error with the store's error kinds
// (store.ErrTransient, store.ErrConditionFailed, …) without changing its
// text.
type kindError struct {
	kinds []error
	err   error
}

func (e *kindError) Error() string { return e.err.Error() }

func (e *kindError) Unwrap() []error {
	return append(e.kinds[:len(e.kinds):len(e.kinds)], e.err)
}

// mark returns err marked with kinds (err itself if there are none).
func mark(err error, kinds ...error) error {
	if len(kinds) == 0 {
		return err
	}
	return &kindError{kinds: kinds, err: err}
}

// classifyCommon marks errors that mean "the connection, not the query,
// failed" as transient, on any engine.
func classifyCommon(err error) error {
	if connLost(err) {
		return mark(err, store.ErrTransient)
	}
	return err
}

// connLost reports whether err is the network's: a connection that
// closed, reset or timed out.
func connLost(err error) bool {
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.As(err, &ne)
}
