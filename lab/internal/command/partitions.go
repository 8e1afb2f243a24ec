package command

import (
	"context"
	"os"
	"strconv"
	"strings"

	"github.com/tqscavenger/tqscavenger/lab/bench"
)

// partitionsCmd times N processes of the binary under test, each a
// partition, over one PostgreSQL database (see bench.RunPartitions).
func partitionsCmd(ctx context.Context, e *env, args []string) error {
	var (
		o        bench.PartitionOptions
		setups   string
		binaries []string
		source   string
		quiet    bool
	)
	fs := newFlags(e, "partitions", "[flags]")
	fs.StringArrayVar(&binaries, "binary", nil, "tqscavenger executable under test (default: one built from the main module)")
	fs.StringVar(&source, "source", "", "the main module's directory, to build the default binary from (default: found from the working directory upwards)")
	fs.StringVar(&o.Postgres, "postgres", bench.DefaultPostgres, "PostgreSQL server: databases tqs_bench_* are created there and dropped after")
	fs.IntVar(&o.Queues, "queues", 2000, "queues seeded")
	fs.IntVar(&o.Tasks, "tasks", 1000, "expired tasks per queue")
	fs.StringVar(&setups, "setups", "1x4,2x2,4x1,2x4,4x4", "processes×workers to measure, comma-separated")
	fs.IntVar(&o.Rounds, "rounds", 2, "rounds; each runs every setup once, so that setups interleave")
	fs.BoolVar(&quiet, "quiet", false, "no progress lines on stderr")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	for _, s := range strings.Split(setups, ",") {
		p, w, ok := strings.Cut(strings.TrimSpace(s), "x")
		np, err1 := strconv.Atoi(p)
		nw, err2 := strconv.Atoi(w)
		if !ok || err1 != nil || err2 != nil || np < 1 || nw < 1 {
			return usagef("--setups %q: want PROCSxWORKERS, such as 2x2", s)
		}
		o.Setups = append(o.Setups, bench.PartitionSetup{Procs: np, Workers: nw})
	}
	if o.Queues < 1 || o.Tasks < 1 || o.Rounds < 1 {
		return usagef("--queues, --tasks and --rounds must be at least 1")
	}
	if len(binaries) > 1 {
		return usagef("partitions measures one --binary at a time")
	}
	if !quiet {
		o.Log = e.stderr
	}
	bins, cleanup, err := binariesUnderTest(ctx, binaries, source, o.Log)
	if err != nil {
		return err
	}
	defer cleanup()
	o.Binary = bins[0].Path
	dir, err := os.MkdirTemp("", "tqs-bench-parts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	o.Dir = dir
	writeBinaries(e.stdout, bins, false)
	rs, err := bench.RunPartitions(ctx, o)
	bench.PrintPartitions(e.stdout, rs)
	return err
}
