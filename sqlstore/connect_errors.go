package sqlstore

import "errors"

// ErrRefused is wrapped, with ErrUnavailable, by Open's errors when
// the server answered but refused the login or the database: a wrong user
// or password, a missing database, no grant. Unlike a server that cannot
// be reached, retrying does not help.
var ErrRefused = errors.New("login or database refused")

// unavailable returns the error Open wraps for a database it could not
// use: ErrUnavailable, and also ErrRefused if refused.
func unavailable(refused bool) error {
	if refused {
		return refusedError{}
	}
	return ErrUnavailable
}

// refusedError reads as ErrUnavailable and wraps ErrRefused too.
type refusedError struct{}

func (refusedError) Error() string   { return ErrUnavailable.Error() }
func (refusedError) Unwrap() []error { return []error{ErrUnavailable, ErrRefused} }
