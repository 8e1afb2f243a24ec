package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// child is what one child process measured.
type child struct {
	wall   time.Duration
	maxRSS int64  // bytes
	cpus   string // Cpus_allowed_list, "" where unknown
}

// Measurement is what Measure writes: the wall time, peak RSS and exit
// status of one command, and the CPUs it could run on.
type Measurement struct {
	WallSeconds float64 `json:"wall_seconds"`
	MaxRSSBytes int64   `json:"max_rss_bytes"`
	ExitCode    int     `json:"exit_code"`
	// CPUs is the Cpus_allowed_list of the command's threads, read from
	// /proc as it started (as processCPUs gives it); "" where unknown.
	CPUs string `json:"cpus_allowed_list,omitempty"`
}

// Measure runs argv with this process's environment and standard output
// and error, and writes its Measurement as JSON to result. It returns the
// command's exit status.
//
// The benchmark runs each pass through Measure, in a process of its own,
// because on Linux a child's ru_maxrss starts at the high-water mark of
// the process that started it: Go starts children with vfork, and the
// kernel records the parent's peak at exec. Started from the benchmark,
// which has seeded a million rows, every pass would report at least the
// benchmark's peak; started from Measure's fresh process, only its own
// few megabytes.
func Measure(ctx context.Context, result string, argv []string, stdout, stderr io.Writer) (int, error) {
	if len(argv) == 0 {
		return 0, errors.New("measure: no command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Ask the pass to stop cleanly first; it then releases its lock and
	// connections.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	dieWithParent(cmd)
	start := time.Now()
	err := cmd.Start()
	var cpus string
	if err == nil {
		// Start returns once the command runs: what the kernel lets it
		// run on is its own, not what was asked for it.
		cpus, _ = processCPUs(cmd.Process.Pid)
		err = cmd.Wait()
	}
	m := Measurement{WallSeconds: time.Since(start).Seconds(), ExitCode: -1, CPUs: cpus}
	if cmd.ProcessState != nil {
		m.MaxRSSBytes = maxRSS(cmd.ProcessState)
		m.ExitCode = cmd.ProcessState.ExitCode()
	}
	if cmd.ProcessState == nil {
		return m.ExitCode, fmt.Errorf("measure: %w", err)
	}
	// The command ran, whatever its status (also when stopped by a
	// signal): its measurement is worth writing.
	b, err := json.Marshal(m)
	if err != nil {
		return m.ExitCode, err
	}
	if err := os.WriteFile(result, append(b, '\n'), 0o644); err != nil {
		return m.ExitCode, fmt.Errorf("measure: %w", err)
	}
	return m.ExitCode, nil
}

// stderrTail keeps the last bytes a child wrote to stderr, for errors.
type stderrTail struct{ b []byte }

const tailBytes = 4096

func (t *stderrTail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > tailBytes {
		t.b = append(t.b[:0], t.b[len(t.b)-tailBytes:]...)
	}
	return len(p), nil
}

// runChild runs argv (an executable and its arguments) through `self
// measure` (see Measure), self being the lab's own executable, and
// returns what it measured. pin, if not nil, pins the measure process
// (and so the command) to CPUs (see pinning.command). Any exit status
// but 0 is a failure: 3 (complete, but some rows were unreadable)
// cannot happen on seeded rows.
func runChild(ctx context.Context, self string, argv, env []string, result string, pin func(*exec.Cmd)) (child, error) {
	os.Remove(result)
	defer os.Remove(result)
	cmd := exec.CommandContext(ctx, self, append([]string{"measure", "--result", result, "--"}, argv...)...)
	cmd.Env = env
	var stderr stderrTail
	cmd.Stderr = &stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	dieWithParent(cmd)
	if pin != nil {
		pin(cmd)
	}
	err := cmd.Run()
	var c child
	b, rerr := os.ReadFile(result)
	if rerr == nil {
		var m Measurement
		if rerr = json.Unmarshal(b, &m); rerr == nil {
			c = child{wall: time.Duration(m.WallSeconds * float64(time.Second)), maxRSS: m.MaxRSSBytes, cpus: m.CPUs}
		}
	}
	if err == nil && rerr != nil {
		err = fmt.Errorf("no measurement: %w", rerr)
	}
	if err != nil {
		msg := strings.TrimSpace(string(bytes.ToValidUTF8(stderr.b, nil)))
		return c, fmt.Errorf("%s: %w: %s", strings.Join(redactArgs(argv), " "), err, msg)
	}
	return c, nil
}

// redactArgs masks passwords in DSN arguments, for error messages.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = sqlstore.Redact(a)
	}
	return out
}

// passStats are the fields of `tqscavenger run --stats-json` (and the
// lab's `raw --stats-json`) that the benchmark reads: a binary under test
// must write them.
type passStats struct {
	Statements     int64   `json:"statements"`
	TasksDeleted   int64   `json:"tasks_deleted"`
	QueuesDeleted  int64   `json:"queues_deleted"`
	TasksProcessed int64   `json:"tasks_processed"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
}

func readStats(path string) (passStats, error) {
	var st passStats
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, fmt.Errorf("the pass wrote no %s: does `tqscavenger run` have --stats-json?", path)
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("stats %s: %w", path, err)
	}
	return st, nil
}
