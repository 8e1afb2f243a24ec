package bench

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// Where the live-load benchmark's processes run (LiveOptions.Topology).
//
// In production tqscavenger runs in a pod or on a host of its own: its
// CPU is not the database's. The production topology measures that on
// one machine by pinning: the database server (the lab's own, started
// for the run; see ownserver.go) and the workload's client (the lab's
// process, or pgbench) share one CPU, and every pass (the `measure`
// wrapper and the binary under test) runs on another. What the workload
// then loses is what the pass costs the database, not the pass's own
// CPU. The shared topology pins nothing: server, workload and pass share
// every CPU of the machine, as the live load always did, and a pass's own
// CPU counts as harm.
//
// Children are pinned with taskset, which sets the CPU list and then
// execs the command: the pin holds from the command's first instruction,
// for every thread it starts and every process it forks (PostgreSQL's
// backends), and the child's pid is the command's own. The lab's own
// process, whose goroutines are the lab workload's client, pins its
// threads with sched_setaffinity (affinity_linux.go).

// Topology says where the live load's processes run.
type Topology string

// The topologies.
const (
	// TopologyProduction: the database server (the lab's own) and the
	// workload's client on one CPU, each pass on another.
	TopologyProduction Topology = "production"
	// TopologyShared: the given servers, the workload and the passes
	// share every CPU; nothing is pinned.
	TopologyShared Topology = "shared"
)

// Topologies lists the topologies.
func Topologies() []Topology { return []Topology{TopologyProduction, TopologyShared} }

// pinning is the production topology's CPUs: db for the server and the
// workload's client, pass for each pass.
type pinning struct {
	db, pass int
	taskset  string // taskset's path
}

// choosePinning picks the first two CPUs of those the lab may run on
// (its affinity, which a container's cpuset narrows), and finds taskset.
func choosePinning() (pinning, error) {
	allowed, err := allowedCPUs()
	if err != nil {
		return pinning{}, fmt.Errorf("bench: the production topology pins CPUs: %w", err)
	}
	db, pass, err := pickCPUs(allowed)
	if err != nil {
		return pinning{}, err
	}
	path, err := exec.LookPath("taskset")
	if err != nil {
		return pinning{}, fmt.Errorf("bench: the production topology pins its child processes with taskset (util-linux), which is not installed: %w; or use the shared topology", err)
	}
	return pinning{db: db, pass: pass, taskset: path}, nil
}

// pickCPUs returns the first two of allowed: the database's and the
// pass's. With fewer there is no production topology to measure.
func pickCPUs(allowed []int) (db, pass int, err error) {
	if len(allowed) < 2 {
		return 0, 0, fmt.Errorf("bench: the production topology runs the database and its workload on one CPU and each pass on another, but the lab may use only %d CPU (%s): use the shared topology", len(allowed), cpuList(allowed))
	}
	return allowed[0], allowed[1], nil
}

// command makes cmd run pinned to cpu: taskset -c CPU COMMAND ARG…,
// which execs the command, so that its pid is cmd's.
func (p pinning) command(cmd *exec.Cmd, cpu int) {
	if cmd.Err != nil {
		return // Start reports it
	}
	cmd.Args = append([]string{"taskset", "-c", strconv.Itoa(cpu), cmd.Path}, cmd.Args[1:]...)
	cmd.Path = p.taskset
}

// cpuList formats CPUs as Linux does: "0", "0-3", "" for none.
func cpuList(cpus []int) string {
	cpus = slices.Clone(cpus)
	slices.Sort(cpus)
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i])+"-"+strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// parseStatusCPUs returns the Cpus_allowed_list of a /proc/PID/status
// file's text.
func parseStatusCPUs(status string) (string, error) {
	for line := range strings.SplitSeq(status, "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", errors.New("no Cpus_allowed_list")
}
