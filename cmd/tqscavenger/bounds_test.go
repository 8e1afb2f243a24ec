//go:build linux

package main

// Issue 39's finding 5: configuration inputs that are small but build
// much. A Temporal config whose template chains printf variables, each
// ten times the last, took run, report, serve, schema check and config
// to 2 GB and out of memory (the cap was on the output; variables are
// never output), and seed's counts alike; Go's out-of-memory crash exits
// 2, as a refusal does. Each is run here as the built binary, under the
// OS memory limit of limits_test.go as a safety net, and its peak RSS
// (the kernel's, from the child's rusage) must stay under 128 MiB.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// maxPeakRSS is issue 39's bound on any configuration input.
const maxPeakRSS = 128 << 20

func TestHostileInputsPeakRSS(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is missing")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	if out, err := exec.Command(bin, "seed", "--db", db, "--queues", "3", "--tasks", "3").CombinedOutput(); err != nil {
		t.Fatalf("seed: %v\n%s", err, out)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	head := "# enable-template\npersistence:\n  defaultStore: d\n  datastores:\n    d:\n      sql:\n        pluginName: sqlite\n        databaseName: " + db + "\n"
	// $a1 is ten $a0, $a2 ten $a1, …: 10^12 bytes at $a11, never output.
	chain := head + `{{ $a0 := "xxxxxxxxxx" }}`
	for i := 1; i <= 11; i++ {
		p := "$a" + strconv.Itoa(i-1)
		chain += "{{ $a" + strconv.Itoa(i) + " := printf \"" + strings.Repeat("%s", 10) + "\"" + strings.Repeat(" "+p, 10) + " }}"
	}
	chainFile := write("chain.yaml", chain+"\n")
	// One printf of 60 verbs a million wide: 60 MB in one call.
	wide := write("wide.yaml", head+`{{ $x := printf "`+strings.Repeat("%999999d", 60)+`"`+strings.Repeat(" 1", 60)+" }}\n")
	// As many template actions as the file bound allows (the parse
	// tree), and as many YAML nodes (no template), at the file bound of
	// 256 KiB and at the bound before it, 4 MiB (400 MB of nodes).
	actions := func(size int) string {
		return write("actions-"+strconv.Itoa(size)+".yaml", head+"other: \""+strings.Repeat("{{ print 1 2 3 }}", size/17)+"\"\n")
	}
	nodes := func(size int) string {
		return write("nodes-"+strconv.Itoa(size)+".yaml", strings.TrimPrefix(head, "# enable-template\n")+"other: ["+strings.Repeat("1,", size/2)+"]\n")
	}
	// A --config file of as many YAML nodes as its bound allows, and as
	// the bound before it did (1 MiB: 150 MB).
	settings := func(size int) string {
		return write("settings-"+strconv.Itoa(size)+".yaml", "workers: 4\nignored: ["+strings.Repeat("1,", size/2)+"]\n")
	}
	const fileBound, oldFileBound, oldSettingsBound = 255 << 10, 4<<20 - 1024, 1<<20 - 1024
	for _, c := range []struct {
		name string
		args []string
		code int // 0: either 0 or 2 (valid but big); else the status
		says string
	}{
		{"chain config", []string{"config", "--temporal-config", chainFile}, 2, "would build more than"},
		{"chain run", []string{"run", "--temporal-config", chainFile}, 2, "would build more than"},
		{"chain report", []string{"report", "--temporal-config", chainFile}, 2, "would build more than"},
		{"chain schema check", []string{"schema", "check", "--temporal-config", chainFile}, 2, "would build more than"},
		{"chain serve", []string{"serve", "--temporal-config", chainFile, "--listen", "127.0.0.1:0"}, 2, "would build more than"},
		{"wide printf", []string{"config", "--temporal-config", wide}, 2, "width or precision over"},
		{"template actions", []string{"config", "--temporal-config", actions(fileBound)}, 0, ""},
		{"template actions, old bound", []string{"config", "--temporal-config", actions(oldFileBound)}, 2, "more than the 262144 allowed"},
		{"yaml nodes", []string{"config", "--temporal-config", nodes(fileBound)}, 0, ""},
		{"yaml nodes, old bound", []string{"config", "--temporal-config", nodes(oldFileBound)}, 2, "more than the 262144 allowed"},
		{"config file nodes", []string{"config", "--db", db, "--config", settings(fileBound)}, 0, ""},
		{"config file nodes, old bound", []string{"config", "--db", db, "--config", settings(oldSettingsBound)}, 2, "more than the 262144 allowed"},
		{"seed tasks", []string{"seed", "--db", filepath.Join(dir, "s1.db"), "--queues", "1", "--tasks", "10000000000"}, 2, "--tasks 10000000000: at most"},
		{"seed subqueues", []string{"seed", "--db", filepath.Join(dir, "s2.db"), "--queues", "1", "--tasks", "1", "--subqueues", "1000000000"}, 2, "--subqueues 1000000000: at most"},
		{"seed rows", []string{"seed", "--db", filepath.Join(dir, "s3.db"), "--queues", "10000000", "--tasks", "1000000"}, 2, "more than the 1000000000 allowed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The timeout is a safety net, not an assertion.
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
				t.Fatalf("the process crashed (exit %d): %.600s", code, out)
			}
			switch {
			case c.code == 0 && code != 0 && code != 2,
				c.code != 0 && (code != c.code || !strings.Contains(out, c.says)):
				t.Errorf("exit %d (%v), want %d saying %q: %.600s", code, err, c.code, c.says, out)
			}
			// KiB on Linux; at least this test's own RSS, which the
			// child's shares until its exec (the kernel keeps the
			// larger): an upper bound, which is what is asserted.
			rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
			if rss >= maxPeakRSS {
				t.Errorf("peak RSS %d MiB, want under %d MiB", rss>>20, maxPeakRSS>>20)
			}
			t.Logf("exit %d, peak RSS %d MiB: %.200s", code, rss>>20, strings.TrimSpace(out))
		})
	}
}
