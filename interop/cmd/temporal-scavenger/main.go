// Command temporal-scavenger runs Temporal's own task queue scavenger
// (go.temporal.io/server v1.32.1, service/worker/scanner/taskqueue) once
// over a database, as a library: the peer the lab measures tqscavenger
// against.
//
//	temporal-scavenger --db DSN [flags]
//
// The database is a DSN as tqscavenger takes it (postgres://…,
// mysql://…, sqlite:PATH or a file path). It is opened through
// Temporal's own SQL persistence plugins (sqlite, postgres12 or
// postgres12_pgx, mysql8) and persistence factories, which build the
// persistence.TaskManager the worker service hands its scanner: the v1
// task tables (task_queues, tasks), behind the worker's persistence rate
// limiter, metrics and retries.
//
// One pass runs to its end as Temporal's TaskQueueScavengerActivity runs
// it (NewScavenger, Start, wait while Alive); then a JSON summary goes to
// stdout (and to --stats-json FILE): wall and work time, Temporal's own
// counts (tasks and task queues processed and deleted, from the gauges it
// emits), its persistence calls, and the rows of the four task tables
// before and after. Nothing of Temporal's is reimplemented or changed:
// its rules (a task is expired when its expiry time has passed; a queue
// row goes when it has no task and was last updated 48 h ago or more)
// and its time source (the real clock) are its own.
//
// The scavenger's knobs are unexported variables of Temporal's package;
// their values in v1.32.1 are fixed and listed in the summary:
// taskQueueBatchSize 32 (queues listed per page and processed at once),
// taskBatchSize 16 (tasks read per call), maxTasksPerJob 256 (tasks per
// queue before it yields), taskQueueGracePeriod 48h, executorPollInterval
// 1m (how often the pass checks that its queued work is done: the pass's
// wall time is rounded up by up to a minute past its work), and
// executorMaxDeferredTasks 10000. What a deployment can set is the
// worker service's persistence rate limit (worker.persistenceMaxQPS,
// default 500: --persistence-max-qps) and the SQL store's settings
// (maxConns, taskScanPartitions, connectAttributes).
//
// Exit status: 0 when the pass ended on its own with no error logged; 1
// when it failed, logged errors (a failed listing ends Temporal's pass
// early, a failed queue is skipped), or was stopped (SIGINT, SIGTERM,
// --timeout), the summary still printed where there is one; 2 for bad
// input.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/server/common/headers"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// Temporal's scavenger knobs in v1.32.1 (unexported in
// service/worker/scanner/taskqueue/scavenger.go; TestTemporalKnobs holds
// these to the source).
var temporalKnobs = knobs{
	TaskQueueBatchSize:       32,
	TaskBatchSize:            16,
	MaxTasksPerJob:           256,
	TaskQueueGracePeriod:     "48h0m0s",
	ExecutorPollInterval:     "1m0s",
	ExecutorMaxDeferredTasks: 10000,
}

type knobs struct {
	TaskQueueBatchSize       int    `json:"task_queue_batch_size"`
	TaskBatchSize            int    `json:"task_batch_size"`
	MaxTasksPerJob           int    `json:"max_tasks_per_job"`
	TaskQueueGracePeriod     string `json:"task_queue_grace_period"`
	ExecutorPollInterval     string `json:"executor_poll_interval"`
	ExecutorMaxDeferredTasks int    `json:"executor_max_deferred_tasks"`
}

// summary is the JSON the command prints.
type summary struct {
	Temporal string `json:"temporal_server_version"`
	Engine   string `json:"engine"`
	Plugin   string `json:"plugin"`
	Database string `json:"database"`
	// Complete: the pass ended on its own. OK: complete with no error
	// logged; the exit status is 0 exactly then.
	Complete bool `json:"complete"`
	OK       bool `json:"ok"`

	WallSeconds float64 `json:"wall_seconds"`
	WorkSeconds float64 `json:"work_seconds"`
	// ElapsedSeconds is WallSeconds, under the name tqscavenger's
	// --stats-json gives a pass's own time.
	ElapsedSeconds float64 `json:"elapsed_seconds"`

	TasksDeleted    int64 `json:"tasks_deleted"`
	TasksProcessed  int64 `json:"tasks_processed"`
	QueuesDeleted   int64 `json:"queues_deleted"`
	QueuesProcessed int64 `json:"queues_processed"`

	PersistenceCalls      map[string]int64 `json:"persistence_calls"`
	PersistenceCallsTotal int64            `json:"persistence_calls_total"`
	PersistenceErrors     int64            `json:"persistence_errors"`
	LastPersistenceError  string           `json:"last_persistence_error,omitempty"`
	ScavengerErrors       int64            `json:"scavenger_errors"`
	FirstScavengerError   string           `json:"first_scavenger_error,omitempty"`

	RowsBefore rowCounts `json:"rows_before"`
	RowsAfter  rowCounts `json:"rows_after"`

	Knobs    knobs    `json:"temporal_knobs"`
	Settings settings `json:"settings"`
	Error    string   `json:"error,omitempty"`
}

