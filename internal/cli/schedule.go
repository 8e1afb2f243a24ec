//go:build !tqs_notemporal

package cli

// tqscavenger schedule create|update|describe|trigger|delete: the Temporal
// Schedule that starts the pass workflow, so that no cron is needed.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/tqscavenger/tqscavenger/temporalworker"
)

const scheduleUsage = "create|update|describe|trigger|delete [flags]"

func scheduleCmd(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(e.stderr, "Usage: tqscavenger schedule %s\n\n"+
			"  create    install a Temporal Schedule that starts a pass every --every (default %s), overlap policy skip\n"+
			"  update    replace its interval, jitter and pass\n"+
			"  describe  print it, its next and recent starts (JSON)\n"+
			"  trigger   start a pass now (skipped if one runs)\n"+
			"  delete    remove it (running passes go on)\n\n"+
			"Each takes -h for its flags.\n", scheduleUsage, temporalworker.DefaultEvery)
		if len(args) == 0 {
			return usagef("schedule: which subcommand?")
		}
		return flag.ErrHelp
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "create", "update":
		return scheduleWrite(ctx, e, sub, args)
	case "describe", "trigger", "delete":
		return scheduleByID(ctx, e, sub, args)
	}
	return usagef("schedule %q: use %s", sub, scheduleUsage)
}

// scheduleWrite is create and update: the pass is described by the same
// flags as run's, the database's identity read from the database the
// connection flags name (or given with --database-identity, for an
// operator without access to it).
func scheduleWrite(ctx context.Context, e *env, sub string, args []string) error {
	fs := newFlags(e, "schedule "+sub, "[--db DSN | --database-identity ID] [flags]")
	var sf scavengeFlags
	var cf connFlags
	var lf logFlags
	var tf temporalFlags
	var spec temporalworker.ScheduleSpec
	var identity string
	var partitions int
	var hbTimeout, partTimeout time.Duration
	var attempts int
	sf.register(fs)
	cf.register(fs)
	lf.register(fs)
	tf.register(fs)
	configFlag(fs)
	fs.StringVar(&spec.ID, "schedule-id", temporalworker.DefaultScheduleID, "the schedule's id (its passes' workflow ids start with it)")
	fs.DurationVar(&spec.Every, "every", temporalworker.DefaultEvery, "interval between passes")
	fs.DurationVar(&spec.Jitter, "jitter", temporalworker.DefaultJitter, "each start is delayed by a random time up to this")
	fs.BoolVar(&spec.Paused, "paused", false, "create the schedule paused")
	fs.StringVar(&identity, "database-identity", "", "the identity of the database the passes are for, as `tqscavenger worker` logs it (default: read from the database the connection flags name)")
	fs.IntVar(&partitions, "partitions", 1, "N: each pass runs as N partition activities in parallel, over the workers")
	fs.DurationVar(&hbTimeout, "heartbeat-timeout", temporalworker.DefaultHeartbeatTimeout, "a partition activity silent this long is retried (from its last heartbeat)")
	fs.DurationVar(&partTimeout, "partition-timeout", temporalworker.DefaultPartitionTimeout, "bound on one attempt of a partition activity")
	fs.IntVar(&attempts, "max-attempts", temporalworker.DefaultMaxAttempts, "attempts of a partition activity before the pass fails")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := tf.fromEnv(fs); err != nil {
		return err
	}
	cfg, err := sf.config()
	if err != nil {
		return err
	}
	var now time.Time
	if cfg.Now != nil {
		// A pinned clock in a schedule would pin every pass: refuse it.
		return usagef("--now has no place in a schedule: each pass uses its worker's clock")
	}
	if identity == "" {
		log, err := lf.logger(e.stderr)
		if err != nil {
			return err
		}
		db, _, err := cf.openChecked(ctx, fs, args, sf.storeOptions(), func(w string) { log.Warn(w) })
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
	spec.Pass = temporalworker.Describe(cfg, now, partitions, identity)
	spec.Pass.HeartbeatTimeout, spec.Pass.PartitionTimeout, spec.Pass.MaxAttempts = hbTimeout, partTimeout, attempts
	if err := spec.Pass.Validate(); err != nil {
		return usageError{err}
	}
	c, err := tf.dial(ctx, e, lf)
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
	fmt.Fprintf(e.stdout, "schedule %s %sd: a pass of %d partition(s) every %s (jitter %s, overlap skip) on task queue %s, for database %s\n",
		spec.ID, sub, partitions, spec.Every, spec.Jitter, spec.TaskQueue, identity)
	return nil
}

func scheduleByID(ctx context.Context, e *env, sub string, args []string) error {
	fs := newFlags(e, "schedule "+sub, "[--schedule-id ID] [flags]")
	var lf logFlags
	var tf temporalFlags
	var id string
	lf.register(fs)
	tf.register(fs)
	fs.StringVar(&id, "schedule-id", temporalworker.DefaultScheduleID, "the schedule's id")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := tf.fromEnv(fs); err != nil {
		return err
	}
	c, err := tf.dial(ctx, e, lf)
	if err != nil {
		return err
	}
	defer c.Close()
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
