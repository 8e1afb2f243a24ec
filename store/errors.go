package store

import "errors"

// Errors a caller must tell apart. Implementations wrap them with %w, so
// test with errors.Is.
var (
	// ErrConditionFailed reports that a conditional write found the row
	// changed (another range_id) or gone. For the scavenger it means a
	// matching host owns the queue: not an error for the data.
	ErrConditionFailed = errors.New("condition failed")

	// ErrNotFound reports that a point lookup found no row.
	ErrNotFound = errors.New("not found")

	// ErrTransient marks errors worth retrying: lost connections,
	// timeouts, lock waits, deadlocks, SQLITE_BUSY.
	ErrTransient = errors.New("transient store error")
)

// Errors about the database as a whole, engine-neutral so that the daemon and
// the command can tell them apart without knowing the engine.
var (
	// ErrLocked reports that another scavenger holds the
	// one-scavenger-at-a-time lock (see Locker).
	ErrLocked = errors.New("another tqscavenger holds the lock")

	// ErrSchema reports that the database lacks Temporal's task tables, or
	// that their columns differ from Temporal's (see SchemaChecker).
	ErrSchema = errors.New("not a Temporal task store")
)
