package cli

import (
	"reflect"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// TestFlagsMakeRules: the flags of what to delete and of the scope make
// one scavenger.Rules value (scavengeFlags.rules), field for field, and
// the pass's Config carries exactly that value: run, serve and a
// schedule's description take their rules from this one place.
func TestFlagsMakeRules(t *testing.T) {
	ns := "6f1b1d2e-3c4a-4b5c-8d6e-7f8091a2b3c4"
	id, err := wire.ParseNamespaceID(ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want scavenger.Rules
	}{
		{nil, scavenger.Rules{Orphans: scavenger.OrphansExpired}},
		{[]string{"--compat=temporal", "--grace", "72h", "--dry-run", "--tables", "v1"},
			scavenger.Rules{Compat: scavenger.CompatTemporal, Grace: 72 * time.Hour, DryRun: true, Orphans: scavenger.OrphansExpired, Tables: []store.Table{store.V1}}},
		{[]string{"--protect", "a-", "--protect", "b-"}, scavenger.Rules{Orphans: scavenger.OrphansExpired, ProtectedPrefixes: []string{"a-", "b-"}}},
		{[]string{"--protect", "none"}, scavenger.Rules{Orphans: scavenger.OrphansExpired, ProtectedPrefixes: []string{}}},
		{[]string{"--past-live-head", "--below-ack-level", "--orphans", "all", "--tables", "v2", "--queue", "orders-*",
			"--namespace", ns, "--namespace", "billing", "--grace", "1h", "--unsafe-short-grace"},
			scavenger.Rules{PastLiveHead: true, BelowAckLevel: true, Orphans: scavenger.OrphansAll, Tables: []store.Table{store.V2}, QueueGlob: "orders-*",
				Namespaces: []wire.NamespaceID{id}, NamespaceNames: []string{"billing"}, Grace: time.Hour, UnsafeShortGrace: true}},
		{[]string{"--orphans", "none", "--closed-workflows", "--closed-global", "--closed-cluster", "active"},
			scavenger.Rules{Orphans: scavenger.OrphansNone, ClosedWorkflows: true, ClosedWorkflowsGlobal: true, ClusterName: "active"}},
	} {
		var f scavengeFlags
		fs := newFlagSet("run")
		g := newFlagGroups(fs)
		f.register(g)
		g.done()
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		r, err := f.rules()
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if !reflect.DeepEqual(r, tc.want) {
			t.Errorf("%v: rules\n%+v, want\n%+v", tc.args, r, tc.want)
		}
		c, err := f.config()
		if err != nil {
			t.Fatalf("%v: config: %v", tc.args, err)
		}
		if !reflect.DeepEqual(c.Rules, r) {
			t.Errorf("%v: the pass's rules\n%+v, want the flags'\n%+v", tc.args, c.Rules, r)
		}
	}
}
