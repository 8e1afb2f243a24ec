//go:build !tqs_notemporal

package cli

// tqscavenger schedule create|update|describe|trigger|delete: the Temporal
// Schedule that starts the pass workflow, so that no cron is needed.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/tqscavenger/tqscavenger/temporalworker"
)

// notScheduled are run's flags that a scheduled pass does not carry (its
// description, temporalworker.PassDescription, has no field for them),
// with what to do instead. Given to schedule create or update they are an
// error rather than dropped; they are hidden from its help.
var notScheduled = map[string]string{
	"now":               "each pass uses its worker's clock",
	"partition":         "a scheduled pass covers the whole space: --partitions N runs it as N partition activities",
	"statement-timeout": "give it to `tqscavenger worker`: each worker's connection pool has its own",
	"max-conns":         "give it to `tqscavenger worker`: each worker's connection pool has its own",
	"max-deferred":      "a scheduled pass uses the default",
	"slow-statement":    "a scheduled pass uses the default",
	"retry-for":         "a scheduled pass uses the default retry budget",
	"retry-initial":     "a scheduled pass uses the default retry budget",
	"retry-max":         "a scheduled pass uses the default retry budget",
	"yield-to-load":     "a scheduled pass does not carry it (the gentle pace it asked for is the default)",
	"yield-factor":      "a scheduled pass does not carry it",
}

// scheduleWriteFlags are create's and update's: the pass is described by
// the same flags as run's, the database's identity read from the database
// the connection flags name (or given with --database-identity, for an
// operator without access to it).
func scheduleWriteFlags(sub string) func(g *flagGroups) runFunc {
	return func(g *flagGroups) runFunc {
		var sf scavengeFlags
		var cf connFlags
		var lf logFlags
		var tf temporalFlags
		var spec temporalworker.ScheduleSpec
		var identity string
		var replace bool
		var partitions, attempts int
		var hbTimeout, partTimeout, cpEvery time.Duration
		cf.register(g.Conn)
		tf.register(g.Temporal)
		sf.register(g)
		s := g.Schedule
		s.StringVar(&spec.ID, "schedule-id", temporalworker.DefaultScheduleID, "the schedule's id (its passes' workflow ids start with it)")
		durationVar(s, &spec.Every, "every", temporalworker.DefaultEvery, "interval between passes")
		durationVar(s, &spec.Jitter, "jitter", temporalworker.DefaultJitter, "each start is delayed by a random time up to this")
		s.BoolVar(&spec.Paused, "paused", false, "create the schedule paused")
		s.StringVar(&identity, "database-identity", "", "the identity of the database the passes are for, as `tqscavenger worker` logs it (default: read from the database the connection flags name)")
		s.IntVar(&partitions, "partitions", 1, "N: each pass runs as N partition activities in parallel, over the workers")
		durationVar(s, &hbTimeout, "heartbeat-timeout", temporalworker.DefaultHeartbeatTimeout, "a partition activity silent this long is retried (from its last heartbeat)")
		durationVar(s, &partTimeout, "partition-timeout", temporalworker.DefaultPartitionTimeout, "bound on one attempt of a partition activity")
		s.IntVar(&attempts, "max-attempts", temporalworker.DefaultMaxAttempts, "attempts of a partition activity before the pass fails")
		durationVar(s, &cpEvery, "checkpoint-interval", 0, "how often at most a partition activity heartbeats its position while it advances (default "+shortDuration(defaults.CheckpointInterval)+")")
		if sub == "update" {
			s.BoolVar(&replace, "replace", false, "take the whole new description: every setting not given falls back to its default (without it, only the settings given change)")
		}
		lf.register(g.Output)
		configFlag(g.Other)
		for name := range notScheduled {
			if f := g.Pace.Lookup(name); f != nil {
				f.Hidden = true
			} else if f := g.Scope.Lookup(name); f != nil {
				f.Hidden = true
			}
		}
		return func(ctx context.Context, inv *invocation) error {
			for name, instead := range notScheduled {
				if o := inv.origins[name]; o.layer != fromDefault {
					return usagef("%s has no place in a schedule: %s", o.name, instead)
				}
			}
			if err := tf.check(inv.origins); err != nil {
				return err
			}
			cfg, err := sf.config()
			if err != nil {
				return err
			}
			// An update that changes neither keeps the schedule's database.
			merge := sub == "update" && !replace
			connSet := false
			g.Conn.VisitAll(func(f *pflag.Flag) { connSet = connSet || inv.origins[f.Name].layer != fromDefault })
			// A pass description carries namespace ids: names are read
			// from the database now.
			needID := identity == "" && (!merge || connSet)
			if needID || len(cfg.NamespaceNames) > 0 {
				log, err := lf.logger(inv.stderr)
				if err != nil {
					return err
				}
				db, _, err := cf.openChecked(ctx, inv, sf.storeOptions(), func(w string) { log.Warn(w) })
				if err != nil {
					if !needID {
						return fmt.Errorf("%w (a schedule's --namespace names are read from the database; or give the namespaces' ids, UUIDs)", err)
					}
					return fmt.Errorf("%w (or give --database-identity)", err)
				}
				if needID {
					if identity, err = db.Identity(ctx); err != nil {
						err = fmt.Errorf("database identity: %w", err)
					}
				}
				if err == nil {
					err = resolveNamespaces(ctx, db, &cfg)
				}
				db.Close()
				if err != nil {
					return err
				}
			}
			spec.TaskQueue = tf.taskQueue
			spec.Pass = temporalworker.Describe(cfg, time.Time{}, partitions, identity)
			spec.Pass.HeartbeatTimeout, spec.Pass.PartitionTimeout, spec.Pass.MaxAttempts = hbTimeout, partTimeout, attempts
			spec.Pass.CheckpointInterval = cpEvery
			if !merge {
				if err := spec.Pass.Validate(); err != nil {
					return usageError{err}
				}
			}
			c, err := tf.dial(ctx, inv.env, &lf)
			if err != nil {
				return err
			}
			defer c.Close()
			var changed []string
			switch {
			case sub == "create":
				err = temporalworker.CreateSchedule(ctx, c, spec)
			case replace:
				err = temporalworker.UpdateSchedule(ctx, c, spec)
			default:
				set := func(name string) bool { return inv.origins[name].layer != fromDefault }
				given := spec
				err = temporalworker.ModifySchedule(ctx, c, spec.ID, func(old temporalworker.ScheduleSpec) (temporalworker.ScheduleSpec, error) {
					spec, changed = mergeSchedule(old, given, set)
					return spec, nil
				})
			}
			if err != nil {
				if errors.Is(err, temporalworker.ErrBadDescription) {
					return usageError{err}
				}
				return err
			}
			verb := sub + "d"
			if merge {
				verb = "updated (" + strings.Join(changed, ", ") + " changed; the rest kept from the schedule)"
				if len(changed) == 0 {
					verb = "updated (nothing changed: no setting given)"
				}
			} else if replace {
				verb = "replaced"
			}
			fmt.Fprintf(inv.stdout, "schedule %s %s: a pass of %d partition(s) every %s (jitter %s, overlap skip) on task queue %s, for database %s\n",
				spec.ID, verb, spec.Pass.Partitions, shortDuration(spec.Every), shortDuration(spec.Jitter), spec.TaskQueue, spec.Pass.DatabaseIdentity)
			return nil
		}
	}
}

