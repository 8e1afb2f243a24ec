package sqlstore

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/tqscavenger/tqscavenger/store"
)

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
