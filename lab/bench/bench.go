// Package bench is the lab's benchmark: it measures builds of tqscavenger
// (binaries under test, given by path) against Temporal's settings,
// against each other and against the raw bound, on databases it seeds
// itself.
//
// For each engine and case it seeds one database, makes an identical copy
// for each measured pass, and runs every pass as a child process, started
// through the lab's own `measure` (see Measure) so that the peak RSS read
// from the child's rusage is the pass's own. The passes are:
//
//   - default: `BINARY run` with the build's defaults;
//   - temporal: `BINARY run --compat=temporal`, Temporal's algorithm
//     and knob values over the same store and SQL;
//   - default+past-live-head: the default with --past-live-head (only in
//     the live-head case, where it is what the raw bound does);
//   - raw: the lab's own `raw` (see Raw), which reads every task blob
//     once and deletes exactly the rows that must go with plain SQL in
//     large batches: the least work any scavenger must do;
//   - safe raw: raw with what a scavenger beside a live Temporal must do;
//   - temporal-peer, when Options.Peer names it: Temporal's own task
//     queue scavenger, the interop module's cmd/temporal-scavenger
//     (Temporal 1.32.1's code over its SQL plugins, at its defaults),
//     on the real clock (see peer.go).
//
// With several binaries under test (Options.Binaries), each of the first
// three passes runs once per binary, one after the other on fresh copies
// of the same seed, and the report compares what each deleted and how
// many statements it issued (Compare).
//
// After each pass the copy's remaining rows are counted and compared with
// what the case says must be left; a difference is reported as a warning.
// Seeding and copying are timed separately and are not part of the
// results.
package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// Default server DSNs: the local test servers.
const (
	DefaultPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	DefaultMySQL    = "mysql://root@127.0.0.1:3306/test"
)

// idleAge is how long ago every seeded queue was last updated: past the
// default grace of 48h, so a queue that ends empty is deleted.
const idleAge = 72 * time.Hour

// Case is one shape of seeded database.
type Case struct {
	// Name selects the case in Options.Cases.
	Name string
	// Queues × TasksPerQueue rows are seeded (subqueue 0 of each queue).
	Queues, TasksPerQueue int
	// Expired and NoExpiry are the shares of tasks that expired before
	// the pass and that never expire; the rest expire an hour after it.
	Expired, NoExpiry float64
	// Layout says where the expired tasks sit, as in package seed.
	Layout seed.Layout
	// PastLiveHead also times the default mode with --past-live-head:
	// the expired tasks sit behind a live one.
	PastLiveHead bool
	// Listing also measures the cost of listing pages of queue rows.
	Listing bool
	// Journal, if set, is the SQLite journal mode each copy is switched
	// to before its pass (seeding is in WAL): "delete" is the rollback
	// journal of Temporal's dev server files. The case runs on SQLite
	// only.
	Journal string
	// Large marks a case that runs only when named (--cases): too big
	// for the default run. It times the default pass and Temporal's
	// settings only; its figure is the default's time per deleted row
	// against all-expired's, which it multiplies by ten.
	Large bool
}

// Cases returns every case, at full size.
func Cases() []Case {
	return []Case{
		{Name: "all-expired", Queues: 1000, TasksPerQueue: 1000, Expired: 1, Layout: seed.ExpiredFirst},
		{Name: "live-head", Queues: 1000, TasksPerQueue: 1000, Expired: 0.5, NoExpiry: 0.5, Layout: seed.LiveFirst, PastLiveHead: true},
		{Name: "many-queues", Queues: 100_000, TasksPerQueue: 10, Expired: 1, Layout: seed.ExpiredFirst, Listing: true},
		{Name: "one-queue", Queues: 1, TasksPerQueue: 1_000_000, Expired: 1, Layout: seed.ExpiredFirst},
		{Name: "idle-queues", Queues: 1_000_000, TasksPerQueue: 0, Layout: seed.ExpiredFirst, Listing: true},
		{Name: "rollback-journal", Queues: 300, TasksPerQueue: 1000, Expired: 1, Layout: seed.ExpiredFirst, Journal: "delete"},
		{Name: "ten-million", Queues: 10_000, TasksPerQueue: 1000, Expired: 1, Layout: seed.ExpiredFirst, Large: true},
	}
}