type settings struct {
	PersistenceMaxQPS  int               `json:"persistence_max_qps"`
	OperatorRPSRatio   float64           `json:"operator_rps_ratio"`
	BurstRatio         float64           `json:"persistence_qps_burst_ratio"`
	MaxConns           int               `json:"max_conns"`
	TaskScanPartitions int               `json:"task_scan_partitions"`
	ConnectAttributes  map[string]string `json:"connect_attributes"`
	Timeout            string            `json:"timeout"`
}

// errUsage marks bad input: exit status 2.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "temporal-scavenger:", strings.TrimPrefix(err.Error(), "usage: "))
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "temporal-scavenger:", err)
		os.Exit(1)
	}
}

// attrFlag collects repeated --connect-attr KEY=VALUE.
type attrFlag map[string]string

func (a attrFlag) String() string { return "" }

func (a attrFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want KEY=VALUE, not %q", s)
	}
	a[strings.TrimSpace(k)] = strings.TrimSpace(v)
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("temporal-scavenger", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		dsnText, plugin, statsFile, logLevel string
		timeout                              time.Duration
		c                                    storeConfig
		attrs                                = attrFlag{}
	)
	fs.StringVar(&dsnText, "db", "", "the database: postgres://user:pass@host:5432/db?sslmode=…, mysql://user:pass@host:3306/db, sqlite:PATH or a file path (URL parameters become Temporal's connectAttributes)")
	fs.StringVar(&plugin, "plugin", "", "Temporal's SQL plugin (default: sqlite, postgres12 or mysql8 by the DSN; postgres12_pgx for the pgx driver)")
	fs.Var(attrs, "connect-attr", "a connectAttribute of Temporal's SQL config, KEY=VALUE (repeat); SQLite's default mode=rw, cache=private (mode=rwc with setup=true has the plugin create Temporal's schema)")
	fs.IntVar(&c.maxConns, "max-conns", 0, "maxConns (and maxIdleConns) of Temporal's SQL config (default 0: the plugin's default, one connection on SQLite, no limit elsewhere)")
	fs.IntVar(&c.taskScanPartitions, "task-scan-partitions", 0, "taskScanPartitions of Temporal's SQL config (default 0: Temporal's default, 1)")
	fs.IntVar(&c.persistenceMaxQPS, "persistence-max-qps", defaultPersistenceMaxQPS, "the worker service's persistence rate limit, worker.persistenceMaxQPS (Temporal's default 500; 0: no limit)")
	fs.DurationVar(&timeout, "timeout", 0, "stop the pass after this long (Temporal retries persistence errors for as long as the pass runs; default 0: no limit)")
	fs.StringVar(&statsFile, "stats-json", "", "also write the JSON summary to this file")
	fs.StringVar(&logLevel, "log-level", "error", "level of Temporal's log lines on stderr: debug, info (a line per queue), warn, error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if dsnText == "" {
		return fmt.Errorf("%w: --db is required (postgres://…, mysql://…, sqlite:PATH or a file path)", errUsage)
	}
	d, err := sqlstore.ParseDSN(dsnText)
	if err != nil {
		return fmt.Errorf("%w: --db: %v", errUsage, err)
	}
	c.dsn, c.attrs = d, attrs
	if c.plugin = plugin; plugin == "" {
		c.plugin = defaultPlugin(d.Engine)
	}
	if err := checkPlugin(c.plugin, d.Engine); err != nil {
		return err
	}
	if c.maxConns < 0 || c.taskScanPartitions < 0 || c.persistenceMaxQPS < 0 || timeout < 0 {
		return fmt.Errorf("%w: --max-conns, --task-scan-partitions, --persistence-max-qps and --timeout must not be negative", errUsage)
	}
	level, ok := levelNames[logLevel]
	if !ok {
		return fmt.Errorf("%w: --log-level %q: use debug, info, warn or error", errUsage, logLevel)
	}
	out := &output{w: stderr}
	storeLog, passLog := newLineLogger(out, "persistence", level), newLineLogger(out, "scavenger", level)

	counter, err := openCounter(d)
	if err != nil {
		return fmt.Errorf("open %s to count rows: %w", d, err)
	}
	defer counter.Close()

	c = withMariaDBIsolation(ctx, counter, c)
	store, err := openTaskStore(ctx, c, storeLog)
	if err != nil {
		return err
	}
	defer store.Close()
	sum := summary{
		Temporal: headers.ServerVersion,
		Engine:   string(d.Engine),
		Plugin:   c.plugin,
		Database: d.String(),
		Knobs:    temporalKnobs,
		Settings: settings{
			PersistenceMaxQPS:  c.persistenceMaxQPS,
			OperatorRPSRatio:   defaultOperatorRPSRatio,
			BurstRatio:         defaultBurstRatio,
			MaxConns:           c.maxConns,
			TaskScanPartitions: max(c.taskScanPartitions, 1),
			ConnectAttributes:  shownAttrs(store.attrs),
			Timeout:            timeout.String(),
		},
	}
	if sum.RowsBefore, err = countRows(ctx, counter); err != nil {
		return err
	}
	if sum.RowsBefore.TaskQueues == nil || sum.RowsBefore.Tasks == nil {
		return fmt.Errorf("%s has no task_queues or tasks table: not a Temporal database", d)
	}

	passCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		passCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	res := runPass(passCtx, store.tm, passLog)
	sum.fill(res)

	// The counts after are read even after a stop: what the pass did by
	// then is worth showing.
	countCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var countErr error
	if sum.RowsAfter, countErr = countRows(countCtx, counter); countErr != nil {
		sum.Error = countErr.Error()
	}
	var passErr error
	switch {
	case !res.complete && ctx.Err() != nil:
		passErr = errors.New("stopped by a signal before the pass ended")
	case !res.complete:
		passErr = fmt.Errorf("the pass did not end within --timeout %s", timeout)
	case res.errors > 0:
		passErr = fmt.Errorf("Temporal's scavenger logged %d errors (the pass may have skipped queues or ended its listing early); the first: %s", res.errors, res.firstError)
	case countErr != nil:
		passErr = countErr
	}
	if passErr != nil && sum.Error == "" {
		sum.Error = passErr.Error()
	}
	sum.OK = passErr == nil
	if err := sum.write(stdout, statsFile); err != nil {
		return errors.Join(passErr, err)
	}
	return passErr
}

