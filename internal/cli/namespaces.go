package cli

// --namespace by name or id: a UUID is an id as it stands (a deleted
// namespace's leftover queues keep theirs, though its row is gone); any
// other value is a name, resolved through Temporal's namespaces table by
// scavenger.Begin at the start of each pass. serve checks the names once
// at start, schedule create and update resolve them into the pass
// description, as a scheduled pass's worker reads ids only.

import (
	"context"
	"fmt"
	"strings"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// namespaceScope sets r's namespaces from --namespace's values: a UUID
// as an id, anything else as a name.
func namespaceScope(r *scavenger.Rules, vals []string) error {
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if v == "" {
			return usagef("--namespace is empty: give a namespace's name or id (UUID)")
		}
		if id, err := wire.ParseNamespaceID(v); err == nil {
			r.Namespaces = append(r.Namespaces, id)
			continue
		}
		r.NamespaceNames = append(r.NamespaceNames, v)
	}
	return nil
}

// resolveNamespaces resolves c's namespace names through db's namespaces
// table, for the hosts that need ids before a pass: serve's start-up
// check, a schedule's description. An unknown name is bad input.
func resolveNamespaces(ctx context.Context, db store.NamespaceLister, c *scavenger.Config) error {
	r, err := scavenger.ResolveNamespaces(ctx, db, c.Rules)
	if err != nil {
		return fmt.Errorf("--namespace: %w", err)
	}
	c.Rules = r
	return nil
}

// checkNamespaceNames resolves cfg's namespace names once, to refuse an
// unknown one at start (exit status 2) rather than fail every pass; each
// pass resolves them again (Begin), as a namespace may be registered
// again under its name with another id.
func checkNamespaceNames(ctx context.Context, db store.NamespaceLister, cfg scavenger.Config) error {
	return resolveNamespaces(ctx, db, &cfg)
}