// Scaled divides the case's size by scale: the number of queues where
// there are several (so each queue keeps its shape), else the tasks of
// the one queue. Sizes round up and stay at least 1.
func (c Case) Scaled(scale int) Case {
	if scale <= 1 {
		return c
	}
	if c.Queues > 1 {
		c.Queues = max(1, (c.Queues+scale-1)/scale)
	} else if c.TasksPerQueue > 1 {
		c.TasksPerQueue = max(1, (c.TasksPerQueue+scale-1)/scale)
	}
	return c
}

// Size formats the case's size as queues×tasks, e.g. "1k×1k".
func (c Case) Size() string { return count(c.Queues) + "×" + count(c.TasksPerQueue) }

// Tasks is the number of task rows seeded.
func (c Case) Tasks() int64 { return int64(c.Queues) * int64(c.TasksPerQueue) }

// ExpiredTasks is the number of expired task rows seeded.
func (c Case) ExpiredTasks() int64 {
	var n int64
	for _, k := range kinds(c) {
		if k == kindExpired {
			n++
		}
	}
	return n * int64(c.Queues)
}

// Pass names one measured pass.
type Pass string

// The passes, in the order they run.
const (
	PassDefault      Pass = "default"
	PassTemporal     Pass = "temporal"
	PassPastLiveHead Pass = "default+past-live-head"
	PassRaw          Pass = "raw"
	// PassSafeRaw is the safe raw bound: raw plus the range_id fence on
	// queue deletes and the orphan re-check's walk (RawConfig.Safe).
	PassSafeRaw Pass = "safe raw"
)

// rawTxBudget is the write transaction of the raw bounds in the
// rollback-journal case: several deletes per commit, each transaction
// open at most about this long, the bound a scavenger beside Temporal's
// writers must keep.
const rawTxBudget = 100 * time.Millisecond

// raw reports whether p is one of the lab's raw bounds, not a pass of a
// binary under test.
func (p Pass) raw() bool { return p == PassRaw || p == PassSafeRaw }

// passes lists the passes of c.
func (c Case) passes() []Pass {
	if c.Large {
		return []Pass{PassDefault, PassTemporal}
	}
	if c.PastLiveHead {
		return []Pass{PassDefault, PassTemporal, PassPastLiveHead, PassRaw, PassSafeRaw}
	}
	return []Pass{PassDefault, PassTemporal, PassRaw, PassSafeRaw}
}

// want is what a pass must leave: the rows of the case minus what the
// pass's rules delete.
func (c Case) want(p Pass) Rows {
	left := Rows{Tasks: c.Tasks(), Queues: int64(c.Queues)}
	stopsAtHead := c.Layout == seed.LiveFirst && c.NoExpiry > 0
	if stopsAtHead && (p == PassDefault || p == PassTemporal || p == PassPeer) {
		return left // Temporal's rule: nothing behind a live head goes
	}
	left.Tasks -= c.ExpiredTasks()
	if left.Tasks == 0 {
		left.Queues = 0 // idle past the grace and empty
	}
	return left
}

