package bench_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/lab/bench"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// The production topology's tests read what the kernel lets each process
// run on themselves, from /proc, rather than trust the lab's own reading:
// the servers' (at every round, through bench.OnRound), their children's,
// the lab's process's, and each pass's (the children write their own:
// writeChildCPUs).

// threadCPUs returns the distinct Cpus_allowed_list of process pid's
// threads, joined by "; ".
func threadCPUs(pid int) (string, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return "", err
	}
	var lists []string
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread has exited
		}
		if err != nil {
			return "", err
		}
		_, rest, ok := strings.Cut(string(b), "Cpus_allowed_list:")
		if !ok {
			return "", fmt.Errorf("/proc/%d/task/%s/status: no Cpus_allowed_list", pid, task.Name())
		}
		l, _, _ := strings.Cut(rest, "\n")
		if l = strings.TrimSpace(l); !slices.Contains(lists, l) {
			lists = append(lists, l)
		}
	}
	slices.Sort(lists)
	return strings.Join(lists, "; "), nil
}

// writeChildCPUs, in a child of the benchmark, writes its threads' CPUs
// to dir/COMMAND-PID.
func writeChildCPUs(dir, command string) {
	cpus, err := threadCPUs(os.Getpid())
	if err != nil {
		cpus = "error: " + err.Error()
	}
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d", command, os.Getpid())), []byte(cpus), 0o644)
}

