//go:build !tqs_notemporal

package cli

// tqscavenger schedule create|update|describe|trigger|delete: the Temporal
// Schedule that starts the pass workflow, so that no cron is needed.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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
	"yield-to-load":     "a scheduled pass does not carry it",
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
			if err := tf.check(); err != nil {
				return err
			}
			cfg, err := sf.config()
			if err != nil {
				return err
			}
			if identity == "" {
				log, err := lf.logger(inv.stderr)
				if err != nil {
					return err
				}
				db, _, err := cf.openChecked(ctx, inv, sf.storeOptions(), func(w string) { log.Warn(w) })
				if err != nil {
					return fmt.Errorf("%w (or give --database-identity)", err)
				}
				identity, err = db.Identity(ctx)
				db.Close()
				if err != nil {
					return fmt.Errorf("database identity: %w", err)
				}
			}
			spec.TaskQueue = tf.taskQueue
			spec.Pass = temporalworker.Describe(cfg, time.Time{}, partitions, identity)
			spec.Pass.HeartbeatTimeout, spec.Pass.PartitionTimeout, spec.Pass.MaxAttempts = hbTimeout, partTimeout, attempts
			spec.Pass.CheckpointInterval = cpEvery
			if err := spec.Pass.Validate(); err != nil {
				return usageError{err}
			}
			c, err := tf.dial(ctx, inv.env, &lf)
			if err != nil {
				return err
			}
			defer c.Close()
			if sub == "create" {
				err = temporalworker.CreateSchedule(ctx, c, spec)
			} else {
				err = temporalworker.UpdateSchedule(ctx, c, spec)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(inv.stdout, "schedule %s %sd: a pass of %d partition(s) every %s (jitter %s, overlap skip) on task queue %s, for database %s\n",
				spec.ID, sub, partitions, shortDuration(spec.Every), shortDuration(spec.Jitter), spec.TaskQueue, identity)
			return nil
		}
	}
}

// scheduleByIDFlags are describe's, trigger's and delete's: the schedule
// is named by its id alone.
func scheduleByIDFlags(sub string) func(g *flagGroups) runFunc {
	return func(g *flagGroups) runFunc {
		var lf logFlags
		var tf temporalFlags
		var id string
		tf.register(g.Temporal)
		g.Schedule.StringVar(&id, "schedule-id", temporalworker.DefaultScheduleID, "the schedule's id")
		lf.register(g.Output)
		return func(ctx context.Context, inv *invocation) error {
			if err := tf.check(); err != nil {
				return err
			}
			c, err := tf.dial(ctx, inv.env, &lf)
			if err != nil {
				return err
			}
			defer c.Close()
			return scheduleByID(ctx, inv.env, c, sub, id)
		}
	}
}

// scheduleByID runs describe, trigger or delete (sub) on the schedule id.
func scheduleByID(ctx context.Context, e *env, c client.Client, sub, id string) error {
	switch sub {
	case "describe":
		st, err := temporalworker.DescribeSchedule(ctx, c, id)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
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
