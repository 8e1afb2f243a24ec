package bench_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/lab/bench"
	"github.com/tqscavenger/tqscavenger/lab/internal/command"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// childVar makes the test binary act as the lab's command for the
// commands the lab runs as its own children (measure, raw), and as the
// tqscavenger command under test for the others (run), so that the
// benchmark can run its passes without building either.
const childVar = "TQS_BENCH_TEST_CHILD"

// cpusVar names a directory where each child of the benchmark's (measure,
// and the pass it runs) writes what the kernel lets its threads run on:
// the production topology's test reads them (liveprod_test.go).
const cpusVar = "TQS_BENCH_TEST_CPUS_DIR"

func TestMain(m *testing.M) {
	if os.Getenv(childVar) == "1" {
		if dir := os.Getenv(cpusVar); dir != "" && len(os.Args) > 1 {
			writeChildCPUs(dir, os.Args[1])
		}
		if len(os.Args) > 1 && (os.Args[1] == "measure" || os.Args[1] == "raw") {
			os.Exit(command.Main(os.Args[1:], os.Stdout, os.Stderr))
		}
		os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// logWriter sends the benchmark's progress lines to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// smoke runs every case on engine e at a tiny scale and checks what each
// pass left, never how long it took.
func smoke(t *testing.T, e sqlstore.Engine, o bench.Options) (markdown string) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o.Engines = []sqlstore.Engine{e}
	o.Binaries, o.Self = []bench.Binary{{Path: exe}}, exe
	o.Env = append(os.Environ(), childVar+"=1")
	o.Dir = t.TempDir()
	o.Log = logWriter{t}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, o)
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	for _, md := range []bool{false, true} {
		var out bytes.Buffer
		bench.Print(&out, rep, md)
		t.Logf("\n%s", out.String())
		markdown = out.String()
		if !strings.Contains(out.String(), "÷raw") || strings.Contains(out.String(), "WARNING") {
			t.Errorf("table without a ratio to the raw bound, or with a warning")
		}
	}
	cases := len(o.Cases)
	if cases == 0 {
		for _, c := range bench.Cases() {
			if !c.Large { // only when named
				cases++
			}
		}
	}
	if len(rep.Engines) != 1 || len(rep.Engines[0].Cases) != cases {
		t.Fatalf("report has %d engines, want 1 with %d cases", len(rep.Engines), cases)
	}
	for _, cr := range rep.Engines[0].Cases {
		c := cr.Case
		if cr.Err != nil || len(cr.Warnings) > 0 {
			t.Errorf("%s: err %v, warnings %q", c.Name, cr.Err, cr.Warnings)
		}
		want := map[bench.Pass]bench.Rows{bench.PassDefault: {}, bench.PassTemporal: {}, bench.PassRaw: {}, bench.PassSafeRaw: {}}
		if c.Name == "live-head" {
			// One live task at the head of each queue, half the tasks
			// expired behind it, the rest live.
			all := bench.Rows{Tasks: c.Tasks(), Queues: int64(c.Queues)}
			live := bench.Rows{Tasks: c.Tasks() - int64(c.Queues*c.TasksPerQueue/2), Queues: int64(c.Queues)}
			want = map[bench.Pass]bench.Rows{bench.PassDefault: all, bench.PassTemporal: all, bench.PassPastLiveHead: live, bench.PassRaw: live, bench.PassSafeRaw: live}
		}
		if c.Large {
			want = map[bench.Pass]bench.Rows{bench.PassDefault: {}, bench.PassTemporal: {}}
		}
		if len(cr.Passes) != len(want) {
			t.Errorf("%s: %d passes, want %d", c.Name, len(cr.Passes), len(want))
		}
		for _, p := range cr.Passes {
			w, ok := want[p.Pass]
			switch {
			case !ok:
				t.Errorf("%s: unexpected pass %s", c.Name, p.Pass)
			case p.Err != nil:
				t.Errorf("%s %s: %v", c.Name, p.Pass, p.Err)
			case p.Left != w:
				t.Errorf("%s %s left %+v, want %+v", c.Name, p.Pass, p.Left, w)
			case p.Deleted.Tasks+p.Left.Tasks != c.Tasks() || p.Deleted.Queues+p.Left.Queues != int64(c.Queues):
				t.Errorf("%s %s reported deleting %+v, leaving %+v of %d tasks and %d queues", c.Name, p.Pass, p.Deleted, p.Left, c.Tasks(), c.Queues)
			case p.Statements <= 0 || p.Wall <= 0:
				t.Errorf("%s %s: %d statements in %s", c.Name, p.Pass, p.Statements, p.Wall)
			case runtime.GOOS == "linux" && p.MaxRSS <= 0:
				t.Errorf("%s %s: no peak RSS", c.Name, p.Pass)
			}
		}
		if (c.Name == "many-queues" || c.Name == "idle-queues") && (cr.Listing == nil || cr.Listing.Pages == 0) {
			t.Errorf("%s: no listing measurement", c.Name)
		}
	}
	return markdown
}

