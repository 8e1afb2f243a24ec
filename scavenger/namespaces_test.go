package scavenger_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

var (
	nsOrders  = mustNS("7c1a9e06-0f3b-4d2e-9a55-1b2c3d4e5f60")
	nsBilling = mustNS("0b8d2c1e-3a4f-4e5d-8c6b-7a8f9e0d1c2b")
)

func mustNS(s string) wire.NamespaceID {
	id, err := wire.ParseNamespaceID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// seedNamespaces writes 4 idle queues (half their tasks expired) in each
// of two namespaces, and Temporal's namespaces table: "orders", and the
// other namespace deleted (Temporal renames its row to
// "<name>-deleted-<id prefix>" before it removes it).
func seedNamespaces(t *testing.T, db *sqlstore.DB) {
	t.Helper()
	for _, ns := range []wire.NamespaceID{nsOrders, nsBilling} {
		if _, err := seed.Write(context.Background(), db, seed.Spec{Namespace: ns, Queues: 4, TasksPerQueue: 10, Expired: 0.5, IdleAge: 72 * time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	testdb.CreateHistoryTables(t, db)
	testdb.InsertNamespace(t, db, nsOrders, "orders", 72*time.Hour, false)
	testdb.InsertNamespace(t, db, nsBilling, "billing-deleted-0b8d2", 72*time.Hour, false)
}

// TestBeginResolvesNamespaces: on every engine, Begin turns a namespace
// name into its id through the namespaces table, once, before the pass:
// the pass covers that namespace's queues only, and its settings digest
// (a checkpoint's) is that of the pass given the id. A name that is not
// in the table, such as a deleted namespace's old name, fails the
// namespace step, naming the names present.
func TestBeginResolvesNamespaces(t *testing.T) {
	ctx := context.Background()
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			seedNamespaces(t, db)
			cfg := scavenger.Config{Rules: scavenger.Rules{DryRun: true, NamespaceNames: []string{"orders"}}}
			p, err := scavenger.Begin(ctx, db, cfg, scavenger.PassOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := p.Config()
			if !slices.Equal(got.Namespaces, []wire.NamespaceID{nsOrders}) || got.NamespaceNames != nil {
				t.Errorf("resolved: namespaces %v, names %q; want [%s] and none", got.Namespaces, got.NamespaceNames, nsOrders)
			}
			byID := scavenger.Config{Rules: scavenger.Rules{DryRun: true, Namespaces: []wire.NamespaceID{nsOrders}, Tables: got.Tables}}
			if scavenger.SettingsDigest(got) != scavenger.SettingsDigest(byID) {
				t.Error("the settings digest of a pass given a name differs from the pass given its id")
			}
			st, err := p.Run(ctx)
			p.Close()
			if err != nil {
				t.Fatal(err)
			}
			if st.QueuesProcessed != 4 || st.WouldDeleteTasks != 20 {
				t.Errorf("pass over orders: %d queues, would delete %d tasks; want 4 and 20 (the other namespace's untouched)", st.QueuesProcessed, st.WouldDeleteTasks)
			}

			cfg.NamespaceNames = []string{"orders", "billing"}
			_, err = scavenger.Begin(ctx, db, cfg, scavenger.PassOptions{})
			if !errors.Is(err, scavenger.ErrUnknownNamespace) || setupStep(err) != scavenger.StepNamespaces {
				t.Fatalf("a deleted namespace's old name: err = %v (step %q), want ErrUnknownNamespace at %q", err, setupStep(err), scavenger.StepNamespaces)
			}
			if msg := err.Error(); !strings.Contains(msg, `"billing"`) || !strings.Contains(msg, "billing-deleted-0b8d2, orders") || strings.Contains(msg, "did you mean") {
				t.Errorf("error %q does not name the name and list the names present (with no suggestion)", msg)
			}
			// A typo gets the name it likely meant (issue 42's finding 8).
			cfg.NamespaceNames = []string{"ordres"}
			if _, err = scavenger.Begin(ctx, db, cfg, scavenger.PassOptions{}); err == nil || !strings.Contains(err.Error(), `"ordres" (did you mean "orders"?)`) {
				t.Errorf("a typo: err = %v, want a did-you-mean of orders", err)
			}
		})
	}
}

// TestNamespaceNamesNeedResolving: a Scavenger made by New refuses names
// it was not given ids for; left out, they would widen the pass to every
// namespace. A store without a namespaces table refuses names, and says
// to give ids.
func TestNamespaceNamesNeedResolving(t *testing.T) {
	ctx := context.Background()
	db := testdb.Open(t, sqlstore.SQLite)
	if _, err := seed.Write(ctx, db, seed.Spec{Queues: 2, TasksPerQueue: 4, Expired: 1, IdleAge: 72 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	cfg := scavenger.Config{Rules: scavenger.Rules{NamespaceNames: []string{"default"}}}
	st, err := scavenger.New(db, cfg).Run(ctx)
	if !errors.Is(err, scavenger.ErrUnresolvedNamespaces) || st.TasksDeleted != 0 {
		t.Fatalf("New with names: err = %v, %d tasks deleted; want ErrUnresolvedNamespaces and none", err, st.TasksDeleted)
	}
	_, err = scavenger.Begin(ctx, db, cfg, scavenger.PassOptions{})
	if !errors.Is(err, store.ErrNoNamespaceTable) || !strings.Contains(err.Error(), "UUID") {
		t.Fatalf("no namespaces table: err = %v, want ErrNoNamespaceTable and a hint to give the id", err)
	}
}