// Options configure Run.
type Options struct {
	// Engines to measure, in order. Default: SQLite, PostgreSQL, MySQL.
	Engines []sqlstore.Engine
	// Postgres and MySQL are server DSNs; Run creates databases named
	// tqs_bench_* there and drops them after. Defaults DefaultPostgres
	// and DefaultMySQL.
	Postgres, MySQL string
	// Cases names the cases to run (see Cases). Default: all but the
	// large ones.
	Cases []string
	// Scale divides every case's size (see Case.Scaled). Default 1.
	Scale int
	// Repeat runs each pass this many times, each on a fresh copy, and
	// reports the run of median wall time. Default 1.
	Repeat int
	// PassTimeout stops a pass that runs longer (Temporal's settings on
	// one queue of a million tasks can take an hour), which is then
	// reported as taking more than PassTimeout. Default: no limit.
	PassTimeout time.Duration

	// Binaries are the tqscavenger executables under test: each of the
	// default, temporal and past-live-head passes runs as `PATH run …`
	// once per binary. At least one is required; with several, each needs
	// a distinct Label.
	Binaries []Binary
	// Self is the lab's own executable: it runs each pass under its
	// `measure` command and the raw bounds as its `raw`. Default: this
	// process's executable.
	Self string
	// Env is the children's environment. Default: this process's,
	// without TQSCAVENGER_* variables, which would change the passes.
	Env []string

	// Dir is where SQLite files and the children's stats go. Default: a
	// new temporary directory, removed at the end.
	Dir string
	// Log receives a line per step. Default: nothing.
	Log io.Writer

	// ListPageSize is the page size of the listing measurement. Default:
	// the number of queues / 100, within 10..1000, so there are enough
	// pages for the first and last tenth to mean something.
	ListPageSize int
	// RawPageSize and RawBatchSize are the raw bound's rows per read and
	// per delete. Defaults DefaultRawPageSize and DefaultRawBatchSize.
	RawPageSize, RawBatchSize int
	// PassFlags are added to every pass of the binaries under test (the
	// default, temporal and past-live-head ones), e.g. "--pace full": the
	// default pass is gentle since paces, and the raw bounds are the
	// full pace's yardstick. Default: none.
	PassFlags []string

	// Peer is the interop module's temporal-scavenger executable: with
	// it, each case also runs the temporal-peer pass, Temporal's own
	// scavenger, once. Default: none.
	Peer string
	// PeerFlags are added to the peer's command line, e.g.
	// "--persistence-max-qps 0" to lift the worker's rate limit.
	// Default: none, Temporal's defaults.
	PeerFlags []string
}

// Binary is one tqscavenger executable under test.
type Binary struct {
	// Label names it in the report, e.g. "old" or "new"; "" for the only
	// one.
	Label string
	// Path is the executable.
	Path string
}

// check validates the binaries and fills in Self.
func (o *Options) check() error {
	if len(o.Binaries) == 0 {
		return errors.New("bench: no tqscavenger binary under test")
	}
	seen := map[string]bool{}
	for _, b := range o.Binaries {
		if b.Path == "" {
			return errors.New("bench: a binary under test without a path")
		}
		if len(o.Binaries) > 1 && (b.Label == "" || seen[b.Label]) {
			return fmt.Errorf("bench: binaries under test need distinct labels (%q)", b.Label)
		}
		seen[b.Label] = true
	}
	if err := o.checkPeer(); err != nil {
		return err
	}
	if o.Self == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("bench: find the lab's own executable: %w", err)
		}
		o.Self = exe
	}
	return nil
}

// Report is the outcome of Run.
type Report struct {
	Scale, Repeat int
	PassTimeout   time.Duration
	Engines       []EngineReport
}

// EngineReport is what was measured on one engine.
type EngineReport struct {
	Engine sqlstore.Engine
	Cases  []CaseReport
	// Err is why the engine could not be measured at all.
	Err error
}

// CaseReport is what was measured for one case on one engine.
type CaseReport struct {
	Case Case
	// Seed is how long seeding took (and, on PostgreSQL and MySQL,
	// collecting statistics after it); Copy the mean time to make one
	// copy for a pass. Neither is part of any pass.
	Seed, Copy time.Duration
	// Passes are in the order they ran.
	Passes  []PassResult
	Listing *Listing
	// Warnings say where the copies did not end as they should.
	Warnings []string
	// Err is why the case stopped early.
	Err error
}

// Rows counts rows of the v1 task tables.
type Rows struct {
	Tasks, Queues int64
}

// PassResult is one measured pass.
type PassResult struct {
	Pass Pass
	// Binary is the label of the binary under test that ran the pass: ""
	// for the lab's own raw bounds, and for the only binary.
	Binary string
	// Wall is the child's wall-clock time, process start to exit.
	Wall time.Duration
	// Elapsed is the pass's own time as it reported it.
	Elapsed time.Duration
	// Peer is what only the peer pass reports; nil for the others.
	Peer *PeerResult
	// Deleted is what the pass reported deleting.
	Deleted Rows
	// Statements is how many statements the pass issued.
	Statements int64
	// MaxRSS is the child's peak resident set, in bytes.
	MaxRSS int64
	// CPUs is what the child may run on (Cpus_allowed_list), as read
	// when it started; "" where unknown.
	CPUs string
	// Left is what the copy held after the pass; TaskIDSum sums its
	// task ids, to tell apart copies with the same counts.
	Left      Rows
	TaskIDSum int64
	// TimedOut: the pass was stopped after Options.PassTimeout. Wall is
	// then the timeout, and Deleted what it had deleted by then.
	TimedOut bool
	// Runs is how many times the pass ran; the result is the run of
	// median wall time.
	Runs int
	Err  error
}