// TestSmoke runs the whole benchmark on SQLite at 1/1000 of its size:
// seconds, not minutes.
func TestSmoke(t *testing.T) {
	smoke(t, sqlstore.SQLite, bench.Options{Scale: 1000})
}

// TestSmokeLarge runs the ten-million case, named, beside all-expired:
// its row gives the default's time per row against all-expired's.
func TestSmokeLarge(t *testing.T) {
	out := smoke(t, sqlstore.SQLite, bench.Options{Scale: 10_000, Cases: []string{"all-expired", "ten-million"}})
	if !strings.Contains(out, "ns/row, ÷ all-expired 1×1k's") {
		t.Errorf("no time per row against all-expired in:\n%s", out)
	}
}

// TestTwoBinaries runs all-expired with two binaries under test, labelled
// old and new: each of the binaries' passes runs once per binary, the raw
// bounds once, and the comparison finds the same rows deleted and the
// same statements (both are this build).
func TestTwoBinaries(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := bench.Options{Engines: []sqlstore.Engine{sqlstore.SQLite}, Scale: 1000, Cases: []string{"all-expired"},
		Binaries: []bench.Binary{{Label: "old", Path: exe}, {Label: "new", Path: exe}}, Self: exe,
		Env: append(os.Environ(), childVar+"=1"), Dir: t.TempDir(), Log: logWriter{t}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, o)
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	var out bytes.Buffer
	bench.Print(&out, rep, false)
	t.Logf("\n%s", out.String())
	var names []string
	for _, p := range rep.Engines[0].Cases[0].Passes {
		names = append(names, p.Name())
	}
	if want := "old: default,new: default,old: temporal,new: temporal,raw,safe raw"; strings.Join(names, ",") != want {
		t.Errorf("passes %q, want %s", names, want)
	}
	cs := bench.Compare(rep.Engines[0])
	if len(cs) != 2 {
		t.Fatalf("%d comparisons, want 2 (default, temporal)", len(cs))
	}
	for _, c := range cs {
		if len(c.Runs) != 2 || !c.SameDeleted() || !c.SameStatements() || c.Runs[0].Deleted.Tasks != rep.Engines[0].Cases[0].Case.Tasks() {
			t.Errorf("%s %s: %+v; want two runs deleting every task, equal", c.Case, c.Pass, c.Runs)
		}
	}
	if !strings.Contains(out.String(), "binaries under test compared") || strings.Contains(out.String(), "DIFFER") {
		t.Errorf("no comparison, or one that differs, in:\n%s", out.String())
	}
}

// TestSmokeServers runs the live-head case on PostgreSQL and MariaDB,
// whose database copies work differently, when their test servers are
// configured. One case keeps it short under the race detector, where
// every child takes a second to start.
func TestSmokeServers(t *testing.T) {
	for _, e := range []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL} {
		t.Run(string(e), func(t *testing.T) {
			dsn := os.Getenv(testdb.EnvVar(e))
			if dsn == "" {
				if os.Getenv("CI") == "true" {
					t.Fatalf("CI=true: set %s", testdb.EnvVar(e))
				}
				t.Skipf("set %s to run the benchmark on %s", testdb.EnvVar(e), e)
			}
			smoke(t, e, bench.Options{Scale: 1000, Cases: []string{"live-head"}, Postgres: dsn, MySQL: dsn})
		})
	}
}

