package sqlstore

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/tqscavenger/tqscavenger/store"
)

// kindError marks a driver error with one of the store's error kinds
// (store.ErrTransient, store.ErrConditionFailed) without changing its text.
type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

func mark(kind, err error) error { return &kindError{kind: kind, err: err} }

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
