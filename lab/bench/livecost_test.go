package bench_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/lab/bench"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// liveShort runs the live-load benchmark briefly on engine e in the
// shared topology: no pass, a default pass and a full one, a round each.
func liveShort(t *testing.T, e sqlstore.Engine, dsn string, wl bench.LiveWorkload) (*bench.LiveReport, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := bench.Options{Engines: []sqlstore.Engine{e}, Postgres: dsn, MySQL: dsn, Scale: 100, Binaries: []bench.Binary{{Path: exe}}, Self: exe, PassTimeout: time.Minute,
		Env: append(os.Environ(), childVar+"=1"), Dir: t.TempDir(), Log: logWriter{t}}
	lo := bench.LiveOptions{Topology: bench.TopologyShared, Workload: wl, MinSamples: 100, MinDuration: time.Second, MaxRounds: 1, Queues: 8,
		CapacityFor: 500 * time.Millisecond, Phases: []bench.LivePhase{bench.LiveNone, bench.LiveDefault, bench.LiveFull}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := bench.RunLive(ctx, o, lo)
	if err != nil {
		t.Fatalf("live load: %v", err)
	}
	var out bytes.Buffer
	for _, md := range []bool{false, true} {
		bench.PrintLive(&out, rep, md)
	}
	t.Logf("\n%s", out.String())
	le := rep.Engines[0]
	if len(le.Warnings) > 0 || len(le.Reps) != 1 || len(le.Reps[0]) != 3 {
		t.Fatalf("warnings %q, %d repetitions", le.Warnings, len(le.Reps))
	}
	for _, f := range le.Reps[0] {
		switch {
		case f.Err != nil:
			t.Errorf("%s: %v", f.Phase, f.Err)
		case f.Samples == 0 || f.Rate <= 0:
			t.Errorf("%s: %d samples, %.0f ops/s", f.Phase, f.Samples, f.Rate)
		case f.Phase != bench.LiveNone && (f.Pass.TimedOut || f.Pass.Deleted.Tasks != le.Case.Tasks()):
			t.Errorf("%s: the pass deleted %d tasks, want %d", f.Phase, f.Pass.Deleted.Tasks, le.Case.Tasks())
		case len(f.Costs) != f.Rounds:
			t.Errorf("%s: %d rounds, %d costs", f.Phase, f.Rounds, len(f.Costs))
		}
	}
	return rep, out.String()
}

// measured says whether a database-side figure was measured in every
// round, and why not.
func measured(f bench.LiveDBFigure, rounds int) bool {
	return len(f.Rounds) == rounds && f.Why == ""
}

// TestLiveLoadMixes runs the lab's write-heavy and read-heavy workloads
// beside passes on SQLite: each measures, and the database side (the
// pass's share of the write lock, the workload's failures) is there.
func TestLiveLoadMixes(t *testing.T) {
	for _, wl := range []bench.LiveWorkload{bench.WorkloadLabWrites, bench.WorkloadLabReads} {
		t.Run(string(wl), func(t *testing.T) {
			rep, out := liveShort(t, sqlstore.SQLite, "", wl)
			for _, f := range rep.Engines[0].Reps[0] {
				if f.Phase != bench.LiveNone && !measured(f.DB.WriteLock, f.Rounds) {
					t.Errorf("%s: the write lock's share was not measured: %+v", f.Phase, f.DB.WriteLock)
				}
				if !measured(f.DB.FailedOps, f.Rounds) || f.DB.FailedOps.Median != 0 || f.DB.BusyOps.Median != 0 {
					t.Errorf("%s: failed ops %+v, busy %+v, want 0 measured", f.Phase, f.DB.FailedOps, f.DB.BusyOps)
				}
			}
			for _, want := range []string{string(wl) + " workload offered", string(wl) + " mix, each queue's operations", "write lock %", "busy ops", "failed ops"} {
				if !strings.Contains(out, want) {
					t.Errorf("the tables do not say %q", want)
				}
			}
		})
	}
}

// TestLiveLoadCost runs the live load on the PostgreSQL and MariaDB test
// servers and checks that the database side of each pass was measured:
// the pass's CPU (above 0: a pass of 10,000 deletes), the server's CPU
// and log beyond the no-pass rate, the sessions it blocked. How much
// each was is not checked, only that each is there, with its column.
func TestLiveLoadCost(t *testing.T) {
	for _, e := range []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL} {
		t.Run(string(e), func(t *testing.T) {
			dsn := os.Getenv(testdb.EnvVar(e))
			if dsn == "" {
				t.Skipf("set %s to run the live load on %s", testdb.EnvVar(e), e)
			}
			rep, out := liveShort(t, e, dsn, bench.WorkloadLab)
			for _, f := range rep.Engines[0].Reps[0] {
				if f.Phase == bench.LiveNone {
					continue
				}
				for name, fig := range map[string]bench.LiveDBFigure{"pass CPU": f.DB.PassCPU, "server CPU": f.DB.ServerCPU, "log": f.DB.LogMB, "blocked": f.DB.Blocked} {
					if !measured(fig, f.Rounds) {
						t.Errorf("%s: %s not measured: %+v", f.Phase, name, fig)
					}
				}
				if f.DB.PassCPU.Median <= 0 {
					t.Errorf("%s: the pass's sessions took %v s of CPU, want more than 0", f.Phase, f.DB.PassCPU.Median)
				}
			}
			for _, want := range []string{"pass CPU s", "server CPU s over no pass", "MB over no pass", "blocked s", "no pass: the server used"} {
				if !strings.Contains(out, want) {
					t.Errorf("the tables do not say %q", want)
				}
			}
			if strings.Contains(out, "n/a") {
				t.Error("a database-side figure is unavailable")
			}
		})
	}
}