// scheduleSettings are the settings of a schedule and its pass that
// schedule update changes when a layer sets their flag (command line,
// environment or config file: what `config` shows with a source other than
// default), each copying its field from the new spec to the old one.
var scheduleSettings = map[string]func(dst *temporalworker.ScheduleSpec, src temporalworker.ScheduleSpec){
	"every":               func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) { d.Every = s.Every },
	"jitter":              func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) { d.Jitter = s.Jitter },
	"temporal-task-queue": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) { d.TaskQueue = s.TaskQueue },
	"database-identity": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.DatabaseIdentity = s.Pass.DatabaseIdentity
	},
	"partitions": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.Partitions = s.Pass.Partitions
	},
	"heartbeat-timeout": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.HeartbeatTimeout = s.Pass.HeartbeatTimeout
	},
	"partition-timeout": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.PartitionTimeout = s.Pass.PartitionTimeout
	},
	"max-attempts": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.MaxAttempts = s.Pass.MaxAttempts
	},
	"checkpoint-interval": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.CheckpointInterval = s.Pass.CheckpointInterval
	},
	"compat":  func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) { d.Pass.Compat = s.Pass.Compat },
	"dry-run": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) { d.Pass.DryRun = s.Pass.DryRun },
	"grace":   func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) { d.Pass.Grace = s.Pass.Grace },
	"unsafe-short-grace": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.UnsafeShortGrace = s.Pass.UnsafeShortGrace
	},
	"tables": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) { d.Pass.Tables = s.Pass.Tables },
	"namespace": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.Namespaces = s.Pass.Namespaces
	},
	"queue": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.QueueGlob = s.Pass.QueueGlob
	},
	"protect": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.ProtectedPrefixes = s.Pass.ProtectedPrefixes
	},
	"past-live-head": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.PastLiveHead = s.Pass.PastLiveHead
	},
	"below-ack-level": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.BelowAckLevel = s.Pass.BelowAckLevel
	},
	"closed-workflows": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.ClosedWorkflows = s.Pass.ClosedWorkflows
	},
	"closed-global": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.ClosedWorkflowsGlobal = s.Pass.ClosedWorkflowsGlobal
	},
	"closed-cluster": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.ClusterName = s.Pass.ClusterName
	},
	"orphans": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) { d.Pass.Orphans = s.Pass.Orphans },
	"workers": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) { d.Pass.Workers = s.Pass.Workers },
	"list-page-size": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.ListPageSize = s.Pass.ListPageSize
	},
	"task-batch-size": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.TaskBatchSize = s.Pass.TaskBatchSize
	},
	"tasks-per-job": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.TasksPerJob = s.Pass.TasksPerJob
	},
	"max-deletes-per-second": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.MaxDeletesPerSecond = s.Pass.MaxDeletesPerSecond
	},
	"max-statements-per-second": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) {
		d.Pass.MaxStatementsPerSecond = s.Pass.MaxStatementsPerSecond
	},
	"pace": func(d *temporalworker.ScheduleSpec, s temporalworker.ScheduleSpec) { d.Pass.Pace = s.Pass.Pace },
}

