package scavenger

// Namespaces by name: Temporal's operators know a namespace by its name,
// task_queue_ids carry its id. ResolveNamespaces turns Rules.NamespaceNames
// into ids through the namespaces table, once per pass (Begin), so that a
// namespace deleted and registered again under its name is found by its
// new id at the next pass.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tqscavenger/tqscavenger/internal/suggest"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// ErrUnknownNamespace is wrapped by ResolveNamespaces' error when a name
// is not in the namespaces table: bad input, which hosts report as such
// (the command exits 2).
var ErrUnknownNamespace = errors.New("unknown namespace")

// ErrUnresolvedNamespaces is Run's error for a config whose
// NamespaceNames were not resolved: a Scavenger made by New must be given
// ids (or its config passed through ResolveNamespaces first).
var ErrUnresolvedNamespaces = errors.New("namespace names not resolved to ids (set the pass up with Begin, or resolve them with ResolveNamespaces)")

// ResolveNamespaces returns r with its NamespaceNames looked up in the
// namespaces table that l reads and their ids added to Namespaces (each
// id once, in the order given), NamespaceNames emptied. Rules without
// names are returned as they are, without reading anything. A nil l is a
// store that cannot read the table: names are then an error asking for
// ids. A name not in the table is an error wrapping ErrUnknownNamespace
// that lists the names present.
func ResolveNamespaces(ctx context.Context, l store.NamespaceLister, r Rules) (Rules, error) {
	if len(r.NamespaceNames) == 0 {
		return r, nil
	}
	if l == nil {
		return r, fmt.Errorf("namespace %q: this store cannot read namespace names: give the namespace's id (UUID)", r.NamespaceNames[0])
	}
	all, err := l.Namespaces(ctx)
	if err != nil {
		switch {
		case errors.Is(err, store.ErrNoNamespaceTable):
			return r, fmt.Errorf("namespace %q: %w: give the namespace's id (UUID)", r.NamespaceNames[0], err)
		case errors.Is(err, store.ErrNoPrivilege):
			return r, fmt.Errorf("namespace %q: %w (grant SELECT on the namespaces table, see docs/privileges.md, or give the namespace's id, a UUID)", r.NamespaceNames[0], err)
		}
		return r, fmt.Errorf("namespace %q: %w", r.NamespaceNames[0], err)
	}
	byName := make(map[string]wire.NamespaceID, len(all))
	for _, ns := range all {
		byName[ns.Name] = wire.NamespaceID(ns.ID)
	}
	out := r
	out.Namespaces = slices.Clone(r.Namespaces)
	out.NamespaceNames = nil
	for _, name := range r.NamespaceNames {
		id, ok := byName[name]
		if !ok {
			return r, unknownNamespace(name, all)
		}
		if !slices.Contains(out.Namespaces, id) {
			out.Namespaces = append(out.Namespaces, id)
		}
	}
	return out, nil
}

// namespaceLister returns db's store.NamespaceLister, or nil if it has
// none: what Begin hands ResolveNamespaces, as a PassDB need not read
// namespaces (its Rules may name none).
func namespaceLister(db store.Store) store.NamespaceLister {
	l, _ := db.(store.NamespaceLister)
	return l
}

// maxNamesListed bounds the names unknownNamespace lists: a cluster may
// hold thousands of namespaces, and an error is one line.
const maxNamesListed = 20

// unknownNamespace is the error for a name not among all: the nearest
// name present, if one is a likely typo of it, then the names present (a
// deleted namespace's renamed row among them), at most maxNamesListed.
func unknownNamespace(name string, all []store.NamespaceRow) error {
	names := make([]string, len(all))
	for i, ns := range all {
		names[i] = ns.Name
	}
	slices.Sort(names)
	hint := ""
	if near := nearest(name, names); near != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", near)
	}
	has := strings.Join(names[:min(len(names), maxNamesListed)], ", ")
	switch {
	case has == "":
		has = "none"
	case len(names) > maxNamesListed:
		has += fmt.Sprintf(" and %d more", len(names)-maxNamesListed)
	}
	return fmt.Errorf("%w %q%s: the namespaces table has no such name (it has: %s)", ErrUnknownNamespace, name, hint, has)
}

// nearest returns the name of names closest to word, if it is within two
// edits and under half the word's length away (a typo, not another name),
// or "".
func nearest(word string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		d := suggest.Distance(strings.ToLower(word), strings.ToLower(n))
		if d < bestD && d <= len(word)/2 {
			best, bestD = n, d
		}
	}
	return best
}
