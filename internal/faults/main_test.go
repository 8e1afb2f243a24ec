// Package faults is a fault suite: it breaks real databases under a
// running scavenger (a killed lock session, connections cut mid-statement,
// a read-only database, locks held by another session, a network that
// stops answering, a process killed at random points) and checks what must
// hold whatever happens. Each test says its invariant. The package has
// tests only.
//
// The PostgreSQL and MySQL tests need TQS_TEST_POSTGRES and TQS_TEST_MYSQL
// (see internal/testdb); without them they skip, and under CI=true they
// fail.
package faults

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bin is the tqscavenger command, built once for the package.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tqs-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "tqscavenger")
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	build := exec.Command(goCmd, "build", "-o", bin, "github.com/tqscavenger/tqscavenger/cmd/tqscavenger")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build tqscavenger:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var ctx = context.Background()

// proc is a running tqscavenger command.
type proc struct {
	t    *testing.T
	cmd  *exec.Cmd
	done chan struct{} // closed once it has exited
	code int

	mu      sync.Mutex
	out     strings.Builder // stdout and stderr, interleaved
	changed chan struct{}   // closed and replaced on each line
}

// start starts the command with args; the test kills it if it is still
// running when the test ends.
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, cmd: exec.Command(bin, args...), done: make(chan struct{}), changed: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "TQSCAVENGER_DB=", "TQSCAVENGER_CONFIG=")
	r, w := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
	}()
	go func() {
		p.cmd.Wait()
		w.Close()
		<-read
		p.code = p.cmd.ProcessState.ExitCode()
		if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.code = 128 + int(ws.Signal())
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("tqscavenger %s:\n%s", strings.Join(args, " "), p.output())
		}
	})
	return p
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitOutput waits until the output contains s, for at most limit.
func (p *proc) waitOutput(s string, limit time.Duration) {
	p.t.Helper()
	p.waitOutputN(s, 1, limit)
}

// waitOutputN waits until the output contains s n times, for at most
// limit.
func (p *proc) waitOutputN(s string, n int, limit time.Duration) {
	p.t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		has, changed := strings.Count(p.out.String(), s) >= n, p.changed
		p.mu.Unlock()
		if has {
			return
		}
		select {
		case <-changed:
		case <-p.done:
			if strings.Count(p.output(), s) < n {
				p.t.Fatalf("exited (status %d) without printing %q %d times", p.code, s, n)
			}
			return
		case <-deadline.C:
			p.t.Fatalf("no %q within %s", s, limit)
		}
	}
}

// wait waits for the command to exit, for at most limit, and returns its
// status and how long it took from since.
func (p *proc) wait(limit time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(limit):
		p.t.Fatalf("still running after %s", limit)
		return -1
	}
}

// tqs runs the command to its end, for at most limit, and returns its
// status and output.
func tqs(t *testing.T, limit time.Duration, args ...string) (int, string) {
	t.Helper()
	p := start(t, args...)
	code := p.wait(limit)
	return code, p.output()
}
