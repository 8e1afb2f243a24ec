// This file owns why Temporal's namespaces table could not be read, which
// turns the namespace names an operator knows into the ids task_queue_ids
// start with (the read itself is ExecutionReader's, executions.go).

package sqlstore

import (
	"context"
	"fmt"

	"github.com/tqscavenger/tqscavenger/store"
)

// Every *DB reads namespaces for names as well as for the closed-workflow
// rule.
var _ store.NamespaceLister = (*DB)(nil)

// namespacesError says why the namespaces table could not be read: the
// table missing (store.ErrNoNamespaceTable: namespaces can then be named
// by id only), or history reads' own classification (a refused grant is
// store.ErrNoPrivilege).
func (s *DB) namespacesError(ctx context.Context, err error) error {
	if ctx.Err() == nil && (s.d.denied == nil || !s.d.denied(err)) {
		if names, lerr := s.tableNames(ctx); lerr == nil && !names["namespaces"] {
			return fmt.Errorf("%w (%s)", store.ErrNoNamespaceTable, s.dsn)
		}
	}
	return s.historyErr(ctx, "namespaces", err)
}
