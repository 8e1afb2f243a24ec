package command

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/tqscavenger/tqscavenger/lab/bench"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// rawCmd runs the raw bound on one database; see bench.Raw. The
// benchmark runs it as its raw and safe raw passes, through measure.
func rawCmd(ctx context.Context, e *env, args []string) error {
	var (
		dsn, now, statsJSON string
		cfg                 bench.RawConfig
	)
	fs := newFlags(e, "raw", "--db DSN [flags]")
	fs.StringVar(&dsn, "db", "", "database DSN")
	fs.StringVar(&now, "now", "", "pretend the time is this RFC 3339 instant")
	fs.DurationVar(&cfg.Grace, "grace", 48*time.Hour, "idle time before an empty queue is deleted")
	fs.IntVar(&cfg.PageSize, "page-size", bench.DefaultRawPageSize, "rows per read")
	fs.IntVar(&cfg.BatchSize, "batch-size", bench.DefaultRawBatchSize, "rows per delete")
	fs.BoolVar(&cfg.Safe, "safe", false, "the safe raw bound: queue deletes fenced on range_id, and the orphan re-check's walk")
	fs.DurationVar(&cfg.TxBudget, "tx-budget", 0, "run the deletes in transactions committed once open this long (default: each statement commits)")
	fs.StringVar(&statsJSON, "stats-json", "", "write the pass's counts as JSON to this file")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case dsn == "":
		return usagef("--db is required")
	case cfg.PageSize < 1 || cfg.BatchSize < 1 || cfg.Grace <= 0 || cfg.TxBudget < 0:
		return usagef("--page-size, --batch-size and --grace must be positive, --tx-budget not negative")
	}
	if now != "" {
		t, err := time.Parse(time.RFC3339Nano, now)
		if err != nil {
			return usagef("--now %q: use RFC 3339, e.g. 2026-11-30T12:00:00Z", now)
		}
		cfg.Now = t
	}
	if _, err := sqlstore.ParseDSN(dsn); err != nil {
		return usageError{err}
	}
	db, err := sqlstore.Open(ctx, dsn, sqlstore.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Check(ctx); err != nil {
		return err
	}
	st, err := bench.Raw(ctx, db, cfg)
	fmt.Fprintf(e.stdout, "raw bound: %d tasks read, %d deleted; %d queues read, %d deleted; %d statements; %s\n",
		st.TasksProcessed, st.TasksDeleted, st.QueuesListed, st.QueuesDeleted, st.Statements, st.Elapsed.Round(time.Millisecond))
	if err != nil {
		return err
	}
	if statsJSON != "" {
		b, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(statsJSON, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("--stats-json: %w", err)
		}
	}
	return nil
}

// measureCmd runs a command and writes its wall time, peak RSS and exit
// status (see bench.Measure), and exits with the command's status.
func measureCmd(ctx context.Context, e *env, args []string) error {
	var result string
	fs := newFlags(e, "measure", "--result FILE -- COMMAND [ARG…]")
	fs.StringVar(&result, "result", "", "file to write the measurement to, as JSON")
	fs.SetInterspersed(false)
	if err := parse(fs, args); err != nil {
		return err
	}
	if result == "" || fs.NArg() == 0 {
		return usagef("measure needs --result FILE and a command after --")
	}
	code, err := bench.Measure(ctx, result, fs.Args(), e.stdout, e.stderr)
	if err != nil {
		return err
	}
	e.exit = code
	return nil
}
