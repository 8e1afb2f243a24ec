package store

import (
	"context"
	"errors"
)

// ErrNoNamespaceTable reports that the database has no namespaces table
// (a task store made for tests, or tables copied without it): namespaces
// can then be named by id only.
var ErrNoNamespaceTable = errors.New("the database has no namespaces table")

// NamespaceLister reads Temporal's namespaces table, the part of
// ExecutionReader that turns namespace names into ids. A deleted
// namespace's row is renamed by Temporal to "<name>-deleted-<id prefix>"
// before it is removed, so its old name no longer finds it.
type NamespaceLister interface {
	// Namespaces returns every namespaces row, or an error wrapping
	// ErrNoNamespaceTable if there is no such table (ErrNoPrivilege if
	// its read is refused).
	Namespaces(ctx context.Context) ([]NamespaceRow, error)
}
