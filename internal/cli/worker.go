//go:build !tqs_notemporal

package cli

// tqscavenger worker: a Temporal worker that runs the pass workflow and
// its partition activities (package temporalworker) against the database
// its own connection flags name; and the Temporal client flags it shares
// with `tqscavenger schedule`.

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/tqscavenger/tqscavenger/internal/readfile"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/temporalworker"
)

// temporalFlags are the Temporal client's flags, prefixed --temporal- so
// that they stay apart from --namespace (the namespaces a pass is
// limited to) and from the database's --tls-* flags. Besides
// TQSCAVENGER_*, each is read from the temporal CLI's variables
// (temporalEnv).
type temporalFlags struct {
	cfg       temporalworker.ClientConfig
	taskQueue string
	// profile and configFile choose the temporal CLI profile
	// (profile.go); profileName and profileFile are the one applied.
	profile, configFile      string
	profileName, profileFile string
	fs                       *pflag.FlagSet
	// origins are where each setting came from (check), for a failed
	// dial's message (dialError).
	origins map[string]origin
}

func (t *temporalFlags) register(fs *pflag.FlagSet) {
	t.fs = fs
	fs.StringVar(&t.profile, "temporal-profile", "", "the temporal CLI's connection profile to read (TEMPORAL_PROFILE; default \"default\", if the file has it): it fills the --temporal-* settings that no flag, variable or --config key sets")
	fs.StringVar(&t.configFile, "temporal-config-file", "", "the temporal CLI's profiles file, TOML (TEMPORAL_CONFIG_FILE; default the temporal CLI's: temporalio/temporal.toml in the user's config directory, ~/.config on Linux)")
	fs.StringVar(&t.cfg.Address, "temporal-address", temporalworker.DefaultAddress, "Temporal frontend host:port (TEMPORAL_ADDRESS)")
	fs.StringVar(&t.cfg.Namespace, "temporal-namespace", temporalworker.DefaultNamespace, "Temporal namespace of the workflow and schedule (TEMPORAL_NAMESPACE)")
	fs.StringVar(&t.taskQueue, "temporal-task-queue", temporalworker.DefaultTaskQueue, "Temporal task queue the worker polls and the schedule starts passes on")
	carried(fs, "temporal-task-queue", "TaskQueue") // schedule update's: the queue its passes start on
	fs.StringVar(&t.cfg.APIKey, "temporal-api-key", "", "Temporal API key; turns TLS on (TEMPORAL_API_KEY; prefer the environment: it is a secret)")
	fs.BoolVar(&t.cfg.TLS, "temporal-tls", false, "connect to Temporal over TLS (implied by the other --temporal-tls-* flags; TEMPORAL_TLS)")
	fs.StringVar(&t.cfg.CertFile, "temporal-tls-cert-path", "", "Temporal mTLS client certificate (PEM) (TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CERT)")
	fs.StringVar(&t.cfg.KeyFile, "temporal-tls-key-path", "", "Temporal mTLS client key (PEM) (TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_KEY)")
	fs.StringVar(&t.cfg.CAFile, "temporal-tls-ca-path", "", "CA (PEM) the Temporal frontend's certificate must be signed by (default the system's; TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_CA)")
	fs.StringVar(&t.cfg.ServerName, "temporal-tls-server-name", "", "name the Temporal frontend's certificate must hold (TEMPORAL_TLS_SERVER_NAME)")
	fs.BoolVar(&t.cfg.DisableHostVerification, "temporal-tls-disable-host-verification", false, "check the frontend's certificate against the CA but not its name (TEMPORAL_TLS_DISABLE_HOST_VERIFICATION)")
}

// check applies the temporal CLI profile to the settings no layer set
// (o, from layer) and refuses values no Temporal client takes.
func (t *temporalFlags) check(o map[string]origin) error {
	t.origins = o
	if err := t.applyProfile(o); err != nil {
		return err
	}
	if err := checkTemporalAddress(describeOrigin(o, "temporal-address"), t.cfg.Address); err != nil {
		return err
	}
	if err := checkAPIKey(describeOrigin(o, "temporal-api-key"), t.cfg.APIKey); err != nil {
		return err
	}
	// The TLS files are read when the frontend is dialled, bounded
	// (temporalworker.MaxTLSFileBytes); a file that would be refused then
	// is refused now, naming its flag, before the database is opened.
	for _, f := range []struct{ flag, path string }{
		{"temporal-tls-ca-path", t.cfg.CAFile}, {"temporal-tls-cert-path", t.cfg.CertFile}, {"temporal-tls-key-path", t.cfg.KeyFile},
	} {
		if f.path == "" {
			continue
		}
		if err := readfile.Check(f.path, temporalworker.MaxTLSFileBytes); err != nil {
			return usagef("%s %s: name the PEM file", o[f.flag].shown("--"+f.flag), fileError(f.path, err))
		}
	}
	if strings.TrimSpace(t.taskQueue) == "" {
		return usagef("--temporal-task-queue must not be empty")
	}
	return nil
}

// dial connects to the Temporal frontend; metrics, if not nil, is the
// client's SDK metrics handler.
func (t *temporalFlags) dial(ctx context.Context, e *env, lf *logFlags, metrics client.MetricsHandler) (client.Client, error) {
	log, err := lf.logger(e.stderr)
	if err != nil {
		return nil, err
	}
	opts, err := t.cfg.Options(log)
	if err != nil {
		return nil, usageError{err}
	}
	if metrics != nil {
		opts.MetricsHandler = metrics
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, t.dialError(opts.HostPort, err)
	}
	return c, nil
}

