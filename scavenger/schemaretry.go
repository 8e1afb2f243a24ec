package scavenger

// Begin's schema check, retried: a connection killed or cut while the
// check runs (a failover, a proxy restarting, an idle connection the
// server dropped) is a transient error, and the pass is not refused for
// it; a schema that is wrong is not retried.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// SchemaCheckAttempts bounds Begin's attempts at the schema check: a
// transient error is retried with the pass's backoff (Pace.RetryInitial,
// doubling up to RetryMax), at most this many attempts in all and within
// Pace.RetryFor, each retry logged. More would hide an outage from a
// scheduler that retries the whole pass later.
const SchemaCheckAttempts = 3

// MsgSchemaRetry is logged at warn level before each retry of Begin's
// schema check.
const MsgSchemaRetry = "schema check failed on a transient error, retrying"

// CheckSchema runs db's schema check as Begin does, with bounded retries
// of transient errors (see SchemaCheckAttempts) at cfg's backoff, logged
// to cfg.Logger: for a host that checks a database before it makes any
// pass (serve's start, report).
func CheckSchema(ctx context.Context, db store.SchemaChecker, cfg Config) (store.SchemaInfo, error) {
	return checkSchema(ctx, db, cfg)
}

// checkSchema runs db's schema check with bounded retries of transient
// errors (see SchemaCheckAttempts).
func checkSchema(ctx context.Context, db store.SchemaChecker, cfg Config) (store.SchemaInfo, error) {
	cfg = cfg.WithDefaults()
	wait, start := cfg.RetryInitial, time.Now()
	for n := 1; ; n++ {
		info, err := db.Check(ctx)
		if err == nil || !errors.Is(err, store.ErrTransient) || ctx.Err() != nil {
			return info, err
		}
		if n == SchemaCheckAttempts || time.Since(start)+wait > cfg.RetryFor {
			return info, fmt.Errorf("%w: schema check: %d attempts: %w", ErrGaveUp, n, err)
		}
		cfg.Logger.Warn(MsgSchemaRetry, "attempt", n, "of", SchemaCheckAttempts, "err", err, "backoff", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return info, err
		case <-t.C:
		}
		wait = min(wait*2, cfg.RetryMax)
	}
}
