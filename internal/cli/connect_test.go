package cli_test

// Issue 25's finding 2: connecting is bounded. A server that accepts TCP
// and never answers made run hang 150 s on PostgreSQL and 60 s on MariaDB
// (also with --statement-timeout), serve and report the same, and a
// SIGTERM during the hang exited 4, not 143.

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
)

// silentServer listens on 127.0.0.1, accepts every connection and never
// writes a byte; accepted receives each connection as it is accepted.
func silentServer(t *testing.T) (addr string, accepted chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = make(chan struct{}, 100)
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String(), accepted
}

func TestConnectTimeout(t *testing.T) {
	setEnv(t, nil)
	addr, _ := silentServer(t)
	for _, scheme := range []string{"postgres", "mysql"} {
		dsn := scheme + "://u@" + addr + "/db"
		for _, cmd := range [][]string{
			{"run", "--statement-timeout", "5s"}, {"report"}, {"schema", "check"},
			{"serve", "--listen", "127.0.0.1:0"},
		} {
			t.Run(scheme+"/"+cmd[0], func(t *testing.T) {
				code, _, stderr := tqs(append(cmd, "--db", dsn, "--connect-timeout", "1s")...)
				if code != cli.ExitUnavailable || !strings.Contains(stderr, "connect timeout") {
					t.Errorf("exit %d, want %d naming the connect timeout: %s", code, cli.ExitUnavailable, stderr)
				}
			})
		}
	}
}

// TestSignalDuringConnect: SIGTERM while the connection hangs ends the
// command with 143, as during a pass.
func TestSignalDuringConnect(t *testing.T) {
	setEnv(t, nil)
	addr, accepted := silentServer(t)
	for _, cmd := range []string{"run", "serve"} {
		t.Run(cmd, func(t *testing.T) {
			args, _ := json.Marshal([]string{cmd, "--db", "postgres://u@" + addr + "/db", "--connect-timeout", "10m", "--listen", "127.0.0.1:0"})
			if cmd == "run" {
				args, _ = json.Marshal([]string{cmd, "--db", "postgres://u@" + addr + "/db", "--connect-timeout", "10m"})
			}
			c := exec.Command(os.Args[0], "-test.run=^TestServeChild$")
			c.Env = append(os.Environ(), childArgs+"="+string(args))
			var stderr strings.Builder
			c.Stderr = &stderr
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			<-accepted // the child is connecting, and will hang there
			c.Process.Signal(syscall.SIGTERM)
			c.Wait()
			if code := c.ProcessState.ExitCode(); code != 128+int(syscall.SIGTERM) {
				t.Errorf("exit %d, want 143: %s", code, stderr.String())
			}
		})
	}
}
