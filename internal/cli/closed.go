package cli

// The flags of the closed-workflow rule (scavenger.Rules.ClosedWorkflows),
// on every command that runs or describes a pass.

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/tqscavenger/tqscavenger/report"
	"github.com/tqscavenger/tqscavenger/scavenger"
)

// closedFlags are the closed-workflow rule's flags (their rows are in
// passSettings).
type closedFlags struct {
	on, global, deleted bool
	cluster             string
}

// registerClosed registers on fs the rule's flags alone (their rows of
// passSettings), bound to f.closed: report's dry run of the rule.
func (f *scavengeFlags) registerClosed(fs *pflag.FlagSet) {
	for _, s := range passSettings {
		if strings.HasPrefix(s.flag, "closed-") {
			s.register(fs, f)
		}
	}
}

// apply sets the rule in r.
func (f *closedFlags) apply(r *scavenger.Rules) error {
	if (f.global || f.deleted || f.cluster != "") && !f.on {
		return usagef("--closed-global, --closed-deleted-runs and --closed-cluster go with --closed-workflows")
	}
	if f.on && r.Compat == scavenger.CompatTemporal {
		return usagef("--closed-workflows is tqscavenger's rule: leave out --compat=temporal to use it")
	}
	r.ClosedWorkflows, r.ClosedWorkflowsGlobal, r.ClosedDeletedRuns, r.ClusterName = f.on, f.global, f.deleted, f.cluster
	return nil
}

// report sets the rule's dry run in report's options.
func (f *closedFlags) report(o *report.Options) error {
	if (f.global || f.deleted || f.cluster != "") && !f.on {
		return usagef("--closed-global, --closed-deleted-runs and --closed-cluster go with --closed-workflows")
	}
	o.ClosedWorkflows, o.ClosedCluster, o.ClosedGlobal, o.ClosedDeletedRuns = f.on, f.cluster, f.global, f.deleted
	return nil
}
