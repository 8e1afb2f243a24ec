package command

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/lab/bench"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// benchCmd is the benchmark: seeded databases, copies, passes of each
// binary under test and the raw bounds (see package bench); with
// --live-load, the latency of matching's statements beside passes.
func benchCmd(ctx context.Context, e *env, args []string) error {
	var (
		engines, cases, source string
		binaries               []string
		o                      bench.Options
		markdown, quiet        bool
		live                   bool
		phases, passFlagsText  string
		extra                  []string
		lo                     bench.LiveOptions
		workload, topology     string
	)
	fs := newFlags(e, "bench", "[flags]")
	fs.StringArrayVar(&binaries, "binary", nil, "tqscavenger executable under test, as PATH or LABEL=PATH (e.g. old=/tmp/tqs-old); repeat to compare builds side by side (default: one built from the main module)")
	fs.StringVar(&source, "source", "", "the main module's directory, to build the default binary from (default: found from the working directory upwards)")
	fs.StringVar(&engines, "engines", "sqlite,postgres,mysql", "engines to measure, comma-separated")
	fs.StringVar(&o.Postgres, "postgres", bench.DefaultPostgres, "PostgreSQL server: databases tqs_bench_* are created there and dropped after (--live-load: with --live-topology shared only)")
	fs.StringVar(&o.MySQL, "mysql", bench.DefaultMySQL, "MySQL/MariaDB server: databases tqs_bench_* are created there and dropped after (--live-load: with --live-topology shared only)")
	fs.StringVar(&cases, "cases", "all", "cases to run, comma-separated: "+strings.Join(bench.CaseNames(), ", ")+" (all: every case but ten-million, which runs only when named)")
	fs.IntVar(&o.Scale, "scale", 1, "divide every case's size by this (e.g. 100 for a smoke run); 1 is the full size")
	fs.IntVar(&o.Repeat, "repeat", 1, "run each pass this many times, each on a fresh copy, and report the median")
	fs.DurationVar(&o.PassTimeout, "pass-timeout", 0, "stop a pass after this long and report it as taking longer (default: no limit)")
	fs.StringVar(&o.Dir, "dir", "", "directory for the SQLite files (default: a temporary directory, removed after)")
	fs.IntVar(&o.ListPageSize, "list-page-size", 0, "page size of the listing measurement (default: queues/100, within 10..1000)")
	fs.IntVar(&o.RawPageSize, "raw-page-size", 0, fmt.Sprintf("rows per read of the raw bound (default %d)", bench.DefaultRawPageSize))
	fs.IntVar(&o.RawBatchSize, "raw-batch-size", 0, fmt.Sprintf("rows per delete of the raw bound (default %d)", bench.DefaultRawBatchSize))
	fs.BoolVar(&live, "live-load", false, "measure instead the latency of matching's statements while passes run (no pass, default (gentle), temporal, each rate limit, --pace full); one binary under test")
	fs.StringVar(&lo.Case, "live-case", "all-expired", "--live-load: the case the passes delete")
	fs.DurationVar(&lo.MinDuration, "live-duration", time.Minute, "--live-load: a phase runs passes until it has this much time of samples, or --live-samples")
	fs.IntVar(&lo.MinSamples, "live-samples", 10_000, "--live-load: a phase runs passes until it has this many samples, or --live-duration")
	fs.IntVar(&lo.Conns, "live-conns", 8, "--live-load: the workload's connections (SQLite: one)")
	fs.Float64Var(&lo.Rate, "live-rate", 0, "--live-load: operations per second offered (default: --live-share of the capacity measured); wins over --live-share")
	fs.Float64Var(&lo.Share, "live-share", 0.5, "--live-load: the share of the capacity measured that is offered, 0 < F ≤ 1 (e.g. 0.8 for the issue's 80 % target)")
	fs.StringVar(&workload, "live-workload", "lab", "--live-load: the workload beside the passes: lab (matching's statements in matching's mix: appends and reads most, leases rarely), lab-writes (the same statements, write-heavy: appends, leases, ack-level updates and completes, one read in six operations), lab-reads (the same, read-heavy: four reads per append, no lease) or pgbench (PostgreSQL only: pgbench with a script of lease, append and read on queues of its own)")
	fs.StringVar(&lo.Pgbench, "pgbench", "pgbench", "--live-workload pgbench: the pgbench executable")
	fs.StringVar(&topology, "live-topology", string(bench.TopologyProduction), "--live-load: where it runs: production (servers of the lab's own, started for the run, and the workload pinned to one CPU, each pass to another, as when tqscavenger runs in a pod of its own; needs 2 CPUs, taskset and the servers' binaries) or shared (the --postgres and --mysql servers, the workload and the passes on every CPU: a pass's own CPU counts as harm)")
	fs.StringVar(&phases, "live-phases", "all", "--live-load: phases to run, comma-separated: \"no pass\", default, temporal, max-deletes, max-statements, full")
	fs.DurationVar(&lo.CapacityFor, "live-capacity-for", 5*time.Second, "--live-load: how long the workload's capacity is measured")
	fs.StringArrayVar(&extra, "live-extra", nil, "--live-load: one more phase, a pass with these flags of the binary's \"What to delete\" and \"Pace and safety\" (e.g. '--task-batch-size 100 --pace full'); repeat for more")
	fs.StringVar(&passFlagsText, "pass-flags", "", "flags of the binary's \"What to delete\" and \"Pace and safety\" added to every pass of the binary under test (not --live-load's), e.g. '--pace full': the default pass is gentle, the raw bounds are the full pace's yardstick")
	fs.BoolVar(&markdown, "markdown", false, "print the tables as Markdown")
	fs.BoolVar(&quiet, "quiet", false, "no progress lines on stderr")
	fs.StringVar(&o.Peer, "peer", "", "the interop module's temporal-scavenger executable (cd interop && go build ./cmd/temporal-scavenger): each case also runs the temporal-peer pass, Temporal 1.32.1's own task queue scavenger, at Temporal's defaults (not --live-load)")
	peerFlags := fs.String("peer-flags", "", "flags added to the peer's command line, e.g. '--persistence-max-qps 0' to lift the worker's rate limit of 500 calls/s")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
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
			c = strings.TrimSpace(c)
			if !slices.Contains(bench.CaseNames(), c) {
				return usagef("--cases: unknown case %q (cases: %s)", c, strings.Join(bench.CaseNames(), ", "))
			}
			o.Cases = append(o.Cases, c)
		}
	}
	if err := peerOptions(&o, *peerFlags, live); err != nil {
		return err
	}
	if live {
		if lo.MinDuration <= 0 || lo.MinSamples <= 0 || lo.Conns <= 0 || lo.Rate < 0 || lo.CapacityFor <= 0 {
			return usagef("--live-duration, --live-samples, --live-conns and --live-capacity-for must be positive, --live-rate not negative")
		}
		if !(lo.Share > 0 && lo.Share <= 1) { // also NaN
			return usagef("--live-share must be within 0 < F ≤ 1, not %v", lo.Share)
		}
		switch lo.Workload = bench.LiveWorkload(workload); lo.Workload {
		case bench.WorkloadLab, bench.WorkloadLabWrites, bench.WorkloadLabReads:
		case bench.WorkloadPgbench:
			for _, en := range o.Engines {
				if en != sqlstore.Postgres {
					return usagef("--live-workload pgbench runs on PostgreSQL only: give --engines postgres (not %s)", en)
				}
			}
			if _, err := exec.LookPath(lo.Pgbench); err != nil {
				return usagef("--live-workload pgbench: --pgbench: %v", err)
			}
		default:
			return usagef("--live-workload: unknown workload %q: use lab, lab-writes, lab-reads or pgbench", workload)
		}
		if len(binaries) > 1 {
			return usagef("--live-load measures one --binary at a time")
		}
		switch lo.Topology = bench.Topology(topology); lo.Topology {
		case bench.TopologyProduction:
			// The lab starts its own servers: a given one would go unused.
			for _, f := range []string{"postgres", "mysql"} {
				if fs.Changed(f) {
					return usagef("--%s names a server for --live-topology shared; --live-topology production starts servers of its own", f)
				}
			}
			o.Postgres, o.MySQL = "", ""
		case bench.TopologyShared:
		default:
			return usagef("--live-topology: unknown topology %q: use production or shared", topology)
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
	}
	if !quiet {
		o.Log = e.stderr
	}
	bins, cleanup, err := binariesUnderTest(ctx, binaries, source, o.Log)
	if err != nil {
		return err
	}
	defer cleanup()
	o.Binaries = bins
	if passFlagsText != "" {
		allowed, err := runFlagsOf(ctx, bins[0].Path)
		if err != nil {
			return err
		}
		if o.PassFlags, err = passFlags(passFlagsText, allowed); err != nil {
			return usagef("--pass-flags: %v", err)
		}
	}
	for _, x := range extra {
		allowed, err := runFlagsOf(ctx, bins[0].Path)
		if err != nil {
			return err
		}
		args, err := passFlags(x, allowed)
		if err != nil {
			return usagef("--live-extra: %v", err)
		}
		lo.Extra = append(lo.Extra, args)
	}
	writeBinaries(e.stdout, bins, markdown)
	if live {
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

// peerOptions checks --peer and --peer-flags into o: the peer must be an
// executable file, and its flags must leave alone what each pass sets.
func peerOptions(o *bench.Options, flags string, live bool) error {
	if o.Peer == "" {
		if flags != "" {
			return usagef("--peer-flags without --peer")
		}
		return nil
	}
	if live {
		return usagef("--peer runs in the idle-database comparison, not with --live-load")
	}
	abs, err := filepath.Abs(o.Peer)
	if err != nil {
		return usagef("--peer: %v", err)
	}
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		return usagef("--peer: %v", err)
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return usagef("--peer %s: not an executable file", o.Peer)
	}
	o.Peer = abs
	o.PeerFlags = strings.Fields(flags)
	for _, f := range o.PeerFlags {
		name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if strings.HasPrefix(f, "-") && slices.Contains([]string{"db", "stats-json", "log-level"}, name) {
			return usagef("--peer-flags: %s is the lab's to set", f)
		}
	}
	return nil
}