// Name is the pass as the report shows it: "new: default" for a pass of
// the binary labelled new.
func (p PassResult) Name() string {
	if p.Binary == "" {
		return string(p.Pass)
	}
	return p.Binary + ": " + string(p.Pass)
}

// Rate is rows deleted (tasks and queues) per second of wall time.
func (p PassResult) Rate() float64 {
	if p.Wall <= 0 {
		return 0
	}
	return float64(p.Deleted.Tasks+p.Deleted.Queues) / p.Wall.Seconds()
}

// find returns the result of pass p run by the binary labelled bin (any
// for the raw bounds, which are the lab's own), or nil.
func (c *CaseReport) find(p Pass, bin string) *PassResult {
	for i := range c.Passes {
		if c.Passes[i].Pass == p && (c.Passes[i].Binary == bin || p.raw()) && c.Passes[i].Err == nil {
			return &c.Passes[i]
		}
	}
	return nil
}

// Run seeds, copies and measures every case on every engine. A case that
// fails is reported in its CaseReport and the others still run; the
// returned error joins every failure.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if len(o.Engines) == 0 {
		o.Engines = []sqlstore.Engine{sqlstore.SQLite, sqlstore.Postgres, sqlstore.MySQL}
	}
	if o.Postgres == "" {
		o.Postgres = DefaultPostgres
	}
	if o.MySQL == "" {
		o.MySQL = DefaultMySQL
	}
	o.Scale = max(o.Scale, 1)
	o.Repeat = max(o.Repeat, 1)
	if o.Env == nil {
		o.Env = childEnv(os.Environ())
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	cases, err := selectCases(o.Cases, o.Scale)
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
	rep := &Report{Scale: o.Scale, Repeat: o.Repeat, PassTimeout: o.PassTimeout}
	var errs []error
	for _, e := range o.Engines {
		er := r.engine(ctx, e, cases)
		rep.Engines = append(rep.Engines, er)
		if er.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e, er.Err))
		}
		for _, c := range er.Cases {
			if c.Err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", e, c.Case.Name, c.Err))
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	r.logf("done; the benchmark's own peak RSS: %.1f MB", mb(selfMaxRSS()))
	return rep, errors.Join(errs...)
}

// selectCases returns the named cases (all for none), scaled.
func selectCases(names []string, scale int) ([]Case, error) {
	all := Cases()
	if len(names) == 0 {
		var out []Case
		for _, c := range all {
			if !c.Large {
				out = append(out, c.Scaled(scale))
			}
		}
		return out, nil
	}
	var out []Case
	for _, n := range names {
		found := false
		for _, c := range all {
			if c.Name == n {
				out = append(out, c.Scaled(scale))
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("bench: unknown case %q (cases: %s)", n, strings.Join(CaseNames(), ", "))
		}
	}
	return out, nil
}

// CaseNames lists the names of Cases.
func CaseNames() []string {
	var out []string
	for _, c := range Cases() {
		out = append(out, c.Name)
	}
	return out
}

// childEnv drops TQSCAVENGER_* variables: every flag of the command can
// come from one, and an inherited TQSCAVENGER_COMPAT or _DB would change
// what a pass measures.
func childEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TQSCAVENGER_") {
			out = append(out, kv)
		}
	}
	return out
}

// runID tells this run's databases from another run's on the same server.
func runID() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// runner holds what one Run shares across engines and cases.
type runner struct {
	o  Options
	id string
}

func (r *runner) logf(format string, a ...any) {
	fmt.Fprintf(r.o.Log, "bench: "+format+"\n", a...)
}

