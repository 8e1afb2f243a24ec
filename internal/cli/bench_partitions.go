package cli

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tqscavenger/tqscavenger/internal/bench"
)

// benchPartitionsFlags are bench partitions': N processes, each a
// partition, over one PostgreSQL database (see bench.RunPartitions).
func benchPartitionsFlags(g *flagGroups) runFunc {
	var (
		o      bench.PartitionOptions
		setups string
		quiet  bool
	)
	fs := g.Other
	fs.StringVar(&o.Postgres, "postgres", bench.DefaultPostgres, "PostgreSQL server: databases tqs_bench_* are created there and dropped after")
	fs.IntVar(&o.Queues, "queues", 2000, "queues seeded")
	fs.IntVar(&o.Tasks, "tasks", 1000, "expired tasks per queue")
	fs.StringVar(&setups, "setups", "1x4,2x2,4x1,2x4,4x4", "processes×workers to measure, comma-separated")
	fs.IntVar(&o.Rounds, "rounds", 2, "rounds; each runs every setup once, so that setups interleave")
	fs.StringVar(&o.Binary, "binary", "", "tqscavenger executable to run the passes (default: this one)")
	g.Output.BoolVar(&quiet, "quiet", false, "no progress lines on stderr")
	return func(ctx context.Context, inv *invocation) error {
		return benchPartitionsCmd(ctx, inv.env, o, setups, quiet)
	}
}

func benchPartitionsCmd(ctx context.Context, e *env, o bench.PartitionOptions, setups string, quiet bool) error {
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
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find this executable: %w (pass --binary)", err)
		}
		o.Binary = exe
	}
	dir, err := os.MkdirTemp("", "tqs-bench-parts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	o.Dir = dir
	if !quiet {
		o.Log = e.stderr
	}
	rs, err := bench.RunPartitions(ctx, o)
	bench.PrintPartitions(e.stdout, rs)
	return err
}
