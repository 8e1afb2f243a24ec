//go:build !tqs_notemporal

package cli

// tqscavenger worker: a Temporal worker that runs the pass workflow and
// its partition activities (package temporalworker) against the database
// its own connection flags name; and the Temporal client flags it shares
// with `tqscavenger schedule`.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/tqscavenger/tqscavenger/temporalworker"
)

// temporalFlags are the Temporal client's flags, prefixed --temporal- so
// that they stay apart from --namespace (the namespace ids a pass is
// limited to) and from the database's --tls-* flags.
type temporalFlags struct {
	cfg       temporalworker.ClientConfig
	taskQueue string
}

// temporalEnv are the temporal CLI's environment variables of each flag,
// read when neither the flag nor TQSCAVENGER_* sets it: first the names of
// Temporal's client environment configuration, then the CLI's older ones.
var temporalEnv = map[string][]string{
	"temporal-address":                       {"TEMPORAL_ADDRESS"},
	"temporal-namespace":                     {"TEMPORAL_NAMESPACE"},
	"temporal-api-key":                       {"TEMPORAL_API_KEY"},
	"temporal-tls":                           {"TEMPORAL_TLS"},
	"temporal-tls-cert-path":                 {"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CERT"},
	"temporal-tls-key-path":                  {"TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_KEY"},
	"temporal-tls-ca-path":                   {"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_CA"},
	"temporal-tls-server-name":               {"TEMPORAL_TLS_SERVER_NAME"},
	"temporal-tls-disable-host-verification": {"TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"},
}

func init() { secretFlags["temporal-api-key"] = true }

func (t *temporalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.cfg.Address, "temporal-address", temporalworker.DefaultAddress, "Temporal frontend host:port (TEMPORAL_ADDRESS)")
	fs.StringVar(&t.cfg.Namespace, "temporal-namespace", temporalworker.DefaultNamespace, "Temporal namespace of the workflow and schedule (TEMPORAL_NAMESPACE)")
	fs.StringVar(&t.taskQueue, "temporal-task-queue", temporalworker.DefaultTaskQueue, "Temporal task queue the worker polls and the schedule starts passes on")
	fs.StringVar(&t.cfg.APIKey, "temporal-api-key", "", "Temporal API key; turns TLS on (TEMPORAL_API_KEY; prefer the environment: it is a secret)")
	fs.BoolVar(&t.cfg.TLS, "temporal-tls", false, "connect to Temporal over TLS (implied by the other --temporal-tls-* flags; TEMPORAL_TLS)")
	fs.StringVar(&t.cfg.CertFile, "temporal-tls-cert-path", "", "Temporal mTLS client certificate (PEM) (TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CERT)")
	fs.StringVar(&t.cfg.KeyFile, "temporal-tls-key-path", "", "Temporal mTLS client key (PEM) (TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_KEY)")
	fs.StringVar(&t.cfg.CAFile, "temporal-tls-ca-path", "", "CA (PEM) the Temporal frontend's certificate must be signed by (default the system's; TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_CA)")
	fs.StringVar(&t.cfg.ServerName, "temporal-tls-server-name", "", "name the Temporal frontend's certificate must hold (TEMPORAL_TLS_SERVER_NAME)")
	fs.BoolVar(&t.cfg.DisableHostVerification, "temporal-tls-disable-host-verification", false, "check the frontend's certificate against the CA but not its name (TEMPORAL_TLS_DISABLE_HOST_VERIFICATION)")
}

