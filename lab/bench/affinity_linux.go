package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// allowedCPUs lists the CPUs the lab's process may run on.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(os.Getpid(), &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	return cpusOf(&set), nil
}

func cpusOf(set *unix.CPUSet) []int {
	var cpus []int
	for c := range len(set) * 64 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// pinSelf pins every thread of the lab's process to cpu, and returns
// what puts them back on the CPUs they had. A thread inherits its
// creator's CPUs, so once every thread is pinned every new one is too;
// setThreads goes over the threads until it finds none left to pin.
func pinSelf(cpu int) (restore func() error, err error) {
	var orig, set unix.CPUSet
	if err := unix.SchedGetaffinity(os.Getpid(), &orig); err != nil {
		return nil, fmt.Errorf("bench: sched_getaffinity: %w", err)
	}
	set.Set(cpu)
	if err := setThreads(&set); err != nil {
		return nil, errors.Join(fmt.Errorf("bench: pin the lab to CPU %d: %w", cpu, err), setThreads(&orig))
	}
	return func() error {
		if err := setThreads(&orig); err != nil {
			return fmt.Errorf("bench: unpin the lab from CPU %d: %w", cpu, err)
		}
		return nil
	}, nil
}

// setThreads gives every thread of this process the CPUs of set.
func setThreads(set *unix.CPUSet) error {
	for range 100 {
		tids, err := threadIDs(os.Getpid())
		if err != nil {
			return err
		}
		changed := false
		for _, tid := range tids {
			var cur unix.CPUSet
			err := unix.SchedGetaffinity(tid, &cur)
			if err == nil && cur == *set {
				continue
			}
			if err == nil {
				err = unix.SchedSetaffinity(tid, set)
			}
			switch {
			case errors.Is(err, unix.ESRCH): // the thread has exited
			case err != nil:
				return fmt.Errorf("thread %d: %w", tid, err)
			default:
				changed = true
			}
		}
		if !changed {
			return nil
		}
	}
	return errors.New("threads kept starting on other CPUs")
}

// threadIDs lists the thread ids of process pid.
func threadIDs(pid int) ([]int, error) {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	var tids []int
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// processCPUs returns the CPUs process pid's threads may run on, as the
// kernel says (Cpus_allowed_list of /proc/PID/task/TID/status): one
// list when every thread has the same, else each distinct one, joined
// by "; ".
func processCPUs(pid int) (string, error) {
	tids, err := threadIDs(pid)
	if err != nil {
		return "", err
	}
	var lists []string
	for _, tid := range tids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", strconv.Itoa(tid), "status"))
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread has exited
		}
		if err != nil {
			return "", err
		}
		l, err := parseStatusCPUs(string(b))
		if err != nil {
			return "", fmt.Errorf("thread %d of %d: %w", tid, pid, err)
		}
		if !slices.Contains(lists, l) {
			lists = append(lists, l)
		}
	}
	if len(lists) == 0 {
		return "", fmt.Errorf("process %d has no threads left", pid)
	}
	slices.Sort(lists)
	return strings.Join(lists, "; "), nil
}
