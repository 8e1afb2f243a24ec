package main

// Issue 25's finding 1: the worst inputs, run as the built binary under
// a real OS memory limit (prlimit: address space and data segment), each
// refused with exit status 2 and a message, before it can grow: before,
// --workers 99999999999 and --checkpoint /dev/full grew to 22 GB, NaN
// rates made a pass that never ends, a nested range template and a 200
// MB config ran out of memory.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// memoryLimit is the OS limit the worst inputs run under: the address
// space a Go program reserves at start (about 1 GB) and a data segment of
// 512 MiB, which the 22 GB of the findings would have passed many times.
var memoryLimit = []string{"--as=" + strconv.Itoa(2<<30), "--data=" + strconv.Itoa(512<<20)}

// buildBinary builds tqscavenger, without the race detector (whose
// shadow memory no address space limit allows), into a temporary dir.
func buildBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: cannot build the binary")
	}
	bin := filepath.Join(t.TempDir(), "tqscavenger")
	cmd := exec.Command(goTool, "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestWorstInputsUnderMemoryLimit(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is missing")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	if out, err := exec.Command(bin, "seed", "--db", db, "--queues", "10", "--tasks", "10").CombinedOutput(); err != nil {
		t.Fatalf("seed: %v\n%s", err, out)
	}
	// A config of 200 MB: sparse, so that writing it costs nothing.
	huge := filepath.Join(dir, "huge.yaml")
	if err := os.WriteFile(huge, []byte("workers: 4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 200<<20); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(dir, "temporal.yaml")
	tpl := "# enable-template\npersistence:\n  defaultStore: d\n  datastores:\n    d:\n      sql:\n        pluginName: sqlite\n        databaseName: \"" +
		"{{ range 100000 }}{{ range 100000 }}{{ range 100000 }}{{ range 100000 }}{{ range 100000 }}xxxxxxxx{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}\"\n"
	if err := os.WriteFile(nested, []byte(tpl), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"workers", []string{"run", "--db", db, "--workers", "99999999999"}},
		{"serve workers", []string{"serve", "--db", db, "--workers", "99999999999", "--listen", "127.0.0.1:0"}},
		{"checkpoint device", []string{"run", "--db", db, "--checkpoint", "/dev/full"}},
		{"delete rate NaN", []string{"run", "--db", db, "--max-deletes-per-second", "NaN"}},
		{"statement rate NaN", []string{"run", "--db", db, "--max-statements-per-second", "NaN"}},
		{"rate Inf", []string{"run", "--db", db, "--max-statements-per-second", "+Inf"}},
		{"yield factor NaN", []string{"run", "--db", db, "--yield-to-load", "--yield-factor", "NaN"}},
		{"max conns", []string{"run", "--db", db, "--max-conns", "99999999999"}},
		{"task batch", []string{"run", "--db", db, "--task-batch-size", "99999999999", "--tasks-per-job", "99999999999"}},
		{"max deferred", []string{"run", "--db", db, "--max-deferred", "99999999999"}},
		{"list page", []string{"run", "--db", db, "--list-page-size", "99999999999"}},
		{"history", []string{"serve", "--db", db, "--history", "99999999999", "--listen", "127.0.0.1:0"}},
		{"nested range template", []string{"run", "--temporal-config", nested}},
		{"huge config", []string{"run", "--db", db, "--config", huge}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The timeout is a safety net, not an assertion: a case that
			// is refused ends at once.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, prlimit, append(append(append([]string{}, memoryLimit...), bin), c.args...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.Env = append(os.Environ(), "TQSCAVENGER_DB=")
			err := cmd.Run()
			code := cmd.ProcessState.ExitCode()
			out := stderr.String()
			if strings.Contains(out, "fatal error") || strings.Contains(out, "goroutine ") || strings.Contains(out, "panic") {
				t.Fatalf("the process crashed (exit %d) under the memory limit: %.600s", code, out)
			}
			if code != 2 || !strings.HasPrefix(out, "tqscavenger ") {
				t.Fatalf("exit %d (%v), want 2 with a message: %.600s", code, err, out)
			}
			t.Logf("%s", strings.TrimSpace(out))
		})
	}
}
