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
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/temporalworker"
)

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
		carried(s, "every", "Every")
		durationVar(s, &spec.Jitter, "jitter", temporalworker.DefaultJitter, "each start is delayed by a random time up to this")
		carried(s, "jitter", "Jitter")
		s.BoolVar(&spec.Paused, "paused", false, "create the schedule paused")
		s.StringVar(&identity, "database-identity", "", "the identity of the database the passes are for, as `tqscavenger worker` logs it (default: read from the database the connection flags name)")
		carried(s, "database-identity", "Pass.DatabaseIdentity")
		s.IntVar(&partitions, "partitions", 1, "N: each pass runs as N partition activities in parallel, over the workers")
		capFlag(s, "partitions", scavenger.MaxWorkers)
		carried(s, "partitions", "Pass.Partitions")
		durationVar(s, &hbTimeout, "heartbeat-timeout", temporalworker.DefaultHeartbeatTimeout, "a partition activity silent this long is retried (from its last heartbeat)")
		carried(s, "heartbeat-timeout", "Pass.HeartbeatTimeout")
		durationVar(s, &partTimeout, "partition-timeout", temporalworker.DefaultPartitionTimeout, "bound on one attempt of a partition activity")
		carried(s, "partition-timeout", "Pass.PartitionTimeout")
		s.IntVar(&attempts, "max-attempts", temporalworker.DefaultMaxAttempts, "attempts of a partition activity before the pass fails")
		carried(s, "max-attempts", "Pass.MaxAttempts")
		durationVar(s, &cpEvery, "checkpoint-interval", 0, "how often at most a partition activity heartbeats its position while it advances (default "+shortDuration(defaults.CheckpointInterval)+")")
		carried(s, "checkpoint-interval", "Pass.CheckpointInterval")
		if sub == "update" {
			s.BoolVar(&replace, "replace", false, "take the whole new description: every setting not given falls back to its default (without it, only the settings given change)")
		}
		lf.register(g.Output)
		configFlag(g.Other)
		// A pass setting a schedule does not carry is hidden from help,
		// and refused when given rather than dropped.
		for _, set := range []*pflag.FlagSet{g.Scope, g.Pace} {
			set.VisitAll(func(f *pflag.Flag) {
				if annotation(f, notScheduledKey) != "" {
					f.Hidden = true
				}
			})
		}
		return func(ctx context.Context, inv *invocation) error {
			var refused error
			inv.fs.VisitAll(func(f *pflag.Flag) {
				if instead := annotation(f, notScheduledKey); instead != "" && refused == nil {
					if o := inv.origins[f.Name]; o.layer != fromDefault {
						refused = usagef("%s has no place in a schedule: %s", o.name, instead)
					}
				}
			})
			if refused != nil {
				return refused
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
			c, err := tf.dial(ctx, inv.env, &lf, nil)
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
					spec, changed = mergeSchedule(old, given, scheduleSettings(inv.fs), set)
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

// scheduleSettings returns the settings of a schedule and its pass that
// schedule update changes when a layer sets their flag (command line,
// environment or config file: what `config` shows with a source other than
// default): each flag's field of temporalworker.ScheduleSpec, as a path
// of field names (a field of the pass's embedded scavenger.Rules by its
// own name), copied from the new spec to the old one by copySetting. A
// pass setting's path is its row's (passSettings); a schedule's own flags
// state theirs with carried, where they are registered.
func scheduleSettings(fs *pflag.FlagSet) map[string]string {
	out := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		if p := annotation(f, scheduleKey); p != "" {
			out[f.Name] = p
		}
	})
	return out
}

// copySetting copies the field at path (a value of scheduleSettings)
// from src to dst. A path that names no field panics:
// TestScheduleSettingsNameFields checks every one.
func copySetting(dst *temporalworker.ScheduleSpec, src temporalworker.ScheduleSpec, path string) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src)
	for _, name := range strings.Split(path, ".") {
		d, s = d.FieldByName(name), s.FieldByName(name)
	}
	d.Set(s)
}

// mergeSchedule returns old with the settings whose flag is set (set)
// taken from new, and the names of those settings, sorted. A database
// identity read from the database the connection flags name counts as
// set.
func mergeSchedule(old, new temporalworker.ScheduleSpec, paths map[string]string, set func(flag string) bool) (temporalworker.ScheduleSpec, []string) {
	out := old
	out.Pass.Namespaces = slices.Clone(old.Pass.Namespaces)
	var changed []string
	for _, name := range slices.Sorted(maps.Keys(paths)) {
		isSet := set(name)
		if name == "database-identity" {
			isSet = new.Pass.DatabaseIdentity != "" && new.Pass.DatabaseIdentity != old.Pass.DatabaseIdentity
		}
		if isSet {
			copySetting(&out, new, paths[name])
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
		// The Temporal connection, as create and update read it from
		// serve's or the worker's file.
		configFlag(g.Other)
		return func(ctx context.Context, inv *invocation) error {
			if err := tf.check(inv.origins); err != nil {
				return err
			}
			if sub == "describe" {
				if err := checkOutput(output); err != nil {
					return err
				}
			}
			c, err := tf.dial(ctx, inv.env, &lf, nil)
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