// children lists the child processes of pid.
func children(pid int) []int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if c, err := strconv.Atoi(f); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// cpuRange expands a Cpus_allowed_list such as "0-1,4".
func cpuRange(t *testing.T, list string) []int {
	var cpus []int
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil {
			t.Fatalf("CPU list %q", list)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// ownServerDirs lists the lab's own servers' directories.
func ownServerDirs() []string {
	var dirs []string
	for _, p := range []string{"tqslab-postgres-*", "tqslab-mariadb-*"} {
		m, _ := filepath.Glob(filepath.Join(os.TempDir(), p))
		dirs = append(dirs, m...)
	}
	return dirs
}

// TestLiveLoadProduction runs the live load's short mode in the
// production topology: on SQLite, and on PostgreSQL (the lab's workload
// and pgbench) and MariaDB servers of the lab's own where their binaries
// are installed. It checks, from /proc while they run, that the server
// and its children, and the workload's client, could run only on the
// database's CPU, and each pass only on the pass's; then that the server
// is gone, its files removed, and the test process back on every CPU it
// had. Never how fast anything was.
func TestLiveLoadProduction(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the production topology pins CPUs: Linux only")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mine, err := threadCPUs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	allowed := cpuRange(t, mine)
	if len(allowed) < 2 {
		o := bench.Options{Engines: []sqlstore.Engine{sqlstore.SQLite}, Binaries: []bench.Binary{{Path: exe}}, Self: exe}
		_, err := bench.RunLive(context.Background(), o, bench.LiveOptions{Topology: bench.TopologyProduction})
		if err == nil || !strings.Contains(err.Error(), "may use only 1 CPU") {
			t.Fatalf("on one CPU (%s) the production topology ran, or failed otherwise: %v", mine, err)
		}
		t.Skipf("one CPU (%s): the production topology is refused, as it should be", mine)
	}
	dbCPU, passCPU := strconv.Itoa(allowed[0]), strconv.Itoa(allowed[1])
	for _, c := range []struct {
		name     string
		engine   sqlstore.Engine
		workload bench.LiveWorkload
	}{
		{"sqlite", sqlstore.SQLite, bench.WorkloadLab},
		{"postgres", sqlstore.Postgres, bench.WorkloadLab},
		{"postgres-pgbench", sqlstore.Postgres, bench.WorkloadPgbench},
		{"mariadb", sqlstore.MySQL, bench.WorkloadLab},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.workload == bench.WorkloadPgbench {
				if _, err := exec.LookPath("pgbench"); err != nil {
					t.Skipf("no pgbench to run: %v", err)
				}
			}
			dirsBefore := ownServerDirs()
			cpusDir := t.TempDir()
			o := bench.Options{Engines: []sqlstore.Engine{c.engine}, Scale: 100, Binaries: []bench.Binary{{Path: exe}}, Self: exe, PassTimeout: time.Minute,
				Env: append(os.Environ(), childVar+"=1", cpusVar+"="+cpusDir), Dir: t.TempDir(), Log: logWriter{t}}
			lo := bench.LiveOptions{Topology: bench.TopologyProduction, Workload: c.workload, MinSamples: 100, MinDuration: time.Second, MaxRounds: 1,
				Queues: 8, CapacityFor: 500 * time.Millisecond, Phases: []bench.LivePhase{bench.LiveNone, bench.LiveDefault, bench.LiveFull}}
			// What each process could run on, read at each round's start;
			// a process whose list differs from its want is kept.
			var (
				rounds  int
				servers []int
				wrong   []string
			)
			check := func(what string, pid int, want string) {
				got, err := threadCPUs(pid)
				if err != nil || got != want {
					wrong = append(wrong, fmt.Sprintf("%s %d: CPUs %q (%v), want %s", what, pid, got, err, want))
				}
			}
			bench.OnRound(&lo, func(serverPIDs []int, workloadPID int) {
				rounds++
				check("workload's client", workloadPID, dbCPU)
				if c.engine == sqlstore.SQLite {
					return // the server is the workload's process
				}
				if len(serverPIDs) != 1 {
					wrong = append(wrong, fmt.Sprintf("server processes %v, want one", serverPIDs))
				}
				for _, pid := range serverPIDs {
					if !slices.Contains(servers, pid) {
						servers = append(servers, pid)
					}
					check("server", pid, dbCPU)
					for _, ch := range children(pid) { // PostgreSQL's backends, checkpointer, …
						check("server's child", ch, dbCPU)
					}
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			rep, err := bench.RunLive(ctx, o, lo)
			if err != nil && strings.Contains(err.Error(), "is not installed") {
				if os.Getenv("CI") == "true" {
					t.Fatalf("CI=true: %v", err)
				}
				t.Skip(err)
			}
			if err != nil {
				t.Fatalf("live load: %v", err)
			}
			for _, md := range []bool{false, true} {
				var out bytes.Buffer
				bench.PrintLive(&out, rep, md)
				t.Logf("\n%s", out.String())
				title := fmt.Sprintf("production topology (database and workload on CPU %s, passes on CPU %s)", dbCPU, passCPU)
				if !strings.Contains(out.String(), title) || !strings.Contains(out.String(), "read from /proc at every round") {
					t.Errorf("the table does not name its topology (%q) and what each process ran on", title)
				}
			}
			le := rep.Engines[0]
			for _, w := range le.Warnings {
				t.Errorf("warning: %s", w)
			}
			if len(le.Reps) != 1 || len(le.Reps[0]) != 3 {
				t.Fatalf("%d repetitions, want 1 of 3 phases", len(le.Reps))
			}
			for _, f := range le.Reps[0] {
				switch {
				case f.Err != nil:
					t.Errorf("%s: %v", f.Phase, f.Err)
				case f.Samples == 0 || f.Rate <= 0:
					t.Errorf("%s: %d samples, %.0f ops/s", f.Phase, f.Samples, f.Rate)
				case f.Phase != bench.LiveNone && (f.Pass.TimedOut || f.Pass.Deleted.Tasks != le.Case.Tasks()):
					t.Errorf("%s: the pass deleted %d tasks, want %d", f.Phase, f.Pass.Deleted.Tasks, le.Case.Tasks())
				}
			}
			if rounds != 3 {
				t.Errorf("%d rounds watched, want 3", rounds)
			}
			for _, w := range wrong {
				t.Error(w)
			}
			// Each pass, and the measure wrapper around it, wrote what it
			// could run on.
			files, _ := filepath.Glob(filepath.Join(cpusDir, "*"))
			var passes int
			for _, f := range files {
				b, _ := os.ReadFile(f)
				if string(b) != passCPU {
					t.Errorf("%s: CPUs %q, want %s", filepath.Base(f), b, passCPU)
				}
				if strings.HasPrefix(filepath.Base(f), "run-") {
					passes++
				}
			}
			if passes != 2 {
				t.Errorf("%d passes wrote their CPUs, want 2 (%q)", passes, files)
			}
			// The lab's own reading agrees.
			s := le.Server
			if s.Topology != bench.TopologyProduction || strconv.Itoa(s.DBCPU) != dbCPU || strconv.Itoa(s.PassCPU) != passCPU || len(s.Pinned) == 0 {
				t.Errorf("server %+v", s)
			}
			for _, p := range s.Pinned {
				if want := map[bool]string{true: passCPU, false: dbCPU}[p.Name == "pass"]; p.Want != want || len(p.Got) != 1 || p.Got[0] != want {
					t.Errorf("the lab read %s pid %d on %q, want %s", p.Name, p.PID, p.Got, want)
				}
			}
			// Afterwards: the server stopped, its files gone, the test
			// process on every CPU it had.
			if c.engine != sqlstore.SQLite {
				if !s.Own || len(servers) != 1 || !slices.Equal(servers, s.PIDs) || !strings.HasPrefix(s.Addr, "127.0.0.1:") {
					t.Errorf("server %+v, watched %v", s, servers)
				}
				if port, _ := strconv.Atoi(strings.TrimPrefix(s.Addr, "127.0.0.1:")); port >= 32768 || port == 5432 || port == 3306 {
					t.Errorf("the lab's own server listened on %s", s.Addr)
				}
				for _, pid := range servers {
					if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
						t.Errorf("server %d still runs", pid)
					}
				}
			}
			if left := ownServerDirs(); len(left) > len(dirsBefore) {
				t.Errorf("the server's files were left: %q (before: %q)", left, dirsBefore)
			}
			if got, err := threadCPUs(os.Getpid()); got != mine {
				t.Errorf("the test process's threads run on %q after the run (%v), want %s as before", got, err, mine)
			}
		})
	}
}

// TestLiveLoadProductionInterrupted ends a production-topology run on
// PostgreSQL in its first round, as an interrupt would (the command's
// context ends on SIGINT): the server must still be stopped, its files
// removed and the test process back on its CPUs.
func TestLiveLoadProductionInterrupted(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the production topology pins CPUs: Linux only")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mine, err := threadCPUs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if len(cpuRange(t, mine)) < 2 {
		t.Skipf("one CPU (%s): no production topology", mine)
	}
	dirsBefore := ownServerDirs()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := bench.Options{Engines: []sqlstore.Engine{sqlstore.Postgres}, Scale: 100, Binaries: []bench.Binary{{Path: exe}}, Self: exe, PassTimeout: time.Minute,
		Env: append(os.Environ(), childVar+"=1"), Dir: t.TempDir(), Log: logWriter{t}}
	lo := bench.LiveOptions{Topology: bench.TopologyProduction, MinSamples: 100, MinDuration: time.Second, MaxRounds: 1, Queues: 8, CapacityFor: 500 * time.Millisecond}
	var servers []int
	bench.OnRound(&lo, func(serverPIDs []int, _ int) {
		servers = append(servers, serverPIDs...)
		cancel()
	})
	rep, err := bench.RunLive(ctx, o, lo)
	if err != nil && strings.Contains(err.Error(), "is not installed") {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v", err)
		}
		t.Skip(err)
	}
	if !errors.Is(err, context.Canceled) || rep == nil || len(servers) != 1 {
		t.Fatalf("got %v, servers %v; want the run cancelled in a round of the lab's own server", err, servers)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", servers[0])); err == nil {
		t.Errorf("server %d still runs", servers[0])
	}
	if left := ownServerDirs(); len(left) > len(dirsBefore) {
		t.Errorf("the server's files were left: %q (before: %q)", left, dirsBefore)
	}
	if got, err := threadCPUs(os.Getpid()); got != mine {
		t.Errorf("the test process's threads run on %q after the run (%v), want %s as before", got, err, mine)
	}
}

// TestLiveTopologyRefused checks the options the topologies refuse,
// before anything runs.
func TestLiveTopologyRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		o    bench.Options
		lo   bench.LiveOptions
		want string
	}{
		{"unknown topology", bench.Options{}, bench.LiveOptions{Topology: "cloud"}, `unknown topology "cloud"`},
		{"production given a server", bench.Options{Engines: []sqlstore.Engine{sqlstore.Postgres}, Postgres: "postgres://u@127.0.0.1:5432/x"}, bench.LiveOptions{},
			"the production topology starts servers of its own"},
		{"production given a server, explicitly", bench.Options{Engines: []sqlstore.Engine{sqlstore.MySQL}, MySQL: "mysql://u@127.0.0.1:3306/x"}, bench.LiveOptions{Topology: bench.TopologyProduction},
			"a server's DSN is for the shared topology"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.o.Binaries, c.o.Self = []bench.Binary{{Path: "/nonexistent/tqscavenger"}}, "/nonexistent/tqslab"
			_, err := bench.RunLive(context.Background(), c.o, c.lo)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}
