// This file owns the store's errors: what a driver error means to the
// scavenger (transient, a failed condition, a timeout) and the errors a
// store returns of its own.

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

// wrap turns a driver error into a store error: ctx errors stay as they
// are (a per-statement timeout becomes transient), the rest is classified
// by the dialect.
func (s *DB) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if !errors.Is(context.Cause(ctx), errStatementTimeout) {
			return fmt.Errorf("%s: %w", op, ctxErr)
		}
		return fmt.Errorf("%s: statement timeout (%s): %w", op, s.opts.StatementTimeout, mark(store.ErrTransient, ctxErr))
	}
	return fmt.Errorf("%s: %w", op, s.d.classify(err))
}

// kindError marks a driver error with the store's error kinds
// (store.ErrTransient, store.ErrConditionFailed, context.DeadlineExceeded)
// without changing its text.
type kindError struct {
	kinds []error
	err   error
}

func (e *kindError) Error() string { return e.err.Error() }

func (e *kindError) Unwrap() []error {
	return append(e.kinds[:len(e.kinds):len(e.kinds)], e.err)
}

func mark(kind, err error) error { return &kindError{kinds: []error{kind}, err: err} }

// classifyCommon marks errors that mean "the connection, not the query,
// failed" as transient, on any engine.
func classifyCommon(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, driver.ErrBadConn),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.As(err, &ne):
		return mark(store.ErrTransient, err)
	}
	return err
}