// fromEnv sets each Temporal flag that no flag, TQSCAVENGER_* variable or
// config file set from the temporal CLI's variables. Two of them that set
// one flag to different values are an error.
func (t *temporalFlags) fromEnv(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []string
	for name, vars := range temporalEnv {
		f := fs.Lookup(name)
		if f == nil || set[name] || f.Value.String() != f.DefValue {
			continue
		}
		var from, value string
		for _, v := range vars {
			val, ok := os.LookupEnv(v)
			if !ok || val == "" {
				continue
			}
			if from != "" && val != value {
				errs = append(errs, fmt.Sprintf("%s and %s both set, to different values: keep one", from, v))
			}
			if from == "" {
				from, value = v, val
			}
		}
		if from == "" {
			continue
		}
		if err := fs.Set(name, value); err != nil {
			shown := value
			if secretFlags[name] {
				shown = "xxxxx"
			}
			errs = append(errs, fmt.Sprintf("%s=%q: %v", from, shown, err))
		}
	}
	if len(errs) > 0 {
		return usagef("bad environment variable %s", strings.Join(errs, "; "))
	}
	if strings.TrimSpace(t.taskQueue) == "" {
		return usagef("--temporal-task-queue must not be empty")
	}
	return nil
}

// dial connects to the Temporal frontend.
func (t *temporalFlags) dial(ctx context.Context, e *env, lf logFlags) (client.Client, error) {
	log, err := lf.logger(e.stderr)
	if err != nil {
		return nil, err
	}
	opts, err := t.cfg.Options(log)
	if err != nil {
		return nil, usageError{err}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: Temporal frontend %s: %v", errTemporalUnavailable, opts.HostPort, err)
	}
	return c, nil
}

// temporalCommands are the commands on Temporal; a build with the
// tqs_notemporal tag leaves them, and the Temporal SDK, out.
var temporalCommands = []command{
	{"worker", "run a Temporal worker: passes as workflows, partitions as activities", workerCmd},
	{"schedule", "create|update|describe|trigger|delete the Temporal Schedule that starts passes", scheduleCmd},
}

func workerCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "worker", "--db DSN --temporal-address HOST:PORT [flags]")
	var cf connFlags
	var lf logFlags
	var tf temporalFlags
	var stmtTO, stopTimeout time.Duration
	var maxConns, maxActivities int
	cf.register(fs)
	lf.register(fs)
	tf.register(fs)
	configFlag(fs)
	fs.DurationVar(&stmtTO, "statement-timeout", 0, "bound on each statement; a timed-out statement is retried (default none)")
	fs.IntVar(&maxConns, "max-conns", 0, "connections to PostgreSQL/MySQL, shared by the worker's activities")
	fs.IntVar(&maxActivities, "max-partitions", 2, "partition activities this worker runs at once")
	fs.DurationVar(&stopTimeout, "shutdown-timeout", 30*time.Second, "on SIGTERM, how long running partitions may go on before they are cancelled (their heartbeat holds their position)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := tf.fromEnv(fs); err != nil {
		return err
	}
	if maxActivities < 1 || maxConns < 0 || stmtTO < 0 || stopTimeout < 0 {
		return usagef("--max-partitions must be at least 1; --max-conns, --statement-timeout and --shutdown-timeout must not be negative")
	}
	log, err := lf.logger(e.stderr)
	if err != nil {
		return err
	}
	db, _, err := cf.openChecked(ctx, fs, args, sqlOptions(stmtTO, maxConns), func(w string) { log.Warn(w) })
	if err != nil {
		return err
	}
	defer db.Close()
	d := temporalworker.NewSQLDatabase(db)
	id, err := d.Identity(ctx)
	if err != nil {
		return fmt.Errorf("database identity: %w", err)
	}
	c, err := tf.dial(ctx, e, lf)
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, tf.taskQueue, worker.Options{
		MaxConcurrentActivityExecutionSize: maxActivities,
		WorkerStopTimeout:                  stopTimeout,
	})
	temporalworker.Register(w, &temporalworker.Activities{DB: d, Logger: log})
	log.Info("worker started", "db", db.DSN().String(), "database_identity", id,
		"temporal", tf.cfg.Address, "temporal_namespace", tf.cfg.Namespace, "task_queue", tf.taskQueue)
	stop := make(chan any)
	go func() { <-ctx.Done(); close(stop) }()
	if err := w.Run(stop); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	log.Info("worker stopped")
	return nil
}