// checkPlugin refuses a plugin of another engine than the DSN's.
func checkPlugin(plugin string, e sqlstore.Engine) error {
	ok := map[sqlstore.Engine][]string{
		sqlstore.SQLite:   {"sqlite"},
		sqlstore.Postgres: {"postgres12", "postgres12_pgx"},
		sqlstore.MySQL:    {"mysql8"},
	}[e]
	for _, p := range ok {
		if p == plugin {
			return nil
		}
	}
	return fmt.Errorf("%w: --plugin %q does not serve a %s DSN: use %s", errUsage, plugin, e, strings.Join(ok, " or "))
}

// shownAttrs is attrs without values that may be secrets (a password
// given as a connect attribute).
func shownAttrs(attrs map[string]string) map[string]string {
	out := make(map[string]string, len(attrs))
	for k, v := range attrs {
		if strings.Contains(strings.ToLower(k), "pass") || strings.Contains(strings.ToLower(k), "secret") || strings.Contains(strings.ToLower(k), "key") {
			v = "xxxxx"
		}
		out[k] = v
	}
	return out
}

func (s *summary) fill(r passResult) {
	s.Complete = r.complete
	s.WallSeconds = r.wall.Seconds()
	s.ElapsedSeconds = s.WallSeconds
	s.WorkSeconds = r.work.Seconds()
	s.TasksDeleted, s.TasksProcessed = r.tasksDeleted, r.tasksProcessed
	s.QueuesDeleted, s.QueuesProcessed = r.queuesDeleted, r.queuesProcessed
	s.PersistenceCalls = r.calls
	for _, n := range r.calls {
		s.PersistenceCallsTotal += n
	}
	s.PersistenceErrors, s.LastPersistenceError = r.callErrors, sqlstore.RedactText(r.lastCallError)
	s.ScavengerErrors, s.FirstScavengerError = r.errors, sqlstore.RedactText(r.firstError)
}

// write prints the summary as one JSON object on w, and to file if set.
func (s *summary) write(w io.Writer, file string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		return err
	}
	if file != "" {
		if err := os.WriteFile(file, b, 0o644); err != nil {
			return fmt.Errorf("--stats-json: %w", err)
		}
	}
	return nil
}