// mergeSchedule returns old with the settings whose flag is set (set)
// taken from new, and the names of those settings, sorted. A database
// identity read from the database the connection flags name counts as
// set.
func mergeSchedule(old, new temporalworker.ScheduleSpec, set func(flag string) bool) (temporalworker.ScheduleSpec, []string) {
	out := old
	out.Pass.Namespaces = slices.Clone(old.Pass.Namespaces)
	var changed []string
	for _, name := range slices.Sorted(maps.Keys(scheduleSettings)) {
		isSet := set(name)
		if name == "database-identity" {
			isSet = new.Pass.DatabaseIdentity != "" && new.Pass.DatabaseIdentity != old.Pass.DatabaseIdentity
		}
		if isSet {
			scheduleSettings[name](&out, new)
			changed = append(changed, name)
		}
	}
	return out, changed
}

// scheduleByIDFlags are describe's, trigger's and delete's: the schedule
// is named by its id alone.
func scheduleByIDFlags(sub string) func(g *flagGroups) runFunc {
	return func(g *flagGroups) runFunc {
		var lf logFlags
		var tf temporalFlags
		var id, output string
		tf.register(g.Temporal)
		g.Schedule.StringVar(&id, "schedule-id", temporalworker.DefaultScheduleID, "the schedule's id")
		lf.register(g.Output)
		if sub == "describe" {
			outputFlag(g.Output, &output, "text or json (the schedule's state as one JSON document)")
		}
		return func(ctx context.Context, inv *invocation) error {
			if err := tf.check(inv.origins); err != nil {
				return err
			}
			if sub == "describe" {
				if err := checkOutput(output); err != nil {
					return err
				}
			}
			c, err := tf.dial(ctx, inv.env, &lf)
			if err != nil {
				return err
			}
			defer c.Close()
			return scheduleByID(ctx, inv.env, c, sub, id, output)
		}
	}
}

// scheduleByID runs describe, trigger or delete (sub) on the schedule id.
func scheduleByID(ctx context.Context, e *env, c client.Client, sub, id, output string) error {
	switch sub {
	case "describe":
		st, err := temporalworker.DescribeSchedule(ctx, c, id)
		if err != nil {
			return err
		}
		if output == "json" {
			return writeJSON(e.stdout, st)
		}
		writeSchedule(e.stdout, st)
		return nil
	case "trigger":
		if err := temporalworker.TriggerSchedule(ctx, c, id); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "schedule %s triggered\n", id)
		return nil
	}
	if err := temporalworker.DeleteSchedule(ctx, c, id); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "schedule %s deleted\n", id)
	return nil
}

// writeSchedule writes describe's text: the schedule, its state and its
// next and recent starts.
func writeSchedule(w io.Writer, st temporalworker.ScheduleState) {
	var every []string
	for _, d := range st.Every {
		every = append(every, shortDuration(d))
	}
	fmt.Fprintf(w, "schedule %s: every %s (jitter %s), overlap %s, paused %t\n", st.ID, strings.Join(every, ", "), shortDuration(st.Jitter), st.Overlap, st.Paused)
	fmt.Fprintf(w, "workflow %s on task queue %s\n", st.Workflow, st.TaskQueue)
	fmt.Fprintf(w, "actions: %d (%d skipped: a pass was running)\n", st.Actions, st.SkippedOverlap)
	for _, r := range st.Running {
		fmt.Fprintf(w, "running: %s\n", r)
	}
	for _, r := range st.Recent {
		fmt.Fprintf(w, "recent: %s started %s (%s)\n", r.WorkflowID, r.Started.UTC().Format(time.RFC3339), r.RunID)
	}
	for _, t := range st.Next {
		fmt.Fprintf(w, "next: %s\n", t.UTC().Format(time.RFC3339))
	}
}
