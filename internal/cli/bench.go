package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/bench"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// benchFlags are bench's: it seeds databases and measures passes on
// copies of them; see package bench. `bench raw` is the raw bound's pass,
// which bench runs as a child process like the others.
func benchFlags(g *flagGroups) runFunc {
	var (
		engines, cases, binary string
		o                      bench.Options
		markdown, quiet        bool
		live                   bool
		phases                 string
		extra                  []string
		lo                     bench.LiveOptions
	)
	fs := g.Other
	fs.StringVar(&engines, "engines", "sqlite,postgres,mysql", "engines to measure, comma-separated")
	fs.StringVar(&o.Postgres, "postgres", bench.DefaultPostgres, "PostgreSQL server: databases tqs_bench_* are created there and dropped after")
	fs.StringVar(&o.MySQL, "mysql", bench.DefaultMySQL, "MySQL/MariaDB server: databases tqs_bench_* are created there and dropped after")
	fs.StringVar(&cases, "cases", "all", "cases to run, comma-separated: "+strings.Join(bench.CaseNames(), ", ")+" (all: every case but ten-million, which runs only when named)")
	fs.IntVar(&o.Scale, "scale", 1, "divide every case's size by this (e.g. 100 for a smoke run); 1 is the full size")
	fs.IntVar(&o.Repeat, "repeat", 1, "run each pass this many times, each on a fresh copy, and report the median")
	durationVar(fs, &o.PassTimeout, "pass-timeout", 0, "stop a pass after this long and report it as taking longer (default: no limit)")
	fs.StringVar(&o.Dir, "dir", "", "directory for the SQLite files (default: a temporary directory, removed after)")
	fs.StringVar(&binary, "binary", "", "tqscavenger executable to run the passes (default: this one)")
	fs.IntVar(&o.ListPageSize, "list-page-size", 0, "page size of the listing measurement (default: queues/100, within 10..1000)")
	fs.IntVar(&o.RawPageSize, "raw-page-size", 0, fmt.Sprintf("rows per read of the raw bound (default %d)", bench.DefaultRawPageSize))
	fs.IntVar(&o.RawBatchSize, "raw-batch-size", 0, fmt.Sprintf("rows per delete of the raw bound (default %d)", bench.DefaultRawBatchSize))
	fs.BoolVar(&live, "live-load", false, "measure instead the latency of matching's statements while passes run (no pass, default, temporal, each rate limit, --yield-to-load)")
	fs.StringVar(&lo.Case, "live-case", "all-expired", "--live-load: the case the passes delete")
	durationVar(fs, &lo.MinDuration, "live-duration", time.Minute, "--live-load: a phase runs passes until it has this much time of samples, or --live-samples")
	fs.IntVar(&lo.MinSamples, "live-samples", 10_000, "--live-load: a phase runs passes until it has this many samples, or --live-duration")
	fs.IntVar(&lo.Conns, "live-conns", 8, "--live-load: the workload's connections (SQLite: one)")
	fs.Float64Var(&lo.Rate, "live-rate", 0, "--live-load: operations per second offered (default: half the capacity measured)")
	fs.StringVar(&phases, "live-phases", "all", "--live-load: phases to run, comma-separated: \"no pass\", default, temporal, max-deletes, max-statements, yield-to-load")
	durationVar(fs, &lo.CapacityFor, "live-capacity-for", 5*time.Second, "--live-load: how long the workload's capacity is measured")
	fs.StringArrayVar(&extra, "live-extra", nil, "--live-load: one more phase, a pass with these flags of \"What to delete\" and \"Pace and safety\" (e.g. '--task-batch-size 100 --yield-to-load'); repeat for more")
	g.Output.BoolVar(&markdown, "markdown", false, "print the tables as Markdown")
	g.Output.BoolVar(&quiet, "quiet", false, "no progress lines on stderr")
	return func(ctx context.Context, inv *invocation) error {
		for _, x := range extra {
			args, err := passFlags(x)
			if err != nil {
				return usagef("--live-extra: %v", err)
			}
			lo.Extra = append(lo.Extra, args)
		}
		return benchCmd(ctx, inv.env, engines, cases, binary, o, markdown, quiet, live, phases, lo)
	}
}

