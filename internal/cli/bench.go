package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/bench"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// benchCmd seeds databases and measures passes on copies of them; see
// package bench. `bench raw` is the raw bound's pass, which bench runs as
// a child process like the others.
func benchCmd(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "raw":
			return benchRawCmd(ctx, e, args[1:])
		case "measure":
			return benchMeasureCmd(ctx, e, args[1:])
		case "partitions":
			return benchPartitionsCmd(ctx, e, args[1:])
		}
	}
	fs := newFlags(e, "bench", "[flags]\n       tqscavenger bench raw --db DSN [flags]  (the raw bound's pass alone)\n       tqscavenger bench measure --result FILE -- COMMAND…  (run a command, write its time and peak RSS)")
	var (
		engines, cases, binary string
		o                      bench.Options
		markdown, quiet        bool
	)
	fs.StringVar(&engines, "engines", "sqlite,postgres,mysql", "engines to measure, comma-separated")
	fs.StringVar(&o.Postgres, "postgres", bench.DefaultPostgres, "PostgreSQL server: databases tqs_bench_* are created there and dropped after")
	fs.StringVar(&o.MySQL, "mysql", bench.DefaultMySQL, "MySQL/MariaDB server: databases tqs_bench_* are created there and dropped after")
	fs.StringVar(&cases, "cases", "all", "cases to run, comma-separated: "+strings.Join(bench.CaseNames(), ", "))
	fs.IntVar(&o.Scale, "scale", 1, "divide every case's size by this (e.g. 100 for a smoke run); 1 is the full size")
	fs.IntVar(&o.Repeat, "repeat", 1, "run each pass this many times, each on a fresh copy, and report the median")
	fs.DurationVar(&o.PassTimeout, "pass-timeout", 0, "stop a pass after this long and report it as taking longer (default: no limit)")
	fs.BoolVar(&markdown, "markdown", false, "print the tables as Markdown")
	fs.StringVar(&o.Dir, "dir", "", "directory for the SQLite files (default: a temporary directory, removed after)")
	fs.StringVar(&binary, "binary", "", "tqscavenger executable to run the passes (default: this one)")
	fs.IntVar(&o.ListPageSize, "list-page-size", 0, "page size of the listing measurement (default: queues/100, within 10..1000)")
	fs.IntVar(&o.RawPageSize, "raw-page-size", 0, fmt.Sprintf("rows per read of the raw bound (default %d)", bench.DefaultRawPageSize))
	fs.IntVar(&o.RawBatchSize, "raw-batch-size", 0, fmt.Sprintf("rows per delete of the raw bound (default %d)", bench.DefaultRawBatchSize))
	fs.BoolVar(&quiet, "quiet", false, "no progress lines on stderr")
	if err := parse(fs, args); err != nil {
		return err
	}
	if o.Scale < 1 || o.Repeat < 1 || o.PassTimeout < 0 {
		return usagef("--scale and --repeat must be at least 1, --pass-timeout not negative")
	}
	for _, s := range strings.Split(engines, ",") {
		switch s = strings.TrimSpace(s); sqlstore.Engine(s) {
		case sqlstore.SQLite, sqlstore.Postgres, sqlstore.MySQL:
			o.Engines = append(o.Engines, sqlstore.Engine(s))
		case "mariadb":
			o.Engines = append(o.Engines, sqlstore.MySQL)
		default:
			return usagef("--engines: unknown engine %q: use sqlite, postgres, mysql", s)
		}
	}
	if cases != "all" {
		for _, c := range strings.Split(cases, ",") {
			o.Cases = append(o.Cases, strings.TrimSpace(c))
		}
	}
	o.Binary = binary
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find this executable: %w (pass --binary)", err)
		}
		o.Binary = exe
	}
	if !quiet {
		o.Log = e.stderr
	}
	rep, err := bench.Run(ctx, o)
	if rep != nil {
		bench.Print(e.stdout, rep, markdown)
	}
	if err != nil && strings.Contains(err.Error(), "unknown case") {
		return usageError{err}
	}
	return err
}

// benchRawCmd runs the raw bound on one database: see bench.Raw.
func benchRawCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "bench raw", "--db DSN [flags]")
	var (
		dsn, now, statsJSON string
		cfg                 bench.RawConfig
	)
	fs.StringVar(&dsn, "db", "", "database DSN")
	fs.StringVar(&now, "now", "", "pretend the time is this RFC 3339 instant")
	fs.DurationVar(&cfg.Grace, "grace", 48*time.Hour, "idle time before an empty queue is deleted")
	fs.IntVar(&cfg.PageSize, "page-size", bench.DefaultRawPageSize, "rows per read")
	fs.IntVar(&cfg.BatchSize, "batch-size", bench.DefaultRawBatchSize, "rows per delete")
	fs.StringVar(&statsJSON, "stats-json", "", "write the pass's counts as JSON to this file")
	if err := parse(fs, args); err != nil {
		return err
	}
	if now != "" {
		t, err := time.Parse(time.RFC3339Nano, now)
		if err != nil {
			return usagef("--now %q: use RFC 3339, e.g. 2026-11-30T12:00:00Z", now)
		}
		cfg.Now = t
	}
	db, _, err := openChecked(ctx, dsn, sqlstore.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
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

// benchMeasureCmd runs a command and writes its wall time, peak RSS and
// exit status: see bench.Measure. It exits with the command's status.
func benchMeasureCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "bench measure", "--result FILE -- COMMAND [ARG…]")
	var result string
	fs.StringVar(&result, "result", "", "file to write the measurement to, as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if result == "" || fs.NArg() == 0 {
		return usagef("bench measure needs --result FILE and a command after --")
	}
	code, err := bench.Measure(ctx, result, fs.Args(), e.stdout, e.stderr)
	if err != nil {
		return err
	}
	e.exit = code
	return nil
}
