package bench

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestPickCPUs(t *testing.T) {
	for _, c := range []struct {
		allowed  []int
		db, pass int
		err      string
	}{
		{allowed: []int{0, 1}, db: 0, pass: 1},
		{allowed: []int{2, 5, 7}, db: 2, pass: 5},
		{allowed: []int{3}, err: "may use only 1 CPU (3): use the shared topology"},
		{allowed: nil, err: "may use only 0 CPU ()"},
	} {
		db, pass, err := pickCPUs(c.allowed)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: got %v, want an error with %q", c.allowed, err, c.err)
		case c.err == "" && (err != nil || db != c.db || pass != c.pass):
			t.Errorf("%v: got %d, %d, %v; want %d, %d", c.allowed, db, pass, err, c.db, c.pass)
		}
	}
}

func TestCPUList(t *testing.T) {
	for _, c := range []struct {
		cpus []int
		want string
	}{
		{nil, ""}, {[]int{0}, "0"}, {[]int{1, 0}, "0-1"}, {[]int{0, 1, 2, 5, 7, 8}, "0-2,5,7-8"},
	} {
		if got := cpuList(c.cpus); got != c.want {
			t.Errorf("cpuList(%v) = %q, want %q", c.cpus, got, c.want)
		}
	}
}

func TestParseStatusCPUs(t *testing.T) {
	got, err := parseStatusCPUs("Name:\tpostgres\nCpus_allowed:\t1\nCpus_allowed_list:\t0\nMems_allowed:\t1\n")
	if err != nil || got != "0" {
		t.Errorf("got %q, %v; want 0", got, err)
	}
	if _, err := parseStatusCPUs("Name:\tx\n"); err == nil {
		t.Error("a status without Cpus_allowed_list parsed")
	}
}

// TestPinCommand checks that a pinned command runs taskset, which execs
// the command itself with its arguments.
func TestPinCommand(t *testing.T) {
	p := pinning{db: 0, pass: 1, taskset: "/usr/bin/taskset"}
	cmd := exec.Command("/bin/echo", "a", "b")
	p.command(cmd, 1)
	if cmd.Path != "/usr/bin/taskset" || !slices.Equal(cmd.Args, []string{"taskset", "-c", "1", "/bin/echo", "a", "b"}) {
		t.Errorf("pinned command %s %q", cmd.Path, cmd.Args)
	}
}
