package cli

// What the Temporal commands (worker.go, schedule.go) share with the rest
// of the command, built with or without the tqs_notemporal tag.

import (
	"errors"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// errTemporalUnavailable: the Temporal frontend could not be reached
// (exit status 4, retry later).
var errTemporalUnavailable = errors.New("temporal unavailable")

func sqlOptions(stmtTO time.Duration, maxConns int) sqlstore.Options {
	return sqlstore.Options{StatementTimeout: stmtTO, MaxConns: maxConns}
}
