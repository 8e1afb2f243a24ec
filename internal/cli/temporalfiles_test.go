//go:build !tqs_notemporal && unix

package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/temporalworker"
)

// TestTemporalFilesBounded: issue 39's finding 4. Every file the worker
// and schedule commands read for Temporal (the TLS CA, client certificate
// and key, by flag or by the temporal CLI's variables, and the temporal
// CLI's profiles file) follows the database TLS files' policy: a device
// (/dev/zero: read until memory ran out), a FIFO (its open blocked for
// ever, deaf to SIGTERM), a directory or a file over the bound is refused
// with exit 2, naming the setting and the file, and is never opened.
//
// Invariant: exit 2 naming the setting, the file and why; a FIFO's open
// never happens (a writer waiting on it would be let in).
func TestTemporalFilesBounded(t *testing.T) {
	setEnv(t, nil)
	dir := t.TempDir()
	big := filepath.Join(dir, "big.pem")
	os.WriteFile(big, nil, 0o600)
	os.Truncate(big, temporalworker.MaxTLSFileBytes+1)
	bigToml := filepath.Join(dir, "big.toml")
	os.WriteFile(bigToml, nil, 0o600)
	os.Truncate(bigToml, 1<<30) // sparse: 1 GB on no disk
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	files := []struct{ name, path, why string }{
		{"fifo", fifo, "not a regular file (a named pipe)"},
		{"device", "/dev/zero", "not a regular file (a device)"},
		{"directory", dir, "not a regular file (a directory)"},
		{"too large", big, "more than the 1048576 allowed"},
	}
	settings := []struct {
		name, flag, env, shown string
	}{
		{"ca flag", "--temporal-tls-ca-path", "", "--temporal-tls-ca-path"},
		{"cert flag", "--temporal-tls-cert-path", "", "--temporal-tls-cert-path"},
		{"key flag", "--temporal-tls-key-path", "", "--temporal-tls-key-path"},
		{"TEMPORAL_TLS_CA", "", "TEMPORAL_TLS_CA", "TEMPORAL_TLS_CA"},
		{"TQSCAVENGER_TEMPORAL_TLS_KEY_PATH", "", "TQSCAVENGER_TEMPORAL_TLS_KEY_PATH", "TQSCAVENGER_TEMPORAL_TLS_KEY_PATH"},
		{"config file flag", "--temporal-config-file", "", "--temporal-config-file"},
		{"TEMPORAL_CONFIG_FILE", "", "TEMPORAL_CONFIG_FILE", "TEMPORAL_CONFIG_FILE"},
	}
	db := "sqlite:" + filepath.Join(dir, "t.db")
	for _, cmd := range [][]string{
		{"worker", "--db", db, "--temporal-address", "127.0.0.1:1"},
		{"schedule", "create", "--database-identity", "db-1", "--temporal-address", "127.0.0.1:1"},
	} {
		for _, s := range settings {
			for _, f := range files {
				path, why := f.path, f.why
				if f.name == "too large" && strings.Contains(strings.ToLower(s.name), "config") {
					path, why = bigToml, "more than the 262144 allowed"
				}
				t.Run(cmd[0]+"/"+s.name+"/"+f.name, func(t *testing.T) {
					args := append([]string{}, cmd...)
					if s.flag != "" {
						args = append(args, s.flag, path)
					} else {
						t.Setenv(s.env, path)
					}
					opened := watchFIFO(t, fifo)
					code, _, stderr := tqs(args...)
					if code != cli.ExitUsage || !strings.Contains(stderr, s.shown+" "+path) || !strings.Contains(stderr, why) {
						t.Errorf("exit %d, want %d naming %s %s and %q: %s", code, cli.ExitUsage, s.shown, path, why, stderr)
					}
					if opened() {
						t.Errorf("the command opened the FIFO: %s", stderr)
					}
				})
			}
		}
	}
}

// watchFIFO waits, as a writer, for a reader to open the FIFO at path.
// The returned func tells whether one did, before it was called, and then
// lets the writer go (a non-blocking open of its own), so that no
// goroutine is left behind.
func watchFIFO(t *testing.T, path string) (opened func() bool) {
	t.Helper()
	in := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(path, os.O_WRONLY, 0) // blocks until a reader opens it
		if err != nil {
			return
		}
		// Told before the close: a reader blocked in its read until then.
		close(in)
		f.Close()
	}()
	return func() bool {
		var was bool
		select {
		case <-in:
			was = true
		default:
		}
		r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		<-done
		r.Close()
		return was
	}
}
