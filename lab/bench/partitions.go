package bench

// The partitions benchmark: N processes scavenge one PostgreSQL database,
// each a partition (run --partition I/N), against one process over the
// whole space, at equal total workers and at more.

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// PartitionSetup is one measured configuration: Procs processes, each a
// partition of Procs, each with Workers workers.
type PartitionSetup struct{ Procs, Workers int }

func (s PartitionSetup) String() string { return fmt.Sprintf("%d×%d", s.Procs, s.Workers) }

// DefaultPartitionSetups are equal total workers (1×4, 2×2, 4×1) and four
// workers per process (2×4, 4×4).
var DefaultPartitionSetups = []PartitionSetup{{1, 4}, {2, 2}, {4, 1}, {2, 4}, {4, 4}}

// PartitionOptions configures RunPartitions.
type PartitionOptions struct {
	Postgres      string // server DSN; databases tqs_bench_* are made and dropped
	Binary        string // the tqscavenger executable
	Dir           string // for stats files
	Queues, Tasks int    // Queues × Tasks expired tasks (default 2000 × 1000)
	Setups        []PartitionSetup
	Rounds        int // every setup once per round, rounds interleave setups
	Log           io.Writer
	Env           []string
}

// PartitionResult is one measured pass.
type PartitionResult struct {
	Setup PartitionSetup
	Round int
	Wall  time.Duration
	// Deleted and Examined sum the processes' tasks; Statements theirs.
	Deleted, Examined, Statements int64
	// BackendCPU is the CPU time of the PostgreSQL backends serving the
	// pass's database, sampled from /proc while they live (a backend's
	// counters go with it).
	BackendCPU time.Duration
	// Load1 is the machine's 1-minute load average before and after.
	LoadBefore, LoadAfter float64
	Err                   error
}

// Rate is tasks deleted per second of wall time.
func (r PartitionResult) Rate() float64 { return float64(r.Deleted) / r.Wall.Seconds() }

// RunPartitions seeds one database and measures every setup on a fresh
// copy of it, round by round.
func RunPartitions(ctx context.Context, o PartitionOptions) ([]PartitionResult, error) {
	if o.Queues <= 0 {
		o.Queues = 2000
	}
	if o.Tasks <= 0 {
		o.Tasks = 1000
	}
	if len(o.Setups) == 0 {
		o.Setups = DefaultPartitionSetups
	}
	o.Rounds = max(o.Rounds, 1)
	if o.Log == nil {
		o.Log = io.Discard
	}
	srv, err := openSQLServer(ctx, sqlstore.Postgres, o.Postgres)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	id := runID()
	base := "tqs_bench_" + id + "_parts"
	now := time.Now().Add(-time.Minute).Truncate(time.Second)
	c := Case{Name: "partitions", Queues: o.Queues, TasksPerQueue: o.Tasks, Expired: 1, Layout: seed.ExpiredFirst}
	fmt.Fprintf(o.Log, "seeding %s expired tasks in %d queues\n", count64(c.Tasks()), c.Queues)
	dsn, err := srv.create(ctx, base)
	if err != nil {
		return nil, err
	}
	defer srv.drop(context.WithoutCancel(ctx), base)
	if err := seedDatabase(ctx, dsn, c, now); err != nil {
		return nil, err
	}
	if err := srv.settle(ctx, base); err != nil {
		return nil, err
	}
	var out []PartitionResult
	for round := 1; round <= o.Rounds; round++ {
		for _, s := range o.Setups {
			name := fmt.Sprintf("%s_%d_%d", base, round, s.Procs*100+s.Workers)
			cdsn, err := srv.copy(ctx, base, name)
			if err != nil {
				return out, err
			}
			res := runPartitioned(ctx, o, srv, name, cdsn, s, now)
			res.Round = round
			if res.Err == nil && res.Deleted != c.Tasks() {
				res.Err = fmt.Errorf("deleted %d tasks, %d were expired", res.Deleted, c.Tasks())
			}
			srv.drop(context.WithoutCancel(ctx), name)
			fmt.Fprintf(o.Log, "round %d %s: %s, %.0f rows/s, backends %.1fs CPU, load %.1f→%.1f %v\n", round, s, round3(res.Wall), res.Rate(), res.BackendCPU.Seconds(), res.LoadBefore, res.LoadAfter, errText(res.Err))
			out = append(out, res)
		}
	}
	return out, nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return "error: " + err.Error()
}