func (r *runner) engine(ctx context.Context, e sqlstore.Engine, cases []Case) EngineReport {
	er := EngineReport{Engine: e}
	srv, err := newServer(ctx, e, r.o)
	if err != nil {
		er.Err = err
		r.logf("%s: %v", e, err)
		return er
	}
	defer srv.close()
	for _, c := range cases {
		if c.Journal != "" && e != sqlstore.SQLite {
			r.logf("%s %s: skipped: a SQLite journal mode", e, c.Name)
			continue
		}
		cr := r.runCase(ctx, srv, c)
		er.Cases = append(er.Cases, cr)
		if ctx.Err() != nil {
			break
		}
	}
	return er
}

// runCase seeds the case once, then copies and measures each pass.
func (r *runner) runCase(ctx context.Context, srv server, c Case) (cr CaseReport) {
	cr.Case = c
	e := srv.engine()
	base := "tqs_bench_" + r.id + "_" + strings.ReplaceAll(c.Name, "-", "_")
	seedName := base + "_seed"
	// Seeding happens at now, and every pass is told that it is still
	// now, so that reruns of a slow case see the same expiries.
	now := time.Now().UTC().Truncate(time.Second)

	r.logf("%s %s %s: seeding %s task rows and %s queue rows", e, c.Name, c.Size(), count64(c.Tasks()), count(c.Queues))
	start := time.Now()
	dsn, err := srv.create(ctx, seedName)
	defer r.drop(srv, seedName)
	if err == nil {
		err = seedDatabase(ctx, dsn, c, now)
	}
	if err == nil {
		err = srv.settle(ctx, seedName)
	}
	if err != nil {
		cr.Err = fmt.Errorf("seed: %w", err)
		r.logf("%s %s: %v", e, c.Name, cr.Err)
		return cr
	}
	cr.Seed = time.Since(start)
	r.logf("%s %s: seeded in %s (%.0f rows/s)", e, c.Name, round(cr.Seed), float64(c.Tasks()+int64(c.Queues))/cr.Seed.Seconds())

	if c.Listing {
		l, err := measureListing(ctx, dsn, r.listPageSize(c))
		if err != nil {
			cr.Err = fmt.Errorf("listing: %w", err)
			return cr
		}
		cr.Listing = &l
		r.logf("%s %s: listing %d pages of %d: median first 10%% %s, last 10%% %s", e, c.Name, l.Pages, l.PageSize, l.First, l.Last)
	}

	var (
		copies time.Duration
		all    []PassResult // every run, for verify
	)
	i := 0
	for _, p := range r.passes(c) {
		bins := r.o.Binaries
		if p.raw() || p == PassPeer {
			bins = bins[:1] // the lab's own and the peer: once
		}
		for _, bin := range bins {
			i++
			var runs []PassResult
			for run := range r.o.Repeat {
				name := fmt.Sprintf("%s_p%d", base, i)
				start := time.Now()
				cdsn, err := srv.copy(ctx, seedName, name)
				if err == nil && c.Journal != "" {
					err = setJournal(ctx, cdsn, c.Journal)
				}
				copies += time.Since(start)
				if err != nil {
					r.drop(srv, name)
					cr.Err = fmt.Errorf("copy for %s: %w", p, err)
					return cr
				}
				res := r.runPass(ctx, p, bin, cdsn, now, c)
				if res.Err == nil && !res.TimedOut {
					res.Left, res.TaskIDSum, res.Err = countRows(ctx, cdsn)
				}
				r.drop(srv, name)
				runs = append(runs, res)
				r.logPass(e, c, run, res)
				if ctx.Err() != nil {
					cr.Err = ctx.Err()
					return cr
				}
				if res.Err != nil || res.TimedOut {
					break // a rerun would fail or time out the same way
				}
			}
			all = append(all, runs...)
			cr.Passes = append(cr.Passes, medianRun(runs))
		}
	}
	cr.Copy = copies / time.Duration(len(all))
	cr.Warnings = verify(c, all)
	for _, w := range cr.Warnings {
		r.logf("%s %s: warning: %s", e, c.Name, w)
	}
	return cr
}