// temporalCommands are the commands on Temporal; a build with the
// tqs_notemporal tag leaves them, and the Temporal SDK, out.
func temporalCommands() []command {
	return []command{
		{name: "worker", summary: "run a Temporal worker: passes as workflows, partitions as activities", usage: "--db DSN --temporal-address HOST:PORT [flags]", flags: workerFlags},
		{name: "schedule", summary: "create|update|describe|trigger|delete the Temporal Schedule that starts passes", usage: "create|update|describe|trigger|delete [flags]", subs: []command{
			{name: "create", summary: "install a Temporal Schedule that starts a pass every --every (default " + shortDuration(temporalworker.DefaultEvery) + "), overlap policy skip", usage: "[--db DSN | --database-identity ID] [flags]", flags: scheduleWriteFlags("create")},
			{name: "update", summary: "change the schedule's settings given (flags, environment, config file), keeping the rest; --replace takes the whole new description", usage: "[--db DSN | --database-identity ID] [flags]", flags: scheduleWriteFlags("update")},
			{name: "describe", summary: "print the schedule, its next and recent starts (--output json: as JSON)", usage: "[--schedule-id ID] [flags]", flags: scheduleByIDFlags("describe")},
			{name: "trigger", summary: "start a pass now (skipped if one runs)", usage: "[--schedule-id ID] [flags]", flags: scheduleByIDFlags("trigger")},
			{name: "delete", summary: "remove the schedule (running passes go on)", usage: "[--schedule-id ID] [flags]", flags: scheduleByIDFlags("delete")},
		}},
	}
}

// workerFlags are worker's flags; it returns the worker.
func workerFlags(g *flagGroups) runFunc {
	var cf connFlags
	var lf logFlags
	var tf temporalFlags
	var stmtTO, stopTimeout time.Duration
	var maxConns, maxActivities int
	var listen string
	cf.register(g.Conn)
	tf.register(g.Temporal)
	g.Pace.IntVar(&maxActivities, "max-partitions", 2, "partition activities this worker runs at once")
	capFlag(g.Pace, "max-partitions", scavenger.MaxWorkers)
	durationVar(g.Pace, &stmtTO, "statement-timeout", 0, "bound on each statement; a timed-out statement is retried (default none)")
	g.Pace.IntVar(&maxConns, "max-conns", 0, "connections to PostgreSQL/MySQL, shared by the worker's activities (default "+fmt.Sprint(storeDefaults.MaxConns)+"; SQLite uses one)")
	capFlag(g.Pace, "max-conns", sqlstore.MaxMaxConns)
	zeroMeansDefault(g.Pace, "max-conns")
	durationVar(g.Daemon, &stopTimeout, "shutdown-timeout", 30*time.Second, "on SIGTERM, how long running partitions may go on to a clean stop before their statements are cancelled; they then hand over to another worker from their final heartbeat")
	g.Daemon.StringVar(&listen, "listen", "", `address for the worker's /metrics (the partition activity's counters: tqscavenger_partitions_resumed_total, tqscavenger_checkpoints_refused_total) and /healthz (default "": none)`)
	lf.register(g.Output)
	configFlag(g.Other)
	return func(ctx context.Context, inv *invocation) error {
		if err := tf.check(inv.origins); err != nil {
			return err
		}
		if maxActivities < 1 || maxConns < 0 || stmtTO < 0 || stopTimeout < 0 {
			return usagef("--max-partitions must be at least 1; --max-conns, --statement-timeout and --shutdown-timeout must not be negative")
		}
		if listen != "" {
			if _, _, err := net.SplitHostPort(listen); err != nil {
				return usagef("--listen %q: %v (want host:port, e.g. 127.0.0.1:9465)", listen, err)
			}
		}
		return runWorker(ctx, inv, &cf, &lf, &tf, sqlOptions(stmtTO, maxConns), maxActivities, stopTimeout, listen)
	}
}

func runWorker(ctx context.Context, inv *invocation, cf *connFlags, lf *logFlags, tf *temporalFlags, opts sqlstore.Options, maxActivities int, stopTimeout time.Duration, listen string) error {
	log, err := lf.logger(inv.stderr)
	if err != nil {
		return err
	}
	db, _, err := cf.openChecked(ctx, inv, opts, func(w string) { log.Warn(w) })
	if err != nil {
		return err
	}
	defer db.Close()
	id, err := db.Identity(ctx)
	if err != nil {
		return fmt.Errorf("database identity: %w", err)
	}
	var metrics client.MetricsHandler
	if listen != "" {
		var stopHTTP func()
		metrics, stopHTTP, err = serveWorkerMetrics(listen, log)
		if err != nil {
			return err
		}
		defer stopHTTP()
	}
	c, err := tf.dial(ctx, inv.env, lf, metrics)
	if err != nil {
		return err
	}
	defer c.Close()
	// On SIGTERM each partition stops at a clean point within
	// stopTimeout, records its final heartbeat and reports its end, and
	// only then does the worker stop and the client close (deferred):
	// the next attempt starts on another worker at once.
	w := worker.New(c, tf.taskQueue, temporalworker.WorkerOptions(maxActivities, stopTimeout))
	temporalworker.Register(w, &temporalworker.Activities{DB: db, Logger: log, ShutdownTimeout: stopTimeout, DirectFinalHeartbeat: true})
	log.Info("worker started", "db", db.DSN().String(), "database_identity", id,
		"temporal", tf.cfg.Address, "temporal_namespace", tf.cfg.Namespace, "temporal_profile", tf.profileName, "task_queue", tf.taskQueue)
	stop := make(chan any)
	go func() { <-ctx.Done(); close(stop) }()
	if err := w.Run(stop); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	log.Info("worker stopped")
	return nil
}