// passFlags splits a --live-extra value into flags and checks that each
// is one of run's "What to delete" or "Pace and safety" flags: the
// benchmark sets the connection and the output itself, and the value is
// printed in the table, where a DSN or password must never be.
func passFlags(s string) ([]string, error) {
	g := newFlagGroups(newFlagSet("run"))
	runFlags(g)
	args := strings.Fields(s)
	if len(args) == 0 {
		return nil, fmt.Errorf("no flags")
	}
	for i, a := range args {
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			if i > 0 && strings.HasPrefix(args[i-1], "--") && !strings.Contains(args[i-1], "=") {
				continue // the value of the flag before
			}
			return nil, fmt.Errorf("%q is not a flag (write --name or --name=value)", a)
		}
		name, _, _ = strings.Cut(name, "=")
		if g.Scope.Lookup(name) == nil && g.Pace.Lookup(name) == nil {
			return nil, fmt.Errorf("--%s: only the flags of \"What to delete\" and \"Pace and safety\" (see run --help)", name)
		}
	}
	return args, nil
}

func benchCmd(ctx context.Context, e *env, engines, cases, binary string, o bench.Options, markdown, quiet, live bool, phases string, lo bench.LiveOptions) error {
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
	if live {
		if lo.MinDuration <= 0 || lo.MinSamples <= 0 || lo.Conns <= 0 || lo.Rate < 0 || lo.CapacityFor <= 0 {
			return usagef("--live-duration, --live-samples, --live-conns and --live-capacity-for must be positive, --live-rate not negative")
		}
		if phases != "all" {
			for _, p := range strings.Split(phases, ",") {
				ph := bench.LivePhase(strings.TrimSpace(p))
				if !slices.Contains(bench.LivePhases(), ph) {
					return usagef("--live-phases: unknown phase %q", p)
				}
				lo.Phases = append(lo.Phases, ph)
			}
		}
		rep, err := bench.RunLive(ctx, o, lo)
		if rep != nil {
			bench.PrintLive(e.stdout, rep, markdown)
		}
		if err != nil && strings.Contains(err.Error(), "unknown case") {
			return usageError{err}
		}
		return err
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

// benchRawFlags are bench raw's: it runs the raw bound on one database;
// see bench.Raw.
func benchRawFlags(g *flagGroups) runFunc {
	var (
		dsn, now, statsJSON string
		cfg                 bench.RawConfig
	)
	g.Conn.StringVar(&dsn, "db", "", "database DSN")
	g.Scope.StringVar(&now, "now", "", "pretend the time is this RFC 3339 instant")
	durationVar(g.Scope, &cfg.Grace, "grace", 48*time.Hour, "idle time before an empty queue is deleted")
	g.Pace.IntVar(&cfg.PageSize, "page-size", bench.DefaultRawPageSize, "rows per read")
	g.Pace.IntVar(&cfg.BatchSize, "batch-size", bench.DefaultRawBatchSize, "rows per delete")
	g.Pace.BoolVar(&cfg.Safe, "safe", false, "the safe raw bound: queue deletes fenced on range_id, and the orphan re-check's walk")
	durationVar(g.Pace, &cfg.TxBudget, "tx-budget", 0, "run the deletes in transactions committed once open this long (default: each statement commits)")
	g.Output.StringVar(&statsJSON, "stats-json", "", "write the pass's counts as JSON to this file")
	return func(ctx context.Context, inv *invocation) error {
		return benchRawCmd(ctx, inv.env, dsn, now, statsJSON, cfg)
	}
}

func benchRawCmd(ctx context.Context, e *env, dsn, now, statsJSON string, cfg bench.RawConfig) error {
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

// benchMeasureFlags are bench measure's: it runs a command and writes
// its wall time, peak RSS and exit status (see bench.Measure), and exits
// with the command's status.
func benchMeasureFlags(g *flagGroups) runFunc {
	var result string
	g.Output.StringVar(&result, "result", "", "file to write the measurement to, as JSON")
	return func(ctx context.Context, inv *invocation) error {
		if result == "" || len(inv.args) == 0 {
			return usagef("bench measure needs --result FILE and a command after --")
		}
		code, err := bench.Measure(ctx, result, inv.args, inv.stdout, inv.stderr)
		if err != nil {
			return err
		}
		inv.exit = code
		return nil
	}
}
