package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// The live-load benchmark (RunLive) measures what a pass costs the
// cluster while it runs: the latency of matching's own statements (see
// workload.go) on queues the pass does not delete, with no pass, during a
// default (gentle) pass, during a pass with Temporal's settings, with each
// rate limit and at --pace full.
//
// Per engine it seeds one database (LiveOptions.Case), then:
//
//  1. measures the workload's capacity on a copy, closed loop with
//     LiveOptions.Conns operations at a time, with no pass;
//  2. offers LiveOptions.Share of it (default half; or LiveOptions.Rate),
//     open loop, in each phase:
//     every phase runs rounds of a fresh copy, the workload started on it,
//     the pass run as a child process (as in Run), the workload's samples
//     due while the pass ran kept, until a phase holds MinSamples samples
//     or MinDuration of them (no pass: the same, without a pass);
//  3. repeats the phases Repeat times, interleaved (every phase once, then
//     again), so that a change in the machine's load falls on all of them.
//
// The rate limits are set from the first default pass of the run: a
// quarter of its rows per second and of its statements per second, so
// that each limit binds.
//
// Where it all runs is LiveOptions.Topology (topology.go): by default the
// production topology, the lab's own server and the workload on one CPU
// and each pass on another, as when tqscavenger runs in a pod of its own;
// or the shared topology, the given servers, the workload and the passes
// on every CPU of the machine.

// LivePhase names what runs beside the workload.
type LivePhase string

// The phases, in the order they run.
const (
	LiveNone          LivePhase = "no pass"
	LiveDefault       LivePhase = "default"
	LiveTemporal      LivePhase = "temporal"
	LiveMaxDeletes    LivePhase = "max-deletes"
	LiveMaxStatements LivePhase = "max-statements"
	LiveFull          LivePhase = "full"
)

// LivePhases lists the phases in order.
func LivePhases() []LivePhase {
	return []LivePhase{LiveNone, LiveDefault, LiveTemporal, LiveMaxDeletes, LiveMaxStatements, LiveFull}
}

// LiveWorkload names a workload of the live-load benchmark.
type LiveWorkload string

// The workloads.
const (
	// WorkloadLab is the lab's own: matching's statements (workload.go),
	// in matching's mix: appends and reads most, leases rarely.
	WorkloadLab LiveWorkload = "lab"
	// WorkloadLabWrites is the lab's statements in a write-heavy mix:
	// appends, leases, ack-level updates and completes, one read in six
	// operations (workload.go's mixWrites). Every engine.
	WorkloadLabWrites LiveWorkload = "lab-writes"
	// WorkloadLabReads is the lab's statements in a read-heavy mix: four
	// reads per append, no lease (mixReads). Every engine.
	WorkloadLabReads LiveWorkload = "lab-reads"
	// WorkloadPgbench is PostgreSQL's pgbench running a script of lease,
	// append and read on queues of its own (pgbench.go), shaped unlike
	// the lab's, so that a pass's pace is not tuned to one workload.
	// PostgreSQL only.
	WorkloadPgbench LiveWorkload = "pgbench"
)

// LiveOptions configure RunLive; Options gives the engines, servers,
// binary, scale, repeats and pass timeout.
type LiveOptions struct {
	// Case is the seeded case the passes delete. Default "all-expired".
	Case string
	// MinSamples and MinDuration end a phase: it runs rounds until it
	// holds either. Defaults 10,000 and 60s.
	MinSamples  int
	MinDuration time.Duration
	// MaxRounds bounds the rounds of a phase. Default 30.
	MaxRounds int
	// Conns is the workload's connections (SQLite: always one, as
	// Temporal keeps). Default 8.
	Conns int
	// Queues is how many queues the workload writes. Default 64.
	Queues int
	// Rate is the offered rate, operations per second; it wins over
	// Share. Default: Share of the capacity measured.
	Rate float64
	// Share is the share of the capacity measured that is offered when
	// Rate is not set: 0 < Share ≤ 1. Default 0.5, half of it.
	Share float64
	// Workload is the workload beside the passes. Default WorkloadLab.
	Workload LiveWorkload
	// Pgbench is the pgbench executable of WorkloadPgbench, a path or a
	// name looked up in PATH. Default "pgbench".
	Pgbench string
	// CapacityFor is how long the capacity is measured. Default 5s.
	CapacityFor time.Duration
	// Phases limits the run to these phases, in LivePhases' order; the
	// limit phases need the default one before them. Default: all.
	Phases []LivePhase
	// Extra are phases of the caller's: each the flags of a pass (such as
	// "--task-batch-size 100 --pace full"), run after the others as
	// phase "extra 1", "extra 2", …
	Extra [][]string
	// Topology is where the processes run (topology.go). Default
	// TopologyProduction, which starts servers of its own and so takes no
	// Options.Postgres or Options.MySQL.
	Topology Topology

	// onRound, if set, is called with each round's target at the start
	// of its window (tests: to read the server's CPUs while it runs).
	onRound func(roundTarget)
}

