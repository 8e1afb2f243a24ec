package cli

// The flags of the closed-workflow rule (scavenger.Rules.ClosedWorkflows),
// on every command that runs or describes a pass.

import (
	"strconv"

	"github.com/spf13/pflag"

	"github.com/tqscavenger/tqscavenger/report"
	"github.com/tqscavenger/tqscavenger/scavenger"
)

// closedFlags are the closed-workflow rule's flags.
type closedFlags struct {
	on, global, deleted bool
	cluster             string
}

func (f *closedFlags) register(s *pflag.FlagSet) {
	s.BoolVar(&f.on, "closed-workflows", false, "also delete tasks whose own run is found closed (its executions row COMPLETED), anywhere in a queue; a run not found keeps its tasks (counted as run_not_found); reads Temporal's executions, cluster_metadata_info and namespaces tables (not with --compat=temporal)")
	s.BoolVar(&f.deleted, "closed-deleted-runs", false, "with --closed-workflows: also delete the tasks of runs missing from executions (deleted by retention) once the task is older than the namespace's retention + "+shortDuration(scavenger.RunDeletedMargin)+"; each pass first proves the history shard count ("+strconv.Itoa(scavenger.MinProofWorkflows)+" workflows found where it puts them) and refuses to run (exit 2) if it fails; with fewer workflows, a miss counts only where the workflow's current row points at another run; also reads current_executions and shards")
	s.BoolVar(&f.global, "closed-global", false, "with --closed-workflows: global (multi-cluster) namespaces too, where conflict resolution can rebuild a closed run (default: their tasks are kept)")
	s.StringVar(&f.cluster, "closed-cluster", "", "with --closed-workflows: the name of the current cluster's cluster_metadata_info row (default: its only row)")
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
