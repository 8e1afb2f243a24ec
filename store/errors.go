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

	// ErrStatementTimeout marks a statement that ran out of the store's
	// own statement timeout. It is transient too: a smaller batch, or a
	// moment with fewer locks held, may finish in time.
	ErrStatementTimeout = errors.New("statement timeout")

	// ErrUnknownOutcome marks a write whose outcome is unknown: the
	// connection was lost after the statement was sent, so it may or may
	// not have taken effect. It is transient; a caller that counts rows
	// must count the rows of such a statement as unknown, not as kept.
	ErrUnknownOutcome = errors.New("outcome unknown")

	// ErrReadOnly marks a write refused because the database, or the
	// transaction, is read-only (a replica, a read-only file), or because
	// the user may only read. Retrying does not help.
	ErrReadOnly = errors.New("database is read-only")

	// ErrDiskFull marks a write refused because the database's disk or
	// quota is full. Retrying does not help.
	ErrDiskFull = errors.New("database disk full")
)

// Errors about the database as a whole, engine-neutral so that the daemon and
// the command can tell them apart without knowing the engine.
var (
	// ErrLocked reports that another scavenger holds the
	// one-scavenger-at-a-time lock (see Locker).
	ErrLocked = errors.New("another tqscavenger holds the lock")

	// ErrLockLost reports that a held lock is gone: its session ended,
	// or it could not be checked in time. Another scavenger may hold it.
	ErrLockLost = errors.New("the one-scavenger lock was lost")

	// ErrSchema reports that the database lacks Temporal's task tables, or
	// that their columns differ from Temporal's (see SchemaChecker).
	ErrSchema = errors.New("not a Temporal task store")
)
