package report

// Namespace names beside ids: the inventory counts by the namespace id
// task_queue_ids carry; operators know namespaces by name, which Temporal's
// namespaces table holds. A store that cannot say (no such table, no grant)
// still gets its inventory, by id, with the reason the names are missing.

import (
	"context"
	"errors"
	"fmt"

	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// names fills in r.NamespaceNames from st's namespaces table, for the
// namespaces the inventory found, or says in r.NamespaceNamesError why it
// could not. ctx's end is an error: the inventory is then incomplete.
func (r *Report) names(ctx context.Context, st store.Store) error {
	l, ok := st.(store.NamespaceLister)
	if !ok {
		return nil
	}
	all, err := l.Namespaces(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		if !errors.Is(err, store.ErrNoNamespaceTable) {
			r.NamespaceNamesError = err.Error()
		}
		return nil
	}
	found := map[string]bool{}
	for _, byNS := range r.Namespaces {
		for id := range byNS {
			found[id] = true
		}
	}
	for _, ns := range all {
		if id := wire.NamespaceID(ns.ID).String(); found[id] {
			r.NamespaceNames[id] = ns.Name
		}
	}
	return nil
}

// label is the namespace column's text for the id: its name and id, or
// the id alone where the namespaces table has no row for it (a deleted
// namespace's leftovers, or names not read).
func (r *Report) label(id string) string {
	if name, ok := r.NamespaceNames[id]; ok {
		return fmt.Sprintf("%s (%s)", name, id)
	}
	return id
}