// TestLiveLoadSmoke runs the live-load benchmark in its short mode on
// SQLite: a few hundred samples a phase, every phase. It checks that
// each phase measured the workload beside a pass that deleted what it
// must and nothing of the workload's (the rounds' row counts), never how
// fast anything was.
func TestLiveLoadSmoke(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The limits are a quarter of a default pass's rate, which on so small
	// a case (a few dozen statements) makes passes of minutes: they stop at
	// the pass timeout, with their samples kept.
	o := bench.Options{Engines: []sqlstore.Engine{sqlstore.SQLite}, Scale: 100, Binaries: []bench.Binary{{Path: exe}}, Self: exe, PassTimeout: 10 * time.Second,
		Env: append(os.Environ(), childVar+"=1"), Dir: t.TempDir(), Log: logWriter{t}}
	lo := bench.LiveOptions{MinSamples: 100, MinDuration: time.Second, MaxRounds: 2, Queues: 8, CapacityFor: 500 * time.Millisecond, Topology: bench.TopologyShared}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := bench.RunLive(ctx, o, lo)
	if err != nil {
		t.Fatalf("live load: %v", err)
	}
	var out bytes.Buffer
	bench.PrintLive(&out, rep, true)
	t.Logf("\n%s", out.String())
	le := rep.Engines[0]
	if le.Capacity <= 0 || le.Offered != le.Capacity/2 || len(le.Warnings) > 0 || len(le.Reps) != 1 {
		t.Fatalf("capacity %.0f, offered %.0f, warnings %q, %d repetitions", le.Capacity, le.Offered, le.Warnings, len(le.Reps))
	}
	figs := le.Reps[0]
	if len(figs) != len(bench.LivePhases()) {
		t.Fatalf("%d phases measured, want %d", len(figs), len(bench.LivePhases()))
	}
	for _, f := range figs {
		switch {
		case f.Err != nil:
			t.Errorf("%s: %v", f.Phase, f.Err)
		case f.Samples == 0 || f.P50 <= 0 || f.P99 < f.P50 || f.Max < f.P99 || f.Rate <= 0:
			t.Errorf("%s: %d samples, p50 %s p99 %s max %s, %.0f ops/s", f.Phase, f.Samples, f.P50, f.P99, f.Max, f.Rate)
		case f.Phase != bench.LiveNone && (!f.Pass.TimedOut && f.Pass.Deleted.Tasks != le.Case.Tasks() || f.Pass.Wall <= 0):
			t.Errorf("%s: the pass deleted %d tasks in %s, want %d", f.Phase, f.Pass.Deleted.Tasks, f.Pass.Wall, le.Case.Tasks())
		case f.Phase == bench.LiveNone && f.Pass.Wall != 0:
			t.Errorf("no pass: a pass ran")
		}
	}
	if !strings.Contains(out.String(), "p99 ÷ no pass") || !strings.Contains(out.String(), "| write lock % |") {
		t.Error("table without the p99 ratio or the pass's share of the write lock")
	}
	if !strings.Contains(out.String(), "shared topology (nothing pinned)") || !strings.Contains(out.String(), "topology: shared") {
		t.Error("the table does not say it is the shared topology")
	}
}

// TestLiveLoadPgbench runs the live-load benchmark with the pgbench
// workload on PostgreSQL, briefly: no pass, a default pass and a full
// one. It checks that samples came back and that each round left the
// pgbench queues and tasks whole (the rounds' row counts, and the
// workload's own check of its range_ids and blobs), never how fast
// anything was.
func TestLiveLoadPgbench(t *testing.T) {
	dsn := os.Getenv(testdb.EnvVar(sqlstore.Postgres))
	if dsn == "" {
		t.Skipf("set %s to run the pgbench workload", testdb.EnvVar(sqlstore.Postgres))
	}
	if _, err := exec.LookPath("pgbench"); err != nil {
		t.Skipf("no pgbench to run: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := bench.Options{Engines: []sqlstore.Engine{sqlstore.Postgres}, Postgres: dsn, Scale: 100, Binaries: []bench.Binary{{Path: exe}}, Self: exe, PassTimeout: time.Minute,
		Env: append(os.Environ(), childVar+"=1"), Dir: t.TempDir(), Log: logWriter{t}}
	lo := bench.LiveOptions{Topology: bench.TopologyShared, Workload: bench.WorkloadPgbench, MinSamples: 100, MinDuration: time.Second, MaxRounds: 2, CapacityFor: time.Second, // 64 queues, as by default
		Phases: []bench.LivePhase{bench.LiveNone, bench.LiveDefault, bench.LiveFull}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := bench.RunLive(ctx, o, lo)
	if err != nil {
		t.Fatalf("live load: %v", err)
	}
	var out bytes.Buffer
	bench.PrintLive(&out, rep, true)
	t.Logf("\n%s", out.String())
	le := rep.Engines[0]
	if le.Capacity <= 0 || len(le.Warnings) > 0 || len(le.Reps) != 1 || len(le.Reps[0]) != 3 {
		t.Fatalf("capacity %.0f, warnings %q, %d repetitions", le.Capacity, le.Warnings, len(le.Reps))
	}
	for _, f := range le.Reps[0] {
		switch {
		case f.Err != nil:
			t.Errorf("%s: %v", f.Phase, f.Err)
		case f.Samples == 0 || f.P50 <= 0 || f.P99 < f.P50 || f.Max < f.P99 || f.Rate <= 0:
			t.Errorf("%s: %d samples, p50 %s p99 %s max %s, %.0f ops/s", f.Phase, f.Samples, f.P50, f.P99, f.Max, f.Rate)
		case f.Phase != bench.LiveNone && (f.Pass.TimedOut || f.Pass.Deleted.Tasks != le.Case.Tasks()):
			t.Errorf("%s: the pass deleted %d tasks, want %d", f.Phase, f.Pass.Deleted.Tasks, le.Case.Tasks())
		}
	}
	if !strings.Contains(out.String(), "pgbench workload offered 0.5 × capacity") {
		t.Error("the table does not name the pgbench workload and its share")
	}
}