func (o LiveOptions) withDefaults() LiveOptions {
	if o.Case == "" {
		o.Case = "all-expired"
	}
	if o.MinSamples <= 0 {
		o.MinSamples = 10_000
	}
	if o.MinDuration <= 0 {
		o.MinDuration = time.Minute
	}
	if o.MaxRounds <= 0 {
		o.MaxRounds = 30
	}
	if o.Conns <= 0 {
		o.Conns = 8
	}
	if o.Queues <= 0 {
		o.Queues = 64
	}
	if o.CapacityFor <= 0 {
		o.CapacityFor = 5 * time.Second
	}
	if o.Share == 0 {
		o.Share = 0.5
	}
	if o.Workload == "" {
		o.Workload = WorkloadLab
	}
	if o.Pgbench == "" {
		o.Pgbench = "pgbench"
	}
	if o.Topology == "" {
		o.Topology = TopologyProduction
	}
	return o
}

// check refuses options no run can use (after withDefaults).
func (o LiveOptions) check() error {
	if !(o.Share > 0 && o.Share <= 1) { // also NaN
		return fmt.Errorf("bench: the offered share of capacity is %v, want 0 < share ≤ 1", o.Share)
	}
	switch o.Workload {
	case WorkloadLab, WorkloadLabWrites, WorkloadLabReads:
	case WorkloadPgbench:
		if o.Queues > pgbenchMaxScripts {
			// One script per queue, and pgbench takes at most 128.
			return fmt.Errorf("bench: the pgbench workload has at most %d queues, not %d", pgbenchMaxScripts, o.Queues)
		}
	default:
		return fmt.Errorf("bench: unknown workload %q: use %s, %s, %s or %s", o.Workload, WorkloadLab, WorkloadLabWrites, WorkloadLabReads, WorkloadPgbench)
	}
	if !slices.Contains(Topologies(), o.Topology) {
		return fmt.Errorf("bench: unknown topology %q: use %s or %s", o.Topology, TopologyProduction, TopologyShared)
	}
	return nil
}

// checkPgbench refuses the pgbench workload on engines other than
// PostgreSQL, and without a pgbench to run; it returns pgbench's path.
func checkPgbench(engines []sqlstore.Engine, pgbench string) (string, error) {
	for _, e := range engines {
		if e != sqlstore.Postgres {
			return "", fmt.Errorf("bench: the pgbench workload runs on PostgreSQL only, not %s", e)
		}
	}
	path, err := exec.LookPath(pgbench)
	if err != nil {
		return "", fmt.Errorf("bench: the pgbench workload needs pgbench: %w", err)
	}
	return path, nil
}

// offered is the rate the phases offer: Rate if set, else Share of
// capacity.
func (o LiveOptions) offered(capacity float64) float64 {
	if o.Rate > 0 {
		return o.Rate
	}
	return capacity * o.Share
}

// LiveReport is the outcome of RunLive.
type LiveReport struct {
	Scale, Repeat int
	Options       LiveOptions
	Engines       []LiveEngine
}

// LiveEngine is what was measured on one engine.
type LiveEngine struct {
	Engine sqlstore.Engine
	Case   Case
	// Capacity is the workload's closed-loop rate with no pass; Offered
	// the open-loop rate of the phases.
	Capacity, Offered float64
	// MaxDeletes and MaxStatements are the rate limits of the limit
	// phases.
	MaxDeletes, MaxStatements float64
	// Reps holds each repetition's figures, in phase order.
	Reps [][]LiveFigure
	// Load is /proc/loadavg at the start of each repetition.
	Load []string
	// Server is the database side: the topology, the server, and where
	// each process ran.
	Server LiveServer
	// Warnings say where a copy did not end as it should, or a process
	// was not pinned where the topology puts it.
	Warnings []string
	Err      error
}