func round3(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// runPartitioned runs s.Procs processes at once over the copy dsn.
func runPartitioned(ctx context.Context, o PartitionOptions, srv *sqlServer, name, dsn string, s PartitionSetup, now time.Time) PartitionResult {
	res := PartitionResult{Setup: s, LoadBefore: loadAvg1m()}
	sampler := newBackendSampler(srv.admin, name)
	sctx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() { defer close(sampled); sampler.run(sctx) }()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, s.Procs)
	stats := make([]passStats, s.Procs)
	for i := 0; i < s.Procs; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			f := filepath.Join(o.Dir, fmt.Sprintf("parts-%s-%d.json", name, i))
			defer os.Remove(f)
			args := []string{"run", "--db", dsn, "--progress", "never", "--log-level", "warn", "--now", now.Format(time.RFC3339),
				"--workers", strconv.Itoa(s.Workers), "--max-conns", strconv.Itoa(s.Workers + 1), "--stats-json", f}
			if s.Procs > 1 {
				args = append(args, "--partition", fmt.Sprintf("%d/%d", i, s.Procs))
			}
			cmd := exec.CommandContext(ctx, o.Binary, args...)
			cmd.Env = o.Env
			var stderr stderrTail
			cmd.Stderr = &stderr
			dieWithParent(cmd)
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("partition %d/%d: %w: %s", i, s.Procs, err, strings.TrimSpace(string(stderr.b)))
				return
			}
			stats[i], errs[i] = readStats(f)
		}(i)
	}
	wg.Wait()
	res.Wall = time.Since(start)
	stopSampling()
	<-sampled
	res.BackendCPU = sampler.total()
	res.LoadAfter = loadAvg1m()
	res.Err = errors.Join(errs...)
	for _, st := range stats {
		res.Deleted += st.TasksDeleted
		res.Examined += st.TasksProcessed
		res.Statements += st.Statements
	}
	return res
}

// backendSampler follows the CPU time of the backends of one database:
// a backend's counters go with it, so they are read while it lives, every
// 100 ms, and the last reading of each counts.
type backendSampler struct {
	admin *sql.DB
	db    string
	mu    sync.Mutex
	last  map[int]time.Duration
}

func newBackendSampler(admin *sql.DB, db string) *backendSampler {
	return &backendSampler{admin: admin, db: db, last: map[int]time.Duration{}}
}

func (b *backendSampler) run(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		b.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (b *backendSampler) sample(ctx context.Context) {
	rows, err := b.admin.QueryContext(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = $1", b.db)
	if err != nil {
		return
	}
	var pids []int
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) == nil {
			pids = append(pids, pid)
		}
	}
	rows.Close()
	for _, pid := range pids {
		if cpu, ok := procCPU(pid); ok {
			b.mu.Lock()
			b.last[pid] = max(b.last[pid], cpu)
			b.mu.Unlock()
		}
	}
}

func (b *backendSampler) total() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	var t time.Duration
	for _, d := range b.last {
		t += d
	}
	return t
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// procCPU reads utime + stime of a process from /proc (Linux only).
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command may hold spaces and parentheses: fields follow the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+k) * time.Second / clockTicks, true
}

// loadAvg1m is the 1-minute load average, or -1 where there is none.
func loadAvg1m() float64 {
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return -1
	}
	v, err := strconv.ParseFloat(strings.Fields(sc.Text())[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// PrintPartitions writes the results as a table, one row per pass, with
// each setup's rate and backend CPU per row relative to 1×4 of its round.
func PrintPartitions(w io.Writer, rs []PartitionResult) {
	base := map[int]PartitionResult{}
	for _, r := range rs {
		if r.Setup == (PartitionSetup{1, 4}) && r.Err == nil {
			base[r.Round] = r
		}
	}
	fmt.Fprintln(w, "| round | procs×workers | time | rows/s | vs 1×4 | tasks examined | statements | backend CPU | backend CPU µs/row | DB cores busy | load avg before→after |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		if r.Err != nil {
			fmt.Fprintf(w, "| %d | %s | failed: %v |  |  |  |  |  |  |  |  |\n", r.Round, r.Setup, r.Err)
			continue
		}
		vs := "—"
		if b, ok := base[r.Round]; ok {
			vs = fmt.Sprintf("%.2f×", r.Rate()/b.Rate())
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s | %.2fs | %.2f | %.2f | %.1f→%.1f |\n",
			r.Round, r.Setup, round3(r.Wall), count64(int64(r.Rate())), vs, thousands(r.Examined), thousands(r.Statements),
			r.BackendCPU.Seconds(), float64(r.BackendCPU.Microseconds())/float64(max(r.Deleted, 1)),
			r.BackendCPU.Seconds()/r.Wall.Seconds(), r.LoadBefore, r.LoadAfter)
	}
}