func (r *runner) logPass(e sqlstore.Engine, c Case, run int, res PassResult) {
	label := fmt.Sprintf("%s %s %s", e, c.Name, res.Name())
	if r.o.Repeat > 1 {
		label += fmt.Sprintf(" (run %d of %d)", run+1, r.o.Repeat)
	}
	switch {
	case res.Err != nil:
		r.logf("%s: %v", label, res.Err)
	case res.TimedOut:
		r.logf("%s: stopped after %s, having deleted %d tasks and %d queues", label, r.o.PassTimeout, res.Deleted.Tasks, res.Deleted.Queues)
	case res.Peer != nil:
		r.logf("%s: %s (its work %s), deleted %d tasks and %d queues, %d persistence calls, peak RSS %.1f MB",
			label, round(res.Wall), roundFine(res.Peer.Work), res.Deleted.Tasks, res.Deleted.Queues, res.Peer.Calls, mb(res.MaxRSS))
	default:
		r.logf("%s: %s, deleted %d tasks and %d queues, %d statements, peak RSS %.1f MB",
			label, round(res.Wall), res.Deleted.Tasks, res.Deleted.Queues, res.Statements, mb(res.MaxRSS))
	}
}

// medianRun returns the run of median wall time (the faster of the middle
// two for an even count), with Runs set.
func medianRun(runs []PassResult) PassResult {
	sorted := slices.Clone(runs)
	slices.SortStableFunc(sorted, func(a, b PassResult) int {
		if (a.Err != nil) != (b.Err != nil) { // failures last
			if a.Err != nil {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Wall, b.Wall)
	})
	m := sorted[(len(sorted)-1)/2]
	m.Runs = len(runs)
	return m
}

// drop drops a database even when ctx has ended: an interrupted run
// should not leave copies behind.
func (r *runner) drop(srv server, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.drop(ctx, name); err != nil {
		r.logf("%s: drop %s: %v", srv.engine(), name, err)
	}
}

func (r *runner) listPageSize(c Case) int {
	if r.o.ListPageSize > 0 {
		return r.o.ListPageSize
	}
	return min(1000, max(10, c.Queues/100))
}

// runPass runs one pass as a child process on the copy dsn: a pass of
// the binary under test bin, or one of the lab's raw bounds.
func (r *runner) runPass(ctx context.Context, p Pass, bin Binary, dsn string, now time.Time, c Case) PassResult {
	statsFile := filepath.Join(r.o.Dir, "stats-"+r.id+".json")
	os.Remove(statsFile)
	defer os.Remove(statsFile)
	measured := filepath.Join(r.o.Dir, "measure-"+r.id+".json")
	at := now.Format(time.RFC3339Nano)
	label := bin.Label
	args := []string{bin.Path, "run", "--db", dsn, "--progress", "never", "--log-level", "warn", "--now", at, "--stats-json", statsFile}
	switch p {
	case PassTemporal:
		args = append(args, "--compat=temporal")
	case PassPastLiveHead:
		args = append(args, "--past-live-head")
	}
	switch p {
	case PassDefault, PassTemporal, PassPastLiveHead:
		args = append(args, r.o.PassFlags...)
	case PassPeer:
		label = ""
		args = r.peerArgs(dsn, statsFile)
	case PassRaw, PassSafeRaw:
		label = ""
		args = []string{r.o.Self, "raw", "--db", dsn, "--now", at, "--stats-json", statsFile}
		if p == PassSafeRaw {
			args = append(args, "--safe")
		}
		if c.Journal != "" {
			args = append(args, "--tx-budget", rawTxBudget.String())
		}
		if r.o.RawPageSize > 0 {
			args = append(args, "--page-size", fmt.Sprint(r.o.RawPageSize))
		}
		if r.o.RawBatchSize > 0 {
			args = append(args, "--batch-size", fmt.Sprint(r.o.RawBatchSize))
		}
	}
	res := r.child(ctx, p, args, statsFile, measured, nil)
	res.Binary = label
	if p == PassPeer {
		// Its own fields, from the summary child has read the counts of.
		peer, err := readPeer(statsFile)
		switch {
		case err == nil:
			res.Peer = peer
		case res.Err == nil && !res.TimedOut:
			res.Err = err
		}
	}
	return res
}

// verify compares what each pass left and reported with what the case
// says it must, and the passes that must agree with each other.
func verify(c Case, passes []PassResult) []string {
	var ws []string
	seeded := Rows{Tasks: c.Tasks(), Queues: int64(c.Queues)}
	sums := map[Rows]map[int64][]string{}
	for _, p := range passes {
		if p.Err != nil || p.TimedOut {
			continue
		}
		want := c.want(p.Pass)
		if p.Left != want {
			ws = append(ws, fmt.Sprintf("%s left %d tasks and %d queues, want %d and %d", p.Name(), p.Left.Tasks, p.Left.Queues, want.Tasks, want.Queues))
		}
		gone := Rows{Tasks: seeded.Tasks - p.Left.Tasks, Queues: seeded.Queues - p.Left.Queues}
		if p.Deleted != gone {
			ws = append(ws, fmt.Sprintf("%s reported deleting %d tasks and %d queues, but %d and %d are gone", p.Name(), p.Deleted.Tasks, p.Deleted.Queues, gone.Tasks, gone.Queues))
		}
		if sums[p.Left] == nil {
			sums[p.Left] = map[int64][]string{}
		}
		sums[p.Left][p.TaskIDSum] = append(sums[p.Left][p.TaskIDSum], p.Name())
	}
	// Passes that left the same counts must have left the same tasks.
	for left, bySum := range sums {
		if len(bySum) > 1 {
			ws = append(ws, fmt.Sprintf("passes leaving %d tasks left different ones (by sum of task ids: %v)", left.Tasks, bySum))
		}
	}
	return ws
}

// setJournal switches the SQLite file of dsn to journal mode mode and
// checks that it took.
func setJournal(ctx context.Context, dsn, mode string) error {
	db, _, err := openSQL(ctx, dsn, sqlstore.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	var got string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode = "+mode).Scan(&got); err != nil {
		return fmt.Errorf("journal mode %s: %w", mode, err)
	}
	if !strings.EqualFold(got, mode) {
		return fmt.Errorf("journal mode %s: the file is in %s", mode, got)
	}
	return nil
}

// countRows counts what a copy holds in the v1 task tables.
func countRows(ctx context.Context, dsn string) (Rows, int64, error) {
	db, _, err := openSQL(ctx, dsn, sqlstore.Options{})
	if err != nil {
		return Rows{}, 0, fmt.Errorf("count rows: %w", err)
	}
	defer db.Close()
	var r Rows
	var sum int64
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(task_id), 0) FROM tasks").Scan(&r.Tasks, &sum); err != nil {
		return r, 0, fmt.Errorf("count tasks: %w", err)
	}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM task_queues").Scan(&r.Queues); err != nil {
		return r, 0, fmt.Errorf("count queues: %w", err)
	}
	return r, sum, nil
}