// LiveFigure is one phase's measurement in one repetition.
type LiveFigure struct {
	Phase LivePhase
	// Args are the pass's flags beyond the defaults.
	Args []string
	// Samples is the operations due while the passes ran; Window the time
	// they cover; Failed how many failed.
	Samples int
	Window  time.Duration
	Failed  int64
	// P50, P99 and Max are the operations' latencies from when they were
	// due; LockP99 and LockMax the time the locking ones (lease, append,
	// update) took to begin and lock the queue row: on SQLite the wait for
	// the writer lock.
	P50, P99, Max    time.Duration
	LockP99, LockMax time.Duration
	// Rate is the operations completed per second of the window.
	Rate float64
	// Rounds is how many passes ran; Pass is the one of median wall time.
	Rounds int
	Pass   PassResult
	// Costs are the database side of each round's window, in order
	// (livecost.go); DB the phase's figures from them.
	Costs []LiveRoundCost
	DB    LiveDB
	Err   error
}

// RunLive runs the live-load benchmark; see LivePhase and LiveOptions.
func RunLive(ctx context.Context, o Options, lo LiveOptions) (*LiveReport, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if len(o.Binaries) > 1 {
		// Two builds' phases on one machine load would need interleaving
		// and a table of their own; a run measures one build.
		return nil, errors.New("bench: the live-load benchmark measures one binary under test at a time")
	}
	if len(o.Engines) == 0 {
		o.Engines = []sqlstore.Engine{sqlstore.SQLite, sqlstore.Postgres, sqlstore.MySQL}
	}
	lo = lo.withDefaults()
	if err := lo.check(); err != nil {
		return nil, err
	}
	var pin *pinning
	if lo.Topology == TopologyProduction {
		if (o.Postgres != "" && slices.Contains(o.Engines, sqlstore.Postgres)) || (o.MySQL != "" && slices.Contains(o.Engines, sqlstore.MySQL)) {
			return nil, errors.New("bench: the production topology starts servers of its own: a server's DSN is for the shared topology")
		}
		p, err := choosePinning()
		if err != nil {
			return nil, err
		}
		pin = &p
	}
	if o.Postgres == "" {
		o.Postgres = DefaultPostgres
	}
	if o.MySQL == "" {
		o.MySQL = DefaultMySQL
	}
	o.Scale, o.Repeat = max(o.Scale, 1), max(o.Repeat, 1)
	if o.Env == nil {
		o.Env = childEnv(os.Environ())
	}
	if o.Log == nil {
		o.Log = nopWriter{}
	}
	if lo.Workload == WorkloadPgbench {
		path, err := checkPgbench(o.Engines, lo.Pgbench)
		if err != nil {
			return nil, err
		}
		lo.Pgbench = path
	}
	cases, err := selectCases([]string{lo.Case}, o.Scale)
	if err != nil {
		return nil, err
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "tqs-bench-")
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	r := &runner{o: o, id: runID()}
	rep := &LiveReport{Scale: o.Scale, Repeat: o.Repeat, Options: lo}
	var errs []error
	for _, e := range o.Engines {
		le := r.live(ctx, e, cases[0], lo, pin)
		rep.Engines = append(rep.Engines, le)
		if le.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e, le.Err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return rep, errors.Join(errs...)
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// loadAvg reads /proc/loadavg ("" where there is none).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (r *runner) live(ctx context.Context, e sqlstore.Engine, c Case, lo LiveOptions, pin *pinning) (le LiveEngine) {
	le = LiveEngine{Engine: e, Case: c}
	srv, side, err := r.openLiveSide(ctx, e, pin)
	if err != nil {
		le.Err = err
		return le
	}
	// Last: the copies are dropped (deferred below) before the server
	// stops.
	defer side.close(r)
	defer srv.close()
	defer func() {
		le.Server = side.info
		le.Warnings = append(le.Warnings, side.warnings...)
	}()
	base := "tqs_bench_" + r.id + "_live"
	seedName := base + "_seed"
	now := time.Now().UTC().Truncate(time.Second)
	r.logf("%s live-load %s %s: seeding", e, c.Name, c.Size())
	dsn, err := srv.create(ctx, seedName)
	defer r.drop(srv, seedName)
	if err == nil {
		err = seedDatabase(ctx, dsn, c, now)
	}
	if err == nil {
		err = srv.settle(ctx, seedName)
	}
	if err != nil {
		le.Err = fmt.Errorf("seed: %w", err)
		return le
	}
	lr := &liveRun{r: r, srv: srv, side: side, c: c, lo: lo, seed: seedName, copyName: base + "_copy", now: now}
	if e == sqlstore.SQLite {
		lr.lo.Conns = 1
	}
	// From here on the workload runs: in the production topology on the
	// database's CPU, the lab's own process with it.
	unpin, err := side.pinWorkload(r)
	if err != nil {
		le.Err = err
		return le
	}
	defer unpin()
	// Capacity: closed loop on a copy, no pass.
	le.Capacity, err = lr.capacity(ctx, lo.Conns)
	if err != nil {
		le.Err = fmt.Errorf("capacity: %w", err)
		return le
	}
	le.Offered = lo.offered(le.Capacity)
	lr.rate = le.Offered
	r.logf("%s live-load: capacity %.0f operations/s with %d connections; offering %.0f/s", e, le.Capacity, lr.lo.Conns, le.Offered)
	for rep := range r.o.Repeat {
		le.Load = append(le.Load, loadAvg())
		var figs []LiveFigure
		phases := LivePhases()
		for i := range lo.Extra {
			phases = append(phases, LivePhase(fmt.Sprintf("extra %d", i+1)))
		}
		for pi, ph := range phases {
			extra := pi >= len(LivePhases())
			if len(lo.Phases) > 0 && !slices.Contains(lo.Phases, ph) && !extra {
				continue
			}
			if (ph == LiveMaxDeletes || ph == LiveMaxStatements) && le.MaxDeletes == 0 {
				r.logf("%s live-load %s: skipped: the limits are set from a default pass, which did not run", e, ph)
				continue
			}
			var args []string
			switch ph {
			case LiveTemporal:
				args = []string{"--compat=temporal"}
			case LiveMaxDeletes:
				args = []string{"--max-deletes-per-second", fmt.Sprintf("%.0f", le.MaxDeletes)}
			case LiveMaxStatements:
				args = []string{"--max-statements-per-second", fmt.Sprintf("%.0f", le.MaxStatements)}
			case LiveFull:
				args = []string{"--pace", "full"}
			}
			if extra {
				args = lo.Extra[pi-len(LivePhases())]
			}
			f := lr.figure(ctx, ph, args, &le.Warnings)
			r.logf("%s live-load %s (%d of %d): %d samples over %s in %d rounds: p50 %s p99 %s max %s, lock p99 %s, %.0f ops/s; pass %s; load %s",
				e, ph, rep+1, r.o.Repeat, f.Samples, round(f.Window), f.Rounds, roundFine(f.P50), roundFine(f.P99), roundFine(f.Max), roundFine(f.LockP99), f.Rate, round(f.Pass.Wall), loadAvg())
			if f.Err != nil {
				r.logf("%s live-load %s: %v", e, ph, f.Err)
				le.Err = errors.Join(le.Err, fmt.Errorf("%s: %w", ph, f.Err))
			}
			if ph == LiveDefault && rep == 0 && f.Err == nil {
				// The limits bind at a quarter of what the default pass did.
				secs := f.Pass.Wall.Seconds()
				le.MaxDeletes = max(1, float64(f.Pass.Deleted.Tasks+f.Pass.Deleted.Queues)/secs/4)
				le.MaxStatements = max(1, float64(f.Pass.Statements)/secs/4)
			}
			figs = append(figs, f)
			if ctx.Err() != nil {
				setDB(figs)
				le.Reps = append(le.Reps, figs)
				le.Err = ctx.Err()
				return le
			}
		}
		setDB(figs)
		le.Reps = append(le.Reps, figs)
	}
	return le
}

// liveRun is one engine's live-load run.
type liveRun struct {
	r              *runner
	srv            server
	side           *liveSide
	c              Case
	lo             LiveOptions
	seed, copyName string
	// copies numbers the copies: each round's has a name of its own, so
	// that no file name (and on SQLite no path) is reused for a new copy
	// while anything of the last one may linger.
	copies int
	now    time.Time
	rate   float64
}

// nextCopy names the next copy.
func (lr *liveRun) nextCopy() string {
	lr.copies++
	return fmt.Sprintf("%s%d", lr.copyName, lr.copies)
}

func (lr *liveRun) capacity(ctx context.Context, conns int) (float64, error) {
	name := lr.nextCopy()
	dsn, err := lr.srv.copy(ctx, lr.seed, name)
	defer lr.r.drop(lr.srv, name)
	if err != nil {
		return 0, err
	}
	q, err := lr.srv.quiesce(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("quiesce: %w", err)
	}
	if q != "" {
		lr.r.logf("%s live-load capacity: %s", lr.srv.engine(), q)
	}
	wl, err := lr.openLoad(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer wl.close()
	return wl.capacity(ctx, conns, lr.lo.CapacityFor)
}

// liveLoad is a workload of the live-load benchmark on one copy: the
// lab's own (workload.go) or pgbench's (pgbench.go).
type liveLoad interface {
	// capacity runs the workload closed loop for d, conns operations at a
	// time, and returns the operations completed per second.
	capacity(ctx context.Context, conns int, d time.Duration) (float64, error)
	// start starts the workload open loop at rate operations per second.
	// stop ends it and returns every operation due before it was called,
	// each with its latency from when it was due, how many failed, and
	// an error if any failed or the workload could not be read back.
	start(ctx context.Context, rate float64) (stop func() ([]sample, int64, error), err error)
	// rows is what the workload's queues hold by its own ledger, after
	// stop: every row it wrote that a pass must keep.
	rows() Rows
	// pid is the process of the workload's client: the lab's own, or
	// pgbench's while it runs.
	pid() int
	close() error
}

// openLoad creates the workload of the options on the copy at dsn.
func (lr *liveRun) openLoad(ctx context.Context, dsn string) (liveLoad, error) {
	if lr.lo.Workload == WorkloadPgbench {
		return openPgbench(ctx, dsn, lr.lo, lr.r.o.Dir, lr.side.pinDB())
	}
	return openWorkload(ctx, dsn, lr.lo.Queues, lr.lo.Conns, mixOf(lr.lo.Workload))
}

// figure measures one phase: rounds until it holds enough samples.
func (lr *liveRun) figure(ctx context.Context, ph LivePhase, args []string, warnings *[]string) LiveFigure {
	f := LiveFigure{Phase: ph, Args: args}
	var (
		all    []sample
		passes []PassResult
	)
	for f.Rounds < lr.lo.MaxRounds && len(all) < lr.lo.MinSamples && f.Window < lr.lo.MinDuration {
		f.Rounds++
		out, err := lr.round(ctx, ph, args, lr.lo.MinSamples-len(all), warnings)
		f.Failed += out.failed
		if out.cost != nil {
			f.Costs = append(f.Costs, *out.cost)
		}
		if err != nil {
			f.Err = err
			break
		}
		all = append(all, out.samples...)
		f.Window += out.window
		if ph != LiveNone {
			passes = append(passes, out.pass)
		}
		if out.pass.TimedOut {
			break // another round would time out too
		}
	}
	if len(passes) > 0 {
		f.Pass = medianRun(passes)
	}
	f.Samples = len(all)
	var lat, lock []time.Duration
	var done int
	for _, s := range all {
		lat = append(lat, s.lat)
		if s.kind == opLease || s.kind == opAppend || s.kind == opUpdate {
			lock = append(lock, s.lock)
		}
		if s.ok {
			done++
		}
	}
	f.P50, f.P99, f.Max = quantile(lat, 0.5), quantile(lat, 0.99), quantile(lat, 1)
	f.LockP99, f.LockMax = quantile(lock, 0.99), quantile(lock, 1)
	if f.Window > 0 {
		f.Rate = float64(done) / f.Window.Seconds()
	}
	return f
}

// quantile returns the q-quantile of ts (nearest rank), sorting ts.
func quantile(ts []time.Duration, q float64) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	slices.Sort(ts)
	i := int(q*float64(len(ts))+0.5) - 1
	return ts[min(max(i, 0), len(ts)-1)]
}

// warmup is how long the workload runs on a copy before the pass starts:
// its connections are open and its first statements planned.
const warmup = time.Second

// roundOut is what one round measured.
type roundOut struct {
	// samples are the workload's operations due within the window, from
	// the pass's start to its end.
	samples []sample
	window  time.Duration
	pass    PassResult
	// failed is how many of the workload's operations failed.
	failed int64
	// cost is the database side of the window; nil if the round ended
	// before it.
	cost *LiveRoundCost
}

// round runs one copy: the workload, and the pass beside it (none for
// LiveNone, which then runs long enough for want samples, within
// MinDuration). It returns what was measured while the pass ran, as far
// as it got when it fails.
func (lr *liveRun) round(ctx context.Context, ph LivePhase, args []string, want int, warnings *[]string) (out roundOut, _ error) {
	name := lr.nextCopy()
	dsn, err := lr.srv.copy(ctx, lr.seed, name)
	defer lr.r.drop(lr.srv, name)
	if err != nil {
		return out, fmt.Errorf("copy: %w", err)
	}
	// The copy, the last round's pass and the dropped copy left the server
	// work it does in the background; without this a round's no-pass p99
	// moved 3.5–19 ms on PostgreSQL and 11–492 ms on MariaDB.
	q, err := lr.srv.quiesce(ctx, name)
	if err != nil {
		return out, fmt.Errorf("quiesce: %w", err)
	}
	if q != "" {
		lr.r.logf("%s live-load %s: %s", lr.srv.engine(), ph, q)
	}
	wl, err := lr.openLoad(ctx, dsn)
	if err != nil {
		return out, err
	}
	defer wl.close()
	stop, err := wl.start(ctx, lr.rate)
	if err != nil {
		return out, err
	}
	select {
	case <-time.After(warmup):
	case <-ctx.Done():
	}
	// The round's window, start to end: the database's cost is sampled
	// over it (livecost.go).
	t := lr.target(ph, dsn, wl)
	lr.side.observe(t)
	if lr.lo.onRound != nil {
		lr.lo.onRound(t)
	}
	watch := lr.watchCost(ctx, t)
	start := time.Now()
	if ph == LiveNone {
		d := min(lr.lo.MinDuration, time.Duration(float64(want)/lr.rate*float64(time.Second))+time.Second)
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	} else {
		out.pass = lr.pass(ctx, dsn, args)
		lr.side.observePass(out.pass.CPUs)
	}
	end := time.Now()
	cost := watch.stop()
	all, failed, werr := stop()
	out.failed = failed
	for _, s := range all {
		if !s.due.Before(start) && s.due.Before(end) {
			out.samples = append(out.samples, s)
		}
	}
	out.window = end.Sub(start)
	out.cost = roundCostOf(cost, out.samples)
	if out.pass.Err != nil {
		return out, out.pass.Err
	}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	if werr != nil {
		return out, werr
	}
	if !out.pass.TimedOut {
		// The pass deleted what it must and nothing of the workload's.
		left, _, err := countRows(ctx, dsn)
		if err != nil {
			return out, err
		}
		want := lr.c.want(PassDefault)
		if ph == LiveNone {
			want = Rows{Tasks: lr.c.Tasks(), Queues: int64(lr.c.Queues)}
		}
		own := wl.rows()
		want.Tasks += own.Tasks
		want.Queues += own.Queues
		if left != want {
			*warnings = append(*warnings, fmt.Sprintf("%s: the copy held %d tasks and %d queues after the round, want %d and %d", ph, left.Tasks, left.Queues, want.Tasks, want.Queues))
		}
	}
	return out, nil
}

// pass runs one pass with args as a child process on dsn.
func (lr *liveRun) pass(ctx context.Context, dsn string, args []string) PassResult {
	r := lr.r
	statsFile := filepath.Join(r.o.Dir, "stats-"+r.id+".json")
	os.Remove(statsFile)
	defer os.Remove(statsFile)
	measured := filepath.Join(r.o.Dir, "measure-"+r.id+".json")
	argv := append([]string{r.o.Binaries[0].Path, "run", "--db", dsn, "--progress", "never", "--log-level", "warn",
		"--now", lr.now.Format(time.RFC3339Nano), "--stats-json", statsFile}, args...)
	return r.child(ctx, Pass(strings.Join(append([]string{"run"}, args...), " ")), argv, statsFile, measured, lr.side.pinPass())
}
