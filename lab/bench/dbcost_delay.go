package bench

// The run-queue wait of a database server's processes or threads, for the
// database cost sampler (dbcost.go): how long the server's work waited for
// a CPU, which a pass's sessions lengthen when the server's CPU is the
// contended resource. Linux keeps it per task in /proc/…/schedstat
// (CONFIG_SCHED_INFO): on-CPU time, run-queue wait, timeslices, in
// nanoseconds.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// readRunDelay reads the run-queue wait of a schedstat file
// (/proc/PID/schedstat or /proc/PID/task/TID/schedstat), nanoseconds.
func readRunDelay(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return parseRunDelay(b)
}

// parseRunDelay parses a schedstat line, "ONCPU WAIT SLICES".
func parseRunDelay(b []byte) (int64, error) {
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, fmt.Errorf("schedstat line of %d fields, want 3: %.60q", len(f), b)
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("schedstat run delay: %w", err)
	}
	return n, nil
}

// runDelays is a snapshot of tasks' run-queue waits, ns, by a key that
// names the task and its start (against pid reuse).
type runDelays map[string]int64

// postmasterDelays snapshots PostgreSQL's postmaster pm and every process
// it started; each key is "PID@START", START its start in ticks.
func postmasterDelays(pm int) (runDelays, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	d := runDelays{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat("/proc/" + e.Name() + "/stat")
		if err != nil || (pid != pm && st.ppid != pm) {
			continue // ended since ReadDir, or not the server's
		}
		if n, err := readRunDelay("/proc/" + e.Name() + "/schedstat"); err == nil {
			d[pidKey(pid, st.start)] = n
		} else if pid == pm {
			return nil, fmt.Errorf("the postmaster's run-queue wait: %w", err)
		}
	}
	return d, nil
}

// threadDelays snapshots every thread of process pid (MariaDB's
// mariadbd); each key is "TID@START".
func threadDelays(pid int) (runDelays, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	d := runDelays{}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(dir + "/" + e.Name() + "/stat")
		if err != nil {
			continue // ended since ReadDir
		}
		if n, err := readRunDelay(dir + "/" + e.Name() + "/schedstat"); err == nil {
			d[pidKey(tid, st.start)] = n
		}
	}
	if len(d) == 0 {
		return nil, fmt.Errorf("no readable schedstat in %s", dir)
	}
	return d, nil
}

// pidKey is a runDelays key.
func pidKey(pid int, start int64) string {
	return strconv.Itoa(pid) + "@" + strconv.FormatInt(start, 10)
}

// since is the run-queue wait the tasks in both d and start gained
// between the two snapshots, seconds, less that of the tasks whose pid
// (or tid) skip holds: a task started or ended within the span is not
// counted (on PostgreSQL the pass's backends are such).
func (d runDelays) since(start runDelays, skip map[int]bool) float64 {
	var ns int64
	for k, end := range d {
		begin, ok := start[k]
		if !ok {
			continue
		}
		pid, _, _ := strings.Cut(k, "@")
		if n, err := strconv.Atoi(pid); err == nil && skip[n] {
			continue
		}
		ns += end - begin
	}
	return float64(ns) / 1e9
}