// child runs one measured pass, args (the executable and its arguments),
// as a child process, pinned by pin if not nil (see runChild), and reads
// the counts it wrote to statsFile. A pass stopped at Options.PassTimeout
// is reported as timed out with what it did by then.
func (r *runner) child(ctx context.Context, p Pass, args []string, statsFile, measured string, pin func(*exec.Cmd)) PassResult {
	pctx := ctx
	if r.o.PassTimeout > 0 {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, r.o.PassTimeout)
		defer cancel()
	}
	res := PassResult{Pass: p}
	ch, err := runChild(pctx, r.o.Self, args, r.o.Env, measured, pin)
	res.Wall, res.MaxRSS, res.CPUs = ch.wall, ch.maxRSS, ch.cpus
	if err != nil && ctx.Err() == nil && pctx.Err() != nil {
		// Stopped at the timeout: what it did by then is still worth
		// showing; the copy's state is not checked.
		res.TimedOut, res.Wall, err = true, r.o.PassTimeout, nil
	}
	if err != nil {
		res.Err = err
		return res
	}
	st, err := readStats(statsFile)
	if err != nil {
		if !res.TimedOut {
			res.Err = err
		}
		return res
	}
	res.Statements = st.Statements
	res.Deleted = Rows{Tasks: st.TasksDeleted, Queues: st.QueuesDeleted}
	res.Elapsed = time.Duration(st.ElapsedSeconds * float64(time.Second))
	return res
}
